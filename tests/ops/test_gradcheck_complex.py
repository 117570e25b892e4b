"""gradcheck and gradgradcheck with complex inputs and outputs (API.md section 15): both
Wirtinger derivatives are compared, each complex value as its real and imaginary parts, so a
backward that breaks the convention (a missing conjugate, a factor of 2) fails with a
GradcheckError naming the part; custom Functions take and give complex tensors."""
import numpy as np
import pytest

import lucid
from lucid.autograd import GradcheckError, gradcheck, gradgradcheck

RNG = np.random.default_rng(5)


def leaf(*shape, real=False):
    v = RNG.standard_normal(shape)
    if not real:
        v = v + 1j * RNG.standard_normal(shape)
    return lucid.tensor(v, requires_grad=True)


# complex functions of complex (and real) inputs, among them real-valued and complex-valued
# results and the ops that build complex values from real ones
CASES = {
    "mul": (lambda a, b: a * b, lambda: (leaf(2, 3), leaf(3))),
    "div": (lambda a, b: a / b, lambda: (leaf(2, 3), leaf(3))),
    "mixed real": (lambda a, x: a * x - x / a, lambda: (leaf(3), leaf(3, real=True))),
    "conj": (lambda a, b: lucid.conj(a) * b, lambda: (leaf(3), leaf(3))),
    "abs": (lambda a: lucid.abs(a * a), lambda: (leaf(4),)),
    "angle": (lambda a: lucid.angle(a * (1 + 1j)), lambda: (leaf(4),)),
    "real and imag": (lambda a: a.real * a.imag + lucid.real(a * a), lambda: (leaf(2, 2),)),
    "complex": (lambda x, y: lucid.complex(x, y) * lucid.complex(y, x),
                lambda: (leaf(3, real=True), leaf(3, real=True))),
    "polar": (lambda r, t: lucid.polar(r, t), lambda: (leaf(3, real=True), leaf(3, real=True))),
    "view_as_real": (lambda a: lucid.view_as_real(a * a), lambda: (leaf(2, 2),)),
    "view_as_complex": (lambda v: lucid.view_as_complex(v * 2.0) * 1j,
                        lambda: (leaf(3, 2, real=True),)),
    "pow": (lambda a, b: a ** b + a ** 2 + 2.0 ** b, lambda: (leaf(3), leaf(3))),
    "pow of a real base": (lambda x, a: x ** a, lambda: (leaf(3, real=True).abs().detach()
                                                         .add(0.5).requires_grad_(), leaf(3))),
    "where": (lambda a, x: lucid.where(lucid.tensor([True, False, True]), a, x),
              lambda: (leaf(3), leaf(3, real=True))),
    "var and std": (lambda a: (lucid.var(a, 1), lucid.std(a), lucid.std_mean(a, 0)[1]),
                    lambda: (leaf(3, 4),)),
    "prod and cumprod": (lambda a: (lucid.prod(a, 1), lucid.cumprod(a, 0)),
                         lambda: (leaf(3, 4),)),
    "prod with a zero": (lambda a: (lucid.prod(a * lucid.tensor([1.0, 0.0, 1.0]), 0),
                                    lucid.cumprod(a * lucid.tensor([1.0, 0.0, 1.0]), 0)),
                         lambda: (leaf(3),)),
    "norm": (lambda a: (lucid.norm(a, dim=1), lucid.norm(a, 1, dim=0), lucid.norm(a, 3),
                        lucid.norm(a, 0.5, dim=1), lucid.norm(a, float("inf"), dim=1)),
             lambda: (leaf(3, 4),)),
    "norm with a zero": (lambda a: (lucid.norm(a * lucid.tensor([1.0, 0.0, 1.0])),
                                    lucid.norm(a * lucid.tensor([1.0, 0.0, 1.0]), 1),
                                    lucid.norm(a * lucid.tensor([1.0, 0.0, 1.0]), 3)),
                         lambda: (leaf(3),)),
    "linalg norms": (lambda a: (lucid.linalg.vector_norm(a, 3, dim=1), lucid.linalg.norm(a),
                                lucid.linalg.norm(a, dim=0), lucid.linalg.norm(a, 1),
                                lucid.linalg.norm(a, float("-inf"))),
                     lambda: (leaf(3, 4),)),
    "logsumexp": (lambda a: (lucid.logsumexp(a, 1), lucid.logsumexp(a, (0, 1), keepdim=True)),
                  lambda: (leaf(3, 4),)),
    "several outputs": (lambda a, b: (a * b, lucid.abs(b), a + 1.0), lambda: (leaf(2), leaf(2))),
    "reductions of views": (lambda a: lucid.stack([a[0], a[1] * a[0]]).reshape(-1),
                            lambda: (leaf(2, 2),)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_complex_functions_pass_gradcheck_with_forward_mode(name):
    fn, inputs = CASES[name]
    assert gradcheck(fn, inputs(), check_forward_ad=True)
    assert gradcheck(fn, inputs(), fast_mode=True, check_forward_ad=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_complex_functions_pass_gradgradcheck(name):
    fn, inputs = CASES[name]
    assert gradgradcheck(fn, inputs(), check_fwd_over_rev=True)


HOLOMORPHIC = ("exp log log1p expm1 sqrt rsqrt reciprocal square sin cos tan sinh cosh tanh asin "
               "acos atan sigmoid").split()


@pytest.mark.parametrize("name", HOLOMORPHIC)
def test_holomorphic_functions_pass_gradcheck_and_gradgradcheck(name):
    """Values off the branch cuts (log, sqrt: the negative real axis; asin, acos, atan: the
    imaginary axis beyond +-i), so that finite differences see one branch."""
    fn = getattr(lucid, name)
    z = lucid.tensor(np.array([0.6 + 0.3j, 0.2 - 0.5j, 1.3 + 0.8j]), requires_grad=True)
    assert gradcheck(fn, (z,), check_forward_ad=True)
    assert gradgradcheck(fn, (z,), check_fwd_over_rev=True)


@pytest.mark.parametrize("name", ["mul", "abs", "complex", "view_as_real"])
def test_complex_functions_pass_the_batched_checks(name):
    fn, inputs = CASES[name]
    assert gradcheck(fn, inputs(), check_batched_grad=True, check_forward_ad=True,
                     check_batched_forward_grad=True)


class Square(lucid.autograd.Function):
    """z**2 with a backward whose rule is chosen by the subclass."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return z * z


class RightSquare(Square):
    @staticmethod
    def backward(ctx, g):
        z, = ctx.saved_tensors
        return g * 2 * z.conj()           # the conjugated derivative (Note [Complex gradients])


class UnconjugatedSquare(Square):
    @staticmethod
    def backward(ctx, g):
        z, = ctx.saved_tensors
        return g * 2 * z                  # the real rule copied: the imaginary parts go wrong


class DoubledSquare(Square):
    @staticmethod
    def backward(ctx, g):
        z, = ctx.saved_tensors
        return g * 4 * z.conj()           # a factor of 2 too many


def test_a_right_complex_backward_passes():
    assert gradcheck(RightSquare.apply, (leaf(3),))


def test_a_missing_conjugate_fails_naming_the_part():
    z = leaf(3)
    before = z.detach().numpy().copy()
    with pytest.raises(GradcheckError) as error:
        gradcheck(UnconjugatedSquare.apply, (z,))
    message = str(error.value)
    assert "Jacobian mismatch for output 0 with respect to input 0" in message
    assert "imaginary part of its entry" in message
    assert "complex values are checked as their real and imaginary parts" in message
    np.testing.assert_array_equal(z.detach().numpy(), before)
    assert not gradcheck(UnconjugatedSquare.apply, (leaf(3),), raise_exception=False)


def test_a_factor_of_two_fails_in_both_modes():
    for fast in (False, True):
        with pytest.raises(GradcheckError, match="real and imaginary parts"):
            gradcheck(DoubledSquare.apply, (leaf(3),), fast_mode=fast)


def test_single_precision_complex_inputs_are_refused():
    z = lucid.tensor([1 + 1j], dtype=lucid.complex64, requires_grad=True)
    with pytest.raises(ValueError, match="use float64 or complex128 inputs"):
        gradcheck(lambda a: a * a, (z,))


def test_a_custom_function_forwards_complex_tangents():
    class Scale(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, z):
            return z * (2 - 1j)

        @staticmethod
        def backward(ctx, g):
            return g * (2 + 1j)

        @staticmethod
        def jvp(ctx, t):
            return t * (2 - 1j)

    assert gradcheck(Scale.apply, (leaf(2, 2),), check_forward_ad=True)
