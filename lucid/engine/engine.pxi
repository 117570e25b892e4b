# The engine: an iterative traversal of the backward graph, plus backward() and grad().
#
# Note [Engine traversal]
#   1. discover every node reachable from the roots (explicit stack), counting for each node the
#      edges that point at it (its dependencies);
#   2. when inputs are named (grad(), backward(inputs=)), mark which nodes must run: a node runs
#      when some node it feeds must run or is captured (reverse topological order);
#   3. seed the roots' buffers, then the edge loop (traverse): pop a ready node (dependencies ==
#      0), run it (run_node), send each gradient it returned into the buffer of the node its edge
#      leads to, and count that edge done; a node whose count reaches 0 is ready.
#   run_node is Note [Hook order], one small helper a step: take the node's pending gradients;
#   its tensor hooks, retain_grad and pre-hooks; capture for grad(); apply, or for a leaf's node
#   accumulate into the leaf's .grad (is_leaf_node is the one test for a leaf's node);
#   post-hooks; release its saved state unless the graph is retained. A pruned node does none of
#   it (as in PyTorch, hooks outside what grad() needs do not run). A traversal that starts
#   while a profile block is open runs its nodes through run_node_profiled, which counts and
#   times around run_node; the choice is made once per traversal, outside the per-node work.
#   An error raised while a node runs is noted once (note_raised: the node and its creation
#   site) by run_engine's one try around the loop, not by a try per node.
#   Per-node state lives in typed fields stamped with the traversal's epoch. A traversal started
#   inside another (a Function's backward calling grad()) saves the state of every node it
#   touches and restores it when it ends, so the outer traversal goes on undisturbed.

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
cdef dict active_traversals = {}        # epoch -> thread ident, of every running traversal
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


cdef void register_traversal(uint64_t epoch):
    global oldest_active_epoch
    active_traversals[epoch] = PyThread_get_thread_ident()
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
    owner = active_traversals.get(node.epoch)
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


cdef inline Tensor sum_gradients(Tensor current, Tensor g, bint in_place, bint create_graph):
    """current + g: into current's memory when the engine owns it, else into a new buffer (an
    op, when the sum must be recorded or carry tangents: Note [Forward mode])."""
    if create_graph or fw_active():
        return add(current, g)
    if in_place:
        add_into(current.data, g.data)
        return current
    if fast_pair(current.data, g.data):
        return wrap(fast_binary(F_ADD, current.data, g.data, None))
    return wrap(as_array(np.add(current.data, g.data, dtype=current.data.dtype)))


cdef inline bint engine_holds_only(object g, Py_ssize_t engine_refs) noexcept:
    """Note [Gradient ownership]: a gradient arriving at a buffer belongs to the engine when the
    engine's own references (engine_refs) are all the tensor has, and the tensor is the only
    holder of memory it owns: then nothing else can see a write into it. A gradient a node also
    saved, sent down two edges, kept by a hook or given by the user fails this test, and the
    engine never writes into it (it makes a new buffer for a sum, or copies into .grad)."""
    if lucid_refcount(<PyObject*>g) != engine_refs:
        return False
    cdef Tensor t = <Tensor>g
    if t._storage is not None or t._grad_fn is not None or \
            lucid_refcount(<PyObject*>t.data) != 1 or not is_fast(t.data):
        return False
    cdef cnp.ndarray arr = <cnp.ndarray>t.data
    return cnp.PyArray_BASE(arr) == NULL and cnp.PyArray_ISWRITEABLE(arr)


cdef inline bint may_overwrite(Node node, Tensor g) noexcept:
    """May node's apply write its result into g, its incoming gradient of output 0?"""
    return (node.buffer_owned & 1) != 0 and not grad_enabled() and not fw_active() and \
        is_fast(g.data)


