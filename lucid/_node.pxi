# Node: the base of every backward node, and AccumulateGrad, the node of a leaf.

cdef int64_t _sequence_counter = 0


cdef int64_t next_sequence_nr() noexcept:
    global _sequence_counter
    _sequence_counter += 1
    return _sequence_counter


@cython.trashcan(True)
cdef class Node:
    """A backward node: gradients of its forward outputs in, gradients of its inputs out."""

    def __cinit__(self):
        self.next_edges = &self._inline_edges[0]
        self.num_inputs = 0
        self.num_outputs = 1

    def __init__(self):
        raise TypeError(f"{type(self).__name__} nodes are made by the ops that record them")

    def __dealloc__(self):
        # Deep chains: the trashcan above bounds the nesting of these releases.
        cdef Py_ssize_t i
        for i in range(self.num_inputs):
            Py_XDECREF(self.next_edges[i].node)
            self.next_edges[i].node = NULL
        if self.next_edges != &self._inline_edges[0]:
            PyMem_Free(self.next_edges)
        self.next_edges = NULL
        self.num_inputs = 0

    cdef void set_num_inputs(self, Py_ssize_t n) except *:
        cdef Py_ssize_t i
        if self.num_inputs != 0:
            raise RuntimeError("a node's edges are set once")
        if n > 2:
            self.next_edges = <Edge*>PyMem_Malloc(n * sizeof(Edge))
            if self.next_edges == NULL:
                self.next_edges = &self._inline_edges[0]
                raise MemoryError()
        for i in range(n):
            self.next_edges[i].node = NULL
            self.next_edges[i].input_nr = 0
        self.num_inputs = n

    cdef void set_edge(self, Py_ssize_t i, Tensor t) except *:
        cdef Node producer
        if t is None or not t.requires_grad_c():
            return
        if t._view_base is not None and t._view_version != t._storage.graph_version:
            raise_stale_view(t)
        producer = gradient_node(t)
        Py_INCREF(producer)
        Py_XDECREF(self.next_edges[i].node)
        self.next_edges[i].node = <PyObject*>producer
        self.next_edges[i].input_nr = t._output_nr

    cdef tuple apply(self, tuple grads):
        raise NotImplementedError(f"{self.name()} does not implement apply")

    cdef void release_saved(self):
        self.saved = None

    cpdef str name(self):
        return type(self).__name__

    def needs_input_grad(self, Py_ssize_t i):
        """True if forward input i gets a gradient from this node."""
        if i < 0 or i >= self.num_inputs:
            raise IndexError(f"{self.name()} has {self.num_inputs} inputs, not {i + 1}")
        return self.next_edges[i].node != NULL

    @property
    def next_functions(self):
        """((producer node or None, its output slot), ...), one per forward input."""
        cdef Py_ssize_t i
        cdef list out = []
        for i in range(self.num_inputs):
            if self.next_edges[i].node == NULL:
                out.append((None, 0))
            else:
                out.append((<object>self.next_edges[i].node, self.next_edges[i].input_nr))
        return tuple(out)

    @property
    def creation_site(self):
        """'file:line' of the forward call that made this node (None if unknown)."""
        return creation_site_of(self)

    def register_hook(self, fn):
        """Not supported on nodes yet; register hooks on tensors."""
        raise RuntimeError("hooks on nodes are not supported; use Tensor.register_hook")

    def __repr__(self):
        return f"<{self.name()}>"


cdef Node record(Node node, Tensor a, Tensor b):
    """Give node its sequence number and edges to a (and b, when not None)."""
    init_identity(node)
    node.set_num_inputs(1 if b is None else 2)
    node.set_edge(0, a)
    if b is not None:
        node.set_edge(1, b)
    return node


cdef void attach_output(Tensor out, Node node, int output_nr):
    out._grad_fn = node
    out._output_nr = output_nr
    out._requires_grad = False


cdef class AccumulateGrad(Node):
    """The node of a leaf: adds the gradient that reaches it into variable.grad."""

    cdef tuple apply(self, tuple grads):
        accumulate_into_leaf(self.variable, <Tensor>grads[0], False, grad_enabled())
        return ()

    cpdef str name(self):
        return "AccumulateGrad"


cdef Node gradient_node(Tensor t):
    """The node a gradient for t flows into: its grad_fn, or its leaf accumulator."""
    cdef AccumulateGrad acc
    cdef PyObject* existing
    if t._grad_fn is not None:
        return t._grad_fn
    if t._grad_accumulator is not None:
        existing = PyWeakref_GetObject(t._grad_accumulator)
        if existing != <PyObject*>None:
            return <Node>existing
    acc = AccumulateGrad.__new__(AccumulateGrad)
    acc.variable = t
    acc.sequence_nr = next_sequence_nr()
    t._grad_accumulator = PyWeakref_NewRef(acc, None)
    return acc


cdef void raise_stale_view(Tensor t) except *:
    raise RuntimeError(
        f"this view (shape {t.data.shape}) was taken before its base was changed in place by a "
        "recorded operation, so its history is out of date; take the view again after the "
        "in-place change (or clone() it before)")
