"""The typed C loops of lucid/kernels/loops.h (arithmetic, tensor with scalar, the fused tanh/sigmoid
backward, the full sum) and the in-place scalar path that uses them: values against NumPy in
float32 and float64, at lengths around every vector width (the AVX-512, AVX2 and baseline
versions each have a remainder loop), in place and into fresh memory; and the square's backward,
which runs as two typed passes when it can and gives the general formula's values."""
import numpy as np
import pytest

import lucid
from lucid.autograd import gradcheck, gradgradcheck
from support.checks import assert_close

LENGTHS = [0, 1, 3, 7, 8, 15, 16, 17, 31, 33, 64, 1000, 2049, 4099]
DTYPES = [np.float32, np.float64]
SCALAR_OPS = [
    ("add_", lambda t, s: t.add_(s), np.add),
    ("sub_", lambda t, s: t.sub_(s), np.subtract),
    ("mul_", lambda t, s: t.mul_(s), np.multiply),
    ("div_", lambda t, s: t.div_(s), np.true_divide),
]


def _data(n, dtype, seed=0):
    return np.random.default_rng(seed).uniform(0.5, 2.0, n).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("name,op,ref", SCALAR_OPS, ids=[o[0] for o in SCALAR_OPS])
@pytest.mark.parametrize("scalar", [1.5, 3, "0-d float64", "0-d int64", "0-d bool"])
def test_inplace_scalar_matches_numpy_in_own_dtype(name, op, ref, dtype, n, scalar):
    a = _data(n, dtype)
    value = {"0-d float64": lucid.tensor(1.5, dtype=lucid.float64),
             "0-d int64": lucid.tensor(3),
             "0-d bool": lucid.tensor(True)}.get(scalar, scalar)
    s = {"0-d float64": 1.5, "0-d int64": 3, "0-d bool": 1}.get(scalar, scalar)
    t = lucid.from_numpy(a.copy())
    v0 = t._version
    assert op(t, value) is t
    assert t.dtype == lucid.float32 if dtype == np.float32 else t.dtype == lucid.float64
    want = ref(a, dtype(s))                        # a 0-d value acts as a scalar of t's dtype
    assert_close(t, want, rtol=0, atol=0, msg=f"{name} {scalar} n={n}")
    assert t._version == v0 + 1


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_inplace_scalar_on_strided_view_writes_only_the_view(dtype):
    base = lucid.from_numpy(_data(20, dtype))
    before = base.numpy().copy()
    base[::2].mul_(lucid.tensor(2.0, dtype=lucid.float64))
    want = before.copy()
    want[::2] *= 2
    assert_close(base, want, rtol=0, atol=0)


def test_inplace_scalar_into_int_tensor_keeps_numpy_rules():
    t = lucid.tensor([1, 2, 3])
    t.mul_(2)
    assert t.tolist() == [2, 4, 6]
    with pytest.raises((TypeError, RuntimeError)):
        t.mul_(1.5)                                # int64 can't hold the product
    assert t.tolist() == [2, 4, 6]


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("op,ref", [(lambda x, y: x + y, np.add), (lambda x, y: x - y, np.subtract),
                                    (lambda x, y: x * y, np.multiply),
                                    (lambda x, y: x / y, np.true_divide)],
                         ids=["add", "sub", "mul", "div"])
