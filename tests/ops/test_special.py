"""The float functions and special functions beyond their table rows
(tests/support/op_rows_special.py drives values, gradients, second derivatives, tangents and
layouts): accuracy against SciPy (test-only) over wide ranges, poles and limits as PyTorch 2.13
gives them, gradients at the special points, dtypes, and the error paths."""
import math

import numpy as np
import pytest
import scipy.special as sp

import lucid
from lucid.autograd import forward_ad as fwAD
from support.checks import assert_close, f64, to_numpy

INF, NAN = np.inf, np.nan
RNG = np.random.default_rng(20240611)


def values(fn, *arrays, dtype=lucid.float64):
    return to_numpy(fn(*[lucid.tensor(np.asarray(a, dtype=np.float64), dtype=dtype)
                         for a in arrays]))


def grads(fn, *arrays):
    """The gradients of fn(*arrays).sum() with respect to each array (float64 leaves)."""
    leaves = [f64(a, requires_grad=True) for a in arrays]
    return [to_numpy(g) for g in lucid.autograd.grad(fn(*leaves).sum(), leaves)]


def same(got, want):
    """Equal values, NaN matching NaN and the sign of zero included."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=True), (got, want)
    assert np.array_equal(np.signbit(got[got == 0]), np.signbit(want[want == 0])), (got, want)


def non_poles(x):
    return x[~((x <= 0) & (x == np.floor(x)))]


WIDE = non_poles(np.concatenate([RNG.uniform(-40, 40, 4000), RNG.uniform(0, 3, 2000),
                                 10.0 ** RNG.uniform(-300, 300, 1000),
                                 -(10.0 ** RNG.uniform(-8, 5, 1000))]))


# -- accuracy against SciPy ----------------------------------------------------------------------

def test_lgamma_is_the_c_librarys_over_a_wide_range():
    assert_close(values(lucid.lgamma, WIDE), sp.gammaln(WIDE), rtol=1e-13, atol=1e-12)


def test_digamma_matches_scipy_over_a_wide_range():
    assert_close(values(lucid.digamma, WIDE), sp.digamma(WIDE), rtol=1e-12, atol=1e-12)
    near_root = np.linspace(1.3, 1.6, 301)            # psi's positive root 1.4616...
    assert_close(values(lucid.digamma, near_root), sp.digamma(near_root), rtol=0, atol=2e-15)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 6, 9])
def test_polygamma_matches_scipy_incl_negative_non_integers(n):
    x = non_poles(np.concatenate([RNG.uniform(-20, 20, 3000), 10.0 ** RNG.uniform(-3, 6, 500)]))
    x = x[np.abs(x - np.round(x)) > 1e-3]               # SciPy loses digits right at a pole
    got, want = values(lambda t: lucid.polygamma(n, t), x), sp.polygamma(n, x)
    assert_close(got, want, rtol=1e-11, atol=1e-11 * max(1.0, math.factorial(n)))


def test_erfinv_inverts_erf_to_the_last_bits():
    x = np.concatenate([RNG.uniform(-1, 1, 5000), 1 - 10.0 ** RNG.uniform(-16, 0, 2000),
                        -(1 - 10.0 ** RNG.uniform(-16, 0, 2000)), 10.0 ** RNG.uniform(-308, 0, 500)])
    got = values(lucid.erfinv, x)
    assert_close(got, sp.erfinv(x), rtol=2e-15, atol=0)
    assert np.max(np.abs(sp.erf(got) - x)) <= 4.5e-16
    assert_close(values(lucid.erfinv, [1 - 2.0 ** -53]), [5.863584748755168], rtol=1e-15, atol=0)


def test_erfc_keeps_its_digits_where_erf_is_near_one():
    x = np.concatenate([RNG.uniform(-6, 26, 3000), [0.0, 10.0, 26.0]])    # SciPy flushes
    # erfc's subnormal results (x > 26.2) to 0; the C library keeps them
    assert_close(values(lucid.erfc, x), sp.erfc(x), rtol=1e-13, atol=0)
    assert values(lucid.erfc, [10.0])[0] > 0                  # 1 - erf(10) would be 0


@pytest.mark.parametrize("name", ["lgamma", "digamma", "erfinv", "erfc", "polygamma"])
def test_float32_computes_in_float64_and_rounds_once(name):
    fn = (lambda t: lucid.polygamma(3, t)) if name == "polygamma" else getattr(lucid, name)
    x = (RNG.uniform(-0.99, 0.99, 500) if name == "erfinv" else
         non_poles(RNG.uniform(-10, 10, 500))).astype(np.float32)
    got = fn(lucid.tensor(x))
    assert got.dtype == lucid.float32
    want = to_numpy(fn(lucid.tensor(x.astype(np.float64)))).astype(np.float32)
    same(to_numpy(got), want)


# -- poles, limits and special values (PyTorch 2.13's) -------------------------------------------

POINTS = [0.0, -0.0, -1.0, -2.0, INF, -INF, NAN, 1.0, 2.0]


def test_lgamma_and_digamma_poles_and_limits():
    same(values(lucid.lgamma, POINTS), [INF, INF, INF, INF, INF, INF, NAN, 0.0, 0.0])
    euler = 0.5772156649015329
    same(values(lucid.digamma, POINTS)[:7], [-INF, INF, NAN, NAN, INF, NAN, NAN])
    assert_close(values(lucid.digamma, [1.0, 2.0]), [-euler, 1 - euler], rtol=1e-15, atol=0)
    assert_close(values(lucid.lgamma, [-2.5, -0.5]), sp.gammaln([-2.5, -0.5]), rtol=1e-15, atol=0)


def test_polygamma_poles_limits_and_order_zero():
    same(values(lambda t: lucid.polygamma(1, t), POINTS[:7]), [INF, INF, INF, INF, 0.0, NAN, NAN])
    same(values(lambda t: lucid.polygamma(2, t), POINTS[:7]),
         [-INF, -INF, -INF, -INF, -0.0, NAN, NAN])
    assert_close(values(lambda t: lucid.polygamma(1, t), [1.0]), [math.pi ** 2 / 6], rtol=1e-15,
                 atol=0)
    x = f64([0.3, -2.5, 7.0])
    same(to_numpy(lucid.polygamma(0, x)), to_numpy(lucid.digamma(x)))
    same(to_numpy(x.polygamma(2)), to_numpy(lucid.polygamma(2, x)))


def test_erfinv_ends_and_beyond():
    same(values(lucid.erfinv, [-1.0, 1.0, 1.5, -1.5, 0.0, -0.0, NAN]),
         [-INF, INF, NAN, NAN, 0.0, -0.0, NAN])
    assert lucid.erfinv(lucid.tensor([1, 0])).tolist() == [INF, 0.0]      # ints -> float


def test_sinc_frac_and_the_logarithms_at_their_special_points():
    same(values(lucid.sinc, [0.0, -0.0, INF, NAN]), [1.0, 1.0, NAN, NAN])
    assert_close(values(lucid.sinc, [0.5, 1.0, -2.5]), np.sinc([0.5, 1.0, -2.5]), rtol=1e-15,
                 atol=1e-16)
    same(values(lucid.frac, [-2.5, 2.5, -0.0, -3.0, INF, -INF, NAN]),
         [-0.5, 0.5, 0.0, 0.0, NAN, NAN, NAN])                 # x - trunc(x): +0, as PyTorch
    same(values(lucid.log2, [0.0, 1.0, 8.0, -1.0]), [-INF, 0.0, 3.0, NAN])
    same(values(lucid.log10, [1000.0]), [3.0])
    same(values(lucid.exp2, [-INF, 10.0]), [0.0, 1024.0])


def test_binary_functions_at_their_special_points():
    same(values(lucid.xlogy, [0.0, 0.0, 0.0, 1.0, 0.0, NAN], [0.0, NAN, INF, 0.0, -1.0, 0.0]),
         [0.0, NAN, 0.0, -INF, 0.0, NAN])
    same(values(lucid.logaddexp2, [1.0, INF, -INF, 1000.0], [1.0, INF, -INF, 1000.0]),
         [2.0, INF, -INF, 1001.0])
    same(values(lucid.hypot, [3.0, INF, 1e300], [4.0, NAN, 1e300]), [5.0, INF, math.hypot(1e300, 1e300)])
    same(values(lucid.copysign, [1.0, 1.0, -2.0, 0.0], [-0.0, NAN, 3.0, -1.0]), [-1.0, 1.0, 2.0, -0.0])


def test_fmod_takes_the_sign_of_the_dividend_and_remainder_the_divisors():
    x = [5.0, -5.0, 5.0, -5.0, -3.0, 3.0, -0.0, 5.0, -5.0, 5.0]
    y = [3.0, 3.0, -3.0, -3.0, 3.0, -3.0, 3.0, 0.0, INF, -INF]
    with np.errstate(invalid="ignore"):
        same(values(lucid.fmod, x, y), np.fmod(x, y))
    same(values(lucid.remainder, x, y),
         [2.0, 1.0, -1.0, -2.0, -0.0, 0.0, -0.0, NAN, INF, -INF])         # PyTorch's zeros' signs
    ints = lucid.tensor([5, -5, 7])
    assert lucid.fmod(ints, 3).tolist() == [2, -2, 1]
    assert lucid.remainder(ints, 3).tolist() == [2, 1, 1]
    assert lucid.remainder(ints, -3).tolist() == [-1, -2, -2]
    assert lucid.remainder(7, lucid.tensor([-3, 3])).tolist() == [-2, 1]
    assert ints.fmod(lucid.tensor([2, 3, 4])).tolist() == [1, -2, 3]


def test_nan_to_num_replaces_by_the_dtypes_extremes_or_the_values_given():
    x = [NAN, INF, -INF, 1.5]
    f32 = np.finfo(np.float32)
    same(values(lucid.nan_to_num, x, dtype=lucid.float32), [0.0, f32.max, f32.min, 1.5])
    same(values(lucid.nan_to_num, x), [0.0, np.finfo(np.float64).max, np.finfo(np.float64).min, 1.5])
    same(to_numpy(f64(x).nan_to_num(1.0, posinf=2.0, neginf=-3.0)), [1.0, 2.0, -3.0, 1.5])
    same(to_numpy(lucid.nan_to_num(f64(x), nan=None, posinf=1)), [0.0, 1.0, np.finfo(np.float64).min, 1.5])
    same(to_numpy(lucid.nan_to_num(lucid.tensor(x), posinf=1e300)), [0.0, INF, f32.min, 1.5])
    ints = lucid.tensor([1, -2])
    out = lucid.nan_to_num(ints, nan=1.5)
    assert out.dtype == lucid.int64 and out.tolist() == [1, -2]
    assert not np.shares_memory(out.numpy(), ints.numpy())


# -- gradients at the special points (as PyTorch's) ----------------------------------------------

def test_sinc_gradient_is_zero_at_zero_and_accurate_near_it():
    (g,) = grads(lucid.sinc, [0.0, 0.5, -1.0])
    assert g[0] == 0.0
    assert_close(g[1:], [-4 / math.pi, 1.0], rtol=1e-14, atol=1e-15)    # (cos(pi x) - sinc x)/x
    x = np.array([1e-9, -3e-5, 0.0099, 0.0101, -0.2])
    z = (np.pi * x) ** 2                                       # the series, to 1e-16 below 0.02
    series = np.pi ** 2 * x * (-1 / 3 + z / 30 - z ** 2 / 840 + z ** 3 / 45360 - z ** 4 / 3991680)
    quotient = (np.cos(np.pi * x) - np.sinc(x)) / x
    want = np.where(np.abs(x) < 0.02, series, quotient)
    assert_close(grads(lucid.sinc, x)[0], want, rtol=1e-12, atol=0)
    t = f64([0.0, 1e-3, 0.5], requires_grad=True)              # the second derivative at 0
    (g1,) = lucid.autograd.grad(lucid.sinc(t).sum(), t, create_graph=True)
    (g2,) = lucid.autograd.grad(g1.sum(), t)
    assert_close(g2[:1], [-np.pi ** 2 / 3], rtol=1e-15, atol=0)
    assert np.all(np.isfinite(to_numpy(g2)))


def test_xlogy_gradients_follow_pytorch_at_zero():
    gx, gy = grads(lucid.xlogy, [0.0, 0.0, 0.0, 1.0, 0.0], [0.0, NAN, 2.0, 0.0, -1.0])
    same(gx, [0.0, NAN, math.log(2.0), -INF, 0.0])
    same(gy, [NAN, NAN, 0.0, INF, -0.0])


def test_remainder_gradients_follow_pytorch():
    x, y = [5.0, -5.0, 5.0, 1.0], [3.0, 3.0, 0.0, INF]
    gx, gy = grads(lucid.fmod, x, y)
    same(gx, [1.0, 1.0, 1.0, 1.0])
    same(gy, [-1.0, 1.0, -INF, -0.0])                       # -trunc(x/y)
    gx, gy = grads(lucid.remainder, x, y)
    same(gx, [1.0, 1.0, 1.0, 1.0])
    same(gy, [-1.0, 2.0, -INF, -0.0])                       # -floor(x/y)


def test_copysign_gradient_is_the_sign_agreement_and_zero_at_zero():
    gx, gy = grads(lucid.copysign, [1.0, -1.0, 0.0, -0.0, 2.0, 2.0], [1.0, 1.0, -1.0, 1.0, -0.0, NAN])
    same(gx, [1.0, -1.0, 0.0, 0.0, -1.0, 1.0])
    same(gy, np.zeros(6))
    x = f64([2.0, -3.0], requires_grad=True)
    lucid.copysign(x, -1.0).backward(gradient=f64([INF, 1.0]))
    same(to_numpy(x.grad), [-INF, 1.0])


def test_nan_to_num_gradient_passes_where_finite_only():
    x = f64([NAN, INF, -INF, 1.0], requires_grad=True)
    lucid.nan_to_num(x).backward(gradient=f64([INF, NAN, 1.0, 2.0]))
    same(to_numpy(x.grad), [0.0, 0.0, 0.0, 2.0])            # a selection: no NaN leaks


def test_gradients_at_poles_and_ends():
    same(grads(lucid.lgamma, [0.0, -1.0])[0], [-INF, NAN])           # digamma there
    same(grads(lucid.erfinv, [1.0, -1.0, 2.0])[0], [INF, INF, NAN])  # sqrt(pi)/2 exp(y^2)
    same(grads(lucid.frac, [2.5, INF, NAN])[0], [1.0, 1.0, 1.0])
    same(grads(lucid.hypot, [0.0, 3.0], [0.0, 4.0])[0], [NAN, 0.6])
    assert_close(grads(lucid.erfc, [0.0, 1.0])[0], -2 / math.sqrt(math.pi) * np.exp([0.0, -1.0]),
                 rtol=1e-15, atol=0)


def test_derivative_chain_lgamma_digamma_polygamma():
    x = f64([0.7, 3.2], requires_grad=True)
    (g1,) = lucid.autograd.grad(lucid.lgamma(x).sum(), x, create_graph=True)
    (g2,) = lucid.autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = lucid.autograd.grad(g2.sum(), x)
    assert_close(g1, sp.digamma([0.7, 3.2]), rtol=1e-14, atol=0)
    assert_close(g2, sp.polygamma(1, [0.7, 3.2]), rtol=1e-14, atol=0)
    assert_close(g3, sp.polygamma(2, [0.7, 3.2]), rtol=1e-13, atol=0)
    with fwAD.dual_level():
        d = fwAD.make_dual(f64([0.7, 3.2]), f64([1.0, 2.0]))
        t = fwAD.unpack_dual(lucid.polygamma(3, d)).tangent
    assert_close(t, sp.polygamma(4, [0.7, 3.2]) * [1.0, 2.0], rtol=1e-13, atol=0)
    assert lucid.polygamma(3, x).grad_fn.name() == "PolygammaBackward"


# -- dtypes -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["log2", "log10", "exp2", "erfc", "sinc", "lgamma", "digamma",
                                  "erfinv"])
def test_unary_functions_compute_integers_in_the_default_float_dtype(name):
    fn = getattr(lucid, name)
    ints = lucid.tensor([1, 0])
    assert fn(ints).dtype == lucid.float32
    assert fn(lucid.tensor([True, False])).dtype == lucid.float32
    same(to_numpy(fn(ints)), to_numpy(fn(lucid.tensor([1.0, 0.0]))))


def test_binary_functions_dtypes_as_pytorch():
    ints, floats = lucid.tensor([4, 9]), lucid.tensor([2.0, 3.0])
    assert lucid.xlogy(ints, ints).dtype == lucid.float32
    assert lucid.copysign(ints, -1).dtype == lucid.float32
    assert lucid.copysign(ints, -1).tolist() == [-4.0, -9.0]
    assert lucid.fmod(ints, ints).dtype == lucid.int64
    assert lucid.fmod(ints, 2.5).dtype == lucid.float32 and lucid.fmod(ints, 2.5).tolist() == [1.5, 1.5]
    assert lucid.remainder(lucid.tensor([True, False]), 2).dtype == lucid.int64
    assert lucid.hypot(ints, floats).dtype == lucid.float32
    assert lucid.fmod(f64([5.0]), lucid.tensor([3.0])).dtype == lucid.float64


# -- errors: the op and the argument named, nothing modified --------------------------------------

@pytest.mark.parametrize("call, match", [
    (lambda i: lucid.frac(i), "frac"),
    (lambda i: lucid.logaddexp2(i, i), "logaddexp2"),
    (lambda i: lucid.hypot(i, i), "hypot"),
    (lambda i: i.hypot(i), "hypot"),
    (lambda i: lucid.fmod(i > 0, i > 0), "fmod: not implemented for bool"),
    (lambda i: lucid.remainder(i > 0, True), "remainder: not implemented for bool"),
    (lambda i: lucid.fmod(i, 0), "fmod: ZeroDivisionError"),
    (lambda i: lucid.remainder(i, lucid.tensor([1, 0])), "remainder: ZeroDivisionError"),
    (lambda i: lucid.polygamma(-1, i), "polygamma: n must be a non-negative"),
])
def test_refused_dtypes_and_values_raise_runtime_errors(call, match):
    i = lucid.tensor([3, 4])
    with pytest.raises(RuntimeError, match=match):
        call(i)
    assert i.tolist() == [3, 4]


@pytest.mark.parametrize("call, match", [
    (lambda x: lucid.polygamma(1.5, x), "polygamma: argument 'n' must be an int"),
    (lambda x: lucid.polygamma(True, x), "polygamma: argument 'n' must be an int"),
    (lambda x: lucid.polygamma(1, "x"), "polygamma"),
    (lambda x: x.polygamma(None), "polygamma: argument 'n'"),
    (lambda x: lucid.nan_to_num(x, nan="a"), "nan_to_num: argument 'nan' must be a number"),
    (lambda x: lucid.nan_to_num(x, posinf=[1.0]), "nan_to_num: argument 'posinf'"),
    (lambda x: lucid.nan_to_num(lucid.tensor([1]), neginf="a"), "nan_to_num: argument 'neginf'"),
    (lambda x: lucid.xlogy(x, "a"), "xlogy"),
    (lambda x: lucid.fmod(None, x), "fmod"),
    (lambda x: lucid.lgamma([1.0, 2.0]), "lgamma"),
    (lambda x: lucid.erfinv(x, 1.0), None),                       # Python's own arity error
    (lambda x: lucid.nan_to_num(x, nans=1.0), "nans"),           # Python's own keyword error
])
def test_bad_arguments_raise_type_errors(call, match):
    x = f64([0.5, 1.5], requires_grad=True)
    with pytest.raises(TypeError, match=match):
        call(x)
    assert x.tolist() == [0.5, 1.5] and x.grad is None


def test_mismatched_shapes_name_the_op():
    for fn in (lucid.fmod, lucid.remainder, lucid.xlogy, lucid.copysign, lucid.hypot,
               lucid.logaddexp2):
        with pytest.raises(RuntimeError, match=fn.__name__ + ": shapes"):
            fn(f64([1.0, 2.0, 3.0]), f64([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="fmod: shapes"):
        lucid.fmod(lucid.tensor([1, 2, 3]), lucid.tensor([1, 2]))
