"""PyTorch parity of autograd semantics and names (issue 27, API.md section 13): each test is the
behaviour PyTorch 2.13 shows for the same snippet."""
import json
import warnings

import numpy as np
import pytest

import lucid
from lucid.autograd import Function
from lucid.autograd import forward_ad as fwd
from lucid.autograd import graph


def leaf(*values):
    return lucid.tensor(np.array(values if len(values) != 1 else values[0], dtype=np.float64),
                        requires_grad=True)


# -- 1. atan2 at the origin ----------------------------------------------------------------------

def test_atan2_gradient_at_origin_is_zero_and_elsewhere_unchanged():
    y, x = leaf(0.0, 1.0, 0.0), leaf(0.0, 2.0, -3.0)
    lucid.atan2(y, x).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, 2.0 / 5.0, -1.0 / 3.0])
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, -1.0 / 5.0, 0.0])


def test_atan2_second_derivative_at_origin_has_no_nan():
    y, x = leaf(0.0), leaf(0.0)
    gy, gx = lucid.autograd.grad(lucid.atan2(y, x), (y, x), create_graph=True)
    for g in (gy, gx):
        second = lucid.autograd.grad(g, (y, x), allow_unused=True, materialize_grads=True)
        assert not any(np.isnan(s.numpy()).any() for s in second)


# -- 2. inference_mode(False) --------------------------------------------------------------------

def test_inference_mode_false_turns_inference_off_and_grad_on():
    with lucid.inference_mode():
        with lucid.inference_mode(False):
            assert not lucid.is_inference_mode_enabled()
            assert lucid.is_grad_enabled()
            x = lucid.ones(2, requires_grad=True)
            assert (x * 2).requires_grad and not x.is_inference()
        assert lucid.is_inference_mode_enabled() and not lucid.is_grad_enabled()
    with lucid.no_grad():
        with lucid.inference_mode(False):
            assert lucid.is_grad_enabled()
        assert not lucid.is_grad_enabled()


# -- 3. grad-mode decorators on generators -------------------------------------------------------

@pytest.mark.parametrize("make, inside", [
    (lambda: lucid.no_grad(), False), (lambda: lucid.enable_grad(), True),
    (lambda: lucid.set_grad_enabled(False), False), (lambda: lucid.inference_mode(), False)])
def test_decorated_generator_runs_every_resumption_under_the_mode(make, inside):
    seen = []

    @make()
    def gen():
        seen.append(lucid.is_grad_enabled())
        got = yield 1
        seen.append((got, lucid.is_grad_enabled()))
        try:
            yield 2
        except KeyError:
            seen.append(("thrown", lucid.is_grad_enabled()))
            yield 3
        return 4

    outer = not inside
    with lucid.set_grad_enabled(outer):
        it = gen()
        assert next(it) == 1 and lucid.is_grad_enabled() is outer
        assert it.send("s") == 2 and lucid.is_grad_enabled() is outer
        assert it.throw(KeyError("k")) == 3 and lucid.is_grad_enabled() is outer
        with pytest.raises(StopIteration) as stop:
            next(it)
        assert stop.value.value == 4 and lucid.is_grad_enabled() is outer
    assert seen == [inside, ("s", inside), ("thrown", inside)]


def test_decorated_generator_close_runs_finally_under_the_mode():
    seen = []

    @lucid.no_grad()
    def gen():
        try:
            yield 1
        finally:
            seen.append(lucid.is_grad_enabled())

    it = gen()
    next(it)
    it.close()
    assert seen == [False] and lucid.is_grad_enabled()


# -- 4. backward(inputs=) runs no hook of a tensor that is not an input --------------------------

def test_backward_inputs_runs_no_hook_of_other_tensors():
    a, b = leaf(1.0), leaf(2.0)
    ran = []
    a.register_hook(lambda g: ran.append("a"))
    b.register_hook(lambda g: ran.append("b"))
    (a * b).backward(inputs=[b])
    assert ran == ["b"] and a.grad is None and b.grad.item() == 1.0


# -- 5. anomaly mode's NaN check -----------------------------------------------------------------

