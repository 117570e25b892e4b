"""sigmoid, softplus and silu at extreme inputs (|x| = 1000, +-inf, NaN): no NumPy warning leaks
from lucid's kernels (exp(-x) overflowing to inf is the right intermediate there), forward or
backward, in float32 and float64, on the small (typed loop) and the large (NumPy) paths; the
values and gradients are PyTorch's."""
import warnings

import numpy as np
import pytest

import lucid

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed (the oracle)")

EXTREMES = [-1000.0, -100.0, -90.0, -720.0, -1.0, 0.0, 1.0, 100.0, 1000.0,
            float("inf"), float("-inf"), float("nan")]
OPS = ["sigmoid", "softplus", "silu"]
DTYPES = ["float32", "float64"]
SIZES = {"small": 1, "large": 400}      # the values repeated: 12 (typed loop) or 4800 (NumPy)


def values(dtype, size):
    return np.tile(np.array(EXTREMES, dtype=dtype), SIZES[size])


def value_and_grad(name, data):
    """lucid's op and its gradient (of the sum) at data, under warnings as errors."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = lucid.tensor(data, requires_grad=True)
        y = getattr(lucid, name)(x)
        y.sum().backward()
        return y.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", OPS)
def test_no_warning_at_extreme_inputs(name, dtype, size):
    y, g = value_and_grad(name, values(dtype, size))
    assert y.dtype == g.dtype == np.dtype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sigmoid_small_and_large_paths_agree(dtype):
    small = lucid.sigmoid(lucid.tensor(values(dtype, "small"))).numpy()
    large = lucid.sigmoid(lucid.tensor(values(dtype, "large"))).numpy()
    # libm's and NumPy's exp may differ in the last bit; the extremes (0, 1, NaN) agree exactly
    np.testing.assert_allclose(np.tile(small, SIZES["large"]), large, atol=0,
                               rtol=4 * np.finfo(dtype).eps)


def test_sigmoid_of_integers_and_strided_input_warns_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ints = lucid.sigmoid(lucid.tensor([-1000, 0, 1000])).numpy()
        strided = lucid.sigmoid(lucid.tensor(values("float64", "small"))[::2]).numpy()
    np.testing.assert_array_equal(ints, [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(strided, lucid.sigmoid(
        lucid.tensor(values("float64", "small")[::2].copy())).numpy())


@needs_torch
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", OPS)
def test_extreme_values_and_gradients_are_pytorchs(name, dtype, size):
    data = values(dtype, size)
    y, g = value_and_grad(name, data)
    t = torch.tensor(data, requires_grad=True)
    ty = getattr(torch.nn.functional, name)(t)
    (tg,) = torch.autograd.grad(ty.sum(), t)
    # float32 softplus' gradient at -100 is 3.8e-44 in PyTorch (a subnormal), 0 here: atol
    rtol = 1e-6 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=rtol, atol=1e-37)
    np.testing.assert_allclose(g, tg.numpy(), rtol=rtol, atol=1e-37)
