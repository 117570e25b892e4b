"""prod, var, std, norm, logsumexp, softmax, log_softmax, cumsum, cumprod, argmax, argmin, all
and any beyond their table rows (tests/support/op_rows_statistics.py; values, gradients, second
derivatives, tangents and layouts of every row are checked by the table's loops:
tests/ops/test_gradcheck.py, tests/forward/test_forward_ad.py): the semantics a Jacobian check cannot
see (zeros in prod/cumprod, norm and std at 0, stability, ties, dtypes, errors), compared with
PyTorch where it is installed.
"""
import numpy as np
import pytest

import lucid
import lucid.autograd.forward_ad as fwAD
from support.checks import assert_close, f64, to_numpy

try:
    import torch
except ImportError:          # the PyTorch comparisons say why they did not run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed; "
                                 "pip install torch==2.13.0 to compare with PyTorch")

# -- helpers for the PyTorch comparisons -----------------------------------------------------------

def _grad_pair(lucid_fn, torch_fn, a, upstream=None):
    """(lucid's, torch's) gradient of fn at a for the upstream gradient (ones by default)."""
    x = f64(a, requires_grad=True)
    y = lucid_fn(x)
    up = np.ones(y.shape) if upstream is None else np.asarray(upstream, dtype=np.float64)
    y.backward(f64(up))
    tx = torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)
    torch_fn(tx).backward(torch.tensor(up))
    return to_numpy(x.grad), tx.grad.numpy()


def _jvp_pair(lucid_fn, torch_fn, a, t):
    with fwAD.dual_level():
        out = fwAD.unpack_dual(lucid_fn(fwAD.make_dual(f64(a), f64(t)))).tangent
    import torch.autograd.forward_ad as tfw
    with tfw.dual_level():
        dual = tfw.make_dual(torch.tensor(np.asarray(a, dtype=np.float64)),
                             torch.tensor(np.asarray(t, dtype=np.float64)))
        expected = tfw.unpack_dual(torch_fn(dual)).tangent
    return to_numpy(out), expected.numpy()


def _second_pair(lucid_fn, torch_fn, a, w):
    """(lucid's, torch's) d/dx of sum(w * d(sum fn(x))/dx): double backward."""
    x = f64(a, requires_grad=True)
    (g,) = lucid.autograd.grad(lucid_fn(x).sum(), (x,), create_graph=True)
    (g * f64(w)).sum().backward()
    tx = torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)
    (tg,) = torch.autograd.grad(torch_fn(tx).sum(), (tx,), create_graph=True)
    (tg * torch.tensor(np.asarray(w, dtype=np.float64))).sum().backward()
    return to_numpy(x.grad), tx.grad.numpy()


ZEROS = [
    ("one_zero", [2.0, 0.0, 3.0, -1.5]),
    ("two_zeros", [2.0, 0.0, 3.0, 0.0, 4.0]),
    ("all_zeros", [0.0, 0.0, 0.0]),
    ("zero_first", [0.0, 2.0, -3.0]),
    ("zero_last", [1.5, 2.0, 0.0]),
]


# -- prod and cumprod with zeros ---------------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("name,a", ZEROS, ids=[z[0] for z in ZEROS])
def test_prod_with_zeros_like_torch(name, a):
    mine, theirs = _grad_pair(lambda x: x.prod(), lambda t: t.prod(), a)
    assert_close(mine, theirs, rtol=1e-12, atol=0)
    mine, theirs = _second_pair(lambda x: x.prod(), lambda t: t.prod(), a,
                                np.linspace(-1, 1, len(a)))
    assert_close(mine, theirs, rtol=1e-12, atol=1e-12)
    mine, theirs = _jvp_pair(lambda x: x.prod(), lambda t: t.prod(), a, np.arange(1.0, len(a) + 1))
    assert_close(mine, theirs, rtol=1e-12, atol=0)


