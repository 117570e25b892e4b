# Elementwise functions of floats, PyTorch's semantics: log2 log10 exp2 sinc frac (one input),
# logaddexp2 hypot xlogy copysign fmod remainder (two, broadcasting; a Python number is taken
# for either), nan_to_num.
#
# Each section: its rules (Note [Elementwise rules] in ops/elementwise/unary.pxi: one rule per
# input is both the backward and the jvp; a symmetric binary op writes x's alone), its node (a
# docstring on RuleBackward or BinaryRuleBackward, which apply the rules), its forward and its
# registration. The special functions (erfc lgamma digamma polygamma erfinv) are in special.pxi.

cdef double LN2 = 0.6931471805599453
cdef double LN10 = 2.302585092994046
cdef double PI = 3.141592653589793


cdef Tensor numeric_binary(object x, object y, str name, object ufunc, type node_type,
                           binary_rule rule_x, binary_rule rule_y, int fn):
    """ufunc(x, y) broadcasting: floating operands as float_binary (recorded by the rules);
    integer operands stay integer (no gradient), a zero divisor raising RuntimeError as in
    PyTorch; bool operands refused."""
    cdef Tensor a = operand(x, name), b = operand(y, name)
    if plain_pair(a, b):
        return float_binary(a, b, name, ufunc, node_type, rule_x, rule_y, fn)
    cdef cnp.dtype dt = result_dtype(a, b)
    if is_float_dtype(dt):
        return float_binary(a, b, name, ufunc, node_type, rule_x, rule_y, fn)
    if dt.kind == b'b':
        raise RuntimeError(f"{name}: not implemented for bool tensors; convert them with .int()")
    check_operands_fit(x, y, a, b, dt, name)
    if np.any(b.data == 0):
        raise RuntimeError(f"{name}: ZeroDivisionError (an integer divisor is 0)")
    return wrap(binary_kernel(ufunc, a, b, dt, name))


# -- log2, log10, exp2 -------------------------------------------------------------------------

cdef Tensor log2_rule(Tensor g, Tensor x, Tensor y):
    """g/(x*ln 2)"""
    return div(g, mul(x, LN2))


cdef class Log2Backward(RuleBackward):
    """y = log2(x)  ->  gx = log2_rule(g, x, y) = g/(x*ln 2)"""


cpdef Tensor log2(object input):
    """Base-2 logarithm of input."""
    return table_unary(input, "log2", UN_LOG2, np.log2, Log2Backward.__new__(Log2Backward), False,
                       log2_rule)
define_op(log2, POINTWISE, FLOAT, inplace=IN_PLACE)


cdef Tensor log10_rule(Tensor g, Tensor x, Tensor y):
    """g/(x*ln 10)"""
    return div(g, mul(x, LN10))


cdef class Log10Backward(RuleBackward):
    """y = log10(x)  ->  gx = log10_rule(g, x, y) = g/(x*ln 10)"""


cpdef Tensor log10(object input):
    """Base-10 logarithm of input."""
    return table_unary(input, "log10", UN_LOG10, np.log10, Log10Backward.__new__(Log10Backward),
                       False, log10_rule)
define_op(log10, POINTWISE, FLOAT, inplace=IN_PLACE)


cdef Tensor exp2_rule(Tensor g, Tensor x, Tensor y):
    """g*y*ln 2"""
    return mul(g, mul(y, LN2))


cdef class Exp2Backward(RuleBackward):
    """y = 2**x  ->  gx = exp2_rule(g, x, y) = g*y*ln 2"""


cpdef Tensor exp2(object input):
    """2 ** input."""
    return table_unary(input, "exp2", UN_EXP2, np.exp2, Exp2Backward.__new__(Exp2Backward), True,
                       exp2_rule)
define_op(exp2, POINTWISE, FLOAT, inplace=IN_PLACE)


# -- sinc: sin(pi x)/(pi x), 1 at 0 ------------------------------------------------------------

def _sinc_kernel(arr, dtype=None):
    """sin(pi*arr)/(pi*arr), exactly 1 where arr == 0 (computed in dtype, arr's when None)."""
    cdef object y = as_array(np.multiply(arr, PI, dtype=arr.dtype if dtype is None else dtype))
    cdef object out = as_array(np.divide(np.sin(y), y))
    np.copyto(out, 1, where=(y == 0))
    return out


