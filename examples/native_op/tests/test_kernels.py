"""Both softplus kernels ("single-pass" where the build has vector math, and "numpy"): values,
extremes, special values, gradients, strided / empty inputs and broadcast gradients."""
import numpy as np
import pytest

import lucid
from lucid.autograd import gradcheck
from lucid_softplus import KERNELS, kernel, softplus
from lucid_softplus import _softplus

DTYPES = [np.float32, np.float64]
RTOL = {np.float32: 2e-6, np.float64: 1e-13}


@pytest.fixture(params=KERNELS)
def use_kernel(request):
    before = kernel()
    _softplus._use_kernel(request.param)
    yield request.param
    _softplus._use_kernel(before)


def reference(x):
    return np.logaddexp(0.0, np.asarray(x, dtype=np.float64))


def sigmoid(x):
    x = np.asarray(x, dtype=np.float64)
    return np.exp(-np.logaddexp(0.0, -x))


def grad_of(x0, weights=None):
    x = lucid.from_numpy(np.array(x0)).requires_grad_()
    y = softplus(x)
    (y.sum() if weights is None else (y * lucid.from_numpy(weights)).sum()).backward()
    return y.detach().numpy(), x.grad.numpy()


def test_kernel_names():
    assert kernel() in KERNELS
    assert KERNELS[-1] == "numpy"


def test_unknown_kernel_is_rejected_and_nothing_changes():
    before = kernel()
    with pytest.raises(ValueError, match="kernel must be one of"):
        _softplus._use_kernel("fast")
    assert kernel() == before


@pytest.mark.parametrize("dtype", DTYPES)
def test_values_and_gradients_match_numpy(use_kernel, dtype):
    x0 = (np.random.default_rng(2).standard_normal(1003) * 20).astype(dtype)  # odd: loop tails
    y, g = grad_of(x0)
    assert y.dtype == dtype and g.dtype == dtype
    np.testing.assert_allclose(y, reference(x0), rtol=RTOL[dtype], atol=0)
    np.testing.assert_allclose(g, sigmoid(x0), rtol=RTOL[dtype], atol=1e-300)


@pytest.mark.parametrize("dtype", DTYPES)
def test_large_magnitudes_are_stable(use_kernel, dtype):
    y, g = grad_of(np.array([100.0, -100.0, 1e30, -1e30], dtype=dtype))
    assert y[0] == 100.0 and g[0] == 1.0
    assert y[2] == dtype(1e30) and g[2] == 1.0
    assert y[3] == 0.0 and g[3] == 0.0
    tiny = dtype(np.exp(-100.0))                 # 3.7e-44: subnormal in float32
    assert tiny > 0
    for value in (y[1], g[1]):                   # softplus(-100) = sigmoid(-100) = e^-100
        np.testing.assert_allclose(value, tiny, rtol=RTOL[dtype],
                                   atol=2 * np.finfo(dtype).smallest_subnormal)


@pytest.mark.parametrize("dtype", DTYPES)
def test_infinities_and_nan(use_kernel, dtype):
    y, g = grad_of(np.array([np.inf, -np.inf, np.nan, 0.0], dtype=dtype))
    assert y[0] == np.inf and g[0] == 1.0
    assert y[1] == 0.0 and g[1] == 0.0
    assert np.isnan(y[2]) and np.isnan(g[2])
    assert y[3] == dtype(np.log(2.0)) and g[3] == 0.5


@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_input(use_kernel, dtype):
    y, g = grad_of(np.zeros((0, 3), dtype=dtype))
    assert y.shape == (0, 3) and g.shape == (0, 3)


@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_input_and_full_gradient(use_kernel, dtype):
    rng = np.random.default_rng(3)
    base = rng.standard_normal((6, 10)).astype(dtype) * 5
    leaf = lucid.from_numpy(base.copy()).requires_grad_()
    view = leaf[:, ::3].T                                         # non-contiguous, transposed
    assert not view.detach().numpy().flags.c_contiguous
    w = rng.standard_normal(tuple(view.shape)).astype(dtype)      # a gradient that varies
    y = softplus(view)
    (y * lucid.from_numpy(w)).sum().backward()
    expected = np.zeros(base.shape)
    expected[:, ::3] = (w * sigmoid(base[:, ::3].T)).T
    np.testing.assert_allclose(y.detach().numpy(), reference(base[:, ::3].T), rtol=RTOL[dtype])
    np.testing.assert_allclose(leaf.grad.numpy(), expected, rtol=RTOL[dtype], atol=1e-300)


@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast_and_full_gradients_agree(use_kernel, dtype):
    x0 = np.random.default_rng(4).standard_normal(257).astype(dtype)
    _, g_sum = grad_of(x0)                              # the gradient of sum(): one value
    _, g_ones = grad_of(x0, np.ones_like(x0))           # the same gradient as a full array
    _, g_w = grad_of(x0, np.full_like(x0, 2.5))
    np.testing.assert_array_equal(g_sum, g_ones)
    np.testing.assert_allclose(g_w, 2.5 * g_ones, rtol=RTOL[dtype])


def test_gradcheck_float64(use_kernel):
    x = lucid.tensor(np.random.default_rng(5).standard_normal(12) * 4, dtype=lucid.float64,
                     requires_grad=True)
    assert gradcheck(softplus, (x,))


@pytest.mark.skipif(len(KERNELS) < 2, reason="this build has only the numpy kernel")
@pytest.mark.parametrize("dtype", DTYPES)
def test_kernels_agree(dtype):
    x0 = (np.random.default_rng(6).standard_normal(4099) * 30).astype(dtype)
    results = {}
    before = kernel()
    try:
        for name in KERNELS:
            _softplus._use_kernel(name)
            results[name] = grad_of(x0)
    finally:
        _softplus._use_kernel(before)
    (y1, g1), (y2, g2) = results.values()
    np.testing.assert_allclose(y1, y2, rtol=2 * RTOL[dtype])
    np.testing.assert_allclose(g1, g2, rtol=2 * RTOL[dtype])
