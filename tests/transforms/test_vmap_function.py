"""Custom Functions under lucid.func.vmap (a vmap staticmethod, generate_vmap_rule) and
lucid.func.register_vmap_rule: values equal a loop over the batch, gradients are the Function's
backward (a loop of grad, finite differences in float64), and the error paths."""
import numpy as np
import pytest

import lucid
from lucid.autograd import Function, gradcheck
from lucid.func import grad, jacrev, register_vmap_rule, vmap

F64 = lucid.float64


def randn(*shape, requires_grad=False):
    return lucid.randn(*shape, dtype=F64, requires_grad=requires_grad)


def loop(f, *xs):
    """stack([f(x[0]), f(x[1]), ...]) over the leading dim of every input."""
    return np.stack([f(*[x[i] for x in xs]).detach().numpy() for i in range(xs[0].shape[0])])


CALLS = []


class NumpyCube(Function):
    """x**3 computed in NumPy, by its rule too (no lucid op records it); backward: lucid ops."""

    @staticmethod
    def forward(x):
        return lucid.tensor(x.detach().numpy() ** 3)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, grad_y):
        (x,) = ctx.saved_tensors
        return grad_y * 3 * x ** 2

    @staticmethod
    def vmap(info, in_dims, x):
        CALLS.append((info.batch_size, info.randomness, in_dims, tuple(x.shape)))
        return NumpyCube.apply(x), in_dims[0]


class NumpyScale(Function):
    """x * w (w not necessarily batched) in NumPy, with a rule that moves the batch dim to 0."""

    @staticmethod
    def forward(x, w):
        return lucid.tensor(x.detach().numpy() * w.detach().numpy())

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad_y):
        x, w = ctx.saved_tensors
        return grad_y * w, grad_y * x

    @staticmethod
    def vmap(info, in_dims, x, w):
        xd, wd = in_dims
        x = x if xd is None else x.movedim(xd, 0)
        w = w if wd is None else w.movedim(wd, 0)
        if xd is None:
            x = x.expand(info.batch_size, *x.shape)
        if wd is None:
            w = w.expand(info.batch_size, *w.shape)
        return NumpyScale.apply(x, w), 0


class ClippedDouble(Function):
    """2*x forward, with a clipped gradient: backward is not the forward's derivative, so a
    result equal to it shows that vmap used the Function's backward."""
    generate_vmap_rule = True

    @staticmethod
    def forward(x, w):
        return x * w * 2.0

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)
        ctx.scale = 2.0

    @staticmethod
    def backward(ctx, grad_y):
        x, w = ctx.saved_tensors
        return (grad_y * w * ctx.scale).clamp(-1.0, 1.0), grad_y * x * ctx.scale


class Smooth(Function):
    """tanh(x) * w with generate_vmap_rule: backward is the true derivative (for gradcheck)."""
    generate_vmap_rule = True

    @staticmethod
    def forward(x, w):
        return lucid.tanh(x) * w

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad_y):
        x, w = ctx.saved_tensors
        return grad_y * w * (1 - lucid.tanh(x) ** 2), grad_y * lucid.tanh(x)


# -- the vmap staticmethod ----------------------------------------------------------------------

def test_rule_values_equal_a_loop_and_see_the_level():
    CALLS.clear()
    x = randn(4, 3)
    np.testing.assert_allclose(vmap(NumpyCube.apply)(x).numpy(), loop(NumpyCube.apply, x))
    assert CALLS == [(4, "error", (0,), (4, 3))]
    CALLS.clear()
    out = vmap(NumpyCube.apply, in_dims=1, randomness="same")(x)
    np.testing.assert_allclose(out.numpy(), loop(NumpyCube.apply, x.T))
    assert CALLS[0][:2] == (3, "same")


def test_rule_with_an_unbatched_argument_and_out_dims():
    x, w = randn(4, 3), randn(3)
    out = vmap(NumpyScale.apply, in_dims=(0, None))(x, w)
    np.testing.assert_allclose(out.numpy(), x.numpy() * w.numpy())
    out = vmap(NumpyScale.apply, in_dims=(1, None), out_dims=1)(x.T, w)
    np.testing.assert_allclose(out.numpy(), x.numpy().T * w.numpy()[:, None])


def test_nested_vmap_calls_the_rule_once_per_level():
    CALLS.clear()
    x = randn(2, 4, 3)
    np.testing.assert_allclose(vmap(vmap(NumpyCube.apply))(x).numpy(), x.numpy() ** 3)
    assert [c[0] for c in CALLS] == [4, 2]           # inner level first, then the outer one
    x2, w = randn(2, 4, 3), randn(4, 3)
    out = vmap(vmap(NumpyScale.apply), in_dims=(0, None))(x2, w)
    np.testing.assert_allclose(out.numpy(), x2.numpy() * w.numpy())


