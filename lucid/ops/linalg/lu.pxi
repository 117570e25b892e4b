# LU with partial pivoting: lu_factor, lu_solve (Note [Linalg rules]; Note [LU]).
#
# Note [LU]
#   lu_factor computes P^T A = L U by Gaussian elimination with partial pivoting (the row of the
#   largest |entry| of each column, the first on ties, like LAPACK's getrf), batched in NumPy
#   (NumPy has no getrf); LU holds L's strict lower triangle (unit diagonal) and U, and the
#   pivots are LAPACK's: 1-based int32, row j swapped with row pivots[j] in order. Like PyTorch,
#   an exactly zero pivot (a singular A) is a RuntimeError in lu_factor, and lu_solve does not
#   check: a singular U divides by zero into inf/nan. lu_solve substitutes row by row, so it
#   reads only the triangles it uses.
#   Derivatives (square A): with X = L^-1 P^T dA U^-1,  dL = L tril(X, -1), dU = triu(X) U; the
#   adjoint is gA = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T with gL, gU the strict lower
#   and upper parts of gLU. lu_solve's X = A^-1 B (A^-T B with adjoint) differentiates as a
#   solve: gB = A^-T g (A^-1 g), gA = -gB X^T (-X gB^T), and gLU = tril(P^T gA U^T, -1) +
#   triu(L^T P^T gA), the pull-back of A = P L U.

LUFactorResult = namedtuple("lu_factor", ["LU", "pivots"])


cdef tuple lu_arrays(object arr):
    """(LU, 1-based int32 pivots, first zero pivot per matrix: 0 if none, else its 1-based
    index) of each matrix of arr (..., m, n), by elimination with partial pivoting."""
    cdef tuple shape = arr.shape
    cdef Py_ssize_t m = shape[len(shape) - 2], n = shape[len(shape) - 1], k = min(m, n), j
    cdef tuple batch = shape[:len(shape) - 2]
    cdef object lu = np.array(arr, copy=True).reshape((-1, m, n))
    cdef Py_ssize_t nb = lu.shape[0]
    cdef object piv = np.empty((nb, k), dtype=np.int32), info = np.zeros(nb, dtype=np.int64)
    cdef object rows = np.arange(nb), p, top, d, col
    with np.errstate(all="ignore"):
        for j in range(k):
            p = j + np.argmax(np.abs(lu[:, j:, j]), axis=1)
            piv[:, j] = p + 1
            top = lu[rows, j, :].copy()
            lu[rows, j, :] = lu[rows, p, :]
            lu[rows, p, :] = top
            d = lu[:, j, j]
            info[(d == 0) & (info == 0)] = j + 1
            if j + 1 < m:     # a zero pivot leaves its (zero) column as it is, like getrf
                col = lu[:, j + 1:, j] / np.where(d == 0, 1, d)[:, None]
                lu[:, j + 1:, j] = col
                lu[:, j + 1:, j + 1:] -= col[:, :, None] * lu[:, j, None, j + 1:]
    return lu.reshape(shape), piv.reshape(batch + (k,)), info.reshape(batch)


cdef object row_permutation(object piv, Py_ssize_t m):
    """P^T as matrices (..., m, m) of 0/1 (P^T A = A with the pivots' swaps applied in order)."""
    cdef tuple batch = piv.shape[:ndim_of(piv) - 1]
    cdef Py_ssize_t k = piv.shape[ndim_of(piv) - 1], j
    cdef object p = piv.reshape((-1, k)).astype(np.intp) - 1
    cdef object perm = np.broadcast_to(np.arange(m), (p.shape[0], m)).copy()
    cdef object rows = np.arange(p.shape[0]), first
    for j in range(k):
        first = perm[:, j].copy()
        perm[:, j] = perm[rows, p[:, j]]
        perm[rows, p[:, j]] = first
    return np.eye(m)[perm].reshape(batch + (m, m))


