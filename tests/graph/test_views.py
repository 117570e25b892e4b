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


# -- 7. in-place with grad mode on, on a view taken under no_grad of a non-leaf ---------------
# PyTorch raises "A view was created in no_grad mode and is being modified inplace with grad
# mode enabled" for every view op (checked against PyTorch 2.13), for a view of a leaf or of a
# non-leaf, and for a view of such a view taken with grad mode on (Note [No-grad views]).

NO_GRAD_PHRASE = ("A view was created in no_grad mode and is being modified inplace with grad "
                  "mode enabled")

VIEW_OPS = {            # every op that returns a view, on a (2, 3) base
    "slice": lambda b: b[0:1],
    "select": lambda b: b[1],
    "ellipsis": lambda b: b[...],
    "None": lambda b: b[None],
    "transpose": lambda b: b.transpose(0, 1),
    "T": lambda b: b.T,
    "permute": lambda b: b.permute(1, 0),
    "reshape (a view)": lambda b: b.reshape(6),
    "view": lambda b: b.view(3, 2),
    "flatten": lambda b: b.flatten(),
    "unsqueeze": lambda b: b.unsqueeze(0),
    "squeeze": lambda b: b[0:1].squeeze(0),
    "expand": lambda b: b[0:1].expand(4, 3),
    "narrow": lambda b: b.narrow(1, 0, 2),
    "unbind": lambda b: b.unbind(0)[1],
    "split": lambda b: b.split(1)[0],
    "chunk": lambda b: b.chunk(2, 1)[0],
    "diagonal": lambda b: b.diagonal(),
    "movedim": lambda b: b.movedim(0, 1),
    "0-size slice": lambda b: b[0:0],
    "0-d": lambda b: b[1, 2],
}

NONLEAF_INPLACE = dict(INPLACE, **{
    "div_ by a tensor": lambda v: v.div_(lucid.full(v.shape, 2.0, dtype=v.dtype)),
    "mul_ by a tensor requiring grad":
        lambda v: v.mul_(lucid.full(v.shape, 2.0, dtype=v.dtype, requires_grad=True)),
    "setitem from a tensor requiring grad":
        lambda v: v.__setitem__(..., lucid.ones(*v.shape, dtype=v.dtype, requires_grad=True)),
    "-=": lambda v: v.__isub__(1.0),
    "*=": lambda v: v.__imul__(3.0),
    "/=": lambda v: v.__itruediv__(3.0),
})
OP_NAMES = {"+=": "add_", "-=": "sub_", "*=": "mul_", "/=": "div_"}


def _nonleaf(dtype=lucid.float64):
    x = lucid.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=dtype, requires_grad=True)
    return x, x * 2.0


def _op_name(op):
    name = OP_NAMES.get(op, op.split(" ")[0])
    return "setitem" if name == "setitem" else name


def _is_a_view_of(v, b):
    """v shares b's memory and version counter (an in-place change of b shows in v)."""
    with lucid.no_grad():
        version = v._version
        b.add_(0.0)
        b.sub_(0.0)
    return v._version == version + 2


@pytest.mark.parametrize("dtype", [lucid.float64, lucid.float32])
@pytest.mark.parametrize("op", list(NONLEAF_INPLACE))
@pytest.mark.parametrize("view", list(VIEW_OPS))
def test_inplace_on_nograd_view_of_a_nonleaf_with_grad_mode_on_raises(view, op, dtype):
    """Bug (repro_O): y = x * 2; with no_grad: v = y[0:2]; v.mul_(3) with grad mode on was
    silently unrecorded, so backward through y gave the gradient of the old y. RuntimeError
    with PyTorch's phrase naming the op; y (values and version) unchanged; y's gradient right."""
    x, y = _nonleaf(dtype)
    with lucid.no_grad():
        v = VIEW_OPS[view](y)
    assert _is_a_view_of(v, y)
    before, version = y.detach().numpy().copy(), y._version
    with pytest.raises(RuntimeError) as info:
        NONLEAF_INPLACE[op](v)
    message = str(info.value)
    assert NO_GRAD_PHRASE in message and message.startswith(_op_name(op) + ": ")
    assert "requires grad" in message
    np.testing.assert_array_equal(y.detach().numpy(), before)
    assert y._version == version
    (y * 1.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 3), 2.0))


@pytest.mark.parametrize("op", list(NONLEAF_INPLACE))
@pytest.mark.parametrize("view", ["slice", "transpose", "reshape (a view)", "select"])
def test_a_view_of_a_nograd_view_taken_with_grad_mode_on_raises_too(view, op):
    """As in PyTorch ("a view of a view which was created in no_grad mode")."""
    x, y = _nonleaf()
    with lucid.no_grad():
        v = VIEW_OPS[view](y)
    w = v[...]
    assert not w.requires_grad
    with pytest.raises(RuntimeError, match=NO_GRAD_PHRASE):
        NONLEAF_INPLACE[op](w)
    np.testing.assert_array_equal(y.detach().numpy(), 2 * x.detach().numpy())


