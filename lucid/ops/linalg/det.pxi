# det and slogdet (Note [Linalg rules]): each differentiates through one matrix G(A), its gradient,
# with backward gA = g G(A) and jvp <G(A), dA> written once (scale_by, matrix_inner).
#
# Note [Cofactors]
#   det's gradient is the cofactor matrix cof(A) (= det(A) A^-T where A is invertible), a
#   polynomial in A that exists at every A; it is computed from an SVD A = U S V^T, never by
#   inverting, so singular matrices get it too:
#       cof(A) = e U diag(p) V^T,  p_i = prod_{j != i} s_j,  e = det(U) det(V) = +-1.
#   Its derivative L_A(Y) = d cof(A)[Y] (det's Hessian, a symmetric bilinear form: L_A is its
#   own adjoint, so it is both cof's jvp and cof's backward) is, with X = U^T Y V and
#   P_ik = prod_{j not in {i, k}} s_j (P_ii = 0),
#       L_A(Y) = e U (diag(P diag(X)) - P o X^T) V^T,
#   exact at every A as well (cof(U M V^T) = e U cof(M) V^T: only cof of a diagonal matrix is
#   differentiated). The third derivative T_A(Y, W) (L_A(Y)'s derivative along W; symmetric in
#   Y and W, so again one rule for the jvp in A and the backward to A) is written, where A is
#   invertible, with lucid ops over cof and L, so all further orders record through these nodes:
#       T_A(Y, W) = (<C,W> L(Y) + <C,Y> L(W) - L(W C^T Y + Y C^T W) - <W, L(Y)> C) / det(A),
#   C = cof(A). It is 0 for n <= 2 (det is then of degree <= 2); for n >= 3 at a numerically
#   singular A (smallest singular value <= n eps times the largest) it raises: det's derivatives
#   of order 3 and up are not computed there. slogdet's gradient A^-T has no limit at a singular
#   A (log|det A| is -inf there): its backward and jvp raise, naming slogdet.

# -- NumPy: the SVD frame, products of singular values, cof and L -------------------------------

cdef object products_excluding_one(object s):
    """p_i = prod_{j != i} s_j along the last axis, by prefix and suffix products (no
    division, so exact when some s_j are 0)."""
    cdef object left = np.ones_like(s), right = np.ones_like(s)
    left[..., 1:] = np.cumprod(s[..., :-1], axis=-1)
    right[..., :-1] = np.cumprod(s[..., :0:-1], axis=-1)[..., ::-1]
    return left * right


cdef object products_excluding_two(object s):
    """P_ik = prod_{j not in {i, k}} s_j for i != k, P_ii = 0 (s: (..., n) -> (..., n, n))."""
    cdef Py_ssize_t n = s.shape[ndim_of(s) - 1]
    cdef object idx = np.arange(n)
    cdef object rows = np.repeat(s[..., None, :], n, axis=-2)
    rows[..., idx, idx] = 1                     # row k: s with s_k left out
    cdef object p = products_excluding_one(rows)
    p[..., idx, idx] = 0
    return p


cdef tuple svd_frame(object arr):
    """(U, s, Vh, e) with arr = U diag(s) Vh and e = det(U) det(Vh) = +-1 per matrix; a matrix
    with a non-finite entry gets NaN singular values (so NaN derivatives)."""
    cdef object bad = np.logical_not(np.isfinite(arr).all(axis=(-2, -1)))
    cdef bint any_bad = bool(bad.any())
    if any_bad:
        arr = np.where(bad[..., None, None], 0, arr)
    try:
        u, s, vh = np.linalg.svd(arr)
    except np.linalg.LinAlgError:
        raise factor_error("linalg.det", arr, np.linalg.svd,
                           "has singular values that did not converge") from None
    if any_bad:
        s[bad] = np.nan
    return u, s, vh, np.sign(np.linalg.det(u) * np.linalg.det(vh))


cdef object from_frame(tuple frame, object inner):
    """e U inner Vh: a matrix given in the SVD frame, back in A's coordinates."""
    u, s, vh, e = frame
    return e[..., None, None] * np.matmul(np.matmul(u, inner), vh)


cdef object cofactor_array(object arr):
    """cof(A) = e U diag(p) V^T for each matrix of arr (Note [Cofactors])."""
    cdef tuple frame = svd_frame(arr)
    u, s, vh, e = frame
    return e[..., None, None] * np.matmul(u * products_excluding_one(s)[..., None, :], vh)