cdef object substitute(object t, object b, bint lower, bint unit):
    """X with T X = B for triangular T (only its lower/upper triangle read; unit: diagonal 1),
    row by row, batches broadcast; a zero on T's diagonal gives inf/nan (no check)."""
    cdef Py_ssize_t n = t.shape[ndim_of(t) - 1], i
    cdef tuple batch = np.broadcast_shapes(t.shape[:ndim_of(t) - 2], b.shape[:ndim_of(b) - 2])
    t = np.broadcast_to(t, batch + t.shape[ndim_of(t) - 2:])
    b = np.broadcast_to(b, batch + b.shape[ndim_of(b) - 2:])
    cdef object x = np.empty(b.shape, dtype=np.result_type(t, b)), r
    cdef object order = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(all="ignore"):
        for i in order:
            if lower:
                r = b[..., i, :] - np.matmul(t[..., i:i + 1, :i], x[..., :i, :])[..., 0, :]
            else:
                r = b[..., i, :] - np.matmul(t[..., i:i + 1, i + 1:], x[..., i + 1:, :])[..., 0, :]
            x[..., i, :] = r if unit else r / t[..., i, i, None]
    return x


cdef object lu_solve_array(object lu, object pt, object b, bint adjoint):
    """A^-1 B (A^-T B with adjoint) for A = P L U given as LU and P^T."""
    cdef object lut
    if not adjoint:
        return substitute(lu, substitute(lu, np.matmul(pt, b), True, True), False, False)
    lut = np.swapaxes(lu, -1, -2)
    return np.matmul(np.swapaxes(pt, -1, -2),
                     substitute(lut, substitute(lut, b, True, False), False, True))


# -- L, U and P as differentiable pieces of LU ----------------------------------------------------

cdef Tensor unit_lower(Tensor lu):
    """L: the strict lower triangle of LU plus the identity."""
    return add(linalg_triangle(lu, False, True), wrap(np.eye(last_dim(lu), dtype=lu.data.dtype)))


cdef Tensor upper_of(Tensor lu):
    return linalg_triangle(lu, True, False)


cdef Tensor lu_pullback(Tensor lu, Tensor pt, Tensor ga):
    """gLU from gA through A = P L U: tril(P^T gA U^T, -1) + triu(L^T P^T gA)."""
    cdef Tensor pga = matmul(pt, ga)
    return add(linalg_triangle(matmul(pga, mT(upper_of(lu))), False, True),
               linalg_triangle(matmul(mT(unit_lower(lu)), pga), True, False))


cdef Tensor lu_pushforward(Tensor lu, Tensor pt, Tensor dlu):
    """dA from dLU through A = P L U: P (dL U + L dU)."""
    cdef Tensor d = add(matmul(linalg_triangle(dlu, False, True), upper_of(lu)),
                        matmul(unit_lower(lu), linalg_triangle(dlu, True, False)))
    return matmul(mT(pt), d)


# -- lu_factor ---------------------------------------------------------------------------------------

cdef void check_lu_differentiable(tuple shape) except *:
    if shape[len(shape) - 1] != shape[len(shape) - 2]:
        raise RuntimeError(f"linalg.lu_factor: the derivative is implemented for square matrices "
                           f"only, got shape {shape}")


cdef class LinalgLuFactorBackward(Node):
    """(LU, piv) = lu_factor(A)  ->  gA = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T
    (Note [LU])"""
    cdef SavedTensor lu
    cdef object pt
    cdef tuple a_shape
    cdef cnp.dtype a_dtype

    cdef void release_saved(self):
        self.lu = None

    cdef tuple apply(self, tuple grads):
        check_lu_differentiable(self.a_shape)
        cdef Tensor lu = self.lu.unpack(self), g = grads[0]
        if g is None:
            return (None,)
        # tril(L^T g, -1) = tril(L^T gL, -1) and triu(g U^T) = triu(gU U^T): the other parts of
        # g land in the other triangle
        cdef Tensor m = add(linalg_triangle(matmul(mT(unit_lower(lu)), g), False, True),
                            linalg_triangle(matmul(g, mT(upper_of(lu))), True, False))
        m = solve_triangular_impl(mT(lu), m, True, True, True)
        m = solve_triangular_impl(mT(lu), m, False, False, False)
        cdef Tensor p = wrap(np.ascontiguousarray(np.swapaxes(self.pt, -1, -2)))
        return (reduce_grad(matmul(p, m), None, self.a_dtype),)


