# lucid/_core_internal.pxi -- the core's C-level API for lucid's own extension modules.
#
# Included at the end of _core.pxd. The modules split off the core (lucid._linalg, lucid._ops)
# cimport these names as they cimport the native-op API above them: a cdef function declared here
# is exported by _core and reached from another module through its capsule (one indirect call;
# the core's own calls stay direct), and an inline helper defined here is compiled into each
# module that cimports it. These are lucid's own modules' API, NOT the native-op ABI: they may
# change without an ABI_VERSION bump. That holds for the functions because module-level functions
# are looked up by name and signature at import (a module built against another list fails with
# Cython's ImportError naming the function). The few node classes declared at the end (bases
# that a split-off family subclasses) are the exception: their fields are declared here and
# nowhere else, every module reads this file, and setup.py rebuilds every module that reads a
# changed file, so lucid's modules always agree on their layout; native ops must not use them.
# Module-level cdef globals cannot be shared this way: a function here reads them, or the other
# module keeps its own copy.


# -- helpers without state, compiled into each module -------------------------------------------

cdef inline cnp.dtype descr(object arr):
    """arr's dtype, without a Python attribute lookup."""
    return <cnp.dtype><PyObject*>cnp.PyArray_DESCR(<cnp.ndarray>arr)


cdef inline int ndim_of(object arr) noexcept:
    return cnp.PyArray_NDIM(<cnp.ndarray>arr)


cdef inline bint is_float_dtype(cnp.dtype dt) noexcept:
    return dt.kind == b'f'


cdef inline bint is_differentiable_dtype(cnp.dtype dt) noexcept:
    """A float or complex dtype: the ones that carry gradients and tangents."""
    return dt.kind == b'f' or dt.kind == b'c'


cdef inline bint is_fast(object arr) noexcept:
    """C-contiguous float32 or float64: the typed loops apply (kernels/typed_loops.pxi)."""
    cdef cnp.ndarray a = <cnp.ndarray>arr
    cdef int t = cnp.PyArray_TYPE(a)
    return (t == cnp.NPY_FLOAT64 or t == cnp.NPY_FLOAT32) and cnp.PyArray_IS_C_CONTIGUOUS(a)


cdef inline bint needs(Node node, Py_ssize_t i) noexcept:
    """Does forward input i of node want a gradient?"""
    return node.next_edges[i].node != NULL


cdef inline Tensor add_tangents(Tensor a, Tensor b):
    """a + b where either may be None (an absent tangent is zero)."""
    if a is None:
        return b
    if b is None:
        return a
    return add(a, b)


cdef inline bint tracks(Tensor a, Tensor b):
    """Is reverse mode recording through a (or b)? A jvp rule then recomputes the primal output
    it reads with the op itself, so the tangent is differentiable in the inputs (an output made
    before its node holds no history, and after it would close a cycle through its tangent)."""
    return grad_enabled() and (a.requires_grad_c() or (b is not None and b.requires_grad_c()))


