"""gradcheck: compare analytic Jacobians with central finite differences."""
import numpy as np

from .. import _core
from .._grad_mode import enable_grad, no_grad
from ._structures import check_callable


class GradcheckError(RuntimeError):
    """An analytic gradient disagrees with the numerical one."""


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    return tuple(x) if isinstance(x, list) else (x,)


def _tensor_outputs(fn, inputs, name="gradcheck"):
    outputs = _as_tuple(fn(*inputs))
    tensors = [o for o in outputs if isinstance(o, _core.Tensor)]
    if not tensors:
        got = ", ".join(type(o).__name__ for o in outputs) or "an empty tuple"
        raise ValueError(f"{name}: fn returned no tensor ({got}), so there is nothing to "
                         "check; fn must return a Tensor or a tuple holding tensors")
    return tensors


def _differentiable(inputs):
    return [i for i, x in enumerate(inputs)
            if isinstance(x, _core.Tensor) and x.requires_grad]


def numerical_jacobians(fn, inputs, eps):
    """J[out][inp] of shape (out.numel, inp.numel) by central differences."""
    wanted = _differentiable(inputs)
    with no_grad():
        outputs = _tensor_outputs(fn, inputs)
        jac = [[np.zeros((o.numel(), inputs[i].numel())) for i in wanted] for o in outputs]
        for col, i in enumerate(wanted):
            flat = inputs[i].detach().numpy().reshape(-1)
            if flat.size and not np.shares_memory(flat, inputs[i].detach().numpy()):
                raise ValueError(f"gradcheck: input {i} is not contiguous; pass .clone()")
            for k in range(flat.size):
                original = flat[k]
                flat[k] = original + eps
                plus = [o.detach().numpy().astype(np.float64).reshape(-1).copy()
                        for o in _tensor_outputs(fn, inputs)]
                flat[k] = original - eps
                minus = [o.detach().numpy().astype(np.float64).reshape(-1).copy()
                         for o in _tensor_outputs(fn, inputs)]
                flat[k] = original
                for r, (p, m) in enumerate(zip(plus, minus)):
                    jac[r][col][:, k] = (p - m) / (2 * eps)
    return outputs, wanted, jac


def analytic_jacobians(fn, inputs, wanted, create_graph=False):
    """J[out][inp] from lucid's backward, one row per output entry."""
    outputs = _tensor_outputs(fn, inputs)
    jac = []
    for o in outputs:
        rows = [np.zeros((o.numel(), inputs[i].numel())) for i in wanted]
        if o.requires_grad:
            for r in range(o.numel()):
                seed = np.zeros(o.numel(), dtype=o.dtype)
                seed[r] = 1
                grads = _core.grad((o,), tuple(inputs[i] for i in wanted),
                                   (_core.from_numpy(seed.reshape(o.shape)),),
                                   retain_graph=True, create_graph=create_graph,
                                   allow_unused=True)
                for col, g in enumerate(grads):
                    if g is not None:
                        rows[col][r, :] = g.detach().numpy().reshape(-1)
        jac.append(rows)
    return jac


def forward_jacobians(fn, inputs, wanted):
    """J[out][inp] from forward mode: one dual-level pass per input entry (a column each)."""
    from . import forward_ad as fwAD
    outputs = _tensor_outputs(fn, inputs)
    jac = [[np.zeros((o.numel(), inputs[i].numel())) for i in wanted] for o in outputs]
    for col, i in enumerate(wanted):
        x = inputs[i]
        for k in range(x.numel()):
            seed = np.zeros(x.numel(), dtype=x.dtype)
            seed[k] = 1
            with fwAD.dual_level():
                duals = list(inputs)
                duals[i] = fwAD.make_dual(x, _core.from_numpy(seed.reshape(x.shape)))
                outs = _tensor_outputs(fn, duals)
                for r, o in enumerate(outs):
                    tangent = fwAD.unpack_dual(o).tangent
                    if tangent is not None:
                        jac[r][col][:, k] = tangent.detach().numpy().reshape(-1)
    return jac


def _compare(analytic, numerical, wanted, atol, rtol, what):
    for r, (arows, nrows) in enumerate(zip(analytic, numerical)):
        for col, (a, n) in enumerate(zip(arows, nrows)):
            bad = np.abs(a - n) - (atol + rtol * np.abs(n))
            if bad.size and np.nanmax(np.where(np.isnan(bad), np.inf, bad)) > 0:
                flat = np.argmax(np.where(np.isnan(bad), np.inf, bad))
                o, k = np.unravel_index(flat, a.shape)
                return (f"{what} mismatch for output {r} with respect to input {wanted[col]}: "
                        f"worst entry d(output[{o}])/d(input[{k}]): analytic {a[o, k]!r}, "
                        f"numerical {n[o, k]!r} (atol={atol}, rtol={rtol})\n"
                        f"analytic:\n{a}\nnumerical:\n{n}")
    return None


