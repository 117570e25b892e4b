# Factorizations: cholesky, eigh, qr (Note [Linalg rules]).


cdef object factor_error(str op, object arr, object factor, str what):
    """RuntimeError naming the first matrix of arr that factor fails on, and why."""
    return RuntimeError(f"{op}: the matrix A{where_in_batch(failing_index(arr, factor))} {what}")


cdef void record_outputs(Node node, Tensor a, tuple outs) except *:
    """Record node as the history of outs (one slot each), with a as its one input."""
    cdef Py_ssize_t i
    record(node, a, None)
    node.num_outputs = len(outs)
    for i in range(len(outs)):
        attach_output(<Tensor>outs[i], node, i)


# -- cholesky -----------------------------------------------------------------------------------

cdef Tensor lower_factor(Tensor out, bint upper):
    """The lower Cholesky factor L, from cholesky's output (L, or U = L^T)."""
    return mT(out) if upper else out


cdef class LinalgCholeskyBackward(Node):
    """L = cholesky(A)  ->  gA = L^-T sym(Phi(L^T gL)) L^-1  (Phi: strict lower + half diagonal)"""
    cdef SavedTensor l
    cdef bint upper

    cdef void release_saved(self):
        self.l = None

    cdef tuple apply(self, tuple grads):
        cdef Tensor l = lower_factor(self.l.unpack(self), self.upper)
        cdef Tensor gl = lower_factor(<Tensor>grads[0], self.upper)
        cdef Tensor s = symmetric_part(lower_half_diagonal(matmul(mT(l), gl)))
        s = solve_triangular_impl(mT(l), s, True, True, False)
        return (solve_triangular_impl(l, s, False, False, False),)


cdef Tensor cholesky_jvp(Tensor a, Tensor out, bint upper):
    """dL = L Phi(L^-1 dA L^-T)  (dU = dL^T)"""
    cdef Tensor ta = tangent_of(a)
    if ta is None:
        return None
    cdef long level = suspend_fw()
    cdef Tensor l, x
    try:
        l = lower_factor(cholesky(a, upper) if tracks(a, None) else out, upper)
        x = solve_triangular_impl(l, ta, False, True, False)
        x = solve_triangular_impl(mT(l), x, True, False, False)
        return fit_tangent(lower_factor(matmul(l, lower_half_diagonal(x)), upper), out)
    finally:
        resume_fw(level)


def cholesky(A, upper=False):
    """L with A = L L^T (lower; upper=True gives U = L^T, A = U^T U) for symmetric
    positive-definite A (..., n, n); its lower triangle is read."""
    cdef str op = "linalg.cholesky"
    cdef Tensor a = square_operand(A, op)
    cdef object arr
    try:
        arr = np.linalg.cholesky(a.data)
    except np.linalg.LinAlgError:
        raise factor_error(op, a.data, np.linalg.cholesky,
                           "is not positive-definite (the factorization met a non-positive "
                           "pivot); A must be symmetric positive-definite") from None
    cdef Tensor out = float_result(np.ascontiguousarray(np.swapaxes(arr, -1, -2)) if upper
                                   else arr, descr(a.data))
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, cholesky_jvp(a, out, upper))
    cdef LinalgCholeskyBackward node
    if grad_enabled() and a.requires_grad_c():
        node = LinalgCholeskyBackward.__new__(LinalgCholeskyBackward)
        record_outputs(node, a, (out,))
        node.upper = upper
        node.l = save_tensor(out, node, True)
    return out
define_op(cholesky, BATCHED_MATRIX, FLOAT_ONLY, method="none", name="linalg.cholesky")


# -- eigh -----------------------------------------------------------------------------------------

cdef Tensor divide_by_eigengaps(Tensor w, Tensor x):
    """F o x: x_ij / (w_j - w_i) off the diagonal, 0 on it (infinite for repeated eigenvalues)."""
    cdef Py_ssize_t n = last_dim(w)
    cdef tuple s = w.data.shape
    cdef object eye = np.eye(n, dtype=w.data.dtype)
    cdef Tensor gaps = sub(reshape(w, s[:len(s) - 1] + (1, n)), reshape(w, s + (1,)))
    # the diagonal gap is 0: divide by 1 there, then select the off-diagonal entries
    return select_grad(div(x, add(gaps, wrap(eye))), 1 - eye)


