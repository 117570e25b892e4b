"""W5 large elementwise: x (1_000_000,); 20 times ``y = tanh(y) * 1.5``; ``y.sum().backward()``.

Bandwidth-bound kernels, fusion of backward formulas, release of saved memory.  Peak memory is
measured too (in a fresh process per library, see _harness.MEMORY_METHOD).
"""
import numpy as np

from . import _harness as h

ID = "W5"
NAME = "large elementwise"
DESCRIPTION = "x (1_000_000,) float32; 20 times y = tanh(y) * 1.5; backward"
METRIC = "fwd+bwd"
N = 1_000_000
STEPS = 20
NODES = None
TARGETS = {"lucid/floor": 0.9}
MEMORY = True
ATOL = 1e-4                       # 20 tanh from different libms compound a few ulps


def autograd_forward(x):
    y = x
    for _ in range(STEPS):
        y = y.tanh() * 1.5
    return y.sum()


def numpy_forward(x):
    saved = []
    y = x
    for _ in range(STEPS):
        t = np.tanh(y)
        saved.append(t)
        y = t * 1.5
    return saved, y.sum()


def numpy_backward(x, state):
    """By hand, unfused but without needless temporaries: g <- g * 1.5 * (1 - t**2)."""
    saved, _ = state
    g = np.ones_like(x)
    tmp = np.empty_like(x)
    for t in reversed(saved):
        g *= 1.5
        np.multiply(t, t, out=tmp)
        np.subtract(1.0, tmp, out=tmp)
        g *= tmp
    return [g]


def setup(lib, quick):
    x0 = np.random.default_rng(h.SEED).standard_normal(N).astype(np.float32)
    if lib.name == "numpy":
        x = x0
        return h.numpy_case(lambda: numpy_forward(x), lambda s: numpy_backward(x, s))
    x = lib.leaf(x0)
    return h.autograd_case(lib, [x], lambda: autograd_forward(x))