cdef double SINC_SERIES_BELOW = 1e-2


cdef Tensor sinc_slope(Tensor x):
    """sinc'(x) = (cos(pi x) - sinc(x))/x; for |x| < 1e-2, where the quotient cancels (and is
    0/0 at 0), its series pi^2 x (-1/3 + z/30 - z^2/840 + z^3/45360) with z = (pi x)^2 (next
    term below 1e-18 of it), so sinc'(0) = 0 and sinc''(0) = -pi^2/3 (PyTorch's is NaN)."""
    cdef object small = np.abs(x.data) < SINC_SERIES_BELOW
    if not small.any():
        return div(sub(cos(mul(x, PI)), sinc(x)), x)
    cdef Tensor away = where(small, 1.0, x)          # the quotient's branch, never at 0
    cdef Tensor quotient = div(sub(cos(mul(away, PI)), sinc(away)), away)
    cdef Tensor z = mul(square(x), PI * PI)
    cdef Tensor poly = add(mul(z, add(mul(z, add(mul(z, 1.0 / 45360), -1.0 / 840)), 1.0 / 30)),
                           -1.0 / 3)
    return where(small, mul(mul(x, PI * PI), poly), quotient)


cdef Tensor sinc_rule(Tensor g, Tensor x, Tensor y):
    """g*sinc'(x) = g*(cos(pi x) - sinc(x))/x, 0 at x == 0 (sinc_slope)"""
    return mul(g, sinc_slope(x))


cdef class SincBackward(Fn1Backward):
    """y = sinc(x)  ->  gx = sinc_rule(g, x, y) = g*(cos(pi x) - sinc(x))/x, 0 at x == 0"""


cpdef Tensor sinc(object input):
    """The normalized sinc function sin(pi*input)/(pi*input), 1 at 0."""
    cdef Tensor a = operand(input, "sinc")
    cdef SincBackward node = SincBackward.__new__(SincBackward)
    node.fn = FN1_SINC
    if small_fast(a.data):
        return record_rule(wrap(fast_fn1(FN1_SINC, a.data, 0, 0, 0, False, False)), a, node,
                           False, sinc_rule)
    return float_unary(a, "sinc", _sinc_kernel, node, False, sinc_rule)
define_op(sinc, POINTWISE, FLOAT, inplace=IN_PLACE)


# -- frac: x - trunc(x) ------------------------------------------------------------------------

cdef Tensor frac_rule(Tensor g, Tensor x, Tensor y):
    """g (a copy: as a tangent it must not share the input tangent's memory)"""
    return clone(g)


cdef class FracBackward(RuleBackward):
    """y = x - trunc(x)  ->  gx = frac_rule(g, x, y) = g"""


cpdef Tensor frac(object input):
    """The fractional part input - trunc(input), with input's sign (floating tensors only)."""
    cdef Tensor a = operand(input, "frac")
    refuse_integers(descr(a.data), "frac")
    cdef object arr = table_forward(UN_FRAC, a, 0.0, 0.0)
    if arr is None:
        with np.errstate(invalid="ignore"):
            arr = as_array(np.subtract(a.data, np.trunc(a.data)))
    return record_table(arr, a, FracBackward.__new__(FracBackward), UN_FRAC, False, frac_rule)
define_op(frac, POINTWISE, FLOAT_ONLY, inplace=IN_PLACE)


# -- logaddexp2, hypot -------------------------------------------------------------------------

cdef Tensor logaddexp2_rule_x(Tensor g, Tensor x, Tensor y):
    """g*sigmoid((x - y)*ln 2) = g*2**x/(2**x + 2**y)"""
    return mul(g, sigmoid(mul(sub(x, y), LN2)))


cdef class Logaddexp2Backward(BinaryRuleBackward):
    """z = log2(2**x + 2**y)  ->  gx = g*sigmoid((x - y)*ln 2), gy = g*sigmoid((y - x)*ln 2)"""


cpdef Tensor logaddexp2(object input, object other):
    """log2(2**input + 2**other), without overflow (floating tensors only)."""
    return float_only_binary(input, other, "logaddexp2", np.logaddexp2, Logaddexp2Backward,
                             logaddexp2_rule_x, NULL, FN_LOGADDEXP2)
