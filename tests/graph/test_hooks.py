"""Hooks: tensor hooks (tensor.register_hook) and node hooks (node.register_prehook,
node.register_hook, node.metadata), and the order they run in (Note [Hook order])."""
import numpy as np
import pytest

import lucid
from support.checks import assert_close, f64, to_numpy


# ---------------------------------------------------------------------------------------------
# tensor hooks
# ---------------------------------------------------------------------------------------------

def test_leaf_hook_replaces_gradient_before_accumulation():
    x = f64([1.0, 2.0], requires_grad=True)
    seen = []

    def hook(g):
        seen.append(to_numpy(g))
        return g * 2.0

    x.register_hook(hook)
    (x * 3.0).sum().backward()
    assert len(seen) == 1
    assert_close(seen[0], [3.0, 3.0])
    assert_close(x.grad, [6.0, 6.0])


def test_leaf_hook_runs_once_on_summed_gradient():
    x = f64([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(to_numpy(g)))
    (x * 2.0 + x * 5.0).sum().backward()
    assert len(seen) == 1
    assert_close(seen[0], [7.0, 7.0])
    assert_close(x.grad, [7.0, 7.0])


def test_hook_returning_none_keeps_gradient():
    x = f64([1.0, 2.0], requires_grad=True)
    calls = []
    x.register_hook(lambda g: calls.append(1))
    (x * 4.0).sum().backward()
    assert calls == [1]
    assert_close(x.grad, [4.0, 4.0])


def test_hook_remove():
    x = f64([1.0, 2.0], requires_grad=True)
    calls = []

    def hook(g):
        calls.append(1)
        return g * 10.0

    handle = x.register_hook(hook)
    handle.remove()
    (x * 4.0).sum().backward()
    assert calls == []
    assert_close(x.grad, [4.0, 4.0])


def test_non_leaf_hook_replaces_gradient_flowing_on():
    x = f64([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    seen = []

    def hook(g):
        seen.append(to_numpy(g))
        return g * 10.0

    y.register_hook(hook)
    (y * y).sum().backward()
    assert len(seen) == 1
    assert_close(seen[0], [6.0, 12.0])
    assert_close(x.grad, [180.0, 360.0])
    with pytest.warns(UserWarning, match="not a leaf"):
        assert y.grad is None


def test_non_leaf_hook_remove_and_none():
    x = f64([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    h = y.register_hook(lambda g: g * 0.0)
    calls = []
    y.register_hook(lambda g: calls.append(1))
    h.remove()
    y.sum().backward()
    assert calls == [1]
    assert_close(x.grad, [3.0, 3.0])


def test_hooks_chain_in_registration_order():
    x = f64([1.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: g * 2.0)
    x.register_hook(lambda g: seen.append(to_numpy(g)))
    x.register_hook(lambda g: g + 1.0)
    (x * 5.0).sum().backward()
    assert_close(seen[0], [10.0])
    assert_close(x.grad, [11.0])


@pytest.mark.parametrize("bad_dtype", [lucid.int64, lucid.int32, lucid.bool])
@pytest.mark.parametrize("on_leaf", [True, False])
def test_hook_returning_int_or_bool_raises_naming_it(bad_dtype, on_leaf):
    x = lucid.ones(3, requires_grad=True)
    target = x if on_leaf else x * 2

    def to_ints(g):
        return lucid.ones(3, dtype=bad_dtype)

    target.register_hook(to_ints)
    with pytest.raises(RuntimeError, match="to_ints") as info:
        (target * 3).sum().backward()
    assert "floating-point" in str(info.value)
    assert x.grad is None


# ---------------------------------------------------------------------------------------------
# node hooks
# ---------------------------------------------------------------------------------------------


def _logged_function(log):
    """A Function whose backward logs 'apply' (and the gradient it got): apply is observable."""

    class Logged(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            ctx.scale = scale
            return x * scale

        @staticmethod
        def backward(ctx, g):
            log.append(("apply", g.numpy().tolist()))
            return g * ctx.scale, None

    return Logged


def test_order_tensor_hooks_retain_grad_prehooks_apply_posthooks():
    """Note [Hook order]: for a node: hooks of the tensor it made, retain_grad, node pre-hooks
    (in registration order), apply, node hooks; the leaf's own hooks, then its
    AccumulateGrad's pre-hooks."""
    log = []
    F = _logged_function(log)
    x = lucid.tensor([1.0, 2.0], dtype=lucid.float64, requires_grad=True)
    y = F.apply(x, 3.0)
    node = y.grad_fn
    y.retain_grad()
    y.register_hook(lambda g: log.append(("tensor hook", y.grad)) or g * 2)
    node.register_prehook(lambda go: log.append(("pre 1", go[0].numpy().tolist(),
                                                y.grad.numpy().tolist())))
    node.register_prehook(lambda go: log.append(("pre 2",)))
    node.register_hook(lambda gi, go: log.append(("post 1", len(gi), len(go))))
    node.register_hook(lambda gi, go: log.append(("post 2",)))
    acc = node.next_functions[0][0]
    x.register_hook(lambda g: log.append(("leaf hook",)))
    acc.register_prehook(lambda go: log.append(("acc pre", go[0].numpy().tolist())))
    y.sum().backward()
    assert log == [
        ("tensor hook", None),
        ("pre 1", [2.0, 2.0], [2.0, 2.0]),
        ("pre 2",),
        ("apply", [2.0, 2.0]),
        ("post 1", 2, 1),
        ("post 2",),
        ("leaf hook",),
        ("acc pre", [6.0, 6.0]),
    ]
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 6.0])


def test_hook_arguments_for_several_inputs_and_outputs():
    """A node hook gets (grad_inputs, grad_outputs): one gradient per forward input (None for
    an input without one) and one per output; a pre-hook gets grad_outputs."""
    seen = {}

    class Split(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, a, k, b):
            return a * k, a + b

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2, None, g2

    a = lucid.tensor([1.0, 2.0], requires_grad=True)
    b = lucid.tensor([3.0, 4.0], requires_grad=True)
    u, v = Split.apply(a, 2.0, b)
    node = u.grad_fn
    node.register_prehook(lambda go: seen.update(pre=go))
    node.register_hook(lambda gi, go: seen.update(post=(gi, go)))
    (u * 3 + v).sum().backward()
    assert len(seen["pre"]) == 2
    np.testing.assert_array_equal(seen["pre"][0].numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(seen["pre"][1].numpy(), [1.0, 1.0])
    gi, go = seen["post"]
    assert len(gi) == 3 and gi[1] is None and len(go) == 2
    np.testing.assert_array_equal(gi[0].numpy(), [7.0, 7.0])
    np.testing.assert_array_equal(gi[2].numpy(), [1.0, 1.0])


@pytest.mark.parametrize("as_list", [False, True])
def test_prehook_replacement_reaches_apply(as_list):
    """A pre-hook's tuple (or list) replaces the gradients apply gets."""
    log = []
    F = _logged_function(log)
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = F.apply(x, 5.0)
    make = (lambda g: [g]) if as_list else (lambda g: (g,))
    y.grad_fn.register_prehook(lambda go: make(go[0] * 10))
    y.sum().backward()
    assert log == [("apply", [10.0, 10.0])]
    np.testing.assert_array_equal(x.grad.numpy(), [50.0, 50.0])


@pytest.mark.parametrize("dtype", [lucid.float32, lucid.float64])
def test_posthook_replacement_reaches_the_inputs(dtype):
    """A node hook's tuple replaces grad_inputs: each input's leaf gets its replacement."""
    x = lucid.tensor([1.0, 2.0], dtype=dtype, requires_grad=True)
    w = lucid.tensor([3.0, 4.0], dtype=dtype, requires_grad=True)
    y = x * w
    y.grad_fn.register_hook(lambda gi, go: (gi[0] + 100, gi[1] * 0))
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [103.0, 104.0])
    np.testing.assert_array_equal(w.grad.numpy(), [0.0, 0.0])
    assert x.grad.dtype == dtype


def test_hooks_run_for_autograd_grad_too():
    """Node hooks run in autograd.grad as in backward, and their replacements count."""
    x = lucid.tensor([1.0, -1.0], dtype=lucid.float64, requires_grad=True)
    y = x.exp()
    y.grad_fn.register_prehook(lambda go: (go[0] * 2,))
    (g,) = lucid.autograd.grad(y.sum(), [x])
    np.testing.assert_allclose(g.numpy(), 2 * np.exp([1.0, -1.0]))
    assert x.grad is None


@pytest.mark.parametrize("mode", ["grad", "backward(inputs=)"])
def test_hooks_outside_what_is_asked_for_do_not_run(mode):
    """Bug: grad(out, x) ran the tensor hook and the node pre- and post-hooks of a = w * 2, which
    feeds no input asked for (its node is pruned; PyTorch runs none of them), and retain_grad
    under backward(inputs=) gave a a .grad."""
    x = lucid.tensor([1.0, 2.0], dtype=lucid.float64, requires_grad=True)
    w = lucid.tensor([3.0, 4.0], dtype=lucid.float64, requires_grad=True)
    calls = []
    w.register_hook(lambda g: calls.append("w hook"))
    a = w * 2.0
    a.retain_grad()
    a.register_hook(lambda g: calls.append("a hook"))
    a.grad_fn.register_prehook(lambda go: calls.append("a pre-hook"))
    a.grad_fn.register_hook(lambda gi, go: calls.append("a hook on its node"))
    out = (x * a).sum()
    if mode == "grad":
        (gx,) = lucid.autograd.grad(out, x)
        assert x.grad is None
    else:
        out.backward(inputs=[x])
        gx = x.grad
    np.testing.assert_array_equal(gx.numpy(), [6.0, 8.0])
    assert calls == []
    assert a.grad is None and w.grad is None


def test_create_graph_differentiates_through_replacements():
    """With create_graph=True a replacement made with lucid ops is part of the recorded graph:
    a pre-hook tripling the gradient of y = x*x makes d/dx of grad equal 6."""
    x = lucid.tensor([1.0, 2.0], dtype=lucid.float64, requires_grad=True)
    y = x * x
    calls = []
    y.grad_fn.register_prehook(lambda go: calls.append(1) or (go[0] * 3,))
    (g,) = lucid.autograd.grad(y.sum(), [x], create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy(), [6.0, 12.0])
    (gg,) = lucid.autograd.grad(g.sum(), [x])
    np.testing.assert_array_equal(gg.numpy(), [6.0, 6.0])
    assert calls == [1]


def _mul_graph():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    w = lucid.tensor([3.0, 4.0], requires_grad=True)
    return x, w, x * w


BAD_RESULTS = {
    "wrong length": (lambda g: (g, g), RuntimeError),
    "a bare Tensor": (lambda g: g, RuntimeError),
    "wrong shape": (lambda g: (lucid.ones(3),), RuntimeError),
    "a float": (lambda g: (1.0,), TypeError),
    "an ndarray": (lambda g: (np.ones(2),), TypeError),
    "a string": (lambda g: "no", RuntimeError),
}


@pytest.mark.parametrize("bad", list(BAD_RESULTS))
def test_bad_prehook_result_raises_naming_the_node(bad):
    """A pre-hook returning the wrong count, shape or type: RuntimeError/TypeError naming the
    node; no leaf gets a gradient."""
    make, error = BAD_RESULTS[bad]
    x, w, y = _mul_graph()
    y.grad_fn.register_prehook(lambda go: make(go[0]))
    with pytest.raises(error, match="MulBackward"):
        y.sum().backward()
    assert x.grad is None and w.grad is None


BAD_POST_RESULTS = {
    "wrong length": (lambda gi: (gi[0],), RuntimeError),
    "wrong shape": (lambda gi: (lucid.ones(3), gi[1]), RuntimeError),
    "a float": (lambda gi: (1.0, gi[1]), TypeError),
    "a string": (lambda gi: "no", RuntimeError),
}


@pytest.mark.parametrize("bad", list(BAD_POST_RESULTS))
def test_bad_posthook_result_raises_naming_the_node(bad):
    """A node hook returning a bad replacement for grad_inputs: the same errors, naming the
    node; no leaf gets a gradient."""
    make, error = BAD_POST_RESULTS[bad]
    x, w, y = _mul_graph()
    y.grad_fn.register_hook(lambda gi, go: make(gi))
    with pytest.raises(error, match="MulBackward"):
        y.sum().backward()
    assert x.grad is None and w.grad is None


def test_replacement_where_there_was_no_gradient_raises():
    """A node hook may not invent a gradient for an input that had none."""
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    c = lucid.tensor([3.0, 4.0])                  # does not require grad
    y = x * c
    y.grad_fn.register_hook(lambda gi, go: (gi[0], lucid.ones(2)))
    with pytest.raises(RuntimeError, match="MulBackward"):
        y.sum().backward()
    assert x.grad is None


def test_remove_unregisters_only_that_hook():
    """handle.remove() stops that hook (twice is harmless); the others keep running."""
    calls = []
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = x.tanh()
    node = y.grad_fn
    h1 = node.register_prehook(lambda go: calls.append("pre 1"))
    node.register_prehook(lambda go: calls.append("pre 2"))
    h3 = node.register_hook(lambda gi, go: calls.append("post"))
    h1.remove()
    h1.remove()
    h3.remove()
    y.sum().backward()
    assert calls == ["pre 2"]


def test_prehook_on_accumulate_grad_replaces_the_leaf_gradient():
    """A pre-hook on a leaf's AccumulateGrad (from next_functions) sees the incoming gradient
    (after the leaf's own tensor hooks) and its replacement is what .grad accumulates."""
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    acc = y.grad_fn.next_functions[0][0]
    assert acc.name() == "AccumulateGrad" and acc.variable is x
    seen = []
    x.register_hook(lambda g: g + 1)
    acc.register_prehook(lambda go: seen.append(go[0].numpy().tolist()) or (go[0] * 10,))
    y.sum().backward()
    assert seen == [[4.0, 4.0]]
    np.testing.assert_array_equal(x.grad.numpy(), [40.0, 40.0])


def test_posthook_on_accumulate_grad_runs():
    """API: node hooks run after apply for every node; an AccumulateGrad's hook must be called
    once per backward (grad_inputs is empty, grad_outputs holds the leaf's gradient)."""
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    acc = y.grad_fn.next_functions[0][0]
    seen = []
    acc.register_hook(lambda gi, go: seen.append([g.numpy().tolist() for g in go]))
    y.sum().backward()
    assert seen == [[[3.0, 3.0]]]


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("kind", ["prehook", "hook"])
def test_hook_exception_propagates_with_a_note_naming_the_node(kind, create_graph):
    """An exception in a node hook reaches the caller with its own type and message, plus a
    note naming the node (also with create_graph=True); no .grad is written."""

    class Boom(Exception):
        pass

    def fail(*args):
        raise Boom("from the hook")

    x = lucid.tensor([1.0, 2.0], dtype=lucid.float64, requires_grad=True)
    y = x.sin()
    (y.grad_fn.register_prehook if kind == "prehook" else y.grad_fn.register_hook)(fail)
    with pytest.raises(Boom, match="from the hook") as info:
        y.sum().backward(create_graph=create_graph)
    notes = getattr(info.value, "__notes__", [])
    assert any("SinBackward" in n for n in notes), notes
    assert x.grad is None


def test_register_non_callable_raises_typeerror():
    """A hook must be callable: TypeError, and nothing is registered."""
    y = lucid.tensor([1.0], requires_grad=True) * 2
    for register in (y.grad_fn.register_prehook, y.grad_fn.register_hook):
        with pytest.raises(TypeError):
            register(3)
    y.sum().backward()


def test_metadata_is_a_per_node_dict():
    """node.metadata: an empty dict at first, the same dict on every access, one per node."""
    x = lucid.tensor([1.0], requires_grad=True)
    y = x * 2
    z = y * 3
    m = y.grad_fn.metadata
    assert m == {} and y.grad_fn.metadata is m
    m["tag"] = "first"
    assert y.grad_fn.metadata == {"tag": "first"}
    assert z.grad_fn.metadata == {}
    assert z.grad_fn.next_functions[0][0].metadata is m
    z.sum().backward()
    assert m == {"tag": "first"}


@pytest.mark.parametrize("kind", ["prehook", "hook"])
def test_non_float_replacement_is_refused(kind):
    """Note [Hook order]: a replacement must be a float tensor; a bool mask returned by mistake
    must raise instead of flowing on as 1/0 gradients."""
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    mask = lucid.tensor([True, False])
    if kind == "prehook":
        y.grad_fn.register_prehook(lambda go: (mask,))
    else:
        y.grad_fn.register_hook(lambda gi, go: (mask,))
    with pytest.raises((TypeError, RuntimeError)):
        y.sum().backward()
    assert x.grad is None
