"""The elementwise ops of API.md section 8 beyond their table rows (tests/support/op_rows_elementwise.py;
values, gradients, second derivatives, tangents and layouts of every row are checked by the
table's loops: tests/ops/test_gradcheck.py, tests/forward/test_forward_ad.py): what a Jacobian check
cannot see: the step functions' zero gradients, accuracy near 0 and for large inputs, kinks,
dtypes, and the error paths."""
import math

import numpy as np
import pytest

import lucid
from support.checks import assert_close, f64, to_numpy
from lucid.autograd import forward_ad as fwAD
from support.op_rows_elementwise import np_erf


# -- step functions: a grad_fn, a zero gradient, a zero tangent ---------------------------------

STEPS = [("sign", np.sign), ("floor", np.floor), ("ceil", np.ceil), ("round", np.round),
         ("trunc", np.trunc)]


@pytest.mark.parametrize("name,ref", STEPS, ids=[s[0] for s in STEPS])
def test_step_function_values_and_zero_gradient(name, ref):
    values = np.array([-2.5, -1.5, -0.5, -0.2, 0.0, 0.5, 1.5, 2.5, 3.7])
    x = f64(values, requires_grad=True)
    for y in (getattr(lucid, name)(x), getattr(x, name)()):
        assert_close(y, ref(values), rtol=0, atol=0)
        assert y.grad_fn is not None and y.grad_fn.name() == name.capitalize() + "Backward"
    (g,) = lucid.autograd.grad(y.sum(), x, create_graph=True)
    assert np.array_equal(to_numpy(g), np.zeros(9)) and g.dtype == lucid.float64
    x.grad = None
    (y * 3.0).sum().backward(gradient=f64(np.inf))      # inf upstream: still exact zeros
    assert np.array_equal(to_numpy(x.grad), np.zeros(9))
    with fwAD.dual_level():
        d = fwAD.make_dual(f64(values), f64(np.ones(9)))
        tangent = fwAD.unpack_dual(getattr(lucid, name)(d)).tangent
    assert tangent is not None and np.array_equal(to_numpy(tangent), np.zeros(9))


def test_step_functions_keep_integer_dtypes_and_torch_conventions():
    ints = lucid.tensor([-3, 0, 4])
    for name in ("floor", "ceil", "round", "trunc", "sign"):
        y = getattr(lucid, name)(ints)
        assert y.dtype == lucid.int64 and y.grad_fn is None
    assert lucid.sign(ints).tolist() == [-1, 0, 1]
    assert lucid.floor(ints).tolist() == [-3, 0, 4]
    assert lucid.sign(f64([np.nan, -0.0, -np.inf])).tolist() == [0.0, 0.0, -1.0]   # NaN -> 0
    assert lucid.round(f64([0.5, 1.5, 2.5, -0.5])).tolist() == [0.0, 2.0, 2.0, -0.0]
    assert_close(lucid.round(f64([1.2345, -2.5551]), decimals=2), [1.23, -2.56], rtol=0, atol=1e-15)
    assert lucid.round(lucid.tensor([1234, -1251]), decimals=-2).tolist() == [1200, -1300]


# -- accuracy and stability ----------------------------------------------------------------------

def test_log1p_expm1_accurate_near_zero():
    tiny = np.array([1e-300, -1e-17, 1e-10, -3e-8])
    series_log1p = tiny - tiny ** 2 / 2 + tiny ** 3 / 3        # exact to double precision here
    series_expm1 = tiny + tiny ** 2 / 2 + tiny ** 3 / 6
    assert_close(lucid.log1p(f64(tiny)), series_log1p, rtol=5e-16, atol=0)
    assert_close(lucid.expm1(f64(tiny)), series_expm1, rtol=5e-16, atol=0)
    assert np.log(1.0 + tiny[2]) != series_log1p[2]            # the naive forms lose digits


def test_erf_matches_the_c_library_to_an_ulp():
    xs = np.concatenate([np.linspace(-6.5, 6.5, 20001), [0.0, 1e-300, -1e-12, 30.0, -30.0]])
    got = to_numpy(lucid.erf(f64(xs)))
    assert np.max(np.abs(got - np_erf(xs)) / np.maximum(np.abs(np_erf(xs)), 1e-300)) <= 2.3e-16
    special = to_numpy(lucid.erf(f64([np.inf, -np.inf, np.nan])))
    assert special[0] == 1.0 and special[1] == -1.0 and np.isnan(special[2])
    assert lucid.erf(lucid.tensor([1.0])).dtype == lucid.float32
    assert lucid.erf(lucid.tensor([1, 2])).dtype == lucid.float32          # ints -> float32


