"""What Function.apply caches per class (its FunctionInfo, the compiled apply, the last
(shape, dtype) entries) never leaks from one call, class or shape into another."""
import inspect

import numpy as np
import pytest

import lucid
from lucid.autograd import Function
from support.checks import assert_close, f64


class Scale(Function):
    """f(x) = 3x; backward checks nothing itself (the node checks shapes and dtypes)."""

    @staticmethod
    def forward(ctx, x):
        return x * 3.0

    @staticmethod
    def backward(ctx, g):
        return g * 3.0


class ScaleTwice(Scale):
    """A subclass with its own forward: its apply must run this one, not Scale's."""

    @staticmethod
    def forward(ctx, x):
        return x * 6.0

    @staticmethod
    def backward(ctx, g):
        return g * 6.0


class ScaleViaSuper(Scale):
    """Defines apply itself and reaches the compiled one through super()."""

    @staticmethod
    def forward(ctx, x):
        return x * 5.0

    @staticmethod
    def backward(ctx, g):
        return g * 5.0

    @classmethod
    def apply(cls, x):
        return super().apply(x) + 1.0


def grad_of(fn, x):
    fn(x).sum().backward()
    return x.grad.numpy()


def test_each_subclass_applies_its_own_forward_and_backward():
    x = f64([1.0, 2.0], requires_grad=True)
    assert_close(ScaleTwice.apply(x).detach().numpy(), [6.0, 12.0])
    assert_close(Scale.apply(x).detach().numpy(), [3.0, 6.0])
    assert_close(grad_of(ScaleTwice.apply, x), [6.0, 6.0])
    assert ScaleTwice.apply(x).grad_fn.name() == "ScaleTwiceBackward"


def test_super_apply_in_an_overriding_subclass_runs_the_subclass_forward():
    x = f64([1.0, 2.0], requires_grad=True)
    y = ScaleViaSuper.apply(x)
    assert_close(y.detach().numpy(), [6.0, 11.0])
    y.sum().backward()
    assert_close(x.grad.numpy(), [5.0, 5.0])


def test_apply_reads_like_the_bound_classmethod_it_replaces():
    assert Scale.apply.__self__ is Scale
    assert Scale.apply.__name__ == "apply"
    assert Scale.apply.__qualname__ == "Scale.apply"
    assert Scale.apply is Scale.apply                      # made once per class
    assert str(inspect.signature(Scale.apply)) == "(*args)"
    assert "forward" in Scale.apply.__doc__
    assert ScaleTwice.apply is not Scale.apply


def test_base_function_apply_still_refuses():
    with pytest.raises(NotImplementedError):
        Function.apply(f64([1.0], requires_grad=True))


