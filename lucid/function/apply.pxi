# Function.apply: run forward with grad mode off, record one PythonBackwardNode for the outputs,
# give them their tangents (the Function's jvp) and save what the ctx asked for; and
# once_differentiable's node.

def make_backward_class(function_cls):
    """The node class of a Function subclass: <ClassName>Backward(PythonBackwardNode)."""
    return type(f"{function_cls.__name__}Backward", (PythonBackwardNode,),
                {"__module__": function_cls.__module__, "__slots__": (),   # no per-node dict
                 "__doc__": f"Backward node of {function_cls.__qualname__}."})


cdef inline bint is_in(object x, tuple items):
    for item in items:
        if item is x:
            return True
    return False


cdef class FunctionInfo:
    """What Function.apply needs of a Function subclass, computed once per class."""
    cdef readonly object function_cls
    cdef readonly object node_cls
    cdef readonly object forward_fn
    cdef readonly object backward_fn
    cdef readonly object jvp_fn
    cdef readonly object setup_context_fn      # None: forward(ctx, *args) style
    # Note [Shared meta]: the (shape, dtype) entry and the one-entry meta tuple made last, given
    # again to the next call that has the same (a chain of calls allocates no meta tuples)
    cdef tuple last_meta
    cdef tuple last_meta_1

    def __cinit__(self, function_cls, node_cls, forward_fn, backward_fn, jvp_fn=None,
                  setup_context_fn=None):
        if not (isinstance(node_cls, type) and issubclass(node_cls, PythonBackwardNode)):
            raise TypeError(f"FunctionInfo needs a PythonBackwardNode subclass, got {node_cls!r}")
        self.function_cls = function_cls
        self.node_cls = node_cls
        self.forward_fn = forward_fn
        self.backward_fn = backward_fn
        self.jvp_fn = jvp_fn
        self.setup_context_fn = setup_context_fn


def function_apply(function_cls, *args):
    """Function.apply: run forward(ctx, *args) without recording; attach its node to the outputs."""
    info = getattr(function_cls, "_lucid_info", None)
    if info is None or (<FunctionInfo>info).function_cls is not function_cls:
        info = function_cls._lucid_make_info()
    if (<FunctionInfo>info).forward_fn is None:
        raise NotImplementedError(f"Function {function_cls.__name__} does not implement "
                                  "forward(ctx, *args)")
    if lucid_batch_dispatching():                # Note [Batch dispatch]
        batched = batched_apply(function_cls, args)
        if batched is not NotImplemented:
            return batched
    return apply_function(<FunctionInfo>info, args)


cdef object batched_apply(object function_cls, tuple args):
    """Function.apply with a batched argument, by lucid._batching (lucid/_batching/functions.py);
    NotImplemented when no argument is batched."""
    if lucid_batch_dispatcher == NULL:
        return NotImplemented
    return (<object>lucid_batch_dispatcher)(function_cls, args, None)


cdef class FunctionApply:
    """Function.apply: run forward(ctx, *args) without recording; attach its node to the outputs.
    (One per Function subclass: a call has the class's FunctionInfo at hand, with no attribute
    lookup, no bound method and one argument tuple.)"""
    cdef readonly FunctionInfo info

    def __cinit__(self, FunctionInfo info):
        self.info = info

    def __get__(self, instance, owner):
        if owner is None:
            owner = type(instance)
        if owner is self.info.function_cls:
            return self
        # reached from another class (a subclass's super().apply): apply as that class
        return PyMethod_New(function_apply, owner)

    def __call__(self, *args):
        if self.info.forward_fn is None:
            raise NotImplementedError(f"Function {self.info.function_cls.__name__} does not "
                                      "implement forward(ctx, *args)")
        if lucid_batch_dispatching():            # Note [Batch dispatch]
            batched = batched_apply(self.info.function_cls, args)
            if batched is not NotImplemented:
                return batched
        return apply_function(self.info, args)

    @property
    def __self__(self):
        """The Function subclass (as for a classmethod bound to it)."""
        return self.info.function_cls

    @property
    def __name__(self):
        return "apply"

    @property
    def __signature__(self):
        """What inspect.signature gives: that of the classmethod this replaces, (*args)."""
        import inspect
        return inspect.signature(PyMethod_New(function_apply, self.info.function_cls))

    @property
    def __qualname__(self):
        return f"{self.info.function_cls.__qualname__}.apply"

    def __repr__(self):
        return f"<bound method {self.info.function_cls.__qualname__}.apply>"


