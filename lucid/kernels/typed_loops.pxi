# Typed loops for contiguous float32/float64 arrays: the hot path of small elementwise ops.
#
# NumPy's ufunc call costs about a microsecond before it touches data; these loops cost tens of
# nanoseconds, so they win on small arrays. Above LARGE elements NumPy's SIMD kernels (tanh,
# exp, log) win, so those fall back to ufuncs with out=; the arithmetic, fused-backward and sum
# loops (lucid/kernels/loops.h, built for AVX-512, AVX2 and the baseline) stay typed at every size.

from libc.math cimport exp as c_exp, expf as c_expf, log as c_log, tanh as c_tanh

cdef extern from "kernels/simd.h" nogil:
    void lucid_tanh_f32(const float* x, float* out, long n)

cdef extern from "kernels/loops.h" nogil:
    cdef enum LucidOp:                  # the arithmetic op codes of the ops and the loops
        OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_POW, OP_RSUB, OP_RDIV
    void lucid_binary_f32(int op, const float* a, const float* b, float* o, long n)
    void lucid_binary_f64(int op, const double* a, const double* b, double* o, long n)
    void lucid_scalar_f32(int op, const float* a, float s, float* o, long n)
    void lucid_scalar_f64(int op, const double* a, double s, double* o, long n)
    void lucid_tanh_backward_f32(const float* g, const float* y, float* o, long n)
    void lucid_tanh_backward_f64(const double* g, const double* y, double* o, long n)
    void lucid_sigmoid_backward_f32(const float* g, const float* y, float* o, long n)
    void lucid_sigmoid_backward_f64(const double* g, const double* y, double* o, long n)
    double lucid_sum_f32(const float* a, long n)
    double lucid_sum_f64(const double* a, long n)

cdef extern from "kernels/unary_loops.h" nogil:
    # (the op codes, enum LucidUnary, are declared in _core_internal.pxi: lucid._ops uses them)
    void lucid_unary_f32(int op, const float* a, float* o, long n, double p, double q)
    void lucid_unary_f64(int op, const double* a, double* o, long n, double p, double q)
    void lucid_unary_grad_f32(int op, const float* g, const float* s, float* o, long n,
                              double p, double q)
    void lucid_unary_grad_f64(int op, const double* g, const double* s, double* o, long n,
                              double p, double q)
    long lucid_unary_limit(int op, int numpy_simd, int backward)

cdef enum:
    LARGE = 2048

ctypedef fused real:
    float
    double

# (is_fast, the test for a C-contiguous float32 or float64 array, is in _core_internal.pxi)


cdef inline bint fast_pair(object x, object y) noexcept:
    """Both fast, same dtype, same shape."""
    return is_fast(x) and is_fast(y) and \
        cnp.PyArray_TYPE(<cnp.ndarray>x) == cnp.PyArray_TYPE(<cnp.ndarray>y) and same_shape(x, y)


cdef inline object new_fast_array(int nd, cnp.npy_intp* dims, int typenum):
    """An uninitialised C-ordered array of this shape and dtype: from the pool when one fits
    (Note [Array pool])."""
    cdef object out = pooled_array(typenum, nd, dims)
    if out is None:
        out = cnp.PyArray_EMPTY(nd, dims, typenum, 0)
    return out


cdef inline object empty_like_fast(object arr):
    """An uninitialised array of arr's dtype and shape (C order), pooled when one fits."""
    cdef cnp.ndarray a = <cnp.ndarray>arr
    return new_fast_array(cnp.PyArray_NDIM(a), cnp.PyArray_DIMS(a), cnp.PyArray_TYPE(a))


cdef object fast_binary(int op, object x, object y, object out):
    """out = x (op) y elementwise; all fast, same dtype and shape (out made when None)."""
    if out is None:
        out = empty_like_fast(x)
    cdef cnp.ndarray a = <cnp.ndarray>x, b = <cnp.ndarray>y, o = <cnp.ndarray>out
    cdef Py_ssize_t n = cnp.PyArray_SIZE(a)
    if cnp.PyArray_TYPE(a) == cnp.NPY_FLOAT64:
        lucid_binary_f64(op, <double*>cnp.PyArray_DATA(a), <double*>cnp.PyArray_DATA(b),
                         <double*>cnp.PyArray_DATA(o), n)
    else:
        lucid_binary_f32(op, <float*>cnp.PyArray_DATA(a), <float*>cnp.PyArray_DATA(b),
                         <float*>cnp.PyArray_DATA(o), n)
    return out


cdef void add_into(object dst, object src) except *:
    """dst += src: the typed loop for two fast arrays of one dtype and shape, else NumPy."""
    if fast_pair(dst, src):
        fast_binary(OP_ADD, dst, src, dst)
    else:
        np.add(dst, src, out=dst)


