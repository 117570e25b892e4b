"""The array pool (Note [Array pool]): a small array that dies unshared with its tensor is reused
by the next typed loop. That memory is reused is seen from outside: the next op's result has the
dropped array's data pointer, and a long chain ends on arrays that were made before it ran
(tracemalloc knows where each array was allocated). The other tests hold on to an array in one of
the ways someone can still see it, let its tensor die, run ops that would take it from the pool,
and check it kept its values.
"""
import copy
import gc
import pickle
import threading
import weakref

import numpy as np
import pytest

import lucid
from lucid import _core
from support.allocations import POOL_SIZE, fill_pool, made_in, tracing

SHAPE = (16,)

# The sanitizer build keeps no array (a recycled array is memory AddressSanitizer cannot see
# freed); there the tests that count reuses skip, and those that hold arrays still run.
needs_pool = pytest.mark.skipif(not _core._array_pool_enabled(),
                                reason="this build keeps no array pool (LUCID_SANITIZE=1)")


def pooled():
    return _core._array_pool_size()


def empty_pool():
    _core._array_pool_size(empty=True)


def churn(like, steps=20):
    """Ops that make and drop arrays of like's dtype and shape, pulling from the pool."""
    y = lucid.tensor(np.ones(like.shape, like.dtype))
    for _ in range(steps):
        y = y * 0.5 + 3.0
    return y


@needs_pool
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_dropped_arrays_memory_is_the_next_results(rng, dtype):
    values = rng.standard_normal(SHAPE).astype(dtype)
    source = lucid.tensor(values)
    dropped = source * 1.0
    address = dropped.numpy().ctypes.data
    empty_pool()
    del dropped                                          # its array goes to the pool
    # NumPy's allocator gets no memory back: were the array freed, these would take it
    others = [np.empty(SHAPE, dtype) for _ in range(POOL_SIZE)]
    result = source * 2.0
    assert result.numpy().ctypes.data == address
    assert all(o.ctypes.data != address for o in others)
    np.testing.assert_array_equal(result.numpy(), values * dtype(2.0))


def _forward_chain(x, steps=50):
    """y <- y * 0.5 + x, steps times: two results per step, the step before's two dropped."""
    y = x
    for _ in range(steps):
        y = y * 0.5 + x
    return y


def _backward(y):
    y.sum().backward()


@needs_pool
def test_a_chain_reuses_its_dropped_arrays():
    """The pool starts with POOL_SIZE arrays and the chain needs a hundred forward and as many
    backward: its last results are arrays made before it, so it ran on the ones it dropped."""
    # no collection inside: garbage of earlier tests freed then would fill the pool with arrays
    # of other shapes
    gc.collect()
    gc.disable()
    try:
        with tracing():
            fill_pool(SHAPE, np.float32)
            x = lucid.tensor(np.ones(SHAPE, np.float32), requires_grad=True)
            y = _forward_chain(x)
            assert not made_in(y.detach().numpy(), _forward_chain)
            _backward(y)
            assert not made_in(x.grad.numpy(), _backward)
    finally:
        gc.enable()
    expected = sum(0.5 ** k for k in range(51))          # dy/dx of the chain, every element
    np.testing.assert_allclose(x.grad.numpy(), np.full(SHAPE, expected, np.float32), rtol=1e-6)


@needs_pool
def test_pool_is_bounded():
    empty_pool()
    tensors = [lucid.tensor(np.ones(SHAPE)) * 2.0 for _ in range(100)]
    del tensors
    assert pooled() == POOL_SIZE


@pytest.mark.parametrize("hold", ["numpy", "view", "memoryview", "dlpack", "np_asarray"])
def test_an_array_someone_still_sees_is_not_reused(rng, hold):
    values = rng.standard_normal(SHAPE)
    t = lucid.tensor(values) * 1.0                       # an array from the typed loops
    if hold == "numpy":
        kept = t.numpy()
    elif hold == "view":
        kept = t.numpy()[::2]
    elif hold == "memoryview":
        kept = memoryview(t.numpy())
    elif hold == "dlpack":
        kept = np.from_dlpack(t)
    else:
        kept = np.asarray(t)
    snapshot = np.array(kept, copy=True)
    del t
    churn(values)
    np.testing.assert_array_equal(np.asarray(kept), snapshot)


def test_a_tensor_held_elsewhere_keeps_its_array(rng):
    values = rng.standard_normal(SHAPE)
    t = lucid.tensor(values) * 1.0
    holders = [copy.copy(t), copy.deepcopy(t), pickle.loads(pickle.dumps(t)), t.detach(),
               t.view(4, 4), t[2:]]
    expected = [h.numpy().copy() for h in holders]
    del t
    churn(values)
    for h, e in zip(holders, expected):
        np.testing.assert_array_equal(h.numpy(), e)


