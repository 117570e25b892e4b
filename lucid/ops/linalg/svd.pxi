# Singular values: svd, svdvals, and what is read off them (matrix_rank, cond); eig and eigvals
# wait for complex dtypes (Note [Linalg rules]).
#
# Note [SVD rules]
#   A = U diag(S) Vh, k = min(m, n) singular values, descending. With E_ij = s_j^2 - s_i^2 off the
#   diagonal (1 on it), skew(X) = X - X^T and sym(X) = X + X^T (PyTorch's formulas):
#     backward: M = (skew(U^T gU) S + S skew(Vh gVh^T)) / E + diag(gS),
#       gA = U M Vh, plus (I - U U^T) gU S^-1 Vh for a tall A (m > n), U S^-1 gVh (I - V V^T)
#       for a wide one (m < n);
#     jvp: dP = U^T dA V, dS = diag(dP), dX = dP off its diagonal,
#       dU = U (sym(dX S) / E) (+ (dA V - U dP) S^-1 when tall),
#       dV = V (sym(S dX) / E) (+ (dA^T U - V dP^T) S^-1 when wide), dVh = dV^T.
#   Repeated singular values make E zero off the diagonal: the derivatives of U and Vh are then
#   inf/nan, as in PyTorch (they are documented for distinct singular values). S alone never
#   divides by E (gA = U diag(gS) Vh), so svdvals' gradient exists at every A. With
#   full_matrices the columns of U (rows of Vh) past k are not determined by A: their
#   gradients are ignored and their tangents are zero, PyTorch's choice.

SVDResult = namedtuple("svd", ["U", "S", "Vh"])
cdef str COMPLEX_NOT_YET = "complex dtypes are not supported yet"


cdef Tensor matrix_operand(object x, str op, str what):
    """x as a float tensor holding a matrix or a batch of matrices (..., m, n)."""
    cdef Tensor t = linalg_float_operand(x, op, what)
    if ndim_of(t.data) < 2:
        raise RuntimeError(f"{op}: {what} must be a matrix or a batch of matrices (shape "
                           f"(*, m, n)), got shape {t.data.shape}")
    return t


cdef Tensor columns_times(Tensor x, Tensor s):
    """X diag(s): column j of each matrix times s_j."""
    cdef tuple sh = s.data.shape
    return mul(x, reshape(s, sh[:len(sh) - 1] + (1, sh[len(sh) - 1])))


cdef Tensor rows_times(Tensor x, Tensor s):
    """diag(s) X: row i of each matrix times s_i."""
    return mul(x, reshape(s, s.data.shape + (1,)))


cdef Tensor squared_gaps(Tensor s):
    """E_ij = s_j^2 - s_i^2 off the diagonal, 1 on it."""
    cdef Tensor s2 = mul(s, s)
    cdef tuple sh = s.data.shape
    cdef Py_ssize_t k = sh[len(sh) - 1]
    cdef Tensor gaps = sub(reshape(s2, sh[:len(sh) - 1] + (1, k)), reshape(s2, sh + (1,)))
    return add(gaps, wrap(np.eye(k, dtype=s.data.dtype)))


cdef Tensor skew(Tensor x):
    return sub(x, mT(x))


cdef Tensor off_diagonal(Tensor x):
    """x with the diagonals of its matrices set to zero (a selection)."""
    cdef Py_ssize_t n = last_dim(x)
    return select_grad(x, 1 - np.eye(n, dtype=x.data.dtype))


cdef Tensor svd_adjoint(Tensor u, Tensor s, Tensor vh, Tensor gu, Tensor gs, Tensor gvh):
    """gA of A = U diag(S) Vh (reduced factors) from the gradients of U, S, Vh (Note [SVD
    rules])."""
    cdef tuple su = u.data.shape, sv = vh.data.shape
    cdef Py_ssize_t m = su[len(su) - 2], n = sv[len(sv) - 1]
    cdef Tensor inner = None, ga, scaled
    if gu is None and gvh is None:
        return matmul(columns_times(u, gs), vh)
    if gu is not None:
        inner = columns_times(skew(matmul(mT(u), gu)), s)
    if gvh is not None:
        inner = add_tangents(inner, rows_times(skew(matmul(vh, mT(gvh))), s))
    inner = div(inner, squared_gaps(s))
    if gs is not None:
        inner = add(inner, diag_embed_of(gs))
    if m > n and gu is not None:
        scaled = div(gu, reshape(s, s.data.shape[:ndim_of(s.data) - 1] + (1, last_dim(s))))
        ga = add(matmul(u, inner), sub(scaled, matmul(u, matmul(mT(u), scaled))))
        return matmul(ga, vh)
    if m < n and gvh is not None:
        scaled = div(gvh, reshape(s, s.data.shape + (1,)))
        ga = add(matmul(inner, vh), sub(scaled, matmul(matmul(scaled, mT(vh)), vh)))
        return matmul(u, ga)
    return matmul(matmul(u, inner), vh)


