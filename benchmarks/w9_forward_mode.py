"""W9 forward mode: the jvp of W1's chain and of W3's MLP, a tangent on the input, one forward pass.

Four variants, each a forward pass alone (no backward):

- ``chain`` (the main one): W1's chain, x (16,) float32, 1000 times ``y = y * 0.5 + x``; inside a
  dual level, ``x`` is made dual with a seeded tangent and the pass ends with ``y.sum()``'s primal
  and tangent (``unpack_dual``).  Entering and leaving the level are timed with it.
- ``chain-fwd``: the same forward without a dual level, on the same leaf, so that
  ``lucid jvp/fwd chain`` is lucid's jvp over lucid's own plain forward (target <= 1.6).
- ``mlp``: W3's MLP loss (batch 64, 784-256-256-10, tanh, ``((out - t)**2).mean()``) with a
  seeded tangent on the input X; the loss's primal and tangent.  Judged by the NumPy floor, which
  computes the primal and the tangent by hand (every matmul twice): target <= 1.1 x the floor.
- ``mlp-fwd``: the same loss without a dual level (``lucid jvp/fwd mlp``, for information).

Nothing requires grad (a pure forward-mode pass records no graph).  The floor for a jvp variant
is the primal and the tangent loops written by hand in NumPy; for a ``-fwd`` variant, the primal
alone.  Every library's primal and tangent are checked against the floor's before timing.
PyTorch runs ``torch.autograd.forward_ad`` with the same code as lucid.
"""
import numpy as np

from . import _harness as h
from . import w1_deep_chain as w1
from . import w3_mlp_step as w3

ID = "W9"
NAME = "forward mode"
DESCRIPTION = ("jvp (tangent on the input) of W1's chain and of W3's MLP loss, one forward pass "
               "with a dual level; and the same forwards without one")
METRIC = "fwd"
NODES = w1.NODES                  # the main variant is W1's chain: one mul and one add per step
NODE_UNIT = "op"
TARGETS = {"lucid/torch": 0.10, "lucid jvp/fwd chain": 1.6, "lucid/floor mlp": 1.1}
EXTRA_RATIOS = (("lucid jvp/fwd chain", "lucid", "lucid:chain-fwd"),
                ("torch jvp/fwd chain", "torch", "torch:chain-fwd"),
                ("floor jvp/fwd chain", "numpy", "numpy:chain-fwd"),
                ("lucid/floor mlp", "lucid:mlp", "numpy:mlp"),
                ("lucid jvp/fwd mlp", "lucid:mlp", "lucid:mlp-fwd"),
                ("floor jvp/fwd mlp", "numpy:mlp", "numpy:mlp-fwd"))
MEMORY = False
ATOL = 1e-4                       # float32 matmuls summed in different orders


def tangent_like(arr, salt):
    """A seeded tangent with ``arr``'s shape and dtype."""
    rng = np.random.default_rng(h.SEED + 9 + salt)
    return rng.standard_normal(arr.shape).astype(arr.dtype)


# --------------------------------------------------------------------------------------------
# the NumPy floor: primal and tangent by hand
# --------------------------------------------------------------------------------------------
def numpy_chain_jvp(x, tx, steps=w1.STEPS):
    """sum(y_steps) and its tangent: y <- 0.5 y + x carries ty <- 0.5 ty + tx."""
    y, ty = x, tx
    for _ in range(steps):
        y = y * 0.5 + x
        ty = ty * 0.5 + tx
    return y.sum(), ty.sum()


def tanh_tangent(h_out, t_in):
    """Tangent of h = tanh(a) from a's tangent: (1 - h^2) t."""
    return (1.0 - h_out * h_out) * t_in


def numpy_mlp_jvp(p, X, T, tX):
    """W3's loss and its tangent along tX (the weights are constants)."""
    W1, b1, W2, b2, W3, b3 = p
    h1 = np.tanh(X @ W1 + b1)
    t1 = tanh_tangent(h1, tX @ W1)
    h2 = np.tanh(h1 @ W2 + b2)
    t2 = tanh_tangent(h2, t1 @ W2)
    d = (h2 @ W3 + b3) - T
    td = t2 @ W3
    return (d ** 2).mean(), 2.0 * (d * td).mean()


def numpy_case(forward):
    """A forward-only floor case: ``forward()`` returns the arrays that are checked."""
    box = {}

    def run():
        box["out"] = forward()

    return h.Case(run, None, lambda: [np.array(a, copy=True) for a in box["out"]], box.clear)


# --------------------------------------------------------------------------------------------
# lucid and torch: one code path, the library's forward_ad module
# --------------------------------------------------------------------------------------------
def jvp_case(lib, fn, x, tx):
    """Time ``fn(dual x)`` inside a dual level; check its primal and tangent."""
    fw = h.forward_ad(lib)
    box = {}

    def run():
        with fw.dual_level():
            out = fn(fw.make_dual(x, tx))
            box["out"] = fw.unpack_dual(out)

    def results():
        primal, tangent = box["out"]
        if tangent is None:
            raise AssertionError(f"{lib.name}: no tangent reached the output")
        return [lib.to_numpy(primal), lib.to_numpy(tangent)]

    return h.Case(run, None, results, box.clear)


def plain_case(lib, fn, x):
    """Time ``fn(x)`` without a dual level; check its value."""
    box = {}

    def run():
        box["out"] = fn(x)

    return h.Case(run, None, lambda: [lib.to_numpy(box["out"])], box.clear)


def setup(lib, quick):
    x0 = w1.leaf_values()
    tx0 = tangent_like(x0, 0)
    params, X0, T0 = w3.values()
    tX0 = tangent_like(X0, 1)
    if lib.name == "numpy":
        x, tx = x0.copy(), tx0.copy()
        p, X, T, tX = [a.copy() for a in params], X0.copy(), T0.copy(), tX0.copy()
        return {"chain": numpy_case(lambda: numpy_chain_jvp(x, tx)),
                "chain-fwd": numpy_case(lambda: [w1.numpy_forward(x)]),
                "mlp": numpy_case(lambda: numpy_mlp_jvp(p, X, T, tX)),
                "mlp-fwd": numpy_case(lambda: [w3.numpy_forward(p, X, T)[-1]])}
    x, tx = lib.const(x0), lib.const(tx0)
    p, X, T, tX = [lib.const(a) for a in params], lib.const(X0), lib.const(T0), lib.const(tX0)
    mlp = lambda inp: w3.autograd_forward(p, inp, T)        # noqa: E731
    return {"chain": jvp_case(lib, w1.autograd_forward, x, tx),
            "chain-fwd": plain_case(lib, w1.autograd_forward, x),
            "mlp": jvp_case(lib, mlp, X, tX),
            "mlp-fwd": plain_case(lib, mlp, X)}