def test_a_views_array_is_not_pooled(rng):
    """A view's array has a base: its memory belongs to the base array, which must not be
    handed out while its tensor lives."""
    values = rng.standard_normal((4, 4))
    base = lucid.tensor(values) * 1.0
    expected = base.numpy().copy()
    empty_pool()
    for _ in range(10):
        v = base.reshape(16)
        w = base.transpose(0, 1).contiguous()                        # a fresh array: may be pooled
        del v, w
    churn(values.reshape(16))
    churn(values)
    np.testing.assert_array_equal(base.numpy(), expected)


def test_an_array_with_a_weak_reference_is_not_pooled(rng):
    t = lucid.tensor(rng.standard_normal(SHAPE)) * 1.0
    ref = weakref.ref(t.numpy())
    del t
    assert ref() is None                                 # freed, not kept in the pool


@pytest.mark.parametrize("kind", ["read-only", "large", "int64", "fortran"])
def test_arrays_the_loops_cannot_reuse_are_not_pooled(kind):
    empty_pool()
    if kind == "read-only":
        values = np.ones(SHAPE)
        values.flags.writeable = False
        t = lucid.from_numpy(values)
        del values
    elif kind == "large":
        t = lucid.tensor(np.ones(4096)) * 1.0           # 32 KiB: above the pool's limit
    elif kind == "int64":
        t = lucid.tensor(np.ones(SHAPE, np.int64))
    else:
        t = lucid.from_numpy(np.asfortranarray(np.ones((4, 4))))
    del t
    assert pooled() == 0


def test_reuse_matches_dtype_and_shape_exactly(rng):
    empty_pool()
    for dtype in (np.float32, np.float64):
        for shape in ((16,), (4, 4), (2, 8), (3,), ()):
            del_me = lucid.tensor(np.ones(shape, dtype)) * 1.0
            del del_me
    for dtype in (np.float32, np.float64):
        for shape in ((4, 4), (16,), (), (2, 8)):
            values = rng.standard_normal(shape).astype(dtype)
            out = lucid.tensor(values) * 2.0
            assert out.dtype == lucid.tensor(values).dtype and out.shape == shape
            np.testing.assert_array_equal(out.numpy(), values * dtype(2.0))


def test_threads_sharing_a_leaf_get_their_own_arrays(rng):
    values = rng.standard_normal(SHAPE)
    leaf = lucid.tensor(values, requires_grad=True)
    results, errors = {}, []

    def work(k):
        try:
            for _ in range(50):
                y = leaf
                for _ in range(20):
                    y = y * 0.5 + float(k)
                out = y.detach().numpy().copy()
                expected = values * 0.5 ** 20 + k * sum(0.5 ** i for i in range(20))
                np.testing.assert_allclose(out, expected, rtol=1e-12)
            results[k] = True
        except Exception as exc:                         # reported below, in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors and len(results) == 4


def test_values_survive_gc_of_cycles_holding_tensors(rng):
    """Tensors freed by the cycle collector (their fields cleared first) pool nothing wrong."""
    import gc
    values = rng.standard_normal(SHAPE)
    keep = lucid.tensor(values) * 1.0
    expected = keep.numpy().copy()
    for _ in range(20):
        a = lucid.tensor(values, requires_grad=True) * 2.0
        a.register_hook(lambda g, a=a: g)                # a cycle through the hook
        del a
    gc.collect()
    churn(values)
    np.testing.assert_array_equal(keep.numpy(), expected)


def _dual_chain(y, steps=50):
    """y <- y * 0.5 + 1.0, steps times: two primals and two tangents per step."""
    for _ in range(steps):
        y = y * 0.5 + 1.0
    return y


@needs_pool
def test_a_dual_chain_reuses_primal_and_tangent_arrays(rng):
    """Each step makes two primals and two tangents; the tensors and tangents the previous step
    dropped supply all four (a tangent is recycled with its tensor, through the tensor's extra):
    after two hundred arrays, the last primal and tangent are arrays made before the chain."""
    import lucid.autograd.forward_ad as fwAD
    x, tx = rng.standard_normal(SHAPE), rng.standard_normal(SHAPE)
    with tracing(), fwAD.dual_level():
        fill_pool(SHAPE, np.float64)
        y = _dual_chain(fwAD.make_dual(lucid.tensor(x), lucid.tensor(tx)))
        tangent = fwAD.unpack_dual(y).tangent
        assert not made_in(y.numpy(), _dual_chain)
        assert not made_in(tangent.numpy(), _dual_chain)
        np.testing.assert_allclose(tangent.numpy(), tx * 0.5 ** 50)
