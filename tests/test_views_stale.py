"""Views whose base changed in place, and in-place changes through views taken under no_grad."""
import numpy as np
import pytest

import lucid

VIEWS = {
    "slice": lambda b: b[0:2],
    "int index": lambda b: b[1],
    "reshape": lambda b: b.reshape(2, 2),
    "view": lambda b: b.view(4),
    "transpose of 2-d": lambda b: b.reshape(2, 2).T,
    "view of a view": lambda b: b[0:3][1:],
}


def _inplace_on_base(op, b, x):
    if op == "mul_":
        b.mul_(3)
    elif op == "add_":
        b.add_(x)
    elif op == "copy_":
        b.copy_(x * 5)
    elif op == "setitem":
        b[0] = x[3] * 7
    elif op == "div_":
        b.div_(2)


OPS = ["mul_", "add_", "copy_", "setitem", "div_"]


def _stale_view(view, op, dtype=lucid.float64):
    x = lucid.tensor([1.0, 2.0, 3.0, 4.0], dtype=dtype, requires_grad=True)
    b = x * 2
    v = VIEWS[view](b)
    _inplace_on_base(op, b, x)
    return x, b, v


def _ones(v):
    return lucid.ones(*v.shape, dtype=v.dtype) if v.shape else None


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("view", list(VIEWS))
def test_stale_view_as_grad_root_raises(view, op):
    """Bug (repro_04): grad(v, ...) on a view taken before its base changed in place returned
    the OLD graph's gradient (e.g. [2, 2, 0] instead of [6, 6, 0]). A stale view used as a
    root must raise RuntimeError."""
    x, b, v = _stale_view(view, op)
    with pytest.raises(RuntimeError, match="in place"):
        lucid.autograd.grad(v, [x], _ones(v))
    assert x.grad is None


@pytest.mark.parametrize("dtype", [lucid.float32, lucid.float64])
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("view", list(VIEWS))
def test_stale_view_backward_raises_and_writes_nothing(view, op, dtype):
    """Bug (repro_04): v.backward() through a stale view accumulated the old graph's gradient
    into the leaf. RuntimeError, and no .grad written."""
    x, b, v = _stale_view(view, op, dtype)
    with pytest.raises(RuntimeError, match="in place"):
        v.backward(_ones(v))
    assert x.grad is None
    with pytest.raises(RuntimeError, match="in place"):
        lucid.autograd.backward([b.sum(), v.sum()])
    assert x.grad is None


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("view", list(VIEWS))
def test_stale_view_register_hook_and_retain_grad_raise(view, op):
    """Bug: register_hook / retain_grad on a stale view attached to the old node, so the hook
    saw (and retain_grad stored) the old graph's gradient. Both raise, registering nothing."""
    x, b, v = _stale_view(view, op)
    calls = []
    with pytest.raises(RuntimeError, match="in place"):
        v.register_hook(lambda g: calls.append(g))
    with pytest.raises(RuntimeError, match="in place"):
        v.retain_grad()
    assert not v.retains_grad
    b.sum().backward()
    with pytest.warns(UserWarning, match="not a leaf"):       # v is not a leaf, as in PyTorch
        assert calls == [] and v.grad is None


@pytest.mark.parametrize("op", ["mul_", "add_", "copy_"])
def test_view_taken_again_after_the_change_gives_the_current_gradient(op):
    """The way out the error names: a view taken after the in-place change is fresh and its
    gradient is that of the base's current value (analytic)."""
    x, b, _ = _stale_view("slice", op)
    v = b[0:2]
    (g,) = lucid.autograd.grad(v, [x], lucid.ones(2, dtype=v.dtype))
    expected = {"mul_": [6.0, 6.0, 0.0, 0.0], "add_": [3.0, 3.0, 0.0, 0.0],
                "copy_": [5.0, 5.0, 0.0, 0.0]}[op]
    np.testing.assert_array_equal(g.numpy(), expected)


def test_stale_view_reproducer_gradient_is_never_the_old_one():
    """repro_04 exactly: PyTorch gives [6, 6, 0]; lucid may raise but never return [2, 2, 0]."""
    x = lucid.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = x * 2
    v = b[0:2]
    b.mul_(3)
    try:
        (g,) = lucid.autograd.grad(v, [x], lucid.ones(2))
    except RuntimeError:
        return
    np.testing.assert_array_equal(g.numpy(), [6.0, 6.0, 0.0])


# -- 6. in-place on a view taken under no_grad of a leaf that requires grad -------------------

NOGRAD_VIEWS = {
    "row": lambda x: x[0],
    "slice": lambda x: x[:, 1:],
    "transpose": lambda x: x.T,
    "reshape": lambda x: x.reshape(4),
    "unsqueeze": lambda x: x.unsqueeze(0),
}

