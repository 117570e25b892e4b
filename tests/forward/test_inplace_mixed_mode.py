"""Every in-place op under forward-over-reverse and reverse-over-forward (API.md section 7).

For f(x, v) built with one in-place op (recorded: its target is a non-leaf), u a cotangent and
t = (tx, tv) tangents, both mixed modes compute the Hessian-vector product H_u t of u . f:
* forward-over-reverse: the tangent of the gradient of u . f, taken in the dual level;
* reverse-over-forward: the gradient of u . (J t), the tangent made in the dual level.
Each is checked against central finite differences (float64) of the plain reverse-mode gradient
along t, and against the same computed with the op written out of place; the first-order parts
(the gradient itself, the tangent J t, and the gradient with respect to the tangents, J^T u) too.
Note [In-place tangents] (lucid/ops/elementwise/inplace.pxi): what a recorded in-place op saves for its
backward (the old value, for mul_ and div_) keeps its tangent.
"""
import numpy as np
import pytest

import lucid
import lucid.autograd.forward_ad as fwAD

F64 = lucid.float64


def _clone(x):
    return x * 1.0                       # a non-leaf: in-place ops on it are recorded


def _add_(x, v):
    c = _clone(x)
    c.add_(v)
    return c * c


def _sub_alpha(x, v):
    c = _clone(x)
    c.sub_(v, alpha=0.5)
    return c.tanh()


def _mul_(x, v):
    c = _clone(x)
    c.mul_(v)
    return c * x


def _imul(x, v):
    c = _clone(x)
    c *= v
    return c


def _div_(x, v):
    c = _clone(x)
    c.div_(v)
    return c * c


def _itruediv(x, v):
    c = _clone(x)
    c /= v
    return c


def _iadd_isub(x, v):
    c = _clone(x)
    c += v
    c -= x * v
    return c * v


def _add_alpha(x, v):
    c = x.tanh() * 1.0                   # (tanh saves its output: changing that would raise)
    c.add_(v, alpha=2.5)
    return c * x


def _mul_self(x, v):
    c = _clone(x)
    c.mul_(c)                            # the value is self: a copy is what is kept
    return c * v


def _div_by_own_view(x, v):
    c = _clone(x) + 2.0 * v * v + 1.0
    c.div_(c[..., :1])                   # the value is a view of self
    return c * x


def _mul_scalar_then_tensor(x, v):
    c = _clone(x)
    c.mul_(3.0).mul_(v).div_(2.0)
    return c.exp()


def _copy_(x, v):
    c = _clone(x)
    c.copy_(v)                           # broadcast
    return c * x


def _fill_zero(x, v):
    c = _clone(x)
    c.fill_(2.0)
    d = _clone(x)
    d.zero_()
    return (c + d) * x * v


def _setitem_row(x, v):
    c = _clone(x)
    c[0] = v * x[0]
    return c * c


def _setitem_list(x, v):
    c = x.exp() * 1.0
    c[[1, 0]] = v
    return c * x


def _chain(x, v):
    c = _clone(x)
    c.add_(v).mul_(v).sub_(1.0).div_(v)
    return c * x


def _cat_rows(first, rest):
    return lucid.cat([first.unsqueeze(0), rest], 0)


# (name, in-place f, the same written out of place, shapes of x and v, v kept away from 0)
CASES = [
    ("add_", _add_, lambda x, v: (x + v) * (x + v), ((2, 3), (3,)), False),
    ("sub_ alpha", _sub_alpha, lambda x, v: (x - 0.5 * v).tanh(), ((2, 3), (2, 1)), False),
    ("mul_", _mul_, lambda x, v: x * v * x, ((2, 3), (3,)), False),
    ("*=", _imul, lambda x, v: x * v, ((3,), (3,)), False),
    ("div_", _div_, lambda x, v: (x / v) * (x / v), ((2, 3), (2, 3)), True),
    ("/=", _itruediv, lambda x, v: x / v, ((3,), ()), True),
    ("+= -=", _iadd_isub, lambda x, v: (x + v - x * v) * v, ((2, 3), (3,)), False),
    ("add_ alpha", _add_alpha, lambda x, v: (x.tanh() + 2.5 * v) * x, ((4,), (4,)), False),
    ("mul_ self", _mul_self, lambda x, v: x * x * v, ((2, 3), (2, 3)), False),
    ("div_ by a view of self", _div_by_own_view,
     lambda x, v: (lambda c: c / c[..., :1] * x)(x + 2.0 * v * v + 1.0), ((2, 3), (2, 3)), False),
    ("mul_ scalar then tensor", _mul_scalar_then_tensor, lambda x, v: (x * 3.0 * v / 2.0).exp(),
     ((2, 2), (2, 1)), False),
    ("copy_", _copy_, lambda x, v: v.expand(2, 3) * x, ((2, 3), (3,)), False),
    ("fill_ zero_", _fill_zero, lambda x, v: (x * 0.0 + 2.0) * x * v, ((3,), (3,)), False),
    ("setitem row", _setitem_row,
     lambda x, v: (lambda c: c * c)(_cat_rows(v * x[0], x[1:])), ((2, 3), (3,)), False),
    ("setitem list", _setitem_list, lambda x, v: lucid.cat([v[1:2], v[0:1], x[2:].exp()]) * x,
     ((4,), (2,)), False),
    ("chain", _chain, lambda x, v: ((x + v) * v - 1.0) / v * x, ((3,), (3,)), True),
]
IDS = [c[0] for c in CASES]
TANGENTS = ["both", "x only", "v only"]


