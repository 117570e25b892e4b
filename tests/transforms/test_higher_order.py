"""create_graph=True for built-in ops (API.md section 3): second and third derivatives against
analytic ones, a Hessian-vector product of a small MLP against finite differences of its
(NumPy) gradient, a gradient penalty, the .grad replace-vs-accumulate rule, retain_graph's default.
"""
import numpy as np
import pytest

import lucid
from support.checks import assert_close, f64, to_numpy

grad = lucid.autograd.grad

PTS = np.array([-1.3, -0.2, 0.4, 1.1])
PTS_POS = np.array([0.3, 0.8, 1.5, 2.2])
LN2 = np.log(2.0)


def _sig(a):
    return 1.0 / (1.0 + np.exp(-a))


# name, f, f', f'', points
SECOND = [
    ("cube", lambda x: x ** 3, lambda a: 3 * a ** 2, lambda a: 6 * a, PTS),
    ("cube_by_mul", lambda x: x * x * x, lambda a: 3 * a ** 2, lambda a: 6 * a, PTS),
    ("sin", lambda x: x.sin(), np.cos, lambda a: -np.sin(a), PTS),
    ("cos", lambda x: lucid.cos(x), lambda a: -np.sin(a), lambda a: -np.cos(a), PTS),
    ("tanh", lambda x: x.tanh(), lambda a: 1 - np.tanh(a) ** 2,
     lambda a: -2 * np.tanh(a) * (1 - np.tanh(a) ** 2), PTS),
    ("exp_times_x", lambda x: x.exp() * x, lambda a: np.exp(a) * (a + 1),
     lambda a: np.exp(a) * (a + 2), PTS),
    ("sigmoid", lambda x: lucid.sigmoid(x), lambda a: _sig(a) * (1 - _sig(a)),
     lambda a: _sig(a) * (1 - _sig(a)) * (1 - 2 * _sig(a)), PTS),
    ("log", lambda x: x.log(), lambda a: 1 / a, lambda a: -1 / a ** 2, PTS_POS),
    ("sqrt", lambda x: lucid.sqrt(x), lambda a: 0.5 / np.sqrt(a), lambda a: -0.25 * a ** -1.5,
     PTS_POS),
    ("pow_2_5", lambda x: x ** 2.5, lambda a: 2.5 * a ** 1.5, lambda a: 3.75 * a ** 0.5, PTS_POS),
    ("rpow", lambda x: 2.0 ** x, lambda a: LN2 * 2.0 ** a, lambda a: LN2 ** 2 * 2.0 ** a, PTS),
    ("reciprocal", lambda x: 1.0 / x, lambda a: -1 / a ** 2, lambda a: 2 / a ** 3, PTS_POS),
    ("div_by_self_plus", lambda x: x / (x * x + 1.0), lambda a: (1 - a ** 2) / (1 + a ** 2) ** 2,
     lambda a: 2 * a * (a ** 2 - 3) / (1 + a ** 2) ** 3, PTS),
    ("abs_cubed", lambda x: x.abs() * x * x, lambda a: 3 * a * np.abs(a), lambda a: 6 * np.abs(a),
     PTS),
    ("relu_sq", lambda x: x.relu() * x, lambda a: 2 * np.maximum(a, 0), lambda a: 2.0 * (a > 0), PTS),
    ("clamp_sq", lambda x: x.clamp(min=-1.0, max=1.0) ** 2,
     lambda a: 2 * np.clip(a, -1, 1) * (np.abs(a) < 1), lambda a: 2.0 * (np.abs(a) < 1), PTS),
    ("exp_of_sin", lambda x: x.sin().exp(), lambda a: np.cos(a) * np.exp(np.sin(a)),
     lambda a: (np.cos(a) ** 2 - np.sin(a)) * np.exp(np.sin(a)), PTS),
]