def test_vmap_of_grad_through_a_rule_is_a_loop_of_grad():
    x, w = randn(5, 3), randn(3)
    f = lambda r: NumpyCube.apply(r).sum()          # noqa: E731
    np.testing.assert_allclose(vmap(grad(f))(x).numpy(), loop(grad(f), x), rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(f))(x).numpy(), 3 * x.numpy() ** 2, rtol=1e-12)
    g = lambda r, v: (NumpyScale.apply(r, v) ** 2).sum()   # noqa: E731
    for argnums in (0, 1):
        got = vmap(grad(g, argnums=argnums), in_dims=(0, None))(x, w)
        want = np.stack([grad(g, argnums=argnums)(x[i], w).numpy() for i in range(5)])
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def test_jacrev_inside_vmap_and_grad_of_vmap():
    x = randn(4, 3)
    got = vmap(jacrev(NumpyCube.apply))(x)
    np.testing.assert_allclose(got.numpy(), loop(jacrev(NumpyCube.apply), x), rtol=1e-12)
    xr = randn(4, 3, requires_grad=True)
    g = grad(lambda t: vmap(NumpyCube.apply)(t).sum())(xr)
    np.testing.assert_allclose(g.detach().numpy(), 3 * xr.detach().numpy() ** 2, rtol=1e-12)
    nested = vmap(vmap(grad(NumpyCube.apply)))(x)
    np.testing.assert_allclose(nested.numpy(), 3 * x.numpy() ** 2, rtol=1e-12)


def test_gradients_through_a_rule_match_finite_differences():
    x, w = randn(4, 3, requires_grad=True), randn(3, requires_grad=True)
    assert gradcheck(lambda t: vmap(NumpyCube.apply)(t), (x,))
    assert gradcheck(lambda t, v: vmap(NumpyScale.apply, in_dims=(0, None))(t, v), (x, w))
    x3 = randn(2, 3, 2, requires_grad=True)
    assert gradcheck(lambda t: vmap(vmap(NumpyCube.apply))(t), (x3,))


# -- generate_vmap_rule --------------------------------------------------------------------------

def test_generated_rule_values_equal_a_loop():
    x, w = randn(4, 3), randn(3)
    out = vmap(Smooth.apply, in_dims=(0, None))(x, w)
    np.testing.assert_allclose(out.numpy(), loop(lambda r: Smooth.apply(r, w), x), rtol=1e-12)
    ws = randn(4, 3)
    np.testing.assert_allclose(vmap(Smooth.apply)(x, ws).numpy(), loop(Smooth.apply, x, ws),
                               rtol=1e-12)
    x3 = randn(2, 4, 3)
    np.testing.assert_allclose(vmap(vmap(Smooth.apply, in_dims=(0, None)), in_dims=(0, None))(
        x3, w).numpy(), np.tanh(x3.numpy()) * w.numpy(), rtol=1e-12)


def test_generated_rule_uses_the_functions_backward():
    x, w = randn(5, 3) * 3, randn(3) * 3
    f = lambda r, v: ClippedDouble.apply(r, v).sum()      # noqa: E731
    for argnums in (0, 1):
        got = vmap(grad(f, argnums=argnums), in_dims=(0, None))(x, w)
        want = np.stack([grad(f, argnums=argnums)(x[i], w).numpy() for i in range(5)])
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    clipped = np.clip(2 * np.broadcast_to(w.numpy(), (5, 3)), -1, 1)
    np.testing.assert_allclose(vmap(grad(f), in_dims=(0, None))(x, w).numpy(), clipped)
    # reverse mode outside vmap: backward on the batch, w's gradient summed over it
    xr, wr = randn(5, 3, requires_grad=True), randn(3, requires_grad=True)
    vmap(ClippedDouble.apply, in_dims=(0, None))(xr, wr).sum().backward()
    np.testing.assert_allclose(xr.grad.numpy(), np.clip(2 * np.broadcast_to(wr.detach().numpy(),
                                                                          (5, 3)), -1, 1))
    np.testing.assert_allclose(wr.grad.numpy(), 2 * xr.detach().numpy().sum(0), rtol=1e-12)


def test_gradients_through_a_generated_rule_match_finite_differences():
    x, w = randn(4, 3, requires_grad=True), randn(3, requires_grad=True)
    assert gradcheck(lambda t, v: vmap(Smooth.apply, in_dims=(0, None))(t, v), (x, w))
    ws = randn(4, 3, requires_grad=True)
    assert gradcheck(lambda t, v: vmap(Smooth.apply)(t, v), (x, ws))
    x3 = randn(2, 2, 3, requires_grad=True)
    assert gradcheck(lambda t, v: vmap(vmap(Smooth.apply, in_dims=(0, None)),
                                       in_dims=(0, None))(t, v), (x3, w))
    per_sample = vmap(grad(lambda r: Smooth.apply(r, w).sum()))(x.detach())
    np.testing.assert_allclose(per_sample.detach().numpy(),
                               loop(grad(lambda r: Smooth.apply(r, w).sum()), x.detach()),
                               rtol=1e-12)


