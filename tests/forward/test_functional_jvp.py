"""jvp's inputs and strict mode: lucid.func.jvp and lucid.autograd.functional.jvp.

Tangents are never cast from integers or bools: both refuse them with make_dual's TypeError
("a tangent must be a floating point or complex tensor"), naming the function and the entry, before calling
the function. strict=True raises PyTorch's RuntimeError when an output is independent of an input
(the reverse-mode transforms' wording), and with create_graph=True when the product does not
depend on the inputs (a function linear in them), not otherwise.
"""
import numpy as np
import pytest

import lucid
import lucid.autograd.forward_ad as fwAD
from lucid.autograd import functional as AF
from lucid.autograd import gradcheck
from support.checks import assert_close

BAD_DTYPES = [lucid.int64, lucid.int32, lucid.bool]
SHAPES = [(), (3,), (2, 0), (2, 3)]


def floats(shape, dtype=lucid.float64, seed=0):
    return lucid.tensor(np.random.default_rng(seed).uniform(0.5, 1.5, shape), dtype=dtype)


def bad_tangent(shape, dtype):
    return lucid.zeros(*shape, dtype=lucid.float64).to(dtype) if shape else \
        lucid.tensor(1 if dtype != lucid.bool else True, dtype=dtype)


def calls_counter():
    calls = []

    def f(*xs):
        calls.append(1)
        return sum((x * x for x in xs[1:]), xs[0].exp())
    return f, calls


def jvp_entry_points():
    """(name, call(f, primals, tangents)) for both jvps."""
    return [("func.jvp", lambda f, p, t: lucid.func.jvp(f, p, t)),
            ("functional.jvp", lambda f, p, t: AF.jvp(f, p, t))]


ENTRY_POINTS = jvp_entry_points()


