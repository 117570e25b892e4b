"""W8 Hessian-vector product of W3's MLP loss with respect to all six parameters (double backward):

    g = grad(loss, W, create_graph=True);  Hv = grad(sum_i (g_i * v_i).sum(), W)

Recording under ``create_graph`` and the cost of an HVP relative to a plain gradient: the
variant "grad" times W3's forward + backward in the same interleaved run, so that
"lucid HVP/grad" is lucid's HVP over lucid's own gradient.  There is no NumPy floor (a
hand-written HVP of the MLP is not part of the workload); the HVP is checked against central
differences of W3's hand-written gradient in float64.  The variant "fwd-over-rev" computes the same
Hv forward-over-reverse, as the tangent of the gradient (a dual level, make_dual on the weights
with v as tangent, autograd.grad, unpack_dual), checked against the same reference;
"lucid fwd-over-rev/grad" is its cost over lucid's own gradient.
"""
import numpy as np

from . import _harness as h
from . import w3_mlp_step as w3

ID = "W8"
NAME = "HVP"
DESCRIPTION = "W3's MLP loss; grad(grad(loss, W, create_graph=True) . v, W); fwd + both grads"
METRIC = "fwd+bwd"
NODES = None
TARGETS = {"lucid/torch": 0.7, "lucid HVP/grad": 2.5, "lucid fwd-over-rev/grad": 2.5}
EXTRA_RATIOS = (("lucid HVP/grad", "lucid", "lucid:grad"),
                ("torch HVP/grad", "torch", "torch:grad"),
                ("lucid fwd-over-rev/grad", "lucid:fwd-over-rev", "lucid:grad"),
                ("torch fwd-over-rev/grad", "torch:fwd-over-rev", "torch:grad"))
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
    """Hv as the tangent of the gradient: inside a dual level the weights are made dual with v as
    their tangent, the loss is computed on them, ``autograd.grad`` gives the gradient, and
    ``unpack_dual`` reads the gradient's tangent.  The same code for lucid and torch
    (``torch.autograd.forward_ad``).  Timed: entering the level, make_dual and the loss as the
    forward; the gradient, unpacking and leaving the level as the backward."""
    try:
        fw = h.forward_ad(lib)
    except h.NotAvailable as e:
        return e
    grad = lib.mod.autograd.grad
    box = {}

    def forward():
        fw.enter_dual_level()
        try:
            q = [fw.make_dual(pi, vi) for pi, vi in zip(p, v)]
            return q, w3.autograd_forward(q, X, T)
        except BaseException:
            fw.exit_dual_level()
            raise

    def backward(out):
        q, loss = out
        try:
            box["hv"] = [fw.unpack_dual(gi).tangent for gi in grad(loss, q)]
        finally:
            fw.exit_dual_level()

    def results():
        missing = [i for i, t in enumerate(box["hv"]) if t is None]
        if missing:
            raise AssertionError(f"no tangent reached the gradient of parameter(s) {missing}")
        return [lib.to_numpy(t) for t in box["hv"]]

    return h.Case(forward, backward, results, box.clear)


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
