# Typed reductions over one block of adjacent dims of a fast array (lucid/_reduce_loops.h):
# sum/mean, amax/amin and sum_to use them where NumPy's reduction of a short axis is slow.

from cpython.mem cimport PyMem_Malloc, PyMem_Free

cdef extern from "_reduce_loops.h" nogil:
    void lucid_sum_mid_f32(const float* a, long outer, long n, long inner, double scale,
                           float* o, double* acc)
    void lucid_sum_mid_f64(const double* a, long outer, long n, long inner, double scale,
                           double* o, double* acc)
    void lucid_extreme_mid_f32(const float* a, long outer, long n, long inner, int is_max,
                               float* o)
    void lucid_extreme_mid_f64(const double* a, long outer, long n, long inner, int is_max,
                               double* o)

cdef enum BlockReduction:
    R_SUM, R_MAX, R_MIN


cdef inline bint one_block(tuple dims) noexcept:
    """Are the sorted, distinct dims one run of adjacent dims (and at least one)?"""
    cdef Py_ssize_t k = len(dims)
    return k > 0 and <Py_ssize_t>dims[k - 1] - <Py_ssize_t>dims[0] + 1 == k


cdef inline bint fast_block_ok(object x, tuple dims) noexcept:
    """May fast_reduce_block reduce x over dims: x fast, non-empty and of at most 32 dims, dims
    one block?"""
    return is_fast(x) and cnp.PyArray_SIZE(<cnp.ndarray>x) > 0 and \
        cnp.PyArray_NDIM(<cnp.ndarray>x) <= 32 and one_block(dims)


cdef object fast_reduce_block(object x, tuple dims, tuple out_shape, int kind, double scale):
    """scale * sum (R_SUM), max (R_MAX) or min (R_MIN) of a fast, non-empty x over dims (one
    block: one_block(dims)), as a new array of x's dtype and out_shape (x's shape with dims
    dropped or kept as 1, or any shape of that size)."""
    cdef cnp.ndarray a = <cnp.ndarray>x
    cdef int nd = cnp.PyArray_NDIM(a), i
    cdef int first = dims[0], last = dims[len(dims) - 1] + 1
    cdef long outer = 1, n = 1, inner = 1
    for i in range(nd):
        if i < first:
            outer *= cnp.PyArray_DIM(a, i)
        elif i < last:
            n *= cnp.PyArray_DIM(a, i)
        else:
            inner *= cnp.PyArray_DIM(a, i)
    cdef int out_nd = len(out_shape)
    cdef cnp.npy_intp out_dims[32]
    for i in range(out_nd):
        out_dims[i] = out_shape[i]
    cdef object out = cnp.PyArray_EMPTY(out_nd, out_dims, cnp.PyArray_TYPE(a), 0)
    cdef cnp.ndarray o = <cnp.ndarray>out
    cdef bint f64 = cnp.PyArray_TYPE(a) == cnp.NPY_FLOAT64
    cdef double* acc = NULL
    if kind != R_SUM:
        if f64:
            lucid_extreme_mid_f64(<double*>cnp.PyArray_DATA(a), outer, n, inner, kind == R_MAX,
                                  <double*>cnp.PyArray_DATA(o))
        else:
            lucid_extreme_mid_f32(<float*>cnp.PyArray_DATA(a), outer, n, inner, kind == R_MAX,
                                  <float*>cnp.PyArray_DATA(o))
        return out
    if inner > 1:
        acc = <double*>PyMem_Malloc(inner * sizeof(double))
        if acc == NULL:
            raise MemoryError()
    try:
        if f64:
            lucid_sum_mid_f64(<double*>cnp.PyArray_DATA(a), outer, n, inner, scale,
                              <double*>cnp.PyArray_DATA(o), acc)
        else:
            lucid_sum_mid_f32(<float*>cnp.PyArray_DATA(a), outer, n, inner, scale,
                              <float*>cnp.PyArray_DATA(o), acc)
    finally:
        PyMem_Free(acc)
    return out
