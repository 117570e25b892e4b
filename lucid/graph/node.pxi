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
        if self.sequence_nr == 0:
            init_identity(self)      # a native op's node made without record(): its creation site
        if n < 0 or n > INT_MAX:
            raise ValueError(f"a node takes 0 to {INT_MAX} inputs, not {n}")
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
        check_not_stale(t)
        producer = gradient_node(t)
        Py_INCREF(producer)
        Py_XDECREF(self.next_edges[i].node)
        self.next_edges[i].node = <PyObject*>producer
        self.next_edges[i].input_nr = t._output_nr
        if not is_core_node(self):
            note_input_meta(self, i, t)   # Note [Native nodes]

    cdef tuple apply(self, tuple grads):
        raise NotImplementedError(f"{self.name()} does not implement apply")

    cdef void release_saved(self):
        pass

    cdef NodeExtra get_extra(self):
        if self.extra is None:
            self.extra = NodeExtra.__new__(NodeExtra)
        gc_track(self)               # Note [GC tracking]: the extra state may close a cycle
        return self.extra

    cpdef str name(self):
        """The node's name: "MulBackward", "<Function>Backward", ..."""
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

    @property
    def sequence_nr(self):
        """Creation order: a node made later has a larger number."""
        return self.sequence_nr

    def register_prehook(self, fn):
        """Call fn(grad_outputs) before this node runs; it may return a replacement tuple.
        Returns a handle whose remove() unregisters it (Note [Hook order])."""
        cdef NodeExtra extra = self.checked_extra(fn)
        if extra.pre_hooks is None:
            extra.pre_hooks = {}
        return add_hook(extra.pre_hooks, fn)

    def register_hook(self, fn):
        """Call fn(grad_inputs, grad_outputs) after this node runs; it may return a replacement
        for grad_inputs. Returns a handle whose remove() unregisters it (Note [Hook order])."""
        cdef NodeExtra extra = self.checked_extra(fn)
        if extra.post_hooks is None:
            extra.post_hooks = {}
        return add_hook(extra.post_hooks, fn)

    cdef NodeExtra checked_extra(self, object fn):
        if not callable(fn):
            raise TypeError(f"a node hook must be callable, not {type(fn).__name__}")
        return self.get_extra()

    @property
    def metadata(self):
        """A dict for the user's own notes about this node (empty at first)."""
        cdef NodeExtra extra = self.get_extra()
        if extra.metadata is None:
            extra.metadata = {}
        return extra.metadata

    def __repr__(self):
        return f"<{self.name()}>"

    def __getattr__(self, str name):
        """What the node saved, under PyTorch's names: _saved_<x>, _raw_saved_<x>
        (graph/saved_attributes.pxi); only reached when normal lookup fails."""
        if name.startswith("_saved_") or name.startswith("_raw_saved_"):
            return saved_attribute(self, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


# Note [Hook order]: for each node the engine runs, in this order: the hooks of the tensors it
# made (tensor.register_hook; a leaf's own hooks for AccumulateGrad), retain_grad, the node's
# pre-hooks (node.register_prehook), apply, then the node's hooks (node.register_hook). Each
# replacement gradient is checked (a Tensor of the same shape, a float dtype).

cdef class NodeExtra:
    """A node's rarely used state: hooks, retain_grad slots, anomaly trace, metadata."""

    def __init__(self):
        raise TypeError("NodeExtra objects are made by lucid's core")


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


cdef void add_retain_grad_slot(Tensor t):
    """t's grad_fn hands t's gradient to t.grad (retain_grad), through a weak reference."""
    cdef NodeExtra extra = t._grad_fn.get_extra()
    if extra.retain_grad_slots is None:
        extra.retain_grad_slots = []
    extra.retain_grad_slots.append((t._output_nr, PyWeakref_NewRef(t, None)))


cdef void attach_inplace_output(Tensor t, Node node):
    """t was changed in place by a recorded op: node is its history now, and a retained
    gradient follows t's current value (the old node no longer hands it to t.grad)."""
    cdef Node old = t._grad_fn
    cdef list slots
    if t._retains_grad and old is not None and old.extra is not None:
        slots = old.extra.retain_grad_slots
        if slots:
            old.extra.retain_grad_slots = [s for s in slots if (<tuple>s)[1]() is not t]
    attach_output(t, node, 0)
    if t._retains_grad:
        add_retain_grad_slot(t)


cdef class AccumulateGrad(Node):
    """The node of a leaf: adds the gradient that reaches it into variable.grad."""
    # No apply of its own: the engine accumulates into the leaf (accumulate_into_leaf).

    cpdef str name(self):
        """The name "AccumulateGrad"."""
        return "AccumulateGrad"

    @property
    def variable(self):
        """The leaf whose .grad this node accumulates."""
        return self.variable


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
    gc_untrack(acc)                      # Note [GC tracking]
    acc.variable = t
    acc.sequence_nr = next_sequence_nr()
    t._grad_accumulator = PyWeakref_NewRef(acc, None)
    return acc


cdef inline void check_not_stale(Tensor t) except *:
    """Raise when t is a view whose base was changed in place by a recorded op since."""
    if t._view_base is not None and t._storage is not None and \
            view_taken_at(t) != t._storage.graph_version and t.requires_grad_c():
        raise_stale_view(t)


cdef void raise_stale_view(Tensor t, str op=None) except *:
    raise RuntimeError(
        f"{'' if op is None else op + ': '}this view (shape {t.data.shape}) was taken before "
        "its base was changed in place by a "
        "recorded operation, so its history is out of date; take the view again after the "
        "in-place change (or clone() it before)")


def _grad_accumulator(Tensor t):
    """The node t's gradient flows into: its grad_fn, or (a leaf) its AccumulateGrad."""
    return gradient_node(t)
