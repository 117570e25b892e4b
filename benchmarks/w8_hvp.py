"""W8 Hessian-vector product of W3's MLP loss with respect to all six parameters (double backward):

    g = grad(loss, W, create_graph=True);  Hv = grad(sum_i (g_i * v_i).sum(), W)

Recording under ``create_graph`` and the cost of an HVP relative to a plain gradient: the
variant "grad" times W3's forward + backward in the same interleaved run, so that
"lucid HVP/grad" is lucid's HVP over lucid's own gradient.  There is no NumPy floor (a
hand-written HVP of the MLP is not part of the workload); the HVP is checked against central
differences of W3's hand-written gradient in float64.  The variant "fwd-over-rev" is the hook for
forward-over-reverse (jvp of the gradient), to be filled in when lucid has forward mode.
"""
import numpy as np

from . import _harness as h
from . import w3_mlp_step as w3

ID = "W8"
NAME = "HVP"
DESCRIPTION = "W3's MLP loss; grad(grad(loss, W, create_graph=True) . v, W); fwd + both grads"
METRIC = "fwd+bwd"
NODES = None
TARGETS = {"lucid/torch": 0.7, "lucid HVP/grad": 2.5}
EXTRA_RATIOS = (("lucid HVP/grad", "lucid", "lucid:grad"),
                ("torch HVP/grad", "torch", "torch:grad"))
MEMORY = False
ATOL = 1e-3                       # float32 second derivatives against a float64 reference
FD_STEP = 1e-4                    # central differences in float64: error ~1e-8 relative


def directions(params):
    """The seeded vector v, one array per parameter."""
    rng = np.random.default_rng(h.SEED + 8)
    return [rng.standard_normal(p.shape).astype(p.dtype) for p in params]


def reference(variant):
    """The expected result per variant: Hv by central differences of the hand-written gradient
    (float64), or the hand-written gradient itself."""
    params, X, T = w3.values()
    if variant == "grad":
        return w3.numpy_backward(params, X, w3.numpy_forward(params, X, T))
    p64, X64, T64 = [a.astype(np.float64) for a in params], X.astype(np.float64), T.astype(
        np.float64)
    v = [a.astype(np.float64) for a in directions(params)]

    def gradient(shift):
        p = [a + shift * d for a, d in zip(p64, v)]
        return w3.numpy_backward(p, X64, w3.numpy_forward(p, X64, T64))

    plus, minus = gradient(FD_STEP), gradient(-FD_STEP)
    return [((a - b) / (2 * FD_STEP)).astype(np.float32) for a, b in zip(plus, minus)]


def hvp_case(lib, p, X, T, v):
    grad = lib.mod.autograd.grad
    box = {}

    def backward(loss):
        g = grad(loss, p, create_graph=True)
        dot = sum((gi * vi).sum() for gi, vi in zip(g, v))
        box["hv"] = grad(dot, p)

    return h.Case(lambda: w3.autograd_forward(p, X, T), backward,
                  lambda: [lib.to_numpy(t) for t in box["hv"]], box.clear)


def forward_over_reverse(lib, p, X, T, v):
    """Hook: Hv as the jvp of the gradient along v (one forward-mode pass over the reverse pass).

    To add with lucid's forward mode: return an ``h.Case`` whose backward computes
    ``jvp(lambda *q: grad(loss(q), q), p, v)`` (lucid) and the same with
    ``torch.func.jvp(torch.func.grad(...))`` (torch), and ``grads()`` the tangent output.  The
    expected result is already there: ``reference`` gives Hv for every variant but "grad".
    """
    return h.NotAvailable("forward-over-reverse comes with forward-mode AD (not in lucid yet)")


def setup(lib, quick):
    if lib.name == "numpy":
        raise h.NotAvailable("no NumPy floor for W8 (HVP and grad are checked against "
                             "central differences of W3's hand-written gradient)")
    params, X0, T0 = w3.values()
    p = [lib.leaf(a) for a in params]
    X, T = lib.const(X0), lib.const(T0)
    v = [lib.const(a) for a in directions(params)]
    return {"hvp": hvp_case(lib, p, X, T, v),
            "grad": h.autograd_case(lib, p, lambda: w3.autograd_forward(p, X, T)),
            "fwd-over-rev": forward_over_reverse(lib, p, X, T, v)}
