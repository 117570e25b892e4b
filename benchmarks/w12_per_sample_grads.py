"""W12 per-sample gradients: an MLP 32-128-128-10 (tanh hidden layers), cross-entropy, batch 64;
the gradient of each example's loss with respect to all six parameters, in float32:

    loss(params, x_i, y_i) = -log_softmax(mlp(params, x_i))[y_i]
    per-example gradients = vmap(grad(loss), in_dims=(None, 0, 0))(params, X, Y)

torch: ``torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))`` on the params tuple.
lucid (the main cell): ``lucid.func.vmap`` of the same, when lucid.func.vmap exists (n/a
otherwise); lucid.func.grad differentiates tensors, so the params tuple is unpacked into
argnums 0-5. lucid's variant "loop": a Python loop of that grad over the 64 examples, stacked
with lucid.stack. The floor: the same gradients by hand, batched (per-example outer products by
einsum 'bi,bj->bij'). The label is picked with gather (torch's vmap refuses indexing by a
batched 0-d tensor). One timed call per repetition ("fwd" column); every cell's 64 x 6
gradients are checked against the floor's before timing.
"""
import numpy as np

from . import _harness as h
from . import _tanh_mlp

ID = "W12"
NAME = "per-sample grads"
DESCRIPTION = ("MLP 32-128-128-10, tanh, cross-entropy, batch 64, float32; "
               "vmap(grad(loss), in_dims=(None, 0, 0)) w.r.t. all 6 parameters")
METRIC = "vmap(grad)"
NODES = None
TARGETS = {"lucid/floor": 1.5, "lucid vmap/loop": 0.1}
EXTRA_RATIOS = (("lucid vmap/loop", "lucid", "lucid:loop"),
                ("lucid loop/torch", "lucid:loop", "torch"),
                ("floor/torch", "numpy", "torch"))
MEMORY = False
ATOL = 1e-4                       # float32 matmuls summed in different orders
SIZES = (32, 128, 128, 10)
BATCH = 64


def values(dtype=np.float32):
    """(params, X, Y): seeded parameters, inputs (BATCH, 32) and labels (BATCH,) int64."""
    rng = np.random.default_rng(h.SEED + 12)
    params = _tanh_mlp.parameters(SIZES, rng, dtype)
    X = rng.standard_normal((BATCH, SIZES[0])).astype(dtype)
    Y = rng.integers(SIZES[-1], size=BATCH).astype(np.int64)
    return params, X, Y


def example_loss(params, x, y):
    """One example's cross-entropy, -log_softmax(logits)[y] (lucid or torch tensors)."""
    logp = _tanh_mlp.forward(params, x).log_softmax(0)
    return -logp.gather(0, y.reshape(1)).sum()


def unpacked_loss(W1, b1, W2, b2, W3, b3, x, y):
    """example_loss with the parameters as six arguments (lucid.func.grad takes tensors)."""
    return example_loss((W1, b1, W2, b2, W3, b3), x, y)


def lucid_example_grad(lucid):
    """(params, x, y) -> the six gradients of one example's loss, by lucid.func.grad."""
    grad = lucid.func.grad(unpacked_loss, argnums=tuple(range(2 * (len(SIZES) - 1))))
    return lambda params, x, y: grad(*params, x, y)


# -- the floor ------------------------------------------------------------------------------------

def tanh_layer_grads(inputs, g_out):
    """Per-example gradients of a layer z = a W + b from dL/dz (B, out) and a (B, in):
    dW_b = a_b^T g_b (einsum 'bi,bj->bij'), db_b = g_b."""
    return [np.einsum("bi,bj->bij", inputs, g_out), g_out]


def numpy_per_example_grads(params, X, Y):
    """Every example's six gradients, batched: softmax(z) - onehot(y) at the logits, back
    through the tanh layers (1 - h^2), outer products per example."""
    W1, b1, W2, b2, W3, b3 = params
    h1 = np.tanh(X @ W1 + b1)
    h2 = np.tanh(h1 @ W2 + b2)
    z = h2 @ W3 + b3
    e = np.exp(z - z.max(axis=1, keepdims=True))
    gz = e / e.sum(axis=1, keepdims=True)
    gz[np.arange(len(Y)), Y] -= 1
    g2 = (gz @ W3.T) * (1 - h2 * h2)
    g1 = (g2 @ W2.T) * (1 - h1 * h1)
    return tanh_layer_grads(X, g1) + tanh_layer_grads(h1, g2) + tanh_layer_grads(h2, gz)


def reference(variant):
    """The floor's per-example gradients (for the variant "loop", which has no floor cell)."""
    return numpy_per_example_grads(*values())


# -- the cases ------------------------------------------------------------------------------------

def lucid_loop(lucid, params, X, Y):
    """A Python loop of lucid.func.grad over the examples, each parameter's gradients stacked."""
    example_grad = lucid_example_grad(lucid)
    per_example = [example_grad(params, X[i], Y[i]) for i in range(X.shape[0])]
    return [lucid.stack(list(g)) for g in zip(*per_example)]


def setup(lib, quick):
    params0, X0, Y0 = values()
    if lib.name == "numpy":
        params, X, Y = [a.copy() for a in params0], X0.copy(), Y0.copy()
        return h.call_case(lib, lambda: numpy_per_example_grads(params, X, Y))
    params = tuple(lib.const(a) for a in params0)
    X, Y = lib.const(X0), lib.const(Y0)
    if lib.name == "torch":
        per_sample = lib.mod.func.vmap(lib.mod.func.grad(example_loss), in_dims=(None, 0, 0))
        return h.call_case(lib, lambda: list(per_sample(params, X, Y)))
    try:
        per_sample = h.func_vmap(lib)(lucid_example_grad(lib.mod), in_dims=(None, 0, 0))
        vmapped = h.call_case(lib, lambda: list(per_sample(params, X, Y)))
    except h.NotAvailable as e:
        vmapped = e
    return {"vmap": vmapped, "loop": h.call_case(lib, lambda: lucid_loop(lib.mod, params, X, Y))}