def test_binary_loops_match_numpy(op, ref, dtype, n):
    a, b = _data(n, dtype, 1), _data(n, dtype, 2)
    out = op(lucid.from_numpy(a), lucid.from_numpy(b))
    assert_close(out, ref(a, b), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("op", ["tanh", "sigmoid"])
def test_fused_backward_loops_match_the_formula(op, dtype, n):
    x = np.random.default_rng(3).standard_normal(n).astype(dtype)
    g = np.random.default_rng(4).standard_normal(n).astype(dtype)
    t = lucid.from_numpy(x.copy()).requires_grad_()
    y = getattr(t, op)()
    y.backward(lucid.from_numpy(g.copy()))
    yv = y.detach().numpy().astype(np.float64)
    want = g * (1 - yv * yv) if op == "tanh" else g * yv * (1 - yv)
    tol = 2e-6 if dtype == np.float32 else 1e-14
    assert t.grad.dtype == y.dtype
    assert_close(t.grad, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("n", LENGTHS)
def test_full_sum_is_the_float64_sum(dtype, n):
    a = np.random.default_rng(5).standard_normal(n).astype(dtype)
    got = lucid.from_numpy(a).sum()
    want = np.sum(a.astype(np.float64))
    assert got.dtype == (lucid.float32 if dtype == np.float32 else lucid.float64)
    assert abs(float(got) - want) <= (1e-6 if dtype == np.float32 else 1e-12) * max(1.0, abs(want))


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("offset", range(8))
def test_fused_loop_bits_do_not_depend_on_alignment(dtype, offset):
    """Every element of a typed loop is rounded the same way, whether the vector body, its scalar
    head or its tail computes it (no contracted multiply-add): g*(1 - y*y) of a view starting
    at any element offset equals NumPy's three separately rounded operations bit for bit."""
    n = 37
    base_g = np.random.default_rng(7).standard_normal(n + 8).astype(dtype)
    base_y = np.tanh(np.random.default_rng(8).standard_normal(n + 8)).astype(dtype)
    g, y = base_g[offset:offset + n], base_y[offset:offset + n]
    got = lucid._core.tanh_backward(lucid.from_numpy(g), lucid.from_numpy(y)).numpy()
    want = g * (dtype(1) - y * y)
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------------------------
# the gradient of x ** 2 without grad recording runs as g*(x*2) in two typed passes (one buffer);
# with create_graph, under forward AD, for other powers or for layouts the typed loops do not take
# (a strided gradient), the general formula g*2*x**1 runs. Both give the same values.
# ---------------------------------------------------------------------------------------------

def _normal(shape, dtype, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("strided_grad", [False, True], ids=["typed", "general"])
@pytest.mark.parametrize("shape", [(64, 10), (7,), (), (0, 3)])
def test_square_gradient_equals_g_times_twice_x(shape, dtype, strided_grad):
    a, g = _normal(shape, dtype, 0), _normal(shape, dtype, 1)
    x = lucid.tensor(a, requires_grad=True)
    y = x ** 2
    if strided_grad and shape:
        y.backward(lucid.from_numpy(np.repeat(g[..., None], 2, axis=-1))[..., 0])
    else:
        y.backward(lucid.from_numpy(g.copy()))
    assert x.grad.numpy().dtype == dtype
    assert_close(x.grad, g * (a * dtype(2)), rtol=0, atol=0)
    assert np.array_equal(x.detach().numpy(), a)


def test_square_gradient_keeps_infinities_of_twice_x():
    x = lucid.tensor([1e308, -1e308, 3.0], dtype=lucid.float64, requires_grad=True)
    with np.errstate(over="ignore"):                       # x ** 2 overflows, as in NumPy
        (x ** 2).backward(lucid.tensor([1e-10, 1e-10, 1.0], dtype=lucid.float64))
    assert_close(x.grad, [np.inf, -np.inf, 6.0], rtol=0, atol=0)   # g*(2x), not (g*x)*2


def test_square_gradcheck_gradgradcheck_and_create_graph():
    x = lucid.tensor(_normal((3, 4), np.float64, 2), requires_grad=True)
    fn = lambda x: (x ** 2) * 1.5
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))
    assert gradcheck(fn, (x,), check_forward_ad=True)
    (g,) = lucid.autograd.grad((x ** 2).sum(), x, create_graph=True)
    assert g.requires_grad
    (gg,) = lucid.autograd.grad(g.sum(), x)
    assert_close(gg, np.full((3, 4), 2.0), rtol=0, atol=0)


def test_mse_gradient_matches_the_hand_written_one():
    out0, t0 = _normal((64, 10), np.float32, 3), _normal((64, 10), np.float32, 4)
    out = lucid.tensor(out0, requires_grad=True)
    ((out - lucid.tensor(t0)) ** 2).mean().backward()
    assert_close(out.grad, (out0 - t0) * np.float32(2.0 / out0.size), rtol=1e-6, atol=1e-8)
