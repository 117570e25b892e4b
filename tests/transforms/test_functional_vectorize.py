"""autograd.functional.jacobian / hessian with vectorize=True: one vjp (or jvp) vmapped over the
identity gives the same blocks as the per-element loop and as central differences, in every
input/output structure and both strategies; create_graph keeps them differentiable; the error
paths are PyTorch's; the caller's tensors are left alone."""
import numpy as np
import pytest

import lucid
from lucid.autograd import functional as F
from lucid.autograd import gradcheck

from .functional_cases import assert_unchanged, fd_jacobian, snapshot, t64

STRATEGIES = ["reverse-mode", "forward-mode"]

FUNCTIONS = [
    ("one in, one out", lambda x: (x @ x.reshape(3, 1)).tanh() * x.sin(), 1),
    ("two in, two out", lambda a, b: (a * b.exp(), (a.sin() * b).sum()), 2),
    ("two in, one independent", lambda a, b: a.sin() * a.sum(), 2),
    ("0-d output", lambda x: (x ** 3).sum(), 1),
    ("matrix input", lambda m: m.matmul(m.transpose(0, 1)).diagonal(), 1),
]


def _inputs(arity, name, rng):
    shape = (3, 2) if name == "matrix input" else (3,)
    return tuple(t64(rng.standard_normal(shape)) for _ in range(arity))


def _flat(blocks):
    if isinstance(blocks, tuple):
        return [b for item in blocks for b in _flat(item)]
    return [blocks]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("name,f,arity", FUNCTIONS, ids=[n for n, _, _ in FUNCTIONS])
def test_vectorized_jacobian_equals_the_loop_and_finite_differences(name, f, arity, strategy, rng):
    xs = _inputs(arity, name, rng)
    arg = xs if arity > 1 else xs[0]
    before = snapshot(*xs)
    vectorized = F.jacobian(f, arg, vectorize=True, strategy=strategy)
    looped = F.jacobian(f, arg, vectorize=False, strategy=strategy)
    assert type(vectorized) is type(looped)
    for v, w in zip(_flat(vectorized), _flat(looped)):
        assert tuple(v.shape) == tuple(w.shape) and v.dtype == w.dtype
        assert not v.requires_grad
        np.testing.assert_allclose(v.numpy(), w.numpy(), rtol=1e-12, atol=1e-14)
    outputs = f(*xs)
    arrays = [x.numpy() for x in xs]
    for i in range(len(outputs) if isinstance(outputs, tuple) else 1):
        for j in range(arity):
            block = vectorized
            if isinstance(outputs, tuple):
                block = block[i]
            if arity > 1:
                block = block[j]
            fd = fd_jacobian(f, arrays, j, output=i if isinstance(outputs, tuple) else None)
            np.testing.assert_allclose(block.numpy(), fd, rtol=1e-6, atol=1e-7)
    assert_unchanged(before, xs)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_vectorized_hessian_equals_the_loop(strategy, rng):
    a, b = t64(rng.standard_normal(3)), t64(rng.standard_normal(3))

    def energy(a, b):
        return (a.sin() * b + a * a * b.exp()).sum()
    vectorized = F.hessian(energy, (a, b), vectorize=True, outer_jacobian_strategy=strategy)
    looped = F.hessian(energy, (a, b))
    for v, w in zip(_flat(vectorized), _flat(looped)):
        np.testing.assert_allclose(v.numpy(), w.numpy(), rtol=1e-12, atol=1e-14)


def test_vectorized_jacobian_with_create_graph_is_differentiable(rng):
    x = t64(rng.standard_normal(3), requires_grad=True)

    def jac_sum(t):
        return F.jacobian(lambda u: u.sin() * u.sum(), t, create_graph=True, vectorize=True).sum()
    assert gradcheck(jac_sum, (x,))
    J = F.jacobian(lambda u: u.sin() * u.sum(), x, vectorize=True)
    assert not J.requires_grad and x.grad is None


@pytest.mark.parametrize("fn", [F.jacobian, F.hessian])
def test_strict_with_vectorize_raises_pytorchs_error(fn):
    x = t64([1.0, 2.0])
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not supported"):
        fn(lambda t: t.sin().sum(), x, strict=True, vectorize=True)


def test_vectorized_errors_name_the_function():
    x = t64([1.0, 2.0])
    with pytest.raises(TypeError, match="^jacobian: the output of the user-provided function is a str"):
        F.jacobian(lambda t: "not a tensor", x, vectorize=True)
    with pytest.raises(RuntimeError, match="^hessian: .*should contain a single element"):
        F.hessian(lambda t: t * 2, x, vectorize=True)


@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_jacobian_inside_a_dual_level_keeps_the_callers_tangent(strategy, vectorize, rng):
    """jacobian inside a caller's dual level: a forward-mode Jacobian's own level nests inside
    the caller's, and the caller's tangent of J is d/dt J(x + t v) (v = ones: -diag(sin x))."""
    import lucid.autograd.forward_ad as fwAD
    x0 = rng.standard_normal(3)
    with fwAD.dual_level():
        x = fwAD.make_dual(t64(x0), t64(np.ones(3)))
        J = F.jacobian(lambda u: u.sin(), x, strategy=strategy, vectorize=vectorize)
        primal, tangent = fwAD.unpack_dual(J)
    np.testing.assert_allclose(primal.detach().numpy(), np.diag(np.cos(x0)), rtol=1e-12)
    np.testing.assert_allclose(tangent.detach().numpy(), np.diag(-np.sin(x0)), rtol=1e-12)
