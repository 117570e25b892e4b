# Special functions, in lucid's own typed C loops (lucid/kernels/special.h: NumPy has none of
# them): erfc lgamma digamma polygamma erfinv.
#
# Each section: its rule (Note [Elementwise rules] in ops/elementwise/unary.pxi), its node (a
# docstring on RuleBackward; polygamma's node keeps its order n), its forward and its
# registration. The rules are lucid ops (digamma, polygamma, exp, ...), so create_graph
# records them and double backward follows: lgamma' = digamma, digamma' = polygamma(1, .),
# polygamma(n, .)' = polygamma(n + 1, .).

cdef extern from "kernels/special.h" nogil:
    enum LucidSpecial:
        SP_LGAMMA, SP_DIGAMMA, SP_POLYGAMMA, SP_ERFINV, SP_ERFC
    int lucid_special_scaled_f64(int op, int n, const double* g, const double* x, double* out,
                                 long size)
    int lucid_special_scaled_f32(int op, int n, const float* g, const float* x, float* out,
                                 long size)

cdef double SQRT_PI_OVER_2 = 0.8862269254527580         # sqrt(pi)/2, d/dx erfinv(x) at 0


cdef object special_kernel(int op, int n, Tensor a, Tensor g=None):
    """op (n: polygamma's order) over a's elements in a fresh C-ordered array of a's floating
    dtype (integer and bool inputs compute in the default float dtype, like PyTorch); times g's
    elements when g is given (a fast array of a's dtype and shape: a fused backward)."""
    cdef cnp.dtype dt = descr(a.data)
    if not is_float_dtype(dt):
        dt = default_float_dtype()
    cdef cnp.ndarray src = a.data if is_fast(a.data) else \
        np.asarray(a.data, dtype=dt, order="C")                          # 0-d stays 0-d
    cdef cnp.ndarray out = new_array_like(src)
    cdef long size = cnp.PyArray_SIZE(src)
    cdef void* scale = NULL if g is None else cnp.PyArray_DATA(<cnp.ndarray>g.data)
    cdef int failed
    if cnp.PyArray_TYPE(src) == cnp.NPY_FLOAT64:
        with nogil:
            failed = lucid_special_scaled_f64(op, n, <double*>scale,
                                              <double*>cnp.PyArray_DATA(src),
                                              <double*>cnp.PyArray_DATA(out), size)
    else:
        with nogil:
            failed = lucid_special_scaled_f32(op, n, <float*>scale, <float*>cnp.PyArray_DATA(src),
                                              <float*>cnp.PyArray_DATA(out), size)
    if failed:
        raise MemoryError()
    return out


cdef Tensor special_op(object x, int op, int table_op, str name, RuleBackward node,
                       bint save_output, unary_rule rule):
    """op's kernel on x (table_op's typed loop when it applies), recorded by rule with
    table_op's fused backward (Note [Table ops])."""
    cdef Tensor a = operand(x, name)
    cdef object arr = table_forward(table_op, a, 0.0, 0.0)
    return record_table(special_kernel(op, 0, a) if arr is None else arr, a, node, table_op,
                        save_output, rule)


# -- erfc --------------------------------------------------------------------------------------

cdef Tensor erfc_rule(Tensor g, Tensor x, Tensor y):
    """-erf_rule = -g*2/sqrt(pi)*exp(-x*x)"""
    return neg(erf_rule(g, x, y))


cdef class ErfcBackward(RuleBackward):
    """y = erfc(x)  ->  gx = erfc_rule(g, x, y) = -g*2/sqrt(pi)*exp(-x*x)"""


cpdef Tensor erfc(object input):
    """The complementary error function 1 - erf(input), accurate where erf is near 1."""
    return special_op(input, SP_ERFC, UN_ERFC, "erfc", ErfcBackward.__new__(ErfcBackward), False,
                      erfc_rule)
define_op(erfc, POINTWISE, FLOAT, inplace=IN_PLACE)


# -- lgamma, digamma ---------------------------------------------------------------------------

cdef Tensor lgamma_rule(Tensor g, Tensor x, Tensor y):
    """g*digamma(x)"""
    return mul(g, digamma(x))


cdef class LgammaBackward(RuleBackward):
    """y = log|Gamma(x)|  ->  gx = lgamma_rule(g, x, y) = g*digamma(x)"""


cpdef Tensor lgamma(object input):
    """log|Gamma(input)| (inf at the poles 0, -1, -2, ...)."""
    return special_op(input, SP_LGAMMA, UN_LGAMMA, "lgamma", LgammaBackward.__new__(LgammaBackward),
                      False, lgamma_rule)
