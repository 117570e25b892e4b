"""Backward from several threads at once (Note [Threads]): shared leaves, one shared graph, nesting."""
import sys
import threading
import time

import numpy as np
import pytest

import lucid
from support.checks import f64, to_numpy

JOIN_TIMEOUT = 60


@pytest.fixture
def fast_switching():
    """Force the interpreter to switch threads as often as it can (restored after the test)."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def _run_threads(target, n, *args):
    """Run n threads of target(i, *args); re-raise the first exception any of them hit."""
    errors = []

    def body(i):
        try:
            target(i, *args)
        except BaseException as e:          # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN_TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]


class PyIdentity(lucid.autograd.Function):
    """A Python re-entry point: threads switch inside the backward."""

    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        time.sleep(0)
        return g * 1.0


@pytest.mark.parametrize("n_threads", [4, 8])
def test_hogwild_shared_small_leaf_grad_is_exact(fast_switching, n_threads):
    """Bug (repro_15): threads whose graphs share only a leaf lost .grad updates (read-add-write
    of leaf.grad raced): W.grad came out a few updates short. It must be exact."""
    w = lucid.tensor(np.ones(4), dtype=lucid.float64, requires_grad=True)
    iters = 4000 // n_threads

    def worker(i):
        for _ in range(iters):
            h = PyIdentity.apply(w * 2.0)
            (PyIdentity.apply(h) + w).sum().backward()     # d/dw = 3 per element

    _run_threads(worker, n_threads)
    np.testing.assert_array_equal(w.grad.numpy(), np.full(4, 3.0 * n_threads * iters))


@pytest.mark.parametrize("dtype", [lucid.float64, lucid.float32])
def test_hogwild_shared_large_leaf_grad_is_exact(fast_switching, dtype):
    """Bug (repro_15): with large leaves NumPy releases the GIL while adding into .grad, so two
    threads' in-place adds interleaved and whole chunks of updates were lost. Exact now
    (integers small enough to be exact in float32 too)."""
    n, iters, n_threads = 200_000, 30, 4
    w = lucid.tensor(np.ones(n), dtype=dtype, requires_grad=True)
    v = lucid.tensor(np.full(n, 2.0), dtype=dtype, requires_grad=True)

    def worker(i):
        for _ in range(iters):
            h = PyIdentity.apply(w * v)
            (h + w).sum().backward()        # d/dw = v + 1 = 3, d/dv = w = 1

    _run_threads(worker, n_threads)
    total = n_threads * iters
    assert np.array_equal(w.grad.numpy(), np.full(n, 3.0 * total, dtype=w.grad.numpy().dtype))
    assert np.array_equal(v.grad.numpy(), np.full(n, 1.0 * total, dtype=v.grad.numpy().dtype))


class Slow(lucid.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        time.sleep(0)
        (x,) = ctx.saved_tensors
        return g * 2


def _shared_graph(depth=120):
    x = lucid.tensor(np.linspace(-1, 1, 500), dtype=lucid.float64, requires_grad=True)
    h = x
    for i in range(depth):
        h = Slow.apply(h) * 0.5 + h * 0.0 if i % 2 else (h * 1.0).tanh() * 0.0 + h
    return x, h.sum()


def _is_other_thread_error(e):
    return isinstance(e, RuntimeError) and "another thread" in str(e)


@pytest.mark.parametrize("n_threads", [2, 4])
def test_same_graph_from_several_threads_is_right_or_a_clear_error(fast_switching, n_threads):
    """Bug (repro_16): two threads backwarding one graph (retain_graph=True) trampled each
    other's per-node state: some got a wrong gradient, others a bogus 'input 0 was not used'.
    Each must get the exact gradient or a RuntimeError saying another thread is traversing
    the graph; afterwards the graph still works."""
    bad = []
    for trial in range(6):
        x, loss = _shared_graph()
        (ref,) = lucid.autograd.grad(loss, [x], retain_graph=True)
        ref = ref.numpy().copy()

        def worker(i):
            try:
                (g,) = lucid.autograd.grad(loss, [x], retain_graph=True)
            except Exception as e:             # noqa: BLE001 - judged below
                if not _is_other_thread_error(e):
                    bad.append(f"grad: {type(e).__name__}: {e}")
                return
            if not np.array_equal(g.numpy(), ref):
                bad.append("grad: wrong value")

        _run_threads(worker, n_threads)
        (again,) = lucid.autograd.grad(loss, [x], retain_graph=True)
        if not np.array_equal(again.numpy(), ref):
            bad.append("grad afterwards: wrong value")
    assert bad == []


@pytest.mark.parametrize("n_threads", [2, 4])
def test_same_graph_backward_into_grad_from_several_threads(fast_switching, n_threads):
    """Bug (repro_16): concurrent .backward(retain_graph=True) of one graph. Each call either
    adds exactly one gradient into x.grad or raises the 'another thread' RuntimeError, so
    x.grad is exactly (number of successful calls) * gradient; a later backward still works."""
    for trial in range(4):
        x, loss = _shared_graph()
        (ref,) = lucid.autograd.grad(loss, [x], retain_graph=True)
        ref = ref.numpy().copy()
        ok, bad = [], []

        def worker(i):
            try:
                loss.backward(retain_graph=True)
                ok.append(i)
            except Exception as e:             # noqa: BLE001 - judged below
                if not _is_other_thread_error(e):
                    bad.append(f"{type(e).__name__}: {e}")

        _run_threads(worker, n_threads)
        assert bad == []
        assert ok, "at least the first thread to start must succeed"
        np.testing.assert_allclose(x.grad.numpy(), len(ok) * ref, rtol=1e-12, atol=0)
        x.grad = None
        loss.backward(retain_graph=True)
        np.testing.assert_array_equal(x.grad.numpy(), ref)


class Reentrant(lucid.autograd.Function):
    """backward recomputes y = tanh(x * w) with grad mode on and differentiates it with a
    nested autograd.grad call (checkpoint style)."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return (x * w).tanh()

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        xd = x.detach().requires_grad_(True)
        wd = w.detach().requires_grad_(True)
        with lucid.enable_grad():
            y = PyIdentity.apply((xd * wd).tanh())
        time.sleep(0)
        gx, gw = lucid.autograd.grad(y, [xd, wd], g)
        return gx, gw