cdef tuple NEEDS_NONE = ()
cdef tuple NEEDS_1 = ((False,), (True,))
cdef tuple NEEDS_2 = ((False, False), (True, False), (False, True), (True, True))


cdef tuple needs_input_grad_tuple(tuple args, bint grad_on):
    """(bool, ...) per argument: a tensor that requires grad while grad mode is on. Shared
    tuples for one or two arguments (they are immutable), so most calls allocate nothing."""
    cdef Py_ssize_t n = len(args), i
    cdef int mask = 0
    cdef tuple out
    for i in range(n):
        a = args[i]
        if grad_on and isinstance(a, Tensor) and (<Tensor>a).requires_grad_c():
            mask |= 1 << (i if i < 30 else 30)
    if n == 1:
        return <tuple>NEEDS_1[mask]
    if n == 2:
        return <tuple>NEEDS_2[mask]
    if n == 0:
        return NEEDS_NONE
    out = PyTuple_New(n)
    for i in range(n):
        a = args[i]
        flag = True if (grad_on and isinstance(a, Tensor) and (<Tensor>a).requires_grad_c()) \
            else False
        Py_INCREF(flag)
        PyTuple_SET_ITEM(out, i, flag)
    return out


cdef tuple tensor_meta(FunctionInfo info, Tensor t):
    """(shape, dtype) of t; the entry made last when it is the same (Note [Shared meta])."""
    cdef tuple last = info.last_meta
    if last is not None and <object>PyTuple_GET_ITEM(last, 1) is descr(t.data) \
            and shape_is(t.data, <tuple>PyTuple_GET_ITEM(last, 0)):
        return last
    last = (t.data.shape, descr(t.data))
    info.last_meta = last
    return last


cdef tuple one_meta(FunctionInfo info, object entry):
    """(entry,), the tuple made last when it holds the same entry (Note [Shared meta])."""
    cdef tuple last = info.last_meta_1
    if last is not None and <object>PyTuple_GET_ITEM(last, 0) is entry:
        return last
    last = (entry,)
    info.last_meta_1 = last
    return last


cdef PythonBackwardNode new_node(object node_cls):
    """A node of node_cls (a PythonBackwardNode subclass: FunctionInfo checks it), made by its
    tp_new directly: PythonBackwardNode.__new__(node_cls) looks __new__ up by name per call."""
    return <PythonBackwardNode>(<PyTypeObject*>node_cls).tp_new(node_cls, <PyObject*>NO_ARGS, NULL)


cdef tuple NO_ARGS = ()


cdef object input_entry(FunctionInfo info, Node node, object a, Py_ssize_t i):
    """Input i's (shape, dtype), and its edge; None for an argument that is not a tensor."""
    if not isinstance(a, Tensor):
        return None
    node.set_edge(i, <Tensor>a)
    return tensor_meta(info, <Tensor>a)


