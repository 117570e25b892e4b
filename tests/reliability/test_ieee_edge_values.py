"""IEEE edge values give what NumPy gives, in every build (LUCID_DEBUG=1 included).

Division by zero, 0/0, infinities, NaN and empty reductions: the same inf / NaN in the same places
(and the same signs), through the typed loops (small contiguous arrays), NumPy's kernels (large or
strided arrays) and the backward formulas. Gradients at the edges: an inf or NaN upstream gradient
reaches only the positions a masking backward picked (the others get exact zeros), pow's
derivatives at 0 and a NaN operand of maximum/minimum follow PyTorch.
"""
import warnings

import numpy as np
import pytest

import lucid
from lucid.autograd import grad, gradcheck, gradgradcheck
from support.checks import assert_close, assert_exact, grads_for, leaf, to_numpy

# lucid's NumPy paths warn like NumPy does on these values; the values are what is checked here
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DTYPES = {"float32": (lucid.float32, np.float32), "float64": (lucid.float64, np.float64)}
NUM = [1.0, -2.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 3.0, 0.0, np.inf, 5.0, -1.0]
DEN = [0.0, 0.0, 0.0, 0.0, 0.0, -0.0, 1.0, -0.0, -0.0, np.inf, np.inf, -np.inf]
FLOATS = [lucid.float32, lucid.float64]
INF, NAN = float("inf"), float("nan")
LAYOUTS = ["small", "large", "strided"]      # typed loop, NumPy above the size cut-off, fallback


def _arrays(layout, np_dt):
    num, den = np.array(NUM, np_dt), np.array(DEN, np_dt)
    if layout == "large":
        return np.tile(num, 300), np.tile(den, 300)
    if layout == "strided":
        return np.repeat(num, 2)[::2], np.repeat(den, 2)[::2]
    return num, den


def _tensor(arr, lucid_dt, requires_grad=False):
    t = lucid.from_numpy(np.array(arr, copy=True))   # from_numpy keeps the layout
    assert t.dtype == lucid_dt
    return t.requires_grad_(True) if requires_grad else t


def _from_layout(arr, lucid_dt, layout, requires_grad=False):
    if layout != "strided":
        return _tensor(arr, lucid_dt, requires_grad)
    base = _tensor(np.repeat(arr, 2), lucid_dt, requires_grad)
    return base, base[::2]


def assert_same_ieee(actual, expected, msg=""):
    """Equal values, NaN where NaN, and the same sign on zeros and infinities."""
    a = np.asarray(actual.detach().numpy() if isinstance(actual, lucid.Tensor) else actual)
    e = np.asarray(expected)
    assert a.shape == e.shape and a.dtype == e.dtype, (a.shape, a.dtype, e.shape, e.dtype, msg)
    np.testing.assert_array_equal(np.isnan(a), np.isnan(e), err_msg=f"NaN places differ {msg}")
    finite_or_inf = ~np.isnan(e)
    np.testing.assert_array_equal(a[finite_or_inf], e[finite_or_inf], err_msg=msg)
    np.testing.assert_array_equal(np.signbit(a[finite_or_inf]), np.signbit(e[finite_or_inf]),
                                  err_msg=f"signs differ {msg}")


