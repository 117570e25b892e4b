"""Fused tangents (Note [Fused tangents]; their arrays come from Note [Array pool]): the
elementwise ops on fast arrays compute their jvp with the typed loops inside the op call, and
leave it a bare array that becomes a tensor only when asked for. Each fused tangent is checked bit
for bit against the general path (the same op with a tangent that requires grad, under grad mode,
which the fused path leaves to the general rules) and against central differences in float64;
which path ran is seen from outside: asking for a fused output's tangent makes its tensor
(fused_outputs), asking for a general one's makes none.
"""
import gc
import sys
import tracemalloc

import numpy as np
import pytest

import lucid
import lucid.autograd.forward_ad as fwAD
from support.allocations import fill_pool, made_in, tracing

TENSOR_BYTES = sys.getsizeof(lucid.tensor(0.0))     # what one tensor object takes
FREE_LIST = 256                  # dead tensors kept for reuse (@cython.freelist in tensor/tensor.pxi)


def _bytes_to_ask(outs):
    """The memory the Python allocators hand out while the tangent of each of outs is asked for
    (the tangents kept)."""
    tangents = [None] * len(outs)
    with tracing():
        before = tracemalloc.get_traced_memory()[0]
        for k, out in enumerate(outs):
            tangents[k] = fwAD.unpack_dual(out).tangent
        return tracemalloc.get_traced_memory()[0] - before


def fused_outputs(outs):
    """How many of outs (dual tensors) hold the bare tangent a fused op leaves: the tangent tensors
    the first ask of every tangent makes, counted as its memory beyond a second ask's (which gets
    the same tensors: the ask's own cost), in tensors. So that each tensor an ask makes is a new
    allocation, every output is first viewed once (a view makes its base's shared version counter,
    which unpack_dual's primal alias would make here) and Tensor's free list is emptied but for
    the one tensor that alias takes and gives back on every ask."""
    views = [out.detach() for out in outs]
    del views
    holders = [lucid.tensor(0.0) for _ in range(FREE_LIST + 1)]
    holders.pop()
    enabled = gc.isenabled()     # no collection inside the traced asks: garbage of earlier tests
    gc.disable()                 # freed there shrank the count (seen once, a full run on 3.13)
    try:
        first = _bytes_to_ask(outs)
        return round((first - _bytes_to_ask(outs)) / TENSOR_BYTES)
    finally:
        if enabled:
            gc.enable()


def positive(rng, shape, dtype):
    """Values in [0.5, 2): every op below is smooth there (log, sqrt, division)."""
    return (0.5 + 1.5 * rng.random(shape)).astype(dtype)