def _check_inputs(inputs, name):
    inputs = _as_tuple(inputs)
    wanted = _differentiable(inputs)
    if not wanted:
        raise ValueError(f"{name}: no input requires grad; pass tensors with "
                         "requires_grad=True")
    for i in wanted:
        if inputs[i].dtype != _core.float64:
            raise ValueError(f"{name}: input {i} is {inputs[i].dtype}; use float64 inputs "
                             "(finite differences in float32 are too coarse)")
    return inputs


def _check_tolerances(eps, atol, rtol, name):
    """ValueError/TypeError naming the function unless eps > 0, atol >= 0 and rtol >= 0."""
    for what, value, low in (("eps", eps, 0.0), ("atol", atol, 0.0), ("rtol", rtol, 0.0)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                             np.floating)):
            raise TypeError(f"{name}: {what} must be a number, not {type(value).__name__}")
        if not (value > low or (what != "eps" and value == low)) or not np.isfinite(float(value)):
            raise ValueError(f"{name}: {what} must be {'>' if what == 'eps' else '>='} 0 and "
                             f"finite, got {value}")


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              check_forward_ad=False, check_backward_ad=True):
    """Check fn's backward (and, with check_forward_ad, its forward-mode derivatives) against
    central finite differences for every input and output."""
    return _gradcheck(fn, inputs, eps, atol, rtol, raise_exception, check_forward_ad,
                      check_backward_ad, "gradcheck")


def _gradcheck(fn, inputs, eps, atol, rtol, raise_exception, check_forward_ad,
               check_backward_ad, name):
    """gradcheck for the public function name (the name its errors give)."""
    check_callable(fn, "fn", name)
    _check_tolerances(eps, atol, rtol, name)
    inputs = _check_inputs(inputs, name)
    outputs, wanted, numerical = numerical_jacobians(fn, inputs, eps)
    message = None
    if check_backward_ad:
        analytic = analytic_jacobians(fn, inputs, wanted)
        message = _compare(analytic, numerical, wanted, atol, rtol, "Jacobian")
    if message is None and check_forward_ad:
        forward = forward_jacobians(fn, inputs, wanted)
        message = _compare(forward, numerical, wanted, atol, rtol, "forward-mode Jacobian")
    if message is None:
        return True
    if raise_exception:
        raise GradcheckError(f"{name}: {message}")
    return False


def _checked_grad_outputs(grad_outputs, outputs, name):
    """grad_outputs as a tuple of tensors, one per output that requires grad, each of that
    output's shape: TypeError/RuntimeError naming the function otherwise."""
    wanted = [o for o in outputs if o.requires_grad]
    grad_outputs = _as_tuple(grad_outputs)
    if len(grad_outputs) != len(wanted):
        raise RuntimeError(f"{name}: {len(grad_outputs)} grad_outputs for {len(wanted)} "
                           "outputs that require grad")
    for k, (g, o) in enumerate(zip(grad_outputs, wanted)):
        if not isinstance(g, _core.Tensor):
            raise TypeError(f"{name}: grad_outputs[{k}] must be a Tensor, not "
                            f"{type(g).__name__}")
        if tuple(g.shape) != tuple(o.shape):
            raise RuntimeError(f"{name}: grad_outputs[{k}] has shape {tuple(g.shape)} but its "
                               f"output has shape {tuple(o.shape)}")
    return grad_outputs


def gradgradcheck(fn, inputs, grad_outputs=None, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True):
    """Check the second derivatives of fn: gradcheck of (inputs, v) -> v . dfn/dinputs."""
    check_callable(fn, "fn", "gradgradcheck")
    inputs = _check_inputs(inputs, "gradgradcheck")
    wanted = _differentiable(inputs)
    outputs = _tensor_outputs(fn, inputs, "gradgradcheck")
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(_core._from_array(rng.standard_normal(o.shape), True)
                             for o in outputs if o.requires_grad)
    grad_outputs = _checked_grad_outputs(grad_outputs, outputs, "gradgradcheck")
    n = len(inputs)

    def first_derivatives(*args):
        xs, vs = args[:n], args[n:]
        with enable_grad():
            outs = [o for o in _tensor_outputs(fn, xs) if o.requires_grad]
            return _core.grad(tuple(outs), tuple(xs[i] for i in wanted), tuple(vs),
                              create_graph=True, allow_unused=True, materialize_grads=True)

    return _gradcheck(first_derivatives, tuple(inputs) + tuple(grad_outputs), eps, atol, rtol,
                      raise_exception, False, True, "gradgradcheck")
