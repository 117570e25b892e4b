"""W14's generated program: seeded and fixed, every op of its list drawn, values finite, and the
floor's hand-written reverse pass equal to lucid's gradients (float64; the floor rounds its constants to float32, hence 1e-6)."""
import sys

import numpy as np

import lucid
from support.paths import ROOT

sys.path.insert(0, str(ROOT))
from benchmarks import w14_mixed_ops as w14  # noqa: E402


def test_the_program_is_fixed_and_draws_every_op():
    ops = w14.program(2_000)
    assert ops == w14.program(2_000)
    drawn = {op for op, _, _ in ops}
    assert drawn == set(w14.UNARY) | set(w14.BINARY)
    assert any(c is None and len(args) == 2 for _, args, c in ops)      # between tensors
    assert any(c is not None for _, _, c in ops)                         # by constants
    assert all(max(args) < k for k, (_, args, _) in enumerate(ops, w14.INPUTS))


def test_the_floor_reverse_pass_equals_lucids_gradient():
    ops = w14.program(400, seed=3)
    floor = w14.compiled(w14.numpy_source(ops), {"np": np})
    x = [a.astype(np.float64) for a in w14.leaf_values()]
    values = floor["forward"](*x)
    assert all(np.isfinite(v).all() for v in values)
    want = floor["backward"](values)
    forward = w14.compiled(w14.autograd_source(ops), {})["forward"]
    xs = [lucid.tensor(a, requires_grad=True) for a in x]
    loss = forward(lucid, *xs)
    np.testing.assert_allclose(loss.item(), sum(v.sum() for v in values), rtol=1e-6)
    loss.backward()
    for got, ref in zip(xs, want):
        np.testing.assert_allclose(got.grad.numpy(), ref, rtol=1e-6, atol=1e-9)