def _point(shapes, nonzero, seed):
    rng = np.random.default_rng(seed)
    x = np.round(rng.standard_normal(shapes[0]), 3)
    v = rng.uniform(0.5, 1.5, shapes[1]) * rng.choice([-1.0, 1.0], shapes[1]) if nonzero else \
        np.round(rng.standard_normal(shapes[1]), 3)
    return [np.asarray(x, np.float64), np.asarray(v, np.float64)]


def _tangents(values, which, seed):
    rng = np.random.default_rng(seed + 1)
    ts = [rng.standard_normal(a.shape) for a in values]
    if which == "x only":
        ts[1] = None
    elif which == "v only":
        ts[0] = None
    return ts


def _leaves(values, dtype=F64, layout="contiguous"):
    out = []
    for a in values:
        if layout == "strided" and a.ndim >= 1:
            a = np.repeat(a, 2, axis=-1)[..., ::2]
        out.append(lucid.from_numpy(np.array(a, np.float64 if dtype == F64 else np.float32))
                   .requires_grad_())
    return out


def _np(t):
    return None if t is None else np.array(t.detach().numpy(), np.float64)


def _cotangent(fn, values, seed):
    out = fn(*_leaves(values))
    return np.random.default_rng(seed + 2).standard_normal(out.shape)


def _vjp(fn, values, u, dtype=F64):
    """The plain reverse-mode gradient of u . fn at values."""
    leaves = _leaves(values, dtype)
    out = fn(*leaves)
    grads = lucid.autograd.grad((out * lucid.tensor(u, dtype=out.dtype)).sum(), leaves,
                                allow_unused=True, materialize_grads=True)
    return [_np(g) for g in grads]


def _hvp_by_differences(fn, values, ts, u, eps=1e-6):
    """Central finite differences of the plain gradient of u . fn along the tangents."""
    step = [np.zeros_like(a) if t is None else t for a, t in zip(values, ts)]
    plus = _vjp(fn, [a + eps * s for a, s in zip(values, step)], u)
    minus = _vjp(fn, [a - eps * s for a, s in zip(values, step)], u)
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus)]


def _forward_over_reverse(fn, values, ts, u, dtype=F64, layout="contiguous"):
    """(gradient of u . fn, its tangent) computed in a dual level."""
    leaves = _leaves(values, dtype, layout)
    with fwAD.dual_level():
        duals = [leaf if t is None else fwAD.make_dual(leaf, lucid.tensor(t, dtype=dtype))
                 for leaf, t in zip(leaves, ts)]
        out = fn(*duals)
        grads = lucid.autograd.grad((out * lucid.tensor(u, dtype=out.dtype)).sum(), leaves,
                                    allow_unused=True, materialize_grads=True)
        tangents = [fwAD.unpack_dual(g).tangent for g in grads]
    return [_np(g) for g in grads], [np.zeros(a.shape) if t is None else _np(t)
                                     for a, t in zip(values, tangents)]


def _reverse_over_forward(fn, values, ts, u, dtype=F64, layout="contiguous"):
    """(the tangent J t, the gradient of u . (J t) for the primals, and for the tangents)."""
    leaves = _leaves(values, dtype, layout)
    tangent_leaves = [None if t is None else lucid.tensor(t, dtype=dtype, requires_grad=True)
                      for t in ts]
    with fwAD.dual_level():
        duals = [leaf if t is None else fwAD.make_dual(leaf, t)
                 for leaf, t in zip(leaves, tangent_leaves)]
        out = fn(*duals)
        jvp = fwAD.unpack_dual(out).tangent
    wrt = leaves + [t for t in tangent_leaves if t is not None]
    grads = lucid.autograd.grad((jvp * lucid.tensor(u, dtype=jvp.dtype)).sum(), wrt,
                                allow_unused=True, materialize_grads=True)
    return _np(jvp), [_np(g) for g in grads[:2]], [_np(g) for g in grads[2:]]


def _close(got, want, rtol=1e-6, atol=1e-7):
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol * (1 + np.max(np.abs(w), initial=0)))


@pytest.mark.parametrize("which", TANGENTS)
@pytest.mark.parametrize("name, fn, outplace, shapes, nonzero", CASES, ids=IDS)
def test_forward_over_reverse_through_inplace_ops(name, fn, outplace, shapes, nonzero, which):
    """Bug (repro_L): c *= v and c /= v lost the term of the old value's tangent."""
    values = _point(shapes, nonzero, 0)
    ts = _tangents(values, which, 0)
    u = _cotangent(fn, values, 0)
    grads, tangents = _forward_over_reverse(fn, values, ts, u)
    _close(grads, _vjp(fn, values, u), 1e-12, 1e-12)
    _close(tangents, _hvp_by_differences(fn, values, ts, u), 1e-5, 1e-6)
    want_grads, want_tangents = _forward_over_reverse(outplace, values, ts, u)
    _close(grads, want_grads, 1e-12, 1e-12)
    _close(tangents, want_tangents, 1e-10, 1e-12)