def tangent_values(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def _op_outputs(result):
    """The op outputs a test function gives: its result, or the list of every op's output it
    kept (the last one its result)."""
    return result if isinstance(result, list) else [result]


def run_jvp(fn, primals, tangents, general):
    """fn's primal and tangent in a dual level; general: the tangents require grad under grad
    mode, so that every op takes the general jvp path. Returns (primal, tangent, how many of the
    op outputs fn gives hold a fused tangent)."""
    with fwAD.dual_level():
        duals = []
        for p, t in zip(primals, tangents):
            if t is None:
                duals.append(lucid.tensor(p))
                continue
            tt = lucid.tensor(t, requires_grad=general)
            duals.append(fwAD.make_dual(lucid.tensor(p), tt))
        outs = _op_outputs(fn(*duals))
        fused = fused_outputs(outs)
        primal, tangent = fwAD.unpack_dual(outs[-1])
        out = (primal.numpy().copy(), None if tangent is None else tangent.detach().numpy().copy())
    return out + (fused,)


def fd_tangent(fn, primals, tangents, eps=1e-6):
    """The tangent by central differences, in float64."""
    def at(sign):
        shifted = [lucid.tensor(np.asarray(np.asarray(p, np.float64) + sign * eps *
                                           (0 if t is None else np.asarray(t, np.float64))))
                   for p, t in zip(primals, tangents)]
        return _op_outputs(fn(*shifted))[-1].numpy()
    return (at(1) - at(-1)) / (2 * eps)


SCALAR_OPS = {
    "x+s": lambda x: x + 0.75, "x-s": lambda x: x - 0.75, "s-x": lambda x: 0.75 - x,
    "x*s": lambda x: x * 0.75, "s*x": lambda x: 0.75 * x, "x/s": lambda x: x / 0.75,
}
BINARY_OPS = {"x+y": lambda x, y: x + y, "x-y": lambda x, y: x - y,
              "x*y": lambda x, y: x * y, "x/y": lambda x, y: x / y}
UNARY_OPS = {"exp": lucid.exp, "log": lucid.log, "tanh": lucid.tanh, "sigmoid": lucid.sigmoid,
             "sqrt": lucid.sqrt}
SHAPES = [(), (7,), (3, 4)]
DTYPES = [np.float32, np.float64]


def check_fused_against_general(fn, primals, tangents, expected_fused):
    primal, tangent, fused = run_jvp(fn, primals, tangents, general=False)
    g_primal, g_tangent, g_fused = run_jvp(fn, primals, tangents, general=True)
    assert fused == expected_fused
    assert g_fused == 0
    np.testing.assert_array_equal(primal, g_primal)
    np.testing.assert_array_equal(tangent, g_tangent)          # bit for bit
    assert tangent.dtype == primal.dtype and tangent.shape == primal.shape
    return tangent


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("shape", SHAPES, ids=["0d", "1d", "2d"])
@pytest.mark.parametrize("name", sorted(SCALAR_OPS) + sorted(UNARY_OPS))
def test_one_input_op_tangent(name, shape, dtype, rng):
    """tensor (op) number and the unary ops (sigmoid and sqrt compute their primal with NumPy;
    the tangent is fused all the same)."""
    fn = SCALAR_OPS.get(name) or UNARY_OPS[name]
    x, tx = positive(rng, shape, dtype), tangent_values(rng, shape, dtype)
    tangent = check_fused_against_general(fn, [x], [tx], 1)
    np.testing.assert_allclose(tangent, fd_tangent(fn, [x], [tx]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("shape", SHAPES, ids=["0d", "1d", "2d"])
@pytest.mark.parametrize("which", ["both", "x", "y"])
@pytest.mark.parametrize("name", sorted(BINARY_OPS))
def test_binary_op_tangent(name, which, shape, dtype, rng):
    fn = BINARY_OPS[name]
    x, y = positive(rng, shape, dtype), positive(rng, shape, dtype)
    tx = tangent_values(rng, shape, dtype) if which in ("both", "x") else None
    ty = tangent_values(rng, shape, dtype) if which in ("both", "y") else None
    tangent = check_fused_against_general(fn, [x, y], [tx, ty], 1)
    np.testing.assert_allclose(tangent, fd_tangent(fn, [x, y], [tx, ty]), rtol=1e-5, atol=1e-5)


def _chain(x, y):
    """z <- tanh(z * 0.5 + x) * y - z / 3 twenty times from z = x, then exp(z) + log(y): 123 ops,
    each one's output kept (so that each one's tangent can be seen to be fused)."""
    outs = [x]
    for _ in range(20):
        z = outs[-1]
        a = z * 0.5
        b = a + x
        c = lucid.tanh(b)
        d = c * y
        e = z / 3.0
        outs += [a, b, c, d, e, d - e]
    outs += [lucid.exp(outs[-1]), lucid.log(y)]
    outs.append(outs[-2] + outs[-1])
    return outs[1:]


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "f64"])
def test_a_chain_of_fused_ops_matches_the_general_path(dtype, rng):
    x, y = positive(rng, (5,), dtype), positive(rng, (5,), dtype)
    tx, ty = tangent_values(rng, (5,), dtype), tangent_values(rng, (5,), dtype)
    tangent = check_fused_against_general(_chain, [x, y], [tx, ty], 20 * 6 + 3)
    np.testing.assert_allclose(tangent, fd_tangent(_chain, [x, y], [tx, ty]), rtol=1e-4,
                               atol=1e-5)


# -- where the general path runs -----------------------------------------------------------------

def test_broadcast_operands_take_the_general_path(rng):
    x, y = positive(rng, (3, 4), np.float64), positive(rng, (4,), np.float64)
    tx, ty = tangent_values(rng, (3, 4), np.float64), tangent_values(rng, (4,), np.float64)
    for fn in BINARY_OPS.values():
        primal, tangent, fused = run_jvp(fn, [x, y], [tx, ty], general=False)
        assert fused == 0
        np.testing.assert_allclose(tangent, fd_tangent(fn, [x, y], [tx, ty]), rtol=1e-6,
                                   atol=1e-7)


def test_non_contiguous_tangent_takes_the_general_path(rng):
    x = positive(rng, (4, 3), np.float64)
    t_base = tangent_values(rng, (3, 4), np.float64)
    with lucid.no_grad(), fwAD.dual_level():
        # a tangent that requires grad keeps its own (here strided) layout
        tangent_in = lucid.from_numpy(t_base.T).requires_grad_(True)
        dual = fwAD.make_dual(lucid.tensor(x), tangent_in)
        if fwAD.unpack_dual(dual).tangent.detach().numpy().flags.c_contiguous:
            pytest.fail("make_dual copied the strided tangent; this test needs it strided")
        out = dual * 2.0
        assert fused_outputs([out]) == 0
        tangent = fwAD.unpack_dual(out).tangent.detach().numpy()
    np.testing.assert_array_equal(tangent, t_base.T * 2.0)


def test_non_contiguous_primal_takes_the_general_path(rng):
    x = positive(rng, (3, 4), np.float64)
    tx = tangent_values(rng, (3, 4), np.float64)
    with fwAD.dual_level():
        dual = fwAD.make_dual(lucid.tensor(x), lucid.tensor(tx))
        view = dual.T                                   # strided primal and tangent
        e = lucid.exp(view)
        out = e * view
        assert fused_outputs([e, out]) == 0
        tangent = fwAD.unpack_dual(out).tangent.numpy()
    np.testing.assert_allclose(tangent, (np.exp(x.T) * x.T + np.exp(x.T)) * tx.T, rtol=1e-12)


def test_recording_takes_the_general_path_and_records_the_tangent(rng):
    x, tx = positive(rng, (4,), np.float64), tangent_values(rng, (4,), np.float64)
    w = lucid.tensor(positive(rng, (4,), np.float64), requires_grad=True)
    with fwAD.dual_level():
        dual = fwAD.make_dual(lucid.tensor(x), lucid.tensor(tx))
        out = dual * w
        assert fused_outputs([out]) == 0
        tangent = fwAD.unpack_dual(out).tangent         # d(x*w) = tx*w, a function of w
    tangent.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tx, rtol=1e-12)


