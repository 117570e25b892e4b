"""The native softplus: values, gradients (first and second order), and use in a larger graph."""
import numpy as np
import pytest

import lucid
from lucid.autograd import gradcheck, gradgradcheck
from lucid_softplus import softplus, SoftplusBackward


def reference(x):
    return np.logaddexp(0.0, x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_match_numpy(dtype):
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(dtype) * 30
    y = softplus(lucid.from_numpy(x))
    assert y.dtype == dtype
    np.testing.assert_allclose(y.numpy(), reference(x.astype(np.float64)),
                               rtol=1e-6 if dtype == np.float64 else 1e-5)


def test_node_and_gradient():
    x = lucid.tensor([-2.0, 0.0, 3.0], dtype=lucid.float64, requires_grad=True)
    y = softplus(x)
    assert isinstance(y.grad_fn, SoftplusBackward)
    assert y.grad_fn.name() == "SoftplusBackward"
    y.sum().backward()
    expected = 1 / (1 + np.exp(-np.array([-2.0, 0.0, 3.0])))
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)


def test_gradcheck_and_gradgradcheck():
    x = lucid.randn(6, dtype=lucid.float64, requires_grad=True)
    assert gradcheck(softplus, (x,))
    assert gradgradcheck(softplus, (x,))


def test_inside_a_larger_graph():
    rng = np.random.default_rng(1)
    w = lucid.tensor(rng.standard_normal((4, 3)), dtype=lucid.float64, requires_grad=True)
    x = lucid.tensor(rng.standard_normal((5, 4)), dtype=lucid.float64)
    assert gradcheck(lambda w: (softplus(x @ w).tanh() * 2).mean(), (w,))


def test_no_graph_without_grad():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    with lucid.no_grad():
        assert softplus(x).grad_fn is None
    assert softplus(lucid.tensor([1.0])).grad_fn is None


def test_saved_input_changed_in_place_is_caught():
    x0 = lucid.tensor([1.0, 2.0], dtype=lucid.float64, requires_grad=True)
    x = x0 * 1.0
    y = softplus(x)
    with lucid.no_grad():
        x.add_(1.0)
    with pytest.raises(RuntimeError, match="SoftplusBackward"):
        y.sum().backward()
    assert x0.grad is None


def test_freed_graph_is_an_error():
    x = lucid.tensor([1.0], requires_grad=True)
    y = softplus(x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()


def test_rejects_integer_input():
    with pytest.raises(TypeError, match="float32 or float64"):
        softplus(lucid.tensor([1, 2]))


def test_forward_mode_jvp():
    """The native op carries tangents (fw_tangent/fw_set_tangent from _core.pxd): its jvp matches
    finite differences, and forward-over-reverse works through it."""
    x = lucid.tensor(np.array([-3.0, -0.5, 0.0, 2.0, 25.0]), dtype=lucid.float64,
                     requires_grad=True)
    assert gradcheck(softplus, (x,), check_forward_ad=True)
    import lucid.autograd.forward_ad as fwAD
    v = lucid.tensor(np.array([1.0, -2.0, 0.5, 1.0, 3.0]), dtype=lucid.float64)
    with fwAD.dual_level():
        y = softplus(fwAD.make_dual(x, v))
        tangent = fwAD.unpack_dual(y).tangent
    sig = 1 / (1 + np.exp(-x.detach().numpy()))
    np.testing.assert_allclose(tangent.detach().numpy(), v.numpy() * sig, rtol=1e-12)
