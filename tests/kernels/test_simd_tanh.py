"""lucid's own float32 tanh kernel (lucid/kernels/simd.h) against float64 tanh, value by value."""
import numpy as np
import pytest

import lucid


def ulps(got, ref):
    """|got - ref| in units of the float32 spacing at ref."""
    ref32 = ref.astype(np.float32)
    spacing = np.spacing(np.abs(ref32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - ref) / spacing


@pytest.mark.parametrize("lo, hi", [(-12.0, 12.0), (-0.7, 0.7), (-1e-3, 1e-3), (0.6, 0.65)])
def test_dense_sweep_within_two_ulps(lo, hi):
    x = np.linspace(lo, hi, 1_000_003).astype(np.float32)
    got = lucid.from_numpy(x).tanh().numpy()
    assert ulps(got, np.tanh(x.astype(np.float64))).max() <= 2.0


def test_every_float32_exponent():
    x = np.array([s * m * 2.0 ** e for e in range(-126, 5) for m in (1.0, 1.37, 1.999)
                  for s in (1, -1)], dtype=np.float32)
    got = lucid.from_numpy(x).tanh().numpy()
    assert ulps(got, np.tanh(x.astype(np.float64))).max() <= 2.0


def test_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e30, 10.0, 9.9999],
                 dtype=np.float32)
    got = lucid.from_numpy(x).tanh().numpy()
    np.testing.assert_array_equal(np.signbit(got[:2]), [False, True])
    np.testing.assert_array_equal(got[2:4], [1.0, -1.0])
    assert np.isnan(got[4])
    np.testing.assert_array_equal(got[5:7], [1.0, -1.0])
    np.testing.assert_allclose(got[7:], np.tanh(x[7:].astype(np.float64)), rtol=1e-7)


@pytest.mark.parametrize("n", [1, 3, 7, 8, 9, 31, 1000])
def test_lengths_around_vector_width(n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32) * 3
    got = lucid.from_numpy(x).tanh().numpy()
    assert ulps(got, np.tanh(x.astype(np.float64))).max() <= 2.0


def test_gradient_uses_the_same_values():
    x = lucid.from_numpy(np.linspace(-3, 3, 101).astype(np.float32)).requires_grad_()
    x.tanh().sum().backward()
    y = np.tanh(np.linspace(-3, 3, 101))
    np.testing.assert_allclose(x.grad.numpy(), 1 - y * y, rtol=1e-5, atol=1e-6)
