"""Nested forward mode (API.md sections 7 and 14): dual levels nest with int ids, make_dual and
unpack_dual work at the innermost level unless given level=, levels exit in LIFO order, a dual of
a dual keeps its outer tangent, and perturbations at different levels never mix. Second (and
third) derivatives by forward-over-forward are compared with central finite differences in
float64, and with torch.func when torch is importable."""
import numpy as np
import pytest

import lucid
import lucid.autograd.forward_ad as fwAD
from lucid.func import hessian, jacfwd, jacrev, jvp
from support.checks import f64

try:
    import torch
    import torch.func as tfunc
except ImportError:                       # torch is optional: those comparisons skip
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not importable: no comparison "
                                                       "with torch.func")


def npv(t):
    return np.array(t.detach().numpy(), dtype=np.float64)


def tangent(x, level=None):
    return fwAD.unpack_dual(x, level=level).tangent


# -- the level API ---------------------------------------------------------------------------

def test_levels_nest_with_increasing_int_ids_and_exit_in_order():
    assert lucid._core._current_dual_level() is None
    with fwAD.dual_level() as outer:
        assert isinstance(outer, int)
        assert lucid._core._current_dual_level() == outer
        with fwAD.dual_level() as inner:
            assert isinstance(inner, int) and inner > outer
            assert lucid._core._current_dual_level() == inner
        assert lucid._core._current_dual_level() == outer
    assert lucid._core._current_dual_level() is None


def test_make_dual_and_unpack_dual_default_to_the_innermost_level():
    p = f64([1.0, 2.0])
    with fwAD.dual_level() as outer:
        with fwAD.dual_level() as inner:
            d = fwAD.make_dual(p, f64([3.0, 4.0]))
            assert tangent(d).tolist() == [3.0, 4.0]
            assert tangent(d, inner).tolist() == [3.0, 4.0]
            assert tangent(d, outer) is None
            e = fwAD.make_dual(p, f64([5.0, 6.0]), level=outer)
            assert tangent(e) is None
            assert tangent(e, outer).tolist() == [5.0, 6.0]


def test_dual_of_a_dual_keeps_its_outer_tangent():
    p = f64([1.0, 2.0])
    with fwAD.dual_level() as outer:
        x = fwAD.make_dual(p, f64([1.0, 1.0]))
        with fwAD.dual_level() as inner:
            y = fwAD.make_dual(x, f64([2.0, 3.0]))
            assert tangent(y, inner).tolist() == [2.0, 3.0]
            assert tangent(y, outer).tolist() == [1.0, 1.0]
            primal, t = fwAD.unpack_dual(y)
            assert t.tolist() == [2.0, 3.0]
            assert tangent(primal, inner) is None
            assert tangent(primal, outer).tolist() == [1.0, 1.0]    # the primal stays a dual
            z = y * y                           # z = x^2 + 2 x e2 t2: each level on its own
            assert tangent(z, inner).tolist() == [4.0, 12.0]
            assert tangent(z, outer).tolist() == [2.0, 4.0]
        assert tangent(z).tolist() == [2.0, 4.0]                    # the inner one is gone
        assert tangent(x).tolist() == [1.0, 1.0]
    assert p.tolist() == [1.0, 2.0]


def test_leaving_the_inner_level_drops_only_its_tangents():
    with fwAD.dual_level() as outer:
        x = fwAD.make_dual(f64([2.0]), f64([1.0]))
        with fwAD.dual_level():
            y = fwAD.make_dual(x, f64([10.0]))
            w = y.exp()
        assert np.allclose(npv(tangent(w)), np.exp(2.0))
        assert tangent(w, outer) is tangent(w)
        with fwAD.dual_level() as again:
            assert tangent(w, again) is None