cdef Tensor rotate_into(Tensor v, Tensor x):
    """V^T x V"""
    return matmul(matmul(mT(v), x), v)


cdef class LinalgEighBackward(Node):
    """(w, V) = eigh(A)  ->  gA = sym(V (diag(gw) + F o (V^T gV)) V^T), F_ij = 1/(w_j - w_i)"""
    cdef SavedTensor w
    cdef SavedTensor v

    cdef void release_saved(self):
        self.w = None
        self.v = None

    cdef tuple apply(self, tuple grads):
        cdef Tensor v = self.v.unpack(self)
        cdef Tensor inner = None
        if grads[0] is not None:
            inner = diag_embed_of(<Tensor>grads[0])
        if grads[1] is not None:
            inner = add_tangents(inner, divide_by_eigengaps(self.w.unpack(self),
                                                            matmul(mT(v), <Tensor>grads[1])))
        return (symmetric_part(matmul(matmul(v, inner), mT(v))),)


cdef tuple eigh_jvp(Tensor a, Tensor w, Tensor v, str uplo):
    """dw = diag(V^T dA V), dV = V (F o (V^T dA V))"""
    cdef Tensor ta = tangent_of(a)
    if ta is None:
        return (None, None)
    cdef long level = suspend_fw()
    cdef Tensor m
    try:
        if tracks(a, None):
            w, v = eigh(a, uplo)
        m = rotate_into(v, ta)
        return (linalg_diagonal_of(m), matmul(v, divide_by_eigengaps(w, m)))
    finally:
        resume_fw(level)


def eigh(A, UPLO="L"):
    """(eigenvalues ascending, eigenvectors as columns) of symmetric A (..., n, n), reading
    its UPLO triangle. Gradients need distinct eigenvalues when the eigenvectors are used."""
    cdef str op = "linalg.eigh"
    cdef Tensor a = square_operand(A, op)
    if UPLO not in ("L", "U"):
        raise ValueError(f"{op}: UPLO must be 'L' or 'U', got {UPLO!r}")
    try:
        w_arr, v_arr = np.linalg.eigh(a.data, UPLO)
    except np.linalg.LinAlgError:
        raise factor_error(op, a.data, lambda m: np.linalg.eigh(m, UPLO),
                           "has eigenvalues that did not converge") from None
    cdef Tensor w = float_result(w_arr, descr(a.data)), v = float_result(v_arr, descr(a.data))
    cdef tuple tangents
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            tangents = eigh_jvp(a, w, v, UPLO)
            set_tangent(w, fit_tangent(<Tensor>tangents[0], w))
            set_tangent(v, fit_tangent(<Tensor>tangents[1], v))
    cdef LinalgEighBackward node
    if grad_enabled() and a.requires_grad_c():
        node = LinalgEighBackward.__new__(LinalgEighBackward)
        record_outputs(node, a, (w, v))
        node.w = save_tensor(w, node, True)
        node.v = save_tensor(v, node, True)
    return EighResult(w, v)
define_op(eigh, BATCHED_MATRIX, FLOAT_ONLY, method="none", name="linalg.eigh")


# -- qr -------------------------------------------------------------------------------------------

cdef void check_qr_differentiable(tuple shape, str mode) except *:
    cdef Py_ssize_t nd = len(shape), m = shape[nd - 2], n = shape[nd - 1]
    if mode == "r":
        raise RuntimeError("linalg.qr: the derivative needs Q, which mode='r' does not compute; "
                           "use mode='reduced'")
    if m < n or (mode == "complete" and m != n):
        raise RuntimeError(f"linalg.qr: the derivative is implemented for square matrices and, "
                           f"in mode='reduced', tall ones (m >= n); got shape {shape} in "
                           f"mode={mode!r}")


