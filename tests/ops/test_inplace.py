"""In-place ops (API.md section 2): add_ sub_ mul_ div_ zero_ fill_ copy_, += -= *= /=, x[idx] = v.

Values and version bumps; the optimizer update under no_grad; the leaf-requires-grad error;
recording on non-leaves (checked with gradcheck / gradgradcheck); a value that requires grad
written into a tensor that does not; saved tensors changed after they were saved; views.
"""
import re

import numpy as np
import pytest

import lucid
from support.checks import assert_close, f64, numerical_vjp, to_numpy

gradcheck = lucid.autograd.gradcheck
gradgradcheck = lucid.autograd.gradgradcheck


def _iadd(t, v):
    t += v
    return t


def _isub(t, v):
    t -= v
    return t


def _imul(t, v):
    t *= v
    return t


def _idiv(t, v):
    t /= v
    return t


def _setitem(key):
    def f(t, v):
        t[key] = v
        return t
    return f


def _np_setitem(key):
    def f(a, v):
        a[key] = v
        return a
    return f


_ROW = np.array([1.5, -2.0, 0.25, 4.0])          # broadcasts against (3, 4)
_COL = np.array([[2.0], [-0.5], [4.0]])
_MASK = np.array([[True, False, False, True], [False, True, False, False], [True] * 4])

# name, lucid op (t, value) -> result, numpy op (a, value) -> result, value (np array or scalar)
INPLACE = [
    ("add_tensor", lambda t, v: t.add_(v), lambda a, v: a + v, _ROW),
    ("add_scalar", lambda t, v: t.add_(v), lambda a, v: a + v, 2.5),
    ("sub_tensor", lambda t, v: t.sub_(v), lambda a, v: a - v, _COL),
    ("sub_scalar", lambda t, v: t.sub_(v), lambda a, v: a - v, -1.0),
    ("mul_tensor", lambda t, v: t.mul_(v), lambda a, v: a * v, _ROW),
    ("mul_scalar", lambda t, v: t.mul_(v), lambda a, v: a * v, 3.0),
    ("div_tensor", lambda t, v: t.div_(v), lambda a, v: a / v, _COL),
    ("div_scalar", lambda t, v: t.div_(v), lambda a, v: a / v, 8.0),
    ("zero_", lambda t, v: t.zero_(), lambda a, v: np.zeros_like(a), None),
    ("fill_", lambda t, v: t.fill_(v), lambda a, v: np.full_like(a, v), -3.25),
    ("copy_same_shape", lambda t, v: t.copy_(v), lambda a, v: np.broadcast_to(v, a.shape).copy(),
     np.arange(12.0).reshape(3, 4) - 5),
    ("copy_broadcast", lambda t, v: t.copy_(v), lambda a, v: np.broadcast_to(v, a.shape).copy(), _ROW),
    ("iadd", _iadd, lambda a, v: a + v, _COL),
    ("iadd_scalar", _iadd, lambda a, v: a + v, 1.0),
    ("isub", _isub, lambda a, v: a - v, _ROW),
    ("imul", _imul, lambda a, v: a * v, _ROW),
    ("imul_scalar", _imul, lambda a, v: a * v, 0.5),
    ("idiv", _idiv, lambda a, v: a / v, _ROW),
    ("setitem_int_scalar", _setitem(1), _np_setitem(1), 7.0),
    ("setitem_int_row", _setitem(1), _np_setitem(1), _ROW),
    ("setitem_slice_col", _setitem((slice(None), slice(1, 3))), _np_setitem((slice(None), slice(1, 3))),
     np.array([9.0, 8.0])),
    ("setitem_ellipsis", _setitem(Ellipsis), _np_setitem(Ellipsis), _COL),
    ("setitem_list", _setitem([0, 2]), _np_setitem([0, 2]), _ROW),
    ("setitem_mask", _setitem(_MASK), _np_setitem(_MASK), -1.0),
    ("setitem_pair", _setitem(([0, 2], [3, 1])), _np_setitem(([0, 2], [3, 1])), np.array([5.0, 6.0])),
]
INPLACE_IDS = [c[0] for c in INPLACE]