def test_exiting_an_outer_level_while_an_inner_is_open_raises_and_changes_nothing():
    outer = fwAD.enter_dual_level()
    inner = fwAD.enter_dual_level()
    try:
        x = fwAD.make_dual(f64([1.0]), f64([2.0]), level=outer)
        y = fwAD.make_dual(x, f64([3.0]), level=inner)
        with pytest.raises(RuntimeError, match=rf"exit_dual_level: level {outer} is not the "
                                               rf"innermost dual level \({inner} is\)"):
            fwAD.exit_dual_level(level=outer)
        assert lucid._core._current_dual_level() == inner
        assert tangent(y * 2.0, outer).tolist() == [4.0]
        assert tangent(y * 2.0, inner).tolist() == [6.0]
    finally:
        fwAD.exit_dual_level(level=inner)
        fwAD.exit_dual_level(level=outer)
    assert lucid._core._current_dual_level() is None


def test_bad_levels_raise_naming_the_function():
    with fwAD.dual_level() as level:
        x = f64([1.0])
        with pytest.raises(RuntimeError, match=rf"make_dual: level {level + 100} is not an "
                                               "active dual level of this thread"):
            fwAD.make_dual(x, f64([1.0]), level=level + 100)
        with pytest.raises(RuntimeError, match=rf"unpack_dual: level {level + 100} is not an "
                                               "active dual level"):
            fwAD.unpack_dual(x, level=level + 100)
        with pytest.raises(TypeError, match="make_dual: level must be an int"):
            fwAD.make_dual(x, f64([1.0]), level="inner")
        with pytest.raises(RuntimeError, match=rf"exit_dual_level: level {level + 100} is not "
                                               "an active dual level"):
            fwAD.exit_dual_level(level=level + 100)
        assert lucid._core._current_dual_level() == level
        assert tangent(x) is None
    with pytest.raises(RuntimeError, match="no dual level is active"):
        fwAD.exit_dual_level()


def test_dual_level_context_exits_its_own_level_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with fwAD.dual_level():
            with fwAD.dual_level():
                1 / 0
    assert lucid._core._current_dual_level() is None


# -- perturbation confusion ------------------------------------------------------------------

def test_perturbation_confusion_func_jvp_gives_one():
    one = f64(1.0)
    _, t = jvp(lambda x: x * jvp(lambda y: x + y, (one,), (one,))[1], (one,), (one,))
    assert t.item() == 1.0
    # the same with the inner tangent depending on x: d/dx [x * d/dy (x * y)] = 2 x
    x0 = f64(1.5)
    _, t = jvp(lambda x: x * jvp(lambda y: x * y, (one,), (one,))[1], (x0,), (one,))
    assert t.item() == pytest.approx(3.0, rel=1e-14)


def test_perturbation_confusion_with_forward_ad_levels():
    with fwAD.dual_level() as outer:
        x = fwAD.make_dual(f64(1.0), f64(1.0))
        with fwAD.dual_level():
            y = fwAD.make_dual(f64(1.0), f64(1.0))
            inner = tangent(x + y)                # d/dy (x + y) = 1, not 2
        assert inner.item() == 1.0
        assert tangent(inner) is None             # it does not depend on x
        assert tangent(x * inner, outer).item() == 1.0


@needs_torch
def test_perturbation_confusion_matches_torch_func():
    one = torch.tensor(1.0, dtype=torch.float64)
    _, t = tfunc.jvp(lambda x: x * tfunc.jvp(lambda y: x + y, (one,), (one,))[1], (one,), (one,))
    o = f64(1.0)
    _, ours = jvp(lambda x: x * jvp(lambda y: x + y, (o,), (o,))[1], (o,), (o,))
    assert ours.item() == t.item()


# -- second and third derivatives ------------------------------------------------------------

def f_lucid(x):
    """A vector function of several op kinds: R^3 -> R^2."""
    a = (x.sin() * x.exp()).sum()
    b = (x * x).tanh() @ x + (x / (1.0 + x * x)).sum() + x.pow(3).mean()
    return lucid.stack([a, b.sigmoid()])


