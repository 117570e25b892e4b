"""lucid and NumPy (operators, ufuncs, lucid.tensor of NumPy arrays) and DLPack exchange.

A NumPy scalar or array on either side of an operator, and the NumPy ufuncs lucid has, give a
lucid tensor that stays in the graph; the others are refused. DLPack shares memory both ways,
refuses tensors that require grad and names the dtypes it cannot carry.
"""
import numpy as np
import pytest

import lucid
from lucid.autograd import grad
from support.checks import assert_close, assert_exact, to_numpy

DTYPES = [lucid.float32, lucid.float64]


# ---------------------------------------------------------------------------------------------
# NumPy operands and arrays.
# A NumPy scalar or array on the left of an operator ran the NumPy ufunc on the tensor's array:
# np.float64(0.5) * w raised (w requires grad) and np.ones(2) + t silently gave an ndarray that
# left lucid and the graph. Tensor.__array_ufunc__ now runs the lucid op for the ufuncs lucid has
# and refuses the others (TypeError), so the result is always a tensor. lucid.tensor() read a
# big-endian float64 array as "unsupported" and downcast it to float32, and wrapped uint64 values
# past int64's range around to negative numbers.
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("scalar", [np.float64(0.5), np.float32(0.5), np.int64(2)])
def test_numpy_scalar_on_the_left_keeps_the_graph(dtype, scalar):
    w = lucid.ones(3, dtype=dtype, requires_grad=True)
    for out, slope in ((scalar * w, float(scalar)), (scalar + w, 1.0), (scalar - w, -1.0)):
        assert isinstance(out, lucid.Tensor) and out.dtype == dtype
        assert out.grad_fn is not None
        (gw,) = grad((out.sum(),), (w,))
        assert_exact(gw, np.full(3, slope))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["add", "sub", "mul", "truediv", "pow", "matmul", "lt", "ge",
                                  "eq"])
def test_ndarray_on_the_left_gives_a_tensor(dtype, name):
    import operator
    op = getattr(operator, name)
    arr = np.array([[1.0, 2.0], [3.0, 4.0]])
    t = lucid.tensor([[2.0, 1.0], [0.5, 3.0]], dtype=dtype, requires_grad=True)
    out = op(arr, t)
    assert isinstance(out, lucid.Tensor), type(out)
    assert_close(out.detach(), op(arr, to_numpy(t)), rtol=1e-6)
    if out.dtype.kind == "f":
        out.sum().backward()
        assert t.grad is not None


def test_numpy_ufuncs_on_tensors():
    t = lucid.tensor([0.5, 1.5], requires_grad=True)
    out = np.exp(t)
    assert isinstance(out, lucid.Tensor) and out.grad_fn is not None
    assert isinstance(np.maximum(np.zeros(2), t), lucid.Tensor)
    with pytest.raises(TypeError):
        np.floor(t.detach())                                 # a ufunc lucid does not have
    acc = np.zeros(2)
    acc += t.detach()                                        # an ndarray target stays an ndarray
    assert type(acc) is np.ndarray and acc.tolist() == [0.5, 1.5]


@pytest.mark.parametrize("code,values", [(">f8", [1.1, -2.5]), (">f8", [[1e300], [2.0]]),
                                         (">i4", [7, -8]), (">i4", [[1, 2]])])
def test_tensor_from_big_endian_array_keeps_dtype_and_values(code, values):
    arr = np.array(values, dtype=code)
    t = lucid.tensor(arr)
    assert t.dtype == np.dtype(code).newbyteorder("=")
    assert t.dtype.isnative
    assert t.tolist() == arr.tolist()


@pytest.mark.parametrize("scalar, want", [
    (np.float64(1.5), lucid.float64), (np.float32(1.5), lucid.float32),
    (np.int32(3), lucid.int32), (np.bool_(True), lucid.bool),
    (np.complex128(1 + 2j), lucid.complex128), (np.complex64(1j), lucid.complex64)])
def test_tensor_of_a_numpy_scalar_keeps_its_dtype_as_torch_does(scalar, want):
    """torch.tensor(np.float64(1.5)) is float64: a NumPy scalar is a 0-d array, not a float."""
    t = lucid.tensor(scalar)
    assert t.dtype == want and t.shape == () and t.item() == scalar


def test_tensor_refuses_uint64_past_int64():
    with pytest.raises(ValueError, match="does not fit in lucid.int64"):
        lucid.tensor(np.array([1, 2**63 + 5], dtype=np.uint64))
    with pytest.raises(ValueError, match="does not fit in lucid.int64"):
        lucid.tensor([2**63 + 5])
    with pytest.raises(ValueError, match="does not fit in lucid.int64"):
        lucid.tensor(np.array([2**64 - 1], dtype=np.uint64), dtype=lucid.int64)
    ok = lucid.tensor(np.array([2**63 - 1], dtype=np.uint64))
    assert ok.dtype == lucid.int64 and ok.tolist() == [2**63 - 1]


# ------------------------------------------------------------------------------------------------
# DLPack
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.bool_])
def test_dlpack_round_trip_with_numpy_is_zero_copy(dtype):
    a = np.arange(6).reshape(2, 3).astype(dtype)
    t = lucid.from_dlpack(a)
    assert t.dtype == a.dtype and t.shape == (2, 3)
    back = np.from_dlpack(t)
    assert np.shares_memory(back, a)
    assert t.__dlpack_device__() == (1, 0)
    assert_close(lucid.from_dlpack(t), a)


def test_dlpack_refuses_tensors_that_require_grad():
    x = lucid.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="detach"):
        x.__dlpack__()
    assert np.from_dlpack(x.detach()).shape == (2,)


def test_from_dlpack_rejects_unsupported_dtypes():
    with pytest.raises(TypeError, match="unsupported dtype"):
        lucid.from_dlpack(np.zeros(2, dtype=np.float16))


def test_dlpack_with_torch_when_installed():
    torch = pytest.importorskip("torch", reason="torch is not installed: DLPack with PyTorch "
                                "is checked only where it is")
    t = torch.arange(4, dtype=torch.float32)
    x = lucid.from_dlpack(t)
    t[0] = 10.0
    assert x.numpy()[0] == 10.0                      # shares memory
    back = torch.from_dlpack(lucid.tensor([1.0, 2.0]))
    assert back.tolist() == [1.0, 2.0]