cdef Tensor copy_upper_to_lower(Tensor m):
    """The upper triangle of m with its strict part mirrored below the diagonal."""
    return add(linalg_triangle(m, True, False), linalg_triangle(mT(m), False, True))


cdef Tensor fold_lower_into_upper(Tensor x):
    """triu(x) + tril(x, -1)^T (the adjoint of copy_upper_to_lower)."""
    return add(linalg_triangle(x, True, False), mT(linalg_triangle(x, False, True)))


cdef class LinalgQrBackward(Node):
    """(Q, R) = qr(A), m >= n  ->  gA = (gQ + Q copyutl(gR R^T - Q^T gQ)) R^-T"""
    cdef SavedTensor q
    cdef SavedTensor r
    cdef tuple a_shape
    cdef str mode

    cdef void release_saved(self):
        self.q = None
        self.r = None

    cdef tuple apply(self, tuple grads):
        check_qr_differentiable(self.a_shape, self.mode)
        cdef Tensor q = self.q.unpack(self), r = self.r.unpack(self)
        cdef Tensor gq = grads[0], gr = grads[1], m = None, y
        if gr is not None:
            m = matmul(gr, mT(r))
        if gq is not None:
            m = add_tangents(m, neg(matmul(mT(q), gq)))
        y = matmul(q, copy_upper_to_lower(m))
        if gq is not None:
            y = add(gq, y)
        return (solve_triangular_impl(mT(r), y, False, False, False),)


cdef tuple qr_jvp(Tensor a, Tensor q, Tensor r, str mode):
    """X = Q^T dA R^-1, U = triu(X) + tril(X, -1)^T:  dR = U R, dQ = dA R^-1 - Q U"""
    cdef Tensor ta = tangent_of(a)
    if ta is None:
        return (None, None)
    check_qr_differentiable(a.data.shape, mode)
    cdef long level = suspend_fw()
    cdef Tensor da_r, u
    try:
        if tracks(a, None):
            q, r = qr(a, mode)
        da_r = solve_triangular_impl(r, ta, True, False, False)
        u = fold_lower_into_upper(matmul(mT(q), da_r))
        return (sub(da_r, matmul(q, u)), matmul(u, r))
    finally:
        resume_fw(level)


def qr(A, mode="reduced"):
    """(Q, R) with A = Q R, Q orthonormal columns, R upper triangular, for A (..., m, n);
    mode 'reduced' (k = min(m, n) columns), 'complete' (Q square) or 'r' (Q empty)."""
    cdef str op = "linalg.qr"
    cdef Tensor a = linalg_float_operand(A, op, "A")
    if ndim_of(a.data) < 2:
        raise RuntimeError(f"{op}: A must be a matrix or a batch of matrices (shape (*, m, n)), "
                           f"got shape {a.data.shape}")
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"{op}: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    cdef cnp.dtype dt = descr(a.data)
    cdef Tensor q, r
    if mode == "r":
        q = wrap(np.empty((0,), dtype=dt))
        r = float_result(np.linalg.qr(a.data, mode="r"), dt)
    else:
        q_arr, r_arr = np.linalg.qr(a.data, mode=mode)
        q, r = float_result(q_arr, dt), float_result(r_arr, dt)
    cdef tuple tangents
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            tangents = qr_jvp(a, q, r, mode)
            set_tangent(q, fit_tangent(<Tensor>tangents[0], q))
            set_tangent(r, fit_tangent(<Tensor>tangents[1], r))
    cdef LinalgQrBackward node
    if grad_enabled() and a.requires_grad_c():
        node = LinalgQrBackward.__new__(LinalgQrBackward)
        record_outputs(node, a, (q, r))
        node.a_shape = a.data.shape
        node.mode = mode
        if mode != "r":
            node.q = save_tensor(q, node, True)
            node.r = save_tensor(r, node, True)
    return QRResult(q, r)
define_op(qr, BATCHED_MATRIX, FLOAT_ONLY, method="none", name="linalg.qr")
