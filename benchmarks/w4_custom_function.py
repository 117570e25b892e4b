"""W4 custom Function: a Python ``Function`` f(x) = 2x saving its input, chained 1000 times on
x (16,); ``y.sum().backward()``.

The cost of re-entering Python per node.  The values overflow to inf in float32 by design; the
gradient (2**1000 everywhere) is inf too, and is compared with the floor's inf.
"""
import numpy as np

from . import _harness as h

ID = "W4"
NAME = "custom Function"
DESCRIPTION = "Function f(x) = 2x saving its input, chained 1000 times on (16,); backward"
METRIC = "fwd+bwd"
STEPS = 1000
NODES = STEPS
NODE_UNIT = "Function call"
TARGETS = {"lucid/torch": 0.12}
MEMORY = False


def make_double(Function):
    """The same Function class for lucid and torch (their APIs agree)."""
    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2.0

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 2.0

    return Double


def numpy_forward(x):
    saved = []
    y = x
    for _ in range(STEPS):
        saved.append(y)
        y = y * 2.0
    return saved, y.sum()


def numpy_backward(x, state):
    saved, _ = state
    g = np.ones_like(x)
    for _ in reversed(saved):
        g = g * 2.0
    return [g]


def setup(lib, quick):
    x0 = np.random.default_rng(h.SEED).standard_normal(16).astype(np.float32)
    if lib.name == "numpy":
        x = x0.copy()
        return h.numpy_case(lambda: numpy_forward(x), lambda s: numpy_backward(x, s))
    autograd = getattr(lib.mod, "autograd", None)
    Function = getattr(autograd, "Function", None)
    if Function is None:
        raise h.NotAvailable(f"{lib.name}.autograd.Function does not exist (yet)")
    Double = make_double(Function)
    x = lib.leaf(x0)

    def forward():
        y = x
        for _ in range(STEPS):
            y = Double.apply(y)
        return y.sum()

    return h.autograd_case(lib, [x], forward)
