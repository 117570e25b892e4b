"""W1 deep chain: x (16,), 1000 times ``y = y * 0.5 + x`` (y starts as x); ``y.sum().backward()``.

Stresses the per-node cost of recording and traversal, and the 1000-way fan-in into x.
"""
import numpy as np

from . import _harness as h

ID = "W1"
NAME = "deep chain"
DESCRIPTION = "x (16,) float32; 1000 times y = y * 0.5 + x; y.sum().backward()"
METRIC = "fwd+bwd"
STEPS = 1000
NODES = 2 * STEPS                 # one mul and one add per step
NODE_UNIT = "op"
TARGETS = {"lucid/torch": 0.05}
MEMORY = False


def leaf_values():
    return np.random.default_rng(h.SEED).standard_normal(16).astype(np.float32)


def autograd_forward(x, steps=STEPS):
    """The graph, for lucid and torch alike."""
    y = x
    for _ in range(steps):
        y = y * 0.5 + x
    return y.sum()


def numpy_forward(x, steps=STEPS):
    y = x
    for _ in range(steps):
        y = y * 0.5 + x
    return y.sum()


def numpy_backward(x, steps=STEPS):
    """d/dx of sum(y_steps), by hand: walk the chain back from the sum."""
    g = np.ones_like(x)           # d sum / d y
    gx = np.zeros_like(x)
    for _ in range(steps):
        gx += g                   # add: the x branch
        g = g * 0.5               # mul: back to the previous y
    gx += g                       # y_0 is x
    return [gx]


def setup(lib, quick):
    x0 = leaf_values()
    if lib.name == "numpy":
        x = x0.copy()
        return h.numpy_case(lambda: numpy_forward(x), lambda _: numpy_backward(x))
    x = lib.leaf(x0)
    return h.autograd_case(lib, [x], lambda: autograd_forward(x))
