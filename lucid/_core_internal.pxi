# lucid/_core_internal.pxi -- the core's C-level API for lucid's own extension modules.
#
# Included at the end of _core.pxd. The modules split off the core (lucid._linalg, ...) cimport
# these names as they cimport the native-op API above them: a cdef function declared here is
# exported by _core and reached from another module through its capsule (one indirect call; the
# core's own calls stay direct), and an inline helper defined here is compiled into each module
# that cimports it. These are lucid's own modules' API, NOT the native-op ABI: they may change
# without an ABI_VERSION bump. That holds because nothing here declares a class, a field or a
# cdef method: module-level functions are looked up by name and signature at import (a module
# built against another list fails with Cython's ImportError naming the function), and no class
# layout depends on them. Module-level cdef globals cannot be shared this way: a function here
# reads them, or the other module keeps its own copy.


# -- helpers without state, compiled into each module -------------------------------------------

cdef inline cnp.dtype descr(object arr):
    """arr's dtype, without a Python attribute lookup."""
    return <cnp.dtype><PyObject*>cnp.PyArray_DESCR(<cnp.ndarray>arr)


cdef inline int ndim_of(object arr) noexcept:
    return cnp.PyArray_NDIM(<cnp.ndarray>arr)


cdef inline bint is_float_dtype(cnp.dtype dt) noexcept:
    return dt.kind == b'f'


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

# -- forward mode (forward/forward_ad.pxi; they read the C thread-local level of _core) --------
cdef bint fw_active() noexcept nogil             # is a dual level active here?
cdef Tensor tangent_of(Tensor t)                 # t's tangent at the active level, or None
cdef void set_tangent(Tensor t, Tensor tangent)  # give t a tangent at the active level
cdef long suspend_fw() noexcept nogil            # forward mode off while a jvp rule runs ...
cdef void resume_fw(long level) noexcept nogil   # ... and back on
cdef Tensor fit_tangent(Tensor t, Tensor out)    # t broadcast and cast to out's form

# -- graph (graph/saved.pxi, ops/reduction/reduce_grad.pxi, ops/shape/join.pxi) ------------------
cdef void raise_freed_graph(Node node) except *  # the error of a backward run twice
cdef Tensor reduce_grad(Tensor g, object shape, cnp.dtype dtype)   # undo broadcast, promotion
cdef Tensor record_join(Node node, Tensor out, list ts)   # node as out's history, inputs ts

# -- ops the linalg rules are written with ------------------------------------------------------
cpdef Tensor transpose(a, object dim0, object dim1)
cpdef Tensor getitem(Tensor a, object index)
cpdef Tensor diagonal(input, object offset=*, object dim1=*, object dim2=*)
cpdef Tensor select_grad(Tensor g, object weight)  # g*w where w != 0, exactly 0 elsewhere
cdef Tensor linalg_float_operand(object x, str op, str what)   # x as a float tensor
cdef Tensor float_result(object arr, cnp.dtype dt)   # a LAPACK result as a tensor of dt

# -- a module's Tensor methods and node classes ---------------------------------------------------
cdef void install_methods(type cls, dict methods) except *   # cls.name = methods[name], as methods
cdef void register_node_types(str module) except *   # trust the node classes module defines
                                                 # (Note [Native nodes]): at its import