cdef object apply_function(FunctionInfo info, tuple args):
    cdef object function_cls = info.function_cls
    cdef FunctionCtx ctx = FunctionCtx.__new__(FunctionCtx)
    cdef Py_ssize_t n = len(args), i
    cdef tuple needs_grad = needs_input_grad_tuple(args, grad_enabled())
    cdef bint record_call = False
    for i in range(n):
        record_call = record_call or needs_grad[i] is True
    ctx.needs_input_grad = needs_grad
    cdef tuple tangents = dual_inputs(args) if fw_active() else None
    # Note [Forward mode]: tangents come from jvp, once per level (Note [Nested forward mode]),
    # and forward runs with forward mode off (Note [Rare modes]: no thread-local read unless some
    # thread has a dual level)
    cdef long fw_level = suspend_all_fw() if rare_modes else 0
    cdef bint previous = set_grad_enabled_c(False)
    try:
        if info.setup_context_fn is None:
            outputs = call_with_first(info.forward_fn, ctx, args)
        else:                                    # forward(*args) + setup_context(ctx, ...)
            outputs = info.forward_fn(*args)
            info.setup_context_fn(ctx, args, outputs)
    finally:
        set_grad_enabled_c(previous)
        if fw_level:
            resume_fw(fw_level)
    cdef bint is_tuple = isinstance(outputs, tuple)
    cdef Py_ssize_t n_out = len(<tuple>outputs) if is_tuple else 1
    cdef tuple non_diff = ctx._non_differentiable or ()
    cdef PythonBackwardNode node = None
    cdef tuple meta
    if record_call:
        node = new_node(info.node_cls)
        init_identity(node)
        gc_track(node)                 # Note [Function ownership]: its ctx may hold anything
        node.set_num_inputs(n)
        if n == 1:
            node.input_meta = one_meta(info, input_entry(info, node, args[0], 0))
        else:
            meta = PyTuple_New(n)
            for i in range(n):
                entry = input_entry(info, node, args[i], i)
                Py_INCREF(entry)
                PyTuple_SET_ITEM(meta, i, entry)
            node.input_meta = meta
        node.num_outputs = n_out
        node.ctx = ctx
        node.function = function_cls
        node.backward_fn = info.backward_fn
        ctx._node = <PyObject*>node
    if not is_tuple and ctx._dirty is None and tangents is None:
        return single_result(info, ctx, node, outputs, args, non_diff)
    cdef tuple outs = outputs if is_tuple else (outputs,)
    cdef tuple result = PyTuple_New(n_out)       # filled below, one entry per output
    meta = PyTuple_New(n_out) if node is not None else None
    for i in range(n_out):
        o = result_output(info, ctx, node, outs[i], i, args, non_diff)
        Py_INCREF(o)
        PyTuple_SET_ITEM(result, i, o)
        if meta is not None:
            entry = tensor_meta(info, <Tensor>o) if isinstance(o, Tensor) else None
            Py_INCREF(entry)
            PyTuple_SET_ITEM(meta, i, entry)
    if ctx._dirty is not None:
        check_dirty_marks(info, ctx._dirty, outs, args)
        ctx._dirty = None                        # it holds outputs: no cycle through the ctx
    ctx._non_differentiable = None
    if tangents is not None:
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            tangents = input_tangents(args)
            if tangents is not None:
                run_function_jvp(info, ctx, tangents, result, outs, non_diff)
        ctx._for_forward = None
    if node is not None:
        node.output_meta = meta
        convert_saved(ctx, node, result, outs)
    elif ctx._to_save is not None:
        ctx._saved = None
    return result if is_tuple else result[0]


cdef object single_result(FunctionInfo info, FunctionCtx ctx, PythonBackwardNode node,
                          object output, tuple args, tuple non_diff):
    """apply's result when forward returned one value, marked nothing dirty and no input has a
    tangent: what the general path gives, without its tuples."""
    out = result_output(info, ctx, node, output, 0, args, non_diff)
    ctx._non_differentiable = None
    if node is not None:
        node.output_meta = one_meta(info, tensor_meta(info, <Tensor>out)
                                    if isinstance(out, Tensor) else None)
        convert_saved(ctx, node, out, output)
    elif ctx._to_save is not None:
        ctx._saved = None
    return out


cdef object result_output(FunctionInfo info, FunctionCtx ctx, PythonBackwardNode node, object o,
                          Py_ssize_t i, tuple args, tuple non_diff):
    """Forward's output i as apply returns it; attached to node as output i when recorded."""
    if not isinstance(o, Tensor):
        return o
    cdef Tensor t = <Tensor>o
    if ctx._dirty is not None and is_in(t, ctx._dirty):
        check_dirty(info, t, node is not None and is_differentiable_dtype(descr(t.data)))
    elif is_in(t, args) or (t.requires_grad_c() and (node is None or t._grad_fn is not node)):
        # an input (or a tensor with a history of its own) returned: a new tensor over
        # its memory, so the input keeps its history and leaf status. One output returned
        # twice stays one object, output of its last place (as PyTorch)
        t = wrap_like_view(t.data, t)
    if node is not None and is_differentiable_dtype(descr(t.data)) and not is_in(o, non_diff):
        if ctx._dirty is not None and is_in(t, ctx._dirty):
            mark_graph_changed(t)
            attach_inplace_output(t, node)
            t._output_nr = i
        else:
            attach_output(t, node, i)
        gc_track(t)
    return t


