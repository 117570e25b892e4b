# Least squares: pinv and lstsq (Note [Linalg rules]).
#
# Note [Pseudo-inverse]
#   pinv(A) = V diag(1/s) U^T over the singular values s > max(atol, rtol * s_max) (the others
#   count as 0; hermitian: from eigh, over |eigenvalues|). Where the rank is locally constant
#   (the documented case) its derivative is (Golub and Pereyra)
#       dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P,
#   and the backward is its adjoint
#       gA = -P^T g P^T + (I - A P) g^T P P^T + P^T P g^T (I - P A),
#   both written with lucid ops over the saved A and P, so they record for higher orders.
#   lstsq's solution is pinv(A) B: the minimum-norm least-squares solution that LAPACK's drivers
#   give for a full-rank A (and gelsy/gelsd/gelss for any rank, with rcond as the cut), and its
#   gradients are those of that product; its residuals ||A X - B||^2 per column are lucid ops of
#   the solution too.

LstsqResult = namedtuple("lstsq", ["solution", "residuals", "rank", "singular_values"])
cdef tuple LSTSQ_DRIVERS = (None, "gels", "gelsy", "gelsd", "gelss")


cdef Tensor minus_product(Tensor a, Tensor p, bint left):
    """I - A P (left) or I - P A."""
    cdef Tensor ap = matmul(a, p) if left else matmul(p, a)
    cdef Py_ssize_t n = last_dim(ap)
    return sub(wrap(np.eye(n, dtype=ap.data.dtype)), ap)


cdef Tensor pinv_derivative(Tensor a, Tensor p, Tensor da):
    """dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P  (Note [Pseudo-inverse])"""
    cdef Tensor dat = mT(da)
    cdef Tensor out = neg(matmul(matmul(p, da), p))
    out = add(out, matmul(matmul(matmul(p, mT(p)), dat), minus_product(a, p, True)))
    return add(out, matmul(matmul(minus_product(a, p, False), dat), matmul(mT(p), p)))


cdef Tensor pinv_adjoint(Tensor a, Tensor p, Tensor g):
    """gA = -P^T g P^T + (I - A P) g^T P P^T + P^T P g^T (I - P A)  (Note [Pseudo-inverse])"""
    cdef Tensor gt = mT(g)
    cdef Tensor out = neg(matmul(matmul(mT(p), g), mT(p)))
    out = add(out, matmul(matmul(minus_product(a, p, True), gt), matmul(p, mT(p))))
    return add(out, matmul(matmul(matmul(mT(p), p), gt), minus_product(a, p, False)))


cdef class LinalgPinvBackward(Node):
    """P = pinv(A)  ->  gA = -P^T g P^T + (I - A P) g^T P P^T + P^T P g^T (I - P A)"""
    cdef SavedTensor a
    cdef SavedTensor p
    cdef cnp.dtype a_dtype

    cdef void release_saved(self):
        self.a = None
        self.p = None

    cdef tuple apply(self, tuple grads):
        return (reduce_grad(pinv_adjoint(self.a.unpack(self), self.p.unpack(self),
                                         <Tensor>grads[0]), None, self.a_dtype),)


cdef tuple pinv_arrays(object arr, object atol, object rtol, bint hermitian, str op):
    """(pinv, the singular values) of each matrix of arr, below the cut counted as 0."""
    cdef tuple sh = arr.shape
    cdef Py_ssize_t m = sh[len(sh) - 2], n = sh[len(sh) - 1]
    cdef object s, inv_s, w, v
    if hermitian:
        if m != n:
            raise RuntimeError(f"{op}: hermitian=True needs square matrices, got shape {sh}")
        try:
            w, v = np.linalg.eigh(arr)
        except np.linalg.LinAlgError:
            raise factor_error(op, arr, np.linalg.eigh, "has eigenvalues that did not "
                               "converge") from None
        s = np.abs(w)
        cut = np.asarray(singular_value_cutoff(s, atol, rtol, m, n, arr.dtype))[..., None]
        with np.errstate(divide="ignore"):
            inv_s = np.where(s > cut, 1 / np.where(s > cut, w, 1), 0)
        return np.matmul(v * inv_s[..., None, :], np.swapaxes(v, -1, -2)), -np.sort(-s, axis=-1)
    u, s, vh = svd_arrays(arr, False, True, op)
    cut = np.asarray(singular_value_cutoff(s, atol, rtol, m, n, arr.dtype))[..., None]
    with np.errstate(divide="ignore"):
        inv_s = np.where(s > cut, 1 / np.where(s > cut, s, 1), 0)
    return np.matmul(np.swapaxes(vh, -1, -2) * inv_s[..., None, :], np.swapaxes(u, -1, -2)), s