@pytest.mark.parametrize("name, call", ENTRY_POINTS, ids=[n for n, _ in ENTRY_POINTS])
@pytest.mark.parametrize("dtype", BAD_DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_an_integer_or_bool_tangent_is_refused_like_make_dual(name, call, dtype, shape):
    f, calls = calls_counter()
    x = floats(shape)
    before = x.numpy().copy()
    with pytest.raises(TypeError) as info:
        call(f, (x,), (bad_tangent(shape, dtype),))
    message = str(info.value)
    assert message.startswith("jvp: a tangent must be a floating point or complex tensor, not "
                              f"{lucid._core.dtype_name(dtype)}")
    assert "tangent 0" in message
    assert calls == [] and np.array_equal(x.numpy(), before)
    with fwAD.dual_level():                       # the same refusal, the same words
        with pytest.raises(TypeError, match="a tangent must be a floating point or complex "
                                            "tensor"):
            fwAD.make_dual(x, bad_tangent(shape, dtype))


@pytest.mark.parametrize("name, call", ENTRY_POINTS, ids=[n for n, _ in ENTRY_POINTS])
def test_the_bad_tangent_is_named_among_several(name, call):
    f, calls = calls_counter()
    primals = (floats((2,)), floats((3,), seed=1), floats((2, 2), seed=2))
    tangents = (floats((2,)), floats((3,)), lucid.ones(2, 2, dtype=lucid.int64))
    with pytest.raises(TypeError, match="tangent 2"):
        call(f, primals, tangents)
    assert calls == []


@pytest.mark.parametrize("name, call", ENTRY_POINTS, ids=[n for n, _ in ENTRY_POINTS])
@pytest.mark.parametrize("primal_dtype, tangent_dtype",
                         [(lucid.float64, lucid.float32), (lucid.float32, lucid.float64),
                          (lucid.float32, lucid.float32)])
def test_float_tangents_of_either_precision_still_work(name, call, primal_dtype, tangent_dtype):
    f, _ = calls_counter()
    x = floats((3,), primal_dtype)
    t = floats((3,), tangent_dtype, seed=3)
    value, product = call(f, (x,), (t,))
    assert product.dtype == primal_dtype
    assert_close(product, np.exp(x.numpy()) * t.numpy().astype(np.float64), rtol=1e-6)


# -- strict mode -------------------------------------------------------------------------------

def independent_message(index):
    return (f"jvp: the output of the user-provided function is independent of input {index} "
            r"\(shape \(3,\)\). This is not allowed in strict mode.")


@pytest.mark.parametrize("dtype", [lucid.float32, lucid.float64])
def test_strict_raises_when_the_outputs_are_independent_of_an_input(dtype):
    x, y, z = floats((3,), dtype), floats((3,), dtype, 1), floats((3,), dtype, 2)
    t = lucid.ones(3, dtype=dtype)
    with pytest.raises(RuntimeError, match=independent_message(1)):
        AF.jvp(lambda a, b: a * 2, (x, y), (t, t), strict=True)
    with pytest.raises(RuntimeError, match=independent_message(2)):
        AF.jvp(lambda a, b, c: (a.exp(), b.sin()), (x, y, z), (t, t, t), strict=True)
    with pytest.raises(RuntimeError, match=independent_message(0)):
        AF.jvp(lambda a, b: (a.detach() * b).sum() + b, (x, y), (t, t), strict=True)
    with pytest.raises(RuntimeError, match=independent_message(1)):
        AF.jvp(lambda a, b: a * 2, (x, y), (t, t), strict=True, create_graph=True)
    # not strict: zeros for that input's part, as before
    value, product = AF.jvp(lambda a, b: a * 2, (x, y), (t, t))
    assert_close(product, [2.0, 2.0, 2.0])


def test_strict_passes_when_every_input_reaches_an_output():
    x, y = floats((3,)), floats((3,), seed=1)
    tx, ty = floats((3,), seed=2), floats((3,), seed=3)
    for create_graph in (False, True):
        value, product = AF.jvp(lambda a, b: (a.exp(), b * a), (x, y), (tx, ty), strict=True,
                                create_graph=create_graph)
        xs, ys = x.numpy(), y.numpy()
        assert_close(product[0], np.exp(xs) * tx.numpy())
        assert_close(product[1], ty.numpy() * xs + ys * tx.numpy())
        assert not x.requires_grad and not y.requires_grad and x.grad is None
    value, product = AF.jvp(lambda a: (a * a).sum(), x, tx, strict=True)
    assert product.grad_fn is None and not product.requires_grad


def test_strict_with_a_function_that_has_only_a_jvp():
    class Twice(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def jvp(ctx, t):
            return t * 2.0

    x, y, t = floats((3,)), floats((3,), seed=1), lucid.ones(3, dtype=lucid.float64)
    value, product = AF.jvp(lambda a, b: Twice.apply(a) + b, (x, y), (t, t), strict=True)
    assert_close(product, [3.0, 3.0, 3.0])
    with pytest.raises(RuntimeError, match=independent_message(1)):
        AF.jvp(lambda a, b: Twice.apply(a), (x, y), (t, t), strict=True)


def test_strict_create_graph_refuses_a_product_independent_of_the_inputs_only():
    x, t = floats((3,)), floats((3,), seed=1)
    with pytest.raises(RuntimeError, match="does not depend on the inputs"):
        AF.jvp(lambda a: a * 2, x, t, strict=True, create_graph=True)     # linear: J v constant
    # nonlinear: J v depends on x, whether or not x requires grad (PyTorch accepts both)
    for requires_grad in (False, True):
        xr = floats((3,)).requires_grad_(requires_grad)
        value, product = AF.jvp(lambda a: a * a, xr, t, strict=True, create_graph=True)
        assert_close(product, 2 * xr.detach().numpy() * t.numpy())
        assert product.requires_grad
        if requires_grad:
            (g,) = lucid.autograd.grad(product.sum(), xr)
            assert_close(g, 2 * t.numpy())


def test_strict_jvp_matches_finite_differences():
    x, y = floats((2, 3), seed=4), floats((2, 3), seed=5)
    tx, ty = floats((2, 3), seed=6), floats((2, 3), seed=7)
    f = lambda a, b: (a * b).tanh() + a.exp()             # noqa: E731
    _, product = AF.jvp(f, (x, y), (tx, ty), strict=True)
    eps = 1e-6
    plus = f(x + eps * tx, y + eps * ty).numpy()
    minus = f(x - eps * tx, y - eps * ty).numpy()
    assert_close(product, (plus - minus) / (2 * eps), rtol=1e-6, atol=1e-8)
    xs = [floats((2, 3), seed=8).requires_grad_(), floats((2, 3), seed=9).requires_grad_()]
    assert gradcheck(lambda a, b: AF.jvp(f, (a, b), (tx, ty), strict=True,
                                         create_graph=True)[1], xs)
