# Threads: epochs of the running traversals, stand-ins for shared leaves, leaf locks.

# Note [Threads]
#   Per-node traversal state lives on the node, stamped with the traversal's epoch. Each running
#   traversal registers its epoch with its thread (active_traversals). Discovery meeting a node
#   stamped by a traversal still running in another thread:
#   - an AccumulateGrad (a leaf shared by independent graphs): this traversal uses a private
#     stand-in node for the same leaf (substitutes), so the two traversals never share state;
#   - any other node: the same graph is being traversed by two threads at once: RuntimeError.
#   A leaf's .grad is read, added and written under a lock of its own (leaf_lock), so threads
#   that share leaves lose no update. In the common case (one traversal at a time) this costs
#   one comparison per discovered node: stamps older than every running traversal are free.

from cpython.pythread cimport (PyThread_type_lock, PyThread_allocate_lock, PyThread_acquire_lock,
                               PyThread_release_lock, PyThread_get_thread_ident, WAIT_LOCK,
                               NOWAIT_LOCK)

cdef uint64_t _epoch_counter = 0
cdef dict active_traversals = {}        # epoch -> (thread ident, substitutes), of every running
                                        # traversal
cdef uint64_t oldest_active_epoch = 0   # the smallest epoch in active_traversals (0: none)

cdef enum:
    LEAF_LOCKS = 64
cdef PyThread_type_lock leaf_locks[LEAF_LOCKS]


cdef void init_leaf_locks() except *:
    cdef int i
    for i in range(LEAF_LOCKS):
        leaf_locks[i] = PyThread_allocate_lock()
        if leaf_locks[i] == NULL:
            raise MemoryError()

init_leaf_locks()


cdef inline PyThread_type_lock leaf_lock(Tensor leaf) noexcept:
    """The lock that guards leaf.grad (striped by address: no allocation per leaf)."""
    return leaf_locks[(<size_t><PyObject*>leaf >> 4) % LEAF_LOCKS]


cdef inline void acquire_leaf_lock(PyThread_type_lock lock) noexcept:
    if not PyThread_acquire_lock(lock, NOWAIT_LOCK):
        with nogil:                       # the holder may need the GIL to finish
            PyThread_acquire_lock(lock, WAIT_LOCK)


cdef void register_traversal(uint64_t epoch, dict substitutes):
    global oldest_active_epoch
    active_traversals[epoch] = (PyThread_get_thread_ident(), substitutes)
    if oldest_active_epoch == 0:
        oldest_active_epoch = epoch


cdef void unregister_traversal(uint64_t epoch):
    global oldest_active_epoch
    active_traversals.pop(epoch, None)
    oldest_active_epoch = min(active_traversals) if active_traversals else 0


cdef Node claim_node(Node node, uint64_t epoch, dict substitutes):
    """Note [Threads]: node itself, or the stand-in this traversal must use for it."""
    cdef AccumulateGrad stand_in
    if node.epoch < oldest_active_epoch or node.epoch == 0:
        return node
    entry = active_traversals.get(node.epoch)
    owner = None if entry is None else (<tuple>entry)[0]
    if owner is None or owner == PyThread_get_thread_ident():
        return node                       # stale, or an outer traversal of this thread
    if type(node) is AccumulateGrad:
        stand_in = substitutes.get(node)
        if stand_in is None:
            stand_in = AccumulateGrad.__new__(AccumulateGrad)
            gc_untrack(stand_in)
            stand_in.variable = (<AccumulateGrad>node).variable
            stand_in.sequence_nr = node.sequence_nr
            stand_in.extra = node.extra          # the same node hooks run for it
            substitutes[node] = stand_in
        return stand_in
    raise RuntimeError(
        f"{describe(node)} is being traversed by another thread's backward (thread {owner}) "
        "right now: one graph can be backwarded by one thread at a time. Build a graph per "
        "thread, or wait for the other backward to finish")


cdef inline Node edge_node(Node node, Py_ssize_t i, uint64_t epoch, dict substitutes):
    """The node edge i of node leads to, in this traversal (after discovery)."""
    cdef Node child = <Node>node.next_edges[i].node
    if child.epoch != epoch:
        return <Node>substitutes[child]
    return child


cdef uint64_t current_epoch() except? 0:
    """The epoch of the innermost traversal running in this thread (0: none)."""
    cdef uint64_t newest = 0
    me = PyThread_get_thread_ident()
    for epoch, entry in active_traversals.items():
        if (<tuple>entry)[0] == me and <uint64_t>epoch > newest:
            newest = epoch
    return newest


def _current_graph_task_id():
    """An id of the backward running in this thread (its innermost traversal), -1 outside one."""
    cdef uint64_t epoch = current_epoch()
    return -1 if epoch == 0 else <object>epoch


def _graph_task_active(task_id):
    """Is the backward with this id (from _current_graph_task_id) still running?"""
    return task_id in active_traversals