cdef int add_to_buffer(Node node, int slot, Tensor g, bint create_graph, bint owned) except -1:
    """Accumulate g into node's pending gradient for output slot (owned: the engine's alone)."""
    cdef list buf
    cdef uint64_t bit
    if node.num_outputs == 1:
        if node.buffer is None:
            node.buffer = g
            node.buffer_owned = 1 if owned and not create_graph else 0
        else:
            node.buffer = sum_gradients(<Tensor>node.buffer, g, node.buffer_owned & 1, create_graph)
            node.buffer_owned = 0 if create_graph else 1
        return 0
    if node.buffer is None:
        node.buffer = [None] * node.num_outputs
    buf = <list>node.buffer
    bit = (<uint64_t>1) << slot if slot < 64 else 0
    if buf[slot] is None:
        buf[slot] = g
        if owned and not create_graph:
            node.buffer_owned |= bit
        else:
            node.buffer_owned &= ~bit
    else:
        buf[slot] = sum_gradients(<Tensor>buf[slot], g, (node.buffer_owned & bit) != 0, create_graph)
        if not create_graph:
            node.buffer_owned |= bit
    return 0


cdef Tensor checked_hook_result(object result, Tensor g, str where, object hook):
    """A hook's replacement for g, checked: a Tensor of g's shape and a floating dtype."""
    if not isinstance(result, Tensor):
        raise TypeError(f"a hook on {where} returned {type(result).__name__}; a hook returns a "
                        "Tensor or None")
    if not is_float_dtype(descr((<Tensor>result).data)):
        raise RuntimeError(f"the hook {getattr(hook, '__qualname__', repr(hook))!r} on {where} "
                           f"returned a {dtype_name((<Tensor>result).data.dtype)} gradient for a "
                           f"{dtype_name(g.data.dtype)} one; a hook must return a floating-point "
                           "gradient (it is not converted)")
    if (<Tensor>result).data.shape != g.data.shape:
        raise RuntimeError(f"a hook on {where} returned a gradient of shape "
                           f"{(<Tensor>result).data.shape}, expected {g.data.shape}")
    return <Tensor>result


cdef void note_raised(BaseException e, Node node, str what) noexcept:
    """Note on e where its backward was: "lucid: raised <what> <node> (created at <site>)" and,
    in anomaly mode, the forward traceback that made node; once per node (a hook's or a
    Function's error is noted where it was raised; the engine's own note for the node, in
    run_engine, then adds nothing)."""
    marker = <size_t><PyObject*>node          # the node is alive while its error propagates
    if getattr(e, "_lucid_noted", None) == marker:
        return
    e.add_note(f"lucid: raised {what} {describe(node)}")
    if anomaly_enabled:
        note_forward_trace(e, node)
    try:
        e._lucid_noted = marker
    except AttributeError:
        pass


cdef Tensor run_hooks(dict hooks, Tensor g, str where, Node node):
    """g through each tensor hook fn(g) of hooks in order; a hook may return a replacement."""
    cdef int64_t start
    for fn in list(hooks.values()):
        start = now_ns() if profiling else 0
        try:
            result = fn(g)
        except BaseException as e:
            note_raised(e, node, f"in a hook on {where}, the gradient flowing into")
            raise
        finally:
            if profiling:
                note_python_call(node, "hook", start, fn)
        if result is not None:
            g = checked_hook_result(result, g, where, fn)
    return g


cdef list run_node_hooks(dict hooks, Node node, tuple grads, tuple grad_outputs, str kind):
    """Node pre-hooks fn(grad_outputs) or hooks fn(grad_inputs, grad_outputs); each may return
    a replacement tuple, checked entry by entry like a tensor hook's result."""
    cdef list out = list(grads)
    cdef int64_t start
    cdef Py_ssize_t i
    cdef str where
    for fn in list(hooks.values()):
        start = now_ns() if profiling else 0
        try:
            result = fn(tuple(out)) if grad_outputs is None else fn(tuple(out), grad_outputs)
        except BaseException as e:
            note_raised(e, node, f"in a node {kind} on")
            raise
        finally:
            if profiling:
                note_python_call(node, "hook", start, fn)
        if result is None:
            continue
        if isinstance(result, list):
            result = tuple(result)
        if not isinstance(result, tuple) or len(<tuple>result) != len(out):
            raise RuntimeError(f"a node {kind} on {describe(node)} returned "
                               f"{type(result).__name__}"
                               f"{'' if not isinstance(result, tuple) else ' of length %d' % len(result)}; "
                               f"expected None or a tuple of {len(out)} gradients")
        for i in range(len(out)):
            r = (<tuple>result)[i]
            if r is None or out[i] is None:
                if r is not None:
                    raise RuntimeError(f"a node {kind} on {describe(node)} returned a gradient "
                                       f"at position {i}, where there was none")
                out[i] = None
                continue
            where = f"{kind} of {describe(node)} (position {i})"
            out[i] = checked_hook_result(r, <Tensor>out[i], where, fn)
    return out


