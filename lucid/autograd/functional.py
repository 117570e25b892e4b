"""Functional higher-order derivatives, with the signatures and return structures of
torch.autograd.functional.

    vjp(func, inputs, v)      -> (func(inputs), v^T J)          one backward pass
    jvp(func, inputs, v)      -> (func(inputs), J v)            forward mode (one dual level)
    jacobian(func, inputs)    -> J, blocks out.shape + in.shape  rows by reverse mode, or columns
                                                                 with strategy="forward-mode"
    hessian(func, inputs)     -> H, blocks in_i.shape + in_j.shape
    hvp(func, inputs, v)      -> (func(inputs), H v)            forward-over-reverse when it can
    vhp(func, inputs, v)      -> (func(inputs), v^T H)          reverse-over-reverse

`inputs` is a Tensor or a tuple of Tensors, and so is what `func` returns; results follow those
structures (a tuple of tuples for several outputs and inputs). Results have no history unless
`create_graph=True`, which makes them differentiable with respect to the inputs that require grad
(and to `v`). An input the outputs do not depend on gets zeros, or a RuntimeError with
`strict=True`. `vectorize=True` computes a Jacobian by one vjp (or, forward-mode, one jvp)
vmapped over the identity's rows (columns), lucid.func.jacrev's (jacfwd's) way, instead of one
pass per element; `strategy="forward-mode"` works with either, and with `create_graph=True`.
"""
from .. import _core
from .._grad_mode import enable_grad
from . import forward_ad
from ._aliases import differentiable_alias, detached, graph_nodes, tangent_of
from ._jacobian import assemble, forward_columns, reverse_rows
from ._structures import (
    as_tensor_tuple, check_callable, check_float, checked_vectors, default_vector,
    function_outputs, refuse_integer_tangents, restore, restore_nested, zeros_like,
)

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


def __dir__():
    """dir(lucid.autograd.functional) lists the public names (the helpers stay importable)."""
    return list(__all__)


_STRATEGIES = ("reverse-mode", "forward-mode")


# -- checks and messages shared by the transforms ----------------------------------------------

def _inputs(func, inputs, fn_name):
    """The transform's checked arguments: func callable, inputs float tensors."""
    check_callable(func, "func", fn_name)
    was_tuple, inputs = as_tensor_tuple(inputs, "inputs", fn_name)
    check_float(inputs, "input", fn_name)
    return was_tuple, inputs


def _vectors(v, reference, ref_what, fn_name):
    if v is None:
        return default_vector(reference, ref_what, fn_name)
    return checked_vectors(v, reference, ref_what, fn_name)


def _check_outputs_differentiable(outputs, strict, fn_name):
    if not strict:
        return
    for i, out in enumerate(outputs):
        if not out.requires_grad:
            raise RuntimeError(f"{fn_name}: output {i} of the user-provided function (shape "
                               f"{tuple(out.shape)}) does not require gradients. The outputs must "
                               "be computed in a differentiable manner from the input when "
                               "running in strict mode.")


def _independent(fn_name, input_index, input_tensor, output_index=None):
    which = "the output" if output_index is None else f"output {output_index}"
    return RuntimeError(f"{fn_name}: {which} of the user-provided function is independent of "
                        f"input {input_index} (shape {tuple(input_tensor.shape)}). This is not "
                        "allowed in strict mode.")


def _jacobian_constant(fn_name, input_index, input_tensor):
    return RuntimeError(f"{fn_name}: the jacobian of the user-provided function is independent "
                        f"of input {input_index} (shape {tuple(input_tensor.shape)}). This is not "
                        "allowed in strict mode when create_graph=True.")


def _hessian_constant(fn_name, input_index, input_tensor):
    return RuntimeError(f"{fn_name}: the hessian of the user-provided function with respect to "
                        f"input {input_index} (shape {tuple(input_tensor.shape)}) is independent "
                        "of the input. This is not allowed in strict mode. You should ensure "
                        "that your function is thrice differentiable and that the hessian "
                        "depends on the inputs.")


def _check_strategy(strategy, arg_name, fn_name):
    if strategy not in _STRATEGIES:
        raise ValueError(f'{fn_name}: expected {arg_name} to be either "forward-mode" or '
                         f'"reverse-mode", got {strategy!r}. Hint: if your function has more '
                         'outputs than inputs, "forward-mode" tends to be faster; otherwise '
                         'prefer "reverse-mode".')


def _finish(tensors, create_graph):
    """Without create_graph nothing returned keeps history."""
    return tuple(tensors) if create_graph else tuple(detached(t) for t in tensors)