cdef Tensor lu_factor_jvp(Tensor a, Tensor lu, object pt):
    """X = L^-1 P^T dA U^-1:  dLU = L tril(X, -1) + triu(X) U  (Note [LU])"""
    cdef Tensor ta = tangent_of(a)
    if ta is None:
        return None
    check_lu_differentiable(a.data.shape)
    cdef long level = suspend_fw()
    cdef Tensor x
    try:
        if tracks(a, None):
            lu = lu_factor_tensors(a, "linalg.lu_factor")[0]
        x = solve_triangular_impl(lu, matmul(wrap(pt), ta), False, True, True)
        x = solve_triangular_impl(lu, x, True, False, False)
        return fit_tangent(add(matmul(unit_lower(lu), linalg_triangle(x, False, True)),
                               matmul(linalg_triangle(x, True, False), upper_of(lu))), lu)
    finally:
        resume_fw(level)


cdef tuple lu_factor_tensors(Tensor a, str op):
    """(LU, pivots) of a as tensors, LU recorded (a zero pivot raises, naming op)."""
    cdef cnp.dtype dt = descr(a.data)
    lu_arr, piv, info = lu_arrays(a.data)
    if np.any(info > 0):
        idx = tuple(np.argwhere(info > 0)[0]) if np.ndim(info) else None
        j = int(info[idx] if idx is not None else info)
        raise RuntimeError(f"{op}: U[{j},{j}] of the matrix A{where_in_batch(idx)} is zero (A is "
                           "singular), and lu_solve would divide by it")
    cdef Tensor lu = float_result(lu_arr, dt)
    cdef Tensor pivots = wrap(piv)
    cdef tuple sh = a.data.shape
    cdef object pt = None
    if fw_active() or (grad_enabled() and a.requires_grad_c()):
        pt = row_permutation(piv, sh[len(sh) - 2]).astype(dt)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(lu, lu_factor_jvp(a, lu, pt))
    cdef LinalgLuFactorBackward node
    if grad_enabled() and a.requires_grad_c():
        node = LinalgLuFactorBackward.__new__(LinalgLuFactorBackward)
        record_outputs(node, a, (lu,))      # the pivots are integers: no gradient
        node.a_shape = sh
        node.a_dtype = dt
        node.pt = pt
        node.lu = save_tensor(lu, node, True)
    return (lu, pivots)


def lu_factor(A, *, pivot=True):
    """(LU, pivots): P^T A = L U with L unit lower (its strict part in LU) and U upper, for A
    (..., m, n); pivots 1-based int32 (LAPACK's). A singular A raises. Note [LU]."""
    cdef str op = "linalg.lu_factor"
    cdef Tensor a = matrix_operand(A, op, "A")
    if not pivot:
        raise RuntimeError(f"{op}: LU without pivoting is not implemented on the CPU "
                           "(PyTorch's CPU refuses it too); use pivot=True")
    return LUFactorResult(*lu_factor_tensors(a, op))
define_op(lu_factor, BATCHED_MATRIX, FLOAT_ONLY, method="none", name="linalg.lu_factor")


# -- lu_solve ------------------------------------------------------------------------------------------

cdef class LinalgLuSolveBackward(Node):
    """X = A^-1 B (A^-T B: adjoint), A = P L U  ->  gB = A^-T g (A^-1 g), gA = -gB X^T (-X gB^T),
    gLU = pull-back of gA (Note [LU])"""
    cdef SavedTensor lu
    cdef SavedTensor x
    cdef object pt
    cdef bint adjoint
    cdef tuple lu_shape
    cdef tuple b_shape
    cdef cnp.dtype lu_dtype
    cdef cnp.dtype b_dtype

    cdef void release_saved(self):
        self.lu = None
        self.x = None

    cdef tuple apply(self, tuple grads):
        cdef Tensor lu = self.lu.unpack(self), pt = wrap(self.pt), x, ga
        cdef Tensor gb = lu_solve_tensor(lu, self.pt, <Tensor>grads[0], not self.adjoint)
        glu = None
        if needs(self, 0):
            x = self.x.unpack(self)
            ga = neg(matmul(x, mT(gb)) if self.adjoint else matmul(gb, mT(x)))
            glu = reduce_grad(sum_to(lu_pullback(lu, pt, ga), self.lu_shape), None,
                              self.lu_dtype)
        gb_out = reduce_grad(sum_to(gb, self.b_shape), None, self.b_dtype) if needs(self, 1) \
            else None
        return (glu, gb_out)