def _value(v, requires_grad=False):
    if isinstance(v, np.ndarray):
        return f64(v, requires_grad=requires_grad)
    return v


def _start():
    return np.arange(12.0).reshape(3, 4) / 4.0 + 0.5


@pytest.mark.parametrize("name,op,ref,val", INPLACE, ids=INPLACE_IDS)
def test_inplace_values_and_version(name, op, ref, val):
    a = _start()
    x = f64(a)
    v0 = x._version
    out = op(x, _value(val))
    assert out is x, f"{name} must return the tensor itself"
    assert_close(x, ref(a.copy(), val), rtol=1e-15, atol=0)
    assert x._version == v0 + 1, f"{name}: version {v0} -> {x._version}, expected one bump"
    assert x.grad_fn is None and not x.requires_grad
    out = op(x, _value(val))
    assert x._version == v0 + 2


@pytest.mark.parametrize("name,op,ref,val", INPLACE, ids=INPLACE_IDS)
def test_inplace_under_no_grad_on_leaf_requiring_grad(name, op, ref, val):
    a = _start()
    w = f64(a, requires_grad=True)
    g = f64(np.ones((3, 4)))
    w.grad = g
    v0 = w._version
    with lucid.no_grad():
        out = op(w, _value(val))
    assert out is w
    assert_close(w, ref(a.copy(), val), rtol=1e-15, atol=0)
    assert w._version == v0 + 1
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    assert w.grad is g
    assert_close(w.grad, np.ones((3, 4)), rtol=0, atol=0)


def test_optimizer_update_under_no_grad():
    a = np.array([1.0, -2.0, 3.0])
    w = f64(a, requires_grad=True)
    (w * w).sum().backward()
    lr = 0.1
    ident = w
    v0 = w._version
    with lucid.no_grad():
        w -= lr * w.grad
    assert w is ident
    assert_close(w, a - lr * 2 * a, rtol=1e-15, atol=0)
    assert w._version == v0 + 1
    assert w.is_leaf and w.requires_grad and w.grad_fn is None
    # the parameter is still usable in a new graph
    w.grad = None
    (w * 3.0).sum().backward()
    assert_close(w.grad, [3.0, 3.0, 3.0], rtol=0, atol=0)


def test_no_grad_decorator_update():
    w = f64([1.0, 2.0], requires_grad=True)

    @lucid.no_grad()
    def step(p):
        p.mul_(0.5)

    step(w)
    assert_close(w, [0.5, 1.0], rtol=0, atol=0)
    assert w.is_leaf and w.requires_grad and w._version == 1


@pytest.mark.parametrize("name,op,ref,val", INPLACE, ids=INPLACE_IDS)
def test_inplace_on_leaf_requiring_grad_raises_and_changes_nothing(name, op, ref, val):
    a = _start()
    w = f64(a, requires_grad=True)
    v0 = w._version
    with pytest.raises(RuntimeError):
        op(w, _value(val))
    assert_close(w, a, rtol=0, atol=0)
    assert w._version == v0
    assert w.is_leaf and w.requires_grad and w.grad_fn is None and w.grad is None


def test_inplace_on_leaf_with_value_requiring_grad_raises():
    a = _start()
    w = f64(a, requires_grad=True)
    z = f64(_ROW, requires_grad=True)
    with pytest.raises(RuntimeError):
        w.add_(z)
    with pytest.raises(RuntimeError):
        w[0] = z
    assert_close(w, a, rtol=0, atol=0)
    assert w._version == 0 and w.is_leaf and w.grad_fn is None


def test_inplace_on_view_of_leaf_requiring_grad_raises_and_changes_nothing():
    a = _start()
    w = f64(a, requires_grad=True)
    for make, op in [(lambda t: t[0], lambda v: v.add_(1.0)),
                     (lambda t: t.T, lambda v: v.mul_(2.0)),
                     (lambda t: t[:, 1:], lambda v: v.zero_()),
                     (lambda t: t.view(12), lambda v: v.fill_(0.0)),
                     (lambda t: t[1], lambda v: v.__setitem__(0, 5.0))]:
        v = make(w)
        with pytest.raises(RuntimeError):
            op(v)
        assert_close(w, a, rtol=0, atol=0)
        assert w._version == 0


