"""The Tensor attributes of API.md section 13: stride, storage_offset, data_ptr, element_size,
is_floating_point, is_complex, type_as, view_as, reshape_as, new_empty, and Tensor.data (a tensor
sharing memory outside the graph; assigning it rebinds the tensor's memory, shape and dtype)."""
import numpy as np
import pytest

import lucid


def grid():
    return lucid.from_numpy(np.arange(12.0).reshape(3, 4))


def test_stride_in_elements_as_numpy_lays_the_memory():
    x = grid()
    assert x.stride() == (4, 1) and x.stride(0) == 4 and x.stride(-1) == 1
    assert x.T.stride() == (1, 4)
    assert x[:, ::2].stride() == (4, 2)
    assert lucid.zeros(3, 1).expand(3, 4).stride() == (1, 0)
    assert lucid.tensor(1.0).stride() == ()
    f32 = lucid.zeros(2, 5, dtype=lucid.float32)
    assert f32.stride() == (5, 1)                 # elements, not bytes


@pytest.mark.parametrize("call, exc", [
    (lambda: grid().stride(2), IndexError), (lambda: grid().stride(-3), IndexError),
    (lambda: grid().stride("a"), TypeError), (lambda: grid().stride(1.0), TypeError),
    (lambda: lucid.tensor(1.0).stride(0), IndexError)])
def test_stride_errors(call, exc):
    with pytest.raises(exc, match="stride"):
        call()


def test_storage_offset_and_data_ptr_follow_views():
    x = grid()
    assert x.storage_offset() == 0
    v = x[1:, 1:]
    assert v.storage_offset() == 5 and v[1].storage_offset() == 9
    assert v.data_ptr() == x.data_ptr() + 5 * x.element_size()
    assert x.data_ptr() == x.numpy().ctypes.data
    assert x.reshape(12).storage_offset() == 0 and x.reshape(12).data_ptr() == x.data_ptr()
    assert lucid.zeros(0).data_ptr() == 0                       # no elements, as in PyTorch
    assert x.clone().data_ptr() != x.data_ptr()


def test_element_size_and_dtype_kind():
    sizes = {lucid.float32: 4, lucid.float64: 8, lucid.int32: 4, lucid.int64: 8, lucid.bool: 1}
    for dtype, size in sizes.items():
        t = lucid.zeros(2, dtype=dtype)
        assert t.element_size() == size
        assert t.is_floating_point() == (dtype in (lucid.float32, lucid.float64))
        assert t.is_complex() is False


def test_type_as_view_as_reshape_as():
    x = lucid.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    d = x.type_as(lucid.zeros(1, dtype=lucid.float64))
    assert d.dtype == lucid.float64 and d.grad_fn is not None
    assert x.type_as(x) is x
    assert x.type_as(lucid.zeros(1, dtype=lucid.int64)).tolist() == [[1, 2], [3, 4]]
    v = x.view_as(lucid.zeros(4))
    assert v.shape == (4,) and v.data_ptr() == x.data_ptr()
    r = x.T.reshape_as(lucid.zeros(4))
    assert r.tolist() == [1.0, 3.0, 2.0, 4.0]
    (v.sum() + r.sum()).backward()
    assert x.grad.tolist() == [[2.0, 2.0], [2.0, 2.0]]
    with pytest.raises(RuntimeError):
        x.T.view_as(lucid.zeros(4))                             # not viewable: as view()


@pytest.mark.parametrize("name", ["type_as", "view_as", "reshape_as"])
@pytest.mark.parametrize("bad", [[1.0], None, np.zeros(4), 2.0], ids=repr)
def test_the_as_methods_take_a_tensor_only(name, bad):
    x = grid()
    with pytest.raises(TypeError, match=name):
        getattr(x, name)(bad)
    assert x.shape == (3, 4) and x.dtype == lucid.float64


def test_new_empty():
    x = lucid.zeros(2, dtype=lucid.float64)
    e = x.new_empty(3, 2)
    assert e.shape == (3, 2) and e.dtype == lucid.float64 and not e.requires_grad
    assert x.new_empty((1,), dtype=lucid.int32).dtype == lucid.int32
    assert x.new_empty(2, requires_grad=True).requires_grad


