"""Error paths (API.md section 6) for the ops in scope: the exception type, a useful message,
and nothing modified (data, _version, .grad) by the failed call."""
import numpy as np
import pytest

import lucid
from support.checks import assert_close, assert_exact, assert_mentions_shapes, f64, to_numpy


def _leaf(shape, rng=None):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) + 1.0
    t = f64(a, requires_grad=True)
    return t, a


def _with_grad(t):
    """Give the leaf a non-trivial existing .grad, so we can check it is left alone."""
    (t * 1.5).sum().backward()
    return to_numpy(t.grad)


def _snapshot(*ts):
    return [(to_numpy(t), t._version, None if t.grad is None else to_numpy(t.grad)) for t in ts]


def _assert_unchanged(snap, *ts):
    for (data, version, grad), t in zip(snap, ts):
        assert_close(t, data, rtol=0, atol=0)
        assert t._version == version
        if grad is None:
            assert t.grad is None
        else:
            assert_close(t.grad, grad, rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# shape errors name both shapes
# ---------------------------------------------------------------------------------------------

MATMUL_BAD = [
    ((2, 3), (4, 5)),
    ((3,), (4,)),
    ((2, 3), (4,)),
    ((4,), (3, 2)),
    ((5, 2, 3), (4, 2)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_BAD, ids=[f"{a}@{b}" for a, b in MATMUL_BAD])
@pytest.mark.parametrize("form", ["operator", "function"])
def test_matmul_shape_mismatch(sa, sb, form):
    a, _ = _leaf(sa)
    b, _ = _leaf(sb)
    _with_grad(a)
    snap = _snapshot(a, b)
    with pytest.raises(RuntimeError) as ei:
        if form == "operator":
            a @ b
        else:
            lucid.matmul(a, b)
    assert_mentions_shapes(str(ei.value), sa, sb)
    _assert_unchanged(snap, a, b)


BROADCAST_BAD = [((2, 3), (4,)), ((3, 1), (2, 4)), ((2, 3), (3, 2))]
BIN = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a ** b,
    "lucid.add": lambda a, b: lucid.add(a, b),
    "lucid.mul": lambda a, b: lucid.mul(a, b),
}


@pytest.mark.parametrize("sa,sb", BROADCAST_BAD, ids=[f"{a}vs{b}" for a, b in BROADCAST_BAD])
@pytest.mark.parametrize("opname", list(BIN))
def test_broadcast_mismatch(opname, sa, sb):
    a, _ = _leaf(sa)
    b, _ = _leaf(sb)
    _with_grad(b)
    snap = _snapshot(a, b)
    with pytest.raises(RuntimeError) as ei:
        BIN[opname](a, b)
    assert_mentions_shapes(str(ei.value), sa, sb)
    _assert_unchanged(snap, a, b)


@pytest.mark.parametrize("target", [(4, 2), (5,), (7, -1)], ids=["4x2", "5", "7x-1"])
def test_reshape_wrong_size(target):
    x, _ = _leaf((2, 3))
    snap = _snapshot(x)
    with pytest.raises(RuntimeError) as ei:
        x.reshape(*target)
    msg = str(ei.value)
    assert_mentions_shapes(msg, (2, 3))
    if -1 not in target:
        assert_mentions_shapes(msg, target)
    with pytest.raises(RuntimeError):
        x.reshape(target)
    with pytest.raises(RuntimeError):
        lucid.reshape(x, target)
    _assert_unchanged(snap, x)


def test_inplace_broadcast_mismatch_leaves_data():
    t = lucid.tensor(np.ones((2, 3)))
    snap = _snapshot(t)
    with pytest.raises(RuntimeError):
        t.add_(lucid.tensor(np.ones((4,))))
    with pytest.raises(RuntimeError):
        t.copy_(lucid.tensor(np.ones((3, 2))))
    with pytest.raises(RuntimeError):
        t.mul_(lucid.tensor(np.ones((2, 3, 2))))   # result shape would not fit t
    _assert_unchanged(snap, t)


# ---------------------------------------------------------------------------------------------
# dim errors
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda x: x.sum(dim=3),
    lambda x: x.mean(dim=-4),
    lambda x: lucid.sum(x, dim=(0, 5)),
    lambda x: x.transpose(0, 3),
], ids=["sum3", "mean-4", "sum(0,5)", "transpose(0,3)"])
def test_dim_out_of_range(call):
    x, _ = _leaf((2, 3, 4))
    snap = _snapshot(x)
    with pytest.raises((IndexError, RuntimeError, ValueError)):
        call(x)
    _assert_unchanged(snap, x)


