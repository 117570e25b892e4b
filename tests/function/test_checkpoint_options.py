"""checkpoint's PyTorch keywords (context_fn, determinism_check, debug, early_stop),
set_checkpoint_early_stop and selective checkpointing (API.md §13), against torch when it is
installed."""
import functools

import numpy as np
import pytest

import lucid
from lucid.autograd import Function
from lucid.utils.checkpoint import (CheckpointPolicy, SelectiveCheckpointContext, checkpoint,
                                    create_selective_checkpoint_contexts,
                                    set_checkpoint_early_stop)

try:
    import torch
    import torch.utils.checkpoint as tcp
except ImportError:          # pragma: no cover - torch is only a comparison
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed; "
                                 "pip install torch==2.13.0 to compare with PyTorch")


def data(rng):
    x = lucid.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    w = lucid.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    return x, w


def block(h, w, log=None):
    if log is not None:
        log.append("run")
    y = (h @ w).tanh().sin()
    if log is not None:
        log.append("end")
    return y


def plain_grads(x, w):
    return [g.numpy() for g in lucid.autograd.grad(block(x, w).sum(), (x, w))]


def grads(y, x, w):
    return [g.numpy() for g in lucid.autograd.grad(y.sum(), (x, w))]


def assert_grads(got, want):
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# ---- early stop -------------------------------------------------------------------------------

def run_early_stop(lib, **kw):
    """What the re-run logs (its end is after the last op that saves)."""
    log = []
    if lib == "torch":
        x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
        w = torch.randn(3, 3, dtype=torch.float64, requires_grad=True)
        fn = lambda h, w: block(h, w, log)  # noqa: E731
        if kw.pop("context", None) is not None:
            with tcp.set_checkpoint_early_stop(False):
                y = tcp.checkpoint(fn, x, w, use_reentrant=False, **kw)
        else:
            y = tcp.checkpoint(fn, x, w, use_reentrant=False, **kw)
    else:
        x, w = data(np.random.default_rng(0))
        fn = lambda h, w: block(h, w, log)  # noqa: E731
        if kw.pop("context", None) is not None:
            with set_checkpoint_early_stop(False):
                y = checkpoint(fn, x, w, **kw)
        else:
            y = checkpoint(fn, x, w, **kw)
    y.sum().backward()
    return log


EARLY_STOP_CASES = [({}, ["run", "end", "run"]), ({"early_stop": False}, ["run", "end"] * 2),
                    ({"context": False}, ["run", "end"] * 2),
                    ({"context": False, "early_stop": True}, ["run", "end"] * 2)]


@pytest.mark.parametrize("kw,expected", EARLY_STOP_CASES)
def test_early_stop(kw, expected):
    assert run_early_stop("lucid", **dict(kw)) == expected


@needs_torch
@pytest.mark.parametrize("kw,expected", EARLY_STOP_CASES)
def test_early_stop_is_torchs(kw, expected):
    assert run_early_stop("torch", **dict(kw)) == expected


def test_early_stop_gradients_and_errors(rng):
    x, w = data(rng)
    want = plain_grads(x, w)
    with set_checkpoint_early_stop(False):
        y = checkpoint(block, x, w)
    assert_grads(grads(y, x, w), want)
    with pytest.raises(TypeError, match="enable"):
        with set_checkpoint_early_stop("no"):
            pass
    with pytest.raises(TypeError, match="early_stop"):
        checkpoint(block, x, w, early_stop=None)
    assert x.grad is None and w.grad is None


# ---- context_fn, determinism_check, debug ----------------------------------------------------

class Logged:
    def __init__(self, log, name):
        self.log, self.name = log, name

    def __enter__(self):
        self.log.append(self.name + " in")

    def __exit__(self, *exc):
        self.log.append(self.name + " out")


def run_context_fn(lib):
    log = []
    context_fn = lambda: (Logged(log, "forward"), Logged(log, "recompute"))  # noqa: E731
    fn = lambda h, w: block(h, w, log)  # noqa: E731
    if lib == "torch":
        x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
        w = torch.randn(3, 3, dtype=torch.float64, requires_grad=True)
        y = tcp.checkpoint(fn, x, w, use_reentrant=False, context_fn=context_fn)
    else:
        x, w = data(np.random.default_rng(0))
        y = checkpoint(fn, x, w, context_fn=context_fn)
    log.append("backward")
    y.sum().backward()
    return log


CONTEXT_LOG = ["forward in", "run", "end", "forward out", "backward", "recompute in", "run",
               "recompute out"]


def test_context_fn_wraps_forward_and_recompute():
    assert run_context_fn("lucid") == CONTEXT_LOG


@needs_torch
def test_context_fn_is_torchs():
    assert run_context_fn("torch") == CONTEXT_LOG


@pytest.mark.parametrize("context_fn,error", [
    (3, TypeError), (lambda: None, TypeError), (lambda: (1, 2), TypeError),
])
def test_bad_context_fn(rng, context_fn, error):
    x, w = data(rng)
    with pytest.raises(error, match="context_fn"):
        checkpoint(block, x, w, context_fn=context_fn)
    assert x.grad is None and w.grad is None


def test_reentrant_refuses_context_fn_and_debug(rng):
    x, w = data(rng)
    for kw in ({"context_fn": lambda: (None, None)}, {"debug": True}):
        with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
            checkpoint(block, x, w, use_reentrant=True, **kw)
    assert x.grad is None