define_op(logaddexp2, POINTWISE, FLOAT_ONLY)


cdef Tensor hypot_rule_x(Tensor g, Tensor x, Tensor y):
    """g*x/hypot(x, y)"""
    return div(mul(g, x), hypot(x, y))


cdef class HypotBackward(BinaryRuleBackward):
    """z = sqrt(x*x + y*y)  ->  gx = g*x/z, gy = g*y/z"""


cpdef Tensor hypot(object input, object other):
    """sqrt(input**2 + other**2), without overflow (floating tensors only)."""
    return float_only_binary(input, other, "hypot", np.hypot, HypotBackward, hypot_rule_x, NULL,
                             FN_HYPOT)
define_op(hypot, POINTWISE, FLOAT_ONLY, inplace=IN_PLACE)


# -- xlogy: x*log(y), 0 where x == 0 -----------------------------------------------------------

def _xlogy_kernel(x, y, dtype=None):
    """x*log(y), exactly 0 where x == 0 and y is not NaN (PyTorch's and SciPy's xlogy)."""
    cdef object out = as_array(np.multiply(x, np.log(y, dtype=dtype), dtype=dtype))
    cdef object zero = np.logical_and(x == 0, np.logical_not(np.isnan(y)))
    if zero.any():
        np.copyto(out, 0, where=zero)
    return out


cdef Tensor xlogy_rule_x(Tensor g, Tensor x, Tensor y):
    """xlogy(g, y) = g*log(y), exactly 0 where x == 0 and y <= 0 (as PyTorch)"""
    return select_grad(xlogy(g, y), np.logical_not(np.logical_and(x.data == 0, y.data <= 0)))


cdef Tensor xlogy_rule_y(Tensor g, Tensor x, Tensor y):
    """g*x/y"""
    return div(mul(g, x), y)


cdef class XlogyBackward(BinaryRuleBackward):
    """z = x*log(y)  ->  gx = xlogy_rule_x = g*log(y) (0 where x == 0 and y <= 0),
    gy = xlogy_rule_y = g*x/y"""


cpdef Tensor xlogy(object input, object other):
    """input * log(other), 0 where input == 0 unless other is NaN."""
    return float_binary(input, other, "xlogy", _xlogy_kernel, XlogyBackward, xlogy_rule_x,
                        xlogy_rule_y, FN_XLOGY)
define_op(xlogy, POINTWISE, FLOAT, inplace=IN_PLACE)


# -- copysign ----------------------------------------------------------------------------------

cdef Tensor copysign_rule_x(Tensor g, Tensor x, Tensor y):
    """g*copysign(x, y)/x: g where the signs agree, -g where they differ, exactly 0 at x == 0"""
    with np.errstate(invalid="ignore", divide="ignore"):
        agree = np.divide(np.copysign(x.data, y.data), x.data)
    return select_grad(g, np.where(x.data == 0, 0, agree))


cdef Tensor copysign_rule_y(Tensor g, Tensor x, Tensor y):
    """0 (a sign is flat almost everywhere)"""
    return zero_grad_like(g)


cdef class CopysignBackward(BinaryRuleBackward):
    """z = |x|*sign(y)  ->  gx = copysign_rule_x = g*z/x (0 at x == 0), gy = 0"""


cpdef Tensor copysign(object input, object other):
    """|input| with the sign (bit) of other; integers compute in the default float dtype."""
    return float_binary(input, other, "copysign", np.copysign, CopysignBackward,
                        copysign_rule_x, copysign_rule_y, FN_COPYSIGN)
define_op(copysign, POINTWISE, FLOAT, inplace=IN_PLACE)


# -- fmod, remainder: the remainders of C and of Python ---------------------------------------

cdef Tensor fmod_rule_y(Tensor g, Tensor x, Tensor y):
    """-g*trunc(x/y)"""
    return neg(mul(g, trunc(div(x, y))))


cdef class FmodBackward(BinaryRuleBackward):
    """z = x - trunc(x/y)*y  ->  gx = g, gy = fmod_rule_y = -g*trunc(x/y)"""


cpdef Tensor fmod(object input, object other):
    """The remainder of input/other with input's sign (C's fmod); integers stay integer."""
    return numeric_binary(input, other, "fmod", np.fmod, FmodBackward, identity_rule,
                          fmod_rule_y, FN_FMOD)
