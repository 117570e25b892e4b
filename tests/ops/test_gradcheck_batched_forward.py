"""gradcheck(check_forward_ad=True, check_batched_forward_grad=True): the jvps of a batch of
tangents computed under vmap equal the loop over them; correct ops and Functions pass, a Function
whose jvp is wrong only when batched, or that cannot run under vmap, fails with the check named.
Also: a custom Function's jvp under vmap (vmap of jvp) runs on the batched tangents."""
import numpy as np
import pytest

import lucid
from lucid.autograd import Function, GradcheckError, gradcheck

RNG = np.random.default_rng(5)
XN = RNG.random((3, 4)) + 0.5
WN = RNG.standard_normal((4, 2))


def inputs():
    return (lucid.tensor(XN, requires_grad=True), lucid.tensor(WN, requires_grad=True))


def check(fn, args, **kw):
    return gradcheck(fn, args, check_forward_ad=True, check_batched_forward_grad=True, **kw)


class ExpBase(Function):
    """exp with a jvp (no vmap support of its own: the subclasses say how they batch)."""

    @staticmethod
    def forward(x):
        return lucid.exp(x.detach())

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)
        ctx.save_for_forward(output)

    @staticmethod
    def backward(ctx, grad_y):
        (y,) = ctx.saved_tensors
        return grad_y * y

    @staticmethod
    def jvp(ctx, tangent):
        (y,) = ctx.saved_tensors
        return tangent * y


class Exp(ExpBase):
    """exp batched by running forward on the batched tensors; correct batched or not."""
    generate_vmap_rule = True


class ValuesByNumpy(ExpBase):
    """exp whose vmap rule computes the values through NumPy: its tangents still come from jvp,
    run on the batched tangents (as torch.func does), so it passes."""

    @staticmethod
    def vmap(info, in_dims, x):
        x = x.movedim(in_dims[0], 0) if in_dims[0] is not None else x
        return lucid.tensor(np.exp(x.detach().numpy())), 0 if in_dims[0] is not None else None


class FirstRowScale(Function):
    """a * b, whose vmap rule wrongly uses a's first batch element for every element."""

    @staticmethod
    def forward(a, b):
        return a * b

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def vmap(info, in_dims, a, b):
        a = a.movedim(in_dims[0], 0)[0] if in_dims[0] is not None else a
        b = b.movedim(in_dims[1], 0) if in_dims[1] is not None else b
        return a * b, 0 if in_dims[1] is not None else None


class WrongWhenBatched(ExpBase):
    """exp whose jvp goes through FirstRowScale: right one tangent at a time, wrong batched."""
    generate_vmap_rule = True

    @staticmethod
    def jvp(ctx, tangent):
        (y,) = ctx.saved_tensors
        return FirstRowScale.apply(tangent, y)


class NoVmap(Function):
    """exp with a jvp but no way to run under vmap (forward(ctx, x): no setup_context)."""

    @staticmethod
    def forward(ctx, x):
        y = lucid.exp(x.detach())
        ctx.save_for_backward(y)
        ctx.save_for_forward(y)
        return y

    backward = staticmethod(ExpBase.backward)
    jvp = staticmethod(ExpBase.jvp)


@pytest.mark.parametrize("fn", [
    lambda x, w: (x @ w).tanh(),
    lambda x, w: (x.sin() * 2, (x @ w).sum(0)),
    lambda x, w: lucid.linalg.vector_norm(x, dim=1) + w.sum(),
    lambda x, w: Exp.apply(x) @ w,
], ids=["matmul-tanh", "two-outputs", "norm", "function"])
def test_correct_forward_derivatives_pass(fn):
    args = inputs()
    assert check(fn, args) is True
    np.testing.assert_array_equal(args[0].detach().numpy(), XN)
    assert args[0].grad is None and args[1].grad is None


def test_values_by_a_vmap_rule_and_tangents_by_jvp_pass():
    x = lucid.tensor(XN, requires_grad=True)
    assert check(ValuesByNumpy.apply, (x,)) is True


def test_a_jvp_wrong_only_when_batched_fails_naming_the_check():
    x = lucid.tensor(XN, requires_grad=True)
    assert gradcheck(WrongWhenBatched.apply, (x,), check_forward_ad=True)   # unbatched: right
    with pytest.raises(GradcheckError, match="check_batched_forward_grad") as info:
        check(WrongWhenBatched.apply, (x,))
    assert "differ from the loop" in str(info.value)
    assert check(WrongWhenBatched.apply, (x,), raise_exception=False) is False
    np.testing.assert_array_equal(x.detach().numpy(), XN)


def test_a_function_that_cannot_run_under_vmap_fails_with_the_vmap_error():
    x = lucid.tensor(XN, requires_grad=True)
    assert gradcheck(NoVmap.apply, (x,), check_forward_ad=True)
    with pytest.raises(GradcheckError, match="While computing batched gradients") as info:
        check(NoVmap.apply, (x,))
    assert "NoVmap" in str(info.value)


def test_without_check_forward_ad_it_raises_value_error_and_computes_nothing():
    calls = []

    def fn(x):
        calls.append(1)
        return x.sin()
    x = lucid.tensor(XN, requires_grad=True)
    with pytest.raises(ValueError, match="check_batched_forward_grad=True requires "
                                         "check_forward_ad"):
        gradcheck(fn, (x,), check_batched_forward_grad=True)
    assert calls == [] and x.grad is None


def test_the_keyword_must_be_a_bool():
    x = lucid.tensor(XN, requires_grad=True)
    with pytest.raises(TypeError, match="check_batched_forward_grad"):
        gradcheck(lambda t: t.sin(), (x,), check_forward_ad=True, check_batched_forward_grad=1)


def test_vmap_of_jvp_through_functions_equals_the_loop_and_torch():
    x = lucid.tensor(XN)
    tangents = lucid.tensor(RNG.standard_normal((3,) + XN.shape))
    for cls in (Exp, ValuesByNumpy):
        got = lucid.func.vmap(lambda t: lucid.func.jvp(cls.apply, (x,), (t,))[1])(tangents)
        np.testing.assert_allclose(got.numpy(), tangents.numpy() * np.exp(XN), rtol=1e-12)
    jac = lucid.func.vmap(lucid.func.jacfwd(Exp.apply))(x)
    want = np.zeros(XN.shape + XN.shape[1:])
    for b in range(XN.shape[0]):
        want[b] = np.diag(np.exp(XN[b]))
    np.testing.assert_allclose(jac.numpy(), want, rtol=1e-12)


def test_a_function_without_jvp_under_vmap_of_jvp_raises_naming_it():
    class NoJvp(Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return lucid.exp(x.detach())

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, grad_y):
            return grad_y
    x = lucid.tensor(XN)
    with pytest.raises(RuntimeError, match="Function NoJvp .* does not implement jvp"):
        lucid.func.vmap(lambda t: lucid.func.jvp(NoJvp.apply, (x,), (t,))[1])(
            lucid.tensor(np.ones((2,) + XN.shape)))