@pytest.mark.parametrize("shapes", [[(3,), (2, 2), (3,)], [(4,), (4, 1), (1, 4)]])
def test_shape_checks_follow_each_call_not_the_last_one(shapes):
    """A backward returning the previous call's shape is refused, though that entry is cached."""
    class Stale(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return lucid.tensor(np.ones(Stale.wrong_shape))

    previous = None
    for shape in shapes:
        x = f64(np.arange(np.prod(shape), dtype=float).reshape(shape), requires_grad=True)
        y = Stale.apply(x)
        if previous is not None and previous != shape:
            Stale.wrong_shape = previous
            with pytest.raises(RuntimeError, match="shape"):
                y.sum().backward()
            assert x.grad is None                          # nothing was accumulated
        Stale.wrong_shape = shape
        Stale.apply(x).sum().backward()
        assert x.grad.shape == shape
        previous = shape


def test_dtype_of_each_call_decides_the_gradient_cast():
    """float32 then float64 inputs of the same shape: each gradient has its own input's dtype."""
    class Twice(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return lucid.tensor(np.full(g.shape, 2.0, dtype=np.float64))

    for dtype in (np.float32, np.float64, np.float32):
        x = lucid.tensor(np.ones(3, dtype=dtype), requires_grad=True)
        Twice.apply(x).sum().backward()
        assert x.grad.numpy().dtype == dtype


def test_zeros_for_an_unused_output_have_that_call_s_shape():
    class Split(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0, x.sum()

        @staticmethod
        def backward(ctx, g_first, g_sum):
            assert g_sum.shape == ()                          # materialized zeros, 0-d
            return g_first + g_sum

    for shape in [(3,), (2, 2)]:
        x = f64(np.ones(shape), requires_grad=True)
        first, _ = Split.apply(x)
        first.sum().backward()
        assert_close(x.grad.numpy(), np.ones(shape))


def test_one_saved_tensor_and_several_come_back_alike():
    class Saves(Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x)
            ctx.several = Saves.several
            if ctx.several:
                ctx.save_for_backward(x, None, y)
            return x * y

        @staticmethod
        def backward(ctx, g):
            saved = ctx.saved_tensors
            if ctx.several:
                assert len(saved) == 3 and saved[1] is None
                x, _, y = saved
            else:
                assert len(saved) == 1
                (x,), y = saved, None
            return (g * 2.0 if y is None else g * y), (None if y is None else g * x)

    for several in (False, True):
        Saves.several = several
        x, y = f64([1.0, 2.0], requires_grad=True), f64([3.0, 4.0], requires_grad=True)
        Saves.apply(x, y).sum().backward()
        assert_close(x.grad.numpy(), [3.0, 4.0] if several else [2.0, 2.0])
        if several:
            assert_close(y.grad.numpy(), [1.0, 2.0])


def test_function_info_refuses_a_node_class_that_is_not_a_python_backward_node():
    from lucid import _core
    info_before = Scale._lucid_info
    for bad in (object, _core.Node, 3):
        with pytest.raises(TypeError, match="PythonBackwardNode"):
            _core.FunctionInfo(Scale, bad, Scale.forward, Scale.backward)
    assert Scale._lucid_info is info_before                 # nothing was replaced
    x = f64([1.0], requires_grad=True)
    assert_close(grad_of(Scale.apply, x), [3.0])


# -- methods attached to a Function class after its definition ---------------------------------
# The cache is per class, but what apply uses follows the class: forward, backward, vjp, jvp and
# setup_context assigned (or deleted) later are seen by the next call, as in PyTorch (a node
# made before keeps the backward of its call).

import lucid.autograd.forward_ad as fwAD                     # noqa: E402
from lucid.autograd import gradcheck                         # noqa: E402

DTYPES = [lucid.float32, lucid.float64]


def make_doubler():
    """A fresh Function class f(x) = 2x with a backward and no jvp."""
    class Doubler(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return g * 2.0
    return Doubler


def tangent_through(fn, x, t):
    with fwAD.dual_level():
        return fwAD.unpack_dual(fn(fwAD.make_dual(x, t))).tangent


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("called_before", [False, True])
def test_a_jvp_attached_later_is_used(dtype, called_before):
    Doubler = make_doubler()
    x = lucid.tensor([1.0, -2.0, 0.5], dtype=dtype)
    if called_before:                                       # the class's info is in use
        Doubler.apply(x)
        with pytest.raises(RuntimeError, match="does not implement jvp"):
            tangent_through(Doubler.apply, x, lucid.ones(3, dtype=dtype))
    apply_before, node_before = Doubler.apply, Doubler._lucid_info.node_cls
    Doubler.jvp = staticmethod(lambda ctx, t: t * 2.0)
    t = tangent_through(Doubler.apply, x, lucid.tensor([1.0, 2.0, 3.0], dtype=dtype))
    assert t.dtype == dtype
    assert_close(t, [2.0, 4.0, 6.0])
    assert Doubler._lucid_info.node_cls is node_before      # the same node class throughout
    assert Doubler.apply is not apply_before and Doubler.apply is Doubler.apply
    x64 = lucid.tensor([1.0, -2.0], dtype=lucid.float64, requires_grad=True)
    assert gradcheck(Doubler.apply, [x64], check_forward_ad=True)
    assert type(Doubler.apply(x64).grad_fn) is node_before


def test_a_deleted_jvp_is_gone():
    Doubler = make_doubler()
    Doubler.jvp = lambda ctx, t: t * 2.0                    # a plain function works too
    x = lucid.ones(2)
    assert_close(tangent_through(Doubler.apply, x, lucid.ones(2)), [2.0, 2.0])
    del Doubler.jvp
    with pytest.raises(RuntimeError, match="does not implement jvp"):
        tangent_through(Doubler.apply, x, lucid.ones(2))


def test_a_backward_replaced_later_is_used_by_new_calls():
    Doubler = make_doubler()
    x = f64([1.0, 2.0], requires_grad=True)
    old = Doubler.apply(x)
    Doubler.backward = staticmethod(lambda ctx, g: g * 5.0)
    Doubler.apply(x).sum().backward()
    assert_close(x.grad, [5.0, 5.0])
    x.grad = None
    old.sum().backward()                                    # made before: the backward of its call
    assert_close(x.grad, [2.0, 2.0])


def test_a_forward_and_setup_context_attached_later_are_used():
    class Late(Function):
        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * ctx.k * 2.0 * x, None

    x = f64([1.0, 3.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="forward"):
        Late.apply(x, 1.5)
    Late.forward = staticmethod(lambda x, k: x * x * k)     # forward(*args): needs setup_context

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.k = inputs[1]
    Late.setup_context = staticmethod(setup_context)
    y = Late.apply(x, 1.5)
    assert_close(y, [1.5, 13.5])
    y.sum().backward()
    assert_close(x.grad, [3.0, 9.0])


def test_a_method_attached_to_a_parent_reaches_subclasses_that_inherit_it():
    Doubler = make_doubler()

    class Child(Doubler):
        pass

    class OwnJvp(Doubler):
        @staticmethod
        def jvp(ctx, t):
            return t * 20.0

    Doubler.jvp = staticmethod(lambda ctx, t: t * 2.0)
    x = lucid.ones(2)
    assert_close(tangent_through(Child.apply, x, lucid.ones(2)), [2.0, 2.0])
    assert_close(tangent_through(OwnJvp.apply, x, lucid.ones(2)), [20.0, 20.0])
    assert Child.apply(f64([1.0], requires_grad=True)).grad_fn.name() == "ChildBackward"


def test_other_class_attributes_leave_the_cache_alone():
    Doubler = make_doubler()
    apply_before, info_before = Doubler.apply, Doubler._lucid_info
    Doubler.scale = 3.0
    Doubler.helper = staticmethod(lambda: None)
    assert Doubler.apply is apply_before and Doubler._lucid_info is info_before


def test_vjp_stands_for_backward_and_both_are_refused():
    class ByVjp(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3.0

        @staticmethod
        def vjp(ctx, g):
            return g * 3.0

    x = f64([1.0, 2.0], requires_grad=True)
    assert_close(grad_of(ByVjp.apply, x), [3.0, 3.0])
    assert gradcheck(ByVjp.apply, [f64([0.5], requires_grad=True)])
    Doubler = make_doubler()
    Doubler.vjp = staticmethod(lambda ctx, g: g * 7.0)       # now it has both
    y = Doubler.apply(f64([1.0], requires_grad=True))
    with pytest.raises(RuntimeError, match="Implementing both 'backward' and 'vjp'") as info:
        y.sum().backward()
    assert "Doubler" in str(info.value)
    del Doubler.vjp
    x = f64([1.0], requires_grad=True)
    assert_close(grad_of(Doubler.apply, x), [2.0])