cdef Tensor first_columns(Tensor x, Py_ssize_t k):
    return getitem(x, (Ellipsis, slice(None), slice(0, k)))


cdef Tensor first_rows(Tensor x, Py_ssize_t k):
    return getitem(x, (Ellipsis, slice(0, k), slice(None)))


cdef class LinalgSvdBackward(Node):
    """(U, S, Vh) = svd(A)  ->  gA by Note [SVD rules] (gradients of U's and Vh's extra
    full_matrices columns/rows ignored)"""
    cdef SavedTensor u
    cdef SavedTensor s
    cdef SavedTensor vh
    cdef cnp.dtype a_dtype

    cdef void release_saved(self):
        self.u = None
        self.s = None
        self.vh = None

    cdef tuple apply(self, tuple grads):
        cdef Tensor s = self.s.unpack(self)
        cdef Py_ssize_t k = last_dim(s)
        cdef Tensor u = first_columns(self.u.unpack(self), k)
        cdef Tensor vh = first_rows(self.vh.unpack(self), k)
        cdef Tensor gu = grads[0], gs = grads[1], gvh = grads[2]
        if gu is not None:
            gu = first_columns(gu, k)
        if gvh is not None:
            gvh = first_rows(gvh, k)
        if gu is None and gs is None and gvh is None:
            return (None,)
        return (reduce_grad(svd_adjoint(u, s, vh, gu, gs, gvh), None, self.a_dtype),)


cdef Tensor zero_padded(Tensor x, Py_ssize_t extra, int axis):
    """x with `extra` zero columns (axis -1) or rows (axis -2) appended."""
    if extra == 0:
        return x
    cdef list shape = list(x.data.shape)
    shape[len(shape) + axis] = extra
    return lucid_cat([x, wrap(np.zeros(tuple(shape), dtype=x.data.dtype))], axis)


cdef tuple svd_jvp(Tensor a, Tensor u, Tensor s, Tensor vh, bint full):
    """(dU, dS, dVh) by Note [SVD rules]"""
    cdef Tensor ta = tangent_of(a)
    if ta is None:
        return (None, None, None)
    cdef long level = suspend_fw()
    cdef tuple sh = a.data.shape
    cdef Py_ssize_t m = sh[len(sh) - 2], n = sh[len(sh) - 1], k
    cdef Tensor v, dp, ds, dx, e, xs, sx, du, dv, row
    try:
        if tracks(a, None):
            u, s, vh = svd_tensors(a, full, True, "linalg.svd")
        k = last_dim(s)
        u, vh = first_columns(u, k), first_rows(vh, k)
        v = mT(vh)
        dp = matmul(matmul(mT(u), ta), v)
        ds = linalg_diagonal_of(dp)
        dx = off_diagonal(dp)
        e = squared_gaps(s)
        xs, sx = columns_times(dx, s), rows_times(dx, s)
        du = matmul(u, div(add(xs, mT(xs)), e))
        dv = matmul(v, div(add(sx, mT(sx)), e))
        row = reshape(s, s.data.shape[:ndim_of(s.data) - 1] + (1, k))
        if m > k:
            du = add(du, div(sub(matmul(ta, v), matmul(u, dp)), row))
        if n > k:
            dv = add(dv, div(sub(matmul(mT(ta), u), matmul(v, mT(dp))), row))
        if full:
            du, dv = zero_padded(du, m - k, -1), zero_padded(dv, n - k, -1)
        return (du, ds, mT(dv))
    finally:
        resume_fw(level)


