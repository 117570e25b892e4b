"""gradcheck: compare analytic Jacobians with central finite differences."""
import numpy as np

from .. import _core
from .._batching import transforms as _batching
from .._grad_mode import enable_grad, no_grad
from ._structures import check_callable
from ._gradcheck_batched import batched_forward_grad_check, batched_grad_check
from ._gradcheck_complex import complex_as_real
from ._gradcheck_fast import fast_check, undefined_grad_check, zero_grad_output_check


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
            flat = _writable_entries(inputs[i], i)
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


def _writable_entries(x, i):
    """x's memory as an array whose .flat entries write through (any strides without
    overlap): ValueError for an expanded input, whose entries share memory."""
    array = x.detach().numpy()
    if array.size and any(st == 0 and n > 1 for st, n in zip(array.strides, array.shape)):
        raise ValueError(f"gradcheck: input {i} is expanded (its entries share memory); pass "
                         ".clone()")
    return array.reshape(-1) if array.flags.c_contiguous else _Strided(array)


class _Strided:
    """.flat-style entry access to a non-contiguous array, writing through to its memory."""
    __slots__ = ("array", "size")

    def __init__(self, array):
        self.array = array
        self.size = array.size

    def __getitem__(self, k):
        return self.array[np.unravel_index(k, self.array.shape)]

    def __setitem__(self, k, value):
        self.array[np.unravel_index(k, self.array.shape)] = value


def analytic_jacobians(fn, inputs, wanted, create_graph=False, dtypes=False):
    """J[out][inp] from lucid's backward, one row per output entry (dtypes: a message instead
    when a gradient's dtype is not its input's)."""
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
                        if dtypes and g.dtype != inputs[wanted[col]].dtype:
                            return (f"Gradient has dtype mismatch: the gradient of input "
                                    f"{wanted[col]} is {g.dtype}, the input is "
                                    f"{inputs[wanted[col]].dtype}")
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


def _compare(analytic, numerical, wanted, atol, rtol, what, parts=None):
    """The first entry where analytic and numerical differ beyond the tolerances, as a message
    (parts: the ComplexParts of a complex problem, which says which parts the entry compares)."""
    for r, (arows, nrows) in enumerate(zip(analytic, numerical)):
        for col, (a, n) in enumerate(zip(arows, nrows)):
            bad = np.abs(a - n) - (atol + rtol * np.abs(n))
            if bad.size and np.nanmax(np.where(np.isnan(bad), np.inf, bad)) > 0:
                flat = np.argmax(np.where(np.isnan(bad), np.inf, bad))
                o, k = np.unravel_index(flat, a.shape)
                where = "" if parts is None else "\n" + parts.describe(r, wanted[col], o, k)
                return (f"{what} mismatch for output {r} with respect to input {wanted[col]}: "
                        f"worst entry d(output[{o}])/d(input[{k}]): analytic {a[o, k]!r}, "
                        f"numerical {n[o, k]!r} (atol={atol}, rtol={rtol}){where}\n"
                        f"analytic:\n{a}\nnumerical:\n{n}")
    return None


def _check_inputs(inputs, name):
    inputs = _as_tuple(inputs)
    wanted = _differentiable(inputs)
    if not wanted:
        raise ValueError(f"{name}: no input requires grad; pass tensors with "
                         "requires_grad=True")
    for i in wanted:
        if inputs[i].dtype not in (_core.float64, _core.complex128):
            raise ValueError(f"{name}: input {i} is {inputs[i].dtype}; use float64 or complex128 "
                             "inputs (finite differences in single precision are too coarse)")
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
              check_forward_ad=False, check_backward_ad=True, *, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, fast_mode=False, masked=None):
    """Check fn's backward (and, with check_forward_ad, its forward-mode derivatives) against
    central finite differences: every Jacobian entry, or v^T J u for random u, v (fast_mode)."""
    options = _options("gradcheck", nondet_tol, check_undefined_grad, check_grad_dtypes,
                       check_batched_grad, fast_mode, masked)
    options.batched_forward = _flag(check_batched_forward_grad, "check_batched_forward_grad",
                                    "gradcheck")
    if options.batched_forward and not check_forward_ad:
        raise ValueError("gradcheck: setting check_batched_forward_grad=True requires "
                         "check_forward_ad to be True")
    return _gradcheck(fn, inputs, eps, atol, rtol, raise_exception, check_forward_ad,
                      check_backward_ad, "gradcheck", options)


