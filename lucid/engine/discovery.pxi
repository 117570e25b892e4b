# Discovery: the nodes a traversal reaches, which of them run (Node.exec_state), and the stack
# of ready nodes.

cdef enum:                # the bits of Node.exec_state, set per traversal (0: pruned, not run)
    EXEC_RUN = 1          # run it: apply, or accumulate into its leaf's .grad
    EXEC_CAPTURE = 2      # hand its incoming gradients to grad()/backward(inputs=)
    EXEC_QUEUED = 4       # a root already put on the ready stack


cdef inline void init_node(Node node, uint64_t epoch, list saved_states, int exec_state):
    """Stamp node for this traversal (saving the state of an outer one, when re-entrant)."""
    if saved_states is not None and node.epoch != 0:
        saved_states.append((node, node.dependencies, node.epoch, node.buffer, node.buffer_owned,
                             node.exec_state))
    node.epoch = epoch
    node.dependencies = 0
    node.buffer = None
    node.buffer_owned = 0
    node.exec_state = exec_state


cdef extern from *:
    void __builtin_prefetch(const void* addr) nogil


cdef inline void prefetch_children(Node node) noexcept:
    """Ask for the cache lines of node's children before node's backward runs: on a graph larger
    than the caches (W10 at 10^6 nodes) the child is then read from memory while the apply works,
    not after it. The first three lines hold the fields the engine reads."""
    cdef Py_ssize_t i
    cdef char* p
    for i in range(node.num_inputs):
        p = <char*>node.next_edges[i].node
        if p != NULL:
            __builtin_prefetch(p)
            __builtin_prefetch(p + 64)
            __builtin_prefetch(p + 128)


# Note [Gradient tuple]
#   Every node's apply takes a tuple of its output gradients; for the common one-output node the
#   engine would make and free a 1-tuple per node (~130 instructions: allocation, GC tracking,
#   the trashcan on free). A traversal instead keeps one 1-tuple and refills it: it is refilled
#   only while the traversal's reference is the only one (an apply or hook that kept the tuple
#   gets it, and the next node gets a new one), and its item is cleared right after the apply,
#   so the gradient's reference count says who holds it (ownership passing in add_to_buffer).
cdef extern from *:
    """
    static inline PyObject* lucid_single_tuple(PyObject** cache, PyObject* item) {
        PyObject* t = *cache;
        if (t == NULL || Py_REFCNT(t) != 1) {
            *cache = NULL;
            Py_XDECREF(t);
            t = PyTuple_New(1);
            if (t == NULL) return NULL;
            *cache = t;
        }
        Py_INCREF(item);
        PyTuple_SET_ITEM(t, 0, item);
        Py_INCREF(t);
        return t;
    }
    static inline void lucid_single_clear(PyObject** cache) {
        PyObject* t = *cache;
        if (t != NULL && Py_REFCNT(t) == 1) {
            PyObject* item = PyTuple_GET_ITEM(t, 0);
            PyTuple_SET_ITEM(t, 0, NULL);
            Py_XDECREF(item);
        }
    }
    """
    tuple lucid_single_tuple(PyObject** cache, object item)
    void lucid_single_clear(PyObject** cache)


cdef struct NodeStack:
    PyObject** items        # borrowed: every node on it is held by the traversal's node list
    Py_ssize_t size
    Py_ssize_t capacity


cdef int stack_push(NodeStack* stack, PyObject* node) except -1:
    cdef PyObject** grown
    cdef Py_ssize_t capacity
    if stack.size == stack.capacity:
        capacity = 64 if stack.capacity == 0 else 2 * stack.capacity
        grown = <PyObject**>PyMem_Realloc(stack.items, capacity * sizeof(PyObject*))
        if grown == NULL:
            raise MemoryError()
        stack.items = grown
        stack.capacity = capacity
    stack.items[stack.size] = node
    stack.size += 1
    return 0


cdef inline Node stack_pop(NodeStack* stack):
    stack.size -= 1
    return <Node>stack.items[stack.size]


cdef void discover(list roots, list nodes, uint64_t epoch, list saved_states,
                   int exec_state, dict substitutes) except *:
    """Find every node reachable from roots and count the edges pointing at each. Roots met
    in another thread's traversal are replaced by their stand-ins in place (Note [Threads])."""
    cdef NodeStack stack = NodeStack(NULL, 0, 0)
    cdef Node node, child
    cdef Py_ssize_t i, k
    try:
        for k in range(len(roots)):
            node = <Node>roots[k]
            if node.epoch != epoch:
                node = claim_node(node, epoch, substitutes)
                roots[k] = node
                if node.epoch != epoch:
                    init_node(node, epoch, saved_states, exec_state)
                    nodes.append(node)
                    stack_push(&stack, <PyObject*>node)
        while stack.size:
            node = stack_pop(&stack)
            for i in range(node.num_inputs):
                if node.next_edges[i].node == NULL:
                    continue
                child = <Node>node.next_edges[i].node
                if child.epoch != epoch:
                    if child.epoch >= oldest_active_epoch:     # Note [Threads]: rarely taken
                        child = claim_node(child, epoch, substitutes)
                    if child.epoch != epoch:
                        init_node(child, epoch, saved_states, exec_state)
                        nodes.append(child)
                        stack_push(&stack, <PyObject*>child)
                child.dependencies += 1
    finally:
        PyMem_Free(stack.items)


cdef void mark_needed(list roots, list nodes, uint64_t epoch, dict substitutes):
    """Set EXEC_RUN on each node that feeds a captured or running node (targets are pre-marked)."""
    cdef list order = []
    cdef list ready = [n for n in roots if (<Node>n).dependencies == 0]
    cdef Node node, child
    cdef Py_ssize_t i
    # Kahn's order over the dependency counts, then restore the counts
    for node in ready:
        node.dependencies = -1
    while ready:
        node = <Node>ready.pop()
        order.append(node)
        for i in range(node.num_inputs):
            if node.next_edges[i].node != NULL:
                child = edge_node(node, i, epoch, substitutes)
                child.dependencies -= 1
                if child.dependencies == 0:
                    child.dependencies = -1
                    ready.append(child)
    for node in nodes:
        node.dependencies = 0
    for node in nodes:
        for i in range(node.num_inputs):
            if node.next_edges[i].node != NULL:
                child = edge_node(node, i, epoch, substitutes)
                child.dependencies += 1
    for node in reversed(order):
        if node.exec_state & EXEC_RUN:
            continue
        for i in range(node.num_inputs):
            if node.next_edges[i].node != NULL and \
                    edge_node(node, i, epoch, substitutes).exec_state & (EXEC_RUN | EXEC_CAPTURE):
                node.exec_state |= EXEC_RUN
                break


def _will_engine_execute_node(Node node):
    """Will the backward running in this thread run node (or hand its gradient to grad())?
    False for a node outside its graph, or pruned because no requested input needs it."""
    cdef uint64_t epoch = current_epoch()
    if epoch == 0:
        raise RuntimeError("_will_engine_execute_node should only be called during the backward "
                           "pass")
    if node.epoch != epoch:
        node = (<dict>(<tuple>active_traversals[epoch])[1]).get(node)   # Note [Threads]
        if node is None or node.epoch != epoch:
            return False
    return (node.exec_state & (EXEC_RUN | EXEC_CAPTURE)) != 0