@needs_torch
def test_prod_with_zeros_over_a_dim_like_torch():
    a = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 1.0], [1.0, 2.0, 4.0], [5.0, -1.0, 0.0]])
    up = np.array([1.0, -2.0, 0.5, 3.0])
    mine, theirs = _grad_pair(lambda x: x.prod(1), lambda t: t.prod(1), a, up)
    assert_close(mine, theirs, rtol=1e-12, atol=0)
    mine, theirs = _grad_pair(lambda x: x.prod(0, keepdim=True), lambda t: t.prod(0, True), a,
                              np.array([[1.0, 2.0, 3.0]]))
    assert_close(mine, theirs, rtol=1e-12, atol=0)
    mine, theirs = _second_pair(lambda x: x.prod(1), lambda t: t.prod(1), a, a + 0.5)
    assert_close(mine, theirs, rtol=1e-12, atol=1e-12)


def test_prod_with_zeros_gradgradcheck():
    x = f64([[2.0, 0.0, 3.0], [0.0, 0.0, 1.0]], requires_grad=True)
    for fn in (lambda t: t.prod(), lambda t: t.prod(1), lambda t: lucid.prod(t, (0, 1))):
        assert lucid.autograd.gradcheck(fn, (x,), check_forward_ad=True)
        assert lucid.autograd.gradgradcheck(fn, (x,))


@needs_torch
@pytest.mark.parametrize("name,a", ZEROS, ids=[z[0] for z in ZEROS])
def test_cumprod_with_zeros_like_torch(name, a):
    up = np.arange(1.0, len(a) + 1)
    mine, theirs = _grad_pair(lambda x: x.cumprod(0), lambda t: t.cumprod(0), a, up)
    assert_close(mine, theirs, rtol=1e-12, atol=0)
    mine, theirs = _second_pair(lambda x: x.cumprod(0), lambda t: t.cumprod(0), a,
                                np.linspace(-1, 1, len(a)))
    assert_close(mine, theirs, rtol=1e-12, atol=1e-12)
    mine, theirs = _jvp_pair(lambda x: x.cumprod(0), lambda t: t.cumprod(0), a, up[::-1].copy())
    assert_close(mine, theirs, rtol=1e-12, atol=0)


def test_cumprod_with_zeros_checks_in_2d():
    x = f64([[2.0, 0.0, 3.0, 0.0], [0.5, 1.5, 0.0, 2.0], [1.0, 2.0, 3.0, 4.0]], requires_grad=True)
    for d in (0, 1):
        assert lucid.autograd.gradcheck(lambda t: t.cumprod(d), (x,), check_forward_ad=True)
        assert lucid.autograd.gradgradcheck(lambda t: t.cumprod(d), (x,))


# -- norm and std at zero ----------------------------------------------------------------------------

NORM_PS = [2, "fro", 1, 3, 0.5, float("inf"), -float("inf"), 0]


@needs_torch
@pytest.mark.parametrize("p", NORM_PS, ids=[str(p) for p in NORM_PS])
def test_norm_at_zero_like_torch(p):
    for a in ([0.0, 0.0, 0.0], [0.0, 2.0, -1.0]):
        if p == 0:       # torch leaves .grad None and gives no tangent: the derivative is 0
            x = f64(a, requires_grad=True)
            x.norm(0).backward()
            assert_close(x.grad, np.zeros(3), rtol=0, atol=0)
            with fwAD.dual_level():
                out = lucid.norm(fwAD.make_dual(f64(a), f64([1.0, 2.0, 3.0])), 0)
                assert fwAD.unpack_dual(out).tangent.item() == 0.0
        else:
            mine, theirs = _grad_pair(lambda x: x.norm(p), lambda t: t.norm(p), a)
            assert_close(mine, theirs, rtol=1e-12, atol=0)
            mine, theirs = _jvp_pair(lambda x: x.norm(p), lambda t: t.norm(p), a, [1.0, 2.0, 3.0])
            assert_close(mine, theirs, rtol=1e-12, atol=0)


def test_norm_and_std_at_zero_take_an_infinite_gradient_as_zero():
    # Note [Mask by selection]: g = inf where the derivative is 0 gives exactly 0, never NaN
    for fn in (lambda t: t.norm(), lambda t: t.norm(3), lambda t: t.norm(1), lambda t: t.std(),
               lambda t: t.norm(float("inf"))):
        x = f64([0.0, 0.0, 0.0], requires_grad=True)
        fn(x).backward(f64(np.inf))
        assert_close(x.grad, [0.0, 0.0, 0.0], rtol=0, atol=0)
    x = f64([1.0, -3.0, 2.0], requires_grad=True)
    x.norm(float("inf")).backward(f64(np.inf))
    assert_close(x.grad, [0.0, -np.inf, 0.0], rtol=0, atol=0)


