"""Table-driven forward / gradient tests for every row of the op table (tests/support/op_table.py).

For every (op, shapes) case (each output of a ``multi_output`` row is compared):
  * the float64 forward is compared with the NumPy reference (to the row's ``tol64``);
  * ``lucid.autograd.gradcheck`` is run on every input (full Jacobian);
  * independently of gradcheck, backward with a random upstream gradient is compared with
    central finite differences of the NumPy reference (so a broken gradcheck cannot hide a
    broken op, and a broken lucid forward cannot hide a broken backward);
  * ``gradgradcheck`` (rows with ``gradgrad``);
  * the forward (to ``tol32``) and backward in float32, and with transposed and
    strided (non-contiguous) inputs, whose tangents must equal a contiguous copy's.
The forward-mode check of every row is in tests/forward/test_forward_ad.py.
Also: gradcheck itself catches wrong gradients.
"""
import re

import numpy as np
import pytest

import lucid
import lucid.autograd.forward_ad as fwAD
from support.checks import assert_close, f64, numerical_vjp, to_numpy
from support.op_table import cases, outputs, sample

CASES = cases()
IDS = [c[0] for c in CASES]
CASE_PARAMS = [pytest.param(*c, id=c[0]) for c in CASES]
GRADGRAD_PARAMS = [pytest.param(*c, id=c[0]) for c in CASES if c[1].gradgrad]


def _inputs(rng, spec, shapes):
    return [sample(rng, s, d) for s, d in zip(shapes, spec.domains)]


def _tensors(arrays, requires_grad, dtype=lucid.float64):
    return [lucid.tensor(a.copy(), dtype=dtype, requires_grad=requires_grad) for a in arrays]


def _expected(spec, arrays):
    """The reference's outputs (a tuple of float64 arrays)."""
    return tuple(np.asarray(r, dtype=np.float64)
                 for r in outputs(spec, spec.ref(*[a.copy() for a in arrays])))


def _flat_ref(spec):
    """The reference with all its outputs joined into one vector (for finite differences)."""
    return lambda *a: np.concatenate([r.ravel() for r in _expected(spec, a)] + [np.zeros(0)])


def _backward(outs, rng, dtype=lucid.float64):
    """Backward of every output with a random upstream gradient; the upstreams joined (float64)."""
    np_dtype = np.float32 if dtype == lucid.float32 else np.float64
    ups = [rng.standard_normal(o.shape).astype(np_dtype) for o in outs]
    lucid.autograd.backward(tuple(outs), tuple(lucid.tensor(u, dtype=dtype) for u in ups))
    return np.concatenate([u.ravel() for u in ups] + [np.zeros(0)]).astype(np.float64)


def _grad_or_zero(t):
    """A leaf's gradient (zeros where no output depends on it: masked_fill_0d's input)."""
    return np.zeros(t.shape) if t.grad is None else to_numpy(t.grad)


# ---------------------------------------------------------------------------------------------
# the checks, as plain functions (test_semantics.py also runs them in a child interpreter)
# ---------------------------------------------------------------------------------------------

def check_forward(case_id, spec, shapes, rng):
    arrays = _inputs(rng, spec, shapes)
    expected = _expected(spec, arrays)
    for rg in (False, True):
        ts = _tensors(arrays, requires_grad=rg)
        outs = outputs(spec, spec.fn(*ts))
        assert len(outs) == len(expected), case_id
        for out, want in zip(outs, expected):
            assert isinstance(out, lucid.Tensor)
            assert out.dtype == lucid.float64, f"{case_id}: float64 inputs gave {out.dtype}"
            assert out.shape == want.shape, f"{case_id}: shape {out.shape} != {want.shape}"
            assert_close(out, want, rtol=spec.tol64, atol=spec.tol64, msg=case_id)
            assert out.requires_grad == rg
            if rg:
                assert out.grad_fn is not None
                assert out.grad_fn.name().endswith("Backward"), out.grad_fn.name()
            else:
                assert out.grad_fn is None
        # inputs were not modified by the forward
        for t, a in zip(ts, arrays):
            assert_close(t, a, rtol=0, atol=0)