def test_under_no_grad_a_weight_that_requires_grad_does_not_stop_fusion(rng):
    x, tx = positive(rng, (4,), np.float32), tangent_values(rng, (4,), np.float32)
    w = lucid.tensor(positive(rng, (4,), np.float32), requires_grad=True)
    with lucid.no_grad(), fwAD.dual_level():
        dual = fwAD.make_dual(lucid.tensor(x), lucid.tensor(tx))
        out = dual * w
        assert fused_outputs([out]) == 1
        tangent = fwAD.unpack_dual(out).tangent.numpy()
    np.testing.assert_array_equal(tangent, tx * w.detach().numpy())


def test_no_tangent_in_gives_no_tangent_out(rng):
    x = lucid.tensor(positive(rng, (4,), np.float64))
    with fwAD.dual_level():
        out = lucid.tanh(x * 2.0 + x)
        assert fused_outputs([out]) == 0
        assert fwAD.unpack_dual(out).tangent is None


# -- the tangent as a tensor, and the pool ---------------------------------------------------------

def test_a_fused_tangent_is_one_tensor_with_its_own_memory(rng):
    x, tx = positive(rng, (6,), np.float32), tangent_values(rng, (6,), np.float32)
    with fwAD.dual_level():
        dual = fwAD.make_dual(lucid.tensor(x), lucid.tensor(tx))
        y = dual + 1.0
        first, second = fwAD.unpack_dual(y).tangent, fwAD.unpack_dual(y).tangent
        assert first is second
        assert not np.shares_memory(first.numpy(), fwAD.unpack_dual(dual).tangent.numpy())
        np.testing.assert_array_equal(first.numpy(), tx)


def _keep_tangents(y, kept, steps=30):
    """y <- y * 0.5 + 1.0 steps times (the intermediate y * 0.5 dies: pooled), every third step's
    tangent kept as (step, tangent)."""
    for i in range(steps):
        y = y * 0.5 + 1.0
        if i % 3 == 0:
            kept.append((i, fwAD.unpack_dual(y).tangent))


def test_pooled_arrays_never_alias_a_live_tangent(rng):
    x, tx = positive(rng, (8,), np.float64), tangent_values(rng, (8,), np.float64)
    kept = []
    with tracing(), fwAD.dual_level():
        pooling = fill_pool((8,), np.float64)    # the sanitizer build keeps no pool
        _keep_tangents(fwAD.make_dual(lucid.tensor(x), lucid.tensor(tx)), kept)
        # tangents do get pooled arrays: the first ones kept were made before the steps ran
        assert not pooling or any(not made_in(t.numpy(), _keep_tangents) for _, t in kept)
        for i, t in kept:                        # ty_i = tx * 0.5**(i + 1), unchanged since
            np.testing.assert_array_equal(t.numpy(), tx * 0.5 ** (i + 1))
        arrays = [t.numpy() for _, t in kept]
        for a in range(len(arrays)):
            for b in range(a + 1, len(arrays)):
                assert not np.shares_memory(arrays[a], arrays[b])


def test_in_place_op_on_a_fused_output_updates_its_tangent(rng):
    x, tx = positive(rng, (5,), np.float64), tangent_values(rng, (5,), np.float64)
    with fwAD.dual_level():
        dual = fwAD.make_dual(lucid.tensor(x), lucid.tensor(tx))
        y = dual * 3.0
        y.mul_(2.0)
        tangent = fwAD.unpack_dual(y).tangent.numpy()
    np.testing.assert_array_equal(tangent, tx * 3.0 * 2.0)


def test_fused_tangent_under_inference_mode_is_marked(rng):
    x, tx = positive(rng, (3,), np.float32), tangent_values(rng, (3,), np.float32)
    with lucid.inference_mode(), fwAD.dual_level():
        dual = fwAD.make_dual(lucid.tensor(x), lucid.tensor(tx))
        y = dual * 2.0
        assert y.is_inference()
        tangent = fwAD.unpack_dual(y).tangent
        assert tangent.is_inference()
        np.testing.assert_array_equal(tangent.numpy(), tx * np.float32(2.0))