@needs_torch
def test_norm_inf_ties_share_like_torch():
    a = [1.0, -3.0, 3.0, 2.0]
    for p in (float("inf"), -float("inf")):
        mine, theirs = _grad_pair(lambda x: x.norm(p), lambda t: t.norm(p), a)
        assert_close(mine, theirs, rtol=1e-12, atol=0)


@needs_torch
def test_std_at_zero_variance_like_torch():
    a = np.full((2, 3), 1.5)
    for kw in ({}, {"dim": 1}, {"dim": 0, "keepdim": True}):
        mine, theirs = _grad_pair(lambda x: x.std(**kw), lambda t: t.std(**kw), a)
        assert_close(mine, theirs, rtol=0, atol=0)
        assert not np.isnan(mine).any()
        mine, theirs = _jvp_pair(lambda x: x.std(**kw), lambda t: t.std(**kw), a,
                                 np.arange(6.0).reshape(2, 3))
        assert_close(mine, theirs, rtol=0, atol=0)


@needs_torch
def test_var_and_std_corrections_like_torch(rng):
    a = rng.standard_normal((3, 5))
    t = torch.tensor(a)
    for kw in ({}, {"correction": 0}, {"correction": 2}, {"dim": 1, "correction": 0},
               {"dim": (0, 1), "keepdim": True}, {"dim": 0, "unbiased": False}):
        for op in ("var", "std"):
            assert_close(getattr(f64(a), op)(**kw), getattr(t, op)(**kw).numpy(), rtol=1e-12)
    assert_close(lucid.var(f64(a), False), torch.var(t, False).numpy(), rtol=1e-12)
    assert_close(lucid.std(f64(a), 1, True, True), torch.std(t, 1, True, True).numpy(),
                 rtol=1e-12)


# -- stability --------------------------------------------------------------------------------------

def test_logsumexp_softmax_log_softmax_stable_for_large_inputs():
    a = np.array([[1000.0, 1000.0, -1000.0], [-1e4, -1e4 + 1.0, -1e4 + 2.0]])
    for dtype in (lucid.float32, lucid.float64):
        x = lucid.tensor(a, dtype=dtype, requires_grad=True)
        lse = lucid.logsumexp(x, 1)
        assert_close(lse, [1000.0 + np.log(2.0), -1e4 + 2.0 + np.log1p(np.exp(-1) + np.exp(-2))],
                     rtol=1e-6)
        sm = lucid.softmax(x, 1)
        assert_close(sm, [[0.5, 0.5, 0.0], np.exp([-2, -1, 0]) / np.exp([-2, -1, 0]).sum()],
                     rtol=1e-6, atol=1e-30)
        lsm = lucid.log_softmax(x, 1)
        assert_close(lsm[0, :2], [-np.log(2.0)] * 2, rtol=1e-6)
        assert_close(lsm[0, 2], -2000.0 - np.log(2.0), rtol=1e-6)
        (lse.sum() + sm[:, 0].sum() + lsm.sum()).backward()
        assert np.isfinite(to_numpy(x.grad)).all()


def test_softmax_with_minus_inf_entries():
    x = f64([[0.0, -np.inf, 1.0], [-np.inf, 2.0, -np.inf]], requires_grad=True)
    y = lucid.softmax(x, 1)
    assert_close(y, [[1 / (1 + np.e), 0.0, np.e / (1 + np.e)], [0.0, 1.0, 0.0]], rtol=1e-12)
    y.backward(f64(np.arange(6.0).reshape(2, 3)))
    assert np.isfinite(to_numpy(x.grad)).all()
    assert_close(lucid.logsumexp(f64([-np.inf, -np.inf]), 0), -np.inf, rtol=0)


# -- reverse over forward: the tangent reaches x through the output ------------------------------

@needs_torch
@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp", "norm", "std", "var",
                                  "prod", "cumprod", "cumsum"])
