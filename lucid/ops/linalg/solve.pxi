# Linear systems and what LU gives: solve, solve_triangular, inv (Note [Linalg rules]).


# -- solve ------------------------------------------------------------------------------------

cdef bint is_vector_rhs(Tensor a, Tensor b):
    """Is B a (batch of) vector(s) for A, as PyTorch reads it: 1-D, or A's shape without its
    last dim?"""
    cdef tuple s = a.data.shape
    return ndim_of(b.data) == 1 or b.data.shape == s[:len(s) - 1]


cdef Tensor as_column(Tensor x, bint vector):
    """A vector right-hand side (..., n) as a matrix (..., n, 1); a matrix as is."""
    return reshape(x, x.data.shape + (1,)) if vector else x


cdef class LinalgSolveBackward(Node):
    """X = solve(A, B)  ->  gB = solve(A^T, g), gA = -gB X^T  (vectors as columns, batch summed)"""
    cdef SavedTensor a
    cdef SavedTensor x
    cdef bint vector
    cdef tuple a_shape
    cdef tuple b_shape
    cdef cnp.dtype a_dtype
    cdef cnp.dtype b_dtype

    cdef void release_saved(self):
        self.a = None
        self.x = None

    cdef tuple apply(self, tuple grads):
        cdef Tensor a = self.a.unpack(self)
        cdef Tensor g = as_column(<Tensor>grads[0], self.vector)
        cdef Tensor gb = solve(mT(a), g)
        ga = None
        if needs(self, 0):
            ga = neg(matmul(gb, mT(as_column(self.x.unpack(self), self.vector))))
            ga = reduce_grad(sum_to(ga, self.a_shape), None, self.a_dtype)
        if not needs(self, 1):
            return (ga, None)
        if self.vector:
            gb = reshape(gb, gb.data.shape[:ndim_of(gb.data) - 1])
        return (ga, reduce_grad(sum_to(gb, self.b_shape), None, self.b_dtype))


cdef Tensor solve_jvp(Tensor a, Tensor b, Tensor x, bint vector):
    """dX = solve(A, dB - dA X)"""
    cdef Tensor ta = tangent_of(a), tb = tangent_of(b)
    if ta is None and tb is None:
        return None
    cdef long level = suspend_fw()
    cdef Tensor rhs, xr
    try:
        rhs = None if tb is None else as_column(tb, vector)
        if ta is not None:
            xr = solve(a, b) if tracks(a, b) else x
            rhs = add_tangents(rhs, neg(matmul(ta, as_column(xr, vector))))
        rhs = solve(a, rhs)
        return fit_tangent(reshape(rhs, rhs.data.shape[:ndim_of(rhs.data) - 1]) if vector
                           else rhs, x)
    finally:
        resume_fw(level)


cpdef Tensor solve(object A, object B):
    """X with A X = B for square A (..., n, n); B (..., n, k) or a vector (n,) / (..., n)."""
    cdef Tensor a = square_operand(A, "linalg.solve")
    cdef Tensor b = linalg_float_operand(B, "linalg.solve", "B")
    cdef bint vector = is_vector_rhs(a, b)
    cdef tuple s = a.data.shape
    cdef tuple bs = b.data.shape
    cdef Py_ssize_t n = s[len(s) - 1], nb = len(bs), rows = 1 if vector else 2
    if nb < rows or bs[nb - rows] != n:
        raise RuntimeError(f"linalg.solve: A of shape {s} and B of shape {bs} are incompatible: "
                           f"B must be (*, {n}, k) or a vector (*, {n})")
    cdef cnp.dtype dt = result_dtype(a, b)
    cdef object bm = b.data[..., None] if vector else b.data
    cdef object arr
    try:
        np.broadcast_shapes(s[:len(s) - 2], bm.shape[:ndim_of(bm) - 2])
    except ValueError:
        raise RuntimeError(f"linalg.solve: the batch dims of A (shape {s}) and B (shape {bs}) "
                           "cannot be broadcast together") from None
    try:
        arr = np.linalg.solve(a.data.astype(dt, copy=False), bm.astype(dt, copy=False))
    except np.linalg.LinAlgError:
        raise singular_error("linalg.solve", a.data, NO_UNIQUE_SOLUTION) from None
    cdef Tensor out = float_result(arr[..., 0] if vector else arr, dt)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, solve_jvp(a, b, out, vector))
    cdef LinalgSolveBackward node
    if grad_enabled() and (a.requires_grad_c() or b.requires_grad_c()):
        node = LinalgSolveBackward.__new__(LinalgSolveBackward)
        record(node, a, b)
        attach_output(out, node, 0)
        node.vector = vector
        node.a_shape = s
        node.b_shape = bs
        node.a_dtype = descr(a.data)
        node.b_dtype = descr(b.data)
        node.a = save_tensor(a, node, False)
        if needs(node, 0):
            node.x = save_tensor(out, node, True)
    return out