cdef object fast_scalar(int op, object x, double s):
    """x (op) s elementwise into a new array of x's dtype; x fast."""
    return fast_scalar_into(op, x, s, empty_like_fast(x))


cdef object fast_scalar_into(int op, object x, double s, object out):
    """out = x (op) s elementwise; x and out fast, same dtype and shape (out may be x)."""
    cdef cnp.ndarray a = <cnp.ndarray>x, o = <cnp.ndarray>out
    cdef Py_ssize_t n = cnp.PyArray_SIZE(a)
    if cnp.PyArray_TYPE(a) == cnp.NPY_FLOAT64:
        lucid_scalar_f64(op, <double*>cnp.PyArray_DATA(a), s, <double*>cnp.PyArray_DATA(o), n)
    else:
        lucid_scalar_f32(op, <float*>cnp.PyArray_DATA(a), <float>s, <float*>cnp.PyArray_DATA(o), n)
    return out


cdef object fast_fused_backward(bint is_tanh, object g, object y, object out=None):
    """tanh: g*(1 - y*y); sigmoid: g*y*(1 - y); one pass; g, y fast, same dtype and shape; into
    out (which may be g) or a new array."""
    if out is None:
        out = empty_like_fast(y)
    cdef cnp.ndarray gg = <cnp.ndarray>g, yy = <cnp.ndarray>y, o = <cnp.ndarray>out
    cdef Py_ssize_t n = cnp.PyArray_SIZE(yy)
    cdef double* g64 = <double*>cnp.PyArray_DATA(gg)
    cdef double* y64 = <double*>cnp.PyArray_DATA(yy)
    cdef double* o64 = <double*>cnp.PyArray_DATA(o)
    if cnp.PyArray_TYPE(yy) == cnp.NPY_FLOAT64:
        if is_tanh:
            lucid_tanh_backward_f64(g64, y64, o64, n)
        else:
            lucid_sigmoid_backward_f64(g64, y64, o64, n)
    elif is_tanh:
        lucid_tanh_backward_f32(<float*>g64, <float*>y64, <float*>o64, n)
    else:
        lucid_sigmoid_backward_f32(<float*>g64, <float*>y64, <float*>o64, n)
    return out


cdef enum FastUnary:
    U_EXP, U_LOG, U_TANH, U_SIGMOID


cdef bint numpy_runs_avx512():
    """Does NumPy run its AVX-512 kernels here (X86_V4 / AVX512_SKX dispatched and not disabled
    by NPY_DISABLE_CPU_FEATURES)? Its float32 tanh is then a 16-wide kernel ~5x faster than
    lucid's 8-wide one (kernels/simd.h), and its SVML kernels (tan, asin, sinh, log1p, ...) beat
    the C library's (kernels/unary_loops.h); on its AVX2 path lucid's are faster. Decided once,
    at import, from NumPy's own dispatch report: deterministic, no timing."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:
        return False
    return bool(features.get("X86_V4", False) or features.get("AVX512_SKX", False))


cdef bint NUMPY_AVX512 = numpy_runs_avx512()


cdef inline void loop_unary(int op, real* a, real* o, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    if op == U_EXP:
        for i in range(n):
            o[i] = c_exp(a[i])
    elif op == U_LOG:
        for i in range(n):
            o[i] = c_log(a[i])
    elif op == U_SIGMOID:           # in the element's type, as NumPy's path: exp(-x) = inf gives 0
        if real is float:
            for i in range(n):
                o[i] = <float>1 / (<float>1 + c_expf(-a[i]))
        else:
            for i in range(n):
                o[i] = 1 / (1 + c_exp(-a[i]))
    else:
        for i in range(n):
            o[i] = c_tanh(a[i])


cdef object fast_unary(int op, object ufunc, object x):
    """ufunc(x) for a fast x: libm loop when small, NumPy's SIMD kernel with out= when large
    (U_SIGMOID: its caller runs only the small case, as ufunc is None);
    float32 tanh runs lucid's vectorised kernel (kernels/simd.h) unless NumPy's AVX-512 one is there
    and the array is large."""
    cdef object out = empty_like_fast(x)
    cdef cnp.ndarray a = <cnp.ndarray>x, o = <cnp.ndarray>out
    cdef Py_ssize_t n = cnp.PyArray_SIZE(a)
    if op == U_TANH and cnp.PyArray_TYPE(a) == cnp.NPY_FLOAT32 and \
            not (NUMPY_AVX512 and n >= LARGE):
        lucid_tanh_f32(<float*>cnp.PyArray_DATA(a), <float*>cnp.PyArray_DATA(o), n)
    elif n >= LARGE:
        ufunc(x, out=out)
    elif cnp.PyArray_TYPE(a) == cnp.NPY_FLOAT64:
        loop_unary[double](op, <double*>cnp.PyArray_DATA(a), <double*>cnp.PyArray_DATA(o), n)
    else:
        loop_unary[float](op, <float*>cnp.PyArray_DATA(a), <float*>cnp.PyArray_DATA(o), n)
    return out


cdef inline bint table_loop_fits(int op, object arr, bint backward) noexcept:
    """Does op's typed loop (kernels/unary_loops.h) beat NumPy's kernels at arr's size, forward
    or backward (LUCID_UNARY_LIMITS, for the NumPy path this process runs)?"""
    return op != UN_NONE and \
        cnp.PyArray_SIZE(<cnp.ndarray>arr) <= lucid_unary_limit(op, NUMPY_AVX512, backward)


cdef object table_loop(int op, object x, double p, double q):
    """Table op op (p, q: its parameters) of a fast x into a new array of x's dtype."""
    cdef object out = empty_like_fast(x)
    cdef cnp.ndarray a = <cnp.ndarray>x, o = <cnp.ndarray>out
    cdef Py_ssize_t n = cnp.PyArray_SIZE(a)
    if cnp.PyArray_TYPE(a) == cnp.NPY_FLOAT64:
        lucid_unary_f64(op, <double*>cnp.PyArray_DATA(a), <double*>cnp.PyArray_DATA(o), n, p, q)
    else:
        lucid_unary_f32(op, <float*>cnp.PyArray_DATA(a), <float*>cnp.PyArray_DATA(o), n, p, q)
    return out