cdef void check_dirty(FunctionInfo info, Tensor t, bint recorded) except *:
    """A tensor forward changed in place (mark_dirty): bump its version; refuse what can't
    carry the new history (a leaf that requires grad, a view in the graph)."""
    t.bump_version_by(info.function_cls.__name__)
    if grad_enabled():
        check_no_grad_view(t, recorded, f"Function {info.function_cls.__name__} (mark_dirty)")
    if not recorded:
        return
    if t._grad_fn is None and t._requires_grad:
        raise RuntimeError(f"Function {info.function_cls.__name__} changed a leaf tensor that "
                           "requires grad in place (mark_dirty); leaves can't be changed in place "
                           "while grad mode is on: clone() it first, or run under no_grad")
    if t._view_base is not None and t.requires_grad_c():
        raise RuntimeError(f"Function {info.function_cls.__name__} changed a view that takes "
                           "part in the graph in place (mark_dirty); clone() the view first")


cdef void check_dirty_marks(FunctionInfo info, tuple dirty, tuple outs, tuple args) except *:
    """What mark_dirty was given, as PyTorch checks it: a tensor not returned raises, a
    returned one that is not an input warns (UserWarning)."""
    for t in dirty:
        if not is_in(t, outs):
            raise RuntimeError(f"Function {info.function_cls.__name__} marked a tensor dirty "
                               "(mark_dirty) but did not return it: an input changed in place "
                               "must be returned by forward")
    for t in dirty:
        if not is_in(t, args):
            import warnings
            warnings.warn(f"Function {info.function_cls.__name__}: ctx.mark_dirty() received a "
                          "tensor that was not an input. Only input Tensors that have been "
                          "mutated should be passed to ctx.mark_dirty().", UserWarning)
            return


cdef tuple dual_inputs(tuple args):
    """() when an argument has a tangent at a visible level, else None."""
    for a in args:
        if isinstance(a, Tensor) and has_tangent(<Tensor>a):
            return ()
    return None


cdef tuple input_tangents(tuple args):
    """Each tensor argument's tangent (zeros for a float tensor without one, as PyTorch gives
    jvp; None for non-tensors); None when no argument has a tangent."""
    cdef list out = []
    cdef bint any_tangent = False
    cdef Tensor t
    for a in args:
        t = tangent_of(<Tensor>a) if isinstance(a, Tensor) else None
        any_tangent = any_tangent or t is not None
        out.append(t)
    if not any_tangent:
        return None
    for i in range(len(args)):
        a = args[i]
        if out[i] is None and isinstance(a, Tensor) and is_differentiable_dtype(descr((<Tensor>a).data)):
            out[i] = wrap(np.zeros((<Tensor>a).data.shape, dtype=(<Tensor>a).data.dtype))
    return tuple(out)


cdef void run_function_jvp(FunctionInfo info, FunctionCtx ctx, tuple tangents, tuple result,
                           tuple outs, tuple non_diff) except *:
    """jvp(ctx, *tangents) -> one tangent per output, checked and set on the outputs."""
    cdef str name = info.function_cls.__name__
    if info.jvp_fn is None:
        raise RuntimeError(f"Function {name} got an input with a forward-mode tangent (a dual "
                           "tensor) but does not implement jvp(ctx, *tangents): add a "
                           "@staticmethod jvp to use it under forward_ad.dual_level()")
    cdef long fw_level = suspend_fw()
    ctx._in_jvp = True
    try:
        got = info.jvp_fn(ctx, *tangents)
    except BaseException as e:
        site = current_site()           # the forward call: compiled code makes no frames
        e.add_note(f"lucid: raised in the jvp of Function {name}"
                   + ("" if site is None else f" (called at {site})"))
        raise
    finally:
        ctx._in_jvp = False
        resume_fw(fw_level)
    cdef tuple got_t = tuple(got) if isinstance(got, (tuple, list)) else (got,)
    if len(got_t) != len(result):
        raise RuntimeError(f"Function {name}.jvp returned {len(got_t)} tangents, expected "
                           f"{len(result)} (one per output, None for those without one)")
    cdef Py_ssize_t i
    cdef Tensor t
    for i in range(len(result)):
        tangent = got_t[i]
        o = result[i]
        if tangent is None:
            continue
        if not isinstance(o, Tensor):
            raise RuntimeError(f"Function {name}.jvp returned a tangent for output {i}, which "
                               "is not a tensor; expected None")
        if is_in(outs[i], non_diff) or not is_differentiable_dtype(descr((<Tensor>o).data)):
            continue                             # non-differentiable outputs get no tangent
        t = checked_tangent(<Tensor>o, tangent, f"Function {name}.jvp (output {i})")
        if (<Tensor>o)._view_base is None:       # Note [Tangent memory]: not an input's memory
            for src in tangents:
                t = own_tangent(t, src, None)
        set_tangent(<Tensor>o, t)


