# The checks of what a node class from outside the core returns.

# Note [Native nodes]
#   A node class defined outside lucid's core (a native op's Cython Node subclass, API.md section
#   5) is not trusted to return what the engine needs: an ndarray where a Tensor belongs would be
#   read as a Tensor (a crash), a gradient of the wrong shape would surface at some later node
#   without the name of the node that made it. So set_edge keeps each input's (shape, dtype) on
#   such a node (NodeExtra.input_meta), and call_apply checks what its apply returned: a tuple of
#   one entry per forward input, each None or a Tensor of that input's shape and a floating
#   dtype, cast to the input's dtype: the checks and messages a Python Function's node applies to
#   its backward's result (checked_gradient_form, gradient_in_dtype), raised while it runs so
#   the error also names where the node was made. The core's own node classes are entered once,
#   at import, in a small open-addressing table of type pointers (core_node_types), so telling
#   them apart in set_edge costs a multiply and one or two pointer comparisons per edge; in the
#   backward, a node is checked when it carries input_meta, a pointer test (a node without an
#   edge has no gradient to send on, and a Function's node checks its backward's result itself).
#   Testing the class in call_apply instead cost 27 instructions per node (W6 +2%: callgrind).

cdef extern from *:
    """
    static inline size_t lucid_type_slot(const void* tp, size_t mask) {
        /* Fibonacci hashing of a type object's address */
        return (size_t)(((uint64_t)(uintptr_t)tp * 0x9E3779B97F4A7C15ULL) >> 40) & mask;
    }
    """
    size_t lucid_type_slot(const void* tp, size_t mask) noexcept nogil

cdef enum:
    CORE_TYPE_SLOTS = 512                 # a power of two, over twice the core's node classes

cdef PyTypeObject* core_node_types[CORE_TYPE_SLOTS]


cdef inline bint is_core_node(Node node) noexcept:
    """Is node's class one of lucid's core node classes (Note [Native nodes])?"""
    cdef PyTypeObject* tp = Py_TYPE(node)
    cdef size_t i = lucid_type_slot(tp, CORE_TYPE_SLOTS - 1)
    while core_node_types[i] != NULL:
        if core_node_types[i] == tp:
            return True
        i = (i + 1) & (CORE_TYPE_SLOTS - 1)
    return False


cdef void register_core_node_types() except *:
    """Enter Node and every subclass of it defined so far (at import: the core's own) in
    core_node_types (Note [Native nodes])."""
    cdef list pending = [Node]
    cdef Py_ssize_t count = 0
    cdef PyTypeObject* tp
    cdef size_t i
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        count += 1
        if 2 * count > CORE_TYPE_SLOTS:
            raise RuntimeError("lucid's core defines more node classes than core_node_types "
                               "holds: raise CORE_TYPE_SLOTS")
        tp = <PyTypeObject*>cls
        i = lucid_type_slot(tp, CORE_TYPE_SLOTS - 1)
        while core_node_types[i] != NULL and core_node_types[i] != tp:
            i = (i + 1) & (CORE_TYPE_SLOTS - 1)
        core_node_types[i] = tp


cdef void note_input_meta(Node node, Py_ssize_t i, Tensor t) except *:
    """Keep input i's (shape, dtype) on a native node, for the check of its gradients (Note
    [Native nodes]; a Function's node keeps its own)."""
    if isinstance(node, PythonBackwardNode):
        return
    cdef NodeExtra extra = node.extra
    if extra is None:
        extra = NodeExtra.__new__(NodeExtra)   # the node stays untracked: shapes and dtypes
        node.extra = extra                     # close no cycle (get_extra tracks it)
    if extra.input_meta is None:
        extra.input_meta = [None] * node.num_inputs
    extra.input_meta[i] = (t.data.shape, descr(t.data))


cdef str gradient_source(Node node):
    """Who returned node's gradients, for an error message: "Function F.backward" for a
    Function's node, "<node name>.apply" for a native node."""
    if isinstance(node, PythonBackwardNode):
        return f"Function {(<PythonBackwardNode>node).function.__name__}.backward"
    return f"{node.name()}.apply"


cdef Tensor gradient_tensor(Node node, object g, Py_ssize_t i):
    """g, the gradient node's backward returned for input i, checked to be a Tensor."""
    if not isinstance(g, Tensor):
        raise RuntimeError(f"{gradient_source(node)} returned {type(g).__name__} as the gradient "
                           f"of input {i}; expected a Tensor or None")
    return <Tensor>g


cdef Tensor checked_gradient_form(Node node, object g, object meta, Py_ssize_t i):
    """g, the gradient node's backward returned for input i, checked: a Tensor of the input's
    shape (meta: the input's (shape, dtype); None for an argument that is not a tensor)."""
    gradient_tensor(node, g, i)
    if meta is None:
        raise RuntimeError(f"{gradient_source(node)} returned a Tensor as the gradient of input "
                           f"{i}, which is not a tensor; expected None")
    if not shape_is((<Tensor>g).data, <tuple>meta[0]):
        raise RuntimeError(f"{gradient_source(node)} returned a gradient of shape "
                           f"{(<Tensor>g).data.shape} for input {i}; expected shape {meta[0]}")
    return <Tensor>g


cdef Tensor gradient_in_dtype(Node node, Tensor t, object dtype, Py_ssize_t i):
    """t, node's gradient for input i, in the input's dtype: cast from another floating dtype;
    any other dtype is an error."""
    if descr(t.data) is not dtype and t.data.dtype != dtype:
        if not is_float_dtype(descr(t.data)):
            raise RuntimeError(f"{gradient_source(node)} returned a gradient of dtype "
                               f"{dtype_name(t.data.dtype)} for input {i}; expected "
                               f"{dtype_name(dtype)}")
        t = cast(t, dtype)
    return t


cdef tuple checked_native_outputs(Node node, object outs):
    """Note [Native nodes]: what a native node's apply returned, checked: a tuple with one entry
    per forward input, each None or a Tensor; for an input with an edge, of its shape and a
    floating dtype (cast to the input's dtype)."""
    cdef Py_ssize_t n = node.num_inputs, i
    if type(outs) is not tuple:
        raise RuntimeError(f"{gradient_source(node)} returned {type(outs).__name__}; it must "
                           f"return a tuple of {n} gradients (None for an input without one)")
    if len(<tuple>outs) != n:
        raise RuntimeError(f"{gradient_source(node)} returned {len(<tuple>outs)} gradients for "
                           f"{n} inputs (one per forward input, None for those without one)")
    cdef list meta = node.extra.input_meta if node.extra is not None else None
    cdef list fixed = None
    cdef Tensor t
    for i in range(n):
        g = (<tuple>outs)[i]
        if g is None:
            continue
        if node.next_edges[i].node == NULL or meta is None or meta[i] is None:
            gradient_tensor(node, g, i)   # for an input without an edge: sent nowhere
            continue
        t = checked_gradient_form(node, g, meta[i], i)
        t = gradient_in_dtype(node, t, (<tuple>meta[i])[1], i)
        if t is not g:
            if fixed is None:
                fixed = list(<tuple>outs)
            fixed[i] = t
    return <tuple>outs if fixed is None else tuple(fixed)
