# Functions of a square matrix: matrix_exp, matrix_power (Note [Linalg rules]).
#
# Note [Matrix exponential]
#   exp(A) by scaling and squaring: X = A / 2^s with ||X||_1 <= 1/2 (s per matrix), the Taylor
#   polynomial of degree 18 of exp(X) (its remainder is below 1e-22 relative there), squared s
#   times; float32 computes in float64 and rounds once. Its derivatives are exact, from the
#   block identity
#       exp([[A, E], [0, A]]) = [[exp(A), L(A, E)], [0, exp(A)]],
#   L(A, E) the Frechet derivative of exp at A along E: the jvp is L(A, dA), and the backward
#   its adjoint L(A^T, g) (the top-right block of exp([[A^T, g], [0, A^T]])). Both call
#   matrix_exp itself on a 2n x 2n matrix built with lucid ops, so every further order records
#   through the same node. matrix_power is repeated squaring with matmul (inv first for n < 0),
#   differentiated through those ops.

cdef int TAYLOR_DEGREE = 18


cdef object matrix_exp_array(object arr):
    """exp of each square matrix of arr (Note [Matrix exponential]); a matrix with a non-finite
    entry gives NaN."""
    cdef object x = np.asarray(arr, dtype=np.float64)
    cdef tuple shape = x.shape
    cdef Py_ssize_t n = shape[len(shape) - 1], k, r
    x = x.reshape((-1, n, n))
    cdef object bad = np.logical_not(np.isfinite(x).all(axis=(1, 2)))
    x = np.where(bad[:, None, None], 0.0, x)
    cdef object norm = np.abs(x).sum(axis=1).max(axis=1) if n else np.zeros(x.shape[0])
    cdef object s = np.where(norm > 0.5, np.ceil(np.log2(np.where(norm > 0.5, norm, 1.0) / 0.5)),
                             0).astype(np.int64)
    x = x / np.exp2(s)[:, None, None]
    cdef object term = np.broadcast_to(np.eye(n), x.shape).copy()
    cdef object total = term.copy()
    for k in range(1, TAYLOR_DEGREE + 1):
        term = np.matmul(term, x) / k
        total += term
    cdef Py_ssize_t most = int(s.max()) if s.size else 0
    cdef object sel
    with np.errstate(over="ignore", invalid="ignore"):
        for r in range(most):
            sel = s > r
            total[sel] = np.matmul(total[sel], total[sel])
    total[bad] = np.nan
    return total.reshape(shape)


cdef Tensor block_upper(Tensor a, Tensor e):
    """[[A, E], [0, A]] for each pair of matrices (..., 2n, 2n)."""
    cdef tuple sh = np.broadcast_shapes(a.data.shape, e.data.shape)
    cdef cnp.dtype dt = result_dtype(a, e)
    a = expand(a, sh)
    e = expand(e, sh)
    cdef Tensor zeros = wrap(np.zeros(sh, dtype=dt))
    return lucid_cat([lucid_cat([a, e], -1), lucid_cat([zeros, a], -1)], -2)


cdef Tensor exp_derivative(Tensor a, Tensor e):
    """L(A, E): the top-right block of exp([[A, E], [0, A]])."""
    cdef Py_ssize_t n = last_dim(a)
    return getitem(matrix_exp_of(block_upper(a, e)),
                   (Ellipsis, slice(0, n), slice(n, 2 * n)))


cdef class LinalgMatrixExpBackward(Node):
    """Y = exp(A)  ->  gA = L(A^T, g), the top-right block of exp([[A^T, g], [0, A^T]])"""
    cdef SavedTensor a
    cdef cnp.dtype a_dtype

    cdef void release_saved(self):
        self.a = None

    cdef tuple apply(self, tuple grads):
        return (reduce_grad(exp_derivative(mT(self.a.unpack(self)), <Tensor>grads[0]), None,
                            self.a_dtype),)


cdef Tensor matrix_exp_jvp(Tensor a, Tensor out):
    """dY = L(A, dA), the top-right block of exp([[A, dA], [0, A]])"""
    cdef Tensor ta = tangent_of(a)
    if ta is None:
        return None
    cdef long level = suspend_fw()
    try:
        return fit_tangent(exp_derivative(a, ta), out)
    finally:
        resume_fw(level)


cdef Tensor matrix_exp_of(Tensor a):
    cdef cnp.dtype dt = descr(a.data)
    cdef Tensor out = float_result(matrix_exp_array(a.data), dt)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, matrix_exp_jvp(a, out))
    cdef LinalgMatrixExpBackward node
    if grad_enabled() and a.requires_grad_c():
        node = LinalgMatrixExpBackward.__new__(LinalgMatrixExpBackward)
        record(node, a, None)
        attach_output(out, node, 0)
        node.a_dtype = dt
        node.a = save_tensor(a, node, False)
    return out


def matrix_exp(A):
    """exp(A) = sum_k A^k / k! of each square matrix of A (..., n, n), with exact derivatives
    (Note [Matrix exponential])."""
    return matrix_exp_of(square_operand(A, "linalg.matrix_exp"))
define_op(matrix_exp, BATCHED_MATRIX, FLOAT_ONLY, name="linalg.matrix_exp")


# -- matrix_power ----------------------------------------------------------------------------------

cdef Tensor square_numeric_operand(object x, str op):
    """x as a tensor of square matrices (..., n, n) of a number dtype (bool refused)."""
    cdef Tensor t = operand(x, op)
    cdef tuple s = t.data.shape
    if t.data.dtype.kind not in "iuf":
        raise RuntimeError(f"{op}: expected a floating point or integer tensor as A, got "
                           f"{dtype_name(t.data.dtype)}")
    if len(s) < 2 or s[len(s) - 1] != s[len(s) - 2]:
        raise RuntimeError(f"{op}: A must be a square matrix or a batch of square matrices "
                           f"(shape (*, n, n)), got shape {s}")
    return t


def matrix_power(A, n):
    """A^n for each square matrix of A (n an int; A^0 = I, n < 0 through inv(A)), by repeated
    squaring with matmul."""
    cdef str op = "linalg.matrix_power"
    cdef Tensor a = square_numeric_operand(A, op)
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{op}: n must be an int, got {type(n).__name__}")
    cdef object k = int(n)
    cdef Py_ssize_t size = last_dim(a)
    if k == 0:       # I, with a zero gradient (exactly: a selection of nothing)
        return add(select_grad(a, np.zeros((size, size), dtype=a.data.dtype)),
                   wrap(np.eye(size, dtype=a.data.dtype)))
    if k < 0:
        if not is_float_dtype(descr(a.data)):
            raise RuntimeError(f"{op}: a negative n needs a floating point A (its inverse), got "
                               f"{dtype_name(a.data.dtype)}")
        a = inverse_of(a, op, "so it has no inverse, and a negative power needs one")
        k = -k
    cdef Tensor result = None, base = a
    while True:
        if k & 1:
            result = base if result is None else matmul(result, base)
        k >>= 1
        if not k:
            break
        base = matmul(base, base)
    return mul(result, 1) if result is a else result
define_op(matrix_power, BATCHED_MATRIX, NUMERIC, name="linalg.matrix_power")
