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
#   the error also names where the node was made. lucid's own node classes (the core's, and
#   those of its extension modules such as lucid._linalg, each calling register_node_types at
#   its import) are entered once in a small open-addressing table of type pointers
#   (core_node_types), so telling
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
cdef Py_ssize_t core_node_count = 0      # entries in core_node_types


cdef inline bint is_core_type(PyTypeObject* tp) noexcept:
    """Is tp one of lucid's own node classes (Note [Native nodes])?"""
    cdef size_t i = lucid_type_slot(tp, CORE_TYPE_SLOTS - 1)
    while core_node_types[i] != NULL:
        if core_node_types[i] == tp:
            return True
        i = (i + 1) & (CORE_TYPE_SLOTS - 1)
    return False


cdef inline bint is_core_node(Node node) noexcept:
    """Is node's class one of lucid's own node classes (Note [Native nodes])?"""
    return is_core_type(Py_TYPE(node))


cdef void register_node_types(str module) except *:
    """Enter every node class that module defines (Node and its subclasses whose __module__ is
    module) in core_node_types: the core's own at its import, and each of lucid's extension
    modules' at theirs (Note [Native nodes])."""
    cdef list pending = [Node]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__module__ == module:
            enter_core_node_type(<PyTypeObject*>cls)


cdef void enter_core_node_type(PyTypeObject* tp) except *:
    """Put tp in the open-addressing table core_node_types (once)."""
    global core_node_count
    cdef size_t i = lucid_type_slot(tp, CORE_TYPE_SLOTS - 1)
    while core_node_types[i] != NULL and core_node_types[i] != tp:
        i = (i + 1) & (CORE_TYPE_SLOTS - 1)
    if core_node_types[i] == tp:
        return
    if 2 * (core_node_count + 1) > CORE_TYPE_SLOTS:
        raise RuntimeError("lucid defines more node classes than core_node_types holds: raise "
                           "CORE_TYPE_SLOTS")
    core_node_types[i] = tp
    core_node_count += 1


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
        if not is_differentiable_dtype(descr(t.data)):
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


def _debug_trusted_node_class(cls):
    """Testing hook, private: is cls one of lucid's own node classes, whose results the engine
    trusts (Note [Native nodes])?"""
    if not (isinstance(cls, type) and issubclass(cls, Node)):
        raise TypeError(f"_debug_trusted_node_class: expected a Node class, got {cls!r}")
    return is_core_type(<PyTypeObject*>cls)
