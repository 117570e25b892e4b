"""W11 a real optimisation: multinomial logistic regression on scikit-learn's digits, L-BFGS-B.

    minimize over W (64x10), b (10):  mean_i -log softmax(X W + b)[i, y_i] + LAM/2 ||W||^2

with ``scipy.optimize.minimize(method="L-BFGS-B", jac=True)`` from zeros to its default
tolerance, in float64 (X = digits / 16, 1797 x 64).  The objective and its gradient come from
each library: lucid and torch by autograd (log-softmax written as z - max - log(sum(exp)), the
max detached: it is a constant shift), the floor by a hand-written gradient.  One timed
repetition is one whole solve (the "fwd" column).  Checked before timing: the gradient at a seeded
point against the floor's, and each solve's iterations (within +-2) and final loss (1e-5
relative) against the floor's solve.
"""
import numpy as np

from . import _harness as h

ID = "W11"
NAME = "L-BFGS digits"
DESCRIPTION = ("multinomial logistic regression, digits 1797x64, 10 classes, L2 1e-3; "
               "scipy L-BFGS-B from zeros, float64; one solve")
METRIC = "solve"
NODES = None
TARGETS = {"lucid/torch": 0.55}
MEMORY = False
SHOW_CHECK = True                 # the table's notes show iterations and losses
LAM = 1e-3
CLASSES = 10
ITERATIONS_TOLERANCE = 2
LOSS_RTOL = 1e-5
GRAD_RTOL = 1e-9


def data():
    """(X float64 in [0, 1], labels int64), or NotAvailable with the reason."""
    try:
        from sklearn.datasets import load_digits
    except ImportError as e:
        raise h.NotAvailable(f"scikit-learn not importable ({h.first_line(e)}); "
                             f"pip install -e '.[bench]'") from None
    digits = load_digits()
    return digits.data.astype(np.float64) / 16.0, digits.target.astype(np.int64)


def unpack(w, features):
    return w[:features * CLASSES].reshape(features, CLASSES), w[features * CLASSES:]


def numpy_objective(X, y):
    """f(w) and its gradient, by hand: d/dz of the mean NLL is (softmax(z) - onehot(y)) / n."""
    rows = np.arange(len(y))

    def fun(w):
        W, b = unpack(w, X.shape[1])
        z = X @ W + b
        z -= z.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        f = -logp[rows, y].mean() + 0.5 * LAM * np.dot(W.ravel(), W.ravel())
        dz = np.exp(logp)
        dz[rows, y] -= 1.0
        dz /= len(y)
        return f, np.concatenate([(X.T @ dz + LAM * W).ravel(), dz.sum(axis=0)])
    return fun


def autograd_objective(lib, X, y):
    """f(w) and its gradient by lucid's or torch's autograd (the same code for both)."""
    Xt = lib.const(X)
    rows, yt = (np.arange(len(y)), y) if lib.name == "lucid" else \
        (lib.mod.arange(len(y)), lib.const(y))
    features = X.shape[1]

    def fun(w):
        W0, b0 = unpack(w, features)
        W, b = lib.leaf(W0), lib.leaf(b0)
        z = Xt @ W + b
        shifted = z - z.amax(dim=1, keepdim=True).detach()
        logp = shifted - shifted.exp().sum(dim=1, keepdim=True).log()
        loss = -logp[rows, yt].mean() + 0.5 * LAM * (W * W).sum()
        loss.backward()
        return loss.item(), np.concatenate([lib.to_numpy(W.grad).ravel(),
                                            lib.to_numpy(b.grad).ravel()])
    return fun


def setup(lib, quick):
    try:
        from scipy.optimize import minimize
    except ImportError as e:
        raise h.NotAvailable(f"scipy not importable ({h.first_line(e)}); "
                             f"pip install -e '.[bench]'") from None
    X, y = data()
    fun = numpy_objective(X, y) if lib.name == "numpy" else autograd_objective(lib, X, y)
    w0 = np.zeros(X.shape[1] * CLASSES + CLASSES)
    probe = 0.1 * np.random.default_rng(h.SEED + 11).standard_normal(w0.size)
    box = {}

    def solve():
        box["result"] = minimize(fun, w0, jac=True, method="L-BFGS-B")

    def checked():
        r = box["result"]
        return [fun(probe)[1], np.array([r.nit]), np.array([r.fun])]

    return h.Case(solve, None, checked, box.clear)


def check(got, ref):
    """The probe gradient to GRAD_RTOL; iterations within +-2; final loss to LOSS_RTOL."""
    ok, msg = h.compare(got[:1], ref[:1], GRAD_RTOL, GRAD_RTOL)
    (nit,), (ref_nit,), (loss,), (ref_loss,) = got[1], ref[1], got[2], ref[2]
    rel = abs(loss - ref_loss) / abs(ref_loss)
    summary = (f"{nit} iterations (floor {ref_nit}), final loss {loss:.8g} "
               f"(relative difference to the floor's {rel:.1e})")
    if not ok:
        return False, "probe gradient: " + msg
    if abs(nit - ref_nit) > ITERATIONS_TOLERANCE or rel > LOSS_RTOL:
        return False, summary
    return True, summary