FORMS = {
    "operator": lambda x, y: x / y,
    "lucid.div": lambda x, y: lucid.div(x, y),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dt", sorted(DTYPES))
@pytest.mark.parametrize("form", sorted(FORMS))
def test_tensor_division_by_zero_matches_numpy(form, dt, layout):
    lucid_dt, np_dt = DTYPES[dt]
    num, den = _arrays(layout, np_dt)
    with np.errstate(all="ignore"):
        expected = num / den
    x = _tensor(num, lucid_dt)
    y = _tensor(den, lucid_dt)
    assert_same_ieee(FORMS[form](x, y), expected, f"{form} {dt} {layout}")


@pytest.mark.parametrize("layout", ["small", "large"])
@pytest.mark.parametrize("dt", sorted(DTYPES))
@pytest.mark.parametrize("scalar", [0.0, -0.0, np.inf, 2.0])
def test_scalar_division_by_zero_matches_numpy(scalar, dt, layout):
    lucid_dt, np_dt = DTYPES[dt]
    num, den = _arrays(layout, np_dt)
    with np.errstate(all="ignore"):
        want_div = num / np_dt(scalar)
        want_rdiv = np_dt(scalar) / den
    assert_same_ieee(_tensor(num, lucid_dt) / scalar, want_div, f"x / {scalar}")
    assert_same_ieee(scalar / _tensor(den, lucid_dt), want_rdiv, f"{scalar} / x")


@pytest.mark.parametrize("dt", sorted(DTYPES))
@pytest.mark.parametrize("inplace", ["div_", "itruediv"])
def test_inplace_division_by_zero_matches_numpy(dt, inplace):
    lucid_dt, np_dt = DTYPES[dt]
    num, den = _arrays("small", np_dt)
    with np.errstate(all="ignore"):
        expected = num / den
    x = _tensor(num, lucid_dt)
    if inplace == "div_":
        x.div_(_tensor(den, lucid_dt))
    else:
        x /= _tensor(den, lucid_dt)
    assert_same_ieee(x, expected, inplace)


@pytest.mark.parametrize("dt", sorted(DTYPES))
@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_arithmetic_with_infinities_matches_numpy(dt, op):
    lucid_dt, np_dt = DTYPES[dt]
    num, den = _arrays("small", np_dt)
    with np.errstate(all="ignore"):
        expected = getattr(np, {"add": "add", "sub": "subtract", "mul": "multiply"}[op])(num, den)
    assert_same_ieee(getattr(lucid, op)(_tensor(num, lucid_dt), _tensor(den, lucid_dt)), expected)


@pytest.mark.parametrize("dt", sorted(DTYPES))
def test_division_backward_at_zero_matches_formula(dt):
    # z = x / y: gx = g / y, gy = -(g * x) / (y * y); evaluated by NumPy in the same order
    lucid_dt, np_dt = DTYPES[dt]
    num, den = _arrays("small", np_dt)
    g = np.linspace(-1.5, 2.0, num.size).astype(np_dt)
    x = _tensor(num, lucid_dt, requires_grad=True)
    y = _tensor(den, lucid_dt, requires_grad=True)
    (x / y).backward(_tensor(g, lucid_dt))
    with np.errstate(all="ignore"):
        assert_same_ieee(x.grad, g / den, "gx")
        assert_same_ieee(y.grad, -((g * num) / (den * den)), "gy")


@pytest.mark.parametrize("dt", sorted(DTYPES))
def test_scalar_division_backward_at_zero_matches_formula(dt):
    lucid_dt, np_dt = DTYPES[dt]
    num, den = _arrays("small", np_dt)
    g = np.linspace(-1.5, 2.0, num.size).astype(np_dt)
    x = _tensor(num, lucid_dt, requires_grad=True)
    (x / 0.0).backward(_tensor(g, lucid_dt))
    y = _tensor(den, lucid_dt, requires_grad=True)
    (3.0 / y).backward(_tensor(g, lucid_dt))
    with np.errstate(all="ignore"):
        assert_same_ieee(x.grad, g / np_dt(0.0), "d(x/0)")
        assert_same_ieee(y.grad, -((g * np_dt(3.0)) / (den * den)), "d(3/y)")


SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, 1.0, 1000.0, -1000.0, 1e-30, 88.0, -88.0]
UNARY = {  # name: (lucid, NumPy reference evaluated in the same dtype)
    "exp": (lucid.exp, np.exp),
    "log": (lucid.log, np.log),
    "sqrt": (lucid.sqrt, np.sqrt),
    "tanh": (lucid.tanh, np.tanh),
    "abs": (lucid.abs, np.abs),
    "neg": (lucid.neg, np.negative),
    "relu": (lucid.relu, lambda a: np.where(np.isnan(a) | (a > 0), a, np.zeros_like(a))),
}


