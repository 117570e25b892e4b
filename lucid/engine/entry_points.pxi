# backward() and grad(): the public entry points of the engine.

def _in_plain_backward():
    """True inside a node run by backward() without inputs= (it accumulates into every leaf's
    .grad); False inside autograd.grad() or backward(inputs=...), and outside a traversal."""
    return lucid_plain_backward != 0


# Note [Gradient edges]: backward() and grad() take a GradientEdge (lucid.autograd.graph:
# a node and one of its output slots) wherever they take a tensor, as outputs or inputs. Only
# the entry knows: an edge is turned into the (node, slot) pair the engine works with anyway, so
# nothing per node changes. An edge names the history it was taken from: a tensor changed in
# place since still has its old edge. Its shape and dtype (for gradient checks) are those
# get_gradient_edge recorded, or a leaf accumulator's variable's; an edge made by hand has none.
cdef object gradient_edge_type = None     # lucid.autograd.graph.GradientEdge, set on its import


def _set_gradient_edge_type(cls):
    """Make cls (GradientEdge) accepted by backward() and grad() (Note [Gradient edges])."""
    global gradient_edge_type
    gradient_edge_type = cls


cdef inline bint is_edge(object x) noexcept:
    return gradient_edge_type is not None and type(x) is gradient_edge_type


cdef object checked_edge(object edge, str what, str op):
    """edge, when its node is a Node and its output_nr one of the node's outputs."""
    node, slot = edge
    if not isinstance(node, Node):
        raise TypeError(f"{op}: a GradientEdge in {what} must hold a graph node, not "
                        f"{type(node).__name__}")
    if type(slot) is not int or not 0 <= slot < (<Node>node).num_outputs:
        raise RuntimeError(f"{op}: a GradientEdge in {what} names output {slot!r} of "
                           f"{(<Node>node).name()}, which has {(<Node>node).num_outputs}")
    return edge


cdef tuple edge_meta(object edge):
    """(shape, dtype) of the gradient flowing into edge, or None when unknown."""
    meta = getattr(edge, "_meta", None)
    if meta is not None:
        return <tuple>meta
    node = edge[0]
    if type(node) is AccumulateGrad:
        v = (<AccumulateGrad>node).variable
        return ((<Tensor>v).data.shape, (<Tensor>v).data.dtype)
    return None


cdef tuple as_tensor_tuple(object xs, str what, str op):
    if isinstance(xs, Tensor):
        return (xs,)
    if is_edge(xs):
        return (checked_edge(xs, what, op),)
    if isinstance(xs, (tuple, list)):
        for x in xs:
            if not isinstance(x, Tensor):
                if is_edge(x):
                    checked_edge(x, what, op)
                    continue
                raise TypeError(f"{op}: {what} must be Tensors or GradientEdges, got "
                                f"{type(x).__name__}")
        return tuple(xs)
    raise TypeError(f"{op}: {what} must be a Tensor, a GradientEdge or a sequence of them, got "
                    f"{type(xs).__name__}")


cdef object edge_root_gradient(object edge, object given, Py_ssize_t k, str op):
    """The root gradient for output k, a GradientEdge: the given one (checked against the
    edge's shape and dtype when known) or ones for a one-element edge."""
    cdef tuple meta = edge_meta(edge)
    cdef Tensor g
    if given is None:
        if meta is None or int(np.prod(meta[0])) != 1:
            raise RuntimeError(
                f"{op}: grad can be implicitly created only for outputs with one element; "
                f"output {k} is a GradientEdge"
                f"{'' if meta is None else ' of shape ' + str(meta[0])}: pass gradient= (or "
                "grad_outputs=) a tensor for it")
        return wrap(np.ones(meta[0], dtype=meta[1]))
    g = operand(given, op)
    if meta is None:
        return g
    if g.data.shape != meta[0]:
        raise RuntimeError(f"{op}: gradient {k} has shape {g.data.shape} but output {k} (a "
                           f"GradientEdge) has shape {meta[0]}")
    return cast(g, <cnp.dtype>meta[1]) if g.data.dtype != meta[1] else g


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
        if not isinstance(outputs[k], Tensor):       # Note [Gradient edges]
            out.append(edge_root_gradient(outputs[k], given[k], k, op))
            continue
        t = <Tensor>outputs[k]
        if given[k] is None:
            if descr(t.data).kind == b'c':
                raise RuntimeError(f"{op}: grad can be implicitly created only for real scalar "
                                   f"outputs but got {dtype_name(t.data.dtype)}")
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
        if not isinstance(outputs[k], Tensor):       # a GradientEdge: its node and slot
            nodes.append(outputs[k][0])
            slots.append(outputs[k][1])
            continue
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
        if not isinstance(inputs[k], Tensor):        # a GradientEdge: its node and slot
            nodes.append(inputs[k][0])
            slots.append(inputs[k][1])
            continue
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
            if captured[k] is not None and isinstance(wanted[k], Tensor):   # an edge keeps none
                t = <Tensor>wanted[k]
                g = cast(<Tensor>captured[k], descr(t.data))
                lock = leaf_lock(t)
                acquire_leaf_lock(lock)
                try:
                    t._grad = wrap(np.array(g.data, copy=True)) if t._grad is None else \
                        add(t._grad, g)
                finally:
                    PyThread_release_lock(lock)