INPLACE = {
    "add_": lambda v: v.add_(100),
    "sub_": lambda v: v.sub_(1),
    "mul_": lambda v: v.mul_(2),
    "div_": lambda v: v.div_(2),
    "zero_": lambda v: v.zero_(),
    "fill_": lambda v: v.fill_(5.0),
    "copy_": lambda v: v.copy_(lucid.ones(*v.shape, dtype=v.dtype)),
    "copy_ from a tensor requiring grad":
        lambda v: v.copy_(lucid.ones(*v.shape, dtype=v.dtype, requires_grad=True)),
    "setitem": lambda v: v.__setitem__(0, 9.0),
    "+=": lambda v: v.__iadd__(1.0),
}


def _leaf_2x2(dtype=lucid.float64):
    return lucid.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=dtype, requires_grad=True)


@pytest.mark.parametrize("op", list(INPLACE))
@pytest.mark.parametrize("view", list(NOGRAD_VIEWS))
def test_inplace_on_nograd_view_of_leaf_with_grad_mode_on_raises(view, op):
    """Bug (repro_14): a view of a leaf requiring grad, taken under no_grad, could be changed
    in place with grad mode on, changing the leaf behind autograd's back. RuntimeError, and
    the leaf (values and version) unchanged."""
    x = _leaf_2x2()
    with lucid.no_grad():
        v = NOGRAD_VIEWS[view](x)
    before, version = x.detach().numpy().copy(), x._version
    with pytest.raises(RuntimeError, match="no_grad"):
        INPLACE[op](v)
    np.testing.assert_array_equal(x.detach().numpy(), before)
    assert x._version == version


@pytest.mark.parametrize("view", list(NOGRAD_VIEWS))
def test_view_of_a_nograd_view_taken_with_grad_mode_on_raises_too(view):
    """A second view taken (with grad mode on) of the no_grad view is still a view of the leaf:
    in-place on it raises as well."""
    x = _leaf_2x2(lucid.float32)
    with lucid.no_grad():
        v = NOGRAD_VIEWS[view](x)
    w = v[0:1]
    before = x.detach().numpy().copy()
    with pytest.raises(RuntimeError, match="no_grad"):
        w.add_(1)
    np.testing.assert_array_equal(x.detach().numpy(), before)


@pytest.mark.parametrize("op", ["add_", "mul_", "zero_", "setitem", "copy_"])
@pytest.mark.parametrize("view", list(NOGRAD_VIEWS))
def test_inplace_on_nograd_view_under_no_grad_works(view, op):
    """Guard: the optimizer pattern (change a leaf through a view under no_grad) still works
    and bumps the version."""
    x = _leaf_2x2()
    with lucid.no_grad():
        v = NOGRAD_VIEWS[view](x)
        expected = np.array(v.detach().numpy(), copy=True)
        version = x._version
        INPLACE[op](v)
    np_ops = {"add_": lambda a: a + 100, "mul_": lambda a: a * 2, "zero_": lambda a: a * 0,
              "copy_": lambda a: np.ones_like(a)}
    if op == "setitem":
        expected[0] = 9.0
    else:
        expected = np_ops[op](expected)
    np.testing.assert_array_equal(v.detach().numpy(), expected)
    assert x._version > version


@pytest.mark.parametrize("op", ["add_", "mul_", "setitem", "copy_"])
def test_detach_is_not_a_view_and_can_be_changed_with_grad_mode_on(op):
    """Guard: x.detach() shares memory but is not a view of x, so in-place on it with grad mode
    on works (as in PyTorch) and writes through to x."""
    x = _leaf_2x2()
    d = x.detach()
    {"add_": lambda: d.add_(1), "mul_": lambda: d.mul_(2),
     "setitem": lambda: d.__setitem__(0, 7.0),
     "copy_": lambda: d.copy_(lucid.zeros(2, 2, dtype=d.dtype))}[op]()
    expected = {"add_": [[2.0, 3.0], [4.0, 5.0]], "mul_": [[2.0, 4.0], [6.0, 8.0]],
                "setitem": [[7.0, 7.0], [3.0, 4.0]], "copy_": [[0.0, 0.0], [0.0, 0.0]]}[op]
    np.testing.assert_array_equal(x.detach().numpy(), expected)


@pytest.mark.parametrize("op", ["mul_", "add_", "setitem"])
def test_detached_result_never_goes_stale(op):
    """Bug: detach() returned a view, so once its base was changed in place by a recorded op,
    a detached tensor turned into a leaf (requires_grad_) raised the stale-view error."""
    x = lucid.tensor([1.0, 2.0, 3.0, 4.0], dtype=lucid.float64, requires_grad=True)
    b = x * 2
    d = b.detach()
    _inplace_on_base(op, b, x)
    d.requires_grad_(True)
    (d * d).sum().backward()
    np.testing.assert_allclose(d.grad.numpy(), 2 * b.detach().numpy())
