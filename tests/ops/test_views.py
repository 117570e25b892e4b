"""PyTorch's other spellings of views and shape ops (lucid/ops/shape/views.pxi) beyond the op
table's rows (tests/support/op_rows_shape2.py): views share memory, errors are PyTorch's
(exception type, words), nothing is modified by a refused call; numel and is_tensor; add/sub
with alpha and Tensor.where."""
import warnings

import numpy as np
import pytest

import lucid

A = np.arange(12.0).reshape(3, 4)


def fresh():
    return lucid.tensor(A.copy())


@pytest.mark.parametrize("make", [
    lambda x: x.select(1, 2), lambda x: x.t(), lambda x: x.swapaxes(0, 1),
    lambda x: lucid.swapdims(x, 1, 0), lambda x: x.unflatten(1, (2, 2)),
    lambda x: x.split_with_sizes([1, 2])[1], lambda x: x.as_strided((2, 2), (4, 1), 1),
])
def test_the_views_share_memory_and_version(make):
    x = fresh()
    v = make(x)
    assert np.shares_memory(v.numpy(), x.numpy())
    x.add_(1.0)
    assert v._version == x._version == 1


def test_broadcasts_are_read_only_views():
    x = lucid.tensor([1.0, 2.0])
    b = lucid.broadcast_to(x, (3, 2))
    p, q = lucid.broadcast_tensors(x, lucid.zeros(3, 1))
    assert b.shape == p.shape == q.shape == (3, 2) and np.shares_memory(b.numpy(), x.numpy())
    with pytest.raises(RuntimeError, match="read-only"):
        b.add_(1.0)
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])


def test_meshgrid_warns_without_indexing_and_checks_its_inputs():
    x, y = lucid.tensor([1.0, 2.0]), lucid.tensor([3.0, 4.0, 5.0])
    with pytest.warns(UserWarning, match="indexing argument"):
        gx, gy = lucid.meshgrid(x, y)
    assert gx.shape == (2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gx, gy = lucid.meshgrid([x, y], indexing="xy")
    assert gx.shape == gy.shape == (3, 2)
    np.testing.assert_array_equal(gx.numpy(), [[1, 2]] * 3)
    with pytest.raises(RuntimeError, match='indexing must be one of "xy" or "ij"'):
        lucid.meshgrid(x, indexing="yx")
    with pytest.raises(RuntimeError, match="0D or 1D"):
        lucid.meshgrid(fresh(), indexing="ij")
    with pytest.raises(RuntimeError, match="same dtype"):
        lucid.meshgrid(x, lucid.tensor([1, 2]), indexing="ij")
    with pytest.raises(RuntimeError, match="non-empty"):
        lucid.meshgrid(indexing="ij")
    with pytest.raises(TypeError, match="meshgrid"):
        lucid.meshgrid(x, [1.0], indexing="ij")


@pytest.mark.parametrize("call, error, words", [
    (lambda x: x.select(1, 4), IndexError, r"select\(\): index 4 out of range"),
    (lambda x: x.select(2, 0), IndexError, "Dimension out of range"),
    (lambda x: lucid.t(x.reshape(3, 2, 2)), RuntimeError, "<= 2 dimensions"),
    (lambda x: x.unflatten(1, (3, -1)), RuntimeError, "don't multiply up"),
    (lambda x: x.unflatten(1, (-1, -1)), RuntimeError, "don't multiply up"),
    (lambda x: x.split_with_sizes([1, 1]), RuntimeError, "sum exactly to 3"),
    (lambda x: lucid.broadcast_tensors(x, lucid.ones(3)), RuntimeError, "cannot be broadcast"),
    (lambda x: x.broadcast_to((2, 2)), RuntimeError, "cannot be expanded"),
    (lambda x: x.as_strided((2, 2), (1,)), RuntimeError, "mismatch in length"),
    (lambda x: x.as_strided((4, 4), (4, 1)), RuntimeError, "need a storage of 16 elements"),
    (lambda x: x.as_strided((2,), (-1,)), RuntimeError, "non-negative"),
    (lambda x: x.as_strided((2,), (1,), "0"), TypeError, "storage_offset"),
    (lambda x: lucid.numel([1, 2]), TypeError, "numel"),
    (lambda x: lucid.add(x, x, alpha="2"), TypeError, "alpha must be a number"),
    (lambda x: lucid.add(x.long(), x.long(), alpha=0.5), RuntimeError, "alpha must not be"),
    (lambda x: lucid.add(x, x, 2), TypeError, "positional"),
])
def test_errors_are_pytorchs_and_change_nothing(call, error, words):
    x = fresh()
    with pytest.raises(error, match=words):
        call(x)
    np.testing.assert_array_equal(x.numpy(), A)
    assert x._version == 0


def test_overlapping_as_strided_views_are_read_only():
    x = lucid.zeros(4)
    w = x.as_strided((3, 2), (1, 1))
    with pytest.raises(RuntimeError, match="read-only"):
        w.add_(1.0)
    np.testing.assert_array_equal(x.numpy(), np.zeros(4))
    x.as_strided((2,), (2,)).add_(1.0)                      # a layout without overlap is writable
    np.testing.assert_array_equal(x.numpy(), [1, 0, 1, 0])


def test_as_strided_refuses_gradients_it_cannot_give():
    base = lucid.tensor(A.copy(), requires_grad=True) * 1.0
    with pytest.raises(RuntimeError, match="outside the input"):
        base[:1].as_strided((5,), (1,), 0)                   # reaches row 1, not base[:1]'s
    with pytest.raises(RuntimeError, match="share memory"):
        base[:1].expand(2, 4).as_strided((2,), (1,))
    with lucid.no_grad():                                    # values alone: allowed
        np.testing.assert_array_equal(base[:1].as_strided((5,), (1,)).numpy(), A.reshape(-1)[:5])


def test_numel_and_is_tensor():
    assert lucid.numel(fresh()) == 12 and lucid.numel(lucid.tensor(1.0)) == 1
    assert lucid.is_tensor(fresh()) and not lucid.is_tensor(A) and not lucid.is_tensor(None)


def test_add_and_sub_with_alpha_keep_integer_dtypes():
    i = lucid.tensor([1, 2, 3])
    out = lucid.add(i, i, alpha=2)
    assert out.dtype == lucid.int64
    np.testing.assert_array_equal(out.numpy(), [3, 6, 9])
    np.testing.assert_array_equal(i.sub(1, alpha=3).numpy(), [-2, -1, 0])
    np.testing.assert_array_equal(lucid.add(2.0, lucid.tensor([1.0]), alpha=2).numpy(), [4.0])


def test_where_method_takes_pytorchs_order():
    x = lucid.tensor([1.0, -2.0, 3.0])
    np.testing.assert_array_equal(x.where(x > 0, lucid.tensor(0.0)).numpy(), [1, 0, 3])
    np.testing.assert_array_equal(x.where(x < 0, 5.0).numpy(), [5, -2, 5])


def test_as_strided_of_memory_in_fortran_order_matches_torch():
    """A base laid out in Fortran order is one block of memory too (a reduction's result can
    be): as_strided reads it in memory order, with its gradient, as PyTorch reads the storage."""
    torch = pytest.importorskip("torch", reason="compares with PyTorch")
    values = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    results = []
    for m, make in ((lucid, lucid.from_numpy), (torch, torch.from_numpy)):
        base = make(values.copy(order="F")).requires_grad_()
        out = m.as_strided(base.t().reshape(6), (2, 2), (1, 1))
        out.backward(m.ones(2, 2, dtype=m.float64))
        results.append((out.detach().numpy(), base.grad.numpy()))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