@pytest.mark.parametrize("layout", ["small", "large"])
@pytest.mark.parametrize("dt", sorted(DTYPES))
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_special_values_match_numpy(name, dt, layout):
    lucid_dt, np_dt = DTYPES[dt]
    a = np.array(SPECIAL, np_dt)
    if layout == "large":
        a = np.tile(a, 300)
    fn, ref = UNARY[name]
    with np.errstate(all="ignore"):
        want = ref(a).astype(np_dt)
    got = fn(_tensor(a, lucid_dt)).numpy()
    if name == "relu":
        # relu(-0.0) and relu(NaN): only the value class is specified, not the sign of zero
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(got[~np.isnan(want)], want[~np.isnan(want)])
        return
    same_class = np.isfinite(want)
    assert_same_ieee(got[~same_class], want[~same_class], name)
    # finite values: within a few ulp of NumPy (lucid's float32 tanh is its own kernel)
    np.testing.assert_allclose(got[same_class], want[same_class], rtol=4 * np.finfo(np_dt).eps,
                               atol=0)


# ---------------------------------------------------------------------------------------------
# empty reductions
# ---------------------------------------------------------------------------------------------

EMPTY_CASES = [  # shape, dim, keepdim
    ((0,), None, False),
    ((0, 3), None, False),
    ((0, 3), None, True),
    ((0, 3), 0, False),
    ((0, 3), 0, True),
    ((3, 0), 1, False),
    ((3, 0), -1, True),
    ((2, 0, 4), (0, 1), False),
    ((2, 0, 4), 2, False),
]


@pytest.mark.parametrize("dt", sorted(DTYPES))
@pytest.mark.parametrize("shape,dim,keepdim", EMPTY_CASES, ids=[str(c) for c in EMPTY_CASES])
@pytest.mark.parametrize("red", ["sum", "mean"])
def test_empty_reductions_match_numpy(red, shape, dim, keepdim, dt):
    lucid_dt, np_dt = DTYPES[dt]
    a = np.zeros(shape, np_dt)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)          # NumPy's "mean of empty slice"
        want = getattr(np, red)(a, axis=dim, keepdims=keepdim)
    want = np.asarray(want, dtype=np_dt)
    x = _tensor(a, lucid_dt, requires_grad=True)
    for out in (getattr(x, red)(dim=dim, keepdim=keepdim),
                getattr(lucid, red)(x, dim=dim, keepdim=keepdim)):
        assert_same_ieee(out, want, f"{red} {shape} dim={dim}")
    # backward: a gradient of the input's (empty) shape, whatever the upstream values
    up = np.full(want.shape, 2.0, np_dt)
    out.backward(_tensor(up, lucid_dt))
    assert x.grad is not None and x.grad.shape == shape and x.grad.dtype == lucid_dt