def nan_backward():
    x = leaf(-1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        x.sqrt().backward()
    return x


def test_detect_anomaly_check_nan_false_does_not_raise():
    with lucid.autograd.detect_anomaly(check_nan=False):
        assert lucid.autograd.is_anomaly_enabled()
        assert not lucid.autograd.is_anomaly_check_nan_enabled()
        x = nan_backward()
    assert np.isnan(x.grad.item())
    assert not lucid.autograd.is_anomaly_enabled()
    assert lucid.autograd.is_anomaly_check_nan_enabled()


def test_detect_anomaly_nan_message_holds_pytorchs_phrase():
    with lucid.autograd.detect_anomaly():
        with pytest.raises(RuntimeError, match="returned nan values in its 0th output"):
            nan_backward()


def test_set_detect_anomaly_sets_at_once_and_restores_on_exit():
    setter = lucid.autograd.set_detect_anomaly(True, check_nan=False)
    try:
        assert lucid.autograd.is_anomaly_enabled()
        assert not lucid.autograd.is_anomaly_check_nan_enabled()
        nan_backward()
    finally:
        with setter:
            pass
    assert not lucid.autograd.is_anomaly_enabled()
    assert lucid.autograd.is_anomaly_check_nan_enabled()
    with pytest.raises(TypeError, match="bool"):
        lucid.autograd.set_detect_anomaly("yes")
    assert not lucid.autograd.is_anomaly_enabled()


# -- 6. materialized zeros can be differentiated again -------------------------------------------

def test_materialized_zeros_are_differentiable_under_create_graph():
    x, a = leaf(2.0), leaf(3.0)
    g, = lucid.autograd.grad(x * a, x, create_graph=True)
    gg, = lucid.autograd.grad(g, x, create_graph=True, materialize_grads=True)
    assert gg.item() == 0.0 and gg.requires_grad
    ggg, = lucid.autograd.grad(gg, x, materialize_grads=True)
    assert ggg.item() == 0.0 and not ggg.requires_grad
    plain, = lucid.autograd.grad(x * a, leaf(1.0), materialize_grads=True)
    assert plain.item() == 0.0 and not plain.requires_grad


# -- 7. setup_context sees forward's default arguments -------------------------------------------

def test_setup_context_sees_forward_defaults():
    seen = []

    class Scale(Function):
        @staticmethod
        def forward(x, k=3.0):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            seen.append(inputs[1:])
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    x = leaf(1.0)
    Scale.apply(x).backward()
    Scale.apply(x, 5.0).backward()
    Scale.apply(x, k=2.0).backward()
    assert seen == [(3.0,), (5.0,), (2.0,)] and x.grad.item() == 10.0


# -- 8. del x.grad -------------------------------------------------------------------------------

def test_del_grad_clears_it():
    x = leaf(1.0)
    (x * 2).backward()
    del x.grad
    assert x.grad is None
    (x * 3).backward()
    assert x.grad.item() == 3.0


# -- 9. Function.jvp gets zeros for tensor inputs without a tangent ------------------------------

def test_function_jvp_gets_zeros_for_inputs_without_tangent():
    seen = []

    class Mul(Function):
        @staticmethod
        def forward(ctx, x, y, k):
            ctx.save_for_forward(x, y)
            return x * y * k

        @staticmethod
        def jvp(ctx, tx, ty, tk):
            seen.append((ty, tk))
            x, y = ctx.saved_tensors
            return (tx * y + x * ty) * 2.0

    with fwd.dual_level():
        x = fwd.make_dual(lucid.tensor([1.0, 2.0]), lucid.tensor([1.0, 1.0]))
        out = Mul.apply(x, lucid.tensor([3.0, 4.0]), 2.0)
        tangent = fwd.unpack_dual(out).tangent
    ty, tk = seen[0]
    assert tk is None and ty.shape == (2,) and ty.dtype == lucid.float32
    np.testing.assert_array_equal(ty.numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(tangent.numpy(), [6.0, 8.0])


# -- 10. a pack hook that changes its argument in place raises -----------------------------------

def test_pack_hook_modifying_its_input_raises_and_leaves_values():
    x = leaf(1.0, 2.0)

    def pack(t):
        t.mul_(2)
        return t

    with graph.saved_tensors_hooks(pack, lambda t: t):
        with pytest.raises(RuntimeError, match="pack hook is modifying its input in place"):
            x.exp()
    with graph.saved_tensors_hooks(lambda t: t * 2, lambda t: t / 2):   # not in place: fine
        y = x.exp()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]))


# -- 11. a Function returning one tensor twice gives one object ----------------------------------