def f_numpy(x):
    a = np.sum(np.sin(x) * np.exp(x))
    b = np.tanh(x * x) @ x + np.sum(x / (1.0 + x * x)) + np.mean(x ** 3)
    return np.array([a, 1.0 / (1.0 + np.exp(-b))])


def f_torch(x):
    a = (x.sin() * x.exp()).sum()
    b = (x * x).tanh() @ x + (x / (1.0 + x * x)).sum() + x.pow(3).mean()
    return torch.stack([a, b.sigmoid()])


X = np.array([0.3, -0.7, 1.1])
U = np.array([1.0, 0.5, -2.0])
V = np.array([-0.25, 1.5, 0.75])


def fd_jacobian(fn, x, eps=1e-6):
    cols = [(fn(x + eps * e) - fn(x - eps * e)) / (2 * eps) for e in np.eye(len(x))]
    return np.stack(cols, axis=-1)


def fd_hessian_of_vector_fn(fn, x, eps=1e-4):
    """H[i, j, k] = d^2 fn_i / dx_j dx_k by central differences of central differences."""
    return fd_jacobian(lambda y: fd_jacobian(fn, y, eps), x, eps)


def test_jacfwd_of_jacfwd_matches_finite_differences():
    H = jacfwd(jacfwd(f_lucid))(f64(X))
    assert tuple(H.shape) == (2, 3, 3)
    np.testing.assert_allclose(npv(H), fd_hessian_of_vector_fn(f_numpy, X), rtol=1e-5, atol=1e-6)


def test_jacfwd_of_jacfwd_matches_jacrev_of_jacrev():
    x = f64(X)
    np.testing.assert_allclose(npv(jacfwd(jacfwd(f_lucid))(x)), npv(jacrev(jacrev(f_lucid))(x)),
                               rtol=1e-12, atol=1e-12)


@needs_torch
def test_jacfwd_of_jacfwd_matches_torch_func():
    ours = npv(jacfwd(jacfwd(f_lucid))(f64(X)))
    theirs = tfunc.jacfwd(tfunc.jacfwd(f_torch))(torch.tensor(X)).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def second_directional(fn, x, u, v):
    """d/ds d/dt fn(x + s v + t u) at 0 by jvp over jvp."""
    def inner(y):
        return jvp(fn, (y,), (f64(u),))[1]
    return jvp(inner, (f64(x),), (f64(v),))[1]


def test_jvp_over_jvp_matches_finite_differences():
    got = npv(second_directional(f_lucid, X, U, V))
    eps = 1e-4
    d1 = lambda y: (f_numpy(y + eps * U) - f_numpy(y - eps * U)) / (2 * eps)   # noqa: E731
    want = (d1(X + eps * V) - d1(X - eps * V)) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@needs_torch
def test_jvp_over_jvp_matches_torch_func():
    ours = npv(second_directional(f_lucid, X, U, V))
    tu, tv = torch.tensor(U), torch.tensor(V)
    theirs = tfunc.jvp(lambda y: tfunc.jvp(f_torch, (y,), (tu,))[1], (torch.tensor(X),),
                       (tv,))[1].numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_third_derivative_by_three_levels():
    # d^3/dx^3 [sin(x) exp(x)] = 2 e^x (cos x - sin x), and by finite differences
    def d(fn):
        return lambda y: jvp(fn, (y,), (f64(1.0),))[1]
    x0 = 0.4
    got = d(d(d(lambda y: y.sin() * y.exp())))(f64(x0)).item()
    g = lambda y: np.sin(y) * np.exp(y)                                      # noqa: E731
    h = 1e-3
    want = (g(x0 + 2 * h) - 2 * g(x0 + h) + 2 * g(x0 - h) - g(x0 - 2 * h)) / (2 * h ** 3)
    assert got == pytest.approx(want, rel=1e-5)
    exact = 2 * np.exp(x0) * (np.cos(x0) - np.sin(x0))
    assert got == pytest.approx(exact, rel=1e-12)