cdef object table_grad_loop(int op, object g, object s, object out, double p, double q):
    """g * op'(x) in one pass (s: the saved input or output), into out (which may be g) or a new
    array when None; g, s fast, same dtype and shape."""
    if out is None:
        out = empty_like_fast(s)
    cdef cnp.ndarray gg = <cnp.ndarray>g, ss = <cnp.ndarray>s, o = <cnp.ndarray>out
    cdef Py_ssize_t n = cnp.PyArray_SIZE(ss)
    if cnp.PyArray_TYPE(ss) == cnp.NPY_FLOAT64:
        lucid_unary_grad_f64(op, <double*>cnp.PyArray_DATA(gg), <double*>cnp.PyArray_DATA(ss),
                             <double*>cnp.PyArray_DATA(o), n, p, q)
    else:
        lucid_unary_grad_f32(op, <float*>cnp.PyArray_DATA(gg), <float*>cnp.PyArray_DATA(ss),
                             <float*>cnp.PyArray_DATA(o), n, p, q)
    return out


cdef object fast_sum_all(object x, bint keepdim, double scale):
    """scale * sum of every element of a fast x, in a 0-d (or all-ones-shaped) array of x's dtype."""
    cdef cnp.ndarray a = <cnp.ndarray>x
    cdef int nd = cnp.PyArray_NDIM(a) if keepdim else 0
    cdef cnp.npy_intp ones[32]
    cdef int i
    for i in range(nd):
        ones[i] = 1
    cdef object out = new_fast_array(nd, ones, cnp.PyArray_TYPE(a))
    cdef Py_ssize_t n = cnp.PyArray_SIZE(a)
    if cnp.PyArray_TYPE(a) == cnp.NPY_FLOAT64:
        (<double*>cnp.PyArray_DATA(<cnp.ndarray>out))[0] = \
            lucid_sum_f64(<double*>cnp.PyArray_DATA(a), n) * scale
    else:
        (<float*>cnp.PyArray_DATA(<cnp.ndarray>out))[0] = <float>(
            lucid_sum_f32(<float*>cnp.PyArray_DATA(a), n) * scale)
    return out


cdef inline void loop_fill(real* o, real v, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        o[i] = v


cdef object fast_fill(tuple shape, object value_array, double scale):
    """A new contiguous array of shape filled with scale * the one value of a fast array."""
    cdef cnp.ndarray v = <cnp.ndarray>value_array
    cdef int nd = len(shape), i
    cdef cnp.npy_intp dims[32]
    for i in range(nd):
        dims[i] = shape[i]
    cdef object out = new_fast_array(nd, dims, cnp.PyArray_TYPE(v))
    cdef Py_ssize_t n = cnp.PyArray_SIZE(<cnp.ndarray>out)
    if cnp.PyArray_TYPE(v) == cnp.NPY_FLOAT64:
        loop_fill[double](<double*>cnp.PyArray_DATA(<cnp.ndarray>out),
                          (<double*>cnp.PyArray_DATA(v))[0] * scale, n)
    else:
        loop_fill[float](<float*>cnp.PyArray_DATA(<cnp.ndarray>out),
                         <float>((<float*>cnp.PyArray_DATA(v))[0] * scale), n)
    return out