def test_function_returning_a_tensor_twice_gives_the_same_object():
    grads = []

    class Twice(Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            return y, y

        @staticmethod
        def backward(ctx, ga, gb):
            grads.append((ga.item(), gb.item()))
            return 2 * (ga + gb)

    x = leaf(1.0)
    a, b = Twice.apply(x)
    assert a is b and a.grad_fn is not None and a.output_nr == 1
    (a * 3).backward()
    assert grads == [(0.0, 3.0)] and x.grad.item() == 6.0


# -- 12. error messages hold PyTorch's key phrases -----------------------------------------------

def test_second_backward_message_has_pytorchs_phrases():
    x = leaf(1.0)
    y = x.exp()
    y.backward()
    with pytest.raises(RuntimeError) as info:
        y.backward()
    assert "Trying to backward through the graph a second time" in str(info.value)
    assert "Specify retain_graph=True" in str(info.value)


def test_function_saved_tensors_freed_message_has_pytorchs_phrases():
    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y

    y = Exp.apply(leaf(1.0))
    y.backward()
    with pytest.raises(RuntimeError) as info:
        y.grad_fn.ctx.saved_tensors
    assert "Trying to backward through the graph a second time" in str(info.value)
    assert "Specify retain_graph=True" in str(info.value)


def test_inplace_and_no_grad_messages_have_pytorchs_phrases():
    x = leaf(1.0)
    h = x * 1
    y = h.exp()
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        lucid.tensor(1.0).backward()


# -- names ---------------------------------------------------------------------------------------

def test_variable_is_a_deprecated_constructor_and_matches_every_tensor():
    from lucid.autograd import Variable
    t = lucid.tensor([1.0, 2.0])
    v = Variable(t, requires_grad=True)
    assert v is not t and v.requires_grad and not t.requires_grad
    assert v.data_ptr() == t.data_ptr()
    w = Variable(t)
    assert not w.requires_grad and w.data_ptr() == t.data_ptr()
    assert isinstance(t, Variable) and isinstance(v * 2, Variable)
    assert not isinstance(np.ones(2), Variable) and issubclass(lucid.Tensor, Variable)
    assert Variable().shape == (0,)
    with pytest.raises(TypeError, match="Variable data has to be a tensor"):
        Variable([1.0, 2.0])


def test_is_inference_and_is_inference_mode_enabled():
    assert not lucid.is_inference_mode_enabled()
    with lucid.inference_mode():
        assert lucid.is_inference_mode_enabled()
        x = lucid.ones(2)
    assert x.is_inference() and not lucid.ones(2).is_inference()


def test_post_accumulate_grad_hook_sees_the_accumulated_grad():
    x = leaf(1.0, 2.0)
    seen = []
    handle = x.register_post_accumulate_grad_hook(lambda t: seen.append((t is x, t.grad.numpy().copy())))
    (x * 3).sum().backward()
    (x * 2).sum().backward()
    assert [s for s, _ in seen] == [True, True]
    np.testing.assert_array_equal(seen[1][1], [5.0, 5.0])
    handle.remove()
    (x * 2).sum().backward()
    assert len(seen) == 2


def test_post_accumulate_grad_hook_refuses_non_leaves():
    x = leaf(1.0)
    with pytest.raises(RuntimeError, match="leaf"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="requires_grad"):
        lucid.tensor(1.0).register_post_accumulate_grad_hook(lambda t: None)


def test_increment_version_bumps_the_version_counter():
    x = lucid.tensor([1.0])
    before = x._version
    graph.increment_version(x)
    assert x._version == before + 1
    a = leaf(1.0)
    h = a * 1
    y = h.exp()
    graph.increment_version(y)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_gradient_edge_names_the_node_and_slot():
    x = leaf(1.0)
    y = x * 2
    edge = graph.get_gradient_edge(y)
    assert isinstance(edge, graph.GradientEdge)
    assert edge.node is y.grad_fn and edge.output_nr == 0
    leaf_edge = graph.get_gradient_edge(x)
    assert isinstance(leaf_edge.node, lucid.autograd.graph.Node) and leaf_edge.output_nr == 0
    with pytest.raises(RuntimeError, match="does not require grad"):
        graph.get_gradient_edge(lucid.tensor(1.0))


def test_record_function_is_a_range_in_profile_table_and_trace(tmp_path):
    from lucid.autograd.profiler import record_function
    x = leaf(1.0, 2.0)
    with lucid.autograd.profile() as prof:
        with record_function("my_step"):
            (x.exp() * 2).sum().backward()
    ranges = [e for e in prof.events if e.kind == "range"]
    assert [e.name for e in ranges] == ["my_step"] and ranges[0].duration_ns > 0
    assert "my_step" in prof.table()
    path = prof.export_chrome_trace(tmp_path / "trace.json")
    names = [e["name"] for e in json.load(open(path))["traceEvents"]]
    assert "my_step" in names and "ExpBackward" in names
    with record_function("outside"):          # no profile open: nothing recorded, no error
        pass


def test_nodes_expose_saved_values_under_pytorchs_names():
    x, y = leaf(1.0, 2.0), leaf(3.0, 4.0)
    m = x * y
    assert m.grad_fn._saved_self.detach().numpy().tolist() == [1.0, 2.0]
    assert m.grad_fn._saved_other.detach().numpy().tolist() == [3.0, 4.0]
    assert m.grad_fn._raw_saved_self is not None
    e = x.exp()
    np.testing.assert_allclose(e.grad_fn._saved_result.detach().numpy(), np.exp([1.0, 2.0]))
    assert x.log().grad_fn._saved_self.detach().numpy().tolist() == [1.0, 2.0]
    with pytest.raises(AttributeError):
        e.grad_fn._saved_self
    with pytest.raises(AttributeError):
        e.grad_fn.no_such_attribute
    s = m.sum()
    e.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        e.grad_fn._saved_result
    assert s.grad_fn is not None
