"""gradcheck's fast mode (v^T J u for random unit u, v) and its undefined-output-grad check."""
import sys

import numpy as np

from .. import _core
from .._grad_mode import no_grad
from .function import Function


def _helpers():
    """gradcheck.py's shared helpers (imported late: gradcheck.py imports this module)."""
    return sys.modules[__package__ + ".gradcheck"]


def _unit(rng, n):
    """A random vector of n entries in [0, 1), scaled to norm 1 (PyTorch's fast gradcheck)."""
    v = rng.random(n)
    norm = np.linalg.norm(v)
    return v / norm if norm > 0 else v


def _numerical_projections(fn, inputs, wanted, us, vs, eps):
    """N[out][inp] = v_out . (f(x + eps u) - f(x - eps u)) / (2 eps), one pair of runs per input."""
    g = _helpers()
    result = [[0.0] * len(wanted) for _ in vs]
    with no_grad():
        for col, i in enumerate(wanted):
            g._writable_entries(inputs[i], i)               # refuses expanded inputs
            flat = inputs[i].detach().numpy()
            original = flat.copy()
            step = eps * us[col].reshape(flat.shape)
            flat += step
            plus = [o.detach().numpy().astype(np.float64).reshape(-1).copy()
                    for o in g._tensor_outputs(fn, inputs)]
            flat[...] = original - step
            minus = [o.detach().numpy().astype(np.float64).reshape(-1).copy()
                     for o in g._tensor_outputs(fn, inputs)]
            flat[...] = original
            for r, (p, m) in enumerate(zip(plus, minus)):
                result[r][col] = float(vs[r] @ ((p - m) / (2 * eps)))
    return result


def _analytic_projections(fn, inputs, wanted, us, vs, dtypes):
    """A[out][inp] = (v_out^T J) . u_inp from one backward per output (or a dtype message)."""
    g = _helpers()
    outputs = g._tensor_outputs(fn, inputs)
    result = [[0.0] * len(wanted) for _ in outputs]
    for r, o in enumerate(outputs):
        if not o.requires_grad:
            continue
        seed = _core.from_numpy(vs[r].astype(o.dtype).reshape(o.shape))
        grads = _core.grad((o,), tuple(inputs[i] for i in wanted), (seed,),
                           retain_graph=True, allow_unused=True)
        for col, grad in enumerate(grads):
            if grad is None:
                continue
            if dtypes and grad.dtype != inputs[wanted[col]].dtype:
                return (f"Gradient has dtype mismatch: the gradient of input {wanted[col]} is "
                        f"{grad.dtype}, the input is {inputs[wanted[col]].dtype}")
            result[r][col] = float(grad.detach().numpy().reshape(-1) @ us[col])
    return result


def _forward_projections(fn, inputs, wanted, us, vs):
    """F[out][inp] = v_out . (J u_inp) from one forward-mode pass per input."""
    from . import forward_ad as fwAD
    g = _helpers()
    result = [[0.0] * len(wanted) for _ in vs]
    for col, i in enumerate(wanted):
        x = inputs[i]
        with fwAD.dual_level():
            duals = list(inputs)
            duals[i] = fwAD.make_dual(x, _core.from_numpy(us[col].astype(x.dtype)
                                                           .reshape(x.shape)))
            for r, o in enumerate(g._tensor_outputs(fn, duals)):
                tangent = fwAD.unpack_dual(o).tangent
                if tangent is not None:
                    result[r][col] = float(vs[r] @ tangent.detach().numpy().reshape(-1))
    return result


def _compare(analytic, numerical, wanted, us, vs, atol, rtol, what):
    """|a - n| <= atol * sum(u) * sum(v) + rtol * |n| for each (output, input) pair: the
    elementwise tolerance of the full check, carried through the projections."""
    for r, (arow, nrow) in enumerate(zip(analytic, numerical)):
        for col, (a, n) in enumerate(zip(arow, nrow)):
            tol = atol * float(us[col].sum()) * float(vs[r].sum()) + rtol * abs(n)
            if not abs(a - n) <= tol:
                return (f"{what} mismatch for output {r} with respect to input {wanted[col]} "
                        f"(fast mode: v^T J u for random unit u, v): analytic {a!r}, numerical "
                        f"{n!r} (atol={atol}, rtol={rtol}); run with fast_mode=False for the "
                        "full Jacobians")
    return None


