# vector_norm and matrix_norm: PyTorch's split of linalg.norm. They share the core's linalg.norm
# (ops/linalg/products.pxi): the 2-norm is its node (gradient 0 at a zero vector) and every
# matrix norm is its matrix branch; vector_norm adds the orders linalg.norm has no use for
# (0, negative p), composed from lucid ops.


cdef object dims_argument(object dim, Py_ssize_t ndim, str op):
    """dim as None, an int or a tuple of ints, each in range for ndim dims (IndexError in
    PyTorch's words otherwise)."""
    if dim is None:
        return dim
    cdef bint single = isinstance(dim, (int, np.integer)) and not isinstance(dim, bool)
    try:
        dims = (dim,) if single else tuple(dim)
    except TypeError:
        raise TypeError(f"{op}: dim must be an int, a sequence of ints or None, got "
                        f"{type(dim).__name__}") from None
    cdef Py_ssize_t n = max(ndim, 1)
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"{op}: dim must be an int, a sequence of ints or None, got an "
                            f"element of type {type(d).__name__}")
        if d < -n or d >= n:
            raise IndexError(f"{op}: Dimension out of range (expected to be in range of [{-n}, "
                             f"{n - 1}], but got {d})")
    return dim if single else dims


cdef Tensor with_dtype(Tensor t, object dtype, str op):
    """t cast to dtype (a floating dtype) when one is given."""
    if dtype is None:
        return t
    cdef object dt = np.dtype(dtype)
    if dt.kind != "f":
        raise RuntimeError(f"{op}: dtype must be a floating point dtype, got {dtype_name(dt)}")
    return cast(t, dt)


cdef object is_number(object x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """(sum_i |x_i|^ord)^(1/ord) over dim (None: every dim); ord inf / -inf: max / min |x_i|,
    0: the number of nonzero entries (no gradient)."""
    cdef str op = "linalg.vector_norm"
    cdef Tensor t = with_dtype(linalg_float_operand(x, op, "x"), dtype, op)
    if not is_number(ord):
        raise RuntimeError(f"{op}: ord must be a number (inf, -inf included), got {ord!r}")
    dim = dims_argument(dim, ndim_of(t.data), op)
    keepdim = bool(keepdim)
    if isinstance(dim, tuple) and len(dim) == 0:
        dim = None
    if ord == 2:
        return norm(t, None, dim, keepdim)
    if ord == np.inf:
        return amax(lucid_abs(t), dim, keepdim)
    if ord == -np.inf:
        return amin(lucid_abs(t), dim, keepdim)
    if ord == 1:
        return sum(lucid_abs(t), dim, keepdim)
    if ord == 0:
        return cast(sum(ne(t, 0), dim, keepdim), descr(t.data.real))   # real for complex t
    return lucid_pow(sum(lucid_pow(lucid_abs(t), float(ord)), dim, keepdim), 1.0 / ord)
define_op(vector_norm, REDUCTION, FLOAT_ONLY, method="none", name="linalg.vector_norm")


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The ord-norm ('fro', 'nuc', 2, -2, 1, -1, inf, -inf) of the matrices of A over the two
    dims in dim; linalg.norm's matrix branch."""
    cdef str op = "linalg.matrix_norm"
    cdef Tensor a = with_dtype(linalg_float_operand(A, op, "A"), dtype, op)
    if ndim_of(a.data) < 2:
        raise RuntimeError(f"{op}: A must have at least 2 dims, got shape {a.data.shape}")
    dim = dims_argument(dim, ndim_of(a.data), op)
    if not isinstance(dim, tuple) or len(dim) != 2:
        raise RuntimeError(f"{op}: dim must be a pair of dims, got {dim!r}")
    if not (ord in ("fro", "nuc") if isinstance(ord, str) else
            is_number(ord) and ord in (2, -2, 1, -1, np.inf, -np.inf)):
        raise RuntimeError(f"{op}: ord must be 'fro', 'nuc', 2, -2, 1, -1, inf or -inf, got "
                           f"{ord!r}")
    return norm(a, ord, dim, bool(keepdim))
define_op(matrix_norm, REDUCTION, FLOAT_ONLY, method="none", name="linalg.matrix_norm")