# ---------------------------------------------------------------------------------------------
# requires_grad on non-float
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_requires_grad_on_non_float_changes_nothing(dtype):
    t = lucid.tensor([1, 0, 1], dtype=getattr(lucid, dtype))
    before = t.tolist()
    with pytest.raises(RuntimeError) as ei:
        t.requires_grad_(True)
    assert "float" in str(ei.value).lower() or "grad" in str(ei.value).lower()
    assert t.requires_grad is False
    assert t.tolist() == before
    with pytest.raises(RuntimeError):
        t.requires_grad = True
    assert t.requires_grad is False


def test_requires_grad_false_on_non_leaf_raises():
    x = f64([1.0], requires_grad=True)
    y = x * 2.0
    with pytest.raises(RuntimeError):
        y.requires_grad = False
    assert y.requires_grad and y.grad_fn is not None


# ---------------------------------------------------------------------------------------------
# in-place on a leaf that requires grad, grad mode on
# ---------------------------------------------------------------------------------------------

INPLACE_ON_LEAF = [
    ("add_scalar", lambda t: t.add_(1.0)),
    ("add_tensor", lambda t: t.add_(f64(np.ones((2, 3))))),
    ("mul_", lambda t: t.mul_(2.0)),
    ("zero_", lambda t: t.zero_()),
    ("fill_", lambda t: t.fill_(3.0)),
    ("copy_", lambda t: t.copy_(f64(np.zeros((2, 3))))),
    ("setitem_int", lambda t: t.__setitem__(0, 5.0)),
    ("setitem_slice", lambda t: t.__setitem__((slice(None), 1), f64([7.0, 8.0]))),
]


@pytest.mark.parametrize("name,fn", INPLACE_ON_LEAF, ids=[c[0] for c in INPLACE_ON_LEAF])
def test_inplace_on_leaf_requiring_grad_raises(name, fn):
    x, a = _leaf((2, 3))
    _with_grad(x)
    snap = _snapshot(x)
    with pytest.raises(RuntimeError):
        fn(x)
    _assert_unchanged(snap, x)
    assert x.is_leaf and x.requires_grad and x.grad_fn is None
    # the same call is fine under no_grad
    with lucid.no_grad():
        fn(x)
    assert x._version > snap[0][1]


# ---------------------------------------------------------------------------------------------
# numpy() on a tensor that requires grad
# ---------------------------------------------------------------------------------------------

def test_numpy_on_requires_grad_leaf_and_non_leaf():
    x, a = _leaf((3,))
    for t in (x, x * 2.0, x.sum()):
        with pytest.raises(RuntimeError) as ei:
            t.numpy()
        assert "detach" in str(ei.value), str(ei.value)
    assert_close(x, a, rtol=0, atol=0)
    assert x.requires_grad