def check_gradcheck(case_id, spec, shapes, rng):
    arrays = _inputs(rng, spec, shapes)
    ts = tuple(_tensors(arrays, requires_grad=True))
    assert lucid.autograd.gradcheck(spec.fn, ts, eps=1e-6, atol=1e-6, rtol=1e-4)
    # the finite-difference perturbations were undone
    for t, a in zip(ts, arrays):
        assert_close(t, a, rtol=0, atol=0)


def check_backward_fd(case_id, spec, shapes, rng):
    # independent of gradcheck: lucid's backward vs finite differences of the NumPy reference
    arrays = _inputs(rng, spec, shapes)
    ts = _tensors(arrays, requires_grad=True)
    upstream = _backward(outputs(spec, spec.fn(*ts)), rng)
    expected = numerical_vjp(_flat_ref(spec), arrays, upstream)
    for i, (t, g) in enumerate(zip(ts, expected)):
        assert t.grad is not None or not np.any(g), f"{case_id}: input {i} got no .grad"
        if t.grad is not None:
            assert t.grad.shape == t.shape, f"{case_id}: grad shape {t.grad.shape} != {t.shape}"
            assert t.grad.dtype == lucid.float64
        assert_close(_grad_or_zero(t), g, rtol=1e-5, atol=1e-6, msg=f"{case_id} input {i}")


def check_gradgradcheck(case_id, spec, shapes, rng):
    arrays = _inputs(rng, spec, shapes)
    ts = tuple(_tensors(arrays, requires_grad=True))
    assert lucid.autograd.gradgradcheck(spec.fn, ts, eps=1e-6, atol=1e-5, rtol=1e-3)
    for t, a in zip(ts, arrays):
        assert_close(t, a, rtol=0, atol=0)


GRAD_CHECKS = (check_gradcheck, check_backward_fd, check_gradgradcheck)


@pytest.mark.parametrize("case_id,spec,shapes", CASE_PARAMS)
def test_forward_matches_numpy(case_id, spec, shapes, rng):
    check_forward(case_id, spec, shapes, rng)


@pytest.mark.parametrize("case_id,spec,shapes", CASE_PARAMS)
def test_gradcheck(case_id, spec, shapes, rng):
    check_gradcheck(case_id, spec, shapes, rng)


@pytest.mark.parametrize("case_id,spec,shapes", CASE_PARAMS)
def test_backward_matches_numpy_finite_differences(case_id, spec, shapes, rng):
    check_backward_fd(case_id, spec, shapes, rng)


@pytest.mark.parametrize("case_id,spec,shapes", GRADGRAD_PARAMS)
def test_gradgradcheck(case_id, spec, shapes, rng):
    check_gradgradcheck(case_id, spec, shapes, rng)


# ---------------------------------------------------------------------------------------------
# gradcheck itself
# ---------------------------------------------------------------------------------------------

def _floats(msg):
    return [float(m) for m in re.findall(r"[-+]?\d+\.\d*(?:[eE][-+]?\d+)?|[-+]?\d+[eE][-+]?\d+", msg)]


def test_gradcheck_returns_true_without_raising(rng):
    x = lucid.tensor(rng.standard_normal((2, 3)), dtype=lucid.float64, requires_grad=True)
    y = lucid.tensor(rng.standard_normal((3,)), dtype=lucid.float64, requires_grad=True)
    res = lucid.autograd.gradcheck(lambda a, b: (a * b).tanh(), (x, y), raise_exception=False)
    assert res is True or res == True  # noqa: E712


def _wrong_scaled(b):
    # the true derivative of sum(1.7 * b) is 1.7; the hook makes the analytic one 3 * 1.7 = 5.1
    y = b * 1.7
    if y.requires_grad:     # gradcheck may evaluate fn on inputs that do not require grad
        y.register_hook(lambda g: g * 3.0)
    return y.sum()