define_op(lgamma, POINTWISE, FLOAT, inplace=IN_PLACE)


cdef Tensor digamma_rule(Tensor g, Tensor x, Tensor y):
    """g*polygamma(1, x)"""
    return mul(g, polygamma_of(1, x))


cdef class DigammaBackward(RuleBackward):
    """y = digamma(x)  ->  gx = digamma_rule(g, x, y) = g*polygamma(1, x)"""


cpdef Tensor digamma(object input):
    """The logarithmic derivative of Gamma, Gamma'(input)/Gamma(input) (-inf at 0, NaN at the
    negative integers, as PyTorch)."""
    return special_op(input, SP_DIGAMMA, UN_DIGAMMA, "digamma",
                      DigammaBackward.__new__(DigammaBackward), False, digamma_rule)
define_op(digamma, POINTWISE, FLOAT, inplace=IN_PLACE)


# -- polygamma(n, x): the n-th derivative of digamma -------------------------------------------

cdef Tensor polygamma_rule(int n, Tensor g, Tensor x):
    """g*polygamma(n + 1, x)"""
    return mul(g, polygamma_of(n + 1, x))


cdef class PolygammaBackward(UnaryBackward):
    """y = polygamma(n, x)  ->  gx = polygamma_rule(n, g, x) = g*polygamma(n + 1, x)"""
    cdef int n

    cdef tuple apply(self, tuple grads):
        cdef Tensor g = grads[0], x = self.saved_x.unpack(self)
        if fused_grad_applies(g, x):         # g*polygamma(n + 1, x) in one pass
            return (wrap(special_kernel(SP_POLYGAMMA, self.n + 1, x, g)),)
        return (polygamma_rule(self.n, g, x),)


cdef Tensor polygamma_jvp(int n, Tensor a):
    """Note [Elementwise rules]: the tangent polygamma_rule(n, tangent of a, a), or None."""
    cdef Tensor t = tangent_of(a)
    if t is None:
        return None
    cdef long level = suspend_fw()
    try:
        return polygamma_rule(n, t, a)
    finally:
        resume_fw(level)


cdef Tensor polygamma_of(int n, Tensor a):
    """polygamma(n, a) for n >= 0 (n == 0: digamma): its tangent by polygamma_rule when a dual
    level is active, its node when a requires grad (the order of record_unary)."""
    if n == 0:
        return digamma(a)
    cdef Tensor out = wrap(special_kernel(SP_POLYGAMMA, n, a))
    cdef bint recording = grad_enabled() and a.requires_grad_c()
    cdef PolygammaBackward node = None
    if recording:
        node = PolygammaBackward.__new__(PolygammaBackward)
        node.n = n
        record(node, a, None)
        attach_output(out, node, 0)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, polygamma_jvp(n, a))
    if recording:
        node.saved_x = save_tensor(a, node, False)
    return out


def polygamma(n, input):
    """The n-th derivative of digamma at input (n >= 0; polygamma(0, x) is digamma(x))."""
    cdef Py_ssize_t order = int_arg(n, "polygamma", "n")
    if order < 0:
        raise RuntimeError("polygamma: n must be a non-negative integer (polygamma(n, x) does "
                           f"not support negative n), got {order}")
    if order > 1000000000:
        raise ValueError(f"polygamma: n is {order}, beyond the orders supported (10**9)")
    return polygamma_of(<int>order, operand(input, "polygamma"))
define_op(polygamma, POINTWISE, FLOAT, method="own")


def _tensor_polygamma(Tensor self, n):
    """The n-th derivative of digamma at self (lucid.polygamma(n, self))."""
    return polygamma(n, self)
install_methods(Tensor, {"polygamma": _tensor_polygamma})


# -- erfinv ------------------------------------------------------------------------------------

cdef Tensor erfinv_rule(Tensor g, Tensor x, Tensor y):
    """g*sqrt(pi)/2*exp(y*y)"""
    return mul(g, mul(exp(mul(y, y)), SQRT_PI_OVER_2))


cdef class ErfinvBackward(RuleBackward):
    """y = erfinv(x)  ->  gx = erfinv_rule(g, x, y) = g*sqrt(pi)/2*exp(y*y)"""


cpdef Tensor erfinv(object input):
    """The inverse of erf on (-1, 1): +-inf at +-1, NaN beyond."""
    return special_op(input, SP_ERFINV, UN_ERFINV, "erfinv", ErfinvBackward.__new__(ErfinvBackward),
                      True, erfinv_rule)
define_op(erfinv, POINTWISE, FLOAT, inplace=IN_PLACE)