# ---------------------------------------------------------------------------------------------
# type errors
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda x: x + "a",
    lambda x: x * "a",
    lambda x: x @ 2.0,
    lambda x: x - None,
], ids=["add_str", "mul_str", "matmul_scalar", "sub_none"])
def test_bad_operand_types_raise(call):
    x, a = _leaf((3,))
    with pytest.raises((TypeError, RuntimeError)):
        call(x)
    assert_close(x, a, rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# backward misuse leaves .grad alone
# ---------------------------------------------------------------------------------------------

def test_failed_backward_leaves_existing_grad():
    x, a = _leaf((3,))
    g = _with_grad(x)
    y = x * 2.0
    with pytest.raises(RuntimeError):
        y.backward()                             # non-scalar, no gradient
    with pytest.raises(RuntimeError):
        y.backward(gradient=f64(np.ones(4)))     # wrong shape
    assert_close(x.grad, g, rtol=0, atol=0)
    y.backward(gradient=f64(np.ones(3)))
    assert_close(x.grad, g + 2.0)


def test_error_messages_are_not_empty():
    a, _ = _leaf((2, 3))
    b, _ = _leaf((4, 5))
    for call in (lambda: a @ b, lambda: a + b, lambda: a.reshape(7)):
        with pytest.raises(RuntimeError) as ei:
            call()
        assert len(str(ei.value)) > 10


# ---------------------------------------------------------------------------------------------
# more misuse: assigning .grad, hooks, in-place dtype / index / shape errors, bad dims
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [
    lambda: f64(np.ones(4)),
    lambda: f64(np.ones((3, 1))),
    lambda: lucid.tensor([1, 2, 3]),
], ids=["wrong_size", "wrong_shape", "int_dtype"])
def test_assigning_bad_grad_raises(bad):
    x, _ = _leaf((3,))
    g = _with_grad(x)
    with pytest.raises((RuntimeError, TypeError, ValueError)):
        x.grad = bad()
    assert_close(x.grad, g, rtol=0, atol=0)


def test_register_hook_on_tensor_not_requiring_grad_raises():
    t = f64([1.0, 2.0])
    with pytest.raises(RuntimeError):
        t.register_hook(lambda g: g)


@pytest.mark.parametrize("call", [
    lambda t: t.add_(1.5),
    lambda t: t.mul_(0.5),
    lambda t: t.add_(lucid.tensor([0.5, 0.5, 0.5])),
], ids=["add_float_scalar", "mul_float_scalar", "add_float_tensor"])
def test_inplace_float_into_int_tensor_raises(call):
    # the float result cannot be stored in an int tensor: an error, not a silent truncation
    t = lucid.tensor([1, 2, 3])
    v = t._version
    with pytest.raises(RuntimeError):
        call(t)
    assert t.tolist() == [1, 2, 3] and t.dtype == lucid.int64
    assert t._version == v


@pytest.mark.parametrize("call,exc", [
    (lambda t: t.__setitem__(5, 1.0), IndexError),
    (lambda t: t.__setitem__((0, 7), 1.0), IndexError),
    (lambda t: t.__setitem__(0, f64(np.ones(4))), (RuntimeError, ValueError)),
], ids=["index_out_of_range", "tuple_out_of_range", "value_wrong_shape"])
def test_setitem_errors_leave_data(call, exc):
    t = lucid.tensor(np.arange(6.0).reshape(2, 3))
    snap = _snapshot(t)
    with pytest.raises(exc):
        call(t)
    _assert_unchanged(snap, t)


@pytest.mark.parametrize("call", [
    lambda x: x.reshape(-1, -1),
    lambda x: x.sum(dim=(0, 0)),
    lambda x: lucid.mean(x, dim=(1, -1)),
], ids=["reshape_two_minus1", "sum_duplicate_dim", "mean_duplicate_dim_negative"])
def test_more_bad_dims(call):
    x, _ = _leaf((2, 3))
    snap = _snapshot(x)
    with pytest.raises((RuntimeError, ValueError, IndexError)):
        call(x)
    _assert_unchanged(snap, x)