@pytest.mark.parametrize("name,f,d1,d2,pts", SECOND, ids=[s[0] for s in SECOND])
def test_second_derivative_elementwise(name, f, d1, d2, pts):
    x = f64(pts, requires_grad=True)
    (g,) = grad(f(x).sum(), x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    assert_close(g, d1(pts), rtol=1e-12, atol=1e-12)
    (h,) = grad(g.sum(), x)
    assert_close(h, d2(pts), rtol=1e-10, atol=1e-12)
    assert x.grad is None      # grad() writes no .grad


@pytest.mark.parametrize("name,f,d1,d2,pts", SECOND[:8], ids=[s[0] for s in SECOND[:8]])
def test_second_derivative_0d_via_backward(name, f, d1, d2, pts):
    a = float(pts[2])
    x = f64(a, requires_grad=True)
    f(x).backward(create_graph=True)
    g = x.grad
    assert g.shape == () and g.requires_grad and g.grad_fn is not None
    assert_close(g, np.array(d1(a)), rtol=1e-12, atol=1e-12)
    x.grad = None
    g.backward()
    assert_close(x.grad, np.array(d2(a)), rtol=1e-10, atol=1e-12)


def test_third_derivatives():
    pts = PTS
    x = f64(pts, requires_grad=True)
    (g1,) = grad((x ** 3).sum() + x.sin().sum(), x, create_graph=True)
    (g2,) = grad(g1.sum(), x, create_graph=True)
    (g3,) = grad(g2.sum(), x)
    assert_close(g1, 3 * pts ** 2 + np.cos(pts), rtol=1e-12, atol=1e-12)
    assert_close(g2, 6 * pts - np.sin(pts), rtol=1e-12, atol=1e-12)
    assert_close(g3, 6.0 - np.cos(pts), rtol=1e-12, atol=1e-12)


def test_mixed_partials():
    a, b = np.array([0.5, -1.0]), np.array([2.0, 0.3])
    x = f64(a, requires_grad=True)
    y = f64(b, requires_grad=True)
    f = (x * y * y + x.exp() * y.sin()).sum()
    gx, gy = grad(f, (x, y), create_graph=True)
    assert_close(gx, b * b + np.exp(a) * np.sin(b), rtol=1e-12, atol=1e-12)
    assert_close(gy, 2 * a * b + np.exp(a) * np.cos(b), rtol=1e-12, atol=1e-12)
    dxy, = grad(gx.sum(), y, retain_graph=True)
    dyx, = grad(gy.sum(), x, retain_graph=True)
    want = 2 * b + np.exp(a) * np.cos(b)
    assert_close(dxy, want, rtol=1e-12, atol=1e-12)
    assert_close(dyx, want, rtol=1e-12, atol=1e-12)
    dyy, = grad(gy.sum(), y)
    assert_close(dyy, 2 * a - np.exp(a) * np.sin(b), rtol=1e-12, atol=1e-12)


def test_hessian_of_quadratic_form_via_matmul():
    rng = np.random.default_rng(3)
    A = rng.standard_normal((4, 4))
    xa = rng.standard_normal(4)
    x = f64(xa, requires_grad=True)
    At = f64(A)
    f = x @ (At @ x)
    (g,) = grad(f, x, create_graph=True)
    assert_close(g, (A + A.T) @ xa, rtol=1e-12, atol=1e-12)
    rows = []
    for i in range(4):
        (r,) = grad(g[i], x, retain_graph=True)
        rows.append(to_numpy(r))
    assert_close(np.stack(rows), A + A.T, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# Hessian-vector product of a small MLP
# ---------------------------------------------------------------------------------------------

def _mlp_numpy_grad(X, Y, W1, b1, W2, b2, act):
    Z = X @ W1 + b1
    if act == "tanh":
        H = np.tanh(Z)
        dact = 1 - H ** 2
    else:
        H = _sig(Z)
        dact = H * (1 - H)
    P = H @ W2 + b2
    dP = 2 * (P - Y) / P.size
    dW2 = H.T @ dP
    db2 = dP.sum(0)
    dZ = (dP @ W2.T) * dact
    return [X.T @ dZ, dZ.sum(0), dW2, db2]


def _mlp_lucid_loss(X, Y, params, act):
    W1, b1, W2, b2 = params
    z = X @ W1 + b1
    h = z.tanh() if act == "tanh" else z.sigmoid()
    return ((h @ W2 + b2 - Y) ** 2).mean()


@pytest.mark.parametrize("act", ["tanh", "sigmoid"])
def test_mlp_hessian_vector_product_against_finite_differences(act):
    rng = np.random.default_rng(7)
    X, Y = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    theta = [rng.standard_normal((3, 4)) * 0.8, rng.standard_normal(4) * 0.3,
             rng.standard_normal((4, 2)) * 0.8, rng.standard_normal(2) * 0.3]
    vec = [rng.standard_normal(p.shape) for p in theta]
    params = [f64(p, requires_grad=True) for p in theta]
    loss = _mlp_lucid_loss(f64(X), f64(Y), params, act)
    grads = grad(loss, params, create_graph=True)
    # first order equals the hand-derived NumPy gradient
    for g, want in zip(grads, _mlp_numpy_grad(X, Y, *theta, act)):
        assert_close(g, want, rtol=1e-10, atol=1e-12)
    dot = sum((g * f64(v)).sum() for g, v in zip(grads, vec))
    hvp = grad(dot, params)
    eps = 1e-5
    plus = _mlp_numpy_grad(X, Y, *[p + eps * v for p, v in zip(theta, vec)], act)
    minus = _mlp_numpy_grad(X, Y, *[p - eps * v for p, v in zip(theta, vec)], act)
    for i, (h, gp, gm) in enumerate(zip(hvp, plus, minus)):
        assert h.shape == theta[i].shape
        assert_close(h, (gp - gm) / (2 * eps), rtol=1e-6, atol=1e-8, msg=f"param {i}")
    assert all(p.grad is None for p in params)


# ---------------------------------------------------------------------------------------------
# gradient penalty
# ---------------------------------------------------------------------------------------------

def _pen_numpy(X, y, w):
    t = np.tanh(X @ w)
    g = X.T @ (2 * (t - y) / y.size * (1 - t ** 2))
    return g, np.sum(g ** 2)


def test_gradient_penalty():
    rng = np.random.default_rng(11)
    X, y = rng.standard_normal((6, 3)), rng.standard_normal(6)
    wa = rng.standard_normal(3) * 0.5
    w = f64(wa, requires_grad=True)
    loss = (((f64(X) @ w).tanh() - f64(y)) ** 2).mean()
    g = grad(loss, w, create_graph=True)[0]
    g_np, _ = _pen_numpy(X, y, wa)
    assert_close(g, g_np, rtol=1e-10, atol=1e-12)
    assert w.grad is None
    (g ** 2).sum().backward()
    eps = 1e-6
    num = np.zeros(3)
    for k in range(3):
        e = np.zeros(3)
        e[k] = eps
        num[k] = (_pen_numpy(X, y, wa + e)[1] - _pen_numpy(X, y, wa - e)[1]) / (2 * eps)
    assert_close(w.grad, num, rtol=1e-6, atol=1e-9)
    assert not w.grad.requires_grad and w.grad.grad_fn is None


def test_gradient_penalty_plus_loss_with_backward():
    # the common training pattern: loss + lambda * ||dloss/dw||^2 in one backward
    rng = np.random.default_rng(12)
    X, y = rng.standard_normal((6, 3)), rng.standard_normal(6)
    wa = rng.standard_normal(3) * 0.5
    w = f64(wa, requires_grad=True)
    loss = (((f64(X) @ w).tanh() - f64(y)) ** 2).mean()
    (g,) = grad(loss, w, create_graph=True)
    (loss + 0.5 * (g * g).sum()).backward()

    def total(v):
        t = np.tanh(X @ v)
        return np.mean((t - y) ** 2) + 0.5 * _pen_numpy(X, y, v)[1]
    eps = 1e-6
    num = np.array([(total(wa + eps * e) - total(wa - eps * e)) / (2 * eps) for e in np.eye(3)])
    assert_close(w.grad, num, rtol=1e-6, atol=1e-9)


# ---------------------------------------------------------------------------------------------
# .grad: accumulated in place (create_graph=False) vs replaced (create_graph=True)
# ---------------------------------------------------------------------------------------------

def test_grad_accumulates_in_place_without_create_graph():
    a = np.array([0.5, -1.0, 2.0])
    x = f64(a, requires_grad=True)
    (x * x).sum().backward()
    old = x.grad
    assert_close(old, 2 * a, rtol=0, atol=0)
    (x ** 3).sum().backward()
    assert x.grad is old, "without create_graph .grad must be accumulated in place"
    assert_close(x.grad, 2 * a + 3 * a ** 2, rtol=1e-15, atol=0)
    assert not x.grad.requires_grad and x.grad.grad_fn is None


def test_grad_replaced_with_create_graph():
    a = np.array([0.5, -1.0, 2.0])
    x = f64(a, requires_grad=True)
    (x * x).sum().backward()
    old = x.grad
    old_values = to_numpy(old)
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad is not old, "with create_graph .grad must be a new tensor"
    assert_close(old, old_values, rtol=0, atol=0)      # the old tensor was not modified
    assert_close(x.grad, 2 * a + 3 * a ** 2, rtol=1e-15, atol=0)
    assert x.grad.requires_grad and x.grad.grad_fn is not None
    # and it is differentiable: d/dx sum(2a + 3x^2) = 6x (the old part is a constant)
    (h,) = grad(x.grad.sum(), x)
    assert_close(h, 6 * a, rtol=1e-14, atol=0)


def test_grad_replaced_twice_with_create_graph_keeps_graph():
    a = np.array([0.7, -0.4])
    x = f64(a, requires_grad=True)
    x.sin().sum().backward(create_graph=True)
    first = x.grad
    first_values = to_numpy(first)
    (x * x).sum().backward(create_graph=True)
    assert x.grad is not first
    assert_close(first, first_values, rtol=0, atol=0)
    assert_close(x.grad, np.cos(a) + 2 * a, rtol=1e-14, atol=0)
    (h,) = grad(x.grad.sum(), x)
    assert_close(h, -np.sin(a) + 2.0, rtol=1e-14, atol=0)


def test_grad_set_by_user_not_modified_with_create_graph():
    x = f64([1.0, 2.0], requires_grad=True)
    mine = f64([10.0, 20.0])
    x.grad = mine
    (x * x).sum().backward(create_graph=True)
    assert_close(mine, [10.0, 20.0], rtol=0, atol=0)
    assert_close(x.grad, [12.0, 24.0], rtol=0, atol=0)


def test_grad_set_by_user_accumulated_in_place_without_create_graph():
    x = f64([1.0, 2.0], requires_grad=True)
    mine = f64([10.0, 20.0])
    x.grad = mine
    (x * x).sum().backward()
    assert x.grad is mine
    assert_close(mine, [12.0, 24.0], rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# retain_graph defaults to create_graph; create_graph=False gives plain gradients
# ---------------------------------------------------------------------------------------------

def test_retain_graph_defaults_to_create_graph_backward():
    a = np.array([0.3, -0.6])
    x = f64(a, requires_grad=True)
    y = (x.tanh() * x).sum()
    y.backward(create_graph=True)
    d1 = (1 - np.tanh(a) ** 2) * a + np.tanh(a)
    assert_close(x.grad, d1, rtol=1e-14, atol=0)
    y.backward(create_graph=True)        # the graph was retained
    assert_close(x.grad, 2 * d1, rtol=1e-14, atol=0)


def test_retain_graph_defaults_to_create_graph_grad():
    x = f64([0.3, -0.6], requires_grad=True)
    y = (x.exp() * x).sum()
    g1 = grad(y, x, create_graph=True)[0]
    g2 = grad(y, x, create_graph=True)[0]
    assert_close(g1, to_numpy(g2), rtol=0, atol=0)


def test_without_create_graph_graph_is_freed():
    a = np.array([0.3, -0.6])
    x = f64(a, requires_grad=True)
    y = (x.tanh() * x).sum()
    y.backward()
    before = to_numpy(x.grad)
    with pytest.raises(RuntimeError) as ei:
        y.backward()
    assert "retain_graph" in str(ei.value)
    assert_close(x.grad, before, rtol=0, atol=0)
    z = (x.exp() * x).sum()
    grad(z, x)
    with pytest.raises(RuntimeError):
        grad(z, x)


def test_create_graph_false_gradients_are_plain():
    a = np.array([0.3, -0.6])
    x = f64(a, requires_grad=True)
    w = f64([1.5, 2.0], requires_grad=True)
    (x.tanh() * w * x).sum().backward()
    for t in (x, w):
        assert t.grad is not None and not t.grad.requires_grad and t.grad.grad_fn is None
    gx, gw = grad((x.sin() * w).sum(), (x, w))
    for g in (gx, gw):
        assert not g.requires_grad and g.grad_fn is None
    assert_close(gx, np.cos(a) * np.array([1.5, 2.0]), rtol=1e-14, atol=0)
    assert_close(gw, np.sin(a), rtol=1e-14, atol=0)


def test_create_graph_true_gradients_require_grad():
    x = f64([0.3, -0.6], requires_grad=True)
    (g,) = grad((x * x).sum(), x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None and not g.is_leaf


def test_double_backward_through_reductions_and_shapes():
    # d/dx of sum_j (d/dx_j f)^2 for f = sum(amax(x * x, dim=1) + mean(x.T @ x))
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 2))
    x = f64(a, requires_grad=True)
    f = (x * x).amax(dim=1).sum() + (x.T @ x).mean()

    def g_np(v):
        sq = v * v
        m = (sq == sq.max(axis=1, keepdims=True))
        g1 = 2 * v * m
        # d/dv mean(v.T v) = (v @ (ones + ones.T)) / 4
        g2 = v @ (np.ones((2, 2)) * 2) / 4
        return g1 + g2
    (g,) = grad(f, x, create_graph=True)
    assert_close(g, g_np(a), rtol=1e-12, atol=1e-12)
    (g * g).sum().backward()
    eps = 1e-6
    num = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[idx] = eps
        num[idx] = (np.sum(g_np(a + e) ** 2) - np.sum(g_np(a - e) ** 2)) / (2 * eps)
    assert_close(x.grad, num, rtol=1e-6, atol=1e-8)