# -- arrays, dtypes and arguments (kernels/numpy_calls.pxi, base/dtypes.pxi, tensor/arguments.pxi)
cdef object as_array(object x)                   # an ndarray for NumPy's scalar results
cdef cnp.dtype result_dtype(Tensor a, Tensor b)  # a binary op's promoted dtype
cdef cnp.dtype joined_dtype(list ts)             # the promoted dtype of several tensors
cdef Tensor operand(object x, str op)            # x as a tensor (TypeError naming op)
cdef Tensor tensor_arg(object x, str op, str arg)   # x if a Tensor, else TypeError naming arg
cdef Tensor scalar_operand(object value)         # a Python number as a wrapped-number tensor
cdef void check_scalar_fits(object value, Tensor other, cnp.dtype dt, str op) except *
cdef object binary_kernel(object ufunc, Tensor a, Tensor b, cnp.dtype dt, str op)   # ufunc(a, b) in dt
cdef intptr_t address_of(object arr)             # arr's first element's address
cdef object memory_root(object arr)              # the array owning arr's memory
cdef void check_int_fits(object value, cnp.dtype dt, str op) except *   # value fits dt's range
cdef Py_ssize_t normalize_dim(object dim, Py_ssize_t ndim, str op) except -1   # dim in [0, ndim)
cdef Py_ssize_t int_arg(object x, str op, str arg) except? -1   # x as a C integer
cdef double float_arg(object x, str op, str arg) except? -1.0   # x as a C double
cdef tuple int_tuple(object seq, str op, str arg)   # seq as a tuple of ints
cdef tuple seq_arg(object seq, str op, str arg)  # seq as a tuple (TypeError unless a sequence)
cdef bint is_integer(object x) noexcept          # an int, a NumPy integer, an integer tensor
cdef tuple shape_arg(tuple args)                 # t.flip(0, 1) and t.flip((0, 1)) alike
cdef tuple as_shape(object shape, str op)        # shape as a tuple of sizes
cdef cnp.dtype default_float_dtype()             # the default float dtype (Note [Default dtype])
cdef object as_supported_dtype(object dtype, str op)   # a dtype= argument, checked
cdef object complex_refusal(str op)              # op's error for a complex operand
cdef int refuse_complex(str op, object x, object y) except -1   # ... raised if x or y is complex
cdef object shape_error(str op, Tensor a, Tensor b, str what=*)   # the error of a shape mismatch
cdef bint broadcastable(object x, object y)      # do the arrays' shapes broadcast?

cdef inline void check_operands_fit(object x, object y, Tensor a, Tensor b, cnp.dtype dt,
                                    str op) except *:
    """check_scalar_fits when one of x, y (made operands a, b) was a number and the other not."""
    if a._wrapped_number != b._wrapped_number:
        check_scalar_fits(x if a._wrapped_number else y, b if a._wrapped_number else a, dt, op)

# -- forward mode (forward/forward_ad.pxi; they read the C thread-local level of _core) --------
cdef bint fw_active() noexcept nogil             # is a dual level active here?
cdef Tensor tangent_of(Tensor t)                 # t's tangent at the active level, or None
cdef void set_tangent(Tensor t, Tensor tangent)  # give t a tangent at the active level
cdef long suspend_fw() noexcept nogil            # forward mode off while a jvp rule runs ...
cdef void resume_fw(long level) noexcept nogil   # ... and back on
cdef Tensor fit_tangent(Tensor t, Tensor out)    # t broadcast and cast to out's form
cdef object fw_levels()                          # for _ in fw_levels(): once per visible level,
cdef object fw_levels_inner_first()              # ... outermost / innermost first (Note [Nested
                                                 # forward mode])
cdef bint has_tangent(Tensor t)                  # a tangent at any visible level?
cdef Tensor linear_jvp(Tensor a, object op, tuple args)   # a linear op's jvp: op(t, *args)
cdef Tensor linear_jvp_n(object tensors, object op, tuple args)   # ... of several tensors

# -- graph (graph/saved.pxi, ops/reduction/reduce_grad.pxi, ops/shape/join.pxi) ------------------
cdef void raise_freed_graph(Node node) except *  # the error of a backward run twice
cdef Tensor reduce_grad(Tensor g, object shape, cnp.dtype dtype)   # undo broadcast, promotion
cdef Tensor record_join(Node node, Tensor out, list ts)   # node as out's history, inputs ts