cdef void convert_saved(FunctionCtx ctx, Node node, object result, object outs) except *:
    """The tensors given to save_for_backward as SavedTensors: outputs without a cycle.
    result, outs: what apply and forward returned, as tuples, or the one value of each."""
    cdef tuple to_save = ctx._to_save
    if to_save is None:
        return
    cdef Py_ssize_t n = len(to_save), i
    if n == 1 and to_save[0] is not None:
        ctx._saved = saved_entry(<Tensor>to_save[0], node, result, outs)
    else:
        saved = PyTuple_New(n)
        for i in range(n):
            t = to_save[i]
            entry = None if t is None else saved_entry(<Tensor>t, node, result, outs)
            Py_INCREF(entry)
            PyTuple_SET_ITEM(saved, i, entry)
        ctx._saved = saved
    ctx._to_save = None


cdef SavedTensor saved_entry(Tensor t, Node node, object result, object outs):
    """t saved for node: as an output (Note [Saved outputs]) when forward returned it."""
    cdef Py_ssize_t k
    if not isinstance(outs, tuple):                  # forward returned one value
        return save_tensor(<Tensor>result, node, True) if is_own_output(t, outs, result, node) \
            else save_tensor(t, node, False)
    for k in range(len(<tuple>outs)):
        if is_own_output(t, outs[k], result[k], node):
            return save_tensor(<Tensor>result[k], node, True)
    return save_tensor(t, node, False)


cdef inline bint is_own_output(Tensor t, object output, object out, Node node):
    """Is t the output forward returned that apply gave back (out) as node's?"""
    return output is t and isinstance(out, Tensor) and (<Tensor>out)._grad_fn is node


# -- once_differentiable -------------------------------------------------------------------------

cdef class DelayedErrorBackward(Node):
    """A backward that was computed without a graph: differentiating it again raises."""
    cdef str message

    cdef tuple apply(self, tuple grads):
        raise RuntimeError(self.message)


def delayed_error(str message, tuple outputs, tuple inputs):
    """outputs re-made as results of a node that raises message if backward reaches it."""
    cdef DelayedErrorBackward node = DelayedErrorBackward.__new__(DelayedErrorBackward)
    cdef list ins = [x for x in inputs if isinstance(x, Tensor) and (<Tensor>x).requires_grad_c()]
    node.message = message
    init_identity(node)
    if creation_sites_on:
        note_caller_site(node, 1)        # made by lucid's wrapper: the site is its caller's
    node.set_num_inputs(len(ins))
    for i in range(len(ins)):
        node.set_edge(i, <Tensor>ins[i])
    node.num_outputs = len(outputs)
    cdef list out = []
    for i in range(len(outputs)):
        o = outputs[i]
        if isinstance(o, Tensor) and is_differentiable_dtype(descr((<Tensor>o).data)):
            t = wrap((<Tensor>o).data)
            if fw_active():              # an identity: the tangent the backward's ops gave
                for _fw_lv in fw_levels():      # Note [Nested forward mode]
                    set_tangent(t, tangent_of(<Tensor>o))
            attach_output(t, node, i)
            out.append(t)
        else:
            out.append(o)
    return tuple(out)