cdef Tensor pinv_jvp(Tensor a, Tensor out, object atol, object rtol, bint hermitian, str op):
    """dP by Note [Pseudo-inverse]"""
    cdef Tensor ta = tangent_of(a)
    if ta is None:
        return None
    cdef long level = suspend_fw()
    cdef Tensor p
    try:
        p = pinv_tensors(a, atol, rtol, hermitian, op)[0] if tracks(a, None) else out
        return fit_tangent(pinv_derivative(a, p, ta), out)
    finally:
        resume_fw(level)


cdef tuple pinv_tensors(Tensor a, object atol, object rtol, bint hermitian, str op):
    """(pinv(a) recorded, its singular values as an array)."""
    cdef cnp.dtype dt = descr(a.data)
    arr, s = pinv_arrays(a.data, atol, rtol, hermitian, op)
    cdef Tensor out = float_result(arr, dt)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, pinv_jvp(a, out, atol, rtol, hermitian, op))
    cdef LinalgPinvBackward node
    if grad_enabled() and a.requires_grad_c():
        node = LinalgPinvBackward.__new__(LinalgPinvBackward)
        record(node, a, None)
        attach_output(out, node, 0)
        node.a_dtype = dt
        node.a = save_tensor(a, node, False)
        node.p = save_tensor(out, node, True)
    return (out, s)


def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """The Moore-Penrose pseudo-inverse of each matrix of A (..., m, n) -> (..., n, m), singular
    values at most max(atol, rtol * s_max) counted as 0 (Note [Pseudo-inverse])."""
    cdef str op = "linalg.pinv"
    cdef Tensor a = matrix_operand(A, op, "A")
    return pinv_tensors(a, tolerance_array(atol, op, "atol"), tolerance_array(rtol, op, "rtol"),
                        bool(hermitian), op)[0]
define_op(pinv, BATCHED_MATRIX, FLOAT_ONLY, method="none", name="linalg.pinv")


cdef Tensor empty_of(cnp.dtype dt):
    return wrap(np.zeros((0,), dtype=dt))


def lstsq(A, B, rcond=None, *, driver=None):
    """(solution, residuals, rank, singular_values): X minimizing ||A X - B|| (minimum norm),
    for A (..., m, n) and B (..., m, k) (or (..., m): one dim fewer); rank, singular values and residuals as
    PyTorch's driver gives them (Note [Pseudo-inverse])."""
    cdef str op = "linalg.lstsq"
    cdef Tensor a = matrix_operand(A, op, "A")
    cdef Tensor b = linalg_float_operand(B, op, "B")
    if driver not in LSTSQ_DRIVERS:
        raise RuntimeError(f"{op}: driver must be one of gels, gelsy, gelsd, gelss (or None), "
                           f"got {driver!r}")
    cdef tuple s = a.data.shape, bs = b.data.shape
    cdef Py_ssize_t m = s[len(s) - 2], n = s[len(s) - 1]
    cdef bint vector = ndim_of(b.data) == ndim_of(a.data) - 1     # PyTorch's reading
    if ndim_of(b.data) < (1 if vector else 2) or bs[ndim_of(b.data) - (1 if vector else 2)] != m:
        raise RuntimeError(f"{op}: A of shape {s} and B of shape {bs} are incompatible: B must "
                           f"be (*, {m}, k), or (*, {m}) with one dim fewer than A")
    cdef cnp.dtype dt = result_dtype(a, b)
    if descr(a.data) is not dt and a.data.dtype != dt:
        a = cast(a, dt)
    cdef Tensor bm = as_column(b, vector)
    try:
        np.broadcast_shapes(s[:len(s) - 2], bm.data.shape[:ndim_of(bm.data) - 2])
    except ValueError:
        raise RuntimeError(f"{op}: the batch dims of A (shape {s}) and B (shape {bs}) cannot be "
                           "broadcast together") from None
    if rcond is not None:
        rcond = tolerance_array(rcond, op, "rcond")
    rtol = rcond if rcond is not None else np.asarray(np.finfo(dt).eps * max(m, n))
    p, sv = pinv_tensors(a, np.asarray(0.0), rtol, False, op)
    cdef Tensor x = matmul(p, bm)
    cut = np.asarray(singular_value_cutoff(sv, None, rtol, m, n, dt))[..., None]
    rank_arr = np.sum(sv > cut, axis=-1).astype(np.int64)
    driver = "gelsy" if driver is None else driver
    cdef Tensor residuals = empty_of(dt), r
    if m > n and driver != "gelsy" and (driver == "gels" or bool(np.all(rank_arr == n))):
        r = sub(matmul(a, x), bm)
        residuals = sum(mul(r, r), -2)
    if vector:       # the residuals keep their column dim (..., 1), as PyTorch's do
        x = reshape(x, x.data.shape[:ndim_of(x.data) - 1])
    rank = wrap(as_array(rank_arr)) if driver != "gels" else wrap(np.zeros((0,), np.int64))
    values = float_result(sv, dt) if driver in ("gelsd", "gelss") else empty_of(dt)
    return LstsqResult(x, residuals, rank, values)
define_op(lstsq, BATCHED_MATRIX, FLOAT_ONLY, method="none", name="linalg.lstsq")