# -- ops the split-off families are written with ------------------------------------------------
cpdef Tensor transpose(a, object dim0, object dim1)
cpdef Tensor permute(a, object dims)
cpdef Tensor getitem(Tensor a, object index)
cpdef Tensor index_backward(Tensor g, tuple shape, object key)   # zeros with g added at key
cpdef Tensor select_grad(Tensor g, object weight)  # g*w where w != 0, exactly 0 elsewhere
cpdef Tensor where(object condition, object x, object y)
cpdef Tensor pow(object x, object y)
cpdef Tensor abs(object x)
cpdef Tensor cos(object x)
cpdef Tensor clone(a)
cpdef Tensor conj(object input)                  # x - iy (a real input as it is)
cpdef Tensor real_part(object input)             # re(z), a view (lucid.real)
cdef Tensor zero_grad_like(Tensor g)             # a zero gradient shaped and typed like g
cdef object compare_ufunc(int op)                # the NumPy ufunc of comparison op (Py_LT ...)
cdef tuple reduction_dims(object dim, Py_ssize_t ndim, str op)   # a reduction's dims, checked
cdef Py_ssize_t reduced_count(tuple shape, tuple dims)   # entries each reduced output combines
cdef Tensor reduce_op(Tensor a, object dim, bint keepdim, bint is_mean)   # sum or mean
cdef Tensor expand_reduced(Tensor g, tuple in_shape, tuple dims, bint keepdim)   # g spread back
cdef object extreme_weight(Tensor a, object kept, tuple dims)   # amax's tie-sharing weight
cdef Tensor extreme_jvp(Tensor t, object weight, tuple dims, bint keepdim)   # amax's tangent
cdef Tensor extreme_op(Tensor a, object dim, bint keepdim, bint is_max)   # amax or amin

# -- a module's Tensor methods and node classes ---------------------------------------------------
cdef void install_methods(type cls, dict methods) except *   # cls.name = methods[name], as methods
cdef void register_node_types(str module) except *   # trust the node classes module defines
                                                 # (Note [Native nodes]): at its import
cdef void set_type_attribute(type cls, str name, object value) except *   # cls.name = value

# -- node classes a split-off family subclasses (their fields: declared here only) ---------------
cdef class IndexBackward(Node):                  # y = x[key] (ops/shape/index.pxi)
    cdef tuple in_shape                          # x's shape
    cdef object key                              # the NumPy key

# an elementwise op's rule, g * f'(x), both its backward and its jvp (Note [Elementwise rules])
ctypedef Tensor (*unary_rule)(Tensor g, Tensor x, Tensor y)

cdef class UnaryBackward(Node):                  # a unary op's node (ops/elementwise/unary.pxi)
    cdef SavedTensor saved_x                     # its input or its output

cdef class RuleBackward(UnaryBackward):          # ... that applies its rule
    cdef unary_rule rule
    cdef bint saved_is_output                    # saved_x is the output
    cdef int table_op                            # its fused backward loop (a LucidUnary), or
                                                 # UN_NONE (ops/elementwise/unary_table.pxi)

# -- the elementwise ops' recording, by rule (ops/elementwise/unary.pxi) --------------------------
cdef Tensor unary_jvp(unary_rule rule, Tensor a, Tensor out)   # out's tangent by rule, or None
cdef Tensor record_rule(Tensor out, Tensor a, RuleBackward node, bint save_output,
                        unary_rule rule)         # out's tangent and node by rule
cdef Tensor float_unary(object x, str name, object ufunc, RuleBackward node, bint save_output,
                        unary_rule rule)         # ufunc(x) in a float dtype, recorded by rule

# -- the table ops: typed forward and fused backward loops (ops/elementwise/unary_table.pxi) -----
# (the op codes, LucidUnary, are in kernels/unary_codes.pxi: lucid's own header, which a native
# op reading this file cannot find)
cdef Tensor table_unary(object x, str name, int op, object ufunc, RuleBackward node,
                        bint save_output, unary_rule rule, bint quiet=*)   # float_unary
                                                 # with op's loops
cdef object table_forward(int op, Tensor a, double p, double q)   # op's loop on a, or None
cdef Tensor record_table(object arr, Tensor a, RuleBackward node, int op, bint save_output,
                         unary_rule rule)        # record_rule, node running op's fused loop
cdef bint fused_grad_applies(Tensor g, Tensor s)   # nothing records, g and s a fast pair
cdef Tensor table_grad(Node node, int op, Tensor g, Tensor s, double p, double q)   # fused
                                                 # g*op'(x) when nothing records, or None
