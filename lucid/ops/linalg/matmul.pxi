# Matrix multiplication with NumPy's matmul semantics (1-D operands, batch broadcasting).

cdef class MatmulBackward(Node):
    """z = x @ y  ->  gx = g @ y^T, gy = x^T @ g  (1-D operands as rows/columns, batch summed)"""
    cdef SavedTensor a
    cdef SavedTensor b
    cdef cnp.dtype a_dtype
    cdef cnp.dtype b_dtype

    cdef void release_saved(self):
        self.a = None
        self.b = None

    cdef tuple apply(self, tuple grads):
        cdef Tensor g = grads[0]
        cdef Tensor x = self.a.unpack(self)
        cdef Tensor y = self.b.unpack(self)
        cdef tuple xs = x.data.shape, ys = y.data.shape
        cdef Tensor x2 = reshape(x, (1,) + xs) if len(xs) == 1 else x
        cdef Tensor y2 = reshape(y, ys + (1,)) if len(ys) == 1 else y
        cdef tuple gs = g.data.shape
        if len(xs) == 1 and len(ys) == 1:
            gs = (1, 1)
        elif len(xs) == 1:
            gs = gs[:len(gs) - 1] + (1, gs[len(gs) - 1])
        elif len(ys) == 1:
            gs = gs + (1,)
        cdef Tensor g2 = reshape(g, gs)
        gx = gy = None
        if needs(self, 0):
            if transposed_matrix(x2.data) and ndim_of(y2.data) == 2:
                gx = transpose(matmul(y2, transpose(g2, -1, -2)), -1, -2)   # laid out like x
            else:
                gx = sum_to(matmul(g2, transpose(y2, -1, -2)), x2.data.shape)
            gx = reduce_grad(reshape(gx, xs) if len(xs) == 1 else gx, None, self.a_dtype)
        if needs(self, 1):
            if transposed_matrix(y2.data) and ndim_of(x2.data) == 2:
                gy = transpose(matmul(transpose(g2, -1, -2), x2), -1, -2)   # laid out like y
            else:
                gy = sum_to(matmul(transpose(x2, -1, -2), g2), y2.data.shape)
            gy = reduce_grad(reshape(gy, ys) if len(ys) == 1 else gy, None, self.b_dtype)
        return (gx, gy)


cdef inline bint transposed_matrix(object arr) noexcept:
    """A 2-D array in column-major order only (typically w.T of a row-major w): its matmul
    gradient is computed as the transpose of a row-major product, so that the gradient that
    reaches w through the transpose is row-major too (a mixed-layout sum of gradients makes
    NumPy copy one operand through a buffer)."""
    cdef cnp.ndarray a = <cnp.ndarray>arr
    return cnp.PyArray_NDIM(a) == 2 and cnp.PyArray_IS_F_CONTIGUOUS(a) and \
        not cnp.PyArray_IS_C_CONTIGUOUS(a)


cdef Tensor matmul_jvp(Tensor a, Tensor b, Tensor out):
    """dz = tx @ y + x @ ty (a missing tangent's term skipped; matmul's own 1-D and batch
    rules shape each term like z); None when neither has a tangent."""
    cdef Tensor ta = tangent_of(a), tb = tangent_of(b)
    if ta is None and tb is None:
        return None
    cdef long level = suspend_fw()
    try:
        return fit_tangent(add_tangents(None if ta is None else matmul(ta, b),
                                        None if tb is None else matmul(a, tb)), out)
    finally:
        resume_fw(level)


# Note [Matmul kernels]
#   NumPy's matmul runs a stack of matrix products as one BLAS call per matrix, which two
#   shapes that vmap and batched backward make often turn into a slow loop of tiny calls: a
#   stack of row vectors (one or two rows each) against one matrix (2-D, or broadcast with
#   stride 0 over its leading dims, as vmap's per-sample copy of an unbatched weight is) is one
#   GEMM of all the rows, 2-3x faster; and a product over one contracted index (per-sample
#   outer products, x^T @ g of a row vector) is einsum's pointwise kernel, 2-5x faster. Both
#   pay from 4096 output elements; below that, and for stacks of taller matrices (8 rows: the
#   one GEMM is 1.2x slower), the BLAS loop wins. Measured on both of NumPy's x86 paths
#   (AVX-512 and AVX2) in float32 and float64: benchmarks/matmul_kernels.py.