BAD_INPLACE = [
    ("add_shape", (3, 4), lambda x: x.add_(f64(np.ones(5)))),
    ("mul_shape", (3, 4), lambda x: x.mul_(f64(np.ones((2, 4))))),
    ("copy_shape", (3, 4), lambda x: x.copy_(f64(np.ones((2, 4))))),
    ("setitem_shape", (3, 4), lambda x: x.__setitem__(0, f64(np.ones(3)))),
    ("self_would_broadcast", (4,), lambda x: x.add_(f64(np.ones((3, 4))))),
    ("iadd_would_broadcast", (4,), lambda x: x.__iadd__(f64(np.ones((3, 4))))),
    ("index_out_of_range", (3, 4), lambda x: x.__setitem__(5, 1.0)),
]


@pytest.mark.parametrize("name,shape,bad", BAD_INPLACE, ids=[b[0] for b in BAD_INPLACE])
def test_inplace_shape_errors_change_nothing(name, shape, bad):
    a = np.arange(float(np.prod(shape))).reshape(shape)
    x = f64(a)
    with pytest.raises((RuntimeError, IndexError)):
        bad(x)
    assert_close(x, a, rtol=0, atol=0)
    assert x._version == 0


# ---------------------------------------------------------------------------------------------
# recorded on non-leaves
# ---------------------------------------------------------------------------------------------

def _rg(rng, *shapes, pos=False):
    out = []
    for s in shapes:
        a = rng.uniform(0.5, 2.0, s) if pos else rng.standard_normal(s)
        out.append(lucid.tensor(a, dtype=lucid.float64, requires_grad=True))
    return tuple(out)


def f_add_(x, z):
    y = x * 2.0
    y.add_(z)
    return y


def f_add_scalar(x):
    y = x.tanh()
    y = y * 1.0
    y.add_(0.75)
    return y * x


def f_sub_(x, z):
    y = x * 1.5
    y.sub_(z)
    return y


def f_mul_(x, z):
    y = x * 1.0
    y.mul_(z)
    return y


def f_div_(x, z):
    y = x + 0.0
    y.div_(z)
    return y


def f_mul_self(x):
    y = x * 1.0
    y.mul_(y)
    return y


def f_copy_broadcast(x, w):
    y = x * 2.0
    y.copy_(w)
    return y + x * x


def f_zero_(x):
    y = x * 2.0
    y.zero_()
    return y + x


def f_fill_(x):
    y = x * 2.0
    y.fill_(3.0)
    return y * x


def f_setitem_row(x, w):
    y = x * 2.0
    y[1] = w
    return y * y


def f_setitem_scalar_and_mask(x):
    y = x.sin()
    y[:, 0] = 0.5
    y[lucid.tensor(_MASK)] = -1.0
    return y * x


def f_setitem_list(x, w):
    y = x * 1.0
    y[[2, 0]] = w
    return y.exp()


def f_operators(x, z):
    y = x * 1.0
    y += z
    y *= z
    y -= x
    y /= 2.0
    return y


def f_chain(x, z):
    y = x * 1.0
    y.add_(z).mul_(z).sub_(1.0)
    return y


def f_out_of_place_before(x, z):
    y = x * 2.0
    a = y * 3.0          # a scalar multiply saves nothing of y
    s = y + z            # neither does add
    y.mul_(z)
    return a + y + s


