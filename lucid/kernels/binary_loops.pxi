# Typed one-pass loops of the binary functions, the selections and the clamps
# (kernels/binary_loops.h): the forward, and the backward of both inputs at once, for small
# contiguous arrays of one float dtype and shape (below LARGE elements, or the function's own
# limit, fn2_limits; above, NumPy's kernels and the ops' rules).

# (their codes: kernels/fn_codes.pxi)
cdef extern from "kernels/binary_loops.h" nogil:
    void lucid_fn2_f32(int fn, const float* a, const float* b, float* o, long n)
    void lucid_fn2_f64(int fn, const double* a, const double* b, double* o, long n)
    void lucid_fn2_grad_f32(int fn, const float* g, const float* a, const float* b, float* ga,
                            float* gb, long n)
    void lucid_fn2_grad_f64(int fn, const double* g, const double* a, const double* b,
                            double* ga, double* gb, long n)
    void lucid_fn1_f32(int fn, const float* a, float* o, long n, float lo, float hi, float alt,
                       int has_lo, int has_hi)
    void lucid_fn1_f64(int fn, const double* a, double* o, long n, double lo, double hi,
                       double alt, int has_lo, int has_hi)
    void lucid_fn1_grad_f32(int fn, const float* g, const float* a, float* ga, long n, float lo,
                            float hi, int has_lo, int has_hi)
    void lucid_fn1_grad_f64(int fn, const double* g, const double* a, double* ga, long n,
                            double lo, double hi, int has_lo, int has_hi)
    void lucid_select_f32(const unsigned char* c, const float* a, const float* b, float fill,
                          float* o, long n)
    void lucid_select_f64(const unsigned char* c, const double* a, const double* b, double fill,
                          double* o, long n)
    void lucid_select_grad_f32(const unsigned char* c, const float* g, float* ga, float* gb,
                               long n)
    void lucid_select_grad_f64(const unsigned char* c, const double* g, double* ga, double* gb,
                               long n)


cdef inline void* data_or_null(object arr) noexcept:
    """arr's first element, or NULL for None (an output not wanted)."""
    return NULL if arr is None else cnp.PyArray_DATA(<cnp.ndarray>arr)


cdef bint small_fast(object x) noexcept:
    """A fast array (kernels/typed_loops.pxi) below LARGE elements: the one-pass loops apply."""
    return is_fast(x) and cnp.PyArray_SIZE(<cnp.ndarray>x) < LARGE


cdef bint small_fast_pair(object x, object y) noexcept:
    """Two small fast arrays of one dtype and shape."""
    return fast_pair(x, y) and cnp.PyArray_SIZE(<cnp.ndarray>x) < LARGE


cdef enum:
    # pow and atan2 of libm, per element, against NumPy's AVX-512 (SVML) kernels: the loops win
    # below ~600-770 elements (op and backward, float32, measured); on NumPy's AVX2 path, whose
    # kernels are libm's too, at every size below LARGE
    SVML_LOOP_MAX = 512
    # logaddexp(2): about even at ~1000 elements, where the rules' sigmoid turns to NumPy's
    EXP_LOOP_MAX = 1024


cdef Py_ssize_t fn2_limits[16]          # per LucidFn: the loops run below this many elements


cdef void set_fn2_limits() noexcept:
    cdef int i
    for i in range(16):
        fn2_limits[i] = LARGE
    if NUMPY_AVX512:                    # NumPy runs its AVX-512 kernels (typed_loops.pxi)
        fn2_limits[<int>FN_POW] = SVML_LOOP_MAX
        fn2_limits[<int>FN_ATAN2] = SVML_LOOP_MAX
    fn2_limits[<int>FN_LOGADDEXP] = EXP_LOOP_MAX
    fn2_limits[<int>FN_LOGADDEXP2] = EXP_LOOP_MAX


set_fn2_limits()


cdef inline bint fn2_applies(int fn, Tensor a, Tensor b) noexcept:
    """Do fn's loops take a, b: a plain pair (_core_internal.pxi) below fn's limit?"""
    return plain_pair(a, b) and cnp.PyArray_SIZE(<cnp.ndarray>a.data) < fn2_limits[fn]


cdef bint fast_mask_for(object mask, object x) noexcept:
    """A C-contiguous bool array of x's shape (where's and masked_fill's loops read it)."""
    return cnp.PyArray_TYPE(<cnp.ndarray>mask) == cnp.NPY_BOOL and \
        cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>mask) and same_shape(mask, x)


cdef object fast_fn2(int fn, object x, object y):
    """fn(x, y) into a new array; x, y a small fast pair."""
    cdef object out = empty_like_fast(x)
    cdef Py_ssize_t n = cnp.PyArray_SIZE(<cnp.ndarray>x)
    cdef void* a = cnp.PyArray_DATA(<cnp.ndarray>x)
    cdef void* b = cnp.PyArray_DATA(<cnp.ndarray>y)
    cdef void* o = cnp.PyArray_DATA(<cnp.ndarray>out)
    if cnp.PyArray_TYPE(<cnp.ndarray>x) == cnp.NPY_FLOAT64:
        lucid_fn2_f64(fn, <double*>a, <double*>b, <double*>o, n)
    else:
        lucid_fn2_f32(fn, <float*>a, <float*>b, <float*>o, n)
    return out


