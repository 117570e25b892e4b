"""Deep graphs (API.md section 3): a chain of 10**6 nodes builds, runs backward and is freed
without recursion errors or crashes. Each scenario runs in a fresh interpreter (a crash in
deallocation would otherwise take pytest down with it), with the cyclic GC disabled, so freeing
must come from reference counting alone."""
import subprocess
import sys
import textwrap

import pytest

N = 10 ** 6
TIMEOUT = 120

PRELUDE = """
import gc, sys
gc.disable()
import numpy as np
import lucid
N = {n}
"""


def _run(body, n=N):
    code = textwrap.dedent(PRELUDE.format(n=n)) + textwrap.dedent(body)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert proc.returncode == 0, (
        f"subprocess failed with return code {proc.returncode}\n"
        f"stdout:\n{proc.stdout[-2000:]}\nstderr:\n{proc.stderr[-4000:]}")
    return proc.stdout


def test_deep_chain_mul_backward_then_free():
    out = _run("""
        x = lucid.tensor(np.array([1.0]), dtype=lucid.float64, requires_grad=True)
        y = x
        for _ in range(N):
            y = y * 1.0
        y.sum().backward()
        print("grad", x.grad.tolist())
        del y
        print("freed")
        gc.enable(); gc.collect()
        print("done")
    """)
    assert "grad [1.0]" in out
    assert "freed" in out and "done" in out


def test_deep_chain_add_backward_then_free():
    out = _run("""
        x = lucid.tensor(np.array([2.0]), dtype=lucid.float64, requires_grad=True)
        y = x
        for _ in range(N):
            y = y + 0.0
        z = (y * y).sum()
        z.backward()
        print("grad", x.grad.tolist())
        print("value", y.detach().tolist())
        del z, y
        print("done")
    """)
    assert "grad [4.0]" in out
    assert "value [2.0]" in out
    assert "done" in out


def test_deep_chain_freed_without_backward():
    out = _run("""
        x = lucid.tensor(np.array([1.0]), dtype=lucid.float64, requires_grad=True)
        y = x
        for _ in range(N):
            y = y * 1.0
        del y
        print("freed")
        # the leaf is still usable
        (x * 3.0).sum().backward()
        print("grad", x.grad.tolist())
    """)
    assert "freed" in out
    assert "grad [3.0]" in out


def test_deep_chain_retain_graph_twice():
    out = _run("""
        x = lucid.tensor(np.array([1.0]), dtype=lucid.float64, requires_grad=True)
        y = x
        for _ in range(N):
            y = y * 1.0
        s = y.sum()
        s.backward(retain_graph=True)
        s.backward()
        print("grad", x.grad.tolist())
        (gx,) = lucid.autograd.grad((x * 1.0).sum(), [x])
        print("g", gx.tolist())
    """, n=N // 4)
    assert "grad [2.0]" in out
    assert "g [1.0]" in out


def test_chain_with_saved_tensors_is_released_by_refcount():
    # tanh saves its output and mul saves its inputs: none of this may form reference cycles,
    # so with the cyclic GC off, memory returns to the baseline once the graph is dropped,
    # both after backward and without it
    out = _run("""
        import tracemalloc
        tracemalloc.start()
        x = lucid.tensor(np.full(16, 0.5), dtype=lucid.float64, requires_grad=True)

        def build():
            y = x
            for _ in range(N):
                y = (y * 1.0).tanh() * x + 0.0
            return y

        (x * 1.0).sum().backward()       # warm-up: lazily created objects (AccumulateGrad, grad)
        base = tracemalloc.get_traced_memory()[0]
        y = build()
        grown = tracemalloc.get_traced_memory()[0] - base
        del y
        after_free = tracemalloc.get_traced_memory()[0] - base
        y = build()
        y.sum().backward()
        del y
        after_backward = tracemalloc.get_traced_memory()[0] - base
        print("grown", grown)
        print("after_free", after_free)
        print("after_backward", after_backward)
    """, n=20000)
    vals = dict(line.split() for line in out.strip().splitlines())
    grown = int(vals["grown"])
    assert grown > 500_000, f"graph of 80k nodes should take memory, measured {grown} bytes"
    assert int(vals["after_free"]) < grown / 20, out
    assert int(vals["after_backward"]) < grown / 20, out