def test_gradcheck_detects_wrong_gradient_via_hook():
    a = f64([0.3, -0.2], requires_grad=True)
    b = f64([0.5, 1.5, -0.7], requires_grad=True)

    def fn(a, b):
        return (a * 2.0).sum() + _wrong_scaled(b)

    assert not lucid.autograd.gradcheck(fn, (a, b), raise_exception=False)
    with pytest.raises(lucid.autograd.GradcheckError) as ei:
        lucid.autograd.gradcheck(fn, (a, b))
    msg = str(ei.value)
    # names the input (index 1, the wrong one)
    assert re.search(r"input[^0-9]{0,20}1", msg, re.I), msg
    assert re.search(r"output", msg, re.I), msg
    floats = _floats(msg)
    assert any(abs(v - 1.7) < 1e-3 for v in floats), f"numerical value 1.7 not in message: {msg!r}"
    assert any(abs(v - 5.1) < 1e-3 for v in floats), f"analytic value 5.1 not in message: {msg!r}"
    # the inputs were not modified by the perturbations
    assert_close(a, [0.3, -0.2], rtol=0, atol=0)
    assert_close(b, [0.5, 1.5, -0.7], rtol=0, atol=0)


def test_gradcheck_error_is_an_exception_subclass():
    assert issubclass(lucid.autograd.GradcheckError, Exception)


def test_gradcheck_detects_missing_gradient_path():
    # d/dx (x.detach() * x) analytically (as recorded) is x.detach(), numerically 2x.
    x = f64([0.5, -1.25, 2.0], requires_grad=True)
    assert not lucid.autograd.gradcheck(lambda t: t.detach() * t, (x,), raise_exception=False)
    with pytest.raises(lucid.autograd.GradcheckError):
        lucid.autograd.gradcheck(lambda t: t.detach() * t, (x,))


def test_gradcheck_full_jacobian_of_vector_output(rng):
    # a non-scalar output: every Jacobian entry must be compared, so a wrong off-diagonal
    # derivative (introduced on one output entry only by a hook) must be caught
    x = lucid.tensor(rng.standard_normal(4), dtype=lucid.float64, requires_grad=True)

    def wrong(t):
        y = t * 1.0
        # scales only the gradient flowing into entry 2
        mask = lucid.tensor([1.0, 1.0, 4.0, 1.0], dtype=lucid.float64)
        if y.requires_grad:
            y.register_hook(lambda g: g * mask)
        return y.tanh()

    assert not lucid.autograd.gradcheck(wrong, (x,), raise_exception=False)
    assert lucid.autograd.gradcheck(lambda t: (t * 1.0).tanh(), (x,), raise_exception=False)


# ---------------------------------------------------------------------------------------------
# a hand-written finite-difference check through lucid's own forward, for a few ops, using
# .backward() on a scalar (independent of gradcheck and of the helper used above)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,fn,domain", [
    ("mul_exp", lambda x: (x * x.exp()).sum(), "any"),
    ("div_log", lambda x: (x.log() / (x + 1.0)).sum(), "pos"),
    ("tanh_matmul", lambda x: (x.reshape(2, 3) @ x.reshape(3, 2)).tanh().sum(), "any"),
    ("mean_pow", lambda x: (x ** 3).mean(dim=0).sum(), "any"),
], ids=["mul_exp", "div_log", "tanh_matmul", "mean_pow"])
def test_scalar_loss_central_differences(name, fn, domain, rng):
    a = rng.standard_normal(6) if domain == "any" else rng.uniform(0.5, 2.0, 6)
    x = lucid.tensor(a, dtype=lucid.float64, requires_grad=True)
    fn(x).backward()
    eps = 1e-6
    num = np.zeros(6)
    for k in range(6):
        ap, am = a.copy(), a.copy()
        ap[k] += eps
        am[k] -= eps
        num[k] = (fn(lucid.tensor(ap, dtype=lucid.float64)).item()
                  - fn(lucid.tensor(am, dtype=lucid.float64)).item()) / (2 * eps)
    assert_close(x.grad, num, rtol=1e-5, atol=1e-6)
    assert isinstance(fn(x).item(), float)
    _ = to_numpy(x)