RECORDED = [
    ("add_", f_add_, ((3, 4), (4,)), False),
    ("add_scalar", f_add_scalar, ((3, 4),), False),
    ("sub_", f_sub_, ((3, 4), (3, 1)), False),
    ("mul_", f_mul_, ((3, 4), (3, 1)), False),
    ("div_", f_div_, ((3, 4), (4,)), True),
    ("mul_self", f_mul_self, ((3, 4),), False),
    ("copy_broadcast", f_copy_broadcast, ((3, 4), (4,)), False),
    ("zero_", f_zero_, ((3, 4),), False),
    ("fill_", f_fill_, ((3, 4),), False),
    ("setitem_row", f_setitem_row, ((3, 4), (4,)), False),
    ("setitem_scalar_and_mask", f_setitem_scalar_and_mask, ((3, 4),), False),
    ("setitem_list", f_setitem_list, ((3, 4), (2, 4)), False),
    ("operators", f_operators, ((3, 4), (4,)), False),
    ("chain", f_chain, ((3, 4), (4,)), False),
    ("out_of_place_before", f_out_of_place_before, ((3, 4), (4,)), False),
]


@pytest.mark.parametrize("name,fn,shapes,pos", RECORDED, ids=[r[0] for r in RECORDED])
def test_recorded_inplace_gradcheck(name, fn, shapes, pos, rng):
    inputs = _rg(rng, *shapes, pos=pos)
    assert gradcheck(fn, inputs)


@pytest.mark.parametrize("name,fn,shapes,pos", RECORDED, ids=[r[0] for r in RECORDED])
def test_recorded_inplace_gradgradcheck(name, fn, shapes, pos, rng):
    inputs = _rg(rng, *shapes, pos=pos)
    assert gradgradcheck(fn, inputs)