class _Options:
    """gradcheck's keywords beyond the tolerances, checked once."""
    __slots__ = ("nondet_tol", "undefined_grad", "grad_dtypes", "fast", "batched",
                 "batched_forward")


def _flag(value, keyword, name):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: {keyword} must be a bool, not {type(value).__name__}")
    return bool(value)


def _options(name, nondet_tol, check_undefined_grad, check_grad_dtypes, check_batched_grad,
             fast_mode, masked):
    """The checked keywords: TypeError for a wrong type, ValueError for a wrong value."""
    options = _Options()
    if isinstance(nondet_tol, bool) or not isinstance(nondet_tol, (int, float, np.integer,
                                                                    np.floating)):
        raise TypeError(f"{name}: nondet_tol must be a number, not {type(nondet_tol).__name__}")
    if not (nondet_tol >= 0 and np.isfinite(float(nondet_tol))):
        raise ValueError(f"{name}: nondet_tol must be >= 0 and finite, got {nondet_tol}")
    options.nondet_tol = float(nondet_tol)
    options.undefined_grad = _flag(check_undefined_grad, "check_undefined_grad", name)
    options.grad_dtypes = _flag(check_grad_dtypes, "check_grad_dtypes", name)
    options.fast = _flag(fast_mode, "fast_mode", name)
    options.batched = _flag(check_batched_grad, "check_batched_grad", name)
    options.batched_forward = False
    if masked is not None:
        _flag(masked, "masked", name)       # lucid has no sparse tensors: dense is unmasked
    return options


_DEFAULT_OPTIONS = None


def _default_options():
    global _DEFAULT_OPTIONS
    if _DEFAULT_OPTIONS is None:
        _DEFAULT_OPTIONS = _options("gradcheck", 0.0, True, False, False, False, None)
    return _DEFAULT_OPTIONS


def _gradcheck(fn, inputs, eps, atol, rtol, raise_exception, check_forward_ad,
               check_backward_ad, name, options=None, batched_fn=None):
    """gradcheck for the public function name (the name its errors give); batched_fn: fn's
    form that runs under vmap, for check_batched_grad, when fn itself cannot."""
    options = _default_options() if options is None else options
    check_callable(fn, "fn", name)
    _check_tolerances(eps, atol, rtol, name)
    for keyword, value in (("raise_exception", raise_exception),
                           ("check_forward_ad", check_forward_ad),
                           ("check_backward_ad", check_backward_ad)):
        _flag(value, keyword, name)
    if not (check_forward_ad or check_backward_ad):
        raise ValueError(f"{name}: check_backward_ad=False and check_forward_ad=False leave "
                         "nothing to check; set at least one of them to True")
    inputs = _check_inputs(inputs, name)
    fn, inputs, parts = complex_as_real(fn, inputs, _tensor_outputs)
    if parts is not None and batched_fn is not None:
        batched_fn = parts.wrap(batched_fn)
    if options.fast:
        message = fast_check(fn, inputs, eps, atol, rtol, check_forward_ad, check_backward_ad,
                             options)
        if message is not None and parts is not None:
            message += ("; complex values are checked as their real and imaginary parts "
                        "(fast_mode=False names the part)")
    else:
        message = _slow_check(fn, inputs, eps, atol, rtol, check_forward_ad, check_backward_ad,
                              options, parts)
    if message is None and check_backward_ad:
        message = zero_grad_output_check(fn, inputs)
    if message is None and check_backward_ad and options.undefined_grad:
        message = undefined_grad_check(fn, inputs)
    if message is None and check_forward_ad and options.batched_forward:
        message = batched_forward_grad_check(fn, inputs, _differentiable(inputs))
    if message is None and check_backward_ad and options.batched:
        message = batched_grad_check(fn, inputs, _differentiable(inputs), batched_fn)
    if message is None:
        return True
    if raise_exception:
        raise GradcheckError(f"{name}: {message}")
    return False