@pytest.mark.parametrize("dt", sorted(DTYPES))
def test_mean_over_empty_dim_double_backward(dt):
    lucid_dt, np_dt = DTYPES[dt]
    x = _tensor(np.zeros((3, 0), np_dt), lucid_dt, requires_grad=True)
    m = x.mean(dim=1)
    assert_same_ieee(m, np.full(3, np.nan, np_dt))
    (g,) = lucid.autograd.grad(m, x, _tensor(np.ones(3, np_dt), lucid_dt), create_graph=True)
    assert g.shape == (3, 0)
    assert_close(g.sum(), np.zeros((), np_dt), rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# Masking by multiplication.
# Backwards that keep part of a gradient multiplied it by a 0/1 (or 0/0.5/1) mask: where, clamp,
# maximum/minimum, relu, abs, amax/amin/max/min, x[idx] = v and copy_. An inf or NaN upstream
# gradient then became NaN (inf * 0) in positions the forward never picked, poisoning leaves that
# had nothing to do with it. Now every such backward selects through one differentiable helper
# (select_grad): unpicked positions get exactly 0, shared positions (ties) keep their share, and
# create_graph records the same selection, so double backward is right too.
# ---------------------------------------------------------------------------------------------

UPSTREAM_BAD = [INF, -INF, NAN]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("bad", UPSTREAM_BAD)
@pytest.mark.parametrize("cond_shape", [(4,), (2, 4), (1, 4)])
def test_where_unpicked_side_gets_exact_zero(dtype, bad, cond_shape):
    cond_row = np.array([True, False, True, False])
    cond = lucid.tensor(np.broadcast_to(cond_row, cond_shape).copy())
    x = leaf(np.arange(8.0).reshape(2, 4), dtype)
    y = leaf([5.0, 6.0, 7.0, 8.0], dtype)                      # broadcast over rows
    out = lucid.where(cond, x, y)
    up = np.ones(out.shape)
    up[..., 1] = bad                                           # only y was picked at column 1
    up[..., 0] = bad                                           # only x was picked at column 0
    gx, gy = grads_for(out, up, x, y)
    picked = np.broadcast_to(cond_row, out.shape)
    assert_exact(gx, np.where(picked, up, 0.0))
    assert_exact(gy, np.where(picked, 0.0, up).sum(axis=0))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("bad", UPSTREAM_BAD)
@pytest.mark.parametrize("bounds", [(1.0, 3.0), (1.0, None), (None, 3.0)])
def test_clamp_outside_gets_exact_zero(dtype, bad, bounds):
    lo, hi = bounds
    x = leaf([[0.0, 2.0, 4.0], [1.0, 3.0, -5.0]], dtype)
    out = x.clamp(lo, hi)
    v = to_numpy(x)
    inside = np.ones(v.shape, dtype=bool)
    if lo is not None:
        inside &= v >= lo
    if hi is not None:
        inside &= v <= hi
    up = np.where(inside, 2.0, bad)                            # the bad values sit outside
    (gx,) = grads_for(out, up, x)
    assert_exact(gx, np.where(inside, 2.0, 0.0))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("bad", UPSTREAM_BAD)
@pytest.mark.parametrize("fn", [lucid.maximum, lucid.minimum], ids=["maximum", "minimum"])
def test_extremum_loser_gets_exact_zero_and_ties_split(dtype, bad, fn):
    a = leaf([[0.0, 2.0, 5.0], [3.0, 3.0, -1.0]], dtype)
    b = leaf([1.0, 2.0, 4.0], dtype)                            # broadcast; ties at column 1
    out = fn(a, b)
    av, bv = to_numpy(a), np.broadcast_to(to_numpy(b), (2, 3))
    a_wins = av > bv if fn is lucid.maximum else av < bv
    tie = av == bv
    up = np.full(out.shape, bad)
    ga, gb = grads_for(out, up, a, b)
    share_a = np.where(a_wins, 1.0, np.where(tie, 0.5, 0.0))
    share_b = np.where(a_wins, 0.0, np.where(tie, 0.5, 1.0))
    with np.errstate(invalid="ignore"):                        # the reference's own inf * 0
        expect_a = np.where(share_a == 0, 0.0, up * share_a)
        expect_b = np.where(share_b == 0, 0.0, up * share_b).sum(axis=0)
    assert_exact(ga, expect_a)
    assert_exact(gb, expect_b)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("bad", UPSTREAM_BAD)
def test_relu_and_abs_masks(dtype, bad):
    x = leaf([[-2.0, 0.0, 3.0], [0.0, -1.0, 1.5]], dtype)
    v = to_numpy(x)
    up = np.where(v > 0, 1.0, bad)
    (g_relu,) = grads_for(x.relu(), up, x)
    assert_exact(g_relu, np.where(v > 0, 1.0, 0.0))
    up = np.where(v == 0, bad, 1.0)                             # abs: subgradient 0 at x == 0
    (g_abs,) = grads_for(x.abs(), up, x)
    assert_exact(g_abs, np.sign(v))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("bad", [INF, NAN])
@pytest.mark.parametrize("case", ["amax_all", "amin_dim1", "amax_dims_keep", "max_all",
                                  "min_dim0_values"])
def test_extreme_reductions_unpicked_get_exact_zero(dtype, bad, case):
    v = np.array([[[1.0, 7.0, 7.0], [2.0, 0.0, 7.0]],
                  [[4.0, 4.0, -1.0], [4.0, 3.0, 2.0]]])
    x = leaf(v, dtype)
    if case == "amax_all":
        out, hit = x.amax(), v == v.max()
    elif case == "amin_dim1":
        out, hit = x.amin(dim=1), v == v.min(axis=1, keepdims=True)
    elif case == "amax_dims_keep":
        out, hit = x.amax(dim=(0, 2), keepdim=True), v == v.max(axis=(0, 2), keepdims=True)
    elif case == "max_all":
        out, hit = x.max(), v == v.max()
    else:
        out, hit = x.min(dim=0).values, v == v.min(axis=0, keepdims=True)
    up = np.full(out.shape, bad)
    (gx,) = grads_for(out, up, x)
    assert_exact(gx, np.where(hit, bad, 0.0))                 # ties share: inf/k is inf, nan nan


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("bad", UPSTREAM_BAD)
def test_index_put_and_copy_overwritten_get_exact_zero(dtype, bad):
    x = leaf([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype)
    y = x * 1
    y[:, 1] = 0.0
    up = np.ones((2, 3))
    up[:, 1] = bad
    (gx,) = grads_for(y, up, x)
    assert_exact(gx, [[1.0, 0.0, 1.0], [1.0, 0.0, 1.0]])
    z = x * 1
    z.copy_(lucid.ones(3, dtype=dtype))
    (gx,) = grads_for(z, np.full((2, 3), bad), x)
    assert_exact(gx, np.zeros((2, 3)))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", ["where", "clamp", "maximum"])
def test_masks_under_create_graph(dtype, case):
    """The selection is itself recorded: gradients of the gradient stay exact zeros, not NaN."""
    x = leaf([0.1, 2.0, 0.5], dtype)                           # x*x = [0.01, 4, 0.25]
    up = leaf([INF, 1.0, 2.0], dtype)                          # differentiable upstream
    sq = x * x
    out = {"where": lambda: lucid.where(lucid.tensor([False, True, True]), sq, 3.0),
           "clamp": lambda: sq.clamp(0.2, 5.0),
           "maximum": lambda: lucid.maximum(sq, lucid.full((3,), 0.2, dtype=dtype)),
           "relu": lambda: (sq - 0.2).relu()}[case]()          # each leaves out element 0
    (gx,) = grad((out,), (x,), (up,), create_graph=True)
    assert_exact(gx, [0.0, 2 * 2.0 * 1.0, 2 * 0.5 * 2.0])
    gup, gxx = grad((gx.sum(),), (up, x))
    assert_exact(gup, [0.0, 4.0, 1.0])                          # 2x where picked
    assert_exact(gxx, [0.0, 2.0, 4.0])                          # 2*up where picked


@pytest.mark.parametrize("fn", [
    lambda a, b: lucid.where(a > 0.2, a * b, b),
    lambda a, b: lucid.maximum(a, b * 2),
    lambda a, b: (a * b).clamp(-0.5, 0.5),
    lambda a, b: (a * b).abs(),
    lambda a, b: (a * b).amax(dim=1),
], ids=["where", "maximum", "clamp", "abs", "amax"])
def test_guard_masked_backwards_pass_gradgradcheck(fn):
    rng = np.random.default_rng(6)
    a = leaf(rng.standard_normal((3, 4)), lucid.float64)
    b = leaf(rng.standard_normal((3, 4)), lucid.float64)
    assert gradcheck(fn, (a, b))
    assert gradgradcheck(fn, (a, b))


# ---------------------------------------------------------------------------------------------
# pow at 0, and NaN routing in maximum/minimum.
# d(x**0)/dx at x=0 was 0 * 0**-1 = NaN, d(x**y)/dy at x=0 was 0**y * log(0) = NaN for y >= 0,
# and d(0**x)/dx was 0 * log(0) = NaN for x > 0, on the tensor**tensor, tensor**scalar and
# scalar**tensor paths alike. PyTorch defines those as 0 (x**0 is constant; 0**y is flat for
# y >= 0), and so does lucid now, also under create_graph. maximum/minimum with a NaN operand
# sent the gradient to one side only; like PyTorch (no comparison holds), both sides now get it.
# (NumPy warns about 0 ** negative, computed where the forward or the discarded branch needs it.)
# ---------------------------------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:divide by zero encountered in power:RuntimeWarning")
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(3,), (2, 3)])
def test_pow_tensor_tensor_at_zero(dtype, shape):
    xv = np.broadcast_to([0.0, 0.0, 2.0], shape).copy()
    yv = np.broadcast_to([0.0, 2.0, 0.0], shape).copy()
    x, y = leaf(xv, dtype), leaf(yv, dtype)
    gx, gy = grads_for(x ** y, np.ones(shape), x, y)
    assert_exact(gx, np.broadcast_to([0.0, 0.0, 0.0], shape))     # y*x**(y-1): 0, 2*0, 0
    assert_exact(gy, np.broadcast_to([0.0, 0.0, np.log(2.0)], shape))
    up = np.broadcast_to([INF, 1.0, INF], shape)                # x**0 is constant: still 0
    gx, gy = grads_for(x ** y, up, x, y)
    assert_exact(gx, np.zeros(shape))