cdef object cofactor_derivative_array(object arr, object y):
    """L_A(Y) = e U (diag(P diag(X)) - P o X^T) V^T, X = U^T Y V (Note [Cofactors])."""
    cdef tuple frame = svd_frame(arr)
    u, s, vh, e = frame
    cdef object x = np.matmul(np.matmul(np.swapaxes(u, -1, -2), y), np.swapaxes(vh, -1, -2))
    cdef object p = products_excluding_two(s)
    cdef object idx = np.arange(s.shape[ndim_of(s) - 1])
    cdef object inner = -p * np.swapaxes(x, -1, -2)
    inner[..., idx, idx] = np.einsum("...ik,...k->...i", p, x[..., idx, idx])
    return from_frame(frame, inner)


# -- cof(A) and L_A(Y) as ops, each one rule for both modes -------------------------------------

cdef Tensor scale_by(Tensor g, Tensor m):
    """g m: each matrix of m times its entry of g (g of m's batch shape)."""
    return mul(as_matrix_scale(g), m)


cdef Tensor matrix_inner(Tensor m, Tensor t):
    """<M, T> = sum_ij M_ij T_ij for each matrix: the derivative along T of a function with
    gradient M."""
    return sum(mul(m, t), (-2, -1))


cdef class CofactorBackward(Node):
    """C = cof(A)  ->  gA = L_A(g)  (L_A is self-adjoint: Note [Cofactors])"""
    cdef SavedTensor a

    cdef void release_saved(self):
        self.a = None

    cdef tuple apply(self, tuple grads):
        return (cofactor_derivative(self.a.unpack(self), <Tensor>grads[0]),)


cdef Tensor cofactor_jvp(Tensor a, Tensor out):
    """dC = L_A(dA)"""
    cdef Tensor ta = tangent_of(a)
    if ta is None:
        return None
    cdef long level = suspend_fw()
    try:
        return fit_tangent(cofactor_derivative(a, ta), out)
    finally:
        resume_fw(level)


cdef Tensor linalg_cofactor(Tensor a):
    """cof(A), the gradient of det(A), for each square matrix of a (exact at singular A)."""
    cdef Tensor out = float_result(cofactor_array(a.data), descr(a.data))
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, cofactor_jvp(a, out))
    cdef CofactorBackward node
    if grad_enabled() and a.requires_grad_c():
        node = CofactorBackward.__new__(CofactorBackward)
        record(node, a, None)
        attach_output(out, node, 0)
        node.a = save_tensor(a, node, False)
    return out


cdef class CofactorDerivativeBackward(Node):
    """Z = L_A(Y)  ->  gA = T_A(Y, g), gY = L_A(g)  (Note [Cofactors])"""
    cdef SavedTensor a
    cdef SavedTensor y

    cdef void release_saved(self):
        self.a = None
        self.y = None

    cdef tuple apply(self, tuple grads):
        cdef Tensor a = self.a.unpack(self), g = grads[0]
        ga = cofactor_third(a, self.y.unpack(self), g) if needs(self, 0) else None
        return (ga, cofactor_derivative(a, g) if needs(self, 1) else None)


cdef Tensor cofactor_derivative_jvp(Tensor a, Tensor y, Tensor out):
    """dZ = L_A(dY) + T_A(Y, dA)"""
    cdef Tensor ta = tangent_of(a), ty = tangent_of(y)
    if ta is None and ty is None:
        return None
    cdef long level = suspend_fw()
    try:
        return fit_tangent(add_tangents(None if ty is None else cofactor_derivative(a, ty),
                                        None if ta is None else cofactor_third(a, y, ta)), out)
    finally:
        resume_fw(level)


cdef Tensor cofactor_derivative(Tensor a, Tensor y):
    """L_A(Y) = d cof(A)[Y] for each matrix of a and y (both (..., n, n)), exact at every A."""
    cdef cnp.dtype dt = result_dtype(a, y)
    cdef Tensor out = float_result(cofactor_derivative_array(a.data.astype(dt, copy=False),
                                                             y.data.astype(dt, copy=False)), dt)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, cofactor_derivative_jvp(a, y, out))
    cdef CofactorDerivativeBackward node
    if grad_enabled() and (a.requires_grad_c() or y.requires_grad_c()):
        node = CofactorDerivativeBackward.__new__(CofactorDerivativeBackward)
        record(node, a, y)
        attach_output(out, node, 0)
        node.a = save_tensor(a, node, False)
        node.y = save_tensor(y, node, False)
    return out


cdef void check_invertible_for_third(Tensor a) except *:
    """Refuse det's third derivative at a numerically singular matrix (Note [Cofactors])."""
    cdef object s = np.linalg.svd(a.data, compute_uv=False)
    cdef Py_ssize_t n = last_dim(a)
    cdef object singular = s[..., n - 1] <= n * np.finfo(a.data.dtype).eps * s[..., 0]
    if not singular.any():
        return
    cdef object idx = tuple(np.argwhere(singular)[0]) if np.ndim(singular) else None
    raise RuntimeError(f"linalg.det: derivatives of order 3 and higher are computed only at "
                       f"invertible matrices, and the matrix A{where_in_batch(idx)} is singular "
                       "(numerically: its smallest singular value is at most n * eps times its "
                       "largest); derivatives up to the second exist at every matrix")


