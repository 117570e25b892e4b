"""The small tanh MLPs of W12 and W13: seeded parameters, and the forward pass written once for
lucid and torch (hidden layers h = tanh(h W + b), a linear output layer)."""
import numpy as np


def parameters(sizes, rng, dtype):
    """[W1, b1, ...]: W_k (fan_in, fan_out) of N(0, 1) / sqrt(fan_in), b_k of 0.1 N(0, 1)."""
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        params.append((rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(dtype))
        params.append((0.1 * rng.standard_normal(fan_out)).astype(dtype))
    return params


def forward(params, x):
    """The output layer's pre-activation: tanh on every hidden layer, linear last (tensors of
    lucid or torch; x one example or a batch of rows)."""
    h = x
    for k in range(0, len(params) - 2, 2):
        h = (h @ params[k] + params[k + 1]).tanh()
    return h @ params[-2] + params[-1]