cdef tuple fast_fn2_grads(int fn, object g, object x, object y, bint want_a, bint want_b):
    """The gradients (ga, gb) of z = fn(x, y) for z's gradient g, in one pass (None where not
    wanted); g, x, y small fast arrays of one dtype and shape."""
    cdef object ga = empty_like_fast(x) if want_a else None
    cdef object gb = empty_like_fast(x) if want_b else None
    cdef Py_ssize_t n = cnp.PyArray_SIZE(<cnp.ndarray>x)
    cdef void* pg = cnp.PyArray_DATA(<cnp.ndarray>g)
    cdef void* pa = cnp.PyArray_DATA(<cnp.ndarray>x)
    cdef void* pb = cnp.PyArray_DATA(<cnp.ndarray>y)
    if cnp.PyArray_TYPE(<cnp.ndarray>x) == cnp.NPY_FLOAT64:
        lucid_fn2_grad_f64(fn, <double*>pg, <double*>pa, <double*>pb, <double*>data_or_null(ga),
                           <double*>data_or_null(gb), n)
    else:
        lucid_fn2_grad_f32(fn, <float*>pg, <float*>pa, <float*>pb, <float*>data_or_null(ga),
                           <float*>data_or_null(gb), n)
    return (ga, gb)


cdef object fast_fn1(int fn, object x, double lo, double hi, double alt, bint has_lo,
                     bint has_hi, object out=None):
    """fn(x) into out (which may be x) or a new array; x small fast or, for FN1_NEG, fast.
    FN1_CLAMP: x limited to [lo, hi] (each bound only where has_lo / has_hi); FN1_NAN_TO_NUM:
    NaN, +inf, -inf replaced by lo, hi, alt (in x's dtype)."""
    if out is None:
        out = empty_like_fast(x)
    cdef Py_ssize_t n = cnp.PyArray_SIZE(<cnp.ndarray>x)
    cdef void* a = cnp.PyArray_DATA(<cnp.ndarray>x)
    cdef void* o = cnp.PyArray_DATA(<cnp.ndarray>out)
    if cnp.PyArray_TYPE(<cnp.ndarray>x) == cnp.NPY_FLOAT64:
        lucid_fn1_f64(fn, <double*>a, <double*>o, n, lo, hi, alt, has_lo, has_hi)
    else:
        lucid_fn1_f32(fn, <float*>a, <float*>o, n, <float>lo, <float>hi, <float>alt, has_lo,
                      has_hi)
    return out


cdef object fast_fn1_grad(int fn, object g, object x, double lo, double hi, bint has_lo,
                          bint has_hi):
    """The gradient g*fn'(x) of fn(x) (fast_fn1's constants) in a new array; g, x a small fast
    pair."""
    cdef object out = empty_like_fast(x)
    cdef Py_ssize_t n = cnp.PyArray_SIZE(<cnp.ndarray>x)
    cdef void* pg = cnp.PyArray_DATA(<cnp.ndarray>g)
    cdef void* a = cnp.PyArray_DATA(<cnp.ndarray>x)
    cdef void* o = cnp.PyArray_DATA(<cnp.ndarray>out)
    if cnp.PyArray_TYPE(<cnp.ndarray>x) == cnp.NPY_FLOAT64:
        lucid_fn1_grad_f64(fn, <double*>pg, <double*>a, <double*>o, n, lo, hi, has_lo, has_hi)
    else:
        lucid_fn1_grad_f32(fn, <float*>pg, <float*>a, <float*>o, n, <float>lo, <float>hi,
                           has_lo, has_hi)
    return out


cdef object fast_select(object mask, object x, object y, double fill):
    """where(mask, x, y) into a new array, or (y None) masked_fill(x, mask, fill); x (and y) small
    fast of one dtype and shape, mask a fast mask for x."""
    cdef object out = empty_like_fast(x)
    cdef Py_ssize_t n = cnp.PyArray_SIZE(<cnp.ndarray>x)
    cdef unsigned char* c = <unsigned char*>cnp.PyArray_DATA(<cnp.ndarray>mask)
    cdef void* a = cnp.PyArray_DATA(<cnp.ndarray>x)
    cdef void* o = cnp.PyArray_DATA(<cnp.ndarray>out)
    if cnp.PyArray_TYPE(<cnp.ndarray>x) == cnp.NPY_FLOAT64:
        lucid_select_f64(c, <double*>a, <double*>data_or_null(y), fill, <double*>o, n)
    else:
        lucid_select_f32(c, <float*>a, <float*>data_or_null(y), <float>fill, <float*>o, n)
    return out


cdef tuple fast_select_grads(object mask, object g, bint want_a, bint want_b):
    """(g where mask, g where not mask), exactly 0 elsewhere, in one pass each (None where not
    wanted); g small fast, mask a fast mask for it."""
    cdef object ga = empty_like_fast(g) if want_a else None
    cdef object gb = empty_like_fast(g) if want_b else None
    cdef Py_ssize_t n = cnp.PyArray_SIZE(<cnp.ndarray>g)
    cdef unsigned char* c = <unsigned char*>cnp.PyArray_DATA(<cnp.ndarray>mask)
    cdef void* pg = cnp.PyArray_DATA(<cnp.ndarray>g)
    if cnp.PyArray_TYPE(<cnp.ndarray>g) == cnp.NPY_FLOAT64:
        lucid_select_grad_f64(c, <double*>pg, <double*>data_or_null(ga),
                              <double*>data_or_null(gb), n)
    else:
        lucid_select_grad_f32(c, <float*>pg, <float*>data_or_null(ga), <float*>data_or_null(gb),
                              n)
    return (ga, gb)


cdef object copy_fast(object x):
    """A copy of a fast array in new memory (pooled when one fits)."""
    cdef object out = empty_like_fast(x)
    memcpy(cnp.PyArray_DATA(<cnp.ndarray>out), cnp.PyArray_DATA(<cnp.ndarray>x),
           cnp.PyArray_NBYTES(<cnp.ndarray>x))
    return out
