"""The opt-in saved-tensor guard (lucid.autograd.set_saved_tensor_guard): while a node that saved
a tensor is alive, the tensor's memory is read-only, so a write raises where it happens instead of
at backward; it is released when the last node that saved it is freed or has run, and it never
changes a gradient."""
import numpy as np
import pytest

import lucid
from support.checks import assert_close, f64, leaf_with_grad, to_numpy

from .common import Double, SinFn


def test_guard_setting_returns_previous():
    assert lucid.autograd.set_saved_tensor_guard(True) is False
    assert lucid.autograd.set_saved_tensor_guard(True) is True
    assert lucid.autograd.set_saved_tensor_guard(False) is True
    with lucid.autograd.saved_tensor_guard():
        assert lucid.autograd.set_saved_tensor_guard(True) is True
    assert lucid.autograd.set_saved_tensor_guard(False) is False


def test_guard_write_raises_while_alive_and_is_allowed_after_backward():
    x = f64([0.5, 1.0, 2.0], requires_grad=True)
    arr = x.detach().numpy()
    with lucid.autograd.saved_tensor_guard():
        y = x.sin()
        with pytest.raises(ValueError):
            arr[0] = 100.0
    with pytest.raises(ValueError):              # still guarded after the with block
        x.detach().numpy()[1] = 100.0
    assert_close(x, [0.5, 1.0, 2.0], rtol=0, atol=0)
    assert x._version == 0
    y.sum().backward()
    assert_close(x.grad, np.cos([0.5, 1.0, 2.0]))
    arr[0] = 3.0                                  # released: writable again
    assert to_numpy(x)[0] == 3.0


def test_guard_saved_output_is_read_only():
    x = f64([0.5, 1.0], requires_grad=True)
    with lucid.autograd.saved_tensor_guard():
        y = x.exp()                              # saves its output
    with pytest.raises(ValueError):
        y.detach().numpy()[0] = 0.0
    assert_close(y, np.exp([0.5, 1.0]))
    y.sum().backward()
    assert_close(x.grad, np.exp([0.5, 1.0]))
    y.detach().numpy()[0] = 0.0
    assert to_numpy(y)[0] == 0.0


def test_guard_released_when_graph_is_deleted():
    base = np.array([0.5, 1.0, 2.0])
    t = lucid.from_numpy(base)
    x = t.requires_grad_()
    with lucid.autograd.saved_tensor_guard():
        y = x.sin() * 2.0
    with pytest.raises(ValueError):
        base[0] = 9.0
    del y
    base[0] = 9.0
    assert to_numpy(x)[0] == 9.0


def test_guard_retain_graph_keeps_read_only_until_last_backward():
    x = f64([0.5, 1.0], requires_grad=True)
    with lucid.autograd.saved_tensor_guard():
        y = x.cos().sum()
    y.backward(retain_graph=True)
    with pytest.raises(ValueError):
        x.detach().numpy()[0] = 1.0
    y.backward()
    assert_close(x.grad, -2 * np.sin([0.5, 1.0]))
    x.detach().numpy()[0] = 1.0


def test_guard_function_saved_tensor():
    x = f64([0.5, 1.0], requires_grad=True)
    with lucid.autograd.saved_tensor_guard():
        y = SinFn.apply(x)
    with pytest.raises(ValueError):
        x.detach().numpy()[0] = 1.0
    y.sum().backward()
    assert_close(x.grad, np.cos([0.5, 1.0]))
    x.detach().numpy()[0] = 1.0


def test_guard_lucid_inplace_op_on_saved_tensor_raises_runtime_error():
    x = leaf_with_grad()
    a = x * 2.0
    with lucid.autograd.saved_tensor_guard():
        b = a.sin()
    before = a._version
    for op in (lambda: a.add_(1.0), lambda: a.mul_(3.0), lambda: a.__setitem__(0, 1.0),
               lambda: a.copy_(lucid.zeros(3, dtype=lucid.float64))):
        with pytest.raises(RuntimeError, match="guard"):
            op()
        with lucid.no_grad():
            with pytest.raises(RuntimeError, match="guard"):
                op()
    assert a._version == before
    assert_close(a, [1.0, -2.0, 4.0], rtol=0, atol=0)
    assert a.grad_fn.name() == "MulBackward"
    b.sum().backward()
    assert_close(x.grad, np.arange(3) + 10.0 + 2 * np.cos([1.0, -2.0, 4.0]))
    a.add_(1.0)                                   # released: allowed again
    assert_close(a, [2.0, -1.0, 5.0])


