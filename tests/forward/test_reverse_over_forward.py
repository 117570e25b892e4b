"""Reverse-over-forward through elementwise ops whose jvp reads the output y (exp, tanh, sigmoid,
sqrt): the tangent must be differentiable through y as well as through x."""
import numpy as np
import pytest

import lucid
import lucid.autograd.forward_ad as fwAD

X = 1.3
CASES = {
    "exp": (lambda x: x.exp(), lambda x: np.exp(x)),
    "tanh": (lambda x: x.tanh(), lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2)),
    "sigmoid": (lambda x: x.sigmoid(),
                lambda x: (lambda s: s * (1 - s) * (1 - 2 * s))(1 / (1 + np.exp(-x)))),
    "sqrt": (lambda x: x.sqrt(), lambda x: -0.25 * x ** -1.5),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_tangent_differentiates_through_the_output(name):
    f, second_derivative = CASES[name]
    x = lucid.tensor([X], dtype=lucid.float64, requires_grad=True)
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, lucid.ones(1, dtype=lucid.float64))
        tangent = fwAD.unpack_dual(f(dual)).tangent
    (g,) = lucid.autograd.grad(tangent.sum(), x)
    np.testing.assert_allclose(g.numpy(), [second_derivative(X)], rtol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_over_reverse_still_sees_the_saved_output_tangent(name):
    f, second_derivative = CASES[name]
    x = lucid.tensor([X], dtype=lucid.float64, requires_grad=True)
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, lucid.ones(1, dtype=lucid.float64))
        (g,) = lucid.autograd.grad(f(dual).sum(), dual)
        tangent = fwAD.unpack_dual(g).tangent
    np.testing.assert_allclose(tangent.numpy(), [second_derivative(X)], rtol=1e-12)
