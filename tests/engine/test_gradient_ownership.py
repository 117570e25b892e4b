"""The engine writes into a gradient buffer only when nothing else can see it.

Note [Gradient ownership] in lucid/engine/engine.pxi: a gradient that arrives at a node's buffer is the
engine's when the engine holds the only references to it and it owns its memory; backward nodes
(x * s, x / s, tanh, sigmoid) then compute in place and leaves steal it as .grad. These tests pin
the cases where something else does hold the gradient: each would see its values change if the
engine wrote into it.
"""
import numpy as np

import lucid
from lucid.autograd import Function


def f64(values, requires_grad=False):
    return lucid.tensor(values, dtype=lucid.float64, requires_grad=requires_grad)


def test_gradient_kept_by_a_function_backward_is_not_overwritten():
    kept = []

    class KeepGrad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            out = g * 2.0
            kept.append(out)                 # the user keeps what it returns
            return out

    x = f64([1.0, 2.0], requires_grad=True)
    y = KeepGrad.apply(x * 3.0).tanh()      # MulScalar and the leaf come after the Function
    y.sum().backward()
    expected_kept = 2.0 * (1 - np.tanh(3.0 * np.array([1.0, 2.0])) ** 2)
    np.testing.assert_allclose(kept[0].numpy(), expected_kept)
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * expected_kept)


def test_gradient_seen_by_a_hook_is_not_overwritten():
    seen = []
    x = f64([0.5, -1.0], requires_grad=True)
    h = x.tanh()
    h.register_hook(lambda g: seen.append(g))
    (h * 4.0).sum().backward()
    np.testing.assert_allclose(seen[0].numpy(), [4.0, 4.0])
    np.testing.assert_allclose(x.grad.numpy(), 4.0 * (1 - np.tanh([0.5, -1.0]) ** 2))


def test_captured_gradient_is_not_overwritten_by_later_nodes():
    x = f64([1.0, 2.0], requires_grad=True)
    h = x * 1.0
    mid = h.tanh()
    out = (mid * 5.0).sum() + (h * 7.0).sum()
    g_mid, g_x = lucid.autograd.grad(out, [mid, x])
    np.testing.assert_allclose(g_mid.numpy(), [5.0, 5.0])
    np.testing.assert_allclose(g_x.numpy(), 5.0 * (1 - np.tanh([1.0, 2.0]) ** 2) + 7.0)


def test_one_gradient_sent_down_two_edges_feeds_both_correctly():
    x = f64([1.0, 2.0], requires_grad=True)
    a = x * 2.0
    b = x * 3.0
    (a + b).tanh().sum().backward()         # AddBackward returns the same tensor for a and b
    s = 5.0 * np.array([1.0, 2.0])
    np.testing.assert_allclose(x.grad.numpy(), 5.0 * (1 - np.tanh(s) ** 2))


def test_user_gradient_and_stolen_grad_do_not_alias():
    x = f64([1.0, 2.0], requires_grad=True)
    g = f64([1.0, 1.0])
    (x * 1.0).backward(g)
    first = x.grad
    (x * 2.0).backward(g)
    np.testing.assert_allclose(g.numpy(), [1.0, 1.0])          # the user's tensor is untouched
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    assert x.grad is first                                     # accumulated in place


def test_leaf_grad_is_not_a_saved_tensor():
    x = f64([1.0, 2.0], requires_grad=True)
    w = f64([3.0, 4.0], requires_grad=True)
    (x * w).sum().backward()
    gx, gw = x.grad.numpy().copy(), w.grad.numpy().copy()
    (x * w).sum().backward()                                   # accumulates in place
    np.testing.assert_allclose(x.grad.numpy(), 2 * gx)
    np.testing.assert_allclose(w.grad.numpy(), 2 * gw)
    np.testing.assert_allclose(w.detach().numpy(), [3.0, 4.0])  # values never written


def test_retained_graph_gives_the_same_gradient_twice():
    x = f64([0.3, -0.7], requires_grad=True)
    y = ((x * 2.0).tanh() * 3.0).sigmoid().sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    x.grad = None
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), first)
