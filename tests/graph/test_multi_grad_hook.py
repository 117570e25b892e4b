"""lucid.autograd.graph.register_multi_grad_hook (API.md section 13), with PyTorch 2.13 as the
oracle: the same program's calls of fn are compared."""
import threading

import numpy as np
import pytest

import lucid
from lucid.autograd import graph

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch (the test oracle) is not installed")


def leaves(lib, n):
    return [lib.tensor(np.arange(1.0, 4.0) * (k + 1), requires_grad=True) for k in range(n)]


def summary(grads):
    """What fn saw: None, or the gradient's values."""
    return [None if g is None else np.asarray(g.detach().numpy()).tolist() for g in grads]


def run_all_mode_program(lib):
    """PyTorch's documented example, and more backward calls after it."""
    a, b = leaves(lib, 2)
    c = a * b
    d = a * b
    calls = []
    handle = lib.autograd.graph.register_multi_grad_hook((a, b, c, d),
                                                          lambda gs: calls.append(summary(gs)))
    c.sum().backward(retain_graph=True)
    c.sum().backward(inputs=(a,), retain_graph=True)
    if lib is torch:       # torch's grad() refuses leaves here ("currently not supported");
        d.sum().backward(inputs=(b,), retain_graph=True)   # the same gradients are computed
    else:
        lib.autograd.grad(d.sum(), [b], retain_graph=True)
    (c + d).sum().backward(retain_graph=True)
    handle.remove()
    c.sum().backward()
    return calls


@needs_torch
def test_all_mode_waits_for_what_this_backward_computes_like_torch():
    assert run_all_mode_program(lucid) == run_all_mode_program(torch)


def run_any_mode_program(lib):
    a, b = leaves(lib, 2)
    y = a * 2
    z = y * b
    calls = []
    handle = lib.autograd.graph.register_multi_grad_hook((a, y, b), lambda g: calls.append(
        summary([g])), mode="any")
    z.sum().backward(retain_graph=True)
    lib.autograd.grad(z.sum(), [b], retain_graph=True)
    handle.remove()
    z.sum().backward()
    return calls


@needs_torch
def test_any_mode_calls_fn_with_the_first_gradient_once_per_backward_like_torch():
    assert run_any_mode_program(lucid) == run_any_mode_program(torch)


def test_all_mode_in_threads_gives_each_backward_its_own_call():
    a, b = leaves(lucid, 2)
    calls = []
    lock = threading.Lock()

    def fn(grads):
        with lock:
            calls.append(summary(grads))

    graph.register_multi_grad_hook((a, b), fn)
    errors = []

    def work(scale):
        try:
            for _ in range(20):
                ((a * b) * scale).sum().backward()
        except BaseException as e:     # reported below: a thread's error would be lost
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in (1.0, 2.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(calls) == 40
    expected = {1.0: [b.detach().numpy().tolist(), a.detach().numpy().tolist()],
                2.0: [(2 * b.detach().numpy()).tolist(), (2 * a.detach().numpy()).tolist()]}
    assert all(c in expected.values() for c in calls)
    assert sum(c == expected[1.0] for c in calls) == 20


def test_bad_mode_fn_and_tensors_raise_and_register_nothing():
    a = lucid.tensor([1.0], requires_grad=True)
    b = lucid.tensor([1.0])
    with pytest.raises(ValueError, match="mode must be one of .*'all'.*'any'.* got 'every'"):
        graph.register_multi_grad_hook((a,), print, mode="every")
    with pytest.raises(TypeError, match="fn must be callable"):
        graph.register_multi_grad_hook((a,), 3)
    with pytest.raises(TypeError, match="tensors must be a sequence of Tensors"):
        graph.register_multi_grad_hook(a, print)
    with pytest.raises(TypeError, match=r"tensors\[1\] is str"):
        graph.register_multi_grad_hook((a, "b"), print)
    with pytest.raises(RuntimeError, match=r"tensors\[1\] does not require grad"):
        graph.register_multi_grad_hook((a, b), print)
    seen = []
    (a * 2).sum().backward()                   # none of the refused calls left a hook
    assert seen == [] and a.grad.numpy().tolist() == [2.0]


def test_the_handle_is_a_context_manager_and_remove_twice_is_harmless():
    a, b = leaves(lucid, 2)
    calls = []
    with graph.register_multi_grad_hook((a, b), calls.append) as handle:
        (a * b).sum().backward()
    handle.remove()
    (a * b).sum().backward()
    assert len(calls) == 1


def test_a_backward_that_raises_midway_leaves_no_state_behind():
    a, b = leaves(lucid, 2)
    calls = []
    graph.register_multi_grad_hook((a, b), lambda gs: calls.append(summary(gs)))

    def boom(g):
        raise ValueError("boom")

    handle = b.register_hook(boom)
    with pytest.raises(ValueError, match="boom"):
        (a * b).sum().backward()
    handle.remove()
    a.grad = b.grad = None
    (a * b).sum().backward()
    assert calls == [summary([b, a])]


def test_a_backward_run_inside_a_backward_counts_for_itself():
    a, b = leaves(lucid, 2)
    inner_calls, outer_calls = [], []

    class Inner(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with lucid.enable_grad():
                u = x.detach().requires_grad_()
                v = u * 3.0
                graph.register_multi_grad_hook((u, v), lambda gs: inner_calls.append(
                    summary(gs)))
                (gu,) = lucid.autograd.grad(v.sum(), [u])
            return g * gu

    graph.register_multi_grad_hook((a, b), lambda gs: outer_calls.append(summary(gs)))
    (Inner.apply(a) * b).sum().backward()
    assert inner_calls == [[[3.0, 3.0, 3.0], [1.0, 1.0, 1.0]]]
    assert outer_calls == [summary([3 * b, a])]
