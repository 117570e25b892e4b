"""lucid.func: values (SciPy, closed forms, finite differences), argnums and has_aux structures,
compositions and their levels (perturbation confusion), create_graph through each transform,
errors, and the caller's tensors left alone."""
import numpy as np
import pytest
import scipy.optimize as so

import lucid
import lucid.autograd.forward_ad as fwAD
from lucid.func import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp

from .functional_cases import (
    assert_unchanged, fd_jacobian,
    gauss_grad_hess_np, gauss_ll, mlp_data, mlp_grad_np, mlp_loss, rosen, rosen2, smooth,
    smooth_grad_np, smooth_hess_np, snapshot, t64, vector_fn, vector_fn_second_np,
)

X0 = np.array([1.3, 0.7, 0.8, 1.9, 1.2])
V0 = np.array([0.5, -1.0, 2.0, 0.25, -0.75])
JACOBIANS = {"jacrev": jacrev, "jacfwd": jacfwd}


def np_of(t):
    if isinstance(t, lucid.Tensor):
        t = t.detach().numpy()
    return np.array(t, dtype=np.float64)


def close(actual, expected, rtol=1e-7, atol=1e-9):
    np.testing.assert_allclose(np_of(actual), expected, rtol=rtol, atol=atol)


def elementwise_pair(x, y):
    return x.exp() * y, x * x + y.sin()


def test_import_lucid_gives_lucid_func():
    assert lucid.func.grad is grad


# -- grad and grad_and_value ---------------------------------------------------------------------

def test_grad_of_rosenbrock_matches_scipy():
    close(grad(rosen)(t64(X0)), so.rosen_der(X0))


def test_grad_of_mlp_loss_with_argnums_tuple(rng):
    X, Y, W1, b1, W2 = mlp_data(rng)
    grads = grad(mlp_loss(X, Y), argnums=(0, 1, 2))(t64(W1), t64(b1), t64(W2))
    assert isinstance(grads, tuple) and len(grads) == 3
    for got, want in zip(grads, mlp_grad_np(X, Y, W1, b1, W2)):
        close(got, want)
    only_b1 = grad(mlp_loss(X, Y), argnums=1)(t64(W1), t64(b1), t64(W2))
    assert isinstance(only_b1, lucid.Tensor)
    close(only_b1, mlp_grad_np(X, Y, W1, b1, W2)[1])
    last = grad(mlp_loss(X, Y), argnums=-1)(t64(W1), t64(b1), t64(W2))
    close(last, mlp_grad_np(X, Y, W1, b1, W2)[2])


def test_grad_of_gaussian_log_likelihood(rng):
    data = rng.standard_normal(9) + 0.5
    g = grad(gauss_ll(data), argnums=(0, 1))(t64(0.2), t64(-0.1))
    close([np_of(t) for t in g], gauss_grad_hess_np(data, 0.2, -0.1)[0])


def test_grad_and_value_and_has_aux():
    x = t64(X0)
    g, value = grad_and_value(smooth)(x)
    close(g, smooth_grad_np(X0))
    close(value, np.sum(np.exp(X0) * np.sin(X0) + X0 ** 3 / 3))

    def with_aux(t):
        y = t.exp()
        return (y * t).sum(), {"y": y, "n": 5}
    g, aux = grad(with_aux, has_aux=True)(x)
    close(g, np.exp(X0) * (1 + X0))
    assert aux["n"] == 5 and not aux["y"].requires_grad
    close(aux["y"], np.exp(X0))
    g, (value, aux) = grad_and_value(with_aux, has_aux=True)(x)
    close(value, np.sum(np.exp(X0) * X0))


def test_grad_passes_other_arguments_through():
    f = lambda scale, x, name: (x * x).sum() * scale if name == "sq" else x.sum()
    close(grad(f, argnums=1)(3.0, t64([1.0, 2.0]), name="sq"), [6.0, 12.0])


