"""W2 wide fan-out: x (16,); ``sum((x * float(i)).sum() for i in range(1000))``; backward.

Stresses the accumulation of many gradients into one buffer.  Written with Python's ``sum``
(so it starts with ``0 + tensor``), the way a user would write it.
"""
import numpy as np

from . import _harness as h

ID = "W2"
NAME = "wide fan-out"
DESCRIPTION = "x (16,) float32; sum over i < 1000 of (x * float(i)).sum(); backward"
METRIC = "fwd+bwd"
TERMS = 1000
NODES = None
TARGETS = {"lucid/torch": 0.07}
MEMORY = False


def autograd_forward(x):
    return sum((x * float(i)).sum() for i in range(TERMS))


def numpy_forward(x):
    return sum((x * float(i)).sum() for i in range(TERMS))


def numpy_backward(x):
    gx = np.zeros_like(x)
    for i in range(TERMS):
        gx += float(i)            # d/dx (x * i).sum() = i, broadcast
    return [gx]


def setup(lib, quick):
    x0 = np.random.default_rng(h.SEED).standard_normal(16).astype(np.float32)
    if lib.name == "numpy":
        x = x0.copy()
        return h.numpy_case(lambda: numpy_forward(x), lambda _: numpy_backward(x))
    x = lib.leaf(x0)
    return h.autograd_case(lib, [x], lambda: autograd_forward(x))