cdef int accumulate_into_leaf(Tensor leaf, Tensor g, bint owned, bint create_graph) except -1:
    """leaf.grad += g (a fresh tensor under create_graph; stolen from the engine when it can),
    under the leaf's lock (Note [Threads])."""
    if not shape_is(g.data, leaf.data.shape):
        raise RuntimeError(f"AccumulateGrad: gradient of shape {g.data.shape} for a leaf of "
                           f"shape {leaf.data.shape}")
    if descr(g.data) is not descr(leaf.data) and g.data.dtype != leaf.data.dtype:
        g = cast(g, descr(leaf.data))
        owned = not create_graph          # the cast made a fresh array no one else holds
    cdef PyThread_type_lock lock = leaf_lock(leaf)
    acquire_leaf_lock(lock)
    try:
        if leaf._grad is None:
            if create_graph:
                leaf._grad = clone(g) if g.requires_grad_c() else wrap(np.array(g.data, copy=True))
            elif owned:                   # Note [Gradient ownership]: nothing else can see it
                leaf._grad = g
            else:
                leaf._grad = wrap(np.array(g.data, order="C", copy=True))
        elif create_graph or fw_active() or (<Tensor>leaf._grad).requires_grad_c():
            leaf._grad = add(leaf._grad, g)
        else:
            add_into((<Tensor>leaf._grad).data, g.data)
            (<Tensor>leaf._grad).bump_version()
    finally:
        PyThread_release_lock(lock)
    return 0


# -- one traversal: its state, run_node and the edge loop (Note [Engine traversal]) ------------

@cython.final
@cython.no_gc
cdef class Traversal:
    """One run of the engine: its settings and the state its nodes share."""
    cdef uint64_t epoch
    cdef bint keep_graph                # retain_graph: no node's saved state is released
    cdef bint create_graph              # the backward is itself recorded
    cdef bint accumulate                # backward(): retain_grad slots get their .grad
    cdef list targets                   # grad()'s (or backward(inputs=)'s) nodes, or None
    cdef list target_slots              # the output slot of each target
    cdef list captured                  # the gradient captured at each target
    cdef dict substitutes               # Note [Threads]: stand-ins for shared leaves
    cdef PyObject* single               # Note [Gradient tuple] (owned; freed by run_engine)
    cdef PyObject* running              # the node being run (borrowed), for an error's note


cdef inline bint is_leaf_node(Node node) noexcept:
    """Is node a leaf's AccumulateGrad, whose run adds into the leaf's .grad instead of apply?"""
    return type(node) is AccumulateGrad


cdef inline tuple take_gradients(Traversal t, Node node):
    """node's pending gradients as the tuple its apply takes (None when none reached it); its
    buffer is emptied."""
    buf = node.buffer
    node.buffer = None
    node.buffer_owned = 0
    if buf is None:
        return None
    if node.num_outputs == 1:
        return lucid_single_tuple(&t.single, buf)   # Note [Gradient tuple]
    return tuple(<list>buf)


cdef inline bint has_pre_hooks(Node node, bint leaf) noexcept:
    """Might anything run before node's apply (hooks, retain_grad)? One pointer test, mostly."""
    return node.extra is not None or (leaf and has_leaf_hooks((<AccumulateGrad>node).variable))


cdef void run_tensor_hooks(Node node, bint leaf, list grads) except *:
    """The hooks of the tensors node made (of its leaf, for a leaf's node), each on its slot."""
    cdef Tensor variable
    if leaf and grads[0] is not None:
        variable = (<AccumulateGrad>node).variable
        if has_leaf_hooks(variable):
            grads[0] = run_hooks(variable._extra.hooks, <Tensor>grads[0], "a leaf tensor", node)
    if node.extra is None or not node.extra.tensor_pre_hooks:
        return
    for slot, hooks in node.extra.tensor_pre_hooks.items():
        if grads[slot] is not None and hooks:
            grads[slot] = run_hooks(hooks, <Tensor>grads[slot], f"output {slot} of {node.name()}",
                                    node)