define_op(solve, BATCHED_MATRIX, FLOAT_ONLY, method="none", name="linalg.solve")


# -- solve_triangular -------------------------------------------------------------------------

cdef object triangular_part(object arr, bint upper, bint unitriangular):
    """The triangle of arr's matrices that solve_triangular reads (unit diagonal if asked)."""
    cdef object tri = np.triu(arr) if upper else np.tril(arr)
    if unitriangular:
        idx = np.arange(arr.shape[ndim_of(arr) - 1])
        tri[..., idx, idx] = 1
    return tri


cdef class SolveTriangularBackward(Node):
    """X = A^-1 B (left) or B A^-1  ->  gB = A^-T g (g A^-T), gA = tri(-gB X^T) (tri(-X^T gB))"""
    cdef SavedTensor a
    cdef SavedTensor x
    cdef bint upper
    cdef bint left
    cdef bint unitriangular
    cdef tuple a_shape
    cdef tuple b_shape
    cdef cnp.dtype a_dtype
    cdef cnp.dtype b_dtype

    cdef void release_saved(self):
        self.a = None
        self.x = None

    cdef tuple apply(self, tuple grads):
        cdef Tensor a = self.a.unpack(self)
        cdef Tensor gb = solve_triangular_impl(mT(a), <Tensor>grads[0], not self.upper, self.left,
                                               self.unitriangular)
        cdef Tensor x
        ga = None
        if needs(self, 0):
            x = self.x.unpack(self)
            ga = neg(matmul(gb, mT(x)) if self.left else matmul(mT(x), gb))
            ga = linalg_triangle(sum_to(ga, self.a_shape), self.upper, self.unitriangular)
            ga = reduce_grad(ga, None, self.a_dtype)
        gb_out = reduce_grad(sum_to(gb, self.b_shape), None, self.b_dtype) if needs(self, 1) \
            else None
        return (ga, gb_out)


cdef Tensor solve_triangular_jvp(Tensor a, Tensor b, Tensor x, bint upper, bint left,
                                 bint unitriangular):
    """dX = A^-1 (dB - tri(dA) X)  (left)  or  (dB - X tri(dA)) A^-1  (right)"""
    cdef Tensor ta = tangent_of(a), tb = tangent_of(b)
    if ta is None and tb is None:
        return None
    cdef long level = suspend_fw()
    cdef Tensor rhs = tb, da, xr
    try:
        if ta is not None:
            xr = solve_triangular_impl(a, b, upper, left, unitriangular) if tracks(a, b) else x
            da = linalg_triangle(ta, upper, unitriangular)
            rhs = add_tangents(rhs, neg(matmul(da, xr) if left else matmul(xr, da)))
        return fit_tangent(solve_triangular_impl(a, rhs, upper, left, unitriangular), x)
    finally:
        resume_fw(level)


