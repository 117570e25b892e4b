"""opcheck's vmap check: the op under lucid.func.vmap over a batch of 3 equals the loop over it.
Passed for lucid ops and Functions that batch (a vmap staticmethod, generate_vmap_rule), skipped
('not supported') for a Function that says nothing of vmap, failed (naming the op) for a wrong
rule, a call that raises under vmap, and a typed op that refuses batched tensors."""
import numpy as np
import pytest

import lucid
from lucid.autograd import Function
from lucid.testing import VMAP_SCALES, OpCheckError, opcheck
from support.shared_functions import Square as OldStyleSquare


def f64(*shape, seed=0):
    return lucid.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=lucid.float64)


SAMPLES = [(f64(3, 4),), (f64(5, seed=1),)]


def vmap_results(report):
    return [r for r in report.results if r.check == "vmap"]


class NumpyTanh(Function):
    """tanh computed in NumPy, with a vmap staticmethod (elementwise: the batch dim stays)."""

    @staticmethod
    def forward(x):
        return lucid.tensor(np.asarray(np.tanh(x.detach().numpy())))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(output)

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * (1 - y * y)

    @staticmethod
    def vmap(info, in_dims, x):
        return NumpyTanh.apply(x), in_dims[0]


class ReversedBatch(NumpyTanh):
    """NumpyTanh whose rule reverses the batch: wrong only under vmap."""

    @staticmethod
    def vmap(info, in_dims, x):
        return ReversedBatch.apply(x.movedim(in_dims[0], 0).flip(0)), 0


class BothWays(NumpyTanh):
    """A vmap staticmethod and generate_vmap_rule at once: an error under vmap, not 'not
    supported'."""
    generate_vmap_rule = True


def scaled_sum(x, w, k):
    return (x * w).sum(-1) * k


def test_lucid_ops_and_batching_functions_pass():
    two = [(f64(3, 4), f64(4, seed=2), 2.0), (f64(2, 5, seed=3), f64(5, seed=4), -1.0)]
    report = opcheck(scaled_sum, two)
    assert report.status("vmap") == "passed"
    assert all(r.detail == f"batch of {len(VMAP_SCALES)}" for r in vmap_results(report))
    assert opcheck(NumpyTanh.apply, SAMPLES).status("vmap") == "passed"


def test_a_function_without_vmap_support_is_not_supported_not_failed():
    report = opcheck(OldStyleSquare.apply, SAMPLES)
    assert report.status("vmap") == "skipped" and report.ok
    for r in vmap_results(report):
        assert r.detail.startswith("not supported:") and "setup_context" in r.detail
    assert "vmap                             skipped: not supported" in str(report)


def test_a_wrong_rule_fails_naming_the_op():
    with pytest.raises(OpCheckError, match="ReversedBatch.apply under vmap: vmapped output 0 "
                                           "differs") as info:
        opcheck(ReversedBatch.apply, SAMPLES)
    assert info.value.check == "vmap" and info.value.sample == 0
    failed = {r.check for r in info.value.report.failed()}
    assert failed == {"vmap"}, info.value.report


@pytest.mark.parametrize("fn, words", [
    (BothWays.apply, "BothWays.apply raised under vmap: RuntimeError: .*generate_vmap_rule"),
    (lambda x: x * 2 if x.sum().item() > -1e9 else x,
     "<lambda> raised under vmap: RuntimeError: vmap: .item\\(\\) on a batched tensor"),
])
def test_a_call_that_raises_under_vmap_fails_naming_the_op(fn, words):
    with pytest.raises(OpCheckError, match=words) as info:
        opcheck(fn, SAMPLES[:1])
    assert {r.check for r in info.value.report.failed()} == {"vmap"}, info.value.report


def test_an_op_that_refuses_batched_tensors_fails_naming_it():
    def typed_op(x):                      # stands for a native `def op(Tensor x)`: no rule
        if not isinstance(x, lucid.Tensor):
            raise TypeError(f"Argument 'x' has incorrect type (expected Tensor, got "
                            f"{type(x).__name__})")
        return x * 3.0

    with pytest.raises(OpCheckError, match="check 'vmap' failed .*typed_op raised under vmap: "
                                           "TypeError: Argument 'x' has incorrect type.*"
                                           "register_vmap_rule") as info:
        opcheck(typed_op, SAMPLES[:1])
    assert {r.check for r in info.value.report.failed()} == {"vmap"}, info.value.report


def test_the_vmap_check_leaves_the_samples_alone():
    x = f64(3, 4)
    before = x.numpy().copy()
    opcheck(NumpyTanh.apply, [(x,)])
    np.testing.assert_array_equal(x.numpy(), before)
    assert x.grad is None and not x.requires_grad