cdef enum:
    STACK_KERNEL_MIN_SIZE = 4096       # output elements from which the two kernels pay
    ONE_GEMM_MAX_ROWS = 2              # rows per matrix of a stack that one GEMM serves faster


cdef inline bint one_matrix_for(cnp.ndarray a, cnp.ndarray b) noexcept:
    """Is b one matrix for all of a's stack: 2-D, or its leading dims broadcast (stride 0 or
    size 1) and no longer than a's, each 1 or a's size there?"""
    cdef int na = cnp.PyArray_NDIM(a), nb = cnp.PyArray_NDIM(b), i
    if nb < 2 or na < 3 or nb > na:
        return False
    for i in range(nb - 2):
        if cnp.PyArray_DIMS(b)[i] != 1 and (cnp.PyArray_STRIDES(b)[i] != 0 or
                                            cnp.PyArray_DIMS(b)[i] != cnp.PyArray_DIMS(a)[na - nb + i]):
            return False
    return True


cdef object matmul_arrays(object x, object y, cnp.dtype dt):
    """np.matmul(x, y) in dtype dt, by the faster kernel for a stack against one matrix or a
    product over one index (Note [Matmul kernels])."""
    cdef cnp.ndarray a = <cnp.ndarray>x, b = <cnp.ndarray>y
    cdef int na = cnp.PyArray_NDIM(a), nb = cnp.PyArray_NDIM(b)
    cdef object casting = None if (descr(a) is dt and descr(b) is dt) else dt
    cdef Py_ssize_t k, n
    if na < 2 or nb < 2:
        return np.matmul(x, y, dtype=casting)
    k = cnp.PyArray_DIMS(a)[na - 1]
    n = cnp.PyArray_DIMS(b)[nb - 1]
    if k != cnp.PyArray_DIMS(b)[nb - 2]:
        return np.matmul(x, y, dtype=casting)
    cdef Py_ssize_t out_size = (cnp.PyArray_SIZE(a) // k) * n if k > 0 else 0
    if out_size < STACK_KERNEL_MIN_SIZE:
        return np.matmul(x, y, dtype=casting)
    if cnp.PyArray_DIMS(a)[na - 2] <= ONE_GEMM_MAX_ROWS and one_matrix_for(a, b):
        return np.matmul(x.reshape(-1, k), y[(0,) * (nb - 2)] if nb > 2 else y,
                         dtype=casting).reshape(x.shape[:na - 1] + (n,))
    if k == 1 and is_float_dtype(descr(a)) and is_float_dtype(descr(b)):    # einsum casts safely
        return np.einsum("...ij,...jk->...ik", x, y, dtype=casting)
    return np.matmul(x, y, dtype=casting)


cpdef Tensor matmul(object x, object y):
    """Matrix product x @ y."""
    cdef Tensor a = operand(x, "matmul")
    cdef Tensor b = operand(y, "matmul")
    if a._wrapped_number or b._wrapped_number or ndim_of(a.data) == 0 \
            or ndim_of(b.data) == 0:
        raise RuntimeError(f"matmul: both operands need at least one dimension, got shapes "
                           f"{a.data.shape} and {b.data.shape}")
    cdef cnp.dtype dt = result_dtype(a, b)
    cdef object arr
    try:
        arr = matmul_arrays(a.data, b.data, dt)
    except ValueError:
        raise shape_error("matmul", a, b, "cannot be multiplied") from None
    cdef Tensor out = wrap(as_array(arr))
    cdef MatmulBackward node
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, matmul_jvp(a, b, out))
    if grad_enabled() and (a.requires_grad_c() or b.requires_grad_c()):
        node = MatmulBackward.__new__(MatmulBackward)
        record(node, a, b)
        node.a_dtype = descr(a.data)
        node.b_dtype = descr(b.data)
        if dt.kind == b'c':              # Note [Complex gradients]: the real rule, conjugated
            a, b = conj(a), conj(b)
        node.a = save_tensor(a, node, False)
        node.b = save_tensor(b, node, False)
        attach_output(out, node, 0)
    return out
define_op(matmul, BATCHED_MATRIX, ANY)