cdef Tensor solve_triangular_impl(Tensor a, Tensor b, bint upper, bint left, bint unitriangular):
    cdef str op = "linalg.solve_triangular"
    cdef tuple s = a.data.shape
    cdef tuple bs = b.data.shape
    cdef Py_ssize_t n = s[len(s) - 1], nb = ndim_of(b.data)
    if nb < 2 or bs[nb - 2 if left else nb - 1] != n:
        raise RuntimeError(f"{op}: A of shape {s} and B of shape {bs} are incompatible: B must "
                           f"be {'(*, ' + str(n) + ', k)' if left else '(*, k, ' + str(n) + ')'} "
                           f"for left={left}")
    try:
        np.broadcast_shapes(s[:len(s) - 2], bs[:nb - 2])
    except ValueError:
        raise RuntimeError(f"{op}: the batch dims of A (shape {s}) and B (shape {bs}) cannot be "
                           "broadcast together") from None
    cdef cnp.dtype dt = result_dtype(a, b)
    cdef object tri = triangular_part(a.data.astype(dt), upper, unitriangular)
    cdef object arr
    # NumPy has no triangular LAPACK solver (trtrs): solve the triangle by LU (gesv), batched
    try:
        if left:
            arr = np.linalg.solve(tri, b.data.astype(dt, copy=False))
        else:
            arr = np.swapaxes(np.linalg.solve(np.swapaxes(tri, -1, -2),
                                              np.swapaxes(b.data.astype(dt, copy=False), -1, -2)),
                              -1, -2)
    except np.linalg.LinAlgError:
        raise singular_error(op, tri, NO_UNIQUE_SOLUTION) from None
    cdef Tensor out = float_result(np.ascontiguousarray(arr), dt)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, solve_triangular_jvp(a, b, out, upper, left, unitriangular))
    cdef SolveTriangularBackward node
    if grad_enabled() and (a.requires_grad_c() or b.requires_grad_c()):
        node = SolveTriangularBackward.__new__(SolveTriangularBackward)
        record(node, a, b)
        attach_output(out, node, 0)
        node.upper = upper
        node.left = left
        node.unitriangular = unitriangular
        node.a_shape = s
        node.b_shape = bs
        node.a_dtype = descr(a.data)
        node.b_dtype = descr(b.data)
        node.a = save_tensor(a, node, False)
        if needs(node, 0):
            node.x = save_tensor(out, node, True)
    return out


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """X with A X = B (left) or X A = B for triangular A (only its upper/lower triangle read)."""
    cdef Tensor a = square_operand(A, "linalg.solve_triangular")
    cdef Tensor b = linalg_float_operand(B, "linalg.solve_triangular", "B")
    return solve_triangular_impl(a, b, bool(upper), bool(left), bool(unitriangular))
define_op(solve_triangular, BATCHED_MATRIX, FLOAT_ONLY, method="none",
          name="linalg.solve_triangular")


# -- inv ----------------------------------------------------------------------------------------

cdef class LinalgInvBackward(Node):
    """X = inv(A)  ->  gA = -X^T g X^T"""
    cdef SavedTensor x
    cdef cnp.dtype a_dtype

    cdef void release_saved(self):
        self.x = None

    cdef tuple apply(self, tuple grads):
        cdef Tensor xt = mT(self.x.unpack(self))
        return (reduce_grad(neg(matmul(matmul(xt, <Tensor>grads[0]), xt)), None, self.a_dtype),)


cdef Tensor inv_jvp(Tensor a, Tensor x):
    """dX = -X dA X"""
    cdef Tensor ta = tangent_of(a)
    if ta is None:
        return None
    cdef long level = suspend_fw()
    cdef Tensor xr
    try:
        xr = inv(a) if tracks(a, None) else x
        return fit_tangent(neg(matmul(matmul(xr, ta), xr)), x)
    finally:
        resume_fw(level)


cpdef Tensor inv(object A):
    """The inverse of each square matrix of A (..., n, n)."""
    return inverse_of(square_operand(A, "linalg.inv"), "linalg.inv", NO_UNIQUE_SOLUTION)
define_op(inv, BATCHED_MATRIX, FLOAT_ONLY, method="none", name="linalg.inv")


cdef Tensor inverse_of(Tensor a, str op, str why):
    """inv(a), differentiable; a singular matrix raises a RuntimeError naming op, saying why."""
    cdef object arr
    try:
        arr = np.linalg.inv(a.data)
    except np.linalg.LinAlgError:
        raise singular_error(op, a.data, why) from None
    cdef Tensor out = float_result(arr, descr(a.data))
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, inv_jvp(a, out))
    cdef LinalgInvBackward node
    if grad_enabled() and a.requires_grad_c():
        node = LinalgInvBackward.__new__(LinalgInvBackward)
        record(node, a, None)
        attach_output(out, node, 0)
        node.a_dtype = descr(a.data)
        node.x = save_tensor(out, node, True)
    return out
