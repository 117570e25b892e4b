"""The typed C loops of lucid/_loops.h (arithmetic, tensor with scalar, the fused tanh/sigmoid
backward, the full sum) and the in-place scalar path that uses them: values against NumPy in
float32 and float64, at lengths around every vector width (the AVX-512, AVX2 and baseline
versions each have a remainder loop), in place and into fresh memory."""
import numpy as np
import pytest

import lucid
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