def test_grad_of_unused_input_is_zero():
    close(grad(lambda x, y: (x * 2).sum(), argnums=1)(t64([1.0]), t64([1.0, 2.0])), [0, 0])
    close(grad(lambda x: t64(3.0))(t64([1.0, 2.0])), [0, 0])


# -- vjp and jvp ---------------------------------------------------------------------------------

def test_vjp_returns_output_and_reusable_vjp_fn(rng):
    x, y = t64(rng.standard_normal(3)), t64(rng.standard_normal(3))
    out, vjp_fn = vjp(elementwise_pair, x, y)
    assert isinstance(out, tuple) and not out[0].requires_grad
    u, w = rng.standard_normal(3), rng.standard_normal(3)
    for _ in range(2):                          # the graph is kept for another call
        gx, gy = vjp_fn((t64(u), t64(w)))
        close(gx, u * np.exp(np_of(x)) * np_of(y) + w * 2 * np_of(x))
        close(gy, u * np.exp(np_of(x)) + w * np.cos(np_of(y)))
    out, vjp_fn = vjp(lambda t: t * 3.0, x)
    (g,) = vjp_fn(t64([1.0, 1.0, 1.0]))
    close(g, [3.0, 3.0, 3.0])


def test_vjp_has_aux_and_cotangent_errors():
    x = t64([1.0, 2.0])
    out, vjp_fn, aux = vjp(lambda t: (t * 2, t.exp()), x, has_aux=True)
    close(aux, np.exp([1.0, 2.0]))
    with pytest.raises(RuntimeError, match=r"should be \(2,\).*but got \(3,\)"):
        vjp_fn(t64([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match="single Tensor"):
        vjp_fn((t64([1.0, 2.0]),))


def test_jvp_returns_output_and_tangent(rng):
    x, y = rng.standard_normal(3), rng.standard_normal(3)
    u, w = rng.standard_normal(3), rng.standard_normal(3)
    out, tangent = jvp(elementwise_pair, (t64(x), t64(y)), (t64(u), t64(w)))
    close(out[0], np.exp(x) * y)
    close(tangent[0], u * np.exp(x) * y + w * np.exp(x))
    close(tangent[1], u * 2 * x + w * np.cos(y))
    out, tangent, aux = jvp(lambda t: (t.sin(), t * 2), (t64(x),), (t64(u),), has_aux=True)
    close(tangent, u * np.cos(x))
    assert fwAD.unpack_dual(aux).tangent is None


def test_jvp_errors():
    x = t64([1.0, 2.0])
    with pytest.raises(TypeError, match="expected primals to be a tuple"):
        jvp(lambda t: t, x, (x,))
    with pytest.raises(RuntimeError, match=r"should be \(2,\).*but got \(3,\)"):
        jvp(lambda t: t, (x,), (t64([1.0, 2.0, 3.0]),))
    with pytest.raises(RuntimeError, match="invalid length"):
        jvp(lambda t: t, (x,), (x, x))


# -- jacrev and jacfwd ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(JACOBIANS))
def test_jacobian_values_and_structures(name, rng):
    jac = JACOBIANS[name]
    x, y = rng.standard_normal(3), rng.standard_normal(3)
    J = jac(elementwise_pair, argnums=(0, 1))(t64(x), t64(y))
    assert isinstance(J, tuple) and all(len(r) == 2 for r in J)
    for i in range(2):
        for j in range(2):
            close(J[i][j], fd_jacobian(elementwise_pair, [x, y], j, output=i), rtol=1e-6)
    J0 = jac(elementwise_pair)(t64(x), t64(y))
    assert isinstance(J0, tuple) and all(isinstance(b, lucid.Tensor) for b in J0)
    m = rng.standard_normal((2, 3))
    Jm = jac(lambda t: t.exp() * t)(t64(m))
    assert tuple(Jm.shape) == (2, 3, 2, 3)
    close(Jm, fd_jacobian(lambda t: t.exp() * t, [m], 0), rtol=1e-6)
    J, aux = jac(lambda t: (t.sin(), t.cos()), has_aux=True)(t64(x))
    close(J, np.diag(np.cos(x)))
    close(aux, np.cos(x))
    assert not J.requires_grad and not aux.requires_grad


def test_jacrev_with_sum_and_matmul(rng):
    A = rng.standard_normal((4, 3))
    f = lambda t: (t64(A) @ t).tanh() * t.sum()
    x = rng.standard_normal(3)
    close(jacrev(f)(t64(x)), fd_jacobian(f, [x], 0), rtol=1e-6)


def test_jacfwd_with_sum_and_matmul(rng):
    A = rng.standard_normal((4, 3))
    f = lambda t: (t64(A) @ t).tanh() * t.sum()
    x = rng.standard_normal(3)
    close(jacfwd(f)(t64(x)), fd_jacobian(f, [x], 0), rtol=1e-6)


# -- compositions ----------------------------------------------------------------------------------

def test_grad_of_grad_closed_form():
    x = t64(0.7)
    close(grad(grad(lambda t: t.sin() * t ** 3))(x),
          -np.sin(0.7) * 0.7 ** 3 + 6 * np.cos(0.7) * 0.7 ** 2 + 6 * np.sin(0.7) * 0.7)
    close(grad(grad(grad(lambda t: t.exp() * t)))(x), np.exp(0.7) * (3 + 0.7))


SECOND_DERIVATIVES = [
    pytest.param("jacrev", "jacrev", smooth, smooth_hess_np, id="rev-rev-scalar"),
    pytest.param("jacfwd", "jacrev", smooth, smooth_hess_np, id="fwd-rev-scalar"),
    pytest.param("jacrev", "jacfwd", smooth, smooth_hess_np, id="rev-fwd-scalar"),
    pytest.param("jacrev", "jacrev", vector_fn, vector_fn_second_np, id="rev-rev-vector"),
    pytest.param("jacrev", "jacfwd", vector_fn, vector_fn_second_np, id="rev-fwd-vector"),
    pytest.param("jacfwd", "jacrev", vector_fn, vector_fn_second_np, id="fwd-rev-vector"),
]


@pytest.mark.parametrize("outer, inner, fn, expected", SECOND_DERIVATIVES)
def test_jacobian_of_jacobian(outer, inner, fn, expected):
    result = JACOBIANS[outer](JACOBIANS[inner](fn))(t64(X0))
    close(result, expected(X0), rtol=1e-10)


def test_hessian_of_elementwise_and_of_two_arguments():
    close(hessian(smooth)(t64(X0)), smooth_hess_np(X0), rtol=1e-10)
    H = hessian(rosen2, argnums=(0, 1))(t64(0.3), t64(-0.4))
    close([[np_of(h) for h in r] for r in H], so.rosen_hess(np.array([0.3, -0.4])), rtol=1e-10)


def test_hessian_reverse_over_reverse_of_rosenbrock():
    close(jacrev(jacrev(rosen))(t64(X0)), so.rosen_hess(X0), rtol=1e-10)


def test_hessian_of_rosenbrock_matches_scipy():
    close(hessian(rosen)(t64(X0)), so.rosen_hess(X0), rtol=1e-10)


def test_hessian_of_gaussian_log_likelihood_reverse_over_reverse(rng):
    data = rng.standard_normal(6) * 1.5
    H = jacrev(jacrev(gauss_ll(data), argnums=(0, 1)), argnums=(0, 1))(t64(0.1), t64(0.4))
    close([[np_of(h) for h in r] for r in H], gauss_grad_hess_np(data, 0.1, 0.4)[1],
          rtol=1e-10)


def test_hessian_of_gaussian_log_likelihood(rng):
    data = rng.standard_normal(6) * 1.5
    H = hessian(gauss_ll(data), argnums=(0, 1))(t64(0.1), t64(0.4))
    close([[np_of(h) for h in r] for r in H], gauss_grad_hess_np(data, 0.1, 0.4)[1],
          rtol=1e-10)


def test_hessian_of_mlp_loss(rng):
    X, Y, W1, b1, W2 = mlp_data(rng)
    loss = mlp_loss(X, Y)
    H = hessian(loss, argnums=2)(t64(W1), t64(b1), t64(W2))
    close(H, jacrev(jacrev(loss, argnums=2), argnums=2)(t64(W1), t64(b1), t64(W2)), rtol=1e-9)


def test_forward_over_reverse_hvp():
    _, hv = jvp(grad(smooth), (t64(X0),), (t64(V0),))
    close(hv, smooth_hess_np(X0) @ V0, rtol=1e-10)


def test_forward_over_reverse_hvp_of_rosenbrock():
    _, hv = jvp(grad(rosen), (t64(X0),), (t64(V0),))
    close(hv, so.rosen_hess_prod(X0, V0), rtol=1e-10)


def test_reverse_over_forward_elementwise():
    w = t64(np.linspace(-1, 1, 5))

    def weighted_directional(t):
        return (jvp(vector_fn, (t,), (t64(V0),))[1] * w).sum()
    expected = 2 * np.exp(X0) * np.cos(X0) * V0 * np_of(w)
    close(grad(weighted_directional)(t64(X0)), expected, rtol=1e-10)


def test_reverse_over_forward():
    def directional(t):
        return jvp(smooth, (t,), (t64(V0),))[1]
    close(grad(directional)(t64(X0)), smooth_hess_np(X0) @ V0, rtol=1e-10)


def test_vjp_inside_grad():
    def f(t):
        _, vjp_fn = vjp(lambda s: s.exp() * s, t)
        return vjp_fn(t64(V0))[0].sum()
    close(grad(f)(t64(X0)), V0 * np.exp(X0) * (2 + X0))


def test_perturbation_confusion_reverse_reverse():
    x = t64(2.0)
    close(grad(lambda a: grad(lambda b: a * b)(a))(x), 1.0)
    close(grad(lambda a: grad(lambda b: a * b * b)(a))(x), 2 * 2.0 + 2 * 2.0)


def test_perturbation_confusion_with_forward_mode():
    x, one = t64(2.0), t64(1.0)
    close(grad(lambda a: jvp(lambda b: a * b, (a,), (one,))[1])(x), 1.0)
    close(jvp(lambda a: grad(lambda b: a * b)(a), (x,), (one,))[1], 1.0)


def test_jacfwd_of_jacfwd_nests():
    close(jacfwd(jacfwd(smooth))(t64(X0)), smooth_hess_np(X0), rtol=1e-10)
    # d/ds [J(x + s v) (x + s v)] = H v . x + J v
    _, t = jvp(lambda t: jvp(smooth, (t,), (t,))[1], (t64(X0),), (t64(V0),))
    close(t, smooth_hess_np(X0) @ X0 @ V0 + smooth_grad_np(X0) @ V0, rtol=1e-10)


def test_hessian_inside_jvp_uses_reverse_mode():
    # d/ds H(x + s v) at s=0 for smooth: diag(2 e^x (cos x - sin x) + 2) v on the diagonal
    _, dH = jvp(hessian(smooth), (t64(X0),), (t64(V0),))
    close(dH, np.diag((2 * np.exp(X0) * (np.cos(X0) - np.sin(X0)) + 2) * V0), rtol=1e-10)


# -- create_graph and the caller's graph ---------------------------------------------------------

def test_results_are_detached_at_top_level():
    x = t64(X0)
    results = [grad(smooth)(x), jacrev(smooth)(x), jacfwd(lambda t: t.exp())(x),
               hessian(smooth)(x), *jvp(grad(smooth), (x,), (t64(V0),)), vjp(smooth, x)[0]]
    assert all(not r.requires_grad and r.grad_fn is None for r in results)


def test_inputs_requiring_grad_give_differentiable_results():
    x = t64(X0, requires_grad=True)
    second = (2 * np.exp(X0) * np.cos(X0) + 2 * X0) * V0        # d/dx sum(grad * v)
    third = (2 * np.exp(X0) * (np.cos(X0) - np.sin(X0)) + 2) * V0  # d/dx sum(H v)
    cases = [(lambda t: grad(smooth)(t) * t64(V0), second),
             (lambda t: jacrev(grad(smooth))(t) @ t64(V0), third),
             (lambda t: jvp(grad(smooth), (t,), (t64(V0),))[1], third),
             (lambda t: hessian(smooth)(t) @ t64(V0), third)]
    for transform, expected in cases:
        out = transform(x)
        assert out.requires_grad
        (g,) = lucid.autograd.grad(out.sum(), x)
        close(g, expected, rtol=1e-10)
    assert x.grad is None


def test_closure_over_a_parameter_stays_differentiable():
    w = t64([0.5, -1.5], requires_grad=True)
    x = t64([2.0, 3.0])
    g = grad(lambda t: (w * t * t).sum())(x)          # 2 w x
    assert g.requires_grad
    g.sum().backward()
    close(w.grad, 2 * np.array([2.0, 3.0]))


def test_no_grad_outside_gives_results_without_history():
    x = t64(X0, requires_grad=True)
    with lucid.no_grad():
        g = grad(smooth)(x)
        H = hessian(smooth)(x)
    assert not g.requires_grad and not H.requires_grad
    close(g, smooth_grad_np(X0))
    close(H, smooth_hess_np(X0), rtol=1e-10)


@pytest.mark.parametrize("requires_grad", [False, True])
def test_caller_tensors_unchanged(requires_grad):
    x = t64(X0, requires_grad=requires_grad)
    v = t64(V0)
    before = snapshot(x, v)
    grad(smooth)(x)
    grad_and_value(smooth)(x)
    vjp(smooth, x)[1](t64(1.0))
    jvp(smooth, (x,), (v,))
    jacrev(smooth)(x)
    jacfwd(lambda t: t.exp())(x)
    hessian(smooth)(x)
    grad(lambda a: grad(lambda b: a * b)(a))(t64(2.0))
    assert_unchanged(before, (x, v))


# -- errors ----------------------------------------------------------------------------------------

def test_grad_errors():
    x = t64([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match=r"scalar Tensor.*shape \(3,\)"):
        grad(lambda t: t * 2)(x)
    with pytest.raises(TypeError, match="return a Tensor.*float"):
        grad(lambda t: 1.0)(x)
    with pytest.raises(TypeError, match=r"has_aux=True .*tuple \(output, aux\)"):
        grad(lambda t: t.sum(), has_aux=True)(x)
    with pytest.raises(RuntimeError, match="argnums 2 is out of range"):
        grad(lambda a, b: a.sum(), argnums=2)(x, x)
    with pytest.raises(RuntimeError, match="twice"):
        grad(lambda a, b: a.sum(), argnums=(0, -2))(x, x)
    with pytest.raises(TypeError, match="argnums must be an int"):
        grad(lambda a: a.sum(), argnums=0.5)(x)
    with pytest.raises(TypeError, match="argument 0 .* float"):
        grad(lambda a: a)(1.0)
    with pytest.raises(TypeError, match="int64"):
        grad(lambda a: a.sum())(lucid.tensor([1, 2]))


def test_jacobian_of_a_non_tensor_output():
    for jac in (jacrev, jacfwd):
        with pytest.raises(TypeError, match="output 1 of the user-provided function is a str"):
            jac(lambda t: (t, "no"))(t64([1.0]))


def test_errors_leave_caller_tensors_unchanged():
    x = t64(X0, requires_grad=True)
    before = snapshot(x)
    with pytest.raises(RuntimeError):
        grad(lambda t: t * 2)(x)
    with pytest.raises(RuntimeError, match="item"):       # raised inside two dual levels
        jacfwd(jacfwd(lambda t: t * t.sum().item()))(x)
    assert_unchanged(before, (x,))
    assert fwAD.enter_dual_level() is not None       # the failed transform left no level behind
    fwAD.exit_dual_level()
