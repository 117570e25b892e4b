"""The table ops' typed loops (lucid/kernels/unary_loops.h, Note [Table ops]): forward values
against NumPy's formula of the op, and the fused backward against the op's rule (the
create_graph path, which builds the gradient from lucid's ops), in float32 and float64, at
sizes below and above every op's limit (the typed loop and NumPy), on ordinary values and on
extremes (+-0, +-inf, NaN, large magnitudes); the kinks select (abs, relu, leaky_relu: exactly 0
where not picked, even for an inf gradient); and double backward and forward mode still run the
rule."""
import warnings

import numpy as np
import pytest

import lucid
from lucid.autograd import gradcheck, gradgradcheck
from support.checks import assert_close

try:
    from scipy import special as sp
except ImportError:
    sp = None


def _erfinv(x):
    if sp is None:
        pytest.skip("scipy is not installed (the erfinv oracle)")
    return sp.erfinv(x)


def _erf(x):
    from math import erf
    return np.vectorize(erf, otypes=[np.float64])(x)


def _gelu(x):
    return 0.5 * x * (1 + _erf(x / np.sqrt(2)))


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def _softplus(x):
    return np.where(x > 20, x, np.logaddexp(0, x))


# name: (call, NumPy's formula in float64, domain of the ordinary values)
OPS = {
    "sin": (lucid.sin, np.sin, "signed"), "cos": (lucid.cos, np.cos, "signed"),
    "tan": (lucid.tan, np.tan, "signed"), "asin": (lucid.asin, np.arcsin, "unit"),
    "acos": (lucid.acos, np.arccos, "unit"), "atan": (lucid.atan, np.arctan, "signed"),
    "sinh": (lucid.sinh, np.sinh, "signed"), "cosh": (lucid.cosh, np.cosh, "signed"),
    "log1p": (lucid.log1p, np.log1p, "positive"), "expm1": (lucid.expm1, np.expm1, "signed"),
    "log2": (lucid.log2, np.log2, "positive"), "log10": (lucid.log10, np.log10, "positive"),
    "exp2": (lucid.exp2, np.exp2, "signed"), "rsqrt": (lucid.rsqrt, lambda x: 1 / np.sqrt(x),
                                                       "positive"),
    "reciprocal": (lucid.reciprocal, lambda x: 1 / x, "positive"),
    "erf": (lucid.erf, _erf, "signed"), "erfc": (lucid.erfc, lambda x: 1 - _erf(x), "signed"),
    "erfinv": (lucid.erfinv, _erfinv, "unit"),
    "abs": (lucid.abs, np.abs, "signed"), "relu": (lucid.relu, lambda x: np.maximum(x, 0),
                                                   "signed"),
    "frac": (lucid.frac, lambda x: x - np.trunc(x), "signed"),
    "sign": (lucid.sign, np.sign, "signed"), "floor": (lucid.floor, np.floor, "signed"),
    "ceil": (lucid.ceil, np.ceil, "signed"), "trunc": (lucid.trunc, np.trunc, "signed"),
    "round": (lucid.round, np.round, "signed"),
    "silu": (lucid.silu, lambda x: x / (1 + np.exp(-x)), "signed"),
    "gelu": (lucid.gelu, _gelu, "signed"),
    "gelu_tanh": (lambda x: lucid.gelu(x, approximate="tanh"), _gelu_tanh, "signed"),
    "softplus": (lucid.softplus, _softplus, "signed"),
    "leaky_relu": (lucid.leaky_relu, lambda x: np.where(x > 0, x, 0.01 * x), "signed"),
    "elu": (lucid.elu, lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))), "signed"),
    "lgamma": (lucid.lgamma, None, "positive"), "digamma": (lucid.digamma, None, "positive"),
}
DTYPES = [np.float32, np.float64]
SIZES = [5, 33, 5000]                 # 5000: above every op's limit but the ones typed always
EXTREMES = [0.0, -0.0, 1e-30, -1e-30, 0.5, -0.5, 1.0, -1.0, 3.0, -3.0, 40.0, -40.0, 1e4,
            -1e4, np.inf, -np.inf, np.nan]
TOL = {np.float32: dict(rtol=2e-5, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-14)}


def ordinary(domain, n, dtype):
    rng = np.random.default_rng(n)
    if domain == "positive":
        return rng.uniform(0.2, 3.0, n).astype(dtype)
    if domain == "unit":
        return rng.uniform(-0.95, 0.95, n).astype(dtype)
    return (np.where(rng.random(n) < 0.5, -1, 1) * rng.uniform(0.05, 2.5, n)).astype(dtype)