def test_recorded_inplace_replaces_grad_fn():
    x = f64(np.ones((2, 3)), requires_grad=True)
    z = f64([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2.0
    old = y.grad_fn
    v0 = y._version
    r = y.add_(z)
    assert r is y
    assert y.grad_fn is not None and y.grad_fn is not old
    assert y.grad_fn.name().endswith("Backward")
    assert y.requires_grad and not y.is_leaf
    assert y._version == v0 + 1
    # the old history is still reachable from the new node
    assert any(n is old for n, _ in y.grad_fn.next_functions)
    y.sum().backward()
    assert_close(x.grad, np.full((2, 3), 2.0), rtol=0, atol=0)
    assert_close(z.grad, [2.0, 2.0, 2.0], rtol=0, atol=0)


def test_recorded_mul_self_gradient_value():
    a = np.array([0.5, -1.5, 2.0])
    x = f64(a, requires_grad=True)
    y = x * 1.0
    y.mul_(y)
    assert_close(y, a * a, rtol=0, atol=0)
    y.sum().backward()
    assert_close(x.grad, 2 * a, rtol=1e-15, atol=0)


def test_zero_gives_zero_gradient_to_history():
    x = f64([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2.0
    y.zero_()
    assert y.requires_grad and y.grad_fn is not None
    (y + 1.0).sum().backward()
    assert x.grad is None or np.array_equal(to_numpy(x.grad), np.zeros(3))


def test_copy_broadcast_gradient_values():
    x = f64(np.ones((3, 4)), requires_grad=True)
    w = f64(_ROW, requires_grad=True)
    y = x * 5.0
    y.copy_(w)
    assert_close(y, np.broadcast_to(_ROW, (3, 4)), rtol=0, atol=0)
    up = np.arange(12.0).reshape(3, 4)
    y.backward(f64(up))
    assert_close(w.grad, up.sum(0), rtol=0, atol=0)
    assert x.grad is None or np.array_equal(to_numpy(x.grad), np.zeros((3, 4)))


def test_setitem_non_leaf_gradient_values():
    x = f64(np.ones((3, 4)), requires_grad=True)
    w = f64(_ROW, requires_grad=True)
    y = x * 2.0
    y[1] = w
    up = np.arange(12.0).reshape(3, 4) + 1
    y.backward(f64(up))
    want_x = 2.0 * up
    want_x[1] = 0.0
    assert_close(x.grad, want_x, rtol=0, atol=0)
    assert_close(w.grad, up[1], rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# the target does not require grad, the value does
# ---------------------------------------------------------------------------------------------

def test_setitem_value_requires_grad_target_does_not():
    buf = lucid.zeros(3, dtype=lucid.float64)
    w = f64([5.0, 6.0], requires_grad=True)
    buf[1:] = w
    assert_close(buf, [0.0, 5.0, 6.0], rtol=0, atol=0)
    assert buf.requires_grad and buf.grad_fn is not None and not buf.is_leaf
    assert buf._version == 1
    (buf * f64([1.0, 2.0, 3.0])).sum().backward()
    assert_close(w.grad, [2.0, 3.0], rtol=0, atol=0)


@pytest.mark.parametrize("op", ["add_", "mul_", "copy_", "setitem_mask"])
def test_value_requires_grad_target_does_not(op, rng):
    def fn(w):
        buf = lucid.ones((2, 3), dtype=lucid.float64)
        if op == "add_":
            buf.add_(w)
        elif op == "mul_":
            buf.mul_(w)
        elif op == "copy_":
            buf.copy_(w)
        else:
            buf[lucid.tensor(np.array([[True, False, True], [False, True, True]]))] = w[0]
        return buf * buf
    w = lucid.tensor(rng.standard_normal(3), dtype=lucid.float64, requires_grad=True)
    out = fn(w)
    assert out.requires_grad
    assert gradcheck(fn, (w,))
    assert gradgradcheck(fn, (w,))


def test_value_requires_grad_under_no_grad_is_not_recorded():
    buf = lucid.zeros(3, dtype=lucid.float64)
    w = f64([5.0, 6.0], requires_grad=True)
    with lucid.no_grad():
        buf[1:] = w
    assert not buf.requires_grad and buf.grad_fn is None and buf.is_leaf
    assert buf._version == 1
    assert_close(buf, [0.0, 5.0, 6.0], rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# a saved tensor changed in place after it was saved
# ---------------------------------------------------------------------------------------------

def _has_number(msg, n):
    return re.search(rf"(?<![\d.]){n}(?!\.?\d)", msg) is not None


def test_saved_output_changed_in_place_tanh():
    x = f64([0.1, -0.4, 0.9], requires_grad=True)
    y = x.tanh()                    # tanh saves its output (version 0)
    y.add_(1.0)
    y.add_(1.0)
    y.add_(1.0)                     # now at version 3
    with pytest.raises(RuntimeError) as ei:
        y.sum().backward()
    msg = str(ei.value)
    assert "TanhBackward" in msg, msg
    assert _has_number(msg, 0) and _has_number(msg, 3), msg
    assert x.grad is None
    assert_close(y, np.tanh([0.1, -0.4, 0.9]) + 3.0, rtol=1e-15, atol=0)


def test_saved_input_changed_in_place_mul():
    x = f64([0.5, 1.0, -2.0], requires_grad=True)
    a = x * 1.0
    a.add_(0.5)
    a.add_(0.5)                     # version 2
    b = a * a                       # MulBackward saves a at version 2
    a.add_(1.0)
    a.add_(1.0)
    a.add_(1.0)                     # version 5
    with pytest.raises(RuntimeError) as ei:
        b.sum().backward()
    msg = str(ei.value)
    assert "MulBackward" in msg, msg
    assert _has_number(msg, 2) and _has_number(msg, 5), msg
    assert x.grad is None


def test_saved_tensor_changed_by_setitem_detected():
    x = f64([0.5, 1.0, -2.0], requires_grad=True)
    a = x * 1.0
    b = a.exp() * a                 # the MulBackward saves a (and exp's output)
    a[0] = 7.0
    with pytest.raises(RuntimeError) as ei:
        b.sum().backward()
    assert "Backward" in str(ei.value)
    assert x.grad is None


def test_saved_tensor_changed_under_no_grad_detected():
    x = f64([0.5, 1.0, -2.0], requires_grad=True)
    y = x.exp()                     # ExpBackward saves its output
    with lucid.no_grad():
        y.mul_(2.0)
    with pytest.raises(RuntimeError) as ei:
        y.sum().backward()
    assert "ExpBackward" in str(ei.value)
    assert x.grad is None


def test_change_of_unsaved_tensor_is_fine():
    a0 = np.array([0.5, 1.0, -2.0])
    x = f64(a0, requires_grad=True)
    y = x * 2.0
    s = (y + 1.0) * 3.0             # y + 1 saves nothing; the multiply saves a scalar only
    y.add_(100.0)
    s.sum().backward()
    assert_close(x.grad, np.full(3, 6.0), rtol=0, atol=0)
    e = x.exp()
    t = e.sum()
    z = x * 1.0
    u = z.exp()                     # exp saves its output u, not its input z
    z.mul_(5.0)
    (u.sum() + t).backward()
    assert_close(x.grad, 6.0 + 2 * np.exp(a0), rtol=1e-14, atol=0)


# ---------------------------------------------------------------------------------------------
# in-place on views that take part in the graph: a RuntimeError or the right gradient
# ---------------------------------------------------------------------------------------------

def _np_view_mul(a):
    base = a * 1.0
    v = base[1:]
    v *= 2.0
    return base * base


def _lu_view_mul(x):
    base = x * 1.0
    v = base[1:]
    v.mul_(2.0)
    return base * base


def _np_view_T_add(a, w):
    base = a * 1.0
    base.T[...] += w
    return base.sum(0) * base[0]


def _lu_view_T_add(x, w):
    base = x * 1.0
    v = base.T
    v.add_(w)
    return base.sum(0) * base[0]


def _np_view_copy(a, w):
    base = a * 1.0
    base[0][...] = w
    return base * a


def _lu_view_copy(x, w):
    base = x * 1.0
    v = base[0]
    v.copy_(w)
    return base * x


def _np_view_zero(a):
    base = a * 1.0
    base[:, 1] = 0.0
    return (base * base).sum(1)


def _lu_view_zero(x):
    base = x * 1.0
    v = base[:, 1]
    v.zero_()
    return (base * base).sum(1)


def _np_view_setitem(a, w):
    base = a * 1.0
    base[1][2] = w
    return base * base


def _lu_view_setitem(x, w):
    base = x * 1.0
    v = base[1]
    v[2] = w
    return base * base


def _np_view_of_saved(a):
    base = np.exp(a)
    base[0] *= 3.0
    return base


def _lu_view_of_saved(x):
    base = x.exp()
    v = base[0]
    v.mul_(3.0)
    return base


def _np_view_used_after(a):
    base = a * 1.0
    v = base[1:]
    v *= 2.0
    return v.sum(0) * base[0]


def _lu_view_used_after(x):
    base = x * 1.0
    v = base[1:]
    v.mul_(2.0)
    return v.sum(0) * base[0]


def _lu_view_of_view(x):
    base = x * 1.0
    v = base[1:].T
    v.add_(1.0)
    return base * base


def _np_view_of_view_simple(a):
    base = a * 1.0
    base[1:].T[...] += 1.0
    return base * base


def _np_base_changed_view_used(a):
    base = a * 1.0
    v = base[0]
    base *= 2.0
    return v * 3.0 + v * v


def _lu_base_changed_view_used(x):
    base = x * 1.0
    v = base[0]
    base.mul_(2.0)
    return v * 3.0 + v * v


def _np_base_setitem_view_used(a, w):
    base = a * 1.0
    v = base[:, 0]
    base[1] = w
    return v * v


def _lu_base_setitem_view_used(x, w):
    base = x * 1.0
    v = base[:, 0]
    base[1] = w
    return v * v


def _np_base_changed_view_T(a):
    base = a * 1.0
    vt = base.T
    base += a
    return vt * vt


def _lu_base_changed_view_T(x):
    base = x * 1.0
    vt = base.T
    base.add_(x)
    return vt * vt


VIEW_CASES = [
    ("view_mul_", _lu_view_mul, _np_view_mul, ((3, 4),)),
    ("view_T_add_", _lu_view_T_add, _np_view_T_add, ((3, 4), (3,))),
    ("view_copy_", _lu_view_copy, _np_view_copy, ((3, 4), (4,))),
    ("view_zero_", _lu_view_zero, _np_view_zero, ((3, 4),)),
    ("view_setitem", _lu_view_setitem, _np_view_setitem, ((3, 4), ())),
    ("view_of_saved_output", _lu_view_of_saved, _np_view_of_saved, ((3, 4),)),
    ("view_used_after", _lu_view_used_after, _np_view_used_after, ((3, 4),)),
    ("view_of_view", _lu_view_of_view, _np_view_of_view_simple, ((3, 4),)),
    ("base_changed_then_view_used", _lu_base_changed_view_used, _np_base_changed_view_used, ((3, 4),)),
    ("base_setitem_then_view_used", _lu_base_setitem_view_used, _np_base_setitem_view_used,
     ((3, 4), (4,))),
    ("base_changed_then_T_used", _lu_base_changed_view_T, _np_base_changed_view_T, ((3, 4),)),
]


@pytest.mark.parametrize("name,lu,ref,shapes", VIEW_CASES, ids=[c[0] for c in VIEW_CASES])
def test_inplace_on_view_error_or_correct_gradient(name, lu, ref, shapes, rng):
    arrays = [rng.standard_normal(s) for s in shapes]
    leaves = [f64(a, requires_grad=True) for a in arrays]
    try:
        out = lu(*leaves)
    except RuntimeError:
        # refused at the in-place call: the leaves and their .grad are untouched
        for t, a in zip(leaves, arrays):
            assert_close(t, a, rtol=0, atol=0)
            assert t.grad is None
        return
    # the forward value is NumPy's (in-place through views behaves like NumPy's views)
    expected = ref(*[a.copy() for a in arrays])
    assert_close(out, expected, rtol=1e-13, atol=1e-13)
    up = rng.standard_normal(expected.shape)
    try:
        out.backward(f64(up))
    except RuntimeError:
        for t in leaves:
            assert t.grad is None
        return
    want = numerical_vjp(ref, arrays, up)
    for i, (t, g) in enumerate(zip(leaves, want)):
        got = np.zeros(t.shape) if t.grad is None else to_numpy(t.grad)
        np.testing.assert_allclose(got, g, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{name}: wrong gradient for input {i} "
                                           "(must raise RuntimeError or be right)")


def test_view_ops_under_no_grad_on_graph_views_only_write():
    x = f64(np.ones((2, 3)), requires_grad=True)
    base = x * 1.0
    v = base[0]
    with lucid.no_grad():
        v.mul_(4.0)
    assert_close(base, [[4.0, 4.0, 4.0], [1.0, 1.0, 1.0]], rtol=0, atol=0)
    assert base._version == 1 and v._version == 1


@pytest.mark.parametrize("op", ["mul_", "add_tensor", "zero_", "setitem", "copy_", "imul"])
def test_refused_inplace_on_graph_view_changes_nothing(op):
    # whether lucid records this or refuses it, a refusal must leave the memory untouched,
    # and an accepted change must be the right one
    a = np.arange(12.0).reshape(3, 4)
    x = f64(a, requires_grad=True)
    base = x * 1.0
    v = base[1:]
    b0 = base._version
    expected = a.copy()
    try:
        if op == "mul_":
            expected[1:] *= 2.0
            v.mul_(2.0)
        elif op == "add_tensor":
            expected[1:] += _ROW
            v.add_(f64(_ROW))
        elif op == "zero_":
            expected[1:] = 0.0
            v.zero_()
        elif op == "setitem":
            expected[1:][0, 1] = 9.0
            v[0, 1] = 9.0
        elif op == "copy_":
            expected[1:] = _ROW
            v.copy_(f64(_ROW))
        else:
            expected[1:] *= 3.0
            v *= 3.0
    except RuntimeError:
        assert_close(base, a, rtol=0, atol=0)
        assert base._version == b0
        return
    assert_close(base, expected, rtol=0, atol=0)
    assert base._version == b0 + 1
