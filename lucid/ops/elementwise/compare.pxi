# Comparison and logic: eq ne lt le gt ge, isnan isinf isfinite, logical_*, isclose allclose.
# Their results are bool tensors outside the graph: no gradient, no tangent, no node.

cdef tuple COMPARE_NAMES = ("lt", "le", "eq", "ne", "gt", "ge")   # Python's richcmp order


cdef Tensor compare_op(object x, object y, int op):
    """x (op) y elementwise, broadcasting, as a bool tensor (op: Py_LT ... Py_GE)."""
    cdef str name = COMPARE_NAMES[op]
    cdef Tensor a = operand(x, name), b = operand(y, name)
    if op != 2 and op != 3:              # the ordering tests (Note [Complex guard])
        refuse_complex(name, a, b)
    try:
        return wrap(as_array(compare_ufunc(op)(a.data, b.data)))
    except ValueError:
        raise shape_error(name, a, b) from None


cpdef Tensor lt(object input, object other):
    """input < other elementwise (bool)."""
    return compare_op(input, other, 0)
define_op(lt, POINTWISE, ANY)


cpdef Tensor le(object input, object other):
    """input <= other elementwise (bool)."""
    return compare_op(input, other, 1)
define_op(le, POINTWISE, ANY)


cpdef Tensor eq(object input, object other):
    """input == other elementwise (bool)."""
    return compare_op(input, other, 2)
define_op(eq, POINTWISE, ANY)


cpdef Tensor ne(object input, object other):
    """input != other elementwise (bool)."""
    return compare_op(input, other, 3)
define_op(ne, POINTWISE, ANY)


cpdef Tensor gt(object input, object other):
    """input > other elementwise (bool)."""
    return compare_op(input, other, 4)
define_op(gt, POINTWISE, ANY)


cpdef Tensor ge(object input, object other):
    """input >= other elementwise (bool)."""
    return compare_op(input, other, 5)
define_op(ge, POINTWISE, ANY)


cpdef Tensor isnan(object input):
    """True where input is NaN."""
    return wrap(as_array(np.isnan(operand(input, "isnan").data)))
define_op(isnan, POINTWISE, ANY)


cpdef Tensor isinf(object input):
    """True where input is +inf or -inf."""
    return wrap(as_array(np.isinf(operand(input, "isinf").data)))
define_op(isinf, POINTWISE, ANY)


cpdef Tensor isfinite(object input):
    """True where input is neither NaN nor infinite."""
    return wrap(as_array(np.isfinite(operand(input, "isfinite").data)))
define_op(isfinite, POINTWISE, ANY)


cdef Tensor logical_op(object ufunc, object x, object y, str name):
    """ufunc on the truth values of x and y (nonzero is true), broadcasting, as a bool tensor."""
    cdef Tensor a = operand(x, name), b = operand(y, name)
    try:
        return wrap(as_array(ufunc(a.data, b.data)))
    except ValueError:
        raise shape_error(name, a, b) from None


cpdef Tensor logical_and(object input, object other):
    """input and other, elementwise on truth values (bool)."""
    return logical_op(np.logical_and, input, other, "logical_and")
define_op(logical_and, POINTWISE, ANY)


cpdef Tensor logical_or(object input, object other):
    """input or other, elementwise on truth values (bool)."""
    return logical_op(np.logical_or, input, other, "logical_or")
define_op(logical_or, POINTWISE, ANY)


cpdef Tensor logical_xor(object input, object other):
    """input xor other, elementwise on truth values (bool)."""
    return logical_op(np.logical_xor, input, other, "logical_xor")
define_op(logical_xor, POINTWISE, ANY)


cpdef Tensor logical_not(object input):
    """not input, elementwise on truth values (bool)."""
    return wrap(as_array(np.logical_not(operand(input, "logical_not").data)))
define_op(logical_not, POINTWISE, ANY)


cdef object close_mask(object input, object other, double rtol, double atol, bint equal_nan,
                       str name):
    """|input - other| <= atol + rtol*|other| elementwise (equal infinities are close; NaNs only
    with equal_nan), as an ndarray; input and other must have one dtype, as in PyTorch."""
    cdef Tensor a = operand(input, name), b = operand(other, name)
    if rtol < 0 or atol < 0:
        raise ValueError(f"{name}: rtol and atol must be >= 0, got rtol={rtol}, atol={atol}")
    if not (a._wrapped_number or b._wrapped_number) and a.data.dtype != b.data.dtype:
        raise RuntimeError(f"{name}: input is {dtype_name(a.data.dtype)} but other is "
                           f"{dtype_name(b.data.dtype)}; they must have the same dtype "
                           "(convert one with .to(other.dtype))")
    if not broadcastable(a.data, b.data):
        raise shape_error(name, a, b)
    return np.isclose(a.data, b.data, rtol=rtol, atol=atol, equal_nan=equal_nan)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """|input - other| <= atol + rtol*|other| elementwise (bool), broadcasting."""
    return wrap(as_array(close_mask(input, other, float_arg(rtol, "isclose", "rtol"),
                                    float_arg(atol, "isclose", "atol"), equal_nan, "isclose")))
define_op(isclose, POINTWISE, ANY)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True when isclose holds for every element (a Python bool)."""
    return bool(np.all(close_mask(input, other, float_arg(rtol, "allclose", "rtol"),
                                  float_arg(atol, "allclose", "atol"), equal_nan, "allclose")))
define_op(allclose, CUSTOM, ANY)