def test_tangent_differentiated_in_reverse(name, rng):
    # d/dx sum(J(x) t) = d/dx (t . grad sum f(x)): lucid's reverse over its forward mode against
    # PyTorch's double backward (PyTorch's own reverse-over-forward fails for softmax)
    a = rng.uniform(0.5, 2.0, size=(3, 4))
    t = rng.standard_normal((3, 4))
    fn = {"softmax": lambda x: x.softmax(1), "log_softmax": lambda x: x.log_softmax(0),
          "logsumexp": lambda x: x.logsumexp(1), "norm": lambda x: x.norm(3, 1),
          "std": lambda x: x.std(0), "var": lambda x: x.var(1), "prod": lambda x: x.prod(1),
          "cumprod": lambda x: x.cumprod(1), "cumsum": lambda x: (x * x).cumsum(0)}[name]
    x = f64(a, requires_grad=True)
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(fn(fwAD.make_dual(x, f64(t)))).tangent
        (tangent * f64(np.ones(tangent.shape))).sum().backward()
    tx = torch.tensor(a, requires_grad=True)
    (g,) = torch.autograd.grad(fn(tx).sum(), (tx,), create_graph=True)
    (g * torch.tensor(t)).sum().backward()
    assert_close(x.grad, tx.grad.numpy(), rtol=1e-10, atol=1e-12)


# -- argmax, argmin, all, any ------------------------------------------------------------------------

@needs_torch
def test_argmax_argmin_like_torch():
    a = np.array([[1.0, 3.0, 3.0, -2.0], [-2.0, -2.0, 0.5, 0.5], [4.0, np.nan, 4.0, np.nan]])
    for fn in ("argmax", "argmin"):
        for kw in ({}, {"dim": 0}, {"dim": 1}, {"dim": -1, "keepdim": True},
                   {"dim": None, "keepdim": True}):
            for arr in (a, a[:2], a[:2].T):
                mine = getattr(f64(arr, requires_grad=True), fn)(**kw)
                theirs = getattr(torch.tensor(arr), fn)(**kw)
                assert mine.dtype == lucid.int64 and mine.grad_fn is None
                assert not mine.requires_grad
                assert mine.shape == tuple(theirs.shape)
                assert_close(mine, theirs.numpy(), rtol=0, atol=0)
    assert lucid.argmax(f64(2.5), 0).item() == 0 and lucid.argmin(f64(2.5)).item() == 0


def test_argmax_takes_the_first_of_ties():
    assert lucid.argmax(f64([1.0, 5.0, 5.0, 5.0])).item() == 1
    assert lucid.argmin(f64([[2.0, 0.0, 0.0]]), 1).tolist() == [1]


def test_all_any():
    a = np.array([[1.0, 0.0, 2.0], [3.0, 4.0, np.nan]])
    x = f64(a, requires_grad=True)
    for fn, ref in ((lucid.all, np.all), (lucid.any, np.any)):
        for kw, axis in (({}, None), ({"dim": 1}, 1), ({"dim": (0, 1)}, (0, 1)),
                         ({"dim": 0, "keepdim": True}, 0)):
            out = fn(x, **kw)
            assert out.dtype == lucid.bool and out.grad_fn is None and not out.requires_grad
            assert_close(out, ref(a, axis=axis, keepdims=kw.get("keepdim", False)), rtol=0)
    assert x.all(1).tolist() == [False, True] and x.any().item() is True
    assert lucid.all(lucid.tensor([1, 2])).item() is True


# -- dtypes ---------------------------------------------------------------------------------------

def test_integer_inputs():
    ints = lucid.tensor([[1, 2, 3], [4, 5, 6]], dtype=lucid.int32)
    assert lucid.prod(ints).dtype == lucid.int64 and lucid.prod(ints).item() == 720
    assert lucid.cumsum(ints, 1).dtype == lucid.int64
    assert lucid.cumprod(ints, 1).tolist() == [[1, 2, 6], [4, 20, 120]]
    assert lucid.cumsum(lucid.tensor([True, True, False]), 0).tolist() == [1, 2, 2]
    lse = lucid.logsumexp(ints, 1)
    assert lse.dtype == lucid.float32
    assert_close(lse, np.log(np.exp([[1, 2, 3], [4, 5, 6]]).sum(1)), rtol=1e-6)
    sm = lucid.softmax(ints, 1, dtype=lucid.float64)
    assert sm.dtype == lucid.float64
    assert_close(sm.sum(1), [1.0, 1.0], rtol=1e-12)
    assert lucid.cumsum(ints, 0, dtype=lucid.float64).dtype == lucid.float64


