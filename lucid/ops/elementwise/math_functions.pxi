# More elementwise functions: log1p expm1 square rsqrt reciprocal tan asin acos atan sinh cosh
# erf, and the step functions sign floor ceil round trunc (zero gradient).
#
# Each section: its rule (Note [Elementwise rules] in ops/elementwise/unary.pxi: one rule per
# input is both the backward and the jvp), its node (a docstring on RuleBackward, which applies
# the rule), and its forward (float_unary, or record_rule after its own kernel).

from libc.math cimport erf as c_erf

cdef double TWO_OVER_SQRT_PI = 1.1283791670955126      # 2/sqrt(pi), d/dx erf(x) at 0


# -- log1p, expm1: NumPy's kernels, accurate near 0 --------------------------------------------

cdef Tensor log1p_rule(Tensor g, Tensor x, Tensor y):
    """g/(1 + x)"""
    return div(g, add(x, 1.0))


cdef class Log1pBackward(RuleBackward):
    """y = log1p(x)  ->  gx = log1p_rule(g, x, y) = g/(1 + x)"""


cpdef Tensor log1p(object x):
    """log(1 + x), accurate for x near 0."""
    return table_unary(x, "log1p", UN_LOG1P, np.log1p, Log1pBackward.__new__(Log1pBackward), False,
                       log1p_rule)
define_op(log1p, POINTWISE, FLOAT, inplace=IN_PLACE)


cdef Tensor expm1_rule(Tensor g, Tensor x, Tensor y):
    """g*(y + 1)"""
    return mul(g, add(y, 1.0))


cdef class Expm1Backward(RuleBackward):
    """y = expm1(x)  ->  gx = expm1_rule(g, x, y) = g*(y + 1)"""


cpdef Tensor expm1(object x):
    """exp(x) - 1, accurate for x near 0."""
    return table_unary(x, "expm1", UN_EXPM1, np.expm1, Expm1Backward.__new__(Expm1Backward), True,
                       expm1_rule)
define_op(expm1, POINTWISE, FLOAT, inplace=IN_PLACE)


# -- square, rsqrt, reciprocal -----------------------------------------------------------------

cdef Tensor square_rule(Tensor g, Tensor x, Tensor y):
    """2*g*x"""
    return mul(g, mul(x, 2.0))


cdef class SquareBackward(RuleBackward):
    """y = x*x  ->  gx = square_rule(g, x, y) = 2*g*x"""


cpdef Tensor square(object x):
    """x * x (integer tensors stay integer)."""
    cdef Tensor a = operand(x, "square")
    if a.data.dtype.kind == "b":
        raise TypeError("square: not supported for bool tensors; convert with .int() or .float()")
    return record_rule(wrap(as_array(np.square(a.data))), a, SquareBackward.__new__(SquareBackward),
                       False, square_rule)
define_op(square, POINTWISE, NUMERIC, inplace=IN_PLACE)


cdef Tensor rsqrt_rule(Tensor g, Tensor x, Tensor y):
    """-g*y**3/2"""
    return mul(g, mul(mul(y, mul(y, y)), -0.5))


cdef class RsqrtBackward(RuleBackward):
    """y = 1/sqrt(x)  ->  gx = rsqrt_rule(g, x, y) = -g*y**3/2"""


def _rsqrt_kernel(arr, dtype=None):
    """1/sqrt(arr) in one fresh array (the ufunc-like kernel of rsqrt)."""
    out = as_array(np.sqrt(arr, dtype=dtype))
    np.reciprocal(out, out=out)
    return out


cpdef Tensor rsqrt(object x):
    """1 / sqrt(x)."""
    return table_unary(x, "rsqrt", UN_RSQRT, _rsqrt_kernel, RsqrtBackward.__new__(RsqrtBackward),
                       True, rsqrt_rule)
define_op(rsqrt, POINTWISE, FLOAT, inplace=IN_PLACE)


cdef Tensor reciprocal_rule(Tensor g, Tensor x, Tensor y):
    """-g*y*y"""
    return neg(mul(g, mul(y, y)))


cdef class ReciprocalBackward(RuleBackward):
    """y = 1/x  ->  gx = reciprocal_rule(g, x, y) = -g*y*y"""


def _reciprocal_kernel(arr, dtype=None):
    """1/arr in floating point (NumPy's reciprocal truncates integers)."""
    return as_array(np.true_divide(1.0, arr, dtype=dtype if dtype is not None else arr.dtype))


cpdef Tensor reciprocal(object x):
    """1 / x."""
    return table_unary(x, "reciprocal", UN_RECIPROCAL, _reciprocal_kernel,
                       ReciprocalBackward.__new__(ReciprocalBackward), True, reciprocal_rule)
define_op(reciprocal, POINTWISE, FLOAT, inplace=IN_PLACE)