cdef void retain_grads(Traversal t, Node node, list grads) except *:
    """Each tensor of node that retains its grad (retain_grad) gets its slot's gradient added
    into its .grad; only under backward()."""
    cdef Tensor r, g
    if not t.accumulate or node.extra is None or not node.extra.retain_grad_slots:
        return
    for slot, ref in node.extra.retain_grad_slots:
        r = ref()
        if r is None or grads[slot] is None:
            continue
        g = <Tensor>grads[slot]
        if r._grad is None:
            r._grad = g if t.create_graph else wrap(np.array(g.data, copy=True))
        else:
            r._grad = add(r._grad, g)


cdef tuple run_pre_hooks(Traversal t, Node node, bint leaf, tuple grads):
    """grads after what runs before node's apply (Note [Hook order]): tensor hooks, retain_grad,
    then node pre-hooks."""
    cdef list out = list(grads)
    run_tensor_hooks(node, leaf, out)
    retain_grads(t, node, out)
    if node.extra is not None and node.extra.pre_hooks:
        out = run_node_hooks(node.extra.pre_hooks, node, tuple(out), None, "pre-hook")
    return tuple(out)


cdef int capture(Traversal t, Node node, tuple grads) except -1:
    """Hand node's incoming gradients to each target of grad()/backward(inputs=) that is node."""
    cdef Py_ssize_t k
    for k in range(len(t.targets)):
        if t.targets[k] is node:
            t.captured[k] = grads[<Py_ssize_t>t.target_slots[k]]
    return 0


cdef inline tuple apply_node(Traversal t, Node node, bint leaf, tuple grads, uint64_t owned):
    """node's input gradients from grads: a leaf's node adds grads[0] into the leaf's .grad and
    returns (); any other node's apply computes them (into the buffers owned allows)."""
    cdef tuple outs
    if node.released:
        raise_freed_graph(node)
    if leaf:
        if grads[0] is not None:
            accumulate_into_leaf((<AccumulateGrad>node).variable, <Tensor>grads[0], owned & 1,
                                 t.create_graph)
        return ()
    node.buffer_owned = owned               # Note [Gradient ownership]: may_overwrite reads it
    outs = call_apply(node, grads)          # (if it raises, the traversal ends, and the next one
    node.buffer_owned = 0                   # stamps node afresh)
    return outs


cdef inline bint has_post_hooks(Node node) noexcept:
    """Has node hooks to run after its apply (node.register_hook)?"""
    return node.extra is not None and bool(node.extra.post_hooks)


cdef inline void release_node(Node node) noexcept:
    """Drop node's saved state after it ran (retain_graph=False): a second run raises."""
    node.release_saved()
    node.released = True


cdef tuple run_node(Traversal t, Node node):
    """Run a ready node (Note [Hook order]) and return its input gradients (None: none). A
    pruned node (neither run nor captured) does nothing, its hooks included."""
    cdef uint64_t owned = node.buffer_owned  # Note [Gradient ownership]
    cdef tuple grads = take_gradients(t, node)
    cdef tuple outs = None
    cdef bint leaf = is_leaf_node(node)
    if grads is None:                        # no gradient reached it
        return None
    if node.exec_state & (EXEC_RUN | EXEC_CAPTURE):
        if has_pre_hooks(node, leaf):
            grads = run_pre_hooks(t, node, leaf, grads)
            owned = 0                        # a hook may keep what it was given
        if node.exec_state & EXEC_CAPTURE:
            capture(t, node, grads)
            owned = 0
        if node.exec_state & EXEC_RUN:
            outs = apply_node(t, node, leaf, grads, owned)
            if has_post_hooks(node):
                outs = tuple(run_node_hooks(node.extra.post_hooks, node, outs, grads, "hook"))
            if not leaf and not t.keep_graph:   # a leaf's node serves every graph of its leaf
                release_node(node)
    grads = None                             # the engine's reference to what apply got goes,
    lucid_single_clear(&t.single)            # so ownership can pass on (Note [Gradient tuple])
    return outs