@pytest.mark.parametrize("view, op", [
    (view, op) for view in VIEW_OPS if view != "expand"          # (expand is read-only)
    for op in ["add_", "mul_", "zero_", "setitem", "copy_"]
    if op != "setitem" or view not in ("0-size slice", "0-d")])  # (v[0] = 9: no element 0)
def test_nograd_view_and_inplace_both_under_no_grad_still_work(view, op):
    """Guard: both statements under no_grad is allowed (PyTorch too); nothing is recorded."""
    x, y = _nonleaf()
    with lucid.no_grad():
        v = VIEW_OPS[view](y)
        version = y._version
        INPLACE[op](v)
    assert y._version > version and not v.requires_grad


@pytest.mark.parametrize("op", ["add_", "mul_", "setitem", "copy_", "zero_"])
@pytest.mark.parametrize("view", ["slice", "transpose", "select"])
def test_nograd_view_of_a_tensor_outside_the_graph_can_change_with_grad_mode_on(view, op):
    """Guard: when nothing would be recorded (the base requires no grad, nor does the value),
    the change is allowed with grad mode on, as in PyTorch."""
    y = lucid.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=lucid.float32)
    with lucid.no_grad():
        v = VIEW_OPS[view](y)
    version = y._version
    INPLACE[op](v)
    assert y._version > version and not y.requires_grad


@pytest.mark.parametrize("op", ["mul_ by a tensor requiring grad",
                                "copy_ from a tensor requiring grad",
                                "setitem from a tensor requiring grad"])
def test_nograd_view_of_a_tensor_outside_the_graph_refuses_a_value_requiring_grad(op):
    """PyTorch raises its no_grad-view error here too: the change would be recorded."""
    y = lucid.ones(2, 3, dtype=lucid.float64)
    with lucid.no_grad():
        v = y[0:1]
    with pytest.raises(RuntimeError, match=NO_GRAD_PHRASE):
        NONLEAF_INPLACE[op](v)
    np.testing.assert_array_equal(y.numpy(), np.ones((2, 3)))


def test_nograd_view_whose_base_got_a_history_later_raises():
    """The base had no history when the view was taken under no_grad; it got one by a recorded
    in-place op; changing the view with grad mode on now raises (PyTorch too)."""
    w = lucid.ones(3, dtype=lucid.float64, requires_grad=True)
    y = lucid.zeros(3, dtype=lucid.float64)
    with lucid.no_grad():
        v = y[0:2]
    y.add_(w)
    with pytest.raises(RuntimeError, match="mul_: " + NO_GRAD_PHRASE):
        v.mul_(3.0)
    (y * 1.0).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 1.0, 1.0])


def test_views_taken_with_grad_mode_on_are_unchanged():
    """Guard: a view of a non-leaf taken with grad mode on keeps lucid's own rule (section 2:
    raises, not recorded), and does not claim no_grad."""
    x, y = _nonleaf()
    v = y[0:1]
    with pytest.raises(RuntimeError, match="view that takes part in the graph") as info:
        v.mul_(3.0)
    assert "no_grad" not in str(info.value)


@pytest.mark.parametrize("op", ["mul_", "add_", "setitem", "copy_"])
def test_view_taken_before_its_base_got_a_history_raises_instead_of_a_wrong_gradient(op):
    """A view taken (grad mode on) of a tensor outside the graph, whose base then got a history
    by a recorded in-place op, has no history of its own: changing it in place with grad mode on
    was silently unrecorded (w.grad [1, 1, 1] instead of [3, 3, 1] for mul_). PyTorch raises;
    lucid raises its stale-view error naming the op; nothing is modified."""
    w = lucid.ones(3, dtype=lucid.float64, requires_grad=True)
    y = lucid.zeros(3, dtype=lucid.float64)
    v = y[0:2]
    y.add_(w)
    before, version = y.detach().numpy().copy(), y._version
    with pytest.raises(RuntimeError, match=f"{_op_name(op)}: this view .* was taken before its "
                                           "base was changed in place"):
        INPLACE[op](v)
    np.testing.assert_array_equal(y.detach().numpy(), before)
    assert y._version == version
    (y * 1.0).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 1.0, 1.0])


def test_mark_dirty_of_a_nograd_view_raises_naming_the_function():
    """A Function that changes its input in place (mark_dirty) counts as an in-place op."""
    class Double(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            a.mul_(2.0)
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, g):
            return g * 2.0

    x, y = _nonleaf()
    with lucid.no_grad():
        v = y[0]
    with pytest.raises(RuntimeError, match="Function Double \\(mark_dirty\\): " + NO_GRAD_PHRASE):
        Double.apply(v)
    with lucid.no_grad():
        v = y[0]
        Double.apply(v)                 # both under no_grad: allowed


def test_make_dual_under_no_grad_is_a_nograd_view():
    """make_dual's result is a view of the primal; made under no_grad it is marked (PyTorch)."""
    import lucid.autograd.forward_ad as fwAD
    x, y = _nonleaf()
    with fwAD.dual_level():
        with lucid.no_grad():
            d = fwAD.make_dual(y, lucid.ones(2, 3, dtype=lucid.float64))
        with pytest.raises(RuntimeError, match=NO_GRAD_PHRASE):
            d.mul_(2.0)