# -- the errors ---------------------------------------------------------------------------------

class Neither(Function):
    @staticmethod
    def forward(x):
        return x * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, grad_y):
        return grad_y * 2


class Both(Neither):
    generate_vmap_rule = True

    @staticmethod
    def vmap(info, in_dims, x):
        return x * 2, in_dims[0]


class OldStyle(Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad_y):
        return grad_y * 2


class NoPair(Neither):
    @staticmethod
    def vmap(info, in_dims, x):
        return x * 2


class BadOutDims(Neither):
    @staticmethod
    def vmap(info, in_dims, x):
        return (x * 2, x), (0,)


class WrongBatch(Neither):
    @staticmethod
    def vmap(info, in_dims, x):
        return x[0], 0


@pytest.mark.parametrize("cls,words", [
    (Neither, ["Neither", "does not have vmap support", "vmap staticmethod",
               "generate_vmap_rule=True"]),
    (Both, ["Both", "both generate_vmap_rule=True and an overridden vmap staticmethod"]),
    (OldStyle, ["must override the setup_context staticmethod", "OldStyle"]),
    (NoPair, ["NoPair", "two returns"]),
    (BadOutDims, ["BadOutDims", "incompatible (output, out_dims)"]),
    (WrongBatch, ["WrongBatch", "batch size is 4"]),
], ids=["neither", "both", "old-style", "not-a-pair", "out-dims", "batch-size"])
def test_error_paths_name_the_function_and_change_nothing(cls, words):
    x = randn(4, 3, requires_grad=True)
    before = x.detach().numpy().copy()
    version = x._version
    with pytest.raises(RuntimeError) as info:
        vmap(cls.apply)(x)
    for w in words:
        assert w in str(info.value), (w, str(info.value))
    np.testing.assert_array_equal(x.detach().numpy(), before)
    assert x._version == version and x.grad is None
    # outside vmap the Function still works as before
    np.testing.assert_allclose(cls.apply(x.detach()).numpy(), 2 * before)


# -- register_vmap_rule ---------------------------------------------------------------------------

def _strict_square(x):
    """A stand-in for a native op: plain Tensors only, like a Cython `def f(Tensor x)`."""
    if not isinstance(x, lucid.Tensor):
        raise TypeError(f"strict_square: expected a Tensor, got {type(x).__name__}")
    return x * x


RULE_CALLS = []


def _strict_square_rule(info, in_dims, x):
    RULE_CALLS.append((info.batch_size, in_dims))
    return strict_square(x), in_dims[0]


strict_square = register_vmap_rule(_strict_square, _strict_square_rule)


def test_register_vmap_rule_batches_an_op_that_refuses_batched_tensors():
    x = randn(4, 3)
    with pytest.raises(TypeError, match="strict_square"):
        vmap(_strict_square)(x)                       # without its rule
    RULE_CALLS.clear()
    np.testing.assert_allclose(vmap(strict_square)(x).numpy(), x.numpy() ** 2)
    assert RULE_CALLS == [(4, (0,))]
    RULE_CALLS.clear()
    x3 = randn(2, 4, 3)
    np.testing.assert_allclose(vmap(vmap(strict_square), in_dims=1)(x3).numpy(),
                               np.swapaxes(x3.numpy(), 0, 1) ** 2)
    assert [c[0] for c in RULE_CALLS] == [2, 4]
    np.testing.assert_allclose(strict_square(x).numpy(), x.numpy() ** 2)   # outside vmap


def test_register_vmap_rule_composes_with_grad():
    x = randn(4, 3, requires_grad=True)
    f = lambda r: strict_square(r).sum()             # noqa: E731
    np.testing.assert_allclose(vmap(grad(f))(x.detach()).numpy(), 2 * x.detach().numpy(),
                               rtol=1e-12)
    assert gradcheck(lambda t: vmap(strict_square)(t), (x,))


def test_register_vmap_rule_rejects_what_it_cannot_use():
    with pytest.raises(TypeError, match="register_vmap_rule: op must be callable"):
        register_vmap_rule(3, _strict_square_rule)
    with pytest.raises(TypeError, match="register_vmap_rule: rule must be callable"):
        register_vmap_rule(_strict_square, None)
    with pytest.raises(TypeError, match="register_vmap_rule: Neither is a class"):
        register_vmap_rule(Neither, _strict_square_rule)
    x = randn(4, 3)
    np.testing.assert_allclose(vmap(strict_square)(x).numpy(), x.numpy() ** 2)   # unchanged