# -- trigonometric and hyperbolic --------------------------------------------------------------

cdef Tensor tan_rule(Tensor g, Tensor x, Tensor y):
    """g*(1 + y*y)"""
    return mul(g, add(mul(y, y), 1.0))


cdef class TanBackward(RuleBackward):
    """y = tan(x)  ->  gx = tan_rule(g, x, y) = g*(1 + y*y)"""


cpdef Tensor tan(object x):
    """Tangent of x."""
    return table_unary(x, "tan", UN_TAN, np.tan, TanBackward.__new__(TanBackward), True, tan_rule)
define_op(tan, POINTWISE, FLOAT, inplace=IN_PLACE)


cdef Tensor asin_rule(Tensor g, Tensor x, Tensor y):
    """g/sqrt(1 - x*x)"""
    return div(g, sqrt(sub(1.0, mul(x, x))))


cdef class AsinBackward(RuleBackward):
    """y = asin(x)  ->  gx = asin_rule(g, x, y) = g/sqrt(1 - x*x)"""


cpdef Tensor asin(object x):
    """Arcsine of x (NaN outside [-1, 1])."""
    return table_unary(x, "asin", UN_ASIN, np.arcsin, AsinBackward.__new__(AsinBackward), False,
                       asin_rule)
define_op(asin, POINTWISE, FLOAT, inplace=IN_PLACE)


cdef Tensor acos_rule(Tensor g, Tensor x, Tensor y):
    """-asin_rule = -g/sqrt(1 - x*x)"""
    return neg(asin_rule(g, x, y))


cdef class AcosBackward(RuleBackward):
    """y = acos(x)  ->  gx = acos_rule(g, x, y) = -g/sqrt(1 - x*x)"""


cpdef Tensor acos(object x):
    """Arccosine of x (NaN outside [-1, 1])."""
    return table_unary(x, "acos", UN_ACOS, np.arccos, AcosBackward.__new__(AcosBackward), False,
                       acos_rule)
define_op(acos, POINTWISE, FLOAT, inplace=IN_PLACE)


cdef Tensor atan_rule(Tensor g, Tensor x, Tensor y):
    """g/(1 + x*x)"""
    return div(g, add(mul(x, x), 1.0))


cdef class AtanBackward(RuleBackward):
    """y = atan(x)  ->  gx = atan_rule(g, x, y) = g/(1 + x*x)"""


cpdef Tensor atan(object x):
    """Arctangent of x."""
    return table_unary(x, "atan", UN_ATAN, np.arctan, AtanBackward.__new__(AtanBackward), False,
                       atan_rule)
define_op(atan, POINTWISE, FLOAT, inplace=IN_PLACE)


cdef Tensor sinh_rule(Tensor g, Tensor x, Tensor y):
    """g*cosh(x)"""
    return mul(g, cosh(x))


cdef class SinhBackward(RuleBackward):
    """y = sinh(x)  ->  gx = sinh_rule(g, x, y) = g*cosh(x)"""


cpdef Tensor sinh(object x):
    """Hyperbolic sine of x."""
    return table_unary(x, "sinh", UN_SINH, np.sinh, SinhBackward.__new__(SinhBackward), False,
                       sinh_rule)
define_op(sinh, POINTWISE, FLOAT, inplace=IN_PLACE)


cdef Tensor cosh_rule(Tensor g, Tensor x, Tensor y):
    """g*sinh(x)"""
    return mul(g, sinh(x))


cdef class CoshBackward(RuleBackward):
    """y = cosh(x)  ->  gx = cosh_rule(g, x, y) = g*sinh(x)"""


cpdef Tensor cosh(object x):
    """Hyperbolic cosine of x."""
    return table_unary(x, "cosh", UN_COSH, np.cosh, CoshBackward.__new__(CoshBackward), False,
                       cosh_rule)
define_op(cosh, POINTWISE, FLOAT, inplace=IN_PLACE)


# -- erf: the C library's erf (the function math.erf calls), in a typed loop --------------------

def _erf_kernel(arr, dtype=None):
    """erf(arr): libm's erf over a contiguous float64 copy (about 1 ulp, no per-element Python),
    cast to dtype (arr's own floating dtype when None)."""
    cdef cnp.ndarray src = np.asarray(arr, dtype=float64, order="C")    # 0-d stays 0-d
    cdef cnp.ndarray dst = np.empty_like(src)
    cdef double* s = <double*>cnp.PyArray_DATA(src)
    cdef double* d = <double*>cnp.PyArray_DATA(dst)
    cdef Py_ssize_t i, n = cnp.PyArray_SIZE(src)
    with nogil:
        for i in range(n):
            d[i] = c_erf(s[i])
    return as_array(dst.astype(arr.dtype if dtype is None else dtype, copy=False))