cdef tuple svd_arrays(object arr, bint full, bint uv, str op):
    """NumPy's SVD of each matrix; a matrix with a non-finite entry gets NaN factors."""
    cdef object bad = np.logical_not(np.isfinite(arr).all(axis=(-2, -1)))
    cdef bint any_bad = bool(bad.any())
    if any_bad:
        arr = np.where(bad[..., None, None], 0, arr)
    try:
        result = np.linalg.svd(arr, full_matrices=full, compute_uv=uv)
        result = tuple(result) if uv else result
    except np.linalg.LinAlgError:
        raise factor_error(op, arr, lambda x: np.linalg.svd(x, compute_uv=False),
                           "has singular values that did not converge") from None
    if not uv:
        result = (None, result, None)
    if any_bad:
        for part in result:
            if part is not None:
                part[bad] = np.nan
    return result


cdef tuple svd_tensors(Tensor a, bint full, bint uv, str op):
    """(U, S, Vh) of a, one node recording all three (U, Vh None when uv is off and nothing
    records or tracks tangents)."""
    cdef cnp.dtype dt = descr(a.data)
    cdef bint records = grad_enabled() and a.requires_grad_c()
    uv = uv or records or fw_active()
    u_arr, s_arr, vh_arr = svd_arrays(a.data, full, uv, op)
    cdef Tensor s = float_result(s_arr, dt)
    if not uv:
        return (None, s, None)
    cdef Tensor u = float_result(u_arr, dt), vh = float_result(vh_arr, dt)
    cdef tuple tangents
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            tangents = svd_jvp(a, u, s, vh, full)
            set_tangent(u, fit_tangent(<Tensor>tangents[0], u))
            set_tangent(s, fit_tangent(<Tensor>tangents[1], s))
            set_tangent(vh, fit_tangent(<Tensor>tangents[2], vh))
    cdef LinalgSvdBackward node
    if records:
        node = LinalgSvdBackward.__new__(LinalgSvdBackward)
        record_outputs(node, a, (u, s, vh))
        node.a_dtype = dt
        node.u = save_tensor(u, node, True)
        node.s = save_tensor(s, node, True)
        node.vh = save_tensor(vh, node, True)
    return (u, s, vh)


def svd(A, full_matrices=True):
    """(U, S, Vh) with A = U diag(S) Vh for A (..., m, n): S descending (k = min(m, n)), U and
    Vh with orthonormal columns and rows (square with full_matrices). Note [SVD rules]."""
    cdef Tensor a = matrix_operand(A, "linalg.svd", "A")
    return SVDResult(*svd_tensors(a, bool(full_matrices), True, "linalg.svd"))
define_op(svd, BATCHED_MATRIX, FLOAT_ONLY, method="none", name="linalg.svd")


def svdvals(A):
    """The singular values of A (..., m, n), descending (..., min(m, n)); gradient
    U diag(gS) Vh, defined at every A."""
    cdef Tensor a = matrix_operand(A, "linalg.svdvals", "A")
    return svd_tensors(a, False, False, "linalg.svdvals")[1]
define_op(svdvals, BATCHED_MATRIX, FLOAT_ONLY, method="none", name="linalg.svdvals")


# -- matrix_rank, cond ------------------------------------------------------------------------------

cdef object tolerance_array(object x, str op, str what):
    """A tolerance (None, a number or a tensor) as None or an ndarray."""
    if x is None:
        return None
    if isinstance(x, Tensor):
        return np.asarray((<Tensor>x).data, dtype=np.float64)
    try:
        return np.asarray(float(x))
    except (TypeError, ValueError):
        raise TypeError(f"{op}: {what} must be a number or a tensor, got "
                        f"{type(x).__name__}") from None


cdef object singular_value_cutoff(object s, object atol, object rtol, Py_ssize_t m, Py_ssize_t n,
                                  object dt):
    """max(atol, rtol * s_max) per matrix (s: (..., k) with s_max first or not); rtol defaults to
    eps * max(m, n) when atol is absent or not positive, else 0 (PyTorch's rule)."""
    if rtol is None:
        if atol is None or bool(np.all(atol <= 0)):
            rtol = np.asarray(np.finfo(dt).eps * max(m, n))
        else:
            rtol = np.asarray(0.0)
    cdef object smax = s.max(axis=-1) if s.shape[ndim_of(s) - 1] else np.zeros(s.shape[:-1])
    cdef object cut = rtol * smax
    return cut if atol is None else np.maximum(atol, cut)


