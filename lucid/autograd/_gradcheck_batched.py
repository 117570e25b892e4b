"""gradcheck's check_batched_grad: for each output, the vjps of a batch of random cotangents
computed batched (lucid.func.vmap over fn's vjp, so every backward formula, a custom Function's
backward included, runs on batched gradients) equal the loop over the batch (autograd.grad with
is_grads_batched, one engine pass per cotangent). check_batched_forward_grad: for each input, the
jvps of a batch of random tangents under vmap equal the loop of jvps."""
import numpy as np

from .. import _core

BATCH = 2

_WHY = ("check_batched_grad runs fn's vjp under lucid.func.vmap with a batch of cotangents: an op "
        "or custom Function whose forward or backward cannot run under vmap (no batching rule, "
        "no vmap staticmethod or generate_vmap_rule, data-dependent Python control flow) fails "
        "it; pass check_batched_grad=False to skip the check")


def batched_grad_check(fn, inputs, wanted, batched_fn=None):
    """The first failure of the batched-gradient check (None when it passes); batched_fn: fn's
    form that can run under vmap, when fn itself cannot."""
    from .._core import grad
    from .gradcheck import _tensor_outputs
    batched_fn = fn if batched_fn is None else batched_fn
    diff = tuple(inputs[i] for i in wanted)
    rng = np.random.default_rng(0)
    with _enable_grad():
        outputs = _tensor_outputs(fn, inputs)
    for r, out in enumerate(outputs):
        if not out.requires_grad:
            continue
        cotangents = _core._from_array(
            rng.standard_normal((BATCH,) + tuple(out.shape)).astype(np.dtype(out.dtype)))
        with _enable_grad():
            looped = grad(out, diff, cotangents, retain_graph=True, allow_unused=True,
                          is_grads_batched=True)
        try:
            batched = _vmapped_vjp(batched_fn, inputs, wanted, r)(cotangents)
        except RuntimeError as e:
            return f"While computing batched gradients, got: {e}\n\n{_WHY}"
        for col, (a, b) in enumerate(zip(batched, looped)):
            a = a.detach().numpy()
            b = np.zeros(a.shape) if b is None else b.detach().numpy()
            if not np.allclose(a, b):
                return _differs(f"batched gradients (check_batched_grad) for output {r} and "
                                f"input {wanted[col]}: the vjps of {BATCH} cotangents", a, b, _WHY)
    return None


def _differs(what, batched, loop, why):
    """The message of a batched result that differs from the loop's."""
    return (f"While checking {what} computed under vmap differ from the loop over them.\n"
            f"batched:\n{batched}\nloop:\n{loop}\n\n{why}")


_WHY_FORWARD = ("check_batched_forward_grad runs fn's jvp under lucid.func.vmap with a batch of "
                "tangents: an op or custom Function whose forward or jvp cannot run under vmap "
                "fails it; pass check_batched_forward_grad=False to skip the check")


def batched_forward_grad_check(fn, inputs, wanted):
    """The first failure of the batched forward-gradient check (None when it passes): per input
    in wanted, the jvps of BATCH random tangents, vmapped, against one jvp per tangent."""
    from .. import func
    rng = np.random.default_rng(1)
    for i in wanted:
        x = inputs[i]
        tangents = _core._from_array(
            rng.standard_normal((BATCH,) + tuple(x.shape)).astype(np.dtype(x.dtype)))
        jvp_of = _jvp_at(fn, inputs, i)
        looped = [jvp_of(tangents[b]) for b in range(BATCH)]
        try:
            batched = func.vmap(jvp_of)(tangents)
        except RuntimeError as e:
            return f"While computing batched gradients, got: {e}\n\n{_WHY_FORWARD}"
        for r, got in enumerate(batched):
            a = got.detach().numpy()
            b = np.stack([row[r].detach().numpy() for row in looped])
            if not np.allclose(a, b):
                return _differs(f"batched forward gradients (check_batched_forward_grad) for "
                                f"input {i} and output {r}: the jvps of {BATCH} tangents", a, b,
                                _WHY_FORWARD)
    return None


def _jvp_at(fn, inputs, i):
    """tangent -> the tangents of fn's tensor outputs for that tangent on inputs[i] (the others
    held constant), by lucid.func.jvp."""
    from .. import func
    from .._batching import transforms

    def at(xi):
        args = [a.detach() if transforms.tensor_or_batched(a) else a for a in inputs]
        args[i] = xi
        value = fn(*args)
        items = value if isinstance(value, (tuple, list)) else (value,)
        return tuple(o for o in items if transforms.tensor_or_batched(o))

    def jvp_of(t):
        return func.jvp(at, (inputs[i].detach(),), (t,))[1]
    return jvp_of


def _enable_grad():
    from .._grad_mode import enable_grad
    return enable_grad()


def _vmapped_vjp(fn, inputs, wanted, r):
    """cotangents -> the vjps of fn's output r with respect to inputs[wanted], vmapped over the
    cotangents' first dim."""
    from .. import func
    from .._batching import transforms

    def output_r(*diff):
        args = list(inputs)
        for i, d in zip(wanted, diff):
            args[i] = d
        value = fn(*args)
        items = value if isinstance(value, (tuple, list)) else (value,)
        return [o for o in items if transforms.tensor_or_batched(o)][r]

    def vjp_of(v):
        return func.vjp(output_r, *(inputs[i] for i in wanted))[1](v)
    return func.vmap(vjp_of)
