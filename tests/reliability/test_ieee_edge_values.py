"""IEEE edge values give what NumPy gives, in every build (LUCID_DEBUG=1 included).

Division by zero, 0/0, infinities, NaN and empty reductions: the same inf / NaN in the same places
(and the same signs), through the typed loops (small contiguous arrays), NumPy's kernels (large or
strided arrays) and the backward formulas.
"""
import warnings

import numpy as np
import pytest

import lucid
from support.checks import assert_close

# lucid's NumPy paths warn like NumPy does on these values; the values are what is checked here
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DTYPES = {"float32": (lucid.float32, np.float32), "float64": (lucid.float64, np.float64)}
NUM = [1.0, -2.0, 0.0, -0.0, np.inf, -np.inf, np.nan, 3.0, 0.0, np.inf, 5.0, -1.0]
DEN = [0.0, 0.0, 0.0, 0.0, 0.0, -0.0, 1.0, -0.0, -0.0, np.inf, np.inf, -np.inf]
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