def _grads(outputs, inputs, grad_outputs, create_graph):
    """autograd.grad over the outputs that require grad (None for every input when none does)."""
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return _core.grad([o for o, _ in pairs], inputs, grad_outputs=[g for _, g in pairs],
                      retain_graph=True, create_graph=create_graph, allow_unused=True)


def _scalar_output(value, fn_name):
    was_tuple, outputs = function_outputs(value, fn_name)
    if was_tuple:
        raise RuntimeError(f"{fn_name}: the function given to {fn_name} should return a single "
                           f"Tensor, but it returned a tuple of {len(outputs)}")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"{fn_name}: the Tensor returned by the function given to {fn_name} "
                           f"should contain a single element, but it has shape "
                           f"{tuple(outputs[0].shape)}")
    return outputs[0]


# -- vjp and jvp ---------------------------------------------------------------------------------

def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): v has the outputs' structure, the product the inputs'."""
    inputs_tuple, inputs = _inputs(func, inputs, "vjp")
    with enable_grad():
        aliases = tuple(differentiable_alias(x, connect=create_graph) for x in inputs)
        outputs_tuple, outputs = function_outputs(func(*aliases), "vjp")
        _check_outputs_differentiable(outputs, strict, "vjp")
        v = _vectors(v, outputs, "output of the user-provided function", "vjp")
        grads = _grads(outputs, aliases, v, create_graph)
    result = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise _independent("vjp", i, inputs[i])
            g = zeros_like(inputs[i])
        elif strict and create_graph and not g.requires_grad:
            raise _jacobian_constant("vjp", i, inputs[i])
        result.append(g)
    return (restore(_finish(outputs, create_graph), outputs_tuple),
            restore(_finish(result, create_graph), inputs_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v) by forward mode: v has the inputs' structure, the product the
    outputs'. strict=True: RuntimeError when an output, or (create_graph) the product, is
    independent of an input."""
    inputs_tuple, inputs = _inputs(func, inputs, "jvp")
    if v is not None:
        refuse_integer_tangents(v, "jvp")
    v = _vectors(v, inputs, "input to the user-provided function", "jvp")
    with enable_grad(), forward_ad.dual_level():
        prepared = [_jvp_input(x, create_graph, strict) for x in inputs]
        duals = tuple(forward_ad.make_dual(x, vi) for x, vi in zip(prepared, v))
        outputs_tuple, outputs = function_outputs(func(*duals), "jvp")
        unpacked = [forward_ad.unpack_dual(out) for out in outputs]
    primals, result = [], []
    for i, (primal, tangent) in enumerate(unpacked):
        if tangent is None:
            if strict:
                raise RuntimeError(f"jvp: output {i} of the user-provided function (shape "
                                   f"{tuple(primal.shape)}) is independent of the inputs. This "
                                   "is not allowed in strict mode.")
            tangent = zeros_like(primal)
        primals.append(primal)
        result.append(tangent)
    if strict:
        _check_jvp_strict(inputs, prepared, primals, result, create_graph)
    return (restore(_finish(primals, create_graph), outputs_tuple),
            restore(_finish(result, create_graph), outputs_tuple))


def _check_jvp_strict(inputs, prepared, primals, products, create_graph):
    """strict=True, in PyTorch's order: every input reaches some output; with create_graph,
    every product depends on the inputs (a function linear in them gives constants)."""
    reached = _reached(primals, prepared)
    for i, x in enumerate(inputs):
        if not reached[i]:
            raise _independent("jvp", i, x)
    for i, product in enumerate(products):
        if create_graph and not product.requires_grad:
            raise RuntimeError(f"jvp: the jacobian-vector product of output {i} (shape "
                               f"{tuple(product.shape)}) does not depend on the inputs. This is "
                               "not allowed in strict mode when create_graph=True.")


def _jvp_input(x, create_graph, strict):
    """What jvp gives func for input x: with create_graph, an alias connected to x's graph
    when x requires grad; with strict, one that requires grad in any case, so the graph shows
    what depends on it (Note [Transform aliases]); else x detached (keeping its tangents at
    enclosing dual levels, so a jvp nests in forward mode)."""
    if strict or (create_graph and x.requires_grad):
        return differentiable_alias(x, connect=create_graph)
    return detached(x)


