"""lucid.autograd.functional: values against finite differences, SciPy and closed forms; the
structures returned; create_graph; strict mode; errors; the caller's tensors left alone."""
import numpy as np
import pytest
import scipy.optimize as so

import lucid
import lucid.autograd.forward_ad as fwAD
from lucid.autograd import Function
from lucid.autograd import functional as F
from support.shared_functions import Cube

from .functional_cases import (
    assert_unchanged, fd_jacobian, gauss_grad_hess_np,
    gauss_ll, mlp_data, mlp_grad_np, mlp_loss, rosen, rosen2, smooth, smooth_hess_np, snapshot,
    t64,
)

X0 = np.array([1.3, 0.7, 0.8, 1.9, 1.2])
V0 = np.array([0.5, -1.0, 2.0, 0.25, -0.75])
STRATEGIES = ["reverse-mode", "forward-mode"]


def np_of(t):
    if isinstance(t, lucid.Tensor):
        t = t.detach().numpy()
    return np.array(t, dtype=np.float64)


def close(actual, expected, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(np_of(actual), expected, rtol=rtol, atol=atol)


def two_by_two(x, y):
    """Two outputs of two inputs with different shapes."""
    return x.exp() * y.sum(), (x * x).sum() + y.sin()


def two_by_two_elementwise(x, y):
    """Two outputs of two 0-d/1-d inputs, elementwise ops only (forward mode works now)."""
    return x.exp() * y, x * x + y.sin()


# -- vjp ------------------------------------------------------------------------------------------

def test_vjp_single_matches_closed_form():
    x = t64(X0)
    out, g = F.vjp(lambda x: x.exp() * x, x, t64(V0))
    close(out, np.exp(X0) * X0)
    close(g, V0 * np.exp(X0) * (1 + X0))


def test_vjp_scalar_output_defaults_v_to_one():
    out, g = F.vjp(rosen, t64(X0))
    close(out, so.rosen(X0))
    close(g, so.rosen_der(X0))


def test_vjp_structures_for_several_inputs_and_outputs(rng):
    x, y = t64(rng.standard_normal(3)), t64(rng.standard_normal(2))
    vx, vy = rng.standard_normal(3), rng.standard_normal(2)
    outs, grads = F.vjp(two_by_two, (x, y), (t64(vx), t64(vy)))
    assert isinstance(outs, tuple) and len(outs) == 2
    assert isinstance(grads, tuple) and [tuple(g.shape) for g in grads] == [(3,), (2,)]
    arrays = [x.numpy(), y.numpy()]
    for j in range(2):
        expected = sum(v @ fd_jacobian(two_by_two, arrays, j, output=i).reshape(v.size, -1)
                       for i, v in enumerate([vx, vy]))
        close(grads[j], expected, rtol=1e-5)
    # one input given as a tuple: the vjp is a tuple of one
    _, g = F.vjp(lambda x: x * 2, (x,), t64(vx))
    assert isinstance(g, tuple) and len(g) == 1


def test_vjp_of_mlp_loss_matches_closed_form(rng):
    X, Y, W1, b1, W2 = mlp_data(rng)
    loss = mlp_loss(X, Y)
    _, grads = F.vjp(loss, (t64(W1), t64(b1), t64(W2)))
    for got, want in zip(grads, mlp_grad_np(X, Y, W1, b1, W2)):
        close(got, want)


# -- jvp (forward mode) ---------------------------------------------------------------------------

def test_jvp_single_matches_closed_form():
    out, jv = F.jvp(lambda x: x.exp() * x.tanh(), t64(X0), t64(V0))
    close(out, np.exp(X0) * np.tanh(X0))
    close(jv, V0 * np.exp(X0) * (np.tanh(X0) + 1 - np.tanh(X0) ** 2))


def test_jvp_structures_and_values(rng):
    x, y = t64(rng.standard_normal(3)), t64(rng.standard_normal(3))
    vx, vy = rng.standard_normal(3), rng.standard_normal(3)
    outs, jvs = F.jvp(two_by_two_elementwise, (x, y), (t64(vx), t64(vy)))
    assert isinstance(outs, tuple) and isinstance(jvs, tuple) and len(jvs) == 2
    arrays = [x.numpy(), y.numpy()]
    for i in range(2):
        expected = sum(fd_jacobian(two_by_two_elementwise, arrays, j, output=i) @ v
                       for j, v in enumerate([vx, vy]))
        close(jvs[i], expected, rtol=1e-5)


def test_jvp_default_v_for_a_one_element_input():
    out, jv = F.jvp(lambda x: x ** 3, t64(2.0))
    close(jv, 12.0)


class ForwardOnly(Function):
    """y = 3 x with a jvp and a backward that must not run."""

    @staticmethod
    def forward(ctx, x):
        return x * 3.0

    @staticmethod
    def backward(ctx, g):
        raise AssertionError("jvp must not use backward (the double-backward trick)")

    @staticmethod
    def jvp(ctx, t):
        return t * 3.0


def test_jvp_uses_forward_mode_not_double_backward():
    _, jv = F.jvp(ForwardOnly.apply, t64([1.0, 2.0]), t64([1.0, -1.0]))
    close(jv, [3.0, -3.0])


def test_jvp_inside_a_dual_level_nests():
    with fwAD.dual_level() as level:
        x = fwAD.make_dual(t64([1.5]), t64([1.0]))
        _, jv = F.jvp(lambda y: y * y * x, x, t64([1.0]))       # d/dy (y^2 x) = 2 x y
        close(fwAD.unpack_dual(jv).primal, [2 * 1.5 * 1.5])
        close(fwAD.unpack_dual(jv, level=level).tangent, [4 * 1.5])   # d/dx (2 x^2) = 4 x
        assert lucid._core._current_dual_level() == level


# -- jacobian --------------------------------------------------------------------------------------

@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian_single_elementwise(strategy, vectorize, rng):
    x = rng.standard_normal((2, 3))
    f = lambda t: (t.exp() * t.sin()) / (1.0 + t * t)
    J = F.jacobian(f, t64(x), vectorize=vectorize, strategy=strategy)
    assert tuple(J.shape) == (2, 3, 2, 3)
    close(J, fd_jacobian(f, [x], 0), rtol=1e-5)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_jacobian_structures(strategy, rng):
    x, y = rng.standard_normal(3), rng.standard_normal(3)
    f = two_by_two_elementwise
    J = F.jacobian(f, (t64(x), t64(y)), strategy=strategy)
    assert isinstance(J, tuple) and all(isinstance(r, tuple) and len(r) == 2 for r in J)
    for i in range(2):
        for j in range(2):
            assert tuple(J[i][j].shape) == (3, 3)
            close(J[i][j], fd_jacobian(f, [x, y], j, output=i), rtol=1e-5)
    one_in = F.jacobian(lambda a: (a * 2, a.exp()), t64(x), strategy=strategy)
    assert isinstance(one_in, tuple) and len(one_in) == 2 and tuple(one_in[1].shape) == (3, 3)
    one_out = F.jacobian(lambda a, b: a * b, (t64(x), t64(y)), strategy=strategy)
    assert isinstance(one_out, tuple) and len(one_out) == 2
    close(one_out[0], np.diag(y))
    independent = F.jacobian(lambda a, b: a * 2.0, (t64(1.0), t64(2.0)), strategy=strategy)
    assert [tuple(b.shape) for b in independent] == [(), ()]
    close(independent[1], 0.0)
    scalar_in = F.jacobian(lambda a: a * t64([1.0, 2.0]), t64(1.5), strategy=strategy)
    assert tuple(scalar_in.shape) == (2,)
    close(scalar_in, [1.0, 2.0])


def test_jacobian_of_sum_and_matmul_reverse(rng):
    A = rng.standard_normal((2, 3))
    x = rng.standard_normal(3)
    f = lambda t: (t64(A) @ t).tanh().sum() * t
    close(F.jacobian(f, t64(x)), fd_jacobian(f, [x], 0), rtol=1e-5)


def test_jacobian_of_sum_and_matmul_forward(rng):
    A = rng.standard_normal((2, 3))
    x = rng.standard_normal(3)
    f = lambda t: (t64(A) @ t).tanh().sum() * t
    close(F.jacobian(f, t64(x), strategy="forward-mode"), fd_jacobian(f, [x], 0), rtol=1e-5)


def test_jacobian_bad_strategy_is_a_value_error():
    with pytest.raises(ValueError, match="forward-mode"):
        F.jacobian(lambda x: x, t64([1.0]), strategy="sideways")


# -- hessian ---------------------------------------------------------------------------------------

def test_hessian_of_rosenbrock_matches_scipy():
    H = F.hessian(rosen, t64(X0))
    close(H, so.rosen_hess(X0), rtol=1e-10)


def test_hessian_of_rosenbrock_outer_forward():
    H = F.hessian(rosen, t64(X0), outer_jacobian_strategy="forward-mode")
    close(H, so.rosen_hess(X0), rtol=1e-10)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_hessian_of_elementwise_function(strategy):
    H = F.hessian(smooth, t64(X0), outer_jacobian_strategy=strategy)
    close(H, smooth_hess_np(X0), rtol=1e-10)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_hessian_of_two_inputs_is_a_tuple_of_tuples(strategy):
    a, b = 0.3, -0.4
    H = F.hessian(rosen2, (t64(a), t64(b)), outer_jacobian_strategy=strategy)
    assert isinstance(H, tuple) and all(len(r) == 2 for r in H)
    assert all(tuple(h.shape) == () for r in H for h in r)
    expected = so.rosen_hess(np.array([a, b]))
    for i in range(2):
        for j in range(2):
            close(H[i][j], expected[i, j], rtol=1e-10)


def test_hessian_of_gaussian_log_likelihood_closed_form(rng):
    data = rng.standard_normal(7) * 2 + 1
    mu, ls = 0.4, 0.3
    H = F.hessian(gauss_ll(data), (t64(mu), t64(ls)))
    _, expected = gauss_grad_hess_np(data, mu, ls)
    close(np.array([[np_of(h) for h in r] for r in H]), expected, rtol=1e-10)


def test_hessian_of_mlp_loss_blocks_match_finite_differences(rng):
    X, Y, W1, b1, W2 = mlp_data(rng)
    loss = mlp_loss(X, Y)
    params = (t64(W1), t64(b1), t64(W2))
    H = F.hessian(loss, params)
    grad_fn = lambda *p: F.vjp(loss, p)[1]
    arrays = [W1, b1, W2]
    for i in range(3):
        for j in range(3):
            assert tuple(H[i][j].shape) == arrays[i].shape + arrays[j].shape
            close(H[i][j], fd_jacobian(grad_fn, arrays, j, output=i), rtol=1e-5, atol=1e-7)


def test_hessian_needs_one_output_element():
    with pytest.raises(RuntimeError, match=r"single element.*\(3,\)"):
        F.hessian(lambda x: x * x, t64([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match="single Tensor"):
        F.hessian(lambda x: (x.sum(), x.sum()), t64([1.0, 2.0]))


# -- hvp and vhp -----------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [F.hvp, F.vhp])
def test_hvp_vhp_of_rosenbrock_match_scipy(fn):
    value, hv = fn(rosen, t64(X0), t64(V0))
    close(value, so.rosen(X0))
    close(hv, so.rosen_hess_prod(X0, V0), rtol=1e-10)


@pytest.mark.parametrize("fn", [F.hvp, F.vhp])
def test_hvp_vhp_of_elementwise_function(fn):
    _, hv = fn(smooth, t64(X0), t64(V0))
    close(hv, smooth_hess_np(X0) @ V0, rtol=1e-10)


@pytest.mark.parametrize("fn", [F.hvp, F.vhp])
def test_hvp_vhp_of_mlp_loss_match_the_hessian(fn, rng):
    X, Y, W1, b1, W2 = mlp_data(rng)
    loss = mlp_loss(X, Y)
    params = (t64(W1), t64(b1), t64(W2))
    vs = tuple(t64(rng.standard_normal(p.shape)) for p in params)
    _, hv = fn(loss, params, vs)
    H = F.hessian(loss, params)
    for i in range(3):
        expected = sum(np.tensordot(np_of(H[i][j]), np_of(vs[j]), axes=vs[j].ndim)
                       for j in range(3))
        close(hv[i], expected, rtol=1e-9, atol=1e-12)


def test_hvp_inside_a_dual_level_uses_reverse_over_reverse():
    with fwAD.dual_level():
        _, hv = F.hvp(rosen, t64(X0), t64(V0))
    close(hv, so.rosen_hess_prod(X0, V0), rtol=1e-10)


def test_hvp_with_a_function_without_jvp_falls_back():
    _, hv = F.hvp(lambda x: Cube.apply(x).sum(), t64([1.0, 2.0]), t64([1.0, 1.0]))
    close(hv, [6.0, 12.0])


def test_hvp_of_a_linear_function_is_zero():
    _, hv = F.hvp(lambda x: (x * 3.0).sum(), t64([1.0, 2.0]), t64([1.0, 1.0]))
    close(hv, [0.0, 0.0])


# -- create_graph ----------------------------------------------------------------------------------

def test_without_create_graph_results_have_no_history():
    x = t64(X0, requires_grad=True)
    v = t64(V0)
    results = [*F.vjp(smooth, x), *F.jvp(lambda t: t.exp(), x, v), F.jacobian(smooth, x),
               F.hessian(smooth, x), *F.hvp(smooth, x, v), *F.vhp(smooth, x, v)]
    assert all(not r.requires_grad and r.grad_fn is None for r in results)


def _third_derivative(x):
    """d/dx_k of sum_j H_kj(x) v_j for smooth: diag(2 e^x (cos x - sin x) + 2) v."""
    return np.diag((2 * np.exp(x) * (np.cos(x) - np.sin(x)) + 2) * V0)


@pytest.mark.parametrize("fn", [F.hvp, F.vhp])
def test_hvp_vhp_create_graph_differentiable(fn):
    x = t64(X0, requires_grad=True)
    _, hv = fn(smooth, x, t64(V0), create_graph=True)
    assert hv.requires_grad
    (g,) = lucid.autograd.grad(hv.sum(), x)
    close(g, _third_derivative(X0).sum(0), rtol=1e-10)
    assert x.grad is None


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_jacobian_and_hessian_create_graph(strategy):
    x = t64(X0, requires_grad=True)
    J = F.jacobian(lambda t: t.exp() * t, x, create_graph=True, strategy=strategy)
    (g,) = lucid.autograd.grad(J.sum(), x)
    close(g, np.exp(X0) * (2 + X0))
    H = F.hessian(smooth, x, create_graph=True, outer_jacobian_strategy=strategy)
    (g,) = lucid.autograd.grad((H * t64(np.outer(np.ones(5), V0))).sum(), x)
    close(g, _third_derivative(X0).sum(0), rtol=1e-10)


def test_vjp_and_jvp_create_graph():
    x = t64(X0, requires_grad=True)
    out, g = F.vjp(lambda t: t.exp() * t, x, t64(V0), create_graph=True)
    assert out.requires_grad and g.requires_grad
    (gg,) = lucid.autograd.grad(g.sum(), x)
    close(gg, V0 * np.exp(X0) * (2 + X0))
    out, jv = F.jvp(lambda t: t.exp() * t, x, t64(V0), create_graph=True)
    assert out.requires_grad and jv.requires_grad
    (gj,) = lucid.autograd.grad(jv.sum(), x)
    close(gj, V0 * np.exp(X0) * (2 + X0))


def test_create_graph_result_differentiable_in_v():
    x, v = t64(X0), t64(V0, requires_grad=True)
    _, g = F.vjp(lambda t: t.exp(), x, v, create_graph=True)
    (gv,) = lucid.autograd.grad(g.sum(), v)
    close(gv, np.exp(X0))


# -- strict mode -----------------------------------------------------------------------------------

def independent_of_y(x, y):
    return (x * x).sum()


@pytest.mark.parametrize("call", [
    lambda x, y, s: F.vjp(independent_of_y, (x, y), strict=s),
    lambda x, y, s: F.jacobian(independent_of_y, (x, y), strict=s),
    lambda x, y, s: F.hessian(independent_of_y, (x, y), strict=s),
    lambda x, y, s: F.hvp(independent_of_y, (x, y), (t64([1.0, 1.0]), t64([1.0])), strict=s),
    lambda x, y, s: F.vhp(independent_of_y, (x, y), (t64([1.0, 1.0]), t64([1.0])), strict=s),
])
def test_strict_independent_input(call):
    x, y = t64([1.0, 2.0]), t64([3.0])
    result = call(x, y, False)              # zeros for y
    flat = [r for r in lucid_flat(result)]
    assert any(tuple(r.shape) in ((1,), (2, 1), (1, 2), (1, 1)) and not np_of(r).any()
               for r in flat)
    with pytest.raises(RuntimeError, match=r"independent of input 1 \(shape \(1,\)\)"):
        call(x, y, True)


def lucid_flat(obj):
    if isinstance(obj, lucid.Tensor):
        return [obj]
    return [t for item in obj for t in lucid_flat(item)]


def test_strict_jvp_independent_output():
    with pytest.raises(RuntimeError, match=r"output 1 .*shape \(2,\).* independent"):
        F.jvp(lambda x: (x * 2, t64([1.0, 2.0])), t64([1.0]), t64([1.0]), strict=True)
    _, jv = F.jvp(lambda x: (x * 2, t64([1.0, 2.0])), t64([1.0]), t64([1.0]))
    close(jv[1], [0.0, 0.0])


def test_strict_output_not_requiring_grad():
    with pytest.raises(RuntimeError, match=r"output 0 .*shape \(2,\).* does not require"):
        F.vjp(lambda x: t64([1.0, 2.0]), t64([1.0]), t64([1.0, 1.0]), strict=True)


def test_strict_hessian_of_linear_function():
    with pytest.raises(RuntimeError, match="hessian .*independent"):
        F.hvp(lambda x: (x * 3.0).sum(), t64([1.0, 2.0]), t64([1.0, 1.0]), strict=True)


# -- errors ----------------------------------------------------------------------------------------

def test_function_returning_a_non_tensor():
    for fn in (F.vjp, F.jacobian):
        with pytest.raises(TypeError, match="output of the user-provided function is a float"):
            fn(lambda x: 1.0, t64([1.0]))
    with pytest.raises(TypeError, match=r"output 1 of the user-provided function is a list"):
        F.jvp(lambda x: (x, [x]), t64([1.0]), t64([1.0]))


def test_inputs_must_be_tensors():
    with pytest.raises(TypeError, match=r"inputs\[1\] is a float"):
        F.vjp(lambda a, b: a, (t64([1.0]), 2.0), t64([1.0]))


def test_integer_inputs_are_refused():
    with pytest.raises(TypeError, match="int64"):
        F.jacobian(lambda a: a, lucid.tensor([1, 2]))


def test_mismatched_v():
    x = t64([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match=r"should be \(3,\).* but got \(2,\)"):
        F.vjp(lambda t: t * 2, x, t64([1.0, 2.0]))
    with pytest.raises(RuntimeError, match=r"invalid length: should be 1 .*but got 2"):
        F.jvp(lambda t: t * 2, x, (t64([1.0, 2.0, 3.0]), t64([1.0])))
    with pytest.raises(RuntimeError, match=r"v can only be None.*\(3,\)"):
        F.vjp(lambda t: t * 2, x)
    with pytest.raises(RuntimeError, match=r"v can only be None.*\(3,\)"):
        F.hvp(smooth, x)


# -- the caller's tensors --------------------------------------------------------------------------

@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("create_graph", [False, True])
def test_caller_tensors_unchanged(requires_grad, create_graph):
    x = t64(X0, requires_grad=requires_grad)
    v = t64(V0)
    before = snapshot(x, v)
    F.vjp(smooth, x, create_graph=create_graph)
    F.jvp(lambda t: t.exp(), x, v, create_graph=create_graph)
    F.jacobian(smooth, x, create_graph=create_graph)
    F.jacobian(lambda t: t.exp(), x, create_graph=create_graph, strategy="forward-mode")
    F.hessian(smooth, x, create_graph=create_graph)
    F.hvp(smooth, x, v, create_graph=create_graph)
    F.vhp(smooth, x, v, create_graph=create_graph)
    assert_unchanged(before, (x, v))


def test_error_leaves_caller_tensors_unchanged():
    x = t64(X0, requires_grad=True)
    before = snapshot(x)
    with pytest.raises(RuntimeError):
        F.vjp(smooth, x, t64([1.0, 2.0]))
    with pytest.raises(RuntimeError):
        F.hessian(lambda t: t * 2, x)
    assert_unchanged(before, (x,))
