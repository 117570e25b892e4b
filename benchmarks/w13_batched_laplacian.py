"""W13 batched Laplacian: f: R^2 -> R a 2-64-64-1 tanh MLP (its one output as a scalar); the
Laplacian, the trace of the Hessian, at 256 points, in float32:

    laplacian(x_b) = d^2 f / dx_1^2 + d^2 f / dx_2^2,   H = vmap(hessian(f))(X), trace per point

torch: ``torch.func.vmap(torch.func.hessian(f))`` then the trace of each 2x2 Hessian (the same
code as lucid's main cell, ``lucid.func.vmap``, when that exists; n/a otherwise). lucid's variant
"loop": a Python loop of ``lucid.func.hessian(f)`` over the points, ``lucid.trace`` of each,
stacked. The floor: forward-mode second derivatives by hand, batched over the points and the two
input directions (value, first and second derivative along e_k through every layer; the two
pure second derivatives summed). One timed call per repetition ("fwd" column); every cell's
256 Laplacians are checked against the floor's before timing.
"""
import numpy as np

from . import _harness as h
from . import _tanh_mlp

ID = "W13"
NAME = "batched Laplacian"
DESCRIPTION = ("Laplacian (trace of the Hessian) of a 2-64-64-1 tanh MLP at 256 points, "
               "float32; vmap(hessian(f)), trace per point")
METRIC = "vmap(hess)"
NODES = None
TARGETS = {"lucid/torch": 0.25}
EXTRA_RATIOS = (("lucid loop/torch", "lucid:loop", "torch"),
                ("floor/torch", "numpy", "torch"))
MEMORY = False
ATOL = 1e-4                       # float32 second derivatives summed in different orders
SIZES = (2, 64, 64, 1)
POINTS = 256


def values(dtype=np.float32):
    """(params, X): seeded parameters and POINTS points of shape (POINTS, 2)."""
    rng = np.random.default_rng(h.SEED + 13)
    params = _tanh_mlp.parameters(SIZES, rng, dtype)
    return params, rng.standard_normal((POINTS, SIZES[0])).astype(dtype)


def scalar_mlp(params):
    """f(x) for one point x (2,): the MLP's single output as a 0-d tensor (lucid or torch)."""
    return lambda x: _tanh_mlp.forward(params, x).sum()


def vmap_laplacian(func, params, X):
    """func.vmap(func.hessian(f))(X), then the trace of each Hessian (torch.func or lucid.func)."""
    H = func.vmap(func.hessian(scalar_mlp(params)))(X)
    return H.diagonal(dim1=-2, dim2=-1).sum(-1)


def lucid_loop_laplacian(lucid, params, X):
    """A Python loop of lucid.func.hessian(f) over the points, the trace of each, stacked."""
    hessian = lucid.func.hessian(scalar_mlp(params))
    return lucid.stack([lucid.trace(hessian(X[b])) for b in range(X.shape[0])])


# -- the floor ------------------------------------------------------------------------------------

def tanh_second_order(z, dz, d2z):
    """a = tanh z and its first and second derivatives along a direction, from z's:
    a' = (1 - a^2) z',  a'' = (1 - a^2) (z'' - 2 a z'^2)."""
    a = np.tanh(z)
    s = 1 - a * a
    return a, s * dz, s * (d2z - 2 * a * dz * dz)


def numpy_laplacian(params, X):
    """Forward-mode second derivatives by hand, batched: the tangent arrays hold one slice per
    input direction e_k (k = 0, 1); the input's second derivative is zero and a linear layer maps
    value, first and second derivative alike (its bias only the value)."""
    W1, b1 = params[0], params[1]
    a, da, d2a = tanh_second_order(X @ W1 + b1, W1[:, None, :], 0.0)   # z' = e_k W1 = W1[k]
    for k in range(2, len(params) - 2, 2):
        W, b = params[k], params[k + 1]
        a, da, d2a = tanh_second_order(a @ W + b, da @ W, d2a @ W)
    return (d2a @ params[-2]).sum(axis=0)[:, 0]     # the sum over directions of f''(x_b; e_k)


def setup(lib, quick):
    params0, X0 = values()
    if lib.name == "numpy":
        params, X = [a.copy() for a in params0], X0.copy()
        return h.call_case(lib, lambda: [numpy_laplacian(params, X)])
    params = [lib.const(a) for a in params0]
    X = lib.const(X0)
    try:
        func = lib.mod.func
        h.func_vmap(lib)
        vmapped = h.call_case(lib, lambda: [vmap_laplacian(func, params, X)])
    except h.NotAvailable as e:
        vmapped = e
    if lib.name == "torch":
        return vmapped
    return {"vmap": vmapped,
            "loop": h.call_case(lib, lambda: [lucid_loop_laplacian(lib.mod, params, X)])}


def reference(variant):
    """The floor's Laplacians (for the variant "loop", which has no floor cell)."""
    return [numpy_laplacian(*values())]