def _reached(outputs, targets):
    """For each target: does the backward graph of outputs reach it (without running it)?"""
    nodes = {}
    leaves = {}
    for k, t in enumerate(targets):
        if t.grad_fn is not None:
            nodes.setdefault(id(t.grad_fn), []).append(k)
        else:
            leaves[id(t)] = k
    reached = [False] * len(targets)
    pending_leaves = [o for o in outputs if o.grad_fn is None]
    for node in graph_nodes(outputs):
        for k in nodes.get(id(node), ()):
            reached[k] = True
        if isinstance(node, _core.AccumulateGrad):
            pending_leaves.append(node.variable)
    for leaf in pending_leaves:
        k = leaves.get(id(leaf))
        if k is not None:
            reached[k] = True
    return reached


# -- Jacobians and Hessians ------------------------------------------------------------------

def _reverse_blocks(func, inputs, create_graph, strict, fn_name):
    """(outputs_tuple, blocks[i][j]) by one backward pass per output element."""
    with enable_grad():
        aliases = tuple(differentiable_alias(x, connect=create_graph) for x in inputs)
        outputs_tuple, outputs = function_outputs(func(*aliases), fn_name)
        _check_outputs_differentiable(outputs, strict, fn_name)
        rows = reverse_rows(outputs, aliases, create_graph)
    return outputs_tuple, _assembled(outputs, inputs, lambda i, j: [r[j] for r in rows[i]],
                                     False, strict, fn_name)


def _forward_blocks(func, inputs, create_graph, strict, fn_name):
    """(outputs_tuple, blocks[i][j]) by one forward-mode pass per input element."""
    structure = []

    def call(args):
        was_tuple, outs = function_outputs(func(*args), fn_name)
        structure.append(was_tuple)
        return outs, None

    with enable_grad():
        prepared = [differentiable_alias(x) if create_graph and x.requires_grad else detached(x)
                    for x in inputs]
        outputs, _, cols = forward_columns(call, prepared)
    return structure[0], _assembled(outputs, inputs, lambda i, j: [c[i] for c in cols[j]],
                                    True, strict, fn_name)


def _assembled(outputs, inputs, pieces_of, by_columns, strict, fn_name):
    """blocks[i][j], d outputs[i] / d inputs[j] of shape out.shape + x.shape, from the pieces
    pieces_of(i, j): rows over x's elements (reverse mode) or columns over out's (forward)."""
    blocks = []
    for i, out in enumerate(outputs):
        row = []
        for j, x in enumerate(inputs):
            pieces = pieces_of(i, j)
            if strict and any(p is None for p in pieces):
                raise _independent(fn_name, j, x, output_index=i)
            row.append(assemble(pieces, out if by_columns else x, tuple(out.shape) + tuple(x.shape),
                                out.ndim if by_columns else 0))
        blocks.append(row)
    return blocks


def _vectorized_blocks(func, inputs, create_graph, strategy, fn_name):
    """(outputs_tuple, blocks[i][j]) by lucid.func.jacrev (one vjp vmapped over the rows of the
    identity) or jacfwd (one jvp vmapped over its columns)."""
    from .. import func as transforms
    structure = []

    def checked(*xs):
        was_tuple, outputs = function_outputs(func(*xs), fn_name)
        structure.append(was_tuple)
        return outputs
    jacobian_of = transforms.jacfwd if strategy == "forward-mode" else transforms.jacrev
    with enable_grad():
        prepared = [x if create_graph else detached(x) for x in inputs]   # tangents kept
        rows = jacobian_of(checked, argnums=tuple(range(len(inputs))))(*prepared)
    return structure[0], [list(row) for row in rows]