def test_softplus_linear_above_threshold_and_stable_for_large_inputs():
    x = f64([-1000.0, -40.0, 0.0, 19.0, 20.0, 21.0, 1000.0], requires_grad=True)
    y = lucid.softplus(x)
    v = to_numpy(y)
    assert np.all(np.isfinite(v)) and v[0] == 0.0 and v[-1] == 1000.0 and v[5] == 21.0
    assert_close(v[1], math.exp(-40.0), rtol=1e-14)                         # no underflow to 0
    assert_close(v[2], math.log(2.0), rtol=1e-15)
    y.sum().backward()
    g = to_numpy(x.grad)
    assert np.all(np.isfinite(g)) and g[0] == 0.0 and g[5] == 1.0 and g[-1] == 1.0
    v32 = lucid.softplus(lucid.tensor([100.0, -100.0])).tolist()                    # float32
    assert v32[0] == 100.0 and 0.0 <= v32[1] < 1e-40
    x2 = f64([3.0])                           # beta*x = 6 > threshold 5: linear, exactly x
    assert lucid.softplus(x2, beta=2, threshold=5).item() == 3.0


@pytest.mark.parametrize("name", ["silu", "gelu", "elu", "leaky_relu", "softplus", "erf",
                                  "atan", "expm1"])
def test_large_inputs_give_finite_first_and_second_derivatives(name):
    x = f64([-800.0, -30.0, 30.0, 800.0], requires_grad=True)
    fn = getattr(lucid, name)
    y = fn(x)
    (g,) = lucid.autograd.grad(y.sum(), x, create_graph=True)
    if name != "expm1":                       # expm1(800) is inf, and so is its slope
        assert np.all(np.isfinite(to_numpy(y))) and np.all(np.isfinite(to_numpy(g)))
        if g.requires_grad:                   # leaky_relu's slope is piecewise constant
            (gg,) = lucid.autograd.grad(g.sum(), x)
            assert np.all(np.isfinite(to_numpy(gg))), to_numpy(gg)


def test_kinks_follow_pytorch():
    x = f64([0.0], requires_grad=True)
    lucid.leaky_relu(x, 0.2).backward()
    assert x.grad.item() == 0.2               # x > 0 is the linear side; 0 is not
    x.grad = None
    lucid.elu(x, alpha=2.0).backward()
    assert x.grad.item() == 2.0
    z = f64([-1.0, 2.0], requires_grad=True)
    lucid.leaky_relu(z, 0.0).backward(gradient=f64([np.inf, 1.0]))
    assert to_numpy(z.grad).tolist() == [0.0, 1.0]      # a selection, never inf * 0 = NaN


def test_atan2_quadrants_broadcasting_and_dtypes():
    y = f64([[1.0], [-1.0]])
    x = f64([-1.0, 0.0, 1.0])
    assert_close(lucid.atan2(y, x), np.arctan2([[1.0], [-1.0]], [-1.0, 0.0, 1.0]), rtol=0, atol=0)
    assert lucid.atan2(lucid.tensor([1, 0]), lucid.tensor([0, 1])).dtype == lucid.float32
    assert lucid.atan2(f64([0.0]), 0.0).item() == 0.0
    a = f64(np.ones((2, 3)), requires_grad=True)
    b = f64(np.full((3,), 2.0), requires_grad=True)
    lucid.atan2(a, b).sum().backward()
    assert a.grad.shape == (2, 3) and b.grad.shape == (3,)
    assert_close(b.grad, np.full(3, 2 * -1.0 / 5.0), rtol=1e-15)


def test_float32_results_keep_float32_gradients():
    x = lucid.tensor([0.3, -0.7, 1.1], requires_grad=True)
    for name in ("log1p", "expm1", "rsqrt", "silu", "gelu", "softplus", "elu", "erf", "sign"):
        x.grad = None
        getattr(lucid, name)(x.abs() + 0.1 if name == "rsqrt" else x).sum().backward()
        assert x.grad.dtype == lucid.float32, name


# -- error paths ---------------------------------------------------------------------------------

def test_errors_name_the_op_and_modify_nothing():
    x = f64([1.0, -2.0], requires_grad=True)
    before = to_numpy(x)
    cases = [
        (ValueError, "approximate", lambda: lucid.gelu(x, approximate="erf")),
        (TypeError, "beta", lambda: lucid.softplus(x, beta="2")),
        (ValueError, "beta", lambda: lucid.softplus(x, beta=0)),
        (TypeError, "negative_slope", lambda: lucid.leaky_relu(x, negative_slope=None)),
        (TypeError, "alpha", lambda: lucid.elu(x, alpha=[1.0])),
        (TypeError, "floating point", lambda: lucid.silu(lucid.tensor([1, 2])) * 0 +
         lucid.elu(lucid.tensor([1, 2]))),
        (RuntimeError, r"atan2: shapes \(2,\) and \(3,\)", lambda: lucid.atan2(x, f64([1.0] * 3))),
        (TypeError, "decimals", lambda: lucid.round(x, decimals=1.5)),
        (TypeError, "square", lambda: lucid.square(lucid.tensor([True]))),
        (TypeError, "log1p", lambda: lucid.log1p("1")),
    ]
    for exc, pattern, call in cases:
        with pytest.raises(exc, match=pattern):
            call()
    assert np.array_equal(to_numpy(x), before) and x.grad is None and x._version == 0
