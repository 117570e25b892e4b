"""Custom Functions (API.md section 4): apply, FunctionCtx, the node, what backward returns,
multiple outputs, leaks, double backward, re-entrant backward, threads, gradcheck, in-place
Functions (ctx.mark_dirty) and setup_context-style Functions.

Error paths (bad backward results, exceptions) are in test_errors.py."""
import gc
import threading
import weakref

import numpy as np
import pytest

import lucid
from lucid.autograd import Function, gradcheck
from support.checks import assert_close, f64, numerical_vjp, to_numpy
from support.shared_functions import Square


# ---------------------------------------------------------------------------------------------
# Functions used by several tests
# ---------------------------------------------------------------------------------------------

class Exp(Function):
    """Saves its output (API.md example)."""

    @staticmethod
    def forward(ctx, x, scale=1.0):
        y = (x * scale).exp()
        ctx.save_for_backward(y)
        ctx.scale = scale
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y * ctx.scale, None


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3.0 * x * x * g


class Split(Function):
    """(x[:k] , x[k:]) of a 1-d tensor; backward concatenates."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        ctx.n = x.shape[0]
        return x[:k].clone(), x[k:].clone()

    @staticmethod
    def backward(ctx, ga, gb):
        return lucid.cat([ga, gb]), None


def _positive_mask(x):
    a = x.detach().numpy()
    return lucid.from_numpy((a > 0).astype(a.dtype))


# ---------------------------------------------------------------------------------------------
# 1. apply and forward
# ---------------------------------------------------------------------------------------------

def test_apply_square_value_and_gradient():
    xv = np.array([0.5, -1.5, 2.0])
    x = f64(xv, requires_grad=True)
    y = Square.apply(x)
    assert isinstance(y, lucid.Tensor)
    assert_close(y, xv ** 2)
    assert y.requires_grad and not y.is_leaf
    y.backward(gradient=f64([1.0, 2.0, 3.0]))
    assert_close(x.grad, 2 * xv * np.array([1.0, 2.0, 3.0]))


def test_forward_runs_with_grad_mode_off():
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            seen["enabled"] = lucid.is_grad_enabled()
            tmp = x * 2.0
            seen["tmp_grad_fn"] = tmp.grad_fn
            seen["tmp_requires_grad"] = tmp.requires_grad
            return tmp + 1.0

        @staticmethod
        def backward(ctx, g):
            return 2.0 * g

    x = f64([1.0, 2.0], requires_grad=True)
    assert lucid.is_grad_enabled()
    y = Probe.apply(x)
    assert seen["enabled"] is False
    assert seen["tmp_grad_fn"] is None
    assert seen["tmp_requires_grad"] is False
    assert lucid.is_grad_enabled(), "grad mode must be restored after forward"
    assert y.grad_fn is not None and y.grad_fn.name() == "ProbeBackward"
    y.sum().backward()
    assert_close(x.grad, [2.0, 2.0])


def test_grad_mode_restored_when_forward_raises():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            raise ValueError("forward failed")

        @staticmethod
        def backward(ctx, g):
            return g

    x = f64([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="forward failed"):
        Bad.apply(x)
    assert lucid.is_grad_enabled()


def test_non_tensor_arguments_anywhere():
    # f(a, x, s, y, tag) = a * x * s + y ** 2 ; a int, s float, tag a string
    seen = {}

    class Mixed(Function):
        @staticmethod
        def forward(ctx, a, x, s, y, tag):
            seen["args"] = (a, s, tag)
            ctx.save_for_backward(y)
            ctx.a, ctx.s = a, s
            return x * (a * s) + y * y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return None, g * (ctx.a * ctx.s), None, 2.0 * g * y, None

    xv, yv = np.array([1.0, -2.0]), np.array([0.5, 3.0])
    x, y = f64(xv, requires_grad=True), f64(yv, requires_grad=True)
    out = Mixed.apply(3, x, 0.25, y, "tag")
    assert seen["args"] == (3, 0.25, "tag")
    assert_close(out, xv * 0.75 + yv ** 2)
    w = np.array([1.0, -1.0])
    out.backward(gradient=f64(w))
    assert_close(x.grad, 0.75 * w)
    assert_close(y.grad, 2 * yv * w)


def test_float_argument_scale():
    xv = np.array([0.1, -0.4, 0.9])
    x = f64(xv, requires_grad=True)
    y = Exp.apply(x, 2.0)
    assert_close(y, np.exp(2 * xv))
    y.sum().backward()
    assert_close(x.grad, 2 * np.exp(2 * xv))


def test_tuple_output_with_non_tensors_passes_them_unchanged():
    marker = object()

    class WithExtras(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0, 7, marker, "name", x * 3.0

        @staticmethod
        def backward(ctx, ga, g_int, g_obj, g_str, gb):
            return 2.0 * ga + 3.0 * gb

    x = f64([1.0, 2.0], requires_grad=True)
    out = WithExtras.apply(x)
    assert isinstance(out, tuple) and len(out) == 5
    a, seven, m, name, b = out
    assert seven == 7 and m is marker and name == "name"
    assert_close(a, [2.0, 4.0])
    assert_close(b, [3.0, 6.0])
    assert a.grad_fn is b.grad_fn
    (a.sum() + b.sum()).backward()
    assert_close(x.grad, [5.0, 5.0])


def test_single_tensor_output_is_not_a_tuple():
    x = f64([1.0], requires_grad=True)
    y = Square.apply(x)
    assert isinstance(y, lucid.Tensor)


def test_tuple_with_one_tensor_stays_a_tuple():
    class One(Function):
        @staticmethod
        def forward(ctx, x):
            return (x * 2.0,)

        @staticmethod
        def backward(ctx, g):
            return 2.0 * g

    x = f64([1.0, 3.0], requires_grad=True)
    out = One.apply(x)
    assert isinstance(out, tuple) and len(out) == 1
    out[0].sum().backward()
    assert_close(x.grad, [2.0, 2.0])


class Identity(Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 5.0     # deliberately not 1 so the path through the node is visible


def test_input_returned_unchanged_leaf():
    xv = np.array([1.0, 2.0, 3.0])
    x = f64(xv, requires_grad=True)
    y = Identity.apply(x)
    assert y is not x
    assert np.shares_memory(to_numpy_view(y), to_numpy_view(x))
    assert y.grad_fn is not None and type(y.grad_fn).__name__ == "IdentityBackward"
    assert x.grad_fn is None and x.is_leaf and x.requires_grad
    assert not y.is_leaf
    y.sum().backward()
    assert_close(x.grad, 5.0 * np.ones(3))


def test_input_returned_unchanged_non_leaf_keeps_history():
    xv = np.array([1.0, -2.0])
    x = f64(xv, requires_grad=True)
    h = x * 3.0
    h_fn = h.grad_fn
    y = Identity.apply(h)
    assert y is not h
    assert h.grad_fn is h_fn and h.grad_fn.name() == "MulBackward"
    assert y.grad_fn.name() == "IdentityBackward"
    assert np.shares_memory(to_numpy_view(y), to_numpy_view(h))
    (y.sum() + h.sum()).backward()
    assert_close(x.grad, 3.0 * 5.0 + 3.0 * np.ones(2))


def test_input_returned_in_tuple_with_other_output():
    class PassAndDouble(Function):
        @staticmethod
        def forward(ctx, x):
            return x, x * 2.0

        @staticmethod
        def backward(ctx, ga, gb):
            return 5.0 * ga + 2.0 * gb

    x = f64([1.0, 2.0], requires_grad=True)
    a, b = PassAndDouble.apply(x)
    assert a is not x and x.is_leaf and x.grad_fn is None
    assert np.shares_memory(to_numpy_view(a), to_numpy_view(x))
    assert a.grad_fn is b.grad_fn
    (a + b).sum().backward()
    assert_close(x.grad, [7.0, 7.0])


def test_same_tensor_returned_twice_as_two_outputs():
    class Twice(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2.0
            return y, y

        @staticmethod
        def backward(ctx, ga, gb):
            return 2.0 * ga + 20.0 * gb

    x = f64([1.0, 2.0], requires_grad=True)
    a, b = Twice.apply(x)
    assert a is b                    # as PyTorch: one object, the output of its last place
    assert a.grad_fn is not None and a.output_nr == 1
    assert_close(a, [2.0, 4.0])
    (a * 1.0 + b * 3.0).sum().backward()      # all of it reaches output 1: ga = 0, gb = 4
    assert_close(x.grad, [80.0, 80.0])


def to_numpy_view(t):
    return t.detach().numpy()


def test_no_input_requires_grad_gives_plain_outputs():
    x = f64([1.0, 2.0], requires_grad=False)
    y = Square.apply(x)
    assert not y.requires_grad and y.grad_fn is None
    assert_close(y, [1.0, 4.0])


def test_under_no_grad_outputs_do_not_require_grad():
    x = f64([1.0, 2.0], requires_grad=True)
    with lucid.no_grad():
        y = Square.apply(x)
        a, b = Split.apply(x, 1)
    assert not y.requires_grad and y.grad_fn is None
    assert not a.requires_grad and not b.requires_grad
    assert a.grad_fn is None and b.grad_fn is None
    assert_close(y, [1.0, 4.0])


def test_set_grad_enabled_false_outputs_do_not_require_grad():
    x = f64([1.0, 2.0], requires_grad=True)
    with lucid.set_grad_enabled(False):
        y = Identity.apply(x)
    assert not y.requires_grad and y.grad_fn is None


def test_only_some_inputs_require_grad():
    class Mul(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * a

    av, bv = np.array([1.0, 2.0]), np.array([3.0, -4.0])
    a, b = f64(av, requires_grad=True), f64(bv)
    y = Mul.apply(a, b)
    assert y.requires_grad
    y.sum().backward()
    assert_close(a.grad, bv)
    assert b.grad is None


def test_integer_output_gets_no_grad_fn():
    class ArgmaxAndValue(Function):
        @staticmethod
        def forward(ctx, x):
            idx = lucid.from_numpy(np.array([int(np.argmax(x.detach().numpy()))], dtype=np.int64))
            return x * 1.0, idx

        @staticmethod
        def backward(ctx, g, gidx):
            return g

    x = f64([1.0, 5.0, 2.0], requires_grad=True)
    v, idx = ArgmaxAndValue.apply(x)
    assert v.requires_grad
    assert not idx.requires_grad and idx.grad_fn is None
    assert idx.tolist() == [1]


def test_function_cannot_be_instantiated_and_base_apply_refused():
    with pytest.raises(RuntimeError):
        Square()
    with pytest.raises((RuntimeError, NotImplementedError, TypeError)):
        Function.apply(f64([1.0], requires_grad=True))


# ---------------------------------------------------------------------------------------------
# 2. FunctionCtx
# ---------------------------------------------------------------------------------------------

def test_ctx_is_a_fresh_function_ctx_per_call():
    ctxs = []

    class Keep(Function):
        @staticmethod
        def forward(ctx, x):
            ctxs.append(ctx)
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g

    x = f64([1.0], requires_grad=True)
    Keep.apply(x)
    Keep.apply(x)
    assert len(ctxs) == 2
    assert ctxs[0] is not ctxs[1]
    assert all(isinstance(c, lucid.autograd.FunctionCtx) for c in ctxs)


def test_save_for_backward_none_comes_back_as_none():
    got = {}

    class SaveNone(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(None, x, None)
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            saved = ctx.saved_tensors
            got["saved"] = saved
            return 2.0 * g * saved[1] / saved[1]

    xv = np.array([1.0, 4.0])
    x = f64(xv, requires_grad=True)
    SaveNone.apply(x).sum().backward()
    saved = got["saved"]
    assert isinstance(saved, tuple) and len(saved) == 3
    assert saved[0] is None and saved[2] is None
    assert_close(saved[1], xv)
    assert_close(x.grad, [2.0, 2.0])


def test_second_save_for_backward_replaces_first():
    got = {}

    class SaveTwice(Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y, x)
            ctx.save_for_backward(y)
            return x * y

        @staticmethod
        def backward(ctx, g):
            got["saved"] = ctx.saved_tensors
            (y,) = got["saved"]
            return g * y, None

    xv, yv = np.array([1.0, 2.0]), np.array([7.0, -3.0])
    x, y = f64(xv, requires_grad=True), f64(yv)
    SaveTwice.apply(x, y).sum().backward()
    assert len(got["saved"]) == 1
    assert_close(got["saved"][0], yv)
    assert_close(x.grad, yv)


def test_saved_tensors_freed_after_backward_without_retain_graph():
    ctxs = []

    class KeepCtx(Square):
        @staticmethod
        def forward(ctx, x):
            ctxs.append(ctx)
            return Square.forward(ctx, x)

    x = f64([1.0, 2.0], requires_grad=True)
    y = KeepCtx.apply(x)
    y.sum().backward()
    assert_close(x.grad, [2.0, 4.0])
    with pytest.raises(RuntimeError):
        ctxs[0].saved_tensors
    grad_before = to_numpy(x.grad)
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.sum().backward()
    assert_close(x.grad, grad_before, rtol=0, atol=0)


def test_retain_graph_allows_second_backward():
    xv = np.array([1.0, -3.0])
    x = f64(xv, requires_grad=True)
    y = Square.apply(x)
    y.sum().backward(retain_graph=True)
    assert_close(x.grad, 2 * xv)
    y.sum().backward()
    assert_close(x.grad, 4 * xv)


def test_retain_graph_saved_output():
    xv = np.array([0.2, -0.7])
    x = f64(xv, requires_grad=True)
    y = Exp.apply(x, 1.5)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert_close(x.grad, 2 * 1.5 * np.exp(1.5 * xv))


def test_ctx_attribute_bag():
    got = {}

    class Attrs(Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            ctx.shape = x.shape
            ctx.meta = {"tag": "abc"}
            try:
                ctx.not_set_anywhere
            except AttributeError:
                got["forward_missing"] = "AttributeError"
            return x * k

        @staticmethod
        def backward(ctx, g):
            got["values"] = (ctx.k, ctx.shape, ctx.meta["tag"])
            return g * ctx.k, None

    x = f64([[1.0, 2.0]], requires_grad=True)
    Attrs.apply(x, 4.0).sum().backward()
    assert got["forward_missing"] == "AttributeError"
    assert got["values"] == (4.0, (1, 2), "abc")
    assert_close(x.grad, [[4.0, 4.0]])


def test_missing_ctx_attribute_in_backward_is_attribute_error():
    class Missing(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.present = 1
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return g * ctx.absent

    x = f64([1.0], requires_grad=True)
    y = Missing.apply(x)
    with pytest.raises(AttributeError, match="absent"):
        y.sum().backward()
    assert x.grad is None


def test_needs_input_grad():
    got = {}

    class Needs(Function):
        @staticmethod
        def forward(ctx, a, x, s, y, z, none_arg):
            got["needs"] = ctx.needs_input_grad
            return x * s + y + z

        @staticmethod
        def backward(ctx, g):
            got["needs_backward"] = ctx.needs_input_grad
            return None, g * 2.0, None, None, g, None

    x = f64([1.0, 2.0], requires_grad=True)
    y = f64([3.0, 4.0])                      # does not require grad
    z = f64([0.0, 1.0], requires_grad=True)
    out = Needs.apply("label", x, 2.0, y, z, None)
    needs = got["needs"]
    assert isinstance(needs, tuple)
    assert needs == (False, True, False, False, True, False)
    assert all(type(n) is bool for n in needs)
    out.sum().backward()
    assert got["needs_backward"] == (False, True, False, False, True, False)
    assert_close(x.grad, [2.0, 2.0])
    assert_close(z.grad, [1.0, 1.0])


def test_needs_input_grad_all_false_when_nothing_requires_grad():
    got = {}

    class Needs(Function):
        @staticmethod
        def forward(ctx, x, k):
            got["needs"] = ctx.needs_input_grad
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, None

    Needs.apply(f64([1.0]), 2.0)
    assert got["needs"] == (False, False)


def test_mark_non_differentiable():
    got = {}

    class ValueAndMask(Function):
        @staticmethod
        def forward(ctx, x):
            mask = _positive_mask(x)      # a float output that is not differentiable
            ctx.mark_non_differentiable(mask)
            return x * 3.0, mask

        @staticmethod
        def backward(ctx, g, g_mask):
            got["g_mask"] = g_mask
            return 3.0 * g

    xv = np.array([-1.0, 2.0, 0.5])
    x = f64(xv, requires_grad=True)
    v, mask = ValueAndMask.apply(x)
    assert v.requires_grad and v.grad_fn is not None
    assert not mask.requires_grad and mask.grad_fn is None
    assert_close(mask, (xv > 0).astype(np.float64))
    v.sum().backward()
    assert_close(x.grad, 3.0 * np.ones(3))
    g_mask = got["g_mask"]
    assert isinstance(g_mask, lucid.Tensor)
    assert g_mask.shape == (3,)
    assert_close(g_mask, np.zeros(3), rtol=0, atol=0)


def test_mark_non_differentiable_single_output():
    class NonDiff(Function):
        @staticmethod
        def forward(ctx, x):
            out = _positive_mask(x)
            ctx.mark_non_differentiable(out)
            return out

        @staticmethod
        def backward(ctx, g):
            return g

    x = f64([-1.0, 2.0], requires_grad=True)
    y = NonDiff.apply(x)
    assert not y.requires_grad and y.grad_fn is None


class TwoOut(Function):
    """(2x, 3x); records what backward received."""
    received = []
    materialize = True

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(TwoOut.materialize)
        return x * 2.0, (x * 3.0).reshape(1, -1)

    @staticmethod
    def backward(ctx, ga, gb):
        TwoOut.received.append((ga, gb))
        g = 0.0
        if ga is not None:
            g = g + 2.0 * ga
        if gb is not None:
            g = g + 3.0 * gb.reshape(-1)
        return g


def test_materialize_grads_default_zeros():
    TwoOut.received = []
    TwoOut.materialize = True
    x = f64([1.0, 2.0], requires_grad=True)
    a, b = TwoOut.apply(x)
    a.sum().backward()
    assert len(TwoOut.received) == 1
    ga, gb = TwoOut.received[0]
    assert_close(ga, [1.0, 1.0])
    assert isinstance(gb, lucid.Tensor)
    assert gb.shape == (1, 2)
    assert gb.dtype == lucid.float64
    assert_close(gb, np.zeros((1, 2)), rtol=0, atol=0)
    assert_close(x.grad, [2.0, 2.0])


def test_set_materialize_grads_false_gives_none():
    TwoOut.received = []
    TwoOut.materialize = False
    try:
        x = f64([1.0, 2.0], requires_grad=True)
        a, b = TwoOut.apply(x)
        b.sum().backward()
    finally:
        TwoOut.materialize = True
    assert len(TwoOut.received) == 1
    ga, gb = TwoOut.received[0]
    assert ga is None
    assert_close(gb, [[1.0, 1.0]])
    assert_close(x.grad, [3.0, 3.0])


# ---------------------------------------------------------------------------------------------
# 3. the node
# ---------------------------------------------------------------------------------------------

class Other(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        return g


def test_node_name_type_and_base_class():
    x = f64([1.0, 2.0], requires_grad=True)
    y = Square.apply(x)
    node = y.grad_fn
    assert node.name() == "SquareBackward"
    assert type(node).__name__ == "SquareBackward"
    assert isinstance(node, lucid.autograd.PythonBackwardNode)
    assert isinstance(node, lucid.autograd.Node)
    z = Other.apply(x)
    assert z.grad_fn.name() == "OtherBackward"
    assert type(z.grad_fn) is not type(node)
    assert type(Square.apply(x).grad_fn) is type(node)
    assert "SquareBackward" in repr(y)


def test_each_subclass_including_subclass_of_subclass_gets_own_node_class():
    class Square2(Square):
        pass

    x = f64([1.0, 2.0], requires_grad=True)
    y = Square2.apply(x)
    assert y.grad_fn.name() == "Square2Backward"
    assert type(y.grad_fn).__name__ == "Square2Backward"
    assert type(y.grad_fn) is not type(Square.apply(x).grad_fn)
    assert isinstance(y.grad_fn, lucid.autograd.PythonBackwardNode)
    y.sum().backward()                       # the inherited backward is used
    assert_close(x.grad, [2.0, 4.0])


def test_next_functions_point_at_inputs_nodes():
    class Combine(Function):
        @staticmethod
        def forward(ctx, a, s, h, c):
            return a * s + h + c

        @staticmethod
        def backward(ctx, g):
            return g, None, g, None

    a = f64([1.0, 2.0], requires_grad=True)
    x = f64([3.0, 4.0], requires_grad=True)
    h = x * 2.0
    c = f64([0.5, 0.5])                        # does not require grad
    y = Combine.apply(a, 2.0, h, c)
    nf = y.grad_fn.next_functions
    assert isinstance(nf, tuple)
    assert len(nf) == 4                         # one per forward argument
    acc, idx = nf[0]
    assert type(acc).__name__ == "AccumulateGrad"
    assert isinstance(acc, lucid.autograd.AccumulateGrad)
    assert acc.variable is a
    assert idx == 0
    assert nf[1][0] is None                     # a float argument
    assert nf[2][0] is h.grad_fn
    assert nf[3][0] is None                     # a tensor that does not require grad
    # two Functions chained: the second points at the first's node, with the output index
    a2, b2 = Split.apply(a, 1)
    z = Square.apply(b2)
    assert z.grad_fn.next_functions[0][0] is b2.grad_fn
    assert z.grad_fn.next_functions[0][1] == 1
    assert b2.grad_fn.next_functions[0][0].variable is a


# ---------------------------------------------------------------------------------------------
# 4. what backward returns (valid forms; invalid ones are in test_errors.py)
# ---------------------------------------------------------------------------------------------

def _two_input_function(returner):
    class TwoIn(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * 2.0 + b * 3.0

        @staticmethod
        def backward(ctx, g):
            return returner(g)

    return TwoIn


@pytest.mark.parametrize("returner,expect_b", [
    (lambda g: (2.0 * g, 3.0 * g), True),
    (lambda g: [2.0 * g, 3.0 * g], True),
    (lambda g: (2.0 * g, 3.0 * g, None, None), True),
    (lambda g: (2.0 * g, None), False),
    (lambda g: [2.0 * g, None, None], False),
], ids=["tuple", "list", "trailing-nones", "none-entry", "list-none-trailing"])
def test_backward_return_forms(returner, expect_b):
    F = _two_input_function(returner)
    a = f64([1.0, 2.0], requires_grad=True)
    b = f64([3.0, 4.0], requires_grad=True)
    F.apply(a, b).sum().backward()
    assert_close(a.grad, [2.0, 2.0])
    if expect_b:
        assert_close(b.grad, [3.0, 3.0])
    else:
        assert b.grad is None


def test_backward_returns_single_tensor_for_single_input():
    x = f64([1.0, 2.0], requires_grad=True)
    Square.apply(x).sum().backward()
    assert_close(x.grad, [2.0, 4.0])


def test_backward_returns_none_for_all():
    class NoGrad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return None

    x = f64([1.0, 2.0], requires_grad=True)
    w = f64([1.0, 1.0], requires_grad=True)
    (NoGrad.apply(x) * w).sum().backward()
    assert x.grad is None
    assert_close(w.grad, [2.0, 4.0])


def test_gradient_for_input_not_requiring_grad_is_ignored():
    class Both(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g, g

    a = f64([1.0], requires_grad=True)
    b = f64([2.0])
    Both.apply(a, b).sum().backward()
    assert_close(a.grad, [1.0])
    assert b.grad is None


@pytest.mark.parametrize("in_dtype,ret_dtype", [
    (np.float32, np.float64), (np.float64, np.float32)])
def test_backward_float_dtype_is_cast_to_input_dtype(in_dtype, ret_dtype):
    class Cast(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return lucid.from_numpy(np.full(g.shape, 2.5, dtype=ret_dtype))

    x = lucid.from_numpy(np.array([1.0, 2.0, 3.0], dtype=in_dtype)).requires_grad_()
    y = Cast.apply(x)
    assert y.dtype == x.dtype
    y.sum().backward()
    expected_dtype = lucid.float32 if in_dtype == np.float32 else lucid.float64
    assert x.grad.dtype == expected_dtype
    assert x.grad.numpy().dtype == np.dtype(in_dtype)
    assert_close(x.grad, np.full(3, 2.5))


def test_float32_input_with_float64_gradient_through_graph():
    class Up(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            g64 = lucid.from_numpy(g.numpy().astype(np.float64))
            return g64 * 2.0

    xv = np.array([0.5, 1.5], dtype=np.float32)
    x = lucid.tensor(xv, requires_grad=True)
    (Up.apply(x) * 3.0).sum().backward()
    assert x.grad.dtype == lucid.float32
    assert_close(x.grad, [6.0, 6.0])


# ---------------------------------------------------------------------------------------------
# 5. multiple outputs
# ---------------------------------------------------------------------------------------------

class CountingSplit(Function):
    calls = []

    @staticmethod
    def forward(ctx, x):
        n = x.shape[0] // 2
        return x[:n] * 1.0, 4, x[n:] * 1.0

    @staticmethod
    def backward(ctx, ga, g_int, gb):
        CountingSplit.calls.append((ga, g_int, gb))
        return lucid.cat([ga, gb])


def test_multi_output_backward_called_once_with_one_grad_per_output():
    CountingSplit.calls = []
    xv = np.array([0.3, -0.2, 1.1, 0.4])
    x = f64(xv, requires_grad=True)
    a, four, b = CountingSplit.apply(x)
    assert four == 4
    loss = (a * 2.0).sum() + (b * b).sum()
    loss.backward()
    assert len(CountingSplit.calls) == 1
    ga, g_int, gb = CountingSplit.calls[0]
    assert g_int is None
    assert_close(ga, [2.0, 2.0])
    assert_close(gb, 2 * xv[2:])
    assert_close(x.grad, np.concatenate([[2.0, 2.0], 2 * xv[2:]]))


def test_multi_output_diamond_waits_for_every_path():
    CountingSplit.calls = []
    xv = np.array([0.5, -1.0, 0.25, 2.0])
    x = f64(xv, requires_grad=True)
    a, _, b = CountingSplit.apply(x)
    # a goes through a long chain, b through a short one; they join later
    p = a
    for _ in range(6):
        p = p.tanh() * 1.5
    q = b.exp()
    joined = p * q + a * b
    loss = joined.sum()
    loss.backward()
    assert len(CountingSplit.calls) == 1

    def ref(v):
        av, bv = v[:2], v[2:]
        pv = av
        for _ in range(6):
            pv = np.tanh(pv) * 1.5
        return (pv * np.exp(bv) + av * bv).sum()

    (num,) = numerical_vjp(ref, [xv], np.float64(1.0))
    assert_close(x.grad, num, rtol=1e-6, atol=1e-8)
    ga, _, gb = CountingSplit.calls[0]
    # each output's gradient is the total over all its uses
    (num_a,) = numerical_vjp(lambda av: (_chain(av) * np.exp(xv[2:]) + av * xv[2:]).sum(),
                             [xv[:2]], np.float64(1.0))
    assert_close(ga, num_a, rtol=1e-6, atol=1e-8)


def _chain(av):
    pv = av
    for _ in range(6):
        pv = np.tanh(pv) * 1.5
    return pv


def test_multi_output_same_output_used_twice_accumulates_before_call():
    CountingSplit.calls = []
    x = f64([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    a, _, b = CountingSplit.apply(x)
    (a * 2.0 + a * 3.0).sum().backward()
    assert len(CountingSplit.calls) == 1
    ga, _, gb = CountingSplit.calls[0]
    assert_close(ga, [5.0, 5.0])
    assert_close(gb, [0.0, 0.0])
    assert_close(x.grad, [5.0, 5.0, 0.0, 0.0])


def test_two_functions_outputs_both_reach_loss_through_shared_function():
    CountingSplit.calls = []
    xv = np.array([1.0, 2.0, -1.0, 0.5])
    x = f64(xv, requires_grad=True)
    a, _, b = CountingSplit.apply(x)
    s = Square.apply(a)
    t = Square.apply(b)
    (s * t).sum().backward()
    assert len(CountingSplit.calls) == 1
    av, bv = xv[:2], xv[2:]
    assert_close(x.grad, np.concatenate([2 * av * bv ** 2, 2 * bv * av ** 2]))


# ---------------------------------------------------------------------------------------------
# 7. no leaks
# ---------------------------------------------------------------------------------------------

CTX_REFS = []
INNER_REFS = []


class Sentinel:
    pass


class SaveOutput(Function):
    @staticmethod
    def forward(ctx, x):
        CTX_REFS.append(ctx)            # strong for now; the test turns it into a weakref
        y = x.exp()
        ctx.save_for_backward(y)
        ctx.sentinel = Sentinel()
        INNER_REFS.append(weakref.ref(ctx.sentinel))
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class SaveInput(Function):
    @staticmethod
    def forward(ctx, x):
        CTX_REFS.append(ctx)
        ctx.save_for_backward(x)
        ctx.sentinel = Sentinel()
        INNER_REFS.append(weakref.ref(ctx.sentinel))
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2.0 * g * x


def _take_ctx_ref():
    """The ctx appended by the last forward, as a weakref (None if ctx can't be weakly referenced)."""
    ctx = CTX_REFS.pop()
    try:
        return weakref.ref(ctx)
    except TypeError:
        return None


@pytest.fixture
def gc_off():
    CTX_REFS.clear()
    INNER_REFS.clear()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        CTX_REFS.clear()
        INNER_REFS.clear()


@pytest.mark.parametrize("F", [SaveOutput, SaveInput], ids=["save-output", "save-input"])
@pytest.mark.parametrize("run_backward", [False, True], ids=["no-backward", "after-backward"])
def test_no_reference_cycle(gc_off, F, run_backward):
    x = f64([0.5, -1.0, 2.0], requires_grad=True)
    y = F.apply(x)
    ctx_ref = _take_ctx_ref()
    sentinel_ref = INNER_REFS.pop()
    y_ref = weakref.ref(y)
    node_ref = weakref.ref(y.grad_fn)
    if run_backward:
        y.sum().backward()
    del y
    assert y_ref() is None, "the output leaked (reference cycle through the saved tensor?)"
    assert node_ref() is None, "the node leaked"
    assert sentinel_ref() is None, "the ctx (or its attributes) leaked"
    if ctx_ref is not None:
        assert ctx_ref() is None, "the ctx leaked"
    assert x.grad_fn is None and x.is_leaf


@pytest.mark.parametrize("F", [SaveOutput, SaveInput], ids=["save-output", "save-input"])
def test_no_reference_cycle_after_retained_backward(gc_off, F):
    x = f64([0.5, -1.0], requires_grad=True)
    y = F.apply(x)
    CTX_REFS.pop()
    sentinel_ref = INNER_REFS.pop()
    y_ref, node_ref = weakref.ref(y), weakref.ref(y.grad_fn)
    y.sum().backward(retain_graph=True)
    assert sentinel_ref() is not None        # retained
    del y
    assert y_ref() is None and node_ref() is None and sentinel_ref() is None


def test_ctx_supports_weakref_and_dies_with_output(gc_off):
    x = f64([1.0], requires_grad=True)
    y = SaveOutput.apply(x)
    ctx = CTX_REFS.pop()
    ref = weakref.ref(ctx)          # FunctionCtx must be weakly referenceable (as in PyTorch)
    del ctx
    assert ref() is not None
    del y
    assert ref() is None


def test_saved_input_freed_with_graph(gc_off):
    x = f64([1.0, 2.0], requires_grad=True)
    y = SaveInput.apply(x)
    CTX_REFS.clear()
    x_ref = weakref.ref(x)
    del x
    assert x_ref() is not None        # the graph still needs it
    del y
    assert x_ref() is None


def test_multi_output_function_no_cycle(gc_off):
    class SaveBoth(Function):
        @staticmethod
        def forward(ctx, x):
            a, b = x.exp(), x.tanh()
            ctx.save_for_backward(a, b)
            return a, b

        @staticmethod
        def backward(ctx, ga, gb):
            a, b = ctx.saved_tensors
            return ga * a + gb * (1.0 - b * b)

    x = f64([0.1, 0.2], requires_grad=True)
    a, b = SaveBoth.apply(x)
    refs = [weakref.ref(a), weakref.ref(b), weakref.ref(a.grad_fn)]
    del a, b
    assert all(r() is None for r in refs)


class Holder(Function):
    @staticmethod
    def forward(ctx, x):
        big = lucid.ones(1000, dtype=lucid.float64)
        saved = x * 2.0
        ctx.big = big
        ctx.save_for_backward(saved)
        INNER_REFS.append(weakref.ref(big))
        INNER_REFS.append(weakref.ref(saved))
        return x * 3.0

    @staticmethod
    def backward(ctx, g):
        (saved,) = ctx.saved_tensors
        assert ctx.big.shape == (1000,)
        return g * 3.0 + saved * 0.0


def test_saved_tensors_and_attributes_dropped_after_backward(gc_off):
    x = f64([1.0, 2.0], requires_grad=True)
    y = Holder.apply(x)
    big_ref, saved_ref = INNER_REFS
    assert big_ref() is not None and saved_ref() is not None
    y.sum().backward()
    assert_close(x.grad, [3.0, 3.0])
    assert y.grad_fn is not None                 # y is still alive ...
    assert big_ref() is None, "ctx attribute kept after backward without retain_graph"
    assert saved_ref() is None, "saved tensor kept after backward without retain_graph"


def test_saved_tensors_kept_with_retain_graph(gc_off):
    x = f64([1.0, 2.0], requires_grad=True)
    y = Holder.apply(x)
    big_ref, saved_ref = INNER_REFS
    y.sum().backward(retain_graph=True)
    assert big_ref() is not None and saved_ref() is not None
    y.sum().backward()
    assert_close(x.grad, [6.0, 6.0])
    assert big_ref() is None and saved_ref() is None


# ---------------------------------------------------------------------------------------------
# 8. double backward
# ---------------------------------------------------------------------------------------------

def test_cube_second_derivative():
    xv = np.array([0.5, -1.25, 2.0])
    x = f64(xv, requires_grad=True)
    y = Cube.apply(x)
    (g,) = lucid.autograd.grad(y.sum(), x, create_graph=True)
    assert_close(g, 3 * xv ** 2)
    assert g.requires_grad
    (h,) = lucid.autograd.grad(g.sum(), x)
    assert_close(h, 6 * xv)


def test_cube_second_derivative_via_backward_accumulates():
    xv = np.array([0.5, -1.25])
    x = f64(xv, requires_grad=True)
    y = Cube.apply(x)
    y.sum().backward(create_graph=True)
    g = x.grad
    assert_close(g, 3 * xv ** 2)
    x.grad = None
    g.sum().backward()
    assert_close(x.grad, 6 * xv)


def test_saved_output_double_backward():
    xv = np.array([0.3, -0.8])
    x = f64(xv, requires_grad=True)
    y = Exp.apply(x, 2.0)
    (g,) = lucid.autograd.grad(y.sum(), x, create_graph=True)
    assert_close(g, 2 * np.exp(2 * xv))
    (h,) = lucid.autograd.grad(g.sum(), x)
    assert_close(h, 4 * np.exp(2 * xv))


def test_gradgradcheck_cube_and_exp():
    x = f64([0.4, -0.9, 1.3], requires_grad=True)
    assert lucid.autograd.gradcheck(Cube.apply, (x,))
    assert lucid.autograd.gradgradcheck(Cube.apply, (x,))
    assert lucid.autograd.gradgradcheck(lambda t: Exp.apply(t, 0.5), (x,))


def test_gradgradcheck_two_input_function():
    class Mul(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b * a

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return 2.0 * g * a * b, g * a * a

    a = f64([0.5, -1.5], requires_grad=True)
    b = f64([2.0, 0.7], requires_grad=True)
    assert lucid.autograd.gradcheck(Mul.apply, (a, b))
    assert lucid.autograd.gradgradcheck(Mul.apply, (a, b))


def test_gradgradcheck_detects_wrong_double_backward():
    class NotDifferentiableBackward(Function):
        # backward computes 3x^2 g with numpy: a constant for the graph, so the second
        # derivative seen by autograd is wrong (0 w.r.t. x)
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * lucid.from_numpy(3.0 * x.detach().numpy() ** 2)

    x = f64([0.4, -0.9], requires_grad=True)
    assert lucid.autograd.gradcheck(NotDifferentiableBackward.apply, (x,))
    assert lucid.autograd.gradgradcheck(NotDifferentiableBackward.apply, (x,),
                                        raise_exception=False) is False


class CubeOnce(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    @lucid.autograd.once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3.0 * x * x * g


def test_once_differentiable_first_derivative_correct():
    xv = np.array([0.5, -2.0])
    x = f64(xv, requires_grad=True)
    CubeOnce.apply(x).sum().backward()
    assert_close(x.grad, 3 * xv ** 2)


def test_once_differentiable_second_derivative_raises():
    xv = np.array([0.5, -2.0])
    x = f64(xv, requires_grad=True)
    y = CubeOnce.apply(x)
    (g,) = lucid.autograd.grad(y.sum(), x, create_graph=True)
    assert_close(g, 3 * xv ** 2)
    x.grad = f64([7.0, 8.0])
    with pytest.raises(RuntimeError) as info:
        g.sum().backward()
    msg = str(info.value)
    assert "once_differentiable" in msg or "CubeOnce" in msg, msg
    assert_close(x.grad, [7.0, 8.0], rtol=0, atol=0)


def test_once_differentiable_backward_runs_without_grad():
    seen = {}

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        @lucid.autograd.once_differentiable
        def backward(ctx, g):
            seen["enabled"] = lucid.is_grad_enabled()
            return 2.0 * g

    x = f64([1.0], requires_grad=True)
    y = Probe.apply(x)
    lucid.autograd.grad(y.sum(), x, create_graph=True)
    assert seen["enabled"] is False


# ---------------------------------------------------------------------------------------------
# 9. re-entrant backward (checkpointing)
# ---------------------------------------------------------------------------------------------

def _block(t):
    return (t.tanh() * t + t.sin()).exp() * 0.5


def _block_np(a):
    return np.exp(np.tanh(a) * a + np.sin(a)) * 0.5


class CheckpointGrad(Function):
    @staticmethod
    def forward(ctx, run, x):
        ctx.run = run
        ctx.save_for_backward(x)
        return run(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with lucid.enable_grad():
            xd = x.detach().requires_grad_()
            out = ctx.run(xd)
        assert out.grad_fn is not None
        (gx,) = lucid.autograd.grad(out, xd, g)
        return None, gx


class CheckpointBackward(Function):
    @staticmethod
    def forward(ctx, run, x):
        ctx.run = run
        ctx.save_for_backward(x)
        return run(x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with lucid.enable_grad():
            xd = x.detach().requires_grad_()
            out = ctx.run(xd)
        out.backward(g)
        return None, xd.grad


@pytest.mark.parametrize("F", [CheckpointGrad, CheckpointBackward], ids=["grad", "backward"])
def test_checkpoint_matches_plain(F, rng):
    xv = rng.standard_normal(5)
    x = f64(xv, requires_grad=True)
    out = F.apply(_block, x)
    assert out.grad_fn.name() == F.__name__ + "Backward"
    assert_close(out, _block_np(xv))
    out.sum().backward()

    x2 = f64(xv, requires_grad=True)
    _block(x2).sum().backward()
    assert_close(x.grad, x2.grad, rtol=1e-12, atol=1e-12)
    (num,) = numerical_vjp(_block_np, [xv], np.ones(5))
    assert_close(x.grad, num, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("F", [CheckpointGrad, CheckpointBackward], ids=["grad", "backward"])
def test_checkpoint_nested_in_larger_graph(F, rng):
    xv, wv, cv = rng.standard_normal(4), rng.standard_normal(4), rng.standard_normal(4)

    def ref(a, w):
        pre = a * w + 1.0
        z = _block_np(pre)
        return np.tanh(z * cv) + z

    x, w = f64(xv, requires_grad=True), f64(wv, requires_grad=True)
    pre = x * w + 1.0
    z = F.apply(_block, pre)
    loss = ((z * f64(cv)).tanh() + z).sum()
    loss.backward()

    nx, nw = numerical_vjp(ref, [xv, wv], np.ones(4))
    assert_close(x.grad, nx, rtol=1e-6, atol=1e-8)
    assert_close(w.grad, nw, rtol=1e-6, atol=1e-8)

    x2, w2 = f64(xv, requires_grad=True), f64(wv, requires_grad=True)
    z2 = _block(x2 * w2 + 1.0)
    ((z2 * f64(cv)).tanh() + z2).sum().backward()
    assert_close(x.grad, x2.grad, rtol=1e-12, atol=1e-12)
    assert_close(w.grad, w2.grad, rtol=1e-12, atol=1e-12)


def test_checkpoint_twice_in_a_chain():
    xv = np.array([0.1, -0.3, 0.25])
    x = f64(xv, requires_grad=True)
    y = CheckpointGrad.apply(_block, CheckpointBackward.apply(_block, x * 0.5))
    y.sum().backward()
    (num,) = numerical_vjp(lambda a: _block_np(_block_np(a * 0.5)), [xv], np.ones(3))
    assert_close(x.grad, num, rtol=1e-6, atol=1e-8)


def test_checkpoint_with_multiple_outputs_of_inner_graph():
    class CkptTwo(Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y.exp(), x.sin() + y

        @staticmethod
        def backward(ctx, ga, gb):
            x, y = ctx.saved_tensors
            with lucid.enable_grad():
                xd, yd = x.detach().requires_grad_(), y.detach().requires_grad_()
                a, b = xd * yd.exp(), xd.sin() + yd
            return lucid.autograd.grad((a, b), (xd, yd), (ga, gb))

    xv, yv = np.array([0.4, -1.2]), np.array([0.3, 0.1])
    x, y = f64(xv, requires_grad=True), f64(yv, requires_grad=True)
    a, b = CkptTwo.apply(x, y)
    (a * b).sum().backward()
    nx, ny = numerical_vjp(lambda p, q: (p * np.exp(q)) * (np.sin(p) + q), [xv, yv], np.ones(2))
    assert_close(x.grad, nx, rtol=1e-6, atol=1e-8)
    assert_close(y.grad, ny, rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------------------------
# 10. threads
# ---------------------------------------------------------------------------------------------

def _thread_graph(xv, wv):
    x, w = f64(xv, requires_grad=True), f64(wv, requires_grad=True)
    a, _, b = CountingSplitNoRecord.apply(x * w)
    s = Square.apply(a)
    e = Exp.apply(b, 0.5)
    c = CheckpointGrad.apply(_block, s * 0.1)
    loss = (c.sum() * e.sum()) + Cube.apply(w).sum()
    loss.backward()
    return to_numpy(x.grad), to_numpy(w.grad)


class CountingSplitNoRecord(Function):
    @staticmethod
    def forward(ctx, x):
        n = x.shape[0] // 2
        return x[:n] * 1.0, None, x[n:] * 1.0

    @staticmethod
    def backward(ctx, ga, gnone, gb):
        assert gnone is None
        return lucid.cat([ga, gb])


def test_independent_graphs_from_four_threads(rng):
    inputs = [(rng.standard_normal(6) * 0.5, rng.standard_normal(6) * 0.5) for _ in range(4)]
    reference = [_thread_graph(xv, wv) for xv, wv in inputs]

    # the reference itself is right (finite differences of the same computation in NumPy)
    def ref_np(xv, wv):
        p = xv * wv
        a, b = p[:3], p[3:]
        c = _block_np(a * a * 0.1)
        return c.sum() * np.exp(0.5 * b).sum() + (wv ** 3).sum()

    nx, nw = numerical_vjp(ref_np, list(inputs[0]), np.float64(1.0))
    assert_close(reference[0][0], nx, rtol=1e-6, atol=1e-8)
    assert_close(reference[0][1], nw, rtol=1e-6, atol=1e-8)

    iterations = 200
    barrier = threading.Barrier(4)
    errors = []
    mismatches = []

    def worker(k):
        try:
            barrier.wait()
            for _ in range(iterations):
                gx, gw = _thread_graph(*inputs[k])
                if not (np.array_equal(gx, reference[k][0]) and
                        np.array_equal(gw, reference[k][1])):
                    mismatches.append(k)
        except BaseException as e:       # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors
    assert not mismatches, f"threads gave different gradients: {sorted(set(mismatches))}"


# ---------------------------------------------------------------------------------------------
# 12. gradcheck on realistic custom ops
# ---------------------------------------------------------------------------------------------

class Softplus(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return (x.exp() + 1.0).log()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return x.sigmoid() * g


class Scale(Function):
    @staticmethod
    def forward(ctx, x, s):
        ctx.s = s
        return x * s

    @staticmethod
    def backward(ctx, g):
        return g * ctx.s, None


def test_softplus_values_and_gradcheck(rng):
    xv = rng.standard_normal((2, 3))
    x = f64(xv, requires_grad=True)
    y = Softplus.apply(x)
    assert_close(y, np.log1p(np.exp(xv)), rtol=1e-12)
    y.sum().backward()
    assert_close(x.grad, 1 / (1 + np.exp(-xv)), rtol=1e-12)
    assert lucid.autograd.gradcheck(Softplus.apply, (f64(xv, requires_grad=True),)) is True
    assert lucid.autograd.gradgradcheck(Softplus.apply, (f64(xv, requires_grad=True),)) is True


def test_split_gradcheck(rng):
    x = f64(rng.standard_normal(5), requires_grad=True)
    assert lucid.autograd.gradcheck(lambda t: Split.apply(t, 2), (x,)) is True


def test_scale_gradcheck(rng):
    x = f64(rng.standard_normal((3, 2)), requires_grad=True)
    assert lucid.autograd.gradcheck(lambda t: Scale.apply(t, -2.5), (x,)) is True
    assert lucid.autograd.gradcheck(Scale.apply, (x, 0.75)) is True


class WrongSquare(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3.0 * g * x          # wrong by a factor 1.5


def test_gradcheck_fails_on_wrong_backward():
    x = f64([0.5, 1.0, 2.0], requires_grad=True)
    with pytest.raises(lucid.autograd.GradcheckError) as info:
        lucid.autograd.gradcheck(WrongSquare.apply, (x,))
    msg = str(info.value)
    assert "input 0" in msg and "output 0" in msg, msg
    # the worst entry is d y[2] / d x[2]: analytic 6, numerical 4
    assert "6.0" in msg and ("4.0" in msg or "3.99999" in msg), msg
    assert x.grad is None


def test_gradcheck_returns_false_without_raising():
    x = f64([0.5, 1.0, 2.0], requires_grad=True)
    assert lucid.autograd.gradcheck(WrongSquare.apply, (x,), raise_exception=False) is False


def test_gradcheck_names_the_wrong_input_and_output():
    class HalfWrong(Function):
        # outputs (a + b, a * b); the gradient of b through the second output is wrong
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a + b, a * b

        @staticmethod
        def backward(ctx, g0, g1):
            a, b = ctx.saved_tensors
            return g0 + g1 * b, g0 + g1 * a * 2.0

    a = f64([0.5, 1.5], requires_grad=True)
    b = f64([2.0, -1.0], requires_grad=True)
    with pytest.raises(lucid.autograd.GradcheckError) as info:
        lucid.autograd.gradcheck(HalfWrong.apply, (a, b))
    msg = str(info.value)
    assert "output 1" in msg and "input 1" in msg, msg
    assert lucid.autograd.gradcheck(HalfWrong.apply, (a, b), raise_exception=False) is False


@pytest.mark.parametrize("returned", [None, 1.5, (), (None, 2)])
def test_gradcheck_fn_without_tensor_output_raises(returned):
    x = lucid.ones(2, dtype=lucid.float64, requires_grad=True)
    with pytest.raises(ValueError, match="no tensor"):
        gradcheck(lambda t: returned, (x,))


def test_gc_collected_cycle_through_ctx_is_clean():
    import sys

    class KeepsOutput(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2.0
            ctx.out = y                     # a user-made cycle: ctx -> y -> node -> ctx
            return y

        @staticmethod
        def backward(ctx, g):
            return 2.0 * g

    caught = []
    previous = sys.unraisablehook
    sys.unraisablehook = lambda u: caught.append(u.exc_value)
    try:
        x = f64([1.0, 2.0], requires_grad=True)
        for _ in range(3):
            y = KeepsOutput.apply(x)
            y_ref = weakref.ref(y)
            del y
            gc.collect()
            assert y_ref() is None          # the cycle is collectable
    finally:
        sys.unraisablehook = previous
    assert caught == [], f"errors while freeing the graph: {caught!r}"


# ------------------------------------------------------------------------------------------------
# 13. mark_dirty
# ------------------------------------------------------------------------------------------------

class ScaleInPlace(lucid.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        x.mul_(k)
        ctx.mark_dirty(x)
        ctx.k = k
        return x

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None


def test_mark_dirty_returns_the_input_with_new_history():
    a = f64([1.0, 2.0], requires_grad=True)
    b = a * 1.0
    version = b._version
    c = ScaleInPlace.apply(b, 3.0)
    assert c is b
    assert b._version > version
    assert b.grad_fn.name() == "ScaleInPlaceBackward"
    (c * c).sum().backward()
    assert_close(a.grad, 2 * 9.0 * np.array([1.0, 2.0]))


def test_mark_dirty_refuses_a_leaf_requiring_grad():
    a = f64([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        ScaleInPlace.apply(a, 3.0)


def test_mark_dirty_without_grad_just_writes():
    a = f64([1.0, 2.0])
    out = ScaleInPlace.apply(a, 2.0)
    assert out is a and a.grad_fn is None
    assert_close(a, [2.0, 4.0])


def test_mark_dirty_stale_views_and_no_cycle(gc_off):
    a = f64([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 1.0
    view = b[0:2]
    c = ScaleInPlace.apply(b, 2.0)
    with pytest.raises(RuntimeError, match="view"):
        view * 1.0
    node = weakref.ref(c.grad_fn)
    del b, c, view                        # the stale view holds its base, nothing more
    assert node() is None


def test_mark_dirty_must_return_the_tensor():
    class Forgets(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1.0)
            ctx.mark_dirty(x)
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return g * 2.0

    with pytest.raises(RuntimeError, match="did not return it"):
        Forgets.apply(f64([1.0]) * 1.0)


def test_mark_dirty_of_a_tensor_that_is_not_an_input_warns_like_pytorch():
    class DirtiesAnOther(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            other = x * 1.0                   # not an input of the Function
            ctx.mark_dirty(other)
            return other

        @staticmethod
        def backward(ctx, g):
            return g

    a = f64([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match=r"Function DirtiesAnOther: ctx\.mark_dirty\(\) received "
                                         r"a tensor that was not an input"):
        out = DirtiesAnOther.apply(a)
    out.sum().backward()                      # still a working call, as in PyTorch
    assert_close(a.grad, [1.0, 1.0])
    assert_close(a, [1.0, 2.0], rtol=0, atol=0)


# ------------------------------------------------------------------------------------------------
# 14. setup_context style
# ------------------------------------------------------------------------------------------------

class Scaled(lucid.autograd.Function):
    @staticmethod
    def forward(x, k):
        return x * k, (x * 0).sum()

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, k = inputs
        ctx.k = k
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        ctx.mark_non_differentiable(output[1])
        ctx.set_materialize_grads(True)

    @staticmethod
    def backward(ctx, g, g_unused):
        (x,) = ctx.saved_tensors
        assert ctx.needs_input_grad == (True, False)
        return g * ctx.k + x * 0.0, None

    @staticmethod
    def jvp(ctx, tx, tk):
        return tx * ctx.k, None


def test_setup_context_style_has_every_ctx_feature():
    x = f64([1.0, 2.0], requires_grad=True)
    y, z = Scaled.apply(x, 3.0)
    assert z.grad_fn is None and y.grad_fn.name() == "ScaledBackward"
    y.sum().backward()
    assert_close(x.grad, [3.0, 3.0])
    assert lucid.autograd.gradcheck(lambda t: Scaled.apply(t, 3.0)[0], (f64([0.5, 1.5], True),),
                                    check_forward_ad=True)


def test_classic_and_setup_context_styles_agree():
    class Classic(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    x1, x2 = f64([1.0, -1.0], True), f64([1.0, -1.0], True)
    Classic.apply(x1, 2.5).sum().backward()
    Scaled.apply(x2, 2.5)[0].sum().backward()
    assert_close(x1.grad, x2.grad.numpy())
