# Typed loops over one block of adjacent dims of a fast array (lucid/kernels/block_loops.h): sum/mean,
# amax/amin and sum_to reduce with them, binary arithmetic broadcasts an operand over a block
# with them, and index_backward scatters rows of a trailing block with them, where NumPy's inner
# loop over a short axis (or np.add.at's machinery) is slow.

from cpython.mem cimport PyMem_Malloc, PyMem_Free

cdef extern from "kernels/block_loops.h" nogil:
    void lucid_binary_block_f32(int op, const float* a, const float* s, float* o, long outer,
                                long n, long inner)
    void lucid_binary_block_f64(int op, const double* a, const double* s, double* o, long outer,
                                long n, long inner)
    int lucid_row_numbers(const cnp.npy_intp* const* idx, int k, const cnp.npy_intp* dims,
                          long m, cnp.npy_intp* rows)
    void lucid_gather_rows_f32(const float* a, const cnp.npy_intp* rows, float* o, long m,
                               long inner)
    void lucid_gather_rows_f64(const double* a, const cnp.npy_intp* rows, double* o, long m,
                               long inner)
    void lucid_scatter_rows_f32(float* o, const cnp.npy_intp* rows, const float* g, long m,
                                long inner)
    void lucid_scatter_rows_f64(double* o, const cnp.npy_intp* rows, const double* g, long m,
                                long inner)
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
    cdef object out = new_fast_array(out_nd, out_dims, cnp.PyArray_TYPE(a))
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


cdef bint block_layout(cnp.ndarray x, cnp.ndarray big, long* outer, long* n, long* inner) noexcept:
    """Is x, broadcast to big's shape, the elements of a C-contiguous (outer, 1, inner) array
    stretched over one block of big's adjacent dims (n elements of big's shape)? x may have
    fewer dims, dims of 1 or stride-0 dims (an expanded view) there; big is (outer, n, inner).
    A same-shape x is not one (fast_pair covers it)."""
    cdef int nb = cnp.PyArray_NDIM(big), lead = nb - cnp.PyArray_NDIM(x), i, k
    if lead < 0 or nb > 32:
        return False
    cdef int first = -1, last = -1
    cdef cnp.npy_intp bd, xd, stride, expected = cnp.PyArray_ITEMSIZE(x)
    cdef bint stretched[32]
    for i in range(nb):
        bd = cnp.PyArray_DIM(big, i)
        xd = 1 if i < lead else cnp.PyArray_DIM(x, i - lead)
        stride = 0 if i < lead else cnp.PyArray_STRIDE(x, i - lead)
        if xd != bd and xd != 1:
            return False
        stretched[i] = bd != 1 and (xd == 1 or stride == 0)
        if stretched[i]:
            if first < 0:
                first = i
            elif last != i - 1:
                for k in range(last + 1, i):        # only dims of 1 may sit inside the block
                    if cnp.PyArray_DIM(big, k) != 1:
                        return False
            last = i
    if first < 0:
        return False
    outer[0] = n[0] = inner[0] = 1
    for i in range(nb - 1, -1, -1):                 # the rest must be C-contiguous
        bd = cnp.PyArray_DIM(big, i)
        if i < first:
            outer[0] *= bd
        elif i <= last:
            n[0] *= bd
            continue
        else:
            inner[0] *= bd
        if bd != 1:
            if cnp.PyArray_STRIDE(x, i - lead) != expected:
                return False
            expected *= bd
    return True


cdef object fast_binary_block(int op, object big, object small, bint small_first):
    """big (op) small, or small (op) big when small_first, for a fast big and a small of its
    dtype whose block_layout against big holds (else None); op a LucidOp of OP_ADD..OP_DIV."""
    cdef cnp.ndarray a = <cnp.ndarray>big, s = <cnp.ndarray>small
    cdef long outer, n, inner
    if cnp.PyArray_TYPE(s) != cnp.PyArray_TYPE(a) or not block_layout(s, a, &outer, &n, &inner):
        return None
    if small_first:
        op = OP_RSUB if op == OP_SUB else OP_RDIV if op == OP_DIV else op
    cdef object out = empty_like_fast(big)
    if cnp.PyArray_TYPE(a) == cnp.NPY_FLOAT64:
        lucid_binary_block_f64(op, <double*>cnp.PyArray_DATA(a), <double*>cnp.PyArray_DATA(s),
                               <double*>cnp.PyArray_DATA(<cnp.ndarray>out), outer, n, inner)
    else:
        lucid_binary_block_f32(op, <float*>cnp.PyArray_DATA(a), <float*>cnp.PyArray_DATA(s),
                               <float*>cnp.PyArray_DATA(<cnp.ndarray>out), outer, n, inner)
    return out


cdef object fast_broadcast(int op, object x, object y):
    """x (op) y by the block loop when one is fast and the other stretches over a block of it
    (block_layout), else None; op a LucidOp of OP_ADD..OP_DIV."""
    cdef object out = None
    if is_fast(x):
        out = fast_binary_block(op, x, y, False)
    if out is None and is_fast(y):
        out = fast_binary_block(op, y, x, True)
    return out