cdef Tensor lu_solve_jvp(Tensor lu, object pt, Tensor b, Tensor x, bint adjoint):
    """dX = A^-1 (dB - dA X)  (A^-T (dB - dA^T X) with adjoint), dA = P (dL U + L dU)"""
    cdef Tensor tl = tangent_of(lu), tb = tangent_of(b)
    if tl is None and tb is None:
        return None
    cdef long level = suspend_fw()
    cdef Tensor rhs = tb, da, xr
    try:
        if tl is not None:
            xr = lu_solve_tensor(lu, pt, b, adjoint) if tracks(lu, b) else x
            da = lu_pushforward(lu, wrap(pt), tl)
            rhs = add_tangents(rhs, neg(matmul(mT(da) if adjoint else da, xr)))
        return fit_tangent(lu_solve_tensor(lu, pt, rhs, adjoint), x)
    finally:
        resume_fw(level)


cdef Tensor lu_solve_tensor(Tensor lu, object pt, Tensor b, bint adjoint):
    """A^-1 B (A^-T B with adjoint) for A = P L U, differentiable in LU and B."""
    cdef cnp.dtype dt = result_dtype(lu, b)
    cdef Tensor out = float_result(lu_solve_array(lu.data.astype(dt, copy=False), pt,
                                                  b.data.astype(dt, copy=False), adjoint), dt)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, lu_solve_jvp(lu, pt, b, out, adjoint))
    cdef LinalgLuSolveBackward node
    if grad_enabled() and (lu.requires_grad_c() or b.requires_grad_c()):
        node = LinalgLuSolveBackward.__new__(LinalgLuSolveBackward)
        record(node, lu, b)
        attach_output(out, node, 0)
        node.pt = pt
        node.adjoint = adjoint
        node.lu_shape = lu.data.shape
        node.b_shape = b.data.shape
        node.lu_dtype = descr(lu.data)
        node.b_dtype = descr(b.data)
        node.lu = save_tensor(lu, node, False)
        if needs(node, 0):
            node.x = save_tensor(out, node, True)
    return out


cdef object checked_pivots(object pivots, tuple lu_shape, str op):
    """The pivots as an int array of LU's batch shape and k = n, each in [1, n]."""
    cdef Tensor p = operand(pivots, op)
    cdef Py_ssize_t n = lu_shape[len(lu_shape) - 1]
    if p.data.dtype != np.int32:
        raise RuntimeError(f"{op}: pivots must be an int32 tensor (as lu_factor gives), got "
                           f"{dtype_name(p.data.dtype)}")
    if ndim_of(p.data) < 1 or p.data.shape[ndim_of(p.data) - 1] != n:
        raise RuntimeError(f"{op}: pivots must have shape (*, {n}) for LU of shape {lu_shape}, "
                           f"got {p.data.shape}")
    if p.data.size and (p.data.min() < 1 or p.data.max() > n):
        raise RuntimeError(f"{op}: pivots must be in [1, {n}] (1-based row indices), got values "
                           f"in [{p.data.min()}, {p.data.max()}]")
    return p.data


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """X with A X = B (left) or X A = B for A = P L U given by lu_factor (A^T instead of A with
    adjoint); batches broadcast. A singular U gives inf/nan (not checked, as in PyTorch)."""
    cdef str op = "linalg.lu_solve"
    cdef Tensor lu = square_operand(LU, op)
    cdef Tensor b = matrix_operand(B, op, "B")
    cdef tuple s = lu.data.shape, bs = b.data.shape
    cdef Py_ssize_t n = s[len(s) - 1], nb = len(bs)
    cdef object piv = checked_pivots(pivots, s, op)
    if bs[nb - 2 if left else nb - 1] != n:
        raise RuntimeError(f"{op}: LU of shape {s} and B of shape {bs} are incompatible: B must be "
                           f"{'(*, ' + str(n) + ', k)' if left else '(*, k, ' + str(n) + ')'} "
                           f"for left={bool(left)}")
    try:
        np.broadcast_shapes(s[:len(s) - 2], piv.shape[:ndim_of(piv) - 1], bs[:nb - 2])
    except ValueError:
        raise RuntimeError(f"{op}: the batch dims of LU (shape {s}), pivots (shape {piv.shape}) "
                           f"and B (shape {bs}) cannot be broadcast together") from None
    cdef object pt = row_permutation(piv, n).astype(result_dtype(lu, b))
    cdef bint adj = bool(adjoint) != (not left)
    if left:
        return lu_solve_tensor(lu, pt, b, adj)
    return mT(lu_solve_tensor(lu, pt, mT(b), adj))
define_op(lu_solve, BATCHED_MATRIX, FLOAT_ONLY, method="none", name="linalg.lu_solve")