@pytest.mark.parametrize("which", TANGENTS)
@pytest.mark.parametrize("name, fn, outplace, shapes, nonzero", CASES, ids=IDS)
def test_reverse_over_forward_through_inplace_ops(name, fn, outplace, shapes, nonzero, which):
    values = _point(shapes, nonzero, 1)
    ts = _tangents(values, which, 1)
    u = _cotangent(fn, values, 1)
    jvp, grads, tangent_grads = _reverse_over_forward(fn, values, ts, u)
    eps = 1e-6
    step = [np.zeros_like(a) if t is None else t for a, t in zip(values, ts)]
    with lucid.no_grad():
        fd = (_np(fn(*_leaves([a + eps * s for a, s in zip(values, step)]))) -
              _np(fn(*_leaves([a - eps * s for a, s in zip(values, step)])))) / (2 * eps)
    _close([jvp], [fd], 1e-5, 1e-6)
    _close(grads, _hvp_by_differences(fn, values, ts, u), 1e-5, 1e-6)
    plain = _vjp(fn, values, u)                   # d/dt of u . (J t) is J^T u
    _close(tangent_grads, [g for g, t in zip(plain, ts) if t is not None], 1e-10, 1e-12)
    want = _reverse_over_forward(outplace, values, ts, u)
    _close([jvp], [want[0]], 1e-10, 1e-12)
    _close(grads, want[1], 1e-10, 1e-12)
    _close(tangent_grads, want[2], 1e-10, 1e-12)


@pytest.mark.parametrize("name, fn, outplace, shapes, nonzero", CASES, ids=IDS)
def test_mixed_modes_in_float32_and_strided_leaves_match_out_of_place(name, fn, outplace, shapes,
                                                                      nonzero):
    values = _point(shapes, nonzero, 2)
    ts = _tangents(values, "both", 2)
    u = _cotangent(fn, values, 2)
    for dtype, layout, tol in ((lucid.float32, "contiguous", 2e-4), (F64, "strided", 1e-10)):
        got = _forward_over_reverse(fn, values, ts, u, dtype, layout)
        want = _forward_over_reverse(outplace, values, ts, u, dtype, layout)
        _close(got[0] + got[1], want[0] + want[1], tol, tol)
        got = _reverse_over_forward(fn, values, ts, u, dtype, layout)
        want = _reverse_over_forward(outplace, values, ts, u, dtype, layout)
        _close([got[0]] + got[1] + got[2], [want[0]] + want[1] + want[2], tol, tol)


@pytest.mark.parametrize("shapes", [((), ()), ((0,), (0,)), ((2, 0), (0,))], ids=["0-d", "0-size",
                                                                                  "0-size 2-d"])
@pytest.mark.parametrize("op", ["mul_", "div_", "add_", "copy_"])
def test_mixed_modes_through_inplace_ops_on_0d_and_0size(op, shapes):
    def fn(x, v):
        c = _clone(x)
        getattr(c, op)(v * v + 1.0 if op == "div_" else v)
        return c * x
    values = _point(shapes, False, 3)
    ts = _tangents(values, "both", 3)
    u = _cotangent(fn, values, 3)
    grads, tangents = _forward_over_reverse(fn, values, ts, u)
    assert [g.shape for g in tangents] == [a.shape for a in values]
    _close(tangents, _hvp_by_differences(fn, values, ts, u), 1e-5, 1e-6)
    jvp, rgrads, _ = _reverse_over_forward(fn, values, ts, u)
    _close(rgrads, _hvp_by_differences(fn, values, ts, u), 1e-5, 1e-6)


def test_the_reproducer_values():
    """repro_L: d/dv of sum(2 * (x * v)) has tangent 2 * tx; of sum(2 * x / v): the same as the
    out-of-place quotient (0.5 at x = 1, v = 4, tx = 1, tv = 10)."""
    x = lucid.tensor([1., 2., 3.], dtype=F64, requires_grad=True)
    v = lucid.tensor([4., 5., 6.], dtype=F64, requires_grad=True)
    with fwAD.dual_level():
        xd = fwAD.make_dual(x, lucid.ones(3, dtype=F64))
        vd = fwAD.make_dual(v, lucid.full((3,), 10.0, dtype=F64))
        c = xd.clone()
        c *= vd
        d = xd.clone()
        d /= vd
        _, gv = lucid.autograd.grad((c * 2.0).sum(), (x, v), retain_graph=True)
        _, hv = lucid.autograd.grad((d * 2.0).sum(), (x, v))
        np.testing.assert_allclose(fwAD.unpack_dual(gv).tangent.numpy(), [2.0, 2.0, 2.0])
        np.testing.assert_allclose(fwAD.unpack_dual(hv).tangent.numpy(),
                                   [0.5, 0.56, 0.5], rtol=1e-12)