cdef tuple run_node_profiled(Traversal t, Node node):
    """run_node, counted as run or skipped and timed as the node's event (Note [Nested
    profiles])."""
    cdef bint runs = node.buffer is not None and (node.exec_state & EXEC_RUN) != 0
    cdef int64_t start = now_ns()
    cdef tuple outs = run_node(t, node)
    note_node_done(node, runs, start)
    return outs


cdef inline int propagate(Traversal t, Node node, tuple outs, NodeStack* ready) except -1:
    """Send each gradient of outs along its edge of node into the buffer of the node the edge
    leads to, and count the edge done: a node with no edge left pending is ready."""
    cdef Node child
    cdef Py_ssize_t i
    for i in range(node.num_inputs):
        if node.next_edges[i].node == NULL:
            continue
        child = <Node>node.next_edges[i].node
        if child.epoch != t.epoch:
            child = <Node>t.substitutes[child]      # Note [Threads]
        if outs is not None:
            g = outs[i]
            if g is not None:                # references: the outs tuple and g
                add_to_buffer(child, node.next_edges[i].input_nr, <Tensor>g, t.create_graph,
                              engine_holds_only(g, 2))
            g = None
        child.dependencies -= 1
        if child.dependencies == 0:
            stack_push(ready, <PyObject*>child)
    return 0


ctypedef tuple (*NodeRunner)(Traversal t, Node node)


cdef int traverse(Traversal t, NodeStack* ready, NodeRunner run) except -1:
    """The edge loop: run each ready node (run_node, or run_node_profiled), then send its
    gradients along its edges."""
    cdef Node node
    cdef tuple outs
    while ready.size:
        node = stack_pop(ready)
        t.running = <PyObject*>node          # held by run_engine's list of nodes
        prefetch_children(node)
        outs = run(t, node)
        propagate(t, node, outs, ready)
    return 0


cdef void mark_targets(Traversal t) except *:
    """Each target node is captured; under backward(inputs=), a leaf's own node runs instead
    (it accumulates into the leaf's .grad). A target nothing reached stays unmarked."""
    cdef Node node
    cdef Py_ssize_t k
    t.captured = [None] * len(t.targets)
    for k in range(len(t.targets)):
        node = <Node>t.targets[k]
        if node.epoch != t.epoch:
            node = t.substitutes.get(node)
            if node is None:
                continue
            t.targets[k] = node
        node.exec_state |= EXEC_RUN if t.accumulate and is_leaf_node(node) else EXEC_CAPTURE


cdef int seed_roots(Traversal t, list roots, list root_slots, list root_grads,
                    NodeStack* ready) except -1:
    """The roots' gradients into their buffers (the caller's: never written into), and each
    root without dependencies on the ready stack, once."""
    cdef Node node
    cdef Py_ssize_t k
    for k in range(len(roots)):
        add_to_buffer(<Node>roots[k], root_slots[k], <Tensor>root_grads[k], t.create_graph, False)
        (<Node>roots[k]).buffer_owned = 0
    for node in roots:
        if node.dependencies == 0 and (node.exec_state & EXEC_QUEUED) == 0:
            node.exec_state |= EXEC_QUEUED
            stack_push(ready, <PyObject*>node)
    return 0


cdef void restore_node_states(list saved_states):
    """Give back each node a re-entrant traversal touched the state of the traversal outside."""
    cdef Node node
    for state in reversed(saved_states):
        node = <Node>state[0]
        node.dependencies = state[1]
        node.epoch = state[2]
        node.buffer = state[3]
        node.buffer_owned = state[4]
        node.exec_state = state[5]