@pytest.mark.filterwarnings("ignore:divide by zero encountered in power:RuntimeWarning")
@pytest.mark.parametrize("dtype", FLOATS)
def test_pow_tensor_scalar_and_scalar_tensor_at_zero(dtype):
    x = leaf([0.0, 1.5, -2.0], dtype)
    (gx,) = grads_for(x ** 0, np.ones(3), x)
    assert_exact(gx, np.zeros(3))
    (gx,) = grads_for(x ** 0.0, np.full(3, INF), x)
    assert_exact(gx, np.zeros(3))
    e = leaf([0.0, 1.0, 2.5, -1.0], dtype)
    (ge,) = grads_for(0.0 ** e, np.ones(4), e)
    assert_exact(ge, [0.0, 0.0, 0.0, -INF])                     # like PyTorch: -inf for x < 0
    (ge,) = grads_for(2.0 ** e, np.ones(4), e)                  # s > 0 unchanged
    assert_exact(ge, 2.0 ** to_numpy(e) * np.log(2.0))


@pytest.mark.parametrize("dtype", FLOATS)
def test_pow_at_zero_under_create_graph(dtype):
    x = leaf([0.0, 3.0], dtype)
    (gx,) = grad(((x ** 0 + x * x).sum(),), (x,), create_graph=True)
    assert_exact(gx, [0.0, 6.0])
    (gxx,) = grad((gx.sum(),), (x,))
    assert_exact(gxx, [2.0, 2.0])                               # x**0 adds exactly nothing
    xb, y = leaf([0.0, 0.0, 2.0], dtype), leaf([1.0, 2.0, 2.0], dtype)
    (gy,) = grad(((xb ** y).sum(),), (y,), create_graph=True)
    assert_exact(gy, [0.0, 0.0, 4.0 * np.log(2.0)])
    (gyy,) = grad((gy.sum(),), (y,))
    assert_exact(gyy, [0.0, 0.0, 4.0 * np.log(2.0) ** 2])
    e = leaf([0.5, 2.0], dtype)
    (ge,) = grad(((0.0 ** e + e * e).sum(),), (e,), create_graph=True)
    assert_exact(ge, [1.0, 4.0])
    (gee,) = grad((ge.sum(),), (e,))
    assert_exact(gee, [2.0, 2.0])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("fn", [lucid.maximum, lucid.minimum], ids=["maximum", "minimum"])