define_op(fmod, POINTWISE, NUMERIC, inplace=IN_PLACE)


def _remainder_kernel(x, y, dtype=None):
    """x - floor(x/y)*y, with y's sign: fmod(x, y), plus y where it is nonzero and its sign is
    not y's (a zero keeps fmod's sign, as PyTorch)."""
    cdef object out = as_array(np.fmod(x, y, dtype=dtype))
    cdef object fix = np.logical_and(out != 0, np.not_equal(out < 0, y < 0))
    if fix.any():
        np.add(out, y, out=out, where=fix)
    return out


cdef Tensor remainder_rule_y(Tensor g, Tensor x, Tensor y):
    """-g*floor(x/y)"""
    return neg(mul(g, floor(div(x, y))))


cdef class RemainderBackward(BinaryRuleBackward):
    """z = x - floor(x/y)*y  ->  gx = g, gy = remainder_rule_y = -g*floor(x/y)"""


cpdef Tensor remainder(object input, object other):
    """The remainder of input/other with other's sign (Python's %); integers stay integer."""
    return numeric_binary(input, other, "remainder", _remainder_kernel, RemainderBackward,
                          identity_rule, remainder_rule_y, FN_REMAINDER)
define_op(remainder, POINTWISE, NUMERIC, inplace=IN_PLACE)


# -- nan_to_num --------------------------------------------------------------------------------

from libc.float cimport DBL_MAX, FLT_MAX     # the default replacements of +-inf

cdef Tensor nan_to_num_rule(Tensor g, Tensor x, Tensor y):
    """g where x is finite, exactly 0 where it was replaced"""
    return select_grad(g, np.isfinite(x.data))


cdef class NanToNumBackward(Fn1Backward):
    """y = nan_to_num(x)  ->  gx = nan_to_num_rule(g, x, y) = g where x is finite, else 0"""


cdef object replacement(object value, object default, cnp.dtype dt, str arg):
    """value (default when None) as a 0-d array of dt; a value beyond dt's range becomes +-inf."""
    cdef double v = default if value is None else float_arg(value, "nan_to_num", arg)
    with np.errstate(over="ignore"):
        return np.asarray(v, dtype=dt)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """input with NaN, +inf and -inf replaced by nan, posinf and neginf (None: the dtype's
    largest and lowest finite values); integer and bool tensors are copied unchanged."""
    cdef Tensor a = operand(input, "nan_to_num")
    cdef cnp.dtype dt = descr(a.data)
    cdef object info
    cdef object values
    cdef NanToNumBackward node = NanToNumBackward.__new__(NanToNumBackward)
    node.fn = FN1_NAN_TO_NUM
    cdef double largest
    if small_fast(a.data):          # the typed loop: a C cast takes a value beyond dt's to +-inf
        largest = FLT_MAX if dt.itemsize == 4 else DBL_MAX
        return record_rule(wrap(fast_fn1(
            FN1_NAN_TO_NUM, a.data, 0.0 if nan is None else float_arg(nan, "nan_to_num", "nan"),
            largest if posinf is None else float_arg(posinf, "nan_to_num", "posinf"),
            -largest if neginf is None else float_arg(neginf, "nan_to_num", "neginf"),
            False, False)), a, node, False, nan_to_num_rule)
    if is_float_dtype(dt):
        info = np.finfo(dt)
        values = (replacement(nan, 0.0, dt, "nan"), replacement(posinf, info.max, dt, "posinf"),
                  replacement(neginf, info.min, dt, "neginf"))
    else:
        for value, arg in ((nan, "nan"), (posinf, "posinf"), (neginf, "neginf")):
            if value is not None:
                float_arg(value, "nan_to_num", arg)
        return wrap(np.array(a.data, copy=True))
    cdef object arr = np.array(a.data, copy=True)
    np.copyto(arr, values[0], where=np.isnan(arr))
    np.copyto(arr, values[1], where=np.isposinf(arr))
    np.copyto(arr, values[2], where=np.isneginf(arr))
    return record_rule(wrap(arr), a, node, False, nan_to_num_rule)
define_op(nan_to_num, POINTWISE, ANY, inplace=IN_PLACE)