cdef object batched_grad = None      # lucid/autograd/_batched_grad.py's batched_grad


def _set_batched_grad(fn):
    """Install the Python entry of grad's batched calls (once, at lucid.autograd's import)."""
    global batched_grad
    batched_grad = fn


cdef bint batched_cotangents(object grad_outputs):
    """Are some of grad_outputs BatchedTensors of this thread's active vmap?"""
    if batched_operand(grad_outputs):
        return True
    if lucid_batch_levels_any != 0 and isinstance(grad_outputs, (tuple, list)):
        for g in grad_outputs:
            if batched_operand(g):
                return True
    return False


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of outputs with respect to inputs, as a tuple; writes no .grad;
    is_grads_batched: every grad_output has a leading batch dim, each result one too."""
    if is_grads_batched is not False or batched_cotangents(grad_outputs):
        return batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                            allow_unused, is_grads_batched, materialize_grads)
    return engine_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                       materialize_grads)


def _engine_grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
                 allow_unused=None, materialize_grads=False):
    """grad without a batch: one engine pass (the batched calls' per-element step)."""
    return engine_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                       materialize_grads)


cdef object engine_grad(object outputs, object inputs, object grad_outputs, object retain_graph,
                        object create_graph, object allow_unused, object materialize_grads):
    """grad's one engine pass."""
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
        if not isinstance(wanted[k], Tensor):
            result.append(edge_input_gradient(wanted[k], captured[k], k, allow_unused,
                                              materialize_grads))
            continue
        t = <Tensor>wanted[k]
        g = captured[k]
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"grad: input {k} (shape {t.data.shape}) was not used to compute "
                                   "the outputs; pass allow_unused=True to get None for it")
            if materialize_grads:     # under create_graph, zeros that can be differentiated
                g = wrap(np.zeros(t.data.shape, dtype=t.data.dtype))
                if create_graph and is_differentiable_dtype(descr(t.data)):
                    (<Tensor>g)._requires_grad = True
        elif (<Tensor>g).data.dtype != t.data.dtype:
            g = cast(<Tensor>g, descr(t.data))
        result.append(g)
    return tuple(result)


cdef object edge_input_gradient(object edge, object g, Py_ssize_t k, bint allow_unused,
                                bint materialize_grads):
    """grad()'s result for input k, a GradientEdge: its captured gradient g, in the edge's dtype
    when known (Note [Gradient edges])."""
    cdef tuple meta
    if g is None:
        if not allow_unused:
            raise RuntimeError(f"grad: input {k} (a GradientEdge of {edge[0].name()}) was not "
                               "used to compute the outputs; pass allow_unused=True to get None "
                               "for it")
        if materialize_grads:
            raise RuntimeError(f"grad: materialize_grads cannot be used when the given input is "
                               f"a GradientEdge (input {k} got no gradient)")
        return None
    meta = edge_meta(edge)
    if meta is not None and (<Tensor>g).data.dtype != meta[1]:
        return cast(<Tensor>g, <cnp.dtype>meta[1])
    return g


# -- Tensor methods: t.backward() (installed on Tensor below) ----------

def _tensor_backward(Tensor self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(self)/d(leaf) into every leaf's .grad (see lucid.autograd.backward)."""
    backward((self,), None if gradient is None else (gradient,), retain_graph,
             create_graph, inputs)


install_methods(Tensor, {
    "backward": _tensor_backward,
})