cdef list run_engine(list roots, list root_slots, list root_grads, bint keep_graph,
                     bint create_graph, list targets, list target_slots, bint accumulate):
    """Run the backward graph from roots; return the gradients captured at targets."""
    global _epoch_counter, lucid_traversal_depth, lucid_plain_backward
    _epoch_counter += 1
    cdef Traversal t = Traversal.__new__(Traversal)
    t.epoch = _epoch_counter
    t.keep_graph = keep_graph
    t.create_graph = create_graph
    t.accumulate = accumulate
    t.targets = targets
    t.target_slots = target_slots
    t.substitutes = {}
    cdef list saved_states = [] if lucid_traversal_depth > 0 else None
    cdef list nodes = []
    cdef NodeStack ready = NodeStack(NULL, 0, 0)      # nodes whose dependencies are all done
    cdef bint profiled = profiling                    # read once (Note [Nested profiles])
    cdef int64_t started = traversal_started() if profiled else 0
    cdef bint previous_mode = set_grad_enabled_c(create_graph)
    cdef int previous_plain = lucid_plain_backward
    cdef bint completed = False
    cdef Node node
    lucid_traversal_depth += 1
    lucid_plain_backward = 1 if (accumulate and targets is None) else 0
    register_traversal(t.epoch)
    try:
        discover(roots, nodes, t.epoch, saved_states, 0 if targets is not None else EXEC_RUN,
                 t.substitutes)
        if targets is not None:
            mark_targets(t)
            mark_needed(roots, nodes, t.epoch, t.substitutes)
        seed_roots(t, roots, root_slots, root_grads, &ready)
        traverse(t, &ready, run_node_profiled if profiled else run_node)
        completed = True
        return t.captured
    except BaseException as e:             # one try per traversal, none per node
        if t.running != NULL:
            note_raised(e, <Node>t.running, "while running the backward of")
        raise
    finally:
        PyMem_Free(ready.items)
        Py_XDECREF(t.single)
        t.single = NULL
        if not completed:                  # every node run cleared its own buffer
            for node in nodes:
                node.buffer = None
        if saved_states is not None:
            restore_node_states(saved_states)
        unregister_traversal(t.epoch)
        lucid_plain_backward = previous_plain
        lucid_traversal_depth -= 1
        set_grad_enabled_c(previous_mode)
        if profiled:
            traversal_ended(started)


cdef tuple call_apply(Node node, tuple grads):
    """node.apply(grads), checked: one gradient (or None) per forward input; a native node's
    result also entry by entry (Note [Native nodes])."""
    cdef tuple outs = node.apply(grads)
    if node.extra is not None and node.extra.input_meta is not None:   # a native node
        outs = checked_native_outputs(node, outs)
    if outs is None or len(outs) != node.num_inputs:
        raise RuntimeError(f"{node.name()} returned {0 if outs is None else len(outs)} gradients "
                           f"for {node.num_inputs} inputs")
    if anomaly_enabled:
        check_nan_gradients(node, outs)
    return outs


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


# -- the public entry points -------------------------------------------------------------------

def _in_plain_backward():
    """True inside a node run by backward() without inputs= (it accumulates into every leaf's
    .grad); False inside autograd.grad() or backward(inputs=...), and outside a traversal."""
    return lucid_plain_backward != 0


cdef tuple as_tensor_tuple(object xs, str what, str op):
    if isinstance(xs, Tensor):
        return (xs,)
    if isinstance(xs, (tuple, list)):
        for x in xs:
            if not isinstance(x, Tensor):
                raise TypeError(f"{op}: {what} must be Tensors, got {type(x).__name__}")
        return tuple(xs)
    raise TypeError(f"{op}: {what} must be a Tensor or a sequence of Tensors, got "
                    f"{type(xs).__name__}")


cdef list root_gradients(tuple outputs, object grad_outputs, str what, str op):
    """One gradient per output: the given one (checked) or ones for a one-element output."""
    cdef list given
    if grad_outputs is None:
        given = [None] * len(outputs)
    elif isinstance(grad_outputs, Tensor):
        given = [grad_outputs]
    elif isinstance(grad_outputs, (tuple, list)):
        given = list(grad_outputs)
    else:
        raise TypeError(f"{op}: {what} must be a Tensor, None or a sequence of them, got "
                        f"{type(grad_outputs).__name__}")
    if len(given) != len(outputs):
        raise RuntimeError(f"{op}: got {len(given)} gradients for {len(outputs)} outputs")
    cdef list out = []
    cdef Tensor t, g
    for k in range(len(outputs)):
        t = <Tensor>outputs[k]
        if given[k] is None:
            if t.data.size != 1:
                raise RuntimeError(
                    f"{op}: grad can be implicitly created only for outputs with one element; "
                    f"output {k} has shape {t.data.shape}: pass gradient= (or grad_outputs=) a "
                    "tensor of that shape")
            out.append(wrap(np.ones(t.data.shape, dtype=t.data.dtype)))
            continue
        g = operand(given[k], op)
        if g.data.shape != t.data.shape:
            raise RuntimeError(f"{op}: gradient {k} has shape {g.data.shape} but output {k} has "
                               f"shape {t.data.shape}")
        out.append(cast(g, descr(t.data)) if g.data.dtype != t.data.dtype else g)
    return out