def test_dtype_argument_is_differentiable():
    x = lucid.tensor([1.0, 2.0, 3.0], dtype=lucid.float32, requires_grad=True)
    y = lucid.log_softmax(x, 0, dtype=lucid.float64)
    assert y.dtype == lucid.float64
    y[0].backward()
    assert x.grad.dtype == lucid.float32
    assert_close(x.grad, np.eye(3)[0] - np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum(), rtol=1e-6)


# -- errors -----------------------------------------------------------------------------------------

ERRORS = [
    ("var_int", lambda x, i: lucid.var(i), RuntimeError, "floating point"),
    ("std_int", lambda x, i: i.std(), RuntimeError, "floating point"),
    ("norm_int", lambda x, i: lucid.norm(i), RuntimeError, "floating point"),
    ("softmax_int", lambda x, i: lucid.softmax(i, 0), RuntimeError, "dtype="),
    ("norm_nuc", lambda x, i: lucid.norm(x, "nuc"), ValueError, "nuc"),
    ("norm_p_list", lambda x, i: lucid.norm(x, [2]), ValueError, "p="),
    ("softmax_no_dim", lambda x, i: lucid.softmax(x, None), TypeError, "softmax: dim"),
    ("softmax_tuple_dim", lambda x, i: x.log_softmax((0, 1)), TypeError, "log_softmax: dim"),
    ("cumsum_dim_range", lambda x, i: lucid.cumsum(x, 2), IndexError, "out of range"),
    ("cumprod_no_dim", lambda x, i: lucid.cumprod(x, None), TypeError, "cumprod: dim"),
    ("prod_dim_range", lambda x, i: x.prod(-3), IndexError, "out of range"),
    ("var_repeated_dim", lambda x, i: x.var((0, 0)), RuntimeError, "more than once"),
    ("var_two_corrections", lambda x, i: x.var(0, True, correction=0), RuntimeError, "only one"),
    ("var_bool_correction", lambda x, i: x.var(correction=True), TypeError, "correction"),
    ("argmax_tuple_dim", lambda x, i: x.argmax((0, 1)), TypeError, "argmax: dim"),
    ("argmax_empty", lambda x, i: lucid.argmax(lucid.zeros(0, 3)), RuntimeError, "no elements"),
    ("argmin_empty_dim", lambda x, i: lucid.argmin(lucid.zeros(0, 3), 0), IndexError, "size 0"),
    ("norm_inf_empty", lambda x, i: lucid.norm(lucid.zeros(2, 0), float("inf"), 1), IndexError,
     "size 0"),
    ("logsumexp_dim_range", lambda x, i: lucid.logsumexp(x, 5), IndexError, "out of range"),
    ("any_bad_operand", lambda x, i: lucid.any("yes"), TypeError, "expected a Tensor"),
]


@pytest.mark.parametrize("name,call,exc,words", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_name_the_problem_and_change_nothing(name, call, exc, words):
    a = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])
    x = f64(a, requires_grad=True)
    i = lucid.tensor([[1, 2, 3], [4, 5, 6]])
    version = x._version
    with pytest.raises(exc, match=words):
        call(x, i)
    assert_close(x, a, rtol=0, atol=0)
    assert x.grad is None and x._version == version
    assert i.tolist() == [[1, 2, 3], [4, 5, 6]]


def test_zero_dim_inputs():
    x = f64(-1.5, requires_grad=True)
    for fn, value in ((lambda t: t.prod(), -1.5), (lambda t: t.norm(), 1.5),
                      (lambda t: t.softmax(0), 1.0), (lambda t: t.log_softmax(-1), 0.0),
                      (lambda t: t.cumsum(0), -1.5), (lambda t: t.cumprod(-1), -1.5),
                      (lambda t: t.logsumexp(0), -1.5), (lambda t: t.var(correction=0), 0.0)):
        out = fn(x)
        assert out.shape == () and abs(out.item() - value) < 1e-12
        assert lucid.autograd.gradcheck(fn, (x,), check_forward_ad=True)