# ---------------------------------------------------------------------------------------------
# errors that once named the wrong problem
# int_tensor ** -1 said the shapes could not be broadcast; int_tensor.div_(2) said int64 values
# can't be written into an int64 tensor; add_ on a tensor over a read-only NumPy array
# (np.frombuffer) blamed expand; arange(0, 1, 0) leaked NumPy's ZeroDivisionError. Each error now
# names the real problem and the fix, is raised before anything is written or recorded, and
# leaves the tensors as they were.
# ---------------------------------------------------------------------------------------------

def _state(t):
    return to_numpy(t).tolist(), t._version, t.grad_fn


@pytest.mark.parametrize("make", [
    lambda a: a ** -1, lambda a: a ** lucid.tensor([1, -2]), lambda a: 2 ** (a - 3),
    lambda a: lucid.pow(a.int(), -2),
], ids=["scalar", "tensor", "reflected", "int32"])
def test_int_to_negative_int_power(make):
    a = lucid.tensor([2, 3])
    before = _state(a)
    with pytest.raises(RuntimeError, match="negative integer powers") as info:
        make(a)
    assert "float" in str(info.value) and "broadcast" not in str(info.value)
    assert _state(a) == before
    assert_exact(a.float() ** -1, [0.5, 1 / 3])               # the suggested fix works


@pytest.mark.parametrize("dtype", [lucid.int64, lucid.int32])
@pytest.mark.parametrize("call", [lambda t: t.div_(2), lambda t: t.__itruediv__(lucid.tensor([1, 2])),
                                  lambda t: t.div_(lucid.tensor([2, 2], dtype=lucid.int32))],
                         ids=["div_", "itruediv", "div_int32"])
def test_int_true_division_in_place(dtype, call):
    t = lucid.tensor([4, 6], dtype=dtype)
    before = _state(t)
    with pytest.raises(RuntimeError, match="true division") as info:
        call(t)
    assert "float" in str(info.value)
    assert _state(t) == before


@pytest.mark.parametrize("call", [lambda t: t.add_(1.5), lambda t: t.mul_(lucid.ones(2)),
                                  lambda t: t.sub_(lucid.ones(2, requires_grad=True))],
                         ids=["add_float", "mul_tensor", "sub_recorded"])
def test_in_place_result_wider_than_int_tensor(call):
    t = lucid.tensor([4, 6])
    before = _state(t)
    with pytest.raises(RuntimeError, match="can't be written into a lucid.int64") as info:
        call(t)
    assert "lucid.float32" in str(info.value)
    assert _state(t) == before


@pytest.mark.parametrize("call", [
    lambda t: t.add_(1), lambda t: t.mul_(2.0), lambda t: t.fill_(0.0), lambda t: t[0:1].zero_(),
    lambda t: t.__setitem__(0, 5.0), lambda t: t.add_(lucid.ones(2, dtype=lucid.float64,
                                                                  requires_grad=True)),
], ids=["add_", "mul_", "fill_", "view_zero_", "setitem", "add_recorded"])
def test_write_into_read_only_numpy_memory(call):
    t = lucid.from_numpy(np.frombuffer(np.array([1.0, 2.0]).tobytes(), dtype=np.float64))
    before = _state(t)
    with pytest.raises(RuntimeError, match="read-only") as info:
        call(t)
    msg = str(info.value)
    assert "NumPy" in msg and "copy" in msg and "expand" not in msg
    assert _state(t) == before


def test_guard_write_into_expand_view_still_blames_expand():
    t = lucid.ones(1, 3).expand(2, 3)
    with pytest.raises(RuntimeError, match="expand"):
        t.add_(1)


@pytest.mark.parametrize("args", [(0, 1, 0), (0.0, 1.0, 0.0), (5, 0, 0)])
def test_arange_zero_step(args):
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        lucid.arange(*args)


@pytest.mark.parametrize("args", [(0, float("inf")), (0, 1, float("nan")), (float("-inf"), 0)])
def test_arange_non_finite(args):
    with pytest.raises(RuntimeError, match="finite"):
        lucid.arange(*args)