cdef list root_nodes(tuple outputs, list slots, str op):
    cdef list nodes = []
    cdef Tensor t
    for k in range(len(outputs)):
        t = <Tensor>outputs[k]
        if not t.requires_grad_c():
            raise RuntimeError(f"{op}: element {k} of tensors does not require grad and does "
                               "not have a grad_fn: nothing to differentiate (did you forget "
                               "requires_grad=True on a leaf, or run forward under no_grad?)")
        check_not_stale(t)
        nodes.append(gradient_node(t))
        slots.append(t._output_nr)
    return nodes


cdef list target_nodes(tuple inputs, list slots, str op):
    cdef list nodes = []
    cdef Tensor t
    for k in range(len(inputs)):
        t = <Tensor>inputs[k]
        if not t.requires_grad_c():
            raise RuntimeError(f"{op}: input {k} does not require grad: only tensors with "
                               "requires_grad=True (or results of ops on them) can be "
                               "differentiated with respect to")
        nodes.append(gradient_node(t))
        slots.append(t._output_nr)
    return nodes


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradients of tensors into the .grad of the leaves (or of inputs)."""
    cdef tuple outputs = as_tensor_tuple(tensors, "tensors", "backward")
    cdef list grads = root_gradients(outputs, grad_tensors, "grad_tensors", "backward")
    cdef list slots = [], tslots = []
    cdef list roots = root_nodes(outputs, slots, "backward")
    cdef tuple wanted = None
    cdef list targets = None
    cdef PyThread_type_lock lock
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        wanted = as_tensor_tuple(inputs, "inputs", "backward")
        if not wanted:
            raise RuntimeError("backward(inputs=...) was given no tensors")
        targets = target_nodes(wanted, tslots, "backward")
    captured = run_engine(roots, slots, grads, retain_graph, create_graph, targets, tslots, True)
    if wanted is not None:
        for k in range(len(wanted)):
            if captured[k] is not None:
                t = <Tensor>wanted[k]
                g = cast(<Tensor>captured[k], descr(t.data))
                lock = leaf_lock(t)
                acquire_leaf_lock(lock)
                try:
                    t._grad = wrap(np.array(g.data, copy=True)) if t._grad is None else \
                        add(t._grad, g)
                finally:
                    PyThread_release_lock(lock)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, materialize_grads=False):
    """The gradients of outputs with respect to inputs, as a tuple; writes no .grad."""
    cdef tuple outs = as_tensor_tuple(outputs, "outputs", "grad")
    cdef tuple wanted = as_tensor_tuple(inputs, "inputs", "grad")
    if allow_unused is None:
        allow_unused = materialize_grads
    elif materialize_grads and not allow_unused:
        raise ValueError("materialize_grads=True needs allow_unused to be True or left unset")
    if retain_graph is None:
        retain_graph = create_graph
    cdef list grads = root_gradients(outs, grad_outputs, "grad_outputs", "grad")
    cdef list slots = [], tslots = []
    cdef list roots = root_nodes(outs, slots, "grad")
    cdef list targets = target_nodes(wanted, tslots, "grad")
    cdef list captured = run_engine(roots, slots, grads, retain_graph, create_graph, targets,
                                    tslots, False)
    cdef list result = []
    cdef Tensor t
    for k in range(len(wanted)):
        t = <Tensor>wanted[k]
        g = captured[k]
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"grad: input {k} (shape {t.data.shape}) was not used to compute "
                                   "the outputs; pass allow_unused=True to get None for it")
            if materialize_grads:
                g = wrap(np.zeros(t.data.shape, dtype=t.data.dtype))
        elif (<Tensor>g).data.dtype != t.data.dtype:
            g = cast(<Tensor>g, descr(t.data))
        result.append(g)
    return tuple(result)
