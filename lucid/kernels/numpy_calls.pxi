# Kernels: the NumPy calls behind the ops, with shape errors turned into RuntimeErrors.

cdef object ndarray_type = np.ndarray

# descr(arr) and ndim_of(arr), the dtype and dims without an attribute lookup: _core_internal.pxi

cdef inline object as_array(object x):
    """NumPy returns scalars from 0-d computations; lucid always holds an ndarray."""
    if type(x) is ndarray_type:
        return x
    return np.asarray(x)


cdef inline bint same_shape(cnp.ndarray x, cnp.ndarray y) noexcept:
    cdef int nd = ndim_of(x)
    cdef int i
    if nd != ndim_of(y):
        return False
    cdef cnp.npy_intp* dx = cnp.PyArray_DIMS(x)
    cdef cnp.npy_intp* dy = cnp.PyArray_DIMS(y)
    for i in range(nd):
        if dx[i] != dy[i]:
            return False
    return True


cdef bint shape_is(object arr, tuple shape):
    """Does arr have exactly this shape (no tuple made for arr)?"""
    cdef cnp.ndarray a = <cnp.ndarray>arr
    cdef int nd = cnp.PyArray_NDIM(a), i
    if nd != len(shape):
        return False
    cdef cnp.npy_intp* dims = cnp.PyArray_DIMS(a)
    for i in range(nd):
        if dims[i] != <cnp.npy_intp>shape[i]:
            return False
    return True


cdef object shape_error(str op, Tensor a, Tensor b, str what="cannot be broadcast together"):
    return RuntimeError(f"{op}: shapes {a.data.shape} and {b.data.shape} {what}")


cdef object binary_kernel(object ufunc, Tensor a, Tensor b, cnp.dtype dt, str op):
    """ufunc(a, b) computed in dtype dt, broadcasting like NumPy."""
    try:
        return as_array(ufunc(a.data, b.data, dtype=dt))
    except ValueError:
        if not broadcastable(a.data, b.data):
            raise shape_error(op, a, b) from None
        raise
    except TypeError:                    # NumPy has no loop for the dtype (pow of bools)
        raise RuntimeError(f"{op}: not implemented for {dtype_name(a.data.dtype)} and "
                           f"{dtype_name(b.data.dtype)} inputs (computing in "
                           f"{dtype_name(dt)}); convert them with .int() or .float()") from None


cdef bint broadcastable(object x, object y):
    """Do x's and y's shapes broadcast together?"""
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        return False
    return True


cdef object unary_kernel(object ufunc, Tensor a):
    """ufunc(a); integer inputs compute in the default float dtype, like PyTorch."""
    if is_differentiable_dtype(descr(a.data)):
        return as_array(ufunc(a.data))
    return as_array(ufunc(a.data, dtype=default_float_dtype()))