def test_guard_lucid_inplace_op_on_view_of_saved_tensor_mentions_guard():
    x = leaf_with_grad()
    a = x * 2.0
    with lucid.autograd.saved_tensor_guard():
        b = a.sin()
    v = a[0:2]
    before = a._version
    with lucid.no_grad():
        with pytest.raises(RuntimeError, match="guard"):
            v.add_(1.0)
    assert a._version == before
    assert_close(a, [1.0, -2.0, 4.0], rtol=0, atol=0)
    del b


def test_guard_optimizer_update_on_saved_leaf_raises_until_backward():
    w = f64([1.0, 2.0], requires_grad=True)
    with lucid.autograd.saved_tensor_guard():
        loss = (w * w).sum()
    with lucid.no_grad():
        with pytest.raises(RuntimeError, match="guard"):
            w -= 0.5
    assert_close(w, [1.0, 2.0], rtol=0, atol=0)
    loss.backward()
    with lucid.no_grad():
        w -= 0.1 * w.grad
    assert_close(w, [0.8, 1.6])


def test_guard_nested_saves_need_every_node_released():
    x = f64([0.5, 1.0], requires_grad=True)
    with lucid.autograd.saved_tensor_guard():
        y1 = x.sin().sum()
        y2 = x.cos().sum()
    y1.backward()
    with pytest.raises(ValueError):               # y2's node still holds x
        x.detach().numpy()[0] = 5.0
    y2.backward()
    x.detach().numpy()[0] = 5.0
    assert to_numpy(x)[0] == 5.0


def test_guard_nested_saves_released_by_deletion_in_any_order():
    x = f64([0.5, 1.0], requires_grad=True)
    with lucid.autograd.saved_tensor_guard():
        y1 = x.sin()
        y2 = x * x                               # saves x twice in one node
        y3 = Double.apply(x) * x
    arr = x.detach().numpy()
    del y2
    with pytest.raises(ValueError):
        arr[0] = 5.0
    del y1
    with pytest.raises(ValueError):
        arr[0] = 5.0
    del y3
    arr[0] = 5.0
    assert to_numpy(x)[0] == 5.0


def test_guard_restores_a_read_only_array_as_read_only():
    ro = np.array([1.0, 2.0])
    ro.flags.writeable = False
    c = lucid.from_numpy(ro)
    x = f64([0.5, 1.0], requires_grad=True)
    with lucid.autograd.saved_tensor_guard():
        y = (x * c).sum()                        # saves c (and x)
    y.backward()
    assert not ro.flags.writeable                 # it was read-only before: still read-only
    x.detach().numpy()[0] = 4.0                   # x was writable: writable again


def test_guard_off_allows_writes():
    x = f64([0.5, 1.0], requires_grad=True)
    y = x.sin()
    x.detach().numpy()[0] = 2.0                   # default: off, the write goes through
    assert to_numpy(x)[0] == 2.0
    with lucid.autograd.saved_tensor_guard(False):
        y2 = x.cos()
        x.detach().numpy()[1] = 3.0
    assert to_numpy(x)[1] == 3.0
    with lucid.no_grad():
        x.add_(1.0)                               # lucid in-place: allowed, version bumped
    assert x._version == 1
    with pytest.raises(RuntimeError):             # ...and caught by the version check
        y2.sum().backward()
    del y


def test_guard_does_not_change_gradients():
    xs = [0.3, -0.7, 1.1]
    x1 = f64(xs, requires_grad=True)
    x2 = f64(xs, requires_grad=True)
    (x1.exp() * x1.sin() / (x1 * x1 + 1.0)).sum().backward()
    with lucid.autograd.saved_tensor_guard():
        (x2.exp() * x2.sin() / (x2 * x2 + 1.0)).sum().backward()
    assert_close(x2.grad, x1.grad, rtol=0, atol=0)
    x2.detach().numpy()[0] = 0.0