@needs_torch
def test_reentrant_refusal_is_torchs():
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        tcp.checkpoint(torch.sin, x, use_reentrant=True, debug=True)


def test_determinism_check(rng):
    x, w = data(rng)
    with pytest.raises(ValueError, match="determinism_check should be one of"):
        checkpoint(block, x, w, determinism_check="xx")
    scale = {"value": 1.0}

    def drifting(h):
        return (h * scale["value"]).exp()

    y = checkpoint(drifting, x, determinism_check="none")
    scale["value"] = 2.0                       # the re-run sees other values: no check of them
    (g,) = lucid.autograd.grad(y.sum(), (x,))
    # exp's backward uses its saved output, recomputed from the new scale; mul's keeps 1
    np.testing.assert_allclose(g.numpy(), np.exp(x.detach().numpy() * 2))

    calls = {"n": 0}

    def changes_shape(h):
        calls["n"] += 1
        return (h if calls["n"] == 1 else h[:2]).exp()

    y = checkpoint(changes_shape, x, debug=True)
    with pytest.raises(RuntimeError, match="ExpBackward.*during recomputation: ExpBackward"):
        y.sum().backward()
    assert x.grad is None


@needs_torch
def test_determinism_check_value_error_is_torchs():
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    with pytest.raises(ValueError, match="determinism_check should be one of"):
        tcp.checkpoint(torch.sin, x, use_reentrant=False, determinism_check="xx")


# ---- selective checkpointing -----------------------------------------------------------------

def test_policy_sees_lucid_ops_and_saves_what_it_says(rng):
    x, w = data(rng)
    want = plain_grads(x, w)
    seen, log = [], []

    def policy(ctx, op, tensor):
        assert isinstance(ctx, SelectiveCheckpointContext) and ctx.is_recompute is False
        assert isinstance(tensor, lucid.Tensor)
        seen.append(op)
        return CheckpointPolicy.MUST_SAVE if op is lucid.matmul else \
            CheckpointPolicy.PREFER_RECOMPUTE

    context_fn = functools.partial(create_selective_checkpoint_contexts, policy)
    y = checkpoint(lambda h, w: block(h, w, log), x, w, context_fn=context_fn)
    assert seen == [lucid.matmul, lucid.matmul, lucid.tanh, lucid.sin]
    assert_grads(grads(y, x, w), want)
    assert log == ["run", "end", "run"]          # tanh's and sin's saved tensors: re-run


@pytest.mark.parametrize("saved,reruns", [
    ([lucid.matmul, lucid.tanh, lucid.sin], 0), ([lucid.matmul], 1), ([], 1),
])
def test_op_list(rng, saved, reruns):
    x, w = data(rng)
    want = plain_grads(x, w)
    log = []
    context_fn = functools.partial(create_selective_checkpoint_contexts, saved)
    y = checkpoint(lambda h, w: block(h, w, log), x, w, context_fn=context_fn)
    assert_grads(grads(y, x, w), want)
    assert log.count("run") == 1 + reruns


def test_custom_function_op_is_its_node_name(rng):
    class Cube(Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t * t

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return 3 * g * t * t

    x, _ = data(rng)
    seen = []

    def policy(ctx, op, tensor):
        seen.append(op)
        return CheckpointPolicy.MUST_SAVE

    y = checkpoint(lambda h: Cube.apply(h).exp(), x,
                   context_fn=functools.partial(create_selective_checkpoint_contexts, policy))
    (g,) = lucid.autograd.grad(y.sum(), (x,))
    t = x.detach().numpy()
    np.testing.assert_allclose(g.numpy(), np.exp(t ** 3) * 3 * t * t)
    assert seen == ["CubeBackward", lucid.exp]


def test_saved_tensor_changed_in_place_raises(rng):
    x, w = data(rng)
    kept = []

    def policy(ctx, op, tensor):
        return CheckpointPolicy.MUST_SAVE

    def fn(h, w):
        z = h @ w
        kept.append(z)
        return z.tanh()

    y = checkpoint(fn, x, w,
                   context_fn=functools.partial(create_selective_checkpoint_contexts, policy))
    with lucid.no_grad():
        y.mul_(2)                                   # tanh saved its output: now changed
    with pytest.raises(RuntimeError, match="modified by an in-?place operation"):
        y.sum().backward()


@pytest.mark.parametrize("arg,error,word", [
    (3, TypeError, "policy_fn_or_list must be either a function or a list of ops"),
    ([lucid.matmul, 3], TypeError, "ops\\[1\\]"),
])
def test_bad_policies(arg, error, word):
    with pytest.raises(error, match=word):
        create_selective_checkpoint_contexts(arg)


def test_policy_returning_something_else_raises(rng):
    x, w = data(rng)
    context_fn = functools.partial(create_selective_checkpoint_contexts, lambda *a: "save")
    with pytest.raises(TypeError, match="CheckpointPolicy"):
        checkpoint(block, x, w, context_fn=context_fn)
    with pytest.raises(ValueError, match="allow_cache_entry_mutation"):
        create_selective_checkpoint_contexts([], allow_cache_entry_mutation=True)
    assert x.grad is None


@needs_torch
def test_policy_names_and_bad_policy_error_are_torchs():
    assert [p.name for p in CheckpointPolicy] == [p.name for p in tcp.CheckpointPolicy]
    with pytest.raises(TypeError, match="policy_fn_or_list must be either a function or a "
                                        "list of ops"):
        tcp.create_selective_checkpoint_contexts(3)