cdef tuple int_array_parts(object key, tuple shape):
    """key as a tuple of integer arrays on shape's leading dims (at most 32), or None."""
    cdef tuple parts = key if isinstance(key, tuple) else (key,)
    if len(parts) == 0 or len(parts) > len(shape) or len(parts) > 32:
        return None
    for p in parts:
        if type(p) is not np.ndarray or (<cnp.ndarray>p).dtype.kind != "i":
            return None
    return parts


cdef object row_numbers(tuple parts, tuple shape):
    """The row numbers, on shape's leading dims, that the integer arrays parts pick (negatives
    counting from the end), when they are C-contiguous intp arrays of one shape: an intp array
    of that shape; None for other arrays or when an index is out of range."""
    cdef int k = len(parts), d
    cdef const cnp.npy_intp* columns[32]
    cdef cnp.npy_intp dims[32]
    cdef cnp.ndarray first = <cnp.ndarray>parts[0], p
    for d in range(k):
        p = <cnp.ndarray>parts[d]
        if cnp.PyArray_TYPE(p) != cnp.NPY_INTP or not cnp.PyArray_IS_C_CONTIGUOUS(p) or \
                not same_shape(p, first):
            return None
        columns[d] = <const cnp.npy_intp*>cnp.PyArray_DATA(p)
        dims[d] = shape[d]
    cdef object rows = cnp.PyArray_EMPTY(cnp.PyArray_NDIM(first), cnp.PyArray_DIMS(first),
                                         cnp.NPY_INTP, 0)
    if lucid_row_numbers(columns, k, dims, cnp.PyArray_SIZE(first),
                         <cnp.npy_intp*>cnp.PyArray_DATA(<cnp.ndarray>rows)):
        return None
    return rows


cdef object fast_gather_rows(object x, object key):
    """x[key] for a fast x and a key of C-contiguous intp arrays of one shape on its leading dims
    (the typed gather of row_numbers' rows); None for other keys or an out-of-range index (the
    caller lets NumPy index, and raise)."""
    if not is_fast(x):
        return None
    cdef tuple shape = x.shape
    cdef tuple parts = int_array_parts(key, shape)
    if parts is None:
        return None
    cdef object rows = row_numbers(parts, shape)
    if rows is None:
        return None
    cdef Py_ssize_t k = len(parts), i
    cdef long inner = 1
    for i in range(k, len(shape)):
        inner *= shape[i]
    cdef tuple out_shape = rows.shape + shape[k:]
    cdef object out = np.empty(out_shape, dtype=x.dtype)
    cdef cnp.ndarray a = <cnp.ndarray>x, r = <cnp.ndarray>rows, o = <cnp.ndarray>out
    if cnp.PyArray_TYPE(a) == cnp.NPY_FLOAT64:
        lucid_gather_rows_f64(<double*>cnp.PyArray_DATA(a), <cnp.npy_intp*>cnp.PyArray_DATA(r),
                              <double*>cnp.PyArray_DATA(o), cnp.PyArray_SIZE(r), inner)
    else:
        lucid_gather_rows_f32(<float*>cnp.PyArray_DATA(a), <cnp.npy_intp*>cnp.PyArray_DATA(r),
                              <float*>cnp.PyArray_DATA(o), cnp.PyArray_SIZE(r), inner)
    return out


cdef object fast_scatter_rows(object g, tuple shape, object key):
    """zeros(shape) with g added at key (repeated places accumulating, in order) when key is an
    integer array, or a tuple of them, on shape's leading dims and g is fast; else None. The
    key must have indexed an array of shape already (its negative entries wrap)."""
    if not is_fast(g) or cnp.PyArray_SIZE(<cnp.ndarray>g) == 0:
        return None
    cdef tuple parts = int_array_parts(key, shape)
    if parts is None:
        return None
    cdef Py_ssize_t k = len(parts), inner = 1, i
    for i in range(len(shape)):
        if shape[i] == 0:
            return None
        if i >= k:
            inner *= shape[i]
    cdef object rows = row_numbers(parts, shape)
    if rows is None:                     # broadcast or int32 arrays
        rows = np.ravel_multi_index(parts, shape[:k], mode="wrap")
    if rows.shape + shape[k:] != g.shape:
        return None
    cdef cnp.ndarray r = <cnp.ndarray>rows, gg = <cnp.ndarray>g
    cdef object out = np.zeros(shape, dtype=g.dtype)
    cdef cnp.ndarray o = <cnp.ndarray>out
    if not cnp.PyArray_IS_C_CONTIGUOUS(r):
        r = <cnp.ndarray>np.ascontiguousarray(r)
    if cnp.PyArray_TYPE(gg) == cnp.NPY_FLOAT64:
        lucid_scatter_rows_f64(<double*>cnp.PyArray_DATA(o), <cnp.npy_intp*>cnp.PyArray_DATA(r),
                               <double*>cnp.PyArray_DATA(gg), cnp.PyArray_SIZE(r), inner)
    else:
        lucid_scatter_rows_f32(<float*>cnp.PyArray_DATA(o), <cnp.npy_intp*>cnp.PyArray_DATA(r),
                               <float*>cnp.PyArray_DATA(gg), cnp.PyArray_SIZE(r), inner)
    return out