def _blocks(func, inputs, create_graph, strict, strategy, fn_name, vectorize=False):
    if vectorize:
        if strict:
            raise RuntimeError(f"lucid.autograd.functional.{fn_name}: `strict=True` and "
                               "`vectorized=True` are not supported together. Please either set "
                               "`strict=False` or `vectorize=False`.")
        outputs_tuple, blocks = _vectorized_blocks(func, inputs, create_graph, strategy, fn_name)
    else:
        build = _forward_blocks if strategy == "forward-mode" else _reverse_blocks
        outputs_tuple, blocks = build(func, inputs, create_graph, strict, fn_name)
    return outputs_tuple, [list(_finish(row, create_graph)) for row in blocks]


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """J[i][j] = d output_i / d input_j, of shape output_i.shape + input_j.shape; a Tensor for
    one input and one output, a tuple over the one that is a tuple, a tuple of tuples for
    both."""
    _check_strategy(strategy, "strategy", "jacobian")
    inputs_tuple, inputs = _inputs(func, inputs, "jacobian")
    outputs_tuple, blocks = _blocks(func, inputs, create_graph, strict, strategy, "jacobian",
                                    bool(vectorize))
    return restore_nested(blocks, outputs_tuple, inputs_tuple)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """H[i][j] = d^2 func / d input_i d input_j of a function with one output element, of shape
    input_i.shape + input_j.shape: the Jacobian (outer_jacobian_strategy) of its gradient."""
    _check_strategy(outer_jacobian_strategy, "outer_jacobian_strategy", "hessian")
    inputs_tuple, inputs = _inputs(func, inputs, "hessian")

    def gradient(*args):
        with enable_grad():
            leaves = tuple(differentiable_alias(a) for a in args)
            out = _scalar_output(func(*leaves), "hessian")
            _check_outputs_differentiable((out,), strict, "hessian")
            grads = _grads((out,), leaves, (None,), True)
        result = []
        for i, g in enumerate(grads):
            if g is None:
                if strict:
                    raise _independent("hessian", i, args[i])
                g = zeros_like(args[i])
            elif strict and not g.requires_grad:
                raise _hessian_constant("hessian", i, args[i])
            result.append(g)
        return tuple(result)

    if vectorize:                                # (strict with it raises in _blocks)
        from .. import func as transforms
        gradient = transforms.grad(lambda *xs: _scalar_output(func(*xs), "hessian"),
                                   argnums=tuple(range(len(inputs))))
    _, blocks = _blocks(gradient, inputs, create_graph, strict, outer_jacobian_strategy,
                        "hessian", bool(vectorize))
    return restore_nested(blocks, inputs_tuple, inputs_tuple)


# -- Hessian-vector products -----------------------------------------------------------------

def _hvp_forward_over_reverse(func, inputs, v, create_graph, strict):
    """(value, H v) as the tangent (along v) of the gradient; None when some gradient carries no
    tangent (H v may be zero, or an op did not propagate one), so the caller recomputes."""
    with enable_grad(), forward_ad.dual_level():
        leaves = [differentiable_alias(x, connect=create_graph) for x in inputs]
        duals = tuple(forward_ad.make_dual(x, vi) for x, vi in zip(leaves, v))
        out = _scalar_output(func(*duals), "hvp")
        _check_outputs_differentiable((out,), strict, "hvp")
        grads = _grads((out,), duals, (None,), create_graph)
        value = forward_ad.unpack_dual(out).primal
        result = []
        for i, g in enumerate(grads):
            if g is None:
                if strict:
                    raise _independent("hvp", i, inputs[i])
                result.append(zeros_like(inputs[i]))
                continue
            tangent = tangent_of(g)
            if tangent is None:
                return None
            result.append(tangent)
    return value, result


def _vhp_reverse_over_reverse(func, inputs, v, create_graph, strict, fn_name):
    """(value, v^T H): the gradient of <grad func, v>."""
    with enable_grad():
        leaves = tuple(differentiable_alias(x, connect=create_graph) for x in inputs)
        out = _scalar_output(func(*leaves), fn_name)
        _check_outputs_differentiable((out,), strict, fn_name)
        grads = _grads((out,), leaves, (None,), True)
        for i, g in enumerate(grads):
            if strict and g is None:
                raise _independent(fn_name, i, inputs[i])
            if strict and not g.requires_grad:
                raise _hessian_constant(fn_name, i, inputs[i])
        used = [(g, vi) for g, vi in zip(grads, v) if g is not None]
        second = _grads([g for g, _ in used], leaves, [vi for _, vi in used], create_graph)
    result = []
    for i, h in enumerate(second):
        if h is None:
            if strict:
                raise _hessian_constant(fn_name, i, inputs[i])
            h = zeros_like(inputs[i])
        result.append(h)
    return out, result


def _second_order(fn_name, func, inputs, v, create_graph, strict, forward):
    inputs_tuple, inputs = _inputs(func, inputs, fn_name)
    v = _vectors(v, inputs, "input to the user-provided function", fn_name)
    found = None
    if forward and _core._current_dual_level() is None:
        try:
            found = _hvp_forward_over_reverse(func, inputs, v, create_graph, strict)
        except RuntimeError as e:
            if "does not implement jvp" not in str(e):
                raise
    if found is None:
        found = _vhp_reverse_over_reverse(func, inputs, v, create_graph, strict, fn_name)
    value, result = found
    return (_finish((value,), create_graph)[0],
            restore(_finish(result, create_graph), inputs_tuple))


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a function with one output element, by reverse-over-reverse."""
    return _second_order("vhp", func, inputs, v, create_graph, strict, forward=False)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a function with one output element: the forward-mode tangent of
    its gradient (forward-over-reverse); reverse-over-reverse inside an active dual level, for
    a custom Function without jvp, or when no tangent reached the gradient."""
    return _second_order("hvp", func, inputs, v, create_graph, strict, forward=True)