# ---------------------------------------------------------------------------------------------
# the same table in float32 (the typed float32 kernels), and with non-contiguous inputs
# (the strided / NumPy fallback paths)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case_id,spec,shapes", CASES, ids=IDS)
def test_float32_forward_and_backward(case_id, spec, shapes, rng):
    arrays = _inputs(rng, spec, shapes)
    arrays32 = [a.astype(np.float32).astype(np.float64) for a in arrays]
    ts = _tensors(arrays32, requires_grad=True, dtype=lucid.float32)
    outs = outputs(spec, spec.fn(*ts))
    expected = _expected(spec, arrays32)
    assert len(outs) == len(expected), case_id
    for out, want in zip(outs, expected):
        assert out.dtype == lucid.float32, f"{case_id}: float32 inputs gave {out.dtype}"
        assert_close(out, want.astype(np.float32), rtol=spec.tol32, atol=spec.tol32, msg=case_id)
    upstream = _backward(outs, rng, lucid.float32)
    num = numerical_vjp(_flat_ref(spec), arrays32, upstream)
    for i, (t, g) in enumerate(zip(ts, num)):
        assert t.grad is None or (t.grad.dtype == lucid.float32 and t.grad.shape == t.shape)
        assert_close(_grad_or_zero(t), g.astype(np.float32), rtol=1e-4, atol=1e-5,
                     msg=f"{case_id} input {i}")


def _transposed(a):
    """a's values in transposed memory (a >= 2-d array), as a leaf and its transposed view."""
    leaf = lucid.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), dtype=lucid.float64,
                        requires_grad=True)
    return leaf, leaf.transpose(-1, -2)


def _strided(a):
    """a's values every other element of a bigger buffer (a leaf that is its own view)."""
    buf = np.zeros(a.shape + (2,))
    view = buf[..., 0]
    view[...] = a
    leaf = lucid.from_numpy(view).requires_grad_()
    return leaf, leaf


LAYOUTS = {"transposed": (_transposed, 2), "strided": (_strided, 1)}   # (maker, fewest dims)
NONCONTIG = [pytest.param(*c, layout, id=f"{c[0]}-{layout}")
             for c in CASES for layout, (_, nd) in LAYOUTS.items()
             if any(len(s) >= nd for s in c[2])]


def _leaf_grad_as_input(leaf, a, layout):
    g = _grad_or_zero(leaf)
    return np.swapaxes(g, -1, -2) if layout == "transposed" and a.ndim >= 2 else g


@pytest.mark.parametrize("case_id,spec,shapes,layout", NONCONTIG)
def test_noncontiguous_inputs(case_id, spec, shapes, layout, rng):
    # every input with enough dims is passed in the layout: values, the backward (against finite
    # differences of the reference) and the tangent (against a contiguous copy's) must not change
    arrays = _inputs(rng, spec, shapes)
    make, nd = LAYOUTS[layout]
    pairs = [make(a) if a.ndim >= nd else (f64(a, requires_grad=True),) * 2 for a in arrays]
    leaves, inputs = [p[0] for p in pairs], [p[1] for p in pairs]
    if not spec.any_layout and layout == "transposed":
        # view needs a layout it can reinterpret (an evenly strided one is fine); a transposed
        # input must be refused, unchanged
        with pytest.raises(RuntimeError, match="view"):
            spec.fn(*inputs)
        for leaf, a in zip(leaves, arrays):
            got = to_numpy(leaf)
            assert_close(np.swapaxes(got, -1, -2) if got.shape != a.shape else got, a, rtol=0,
                         atol=0)
        return
    outs = outputs(spec, spec.fn(*inputs))
    for out, want in zip(outs, _expected(spec, arrays)):
        assert_close(out, want, rtol=spec.tol64, atol=spec.tol64, msg=case_id)
    upstream = _backward(outs, rng)
    num = numerical_vjp(_flat_ref(spec), arrays, upstream)
    for i, (leaf, a, g) in enumerate(zip(leaves, arrays, num)):
        assert leaf.grad is None or leaf.grad.shape == leaf.shape
        assert_close(_leaf_grad_as_input(leaf, a, layout), g, rtol=1e-5, atol=1e-6,
                     msg=f"{case_id} input {i}")
    if spec.forward_ad:
        tangents = [rng.standard_normal(a.shape) for a in arrays]
        with fwAD.dual_level():
            mine = outputs(spec, spec.fn(*[fwAD.make_dual(x.detach(), f64(t))
                                           for x, t in zip(inputs, tangents)]))
            copied = outputs(spec, spec.fn(*[fwAD.make_dual(f64(a), f64(t))
                                             for a, t in zip(arrays, tangents)]))
            for m, c in zip(mine, copied):
                assert_close(fwAD.unpack_dual(m).tangent, fwAD.unpack_dual(c).tangent,
                             rtol=1e-12, atol=1e-12, msg=f"{case_id}: tangent")