def _slow_check(fn, inputs, eps, atol, rtol, check_forward_ad, check_backward_ad, options,
                parts=None):
    """The first failure of the full-Jacobian checks (None when all pass)."""
    outputs, wanted, numerical = numerical_jacobians(fn, inputs, eps)
    if check_backward_ad:
        analytic = analytic_jacobians(fn, inputs, wanted, dtypes=options.grad_dtypes)
        if isinstance(analytic, str):
            return analytic
        message = _compare(analytic, numerical, wanted, atol, rtol, "Jacobian", parts)
        if message is None:
            again = analytic_jacobians(fn, inputs, wanted)
            message = _reentrant(analytic, again, options.nondet_tol)
        if message is not None:
            return message
    if check_forward_ad:
        forward = forward_jacobians(fn, inputs, wanted)
        return _compare(forward, numerical, wanted, atol, rtol, "forward-mode Jacobian", parts)
    return None


def _reentrant(first, second, nondet_tol):
    """The non-reentrant message when two backward passes differ by more than nondet_tol."""
    for r, (rows1, rows2) in enumerate(zip(first, second)):
        for col, (a, b) in enumerate(zip(rows1, rows2)):
            if a.size and not np.max(np.abs(a - b)) <= nondet_tol:
                return (f"Backward is not reentrant, i.e., running backward with same input and "
                        f"grad_output multiple times gives different values, although analytical "
                        f"gradient matches numerical gradient (output {r}: largest difference "
                        f"{np.max(np.abs(a - b))!r}). The tolerance for nondeterminism was "
                        f"{nondet_tol}.")
    return None


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
                  raise_exception=True, *, gen_non_contig_grad_outputs=False, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """Check the second derivatives of fn: gradcheck of (inputs, v) -> v . dfn/dinputs
    (reverse over reverse; check_fwd_over_rev: forward mode over reverse)."""
    name = "gradgradcheck"
    options = _options(name, nondet_tol, check_undefined_grad, check_grad_dtypes,
                       check_batched_grad, fast_mode, masked)
    non_contiguous = _flag(gen_non_contig_grad_outputs, "gen_non_contig_grad_outputs", name)
    rev = _flag(check_rev_over_rev, "check_rev_over_rev", name)
    fwd = _flag(check_fwd_over_rev, "check_fwd_over_rev", name)
    if not (rev or fwd):
        raise ValueError("gradgradcheck: check_rev_over_rev=False and check_fwd_over_rev=False "
                         "leave nothing to check; set at least one of them to True")
    check_callable(fn, "fn", name)
    inputs = _check_inputs(inputs, name)
    wanted = _differentiable(inputs)
    outputs = _tensor_outputs(fn, inputs, name)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(_random_grad_output(rng, o.shape, non_contiguous, o.is_complex())
                             for o in outputs if o.requires_grad)
    grad_outputs = _checked_grad_outputs(grad_outputs, outputs, name)
    n = len(inputs)

    def first_derivatives(*args):
        xs, vs = args[:n], args[n:]
        with enable_grad():
            outs = [o for o in _tensor_outputs(fn, xs) if o.requires_grad]
            return _core.grad(tuple(outs), tuple(xs[i] for i in wanted), tuple(vs),
                              create_graph=True, allow_unused=True, materialize_grads=True)

    def first_derivatives_under_vmap(*args):
        from .. import func
        xs, vs = args[:n], args[n:]

        def outputs_of(*diff):
            substituted = list(xs)
            for i, d in zip(wanted, diff):
                substituted[i] = d
            value = fn(*substituted)
            items = value if isinstance(value, (tuple, list)) else (value,)
            return tuple(o for o in items if _batching.tensor_or_batched(o) and o.requires_grad)
        return func.vjp(outputs_of, *(xs[i] for i in wanted))[1](tuple(vs))

    return _gradcheck(first_derivatives, tuple(inputs) + tuple(grad_outputs), eps, atol, rtol,
                      raise_exception, fwd, rev, name, options, first_derivatives_under_vmap)


def _random_grad_output(rng, shape, non_contiguous, is_complex=False):
    """A standard-normal float64 (complex128 for a complex output) grad output that requires
    grad; non_contiguous: a strided view of a wider array (gen_non_contig_grad_outputs)."""
    def draw(s):
        v = rng.standard_normal(s)
        return v + 1j * rng.standard_normal(s) if is_complex else v
    if not non_contiguous or not len(shape):
        return _core._from_array(draw(shape), True)
    wide = draw(tuple(shape[:-1]) + (2 * shape[-1],))
    leaf = _core._from_array(wide, False)
    view = leaf[..., ::2]
    view.requires_grad_(True)
    return view