def fast_check(fn, inputs, eps, atol, rtol, check_forward_ad, check_backward_ad, options):
    """The first failure of the projected checks (None when all pass)."""
    g = _helpers()
    wanted = g._differentiable(inputs)
    with no_grad():
        outputs = g._tensor_outputs(fn, inputs)
    rng = np.random.default_rng(0)
    us = [_unit(rng, inputs[i].numel()) for i in wanted]
    vs = [_unit(rng, o.numel()) for o in outputs]
    numerical = _numerical_projections(fn, inputs, wanted, us, vs, eps)
    if check_backward_ad:
        analytic = _analytic_projections(fn, inputs, wanted, us, vs, options.grad_dtypes)
        if isinstance(analytic, str):
            return analytic
        message = _compare(analytic, numerical, wanted, us, vs, atol, rtol, "Jacobian")
        if message is None:
            again = _analytic_projections(fn, inputs, wanted, us, vs, False)
            message = g._reentrant([[np.array([a]) for a in row] for row in analytic],
                                   [[np.array([a]) for a in row] for row in again],
                                   options.nondet_tol)
        if message is not None:
            return message
    if check_forward_ad:
        forward = _forward_projections(fn, inputs, wanted, us, vs)
        return _compare(forward, numerical, wanted, us, vs, atol, rtol, "forward-mode Jacobian")
    return None


class _UndefinedGrad(Function):
    """Identity whose backward passes on no gradient: what is upstream gets an undefined one."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return None


def _nonzero_at(grads):
    """The position of the first gradient that is neither None nor all zero, or None."""
    for k, grad in enumerate(grads):
        if grad is not None and np.any(grad.detach().numpy() != 0):
            return k
    return None


def undefined_grad_check(fn, inputs):
    """Backward with one output's gradient undefined at a time (the others zero), then each
    Function's backward with every output's undefined, must run and give None or zeros
    (PyTorch's check_undefined_grad)."""
    g = _helpers()
    wanted = g._differentiable(inputs)
    count = len([o for o in g._tensor_outputs(fn, inputs) if o.requires_grad])
    for undefined in (range(count) if count > 1 else ()):
        outs = [o for o in g._tensor_outputs(fn, inputs) if o.requires_grad]
        outs = [_UndefinedGrad.apply(o) if k == undefined else o for k, o in enumerate(outs)]
        seeds = tuple(_core.from_numpy(np.zeros(o.shape, dtype=o.dtype)) for o in outs)
        try:
            grads = _core.grad(tuple(outs), tuple(inputs[i] for i in wanted), seeds,
                               allow_unused=True)
        except Exception as e:
            return ("Expected backward function to handle undefined output grads (a None "
                    f"gradient for an output); backward raised {type(e).__name__}: {e}")
        col = _nonzero_at(grads)
        if col is not None:
            return ("Expected all input grads to be undefined or zero when all output "
                    f"grads are undefined or zero (input {wanted[col]} got a nonzero gradient)")
    return _all_undefined_check(g._tensor_outputs(fn, inputs))


def _all_undefined_check(outputs):
    """Every custom Function node that makes an output, run with no output gradient at all (the
    engine never runs such a node; PyTorch's does): it must run and give None or zeros."""
    nodes = []
    for o in outputs:
        node = o.grad_fn
        if isinstance(node, _core.PythonBackwardNode) and all(node is not n for n in nodes):
            nodes.append(node)
    for node in nodes:
        try:
            grads = node._backward_without_gradients()
        except Exception as e:
            return ("Expected backward function to handle undefined output grads (no gradient "
                    f"for any output of {node.name()}); backward raised {type(e).__name__}: {e}")
        k = _nonzero_at(grads)
        if k is not None:
            return ("Expected all input grads to be undefined or zero when all output "
                    f"grads are undefined ({node.name()} gave input {k} a nonzero gradient)")
    return None


def zero_grad_output_check(fn, inputs):
    """Backward with zero output gradients must give None or zeros: a backward that ignores
    its grad_output fails (PyTorch's "backward not multiplied by grad_output")."""
    g = _helpers()
    wanted = g._differentiable(inputs)
    outs = [o for o in g._tensor_outputs(fn, inputs) if o.requires_grad]
    if not outs:
        return None
    seeds = tuple(_core.from_numpy(np.zeros(o.shape, dtype=o.dtype)) for o in outs)
    grads = _core.grad(tuple(outs), tuple(inputs[i] for i in wanted), seeds, allow_unused=True)
    col = _nonzero_at(grads)
    if col is not None:
        return (f"backward not multiplied by grad_output: zero output gradients gave input "
                f"{wanted[col]} a nonzero gradient")
    return None
