"""gradcheck / gradgradcheck(check_batched_grad=True): the vjps of a batch of cotangents computed
under vmap equal the loop over them; correct ops and Functions pass, a Function whose gradient
is wrong only when batched, or whose backward cannot be batched, fails with the check named."""
import numpy as np
import pytest

import lucid
from lucid.autograd import Function, GradcheckError, gradcheck, gradgradcheck

RNG = np.random.default_rng(3)
XN = RNG.random((3, 4)) + 0.5
WN = RNG.standard_normal((4, 2))


def inputs():
    return (lucid.tensor(XN, requires_grad=True), lucid.tensor(WN, requires_grad=True))


class Exp(Function):
    """exp with a correct vmap staticmethod; backward uses the saved result."""

    @staticmethod
    def forward(x):
        return lucid.tensor(np.exp(x.detach().numpy()))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, grad_y):
        (y,) = ctx.saved_tensors
        return grad_y * y

    @staticmethod
    def vmap(info, in_dims, x):
        return Exp.apply(x.movedim(in_dims[0], 0)), 0


class NumpyMul(Function):
    """a * b in NumPy, with a vmap rule that assumes a (the gradient) is the same for every batch
    element: it multiplies the first one into all."""

    @staticmethod
    def forward(a, b):
        return lucid.tensor(a.detach().numpy() * b.detach().numpy())

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad * b, grad * a

    @staticmethod
    def vmap(info, in_dims, a, b):
        first = a.movedim(in_dims[0], 0)[0] if in_dims[0] is not None else a
        b = b.movedim(in_dims[1], 0) if in_dims[1] is not None else b.expand(
            info.batch_size, *b.shape)
        return NumpyMul.apply(first.expand(*b.shape), b), 0


class ExpSharedGrad(Exp):
    """Exp whose backward multiplies through NumpyMul: right unbatched, wrong only when the
    gradients are batched."""

    @staticmethod
    def backward(ctx, grad_y):
        (y,) = ctx.saved_tensors
        return NumpyMul.apply(grad_y, y)

    @staticmethod
    def vmap(info, in_dims, x):
        return ExpSharedGrad.apply(x.movedim(in_dims[0], 0)), 0


class NumpyBackward(Function):
    """2x whose backward leaves lucid for NumPy: right unbatched, impossible under vmap."""
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x * 2.0

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad_y):
        return lucid.tensor(grad_y.numpy() * 2.0)


class OldStyle(Function):
    """2x in the forward(ctx, ...) style: no vmap support."""

    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, grad_y):
        return grad_y * 2.0


@pytest.mark.parametrize("fast", [False, True])
def test_correct_ops_and_functions_pass(fast):
    assert gradcheck(lambda a, b: ((a.log() @ b).tanh(), a.sin()), inputs(),
                     check_batched_grad=True, fast_mode=fast)
    assert gradcheck(lambda a: Exp.apply(a) * 3.0, inputs()[:1], check_batched_grad=True,
                     fast_mode=fast)


def test_gradgradcheck_passes_on_correct_ops():
    assert gradgradcheck(lambda a, b: (a.log() @ b).tanh(), inputs(), check_batched_grad=True)
    assert gradgradcheck(lambda a: a.exp() * a, inputs()[:1], check_batched_grad=True)


def test_a_gradient_wrong_only_when_batched_fails_naming_the_check():
    x = lucid.tensor(XN, requires_grad=True)
    assert gradcheck(ExpSharedGrad.apply, (x,))                   # right when not batched
    with pytest.raises(GradcheckError, match="While checking batched gradients "
                                             "\\(check_batched_grad\\) for output 0 and input 0"):
        gradcheck(ExpSharedGrad.apply, (x,), check_batched_grad=True)
    assert gradcheck(ExpSharedGrad.apply, (x,), check_batched_grad=True,
                     raise_exception=False) is False
    assert x.grad is None
    np.testing.assert_array_equal(x.detach().numpy(), XN)


@pytest.mark.parametrize("cls,words", [(NumpyBackward, "numpy"),
                                       (OldStyle, "setup_context")])
def test_a_backward_that_cannot_run_batched_fails_naming_the_check(cls, words):
    x = lucid.tensor(XN, requires_grad=True)
    assert gradcheck(cls.apply, (x,))
    with pytest.raises(GradcheckError, match="While computing batched gradients, got:") as info:
        gradcheck(cls.apply, (x,), check_batched_grad=True)
    assert words in str(info.value)
    assert gradcheck(cls.apply, (x,), check_batched_grad=True, raise_exception=False) is False
    assert x.grad is None


def test_gradgradcheck_catches_a_second_derivative_wrong_only_when_batched():
    x = lucid.tensor(XN, requires_grad=True)
    assert gradgradcheck(lambda a: ExpSharedGrad.apply(a) * a, (x,))
    with pytest.raises(GradcheckError, match="batched gradients"):
        gradgradcheck(lambda a: ExpSharedGrad.apply(a) * a, (x,), check_batched_grad=True)
    assert gradgradcheck(lambda a: ExpSharedGrad.apply(a) * a, (x,), check_batched_grad=True,
                         raise_exception=False) is False


def test_check_batched_grad_must_be_a_bool():
    with pytest.raises(TypeError, match="check_batched_grad"):
        gradcheck(lambda t: t.sin(), inputs()[:1], check_batched_grad="yes")