# -- Tensor.data ---------------------------------------------------------------------------------

def test_data_shares_memory_outside_the_graph():
    x = lucid.tensor([1.0, 2.0, 3.0], requires_grad=True)
    d = x.data
    assert isinstance(d, lucid.Tensor) and d is not x
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert d.data_ptr() == x.data_ptr() and d.shape == x.shape and d.dtype == x.dtype
    y = x * 2
    assert y.data.grad_fn is None and not y.data.requires_grad
    assert y.data.tolist() == [2.0, 4.0, 6.0]


def test_writes_through_data_are_seen_but_not_recorded():
    x = lucid.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x                                 # saves x
    d = x.data
    d += 1.0
    assert x.tolist() == [2.0, 3.0, 4.0]      # the same memory
    assert d._version == 1 and x._version == 0  # a version counter of its own, as in PyTorch
    y.sum().backward()                        # no "modified by an inplace operation" error
    assert x.grad.tolist() == [4.0, 6.0, 8.0]   # 2*x with the value written through .data


def test_data_of_a_view_is_not_a_view():
    base = lucid.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True).clone()
    v = base[1:3]
    d = v.data
    d.zero_()
    assert base.tolist() == [1.0, 0.0, 0.0, 4.0] and base._version == 0


def test_assigning_data_rebinds_memory_shape_and_dtype():
    x = lucid.tensor([1.0, 2.0, 3.0], requires_grad=True)
    t = lucid.zeros(2, 2, dtype=lucid.float64)
    x.data = t
    assert x.shape == (2, 2) and x.dtype == lucid.float64
    assert x.requires_grad and x.is_leaf and x._version == 0
    assert x.data_ptr() == t.data_ptr()
    t.add_(1.0)
    assert x.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert t._version == 1 and x._version == 0  # x keeps its own version counter
    (x * 3).sum().backward()
    assert x.grad.dtype == lucid.float64 and x.grad.tolist() == [[3.0, 3.0], [3.0, 3.0]]


def test_assigning_data_keeps_history_and_grad():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    (x * 2).sum().backward()
    x.data = lucid.tensor([5.0, 6.0])
    assert x.grad.tolist() == [2.0, 2.0]
    y = x * 2
    node = y.grad_fn
    y.data = lucid.zeros(3)
    assert y.grad_fn is node and y.shape == (3,)
    i = lucid.tensor([1, 2])
    i.data = lucid.tensor([7, 8, 9])                # no grad: any dtype
    assert i.tolist() == [7, 8, 9] and i.dtype == lucid.int64
    i.data = lucid.tensor([0.5])
    assert i.dtype == lucid.float32


def test_a_view_given_new_data_is_no_longer_its_bases_view():
    base = lucid.tensor([1.0, 2.0, 3.0], requires_grad=True).clone()
    v = base[:2]
    v.data = lucid.zeros(5)
    v.add_(1.0)
    assert v.tolist() == [1.0] * 5 and base.tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("value, exc, words", [
    ([1.0, 2.0], TypeError, "has to be a tensor"), (None, TypeError, "has to be a tensor"),
    (np.zeros(2), TypeError, "has to be a tensor"), (3.0, TypeError, "has to be a tensor"),
    ("x", TypeError, "has to be a tensor")], ids=repr)
def test_assigning_data_that_is_not_a_tensor_changes_nothing(value, exc, words):
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(exc, match=words):
        x.data = value
    assert x.tolist() == [1.0, 2.0] and x.dtype == lucid.float32 and x.requires_grad


@pytest.mark.parametrize("dtype", [lucid.int64, lucid.int32, lucid.bool], ids=str)
def test_a_tensor_requiring_grad_takes_float_data_only(dtype):
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point"):
        x.data = lucid.zeros(3, dtype=dtype)
    assert x.tolist() == [1.0, 2.0] and x.dtype == lucid.float32
