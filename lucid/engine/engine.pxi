# The engine: one traversal of the backward graph, run_node and the edge loop (its parts: threads,
# discovery, gradients, native_nodes and entry_points.pxi, beside this file).
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
            if leaf and has_leaf_hooks((<AccumulateGrad>node).variable):
                run_post_accumulate_hooks(node)
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
    register_traversal(t.epoch, t.substitutes)
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
        if full_tracebacks:
            raise
        raise e.with_traceback(without_compiled_entries(e.__traceback__))   # Note [Short tracebacks]
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
