# Gradients arriving at a node: summed into its buffer, passed through hooks, accumulated into a
# leaf's .grad; and the one note an exception raised while a node runs gets (note_raised).

cdef inline Tensor sum_gradients(Tensor current, Tensor g, bint in_place, bint create_graph):
    """current + g: into current's memory when the engine owns it, else into a new buffer (an
    op, when the sum must be recorded or carry tangents: Note [Forward mode])."""
    if create_graph or fw_active():
        return add(current, g)
    if in_place:
        add_into(current.data, g.data)
        return current
    if fast_pair(current.data, g.data):
        return wrap(fast_binary(OP_ADD, current.data, g.data, None))
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
    if not is_differentiable_dtype(descr((<Tensor>result).data)):
        raise RuntimeError(f"the hook {getattr(hook, '__qualname__', repr(hook))!r} on {where} "
                           f"returned a {dtype_name((<Tensor>result).data.dtype)} gradient for a "
                           f"{dtype_name(g.data.dtype)} one; a hook must return a floating-point "
                           "or complex gradient (it is not converted)")
    if (<Tensor>result).data.shape != g.data.shape:
        raise RuntimeError(f"a hook on {where} returned a gradient of shape "
                           f"{(<Tensor>result).data.shape}, expected {g.data.shape}")
    return <Tensor>result


# Note [Short tracebacks]
#   An error raised in a backward (a Function's, a hook's) reaches the user through the engine's
#   compiled functions, each of which Cython adds to the traceback (run_engine, traverse,
#   run_node, apply_node, ...: 6-9 entries between the user's backward() call and their raising
#   code). run_engine drops those entries, keeping every Python frame (the user's, and lucid's
#   own Python modules'), so a backward error reads like PyTorch's; the note names the node and
#   its creation site. `_core._set_full_tracebacks(True)` keeps them, for debugging lucid itself.

cdef bint full_tracebacks = False


def _set_full_tracebacks(bint on):
    """Keep the compiled engine's traceback entries in backward errors (Note [Short
    tracebacks]); returns the previous setting."""
    global full_tracebacks
    cdef bint previous = full_tracebacks
    full_tracebacks = on
    return previous


cdef object without_compiled_entries(object tb):
    """tb without the entries of lucid's compiled code (files lucid/....pxi or .pyx)."""
    cdef list kept = []
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if not (name.startswith("lucid/") and name.endswith((".pxi", ".pyx"))):
            kept.append(tb)
        tb = tb.tb_next
    cdef object out = None
    for entry in reversed(kept):
        out = types.TracebackType(out, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return out


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
        if type(fn) is PostAccumulateGradHook:     # runs after the leaf's accumulation
            continue
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


cdef void run_post_accumulate_hooks(Node node) except *:
    """A leaf's post-accumulate-grad hooks, fn(leaf), after its node accumulated its .grad."""
    cdef Tensor variable = (<AccumulateGrad>node).variable
    cdef int64_t start
    for fn in list(variable._extra.hooks.values()):
        if type(fn) is not PostAccumulateGradHook:
            continue
        start = now_ns() if profiling else 0
        try:
            (<PostAccumulateGradHook>fn).fn(variable)
        except BaseException as e:
            note_raised(e, node, "in a post-accumulate-grad hook of a leaf tensor, after")
            raise
        finally:
            if profiling:
                note_python_call(node, "hook", start, (<PostAccumulateGradHook>fn).fn)


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
                leaf._grad = wrap(copy_fast(g.data) if is_fast(g.data) else
                                  np.array(g.data, order="C", copy=True))
        elif create_graph or fw_active() or (<Tensor>leaf._grad).requires_grad_c():
            leaf._grad = add(leaf._grad, g)
        else:
            add_into((<Tensor>leaf._grad).data, g.data)
            (<Tensor>leaf._grad).bump_version()
    finally:
        PyThread_release_lock(lock)
    return 0
