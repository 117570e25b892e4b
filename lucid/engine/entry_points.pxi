# backward() and grad(): the public entry points of the engine.

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
            if materialize_grads:     # under create_graph, zeros that can be differentiated
                g = wrap(np.zeros(t.data.shape, dtype=t.data.dtype))
                if create_graph and is_float_dtype(descr(t.data)):
                    (<Tensor>g)._requires_grad = True
        elif (<Tensor>g).data.dtype != t.data.dtype:
            g = cast(<Tensor>g, descr(t.data))
        result.append(g)
    return tuple(result)


# -- Tensor methods: t.backward() (installed on Tensor below) ----------

def _tensor_backward(Tensor self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(self)/d(leaf) into every leaf's .grad (see lucid.autograd.backward)."""
    backward((self,), None if gradient is None else (gradient,), retain_graph,
             create_graph, inputs)


install_methods(Tensor, {
    "backward": _tensor_backward,
})