def test_extremum_nan_operand_sends_gradient_to_both(dtype, fn):
    p = leaf([NAN, 1.0, 2.0, NAN], dtype)
    q = leaf([1.0, NAN, 2.0, NAN], dtype)
    gp, gq = grads_for(fn(p, q), np.ones(4), p, q)
    assert_exact(gp, [1.0, 1.0, 0.5, 1.0])
    assert_exact(gq, [1.0, 1.0, 0.5, 1.0])
    r = leaf([[NAN, 5.0], [0.0, 3.0]], dtype)                   # broadcast against a row
    s = leaf([1.0, NAN], dtype)
    gr, gs = grads_for(fn(r, s), np.ones((2, 2)), r, s)
    assert_exact(gr, [[1.0, 1.0], [0.0 if fn is lucid.maximum else 1.0, 1.0]])
    assert_exact(gs, [1.0 + (1.0 if fn is lucid.maximum else 0.0), 2.0])


@pytest.mark.parametrize("dtype", FLOATS)
def test_amax_nan_extreme_gets_the_gradient(dtype):
    x = leaf([[1.0, NAN, 3.0], [2.0, 5.0, 4.0]], dtype)
    (gx,) = grads_for(x.amax(dim=1), np.ones(2), x)
    assert_exact(gx, [[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
