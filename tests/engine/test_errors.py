"""Errors raised while the engine runs a node (Note [Hook order]: tensor hooks, pre-hooks, apply
or a leaf's accumulation, post-hooks): the exception keeps its type and message and carries one
lucid note naming the node and its creation site, plus, in anomaly mode, the forward traceback
that made the node; the traversal leaves nothing behind, so the graph can be run again."""
import re

import numpy as np
import pytest

import lucid
from lucid.autograd import Function
from support.checks import assert_close, f64


class Failure(Exception):
    pass


def _fail(*args):
    raise Failure("from user code")


class Boom(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        raise Failure("from user code")


def _notes(e):
    return list(getattr(e, "__notes__", []) or [])


def _place_notes(e):
    return [n for n in _notes(e) if n.startswith("lucid: raised")]


def _trace_notes(e):
    return [n for n in _notes(e) if n.startswith("lucid anomaly mode:")]


def _site_of(node):
    return node.creation_site


# Each site builds x -> a = x * 2 (MulBackward) -> a.sin() (SinBackward) -> sum and makes one
# step of running one node raise; it returns the root, the node named in the note and whether
# x.grad is written before the error (only a leaf's post-hooks run after its accumulation).
def _tensor_hook(x):
    a = x * 2.0
    a.register_hook(_fail)
    return a.sin().sum(), a.grad_fn, False


def _leaf_hook(x):
    x.register_hook(_fail)
    a = x * 2.0
    return a.sin().sum(), a.grad_fn.next_functions[0][0], False


def _prehook(x):
    a = x * 2.0
    a.grad_fn.register_prehook(_fail)
    return a.sin().sum(), a.grad_fn, False


def _posthook(x):
    a = x * 2.0
    a.grad_fn.register_hook(_fail)
    return a.sin().sum(), a.grad_fn, False


def _leaf_prehook(x):
    a = x * 2.0
    acc = a.grad_fn.next_functions[0][0]
    acc.register_prehook(_fail)
    return a.sin().sum(), acc, False


def _leaf_posthook(x):
    a = x * 2.0
    acc = a.grad_fn.next_functions[0][0]
    acc.register_hook(_fail)
    return a.sin().sum(), acc, True


def _function_backward(x):
    a = Boom.apply(x * 2.0)
    return a.sin().sum(), a.grad_fn, False


def _builtin_apply(x):
    a = x * 2.0
    b = a.sin()                           # SinBackward saves a
    with lucid.no_grad():
        a.mul_(1.0)                       # its apply then raises: a was changed since
    return b.sum(), b.grad_fn, False


SITES = {
    "tensor hook": _tensor_hook,
    "leaf hook": _leaf_hook,
    "node pre-hook": _prehook,
    "node post-hook": _posthook,
    "leaf node pre-hook": _leaf_prehook,
    "leaf node post-hook": _leaf_posthook,
    "Function backward": _function_backward,
    "built-in apply": _builtin_apply,
}


def _run_site(site, anomaly, create_graph):
    x = f64([0.5, -1.0, 2.0], requires_grad=True)
    if anomaly:
        with lucid.autograd.detect_anomaly():
            root, node, accumulated = SITES[site](x)
            with pytest.raises((Failure, RuntimeError)) as info:
                root.backward(create_graph=create_graph)
    else:
        root, node, accumulated = SITES[site](x)
        with pytest.raises((Failure, RuntimeError)) as info:
            root.backward(create_graph=create_graph)
    if site == "built-in apply":
        assert type(info.value) is RuntimeError and "SinBackward" in str(info.value)
    else:
        assert type(info.value) is Failure and str(info.value) == "from user code"
    assert (x.grad is not None) == accumulated, x.grad
    return info.value, node


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("site", list(SITES))
def test_one_note_names_the_node_and_its_creation_site(site, create_graph):
    error, node = _run_site(site, anomaly=False, create_graph=create_graph)
    placed = _place_notes(error)
    assert len(placed) == 1, _notes(error)
    assert node.name() in placed[0], placed
    if _site_of(node) is not None:
        assert f"{node.name()} (created at {_site_of(node)})" in placed[0], placed
    assert not _trace_notes(error), _notes(error)


@pytest.mark.parametrize("site", list(SITES))
def test_anomaly_mode_adds_the_forward_trace_of_the_node_once(site):
    """Bug: an exception from a tensor hook or a node hook got no forward traceback in anomaly
    mode (only one from an apply did)."""
    error, node = _run_site(site, anomaly=True, create_graph=False)
    assert len(_place_notes(error)) == 1, _notes(error)
    traces = _trace_notes(error)
    if "leaf" in site:                    # a leaf's node is made by no forward call
        assert not traces, traces
        return
    assert len(traces) == 1, _notes(error)
    assert traces[0].startswith(f"lucid anomaly mode: {node.name()} was created by")
    assert re.search(r"in _(tensor_hook|prehook|posthook|function_backward|builtin_apply)\b",
                     traces[0]), traces[0]


class ReentrantSin(Function):
    """sin(x), whose backward differentiates a graph of its own with autograd.grad (the inner
    traversal runs inside the outer one); with fail set, a hook in that graph raises."""
    fail = False

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with lucid.enable_grad():
            xd = x.detach().requires_grad_()
            h = xd.sin()
            if ReentrantSin.fail:
                h.register_hook(_fail)
            (gx,) = lucid.autograd.grad(h, xd, g)
        return gx


@pytest.fixture
def reentrant_sin():
    ReentrantSin.fail = False
    yield ReentrantSin
    ReentrantSin.fail = False


def test_error_in_a_reentrant_backward_names_both_nodes_and_the_graph_runs_again(reentrant_sin):
    x = f64([0.5, -1.0, 2.0], requires_grad=True)
    y = reentrant_sin.apply(x)
    root = (y * 3.0).sum() + (x * 2.0).sum()     # x's leaf also gets a gradient from x * 2
    reentrant_sin.fail = True
    with pytest.raises(Failure) as info:
        root.backward(retain_graph=True)
    placed = _place_notes(info.value)
    assert len(placed) == 2, _notes(info.value)
    assert "SinBackward" in placed[0] and "hook" in placed[0], placed
    assert "Function ReentrantSin" in placed[1] and "ReentrantSinBackward" in placed[1], placed
    assert x.grad is None
    assert lucid.is_grad_enabled()
    reentrant_sin.fail = False
    root.backward()                        # no gradient left over from the failed run
    assert_close(x.grad, 3.0 * np.cos([0.5, -1.0, 2.0]) + 2.0)


def test_error_midway_leaves_no_pending_gradient(reentrant_sin):
    """A backward that raised after some nodes had sent gradients on: the next backward of the
    same (retained) graph sums only its own gradients, into every leaf."""
    x = f64([0.5, -1.0, 2.0], requires_grad=True)
    w = f64([1.0, 2.0, 3.0], requires_grad=True)
    m = x * w                              # its node waits for both branches
    root = (reentrant_sin.apply(m) * 3.0).sum() + m.sum()
    reentrant_sin.fail = True
    for _ in range(2):
        with pytest.raises(Failure):
            root.backward(retain_graph=True)
    assert x.grad is None and w.grad is None
    reentrant_sin.fail = False
    root.backward()
    g = 3.0 * np.cos(np.array([0.5, -2.0, 6.0])) + 1.0
    assert_close(x.grad, g * np.array([1.0, 2.0, 3.0]))
    assert_close(w.grad, g * np.array([0.5, -1.0, 2.0]))