cdef Tensor erf_rule(Tensor g, Tensor x, Tensor y):
    """g*2/sqrt(pi)*exp(-x*x)"""
    return mul(g, mul(exp(neg(mul(x, x))), TWO_OVER_SQRT_PI))


cdef class ErfBackward(RuleBackward):
    """y = erf(x)  ->  gx = erf_rule(g, x, y) = g*2/sqrt(pi)*exp(-x*x)"""


cpdef Tensor erf(object x):
    """The error function 2/sqrt(pi) * integral_0^x exp(-t*t) dt."""
    return table_unary(x, "erf", UN_ERF, _erf_kernel, ErfBackward.__new__(ErfBackward), False,
                       erf_rule)
define_op(erf, POINTWISE, FLOAT, inplace=IN_PLACE)


# -- step functions: sign floor ceil round trunc (flat almost everywhere: zero gradient) --------

cdef Tensor zero_rule(Tensor g, Tensor x, Tensor y):
    """0 (of g's shape, connected to g under create_graph)"""
    return zero_grad_like(g)


cdef class StepBackward(Node):
    """y = sign/floor/ceil/round/trunc(x)  ->  gx = zero_rule(g, x, y) = 0

    Named after its op (SignBackward, FloorBackward, ...); it saves nothing. Its zeros come from
    the table's loop when nothing records (Note [Table ops])."""
    cdef str label
    cdef int table_op

    cpdef str name(self):
        return self.label

    cdef tuple apply(self, tuple grads):
        cdef Tensor g = grads[0]
        cdef Tensor fused = None if self.table_op == UN_NONE else \
            table_grad(self, self.table_op, g, g, 0.0, 0.0)
        return (zero_rule(g, None, None) if fused is None else fused,)


cdef Tensor step_op(object x, str name, int op, object float_kernel, object int_kernel):
    """float_kernel(x) (op's typed loop when it applies) for float x, int_kernel(x) (None: a
    copy) for integer and bool x; recorded with a zero gradient and, under forward mode, a zero
    tangent."""
    cdef Tensor a = operand(x, name)
    cdef object arr
    if is_float_dtype(descr(a.data)):
        arr = table_forward(op, a, 0.0, 0.0)
        if arr is None:
            arr = as_array(float_kernel(a.data))
    elif int_kernel is None or a.data.dtype.kind == "b":
        arr = np.array(a.data, copy=True)
    else:
        arr = as_array(int_kernel(a.data))
    cdef Tensor out = wrap(arr)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, unary_jvp(zero_rule, a, out))
    if not (grad_enabled() and a.requires_grad_c()):
        return out
    cdef StepBackward node = StepBackward.__new__(StepBackward)
    node.label = name.capitalize() + "Backward"
    node.table_op = op
    record(node, a, None)
    attach_output(out, node, 0)
    return out


def _sign_kernel(arr):
    """np.sign with NaN giving 0, as PyTorch's sign does."""
    out = as_array(np.sign(arr))
    if out.dtype.kind == "f" and np.isnan(out).any():
        np.copyto(out, 0, where=np.isnan(out))
    return out


cpdef Tensor sign(object x):
    """-1, 0 or 1 by the sign of x (0 for NaN, like PyTorch); its gradient is zero."""
    return step_op(x, "sign", UN_SIGN, _sign_kernel, np.sign)
define_op(sign, POINTWISE, ANY, inplace=IN_PLACE)


cpdef Tensor floor(object x):
    """The largest integer <= x (integer tensors unchanged); its gradient is zero."""
    return step_op(x, "floor", UN_FLOOR, np.floor, None)
define_op(floor, POINTWISE, ANY, inplace=IN_PLACE)


cpdef Tensor ceil(object x):
    """The smallest integer >= x (integer tensors unchanged); its gradient is zero."""
    return step_op(x, "ceil", UN_CEIL, np.ceil, None)
define_op(ceil, POINTWISE, ANY, inplace=IN_PLACE)


cpdef Tensor trunc(object x):
    """x rounded toward zero (integer tensors unchanged); its gradient is zero."""
    return step_op(x, "trunc", UN_TRUNC, np.trunc, None)
define_op(trunc, POINTWISE, ANY, inplace=IN_PLACE)


def round(input, *, decimals=0):
    """input rounded to `decimals` places, halves to even like PyTorch; its gradient is zero."""
    if not isinstance(decimals, int) or isinstance(decimals, bool):
        raise TypeError(f"round: decimals must be an int, not {type(decimals).__name__}")
    if decimals == 0:
        return step_op(input, "round", UN_ROUND, np.round, None)
    kernel = lambda arr: np.round(arr, decimals)
    return step_op(input, "round", UN_NONE, kernel, kernel if decimals < 0 else None)
define_op(round, POINTWISE, ANY, inplace=IN_PLACE)
