"""copy.copy, copy.deepcopy and pickle of tensors: leaves become new leaves; non-leaves refuse."""
import copy
import pickle

import numpy as np
import pytest

import lucid
from support.child_process import run_child

DTYPES = [lucid.float32, lucid.float64]
SHAPES = [(3,), (2, 3), ()]


def _pickle_roundtrip(t):
    return pickle.loads(pickle.dumps(t))


COPIERS = {"copy": copy.copy, "deepcopy": copy.deepcopy, "pickle": _pickle_roundtrip}


def _leaf(shape, dtype):
    data = np.arange(1, 1 + int(np.prod(shape, dtype=np.int64)), dtype=np.float64).reshape(shape)
    return lucid.tensor(data * 0.5, dtype=dtype, requires_grad=True)


def _ones_like_np(t):
    return np.ones(t.shape, dtype=t.detach().numpy().dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("how", list(COPIERS))
def test_copy_of_leaf_with_live_accumulator_is_a_separate_leaf(how, shape, dtype):
    """Bug (repro_03): when a graph held the leaf's AccumulateGrad, deepcopy (and copy) shared
    that accumulator, so gradients of the copy landed in the original's .grad (and pickle
    failed on the weakref). The copy is a new leaf whose gradients are its own."""
    x = _leaf(shape, dtype)
    y = (x * 2).sum()                     # holds x's AccumulateGrad
    c = COPIERS[how](x)
    assert c is not x and c.is_leaf and c.grad_fn is None and c.requires_grad
    assert c.dtype == x.dtype and c.shape == x.shape
    np.testing.assert_array_equal(c.detach().numpy(), x.detach().numpy())
    (c * 3).sum().backward()
    assert x.grad is None, "the copy's gradient reached the original"
    np.testing.assert_array_equal(c.grad.numpy(), 3 * _ones_like_np(c))
    y.backward()                          # the original's own graph still feeds the original
    np.testing.assert_array_equal(x.grad.numpy(), 2 * _ones_like_np(x))
    np.testing.assert_array_equal(c.grad.numpy(), 3 * _ones_like_np(c))


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_deepcopy_and_pickle_keep_grad_after_a_backward(how, dtype):
    """Bug: after a backward the leaf holds a (weak) accumulator reference; pickle then raised
    TypeError and deepcopy shared the accumulator. Both must copy .grad (a separate tensor of
    equal value) and requires_grad, and later accumulation stays separate."""
    x = _leaf((2, 2), dtype)
    loss = (x * x).sum()
    loss.backward(retain_graph=True)      # the graph (and x's accumulator) stays alive
    c = COPIERS[how](x)
    assert c.requires_grad and c.is_leaf
    assert c.grad is not None and c.grad is not x.grad
    np.testing.assert_array_equal(c.grad.numpy(), x.grad.numpy())
    assert c.grad.dtype == x.grad.dtype
    before = x.grad.numpy().copy()
    (c * 5).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), before)
    np.testing.assert_array_equal(c.grad.numpy(), before + 5)


def test_copy_copy_shares_memory_but_not_grad():
    """Bug: copy.copy shared the original's .grad tensor (and accumulator), so accumulating into
    the copy changed x.grad in place. A shallow copy is a new leaf over the same memory with
    no .grad (as PyTorch's)."""
    x = _leaf((3,), lucid.float64)
    keep = x * 1.0                        # x's accumulator is alive
    (x * 2).sum().backward()
    c = copy.copy(x)
    assert c.is_leaf and c.requires_grad and c.grad is None
    (c * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(c.grad.numpy(), [3.0, 3.0, 3.0])
    with lucid.no_grad():
        c.add_(1)
    np.testing.assert_array_equal(x.detach().numpy(), [1.5, 2.0, 2.5])
    assert keep.grad_fn is not None


def test_deepcopy_memo_keeps_sharing():
    """deepcopy of a container holding one leaf twice gives one new leaf, twice."""
    x = _leaf((2,), lucid.float32)
    keep = x * 2
    a, b = copy.deepcopy([x, x])
    assert a is b and a is not x
    (a * 3).sum().backward()
    assert x.grad is None and keep.grad_fn is not None


def _non_leaves():
    x = _leaf((2, 3), lucid.float64)
    y = x.clone()
    y.mul_(2)
    return {"mul": x * 2, "tanh": x.tanh(), "view of a leaf": x[0], "reshape": x.reshape(6),
            "after in-place": y, "sum": x.sum()}


@pytest.mark.parametrize("which", list(_non_leaves()))
@pytest.mark.parametrize("how", list(COPIERS))
def test_non_leaf_is_refused(how, which):
    """Bug: copy.copy of a non-leaf silently shared its grad_fn, and deepcopy/pickle raised a
    Cython TypeError. A non-leaf's history can't be copied: RuntimeError for all three, and
    the tensor is left as it was."""
    t = _non_leaves()[which]
    before = (t.detach().numpy().copy(), t.grad_fn, t._version)
    with pytest.raises(RuntimeError, match="leaf"):
        COPIERS[how](t)
    np.testing.assert_array_equal(t.detach().numpy(), before[0])
    assert t.grad_fn is before[1] and t._version == before[2]


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickle_does_not_depend_on_the_cython_layout(protocol):
    """Bug: the pickle of a leaf went through Cython's __pyx_unpickle with a layout checksum,
    so it broke whenever the class layout changed. It names only a stable rebuild function."""
    x = _leaf((2,), lucid.float32)
    (x * 2).sum().backward()
    data = pickle.dumps(x, protocol=protocol)
    assert b"__pyx_unpickle" not in data and b"__pyx" not in data
    c = pickle.loads(data)
    np.testing.assert_array_equal(c.detach().numpy(), x.detach().numpy())
    np.testing.assert_array_equal(c.grad.numpy(), x.grad.numpy())
    assert c.requires_grad


_LOAD_CHILD = r"""
import pickle, sys
import numpy as np
with open(sys.argv[1], "rb") as f:
    items = pickle.load(f)
for t in items:
    g = None if t.grad is None else t.grad.numpy().tolist()
    print(repr((t.detach().numpy().tolist(), str(t.dtype), t.requires_grad, t.is_leaf, g)))
    if t.requires_grad:
        (t * 4).sum().backward()
        print(repr(t.grad.numpy().tolist()))
"""


def test_pickle_loads_in_a_fresh_interpreter(tmp_path):
    """Bug: pickling a leaf after a backward raised TypeError (weakref). The pickle loads in a
    new interpreter with values, dtype, requires_grad and .grad, and the loaded leaf works."""
    a = _leaf((2, 2), lucid.float64)
    (a * a).sum().backward()
    b = lucid.tensor([1.0, -2.0], dtype=lucid.float32)
    c = lucid.tensor([3, 4], dtype=lucid.int64)
    path = tmp_path / "leaves.pkl"
    path.write_bytes(pickle.dumps([a, b, c]))
    lines = run_child(_LOAD_CHILD, args=(path,)).strip().splitlines()
    got_a = eval(lines[0])
    assert got_a[0] == a.detach().numpy().tolist()
    assert got_a[1:4] == (str(a.dtype), True, True)
    assert got_a[4] == a.grad.numpy().tolist()
    assert eval(lines[1]) == (a.grad.numpy() + 4).tolist()
    assert eval(lines[2]) == ([1.0, -2.0], str(b.dtype), False, True, None)
    assert eval(lines[3]) == ([3, 4], str(c.dtype), False, True, None)