def grads(call, data, upstream):
    """(the fused backward's gradient, the rule's gradient under create_graph)"""
    out = []
    for create_graph in (False, True):
        x = lucid.tensor(data, requires_grad=True)
        g = lucid.tensor(upstream)
        (gx,) = lucid.autograd.grad(call(x), [x], [g], create_graph=create_graph)
        out.append(gx.detach().numpy())
    return out


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name", OPS)
def test_forward_is_the_formula_and_fused_backward_is_the_rule(name, dtype, n):
    call, formula, domain = OPS[name]
    data = ordinary(domain, n, dtype)
    y = call(lucid.tensor(data))
    assert y.dtype == (lucid.float32 if dtype == np.float32 else lucid.float64)
    if formula is not None:
        want = formula(data.astype(np.float64)).astype(dtype)
        assert_close(y, want, msg=f"{name} n={n}", **TOL[dtype])
    upstream = np.random.default_rng(7).uniform(-2, 2, n).astype(dtype)
    fused, rule = grads(call, data, upstream)
    assert fused.dtype == np.dtype(dtype)
    assert_close(fused, rule, msg=f"{name}' n={n}", **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name", OPS)
def test_extremes_agree_between_the_loops_and_numpy(name, dtype):
    call, _, _ = OPS[name]
    small = np.array(EXTREMES, dtype=dtype)
    large = np.tile(small, 300)                  # 5100 elements: NumPy and the rule, mostly
    ones = np.ones_like(small)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y_small = call(lucid.tensor(small)).numpy()
        y_large = call(lucid.tensor(large)).numpy()[:small.size]
        g_small, g_rule = grads(call, small, ones)
        g_large = grads(call, large, np.ones_like(large))[0][:small.size]
    assert_close(y_small, y_large, msg=name, **TOL[dtype])
    assert_close(g_small, g_large, msg=f"{name}'", **TOL[dtype])
    assert_close(g_small, g_rule, msg=f"{name}' rule", **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name,call", [("abs", lucid.abs), ("relu", lucid.relu),
                                       ("leaky_relu0",
                                        lambda x: lucid.leaky_relu(x, negative_slope=0.0))])
def test_kinks_select_exactly_zero_for_an_inf_gradient(name, call, dtype):
    data = np.array([0.0, -0.0, -1.0, 2.0, np.nan], dtype=dtype)
    upstream = np.full(5, np.inf, dtype=dtype)
    fused, rule = grads(call, data, upstream)
    want = {"abs": [0, 0, -np.inf, np.inf, np.nan], "relu": [0, 0, 0, np.inf, 0],
            "leaky_relu0": [0, 0, 0, np.inf, 0]}[name]
    assert_close(fused, np.array(want, dtype=dtype), rtol=0, atol=0)
    assert_close(rule, np.array(want, dtype=dtype), rtol=0, atol=0)


@pytest.mark.parametrize("name", ["sin", "tan", "asin", "log2", "rsqrt", "erf", "erfc", "silu",
                                  "gelu", "gelu_tanh", "softplus", "elu", "lgamma", "digamma",
                                  "erfinv"])
def test_double_backward_and_forward_mode_run_the_rule(name):
    call, _, domain = OPS[name]
    x = lucid.tensor(ordinary(domain, 6, np.float64), requires_grad=True)
    assert gradcheck(call, (x,))
    assert gradgradcheck(call, (x,))
    assert gradcheck(call, (x,), check_forward_ad=True, check_backward_ad=False)


def test_polygamma_fused_backward_is_the_rule():
    data = ordinary("positive", 9, np.float64)
    for n in (1, 2, 3):
        fused, rule = grads(lambda x: lucid.polygamma(n, x), data, np.ones(9))
        assert_close(fused, rule, rtol=1e-12, atol=0)
    x = lucid.tensor(data[:4], requires_grad=True)
    assert gradgradcheck(lambda t: lucid.polygamma(1, t), (x,))


def test_a_strided_or_integer_input_takes_numpys_path():
    base = lucid.tensor(np.linspace(-2, 2, 20, dtype=np.float32))
    assert_close(lucid.sin(base[::2]), np.sin(base.numpy()[::2]), rtol=1e-6, atol=1e-7)
    ints = lucid.tensor([1, 2, 3])
    assert lucid.sin(ints).dtype == lucid.float32
    assert lucid.abs(lucid.tensor([-1, 2])).tolist() == [1, 2]
    assert lucid.floor(ints).tolist() == [1, 2, 3]