cdef Tensor cofactor_third(Tensor a, Tensor y, Tensor w):
    """T_A(Y, W), det's third derivative with two directions given (Note [Cofactors])."""
    cdef Py_ssize_t n = last_dim(a)
    if n <= 2:
        return wrap(np.zeros(np.broadcast_shapes(a.data.shape, y.data.shape, w.data.shape),
                             dtype=result_dtype(a, y)))
    check_invertible_for_third(a)
    cdef Tensor c = linalg_cofactor(a), ly = cofactor_derivative(a, y)
    cdef Tensor cross = add(matmul(matmul(w, mT(c)), y), matmul(matmul(y, mT(c)), w))
    cdef Tensor t = add(scale_by(matrix_inner(c, w), ly),
                        scale_by(matrix_inner(c, y), cofactor_derivative(a, w)))
    t = sub(t, add(cofactor_derivative(a, cross), scale_by(matrix_inner(w, ly), c)))
    return div(t, as_matrix_scale(det(a)))


# -- det -------------------------------------------------------------------------------------------

cdef class LinalgDetBackward(Node):
    """d = det(A)  ->  gA = g cof(A)  (Note [Cofactors]: exact at singular A too)"""
    cdef SavedTensor a

    cdef void release_saved(self):
        self.a = None

    cdef tuple apply(self, tuple grads):
        return (scale_by(<Tensor>grads[0], linalg_cofactor(self.a.unpack(self))),)


cdef Tensor det_jvp(Tensor a, Tensor out):
    """d det(A) = <cof(A), dA>"""
    cdef Tensor ta = tangent_of(a)
    if ta is None:
        return None
    cdef long level = suspend_fw()
    try:
        return fit_tangent(matrix_inner(linalg_cofactor(a), ta), out)
    finally:
        resume_fw(level)


cpdef Tensor det(object A):
    """The determinant of each square matrix of A (..., n, n)."""
    cdef Tensor a = square_operand(A, "linalg.det")
    cdef Tensor out = float_result(np.linalg.det(a.data), descr(a.data))
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, det_jvp(a, out))
    cdef LinalgDetBackward node
    if grad_enabled() and a.requires_grad_c():
        node = LinalgDetBackward.__new__(LinalgDetBackward)
        record(node, a, None)
        attach_output(out, node, 0)
        node.a = save_tensor(a, node, False)
    return out
define_op(det, BATCHED_MATRIX, FLOAT_ONLY, name="linalg.det")


# -- slogdet ---------------------------------------------------------------------------------------

cdef str SLOGDET_SINGULAR = "so log|det A| is -inf there and has no derivative"


cdef Tensor logdet_gradient(Tensor a):
    """A^-T, the gradient of log|det A| (a singular A raises, naming slogdet)."""
    return mT(inverse_of(a, "linalg.slogdet", SLOGDET_SINGULAR))


cdef class SlogdetBackward(Node):
    """(s, l) = slogdet(A)  ->  gA = g_l A^-T  (the sign has no gradient)"""
    cdef SavedTensor a

    cdef void release_saved(self):
        self.a = None

    cdef tuple apply(self, tuple grads):
        return (scale_by(<Tensor>grads[0], logdet_gradient(self.a.unpack(self))),)


cdef Tensor slogdet_jvp(Tensor a, Tensor out):
    """d log|det A| = <A^-T, dA> = tr(A^-1 dA)"""
    cdef Tensor ta = tangent_of(a)
    if ta is None:
        return None
    cdef long level = suspend_fw()
    try:
        return fit_tangent(matrix_inner(logdet_gradient(a), ta), out)
    finally:
        resume_fw(level)


def slogdet(A):
    """(sign, logabsdet) of each square matrix of A: det = sign * exp(logabsdet)."""
    cdef Tensor a = square_operand(A, "linalg.slogdet")
    sign_arr, log_arr = np.linalg.slogdet(a.data)
    cdef Tensor sign = float_result(sign_arr, descr(a.data))
    cdef Tensor out = float_result(log_arr, descr(a.data))
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, slogdet_jvp(a, out))
    cdef SlogdetBackward node
    if grad_enabled() and a.requires_grad_c():
        node = SlogdetBackward.__new__(SlogdetBackward)
        record(node, a, None)
        attach_output(out, node, 0)
        node.a = save_tensor(a, node, False)
    return SlogdetResult(sign, out)
define_op(slogdet, BATCHED_MATRIX, FLOAT_ONLY, name="linalg.slogdet")