def test_hessian_by_forward_over_forward_of_a_scalar_function():
    def loss(x):
        return (x.exp() * x.cos()).sum() + (x[0] * x[1] * x[2]) ** 2
    def loss_np(x):
        return np.sum(np.exp(x) * np.cos(x)) + (x[0] * x[1] * x[2]) ** 2
    H = npv(jacfwd(jacfwd(loss))(f64(X)))
    eps = 1e-4
    grad_np = lambda y: np.array([(loss_np(y + eps * e) - loss_np(y - eps * e)) / (2 * eps)  # noqa
                                  for e in np.eye(3)])
    want = fd_jacobian(grad_np, X, eps)
    np.testing.assert_allclose(H, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(H, npv(hessian(loss)(f64(X))), rtol=1e-12, atol=1e-12)


# -- custom Functions, in-place ops and reverse mode under nested levels --------------------

class Cube(lucid.autograd.Function):
    """y = x^3, jvp 3 x^2 t (written with lucid ops, so it is differentiable at outer levels)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_forward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        raise AssertionError("not used")

    @staticmethod
    def jvp(ctx, t):
        x, = ctx.saved_tensors
        return 3.0 * x * x * t


def test_custom_function_jvp_runs_at_each_level():
    x0 = 0.7
    got = jvp(lambda y: jvp(Cube.apply, (y,), (f64(1.0),))[1], (f64(x0),), (f64(1.0),))[1]
    assert got.item() == pytest.approx(6 * x0, rel=1e-14)


def test_inplace_op_under_nested_levels_matches_finite_differences():
    def fn(y):
        z = y * 1.0
        z.mul_(y.sin())
        z.add_(y)
        return z
    def fn_np(y):
        return y * np.sin(y) + y
    got = npv(second_directional(fn, X, U, V))
    eps = 1e-4
    d1 = lambda y: (fn_np(y + eps * U) - fn_np(y - eps * U)) / (2 * eps)     # noqa: E731
    want = (d1(X + eps * V) - d1(X - eps * V)) / (2 * eps)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_reverse_over_nested_forward():
    # grad of d/ds d/dt f(x + s v + t u) with respect to x: third derivatives, checked by FD
    x = f64(X, requires_grad=True)
    def second(y):
        return jvp(lambda z: jvp(lambda w: (w.sin() * w).sum(), (z,), (f64(U),))[1],
                   (y,), (f64(V),))[1]
    out = second(x)
    g, = lucid.autograd.grad(out, (x,))
    # d/dx_k sum_i u_i v_i (x_i sin x_i)'' = u_k v_k (x sin x)''' at x_k
    third = lambda y: -3 * np.sin(y) - y * np.cos(y)                          # noqa: E731
    np.testing.assert_allclose(npv(g), U * V * third(X), rtol=1e-10, atol=1e-12)


def test_forward_over_reverse_under_nested_levels_keeps_every_levels_tangent():
    # exp saves its output for backward; the gradient exp(x) read back from it is a dual at
    # both levels (d/dx exp(x) along each level's perturbation: exp(x) * 1)
    p = f64([0.3, -1.2], requires_grad=True)
    with fwAD.dual_level() as outer:
        x = fwAD.make_dual(p, f64([1.0, 1.0]))
        with fwAD.dual_level() as inner:
            y = fwAD.make_dual(x, f64([2.0, 3.0])).exp()
            g, = lucid.autograd.grad(y.sum(), (p,), create_graph=True)
            want = np.exp([0.3, -1.2])
            np.testing.assert_allclose(npv(g), want, rtol=1e-14)
            np.testing.assert_allclose(npv(tangent(g, inner)), want * [2.0, 3.0], rtol=1e-14)
            np.testing.assert_allclose(npv(tangent(g, outer)), want, rtol=1e-14)