cdef object new_array_like(object arr)           # an uninitialised array like arr (pooled)
cpdef Tensor sqrt(object x)

cdef class AmaxBackward(Node):                   # y = amax(x, dims) (ops/reduction/reduce.pxi)
    cdef SavedTensor x
    cdef tuple dims
    cdef bint keepdim

cdef class BinaryBackward(Node):                 # a binary op's node (ops/elementwise/arith.pxi)
    cdef object a_shape                          # each input's shape (None if not broadcast)
    cdef object b_shape
    cdef cnp.dtype a_dtype                       # and dtype
    cdef cnp.dtype b_dtype
    cdef SavedTensor a
    cdef SavedTensor b

    cdef inline tuple reduced(self, object ga, object gb):
        """each input's gradient reduced to the input's shape and dtype"""
        return (None if ga is None else reduce_grad(ga, self.a_shape, self.a_dtype),
                None if gb is None else reduce_grad(gb, self.b_shape, self.b_dtype))

# a binary op's rule for one input (Note [Elementwise rules]; ops/elementwise/arith.pxi)
ctypedef Tensor (*binary_rule)(Tensor g, Tensor x, Tensor y)

cdef class BinaryRuleBackward(BinaryBackward):   # ... that applies its two rules
    cdef binary_rule rule_x                      # (ops/elementwise/binary_functions.pxi)
    cdef binary_rule rule_y                      # NULL: the op is symmetric
    cdef int fn                                  # its one-pass loops' LucidFn, or FN_NONE

# -- the binary functions' recording, by rule (ops/elementwise/binary_functions.pxi) ------------
cdef Tensor identity_rule(Tensor g, Tensor x, Tensor y)   # g
cdef Tensor float_binary(object x, object y, str name, object ufunc, type node_type,
                         binary_rule rule_x, binary_rule rule_y, int fn)   # ufunc(x, y), recorded
cdef void refuse_integers(cnp.dtype dt, str name) except *   # NotImplementedError unless dt floats
cdef Tensor float_only_binary(object x, object y, str name, object ufunc, type node_type,
                              binary_rule rule_x, binary_rule rule_y, int fn)   # ... floats only

# -- the one-pass loops of the elementwise functions (kernels/binary_loops.pxi) -----------------
# (fn: a code of kernels/fn_codes.pxi, which a module naming one includes)
cdef bint small_fast(object x) noexcept          # contiguous float32/64 below LARGE elements
cdef bint small_fast_pair(object x, object y) noexcept   # ... two, of one dtype and shape
cdef bint fast_mask_for(object mask, object x) noexcept  # a contiguous bool array of x's shape
cdef object fast_fn2(int fn, object x, object y)  # fn(x, y) of a small fast pair, new array
cdef object fast_fn1(int fn, object x, double lo, double hi, double alt, bint has_lo,
                     bint has_hi, object out=*)   # fn(x) (clamp, nan_to_num: the constants)
cdef object fast_select(object mask, object x, object y, double fill)   # where / masked_fill
cdef tuple fast_select_grads(object mask, object g, bint want_a, bint want_b)   # their backward

cdef inline bint plain_pair(Tensor a, Tensor b) noexcept:
    """Two tensors (neither a wrapped Python number) over a small fast pair of arrays: a binary
    function's forward and backward run by the one-pass loops."""
    return not (a._wrapped_number or b._wrapped_number) and small_fast_pair(a.data, b.data)

cdef inline bint exact_number(object v):
    """A float, or an int that a double holds exactly: a loop's constant, as NumPy would take it."""
    return type(v) is float or (type(v) is int and -9007199254740992 <= v <= 9007199254740992)

cdef class Fn1Backward(RuleBackward):            # ... with a one-pass backward loop
    cdef int fn                                  # (ops/elementwise/fused_grads.pxi): FN1_...