def test_reentrant_backward_while_other_threads_run(fast_switching):
    """A Function whose backward runs a nested autograd.grad, in 4 threads at once with a shared
    (large, float64) parameter: every per-thread gradient is exact, and the shared .grad is
    the exact sum."""
    n, n_threads, iters = 50_000, 4, 12
    rng = np.random.default_rng(0)
    w = lucid.tensor(rng.uniform(-1, 1, n), dtype=lucid.float64, requires_grad=True)
    xs = [rng.uniform(-1, 1, n) for _ in range(n_threads)]
    expected_w = sum((1 - np.tanh(x * w.detach().numpy()) ** 2) * x for x in xs) * iters
    wrong = []

    def worker(i):
        x = lucid.tensor(xs[i], dtype=lucid.float64, requires_grad=True)
        wnp = w.detach().numpy()
        want_x = (1 - np.tanh(xs[i] * wnp) ** 2) * wnp
        for _ in range(iters):
            out = Reentrant.apply(x, w).sum()
            out.backward()
            if not np.allclose(x.grad.numpy(), want_x, rtol=1e-12, atol=0):
                wrong.append(i)
            x.grad = None

    _run_threads(worker, n_threads)
    assert wrong == []
    np.testing.assert_allclose(w.grad.numpy(), expected_w, rtol=1e-10, atol=1e-12)


def test_node_prehook_of_a_shared_accumulator_runs_in_a_concurrent_thread():
    """Thread A is inside the backward of a graph on leaf w; meanwhile the main thread
    backwards another graph on w. A pre-hook registered on w's AccumulateGrad must run for
    both backwards, and its replacement gradient (doubled) must be used by both."""
    w = lucid.tensor([1.0, 2.0], requires_grad=True)
    entered, release = threading.Event(), threading.Event()

    class Block(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            entered.set()
            release.wait(10)
            return g

    loss_a = Block.apply(w * 1).sum()
    loss_b = (w * 3).sum()
    acc = loss_b.grad_fn.next_functions[0][0].next_functions[0][0]
    calls = []
    acc.register_prehook(lambda go: calls.append("pre") or (go[0] * 2,))
    thread = threading.Thread(target=loss_a.backward)
    thread.start()
    try:
        assert entered.wait(10)
        loss_b.backward()
    finally:
        release.set()
        thread.join(JOIN_TIMEOUT)
    assert calls == ["pre", "pre"]
    np.testing.assert_array_equal(w.grad.numpy(), [8.0, 8.0])


# ---------------------------------------------------------------------------------------------
# independent graphs from several threads (API.md section 6)
# ---------------------------------------------------------------------------------------------

def test_independent_graphs_backward_from_threads():
    import sys
    errors = []
    n_threads, n_iter = 4, 60
    start = threading.Barrier(n_threads)

    def worker(seed):
        try:
            rng = np.random.default_rng(seed)
            start.wait(10)
            for it in range(n_iter):
                a = rng.standard_normal((4, 3))
                x = f64(a, requires_grad=True)
                h = x * 2.0
                # a Python hook in the middle of the traversal gives other threads a chance to
                # run their own backward while this one is suspended
                h.register_hook(lambda g: g * 1.0)
                y = (h.tanh() * x).sum()
                if it % 2:
                    y.backward()
                    g = to_numpy(x.grad)
                else:
                    (g,) = lucid.autograd.grad(y, [x])
                    g = to_numpy(g)
                t = np.tanh(2 * a)
                np.testing.assert_allclose(g, 2 * (1 - t * t) * a + t, rtol=1e-12, atol=1e-12)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(old)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors[0]
