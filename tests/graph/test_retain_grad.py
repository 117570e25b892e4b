"""retain_grad(): a non-leaf's .grad like a leaf's, and after in-place changes the gradient of the
tensor's CURRENT value.

Each in-place case keeps a use of the value from before the change (z = 2 * y_old), so a retained
gradient still attached to the old node would pick up that path too. Expected values come from
central finite differences of a NumPy reference (support.checks.numerical_vjp) and match PyTorch's.
"""
import numpy as np
import pytest

import lucid
from support.checks import assert_close, f64, numerical_vjp

X0 = np.array([[1.0, 2.0], [0.5, -1.0]])
W = np.array([[1.0, 2.0], [3.0, 4.0]])


def _set01(a, value):
    a = np.array(a, copy=True)
    a[0, 1] = value
    return a


# name: (in-place on y (lucid), current value of y (NumPy), loss of the current value (either))
CASES = {
    "mul_": (lambda y, x: y.mul_(3), lambda x: 4.5 * x, lambda y: (y * y).sum()),
    "add_": (lambda y, x: y.add_(x), lambda x: 2.5 * x, lambda y: (y ** 3).sum()),
    "sub_": (lambda y, x: y.sub_(x * x), lambda x: 1.5 * x - x * x, lambda y: (y * y).sum()),
    "div_": (lambda y, x: y.div_(4), lambda x: 1.5 * x / 4, lambda y: (y * y * y).sum()),
    "setitem": (lambda y, x: y.__setitem__((0, 1), x[1, 0] * 5),
                lambda x: _set01(1.5 * x, x[1, 0] * 5), lambda y: (y * W).sum()),
    "copy_": (lambda y, x: y.copy_(x * x), lambda x: x * x, lambda y: (y * y * y).sum()),
    "mul_ then add_": (lambda y, x: y.mul_(2).add_(1), lambda x: 3 * x + 1,
                       lambda y: (y * y).sum()),
}


def _np_loss(ycur, x, case):
    """The loss as a function of y's current value, with the old-value path (2 * 1.5x) fixed."""
    return np.sum(2 * 1.5 * x) + CASES[case][2](ycur)


@pytest.mark.parametrize("dtype", [lucid.float64, lucid.float32])
@pytest.mark.parametrize("case", list(CASES))
def test_retained_grad_follows_inplace_change(case, dtype):
    """Bug (repro_08): after y.retain_grad(); y.mul_(3), y.grad was the gradient of y's value
    BEFORE mul_ (lucid [18, 36], PyTorch [6, 12]), plus every other use of the old value. It
    must be d(loss)/d(current y); x.grad stays right."""
    inplace, current, loss_of = CASES[case]
    x = lucid.tensor(X0, dtype=dtype, requires_grad=True)
    y = x * 1.5
    y.retain_grad()
    z = y * 2                              # a use of the old value
    inplace(y, x)
    assert y.retains_grad
    wt = lucid.tensor(W, dtype=dtype)
    loss = z.sum() + (loss_of(y) if case != "setitem" else (y * wt).sum())
    loss.backward()
    ycur = current(X0)
    (expect_y,) = numerical_vjp(lambda yc: _np_loss(yc, X0, case), [ycur], 1.0)
    (expect_x,) = numerical_vjp(lambda xx: _np_loss(current(xx), xx, case), [X0], 1.0)
    tol = dict(rtol=1e-6, atol=1e-6) if dtype is lucid.float64 else dict(rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(y.grad.numpy(), expect_y, **tol)
    np.testing.assert_allclose(x.grad.numpy(), expect_x, **tol)
    np.testing.assert_allclose(y.detach().numpy(), ycur, **tol)


def test_retained_grad_repro_08_values():
    """repro_08 exactly, with PyTorch's values: y.grad = 2 * y_current = [6, 12]."""
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    y.retain_grad()
    y.mul_(3)
    (y * y).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [6.0, 12.0])
    np.testing.assert_array_equal(x.grad.numpy(), [18.0, 36.0])


def test_retained_grad_with_old_value_used_elsewhere_is_only_the_current_path():
    """PyTorch: y.retain_grad(); z = y * 2; y.mul_(3); (z + y).sum().backward() gives
    y.grad == ones (the old value's path through z does not count)."""
    x = lucid.tensor([1.0, 2.0, 3.0], dtype=lucid.float64, requires_grad=True)
    y = x * 1.0
    y.retain_grad()
    z = y * 2
    y.mul_(3)
    (z + y).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 5.0, 5.0])


def test_retained_grad_after_inplace_accumulates_across_backwards():
    """Two backward passes (retain_graph) add into the retained .grad of the current value."""
    x = lucid.tensor([1.0, -2.0], dtype=lucid.float64, requires_grad=True)
    y = x * 2.0
    y.retain_grad()
    y.mul_(3)
    loss = (y * y).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    np.testing.assert_allclose(y.grad.numpy(), 2 * (2 * 6 * np.array([1.0, -2.0])))


# ---------------------------------------------------------------------------------------------
# retain_grad on non-leaves
# ---------------------------------------------------------------------------------------------

def test_retain_grad_on_non_leaf():
    xv = np.array([1.0, -1.0])
    x = f64(xv, requires_grad=True)
    y = x * 2.0
    y.retain_grad()
    assert y.retains_grad
    (y * y).sum().backward()
    assert_close(y.grad, 2 * (2 * xv))
    assert_close(x.grad, 8 * xv)


def test_non_leaf_grad_is_none_without_retain_grad():
    x = f64([1.0, -1.0], requires_grad=True)
    y = x * 2.0
    (y * y).sum().backward()
    with pytest.warns(UserWarning, match="not a leaf.*retain_grad"):   # as PyTorch warns
        assert y.grad is None
    assert not y.retains_grad


def test_retain_grad_accumulates_like_leaf():
    x = f64([1.0], requires_grad=True)
    y = x * 2.0
    y.retain_grad()
    z = (y * 3.0).sum()
    z.backward(retain_graph=True)
    z.backward()
    assert_close(y.grad, [6.0])
    assert_close(x.grad, [12.0])
