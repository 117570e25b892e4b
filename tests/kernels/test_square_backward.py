"""The gradient of x ** 2 without grad recording runs as g*(x*2) in two typed passes (one
buffer); with create_graph, under forward AD, for other powers or for layouts the typed loops do
not take (a strided gradient), the general formula g*2*x**1 runs. Both give the same values."""
import numpy as np
import pytest

import lucid
from support.checks import assert_close
from lucid.autograd import gradcheck, gradgradcheck

DTYPES = [np.float32, np.float64]


def _data(shape, dtype, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("strided_grad", [False, True], ids=["typed", "general"])
@pytest.mark.parametrize("shape", [(64, 10), (7,), (), (0, 3)])
def test_square_gradient_equals_g_times_twice_x(shape, dtype, strided_grad):
    a, g = _data(shape, dtype, 0), _data(shape, dtype, 1)
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
    x = lucid.tensor(_data((3, 4), np.float64, 2), requires_grad=True)
    fn = lambda x: (x ** 2) * 1.5
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))
    assert gradcheck(fn, (x,), check_forward_ad=True)
    (g,) = lucid.autograd.grad((x ** 2).sum(), x, create_graph=True)
    assert g.requires_grad
    (gg,) = lucid.autograd.grad(g.sum(), x)
    assert_close(gg, np.full((3, 4), 2.0), rtol=0, atol=0)


def test_mse_gradient_matches_the_hand_written_one():
    out0, t0 = _data((64, 10), np.float32, 3), _data((64, 10), np.float32, 4)
    out = lucid.tensor(out0, requires_grad=True)
    ((out - lucid.tensor(t0)) ** 2).mean().backward()
    assert_close(out.grad, (out0 - t0) * np.float32(2.0 / out0.size), rtol=1e-6, atol=1e-8)
