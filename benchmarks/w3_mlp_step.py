"""W3 MLP step: batch 64, 784-256-256-10, tanh on the hidden layers, ``((out - t)**2).mean()``.

A realistic step where BLAS dominates: the autograd overhead must vanish.  Gradients of the six
parameters are checked; the input and the target do not require grad.
"""
import numpy as np

from . import _harness as h

ID = "W3"
NAME = "MLP step"
DESCRIPTION = "batch 64, 784-256-256-10, tanh, ((out - t)**2).mean(); fwd + bwd"
METRIC = "fwd+bwd"
NODES = None
TARGETS = {"lucid/torch": 0.65}
MEMORY = False
ATOL = 1e-4                       # float32 matmuls summed in different orders


def values():
    rng = np.random.default_rng(h.SEED)
    f32 = np.float32
    sizes = [784, 256, 256, 10]
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        params.append((rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(f32))
        params.append((0.1 * rng.standard_normal(fan_out)).astype(f32))
    X = rng.standard_normal((64, 784)).astype(f32)
    T = rng.standard_normal((64, 10)).astype(f32)
    return params, X, T


def autograd_forward(p, X, T):
    W1, b1, W2, b2, W3, b3 = p
    h1 = (X @ W1 + b1).tanh()
    h2 = (h1 @ W2 + b2).tanh()
    out = h2 @ W3 + b3
    return ((out - T) ** 2).mean()


def numpy_forward(p, X, T):
    W1, b1, W2, b2, W3, b3 = p
    h1 = np.tanh(X @ W1 + b1)
    h2 = np.tanh(h1 @ W2 + b2)
    d = (h2 @ W3 + b3) - T
    loss = (d ** 2).mean()
    return h1, h2, d, loss


def numpy_backward(p, X, saved):
    W1, b1, W2, b2, W3, b3 = p
    h1, h2, d, _ = saved
    gout = d * (2.0 / d.size)
    gW3 = h2.T @ gout
    gb3 = gout.sum(0)
    ga2 = (gout @ W3.T) * (1.0 - h2 * h2)
    gW2 = h1.T @ ga2
    gb2 = ga2.sum(0)
    ga1 = (ga2 @ W2.T) * (1.0 - h1 * h1)
    gW1 = X.T @ ga1
    gb1 = ga1.sum(0)
    return [gW1, gb1, gW2, gb2, gW3, gb3]


def setup(lib, quick):
    params, X0, T0 = values()
    if lib.name == "numpy":
        p = [a.copy() for a in params]
        X, T = X0.copy(), T0.copy()
        return h.numpy_case(lambda: numpy_forward(p, X, T), lambda s: numpy_backward(p, X, s))
    p = [lib.leaf(a) for a in params]
    X, T = lib.const(X0), lib.const(T0)
    return h.autograd_case(lib, p, lambda: autograd_forward(p, X, T))