cdef object abs_singular_values(Tensor a, bint hermitian, str op):
    """The singular values of a's matrices as an array (|eigenvalues| when hermitian)."""
    if hermitian:
        try:
            return np.abs(np.linalg.eigvalsh(a.data))
        except np.linalg.LinAlgError:
            raise factor_error(op, a.data, np.linalg.eigvalsh,
                               "has eigenvalues that did not converge") from None
    return svd_arrays(a.data, False, False, op)[1]


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None):
    """The number of singular values of each matrix of A above max(atol, rtol * s_max), int64
    (tol is atol with rtol 0); no gradient."""
    cdef str op = "linalg.matrix_rank"
    cdef Tensor a = matrix_operand(A, op, "A")
    if tol is not None:
        if atol is not None or rtol is not None:
            raise RuntimeError(f"{op}: tol cannot be given with atol or rtol")
        atol, rtol = tol, 0.0
    cdef object s = abs_singular_values(a, bool(hermitian), op)
    cdef tuple sh = a.data.shape
    cut = singular_value_cutoff(s, tolerance_array(atol, op, "atol"),
                                tolerance_array(rtol, op, "rtol"), sh[len(sh) - 2],
                                sh[len(sh) - 1], a.data.dtype)
    return wrap(as_array(np.sum(s > np.asarray(cut)[..., None], axis=-1).astype(np.int64)))
define_op(matrix_rank, BATCHED_MATRIX, FLOAT_ONLY, method="none", name="linalg.matrix_rank")


cdef tuple COND_NORMS = ("fro", "nuc", np.inf, -np.inf, 1, -1)


def cond(A, p=None):
    """The condition number of each matrix of A in the p-norm: s_max / s_min for p None or 2
    (s_min / s_max for -2, any shape), else ||A||_p ||A^-1||_p for square A (inf if singular)."""
    cdef str op = "linalg.cond"
    cdef Tensor a = matrix_operand(A, op, "A")
    cdef Tensor s, out
    if p is None or (not isinstance(p, str) and p in (2, -2)):
        s = svd_tensors(a, False, False, op)[1]
        hi, lo = getitem(s, (Ellipsis, 0)), getitem(s, (Ellipsis, -1))
        return div(lo, hi) if p == -2 else div(hi, lo)
    if not any(p == q and isinstance(p, str) == isinstance(q, str) for q in COND_NORMS):
        raise RuntimeError(f"{op}: p must be None, 2, -2, 'fro', 'nuc', inf, -inf, 1 or -1, "
                           f"got {p!r}")
    a = square_operand(a, f"{op}(p={p!r})")
    cdef object singular = lu_arrays(a.data)[2] > 0
    cdef bint any_singular = bool(np.any(singular))
    cdef Py_ssize_t n = last_dim(a)
    if any_singular:      # the singular ones: inf, computed on I so nothing else divides by 0
        a = lucid_where(wrap(np.asarray(singular)[..., None, None]),
                        wrap(np.eye(n, dtype=a.data.dtype)), a)
    out = mul(matrix_norm(a, p), matrix_norm(inv(a), p))
    if any_singular:
        out = lucid_where(wrap(np.asarray(singular)), np.inf, out)
    return out
define_op(cond, BATCHED_MATRIX, FLOAT_ONLY, method="none", name="linalg.cond")


# -- eig, eigvals: their results are complex --------------------------------------------------------

def eig(A):
    """(eigenvalues, eigenvectors) of a general square A: complex, not supported yet (raises
    NotImplementedError)."""
    square_operand(A, "linalg.eig")
    raise NotImplementedError(f"linalg.eig: {COMPLEX_NOT_YET} (a general matrix's eigenvalues "
                              "are complex; for a symmetric one use linalg.eigh)")
define_op(eig, BATCHED_MATRIX, FLOAT_ONLY, method="none", name="linalg.eig")


def eigvals(A):
    """The eigenvalues of a general square A: complex, not supported yet (raises
    NotImplementedError)."""
    square_operand(A, "linalg.eigvals")
    raise NotImplementedError(f"linalg.eigvals: {COMPLEX_NOT_YET} (a general matrix's "
                              "eigenvalues are complex; for a symmetric one use linalg.eigh)")
define_op(eigvals, BATCHED_MATRIX, FLOAT_ONLY, method="none", name="linalg.eigvals")
