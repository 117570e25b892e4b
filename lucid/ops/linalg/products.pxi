# Shape-checked products (mm, bmm, dot, outer: matmul with PyTorch's argument checks) and
# linalg.norm: the vector 2-norm is its own node (gradient 0 at a zero vector); the other norms
# are composed from lucid ops (abs sums and maxima; 'nuc', 2, -2 from the singular values, the
# square roots of the Gram matrix's eigenvalues, which differentiate through eigh's eigenvalues),
# and the two helpers the rest of lucid._linalg shares.


cdef Tensor linalg_float_operand(object x, str op, str what):
    """x as a tensor of a float or complex dtype (RuntimeError for integer and bool tensors).

    A complex x reaches an op's body only when the op is in COMPLEX_OPS: the registered ops'
    forwarders refuse it before (Note [Complex guard])."""
    cdef Tensor t = operand(x, op)
    if not is_differentiable_dtype(descr(t.data)):
        raise RuntimeError(f"{op}: expected a floating point tensor as {what}, got "
                           f"{dtype_name(t.data.dtype)}")
    return t


cdef Tensor float_result(object arr, cnp.dtype dt):
    """A LAPACK result as a tensor of dt (NumPy may hand back a scalar or another dtype)."""
    arr = as_array(arr)
    if descr(arr) is not dt and arr.dtype != dt:
        arr = arr.astype(dt)
    return wrap(arr)


cdef Tensor checked_operand(object x, str op, str name, int ndim, str kind):
    """x as a tensor with exactly ndim dims (RuntimeError naming op and argument otherwise)."""
    cdef Tensor t = operand(x, op)
    if t._wrapped_number or ndim_of(t.data) != ndim:
        raise RuntimeError(f"{op}: {name} must be a {kind} ({ndim}-D tensor), got a tensor of "
                           f"shape {t.data.shape}")
    return t


def mm(input, mat2):
    """Matrix product of two matrices (n, m) @ (m, p) (no broadcasting)."""
    cdef Tensor a = checked_operand(input, "mm", "input", 2, "matrix")
    cdef Tensor b = checked_operand(mat2, "mm", "mat2", 2, "matrix")
    if a.data.shape[1] != b.data.shape[0]:
        raise shape_error("mm", a, b, "cannot be multiplied (input's columns must equal mat2's rows)")
    return matmul(a, b)
define_op(mm, CUSTOM, ANY)


def bmm(input, mat2):
    """Batched matrix product (b, n, m) @ (b, m, p) (no broadcasting)."""
    cdef Tensor a = checked_operand(input, "bmm", "input", 3, "batch of matrices")
    cdef Tensor b = checked_operand(mat2, "bmm", "mat2", 3, "batch of matrices")
    if a.data.shape[0] != b.data.shape[0] or a.data.shape[2] != b.data.shape[1]:
        raise shape_error("bmm", a, b, "cannot be multiplied (equal batch sizes and input's "
                          "columns equal to mat2's rows needed)")
    return matmul(a, b)
define_op(bmm, CUSTOM, ANY)


def dot(input, tensor):
    """Inner product of two 1-D tensors of equal length (a 0-d tensor)."""
    cdef Tensor a = checked_operand(input, "dot", "input", 1, "vector")
    cdef Tensor b = checked_operand(tensor, "dot", "tensor", 1, "vector")
    if a.data.shape[0] != b.data.shape[0]:
        raise shape_error("dot", a, b, "must have the same number of elements")
    return matmul(a, b)
define_op(dot, CUSTOM, ANY)


def outer(input, vec2):
    """Outer product of two 1-D tensors: out[i, j] = input[i] * vec2[j]."""
    cdef Tensor a = checked_operand(input, "outer", "input", 1, "vector")
    cdef Tensor b = checked_operand(vec2, "outer", "vec2", 1, "vector")
    return mul(reshape(a, (a.data.shape[0], 1)), b)
define_op(outer, CUSTOM, ANY)


# -- norm -----------------------------------------------------------------------------------------

cdef Tensor safe_divisor(Tensor n):
    """n with its zeros replaced by 1 (a norm of 0 divides a zero vector: the gradient is 0)."""
    return where(wrap(as_array(n.data == 0)), 1.0, n)


cdef class VectorNormBackward(Node):
    """n = ||x||_2 over dims  ->  gx = g x / n  (0 where n = 0)"""
    cdef SavedTensor x
    cdef SavedTensor n
    cdef tuple dims
    cdef bint keepdim

    cdef void release_saved(self):
        self.x = None
        self.n = None

    cdef tuple apply(self, tuple grads):
        cdef Tensor x = self.x.unpack(self)
        cdef tuple s = x.data.shape
        cdef Tensor n = expand_reduced(safe_divisor(self.n.unpack(self)), s, self.dims,
                                       self.keepdim)
        return (mul(expand_reduced(<Tensor>grads[0], s, self.dims, self.keepdim), div(x, n)),)


cdef Tensor vector_norm_jvp(Tensor x, Tensor out, tuple dims, bint keepdim):
    """dn = sum(x dx) / n, re(sum(conj(x) dx)) / n for a complex x  (0 where n = 0)"""
    cdef Tensor t = tangent_of(x)
    if t is None:
        return None
    cdef long level = suspend_fw()
    cdef Tensor n
    try:
        n = vector_norm2(x, dims, keepdim) if tracks(x, None) else out
        if descr(x.data).kind == b'c':            # dn = re(sum(conj(x) dx)) / n
            return fit_tangent(div(real_part(sum(mul(conj(x), t), dims, keepdim)),
                                   safe_divisor(n)), out)
        return fit_tangent(div(sum(mul(x, t), dims, keepdim), safe_divisor(n)), out)
    finally:
        resume_fw(level)


cdef Tensor vector_norm2(Tensor x, tuple dims, bint keepdim):
    """The 2-norm of x over dims (real for a complex x)."""
    cdef object arr = as_array(np.sqrt(np.sum(
        np.square(x.data) if descr(x.data).kind != b'c' else
        np.square(x.data.real) + np.square(x.data.imag), axis=dims, keepdims=keepdim)))
    cdef Tensor out = float_result(arr, descr(arr))
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, vector_norm_jvp(x, out, dims, keepdim))
    cdef VectorNormBackward node
    if grad_enabled() and x.requires_grad_c():
        node = VectorNormBackward.__new__(VectorNormBackward)
        record(node, x, None)
        attach_output(out, node, 0)
        node.dims = dims
        node.keepdim = keepdim
        node.x = save_tensor(x, node, False)
        node.n = save_tensor(out, node, True)
    return out


cdef object vector_norm_of(Tensor x, object ord, tuple dims, bint keepdim):
    """The ord-norm of x over dims: 2 (default), inf, -inf, or any p > 0."""
    if ord is None or ord == 2:
        return vector_norm2(x, dims, keepdim)
    if ord == np.inf:
        return amax(abs(x), dims, keepdim)
    if ord == -np.inf:
        return amin(abs(x), dims, keepdim)
    if ord == 1:
        return sum(abs(x), dims, keepdim)
    if isinstance(ord, (int, float)) and ord > 0:
        return pow(sum(pow(abs(x), ord), dims, keepdim), 1.0 / ord)
    raise ValueError(f"linalg.norm: unsupported vector norm ord={ord!r}; use 2, 1, inf, -inf "
                     "or a positive number")


cdef Tensor singular_values(Tensor a):
    """The singular values of a's matrices (..., k), ascending: sqrt of the Gram eigenvalues."""
    cdef tuple s = a.data.shape
    cdef Py_ssize_t nd = len(s)
    cdef Tensor at = transpose(a, -1, -2)
    if descr(a.data).kind == b'c':
        at = conj(at)                    # A^H: the Gram matrix of a complex A is Hermitian
    cdef Tensor gram = matmul(at, a) if s[nd - 2] >= s[nd - 1] else matmul(a, at)
    from lucid._linalg import eigh     # the linalg module imports after the core
    return sqrt(clamp(eigh(gram)[0], 0.0, None))


cdef object matrix_norm_of(Tensor a, object ord):
    """The ord-norm of each matrix of a (..., m, n), reduced over its last two dims."""
    if ord == "nuc":
        return sum(singular_values(a), -1)
    if ord == 2 or ord == -2:
        return getitem(singular_values(a), (Ellipsis, -1 if ord == 2 else 0))
    if ord == 1 or ord == -1 or ord == np.inf or ord == -np.inf:
        sums = sum(abs(a), -2 if ord == 1 or ord == -1 else -1)
        return amax(sums, -1) if ord > 0 else amin(sums, -1)
    raise ValueError(f"linalg.norm: unsupported matrix norm ord={ord!r}; use 'fro', 'nuc', 2, "
                     "-2, 1, -1, inf or -inf")


def norm(A, ord=None, dim=None, keepdim=False):
    """A vector norm (dim None or an int; ord None = 2) or a matrix norm (dim a pair, or 2-D A
    with ord given; ord None = 'fro'), like torch.linalg.norm."""
    cdef Tensor a = linalg_float_operand(A, "linalg.norm", "A")
    cdef Py_ssize_t nd = ndim_of(a.data)
    if dim is not None:
        dim = (dim,) if is_integer(dim) else seq_arg(dim, "linalg.norm", "dim")
    if dim is None and ord is not None and nd not in (1, 2):
        raise RuntimeError(f"linalg.norm: with ord={ord!r} and dim=None, A must be 1-D or 2-D, "
                           f"got shape {a.data.shape}; pass dim")
    matrix = (dim is not None and len(dim) == 2) or (dim is None and ord is not None and nd == 2)
    if not matrix:
        if isinstance(ord, str):
            raise RuntimeError(f"linalg.norm: ord={ord!r} is a matrix norm; pass a 2-D A or a "
                               "pair of dims")
        return vector_norm_of(a, ord, reduction_dims(dim, nd, "linalg.norm"), keepdim)
    cdef tuple dims = reduction_dims(dim if dim is not None else (0, 1), nd, "linalg.norm")
    if len(dims) != 2:
        raise RuntimeError(f"linalg.norm: dim {dim} must name two different dims")
    cdef tuple pair = (0, 1)
    if dim is not None:
        pair = (normalize_dim(dim[0], nd, "linalg.norm"), normalize_dim(dim[1], nd, "linalg.norm"))
    if ord is None or ord == "fro":
        return vector_norm2(a, dims, keepdim)
    cdef list order = [d for d in range(nd) if d not in pair] + list(pair)
    cdef Tensor out = matrix_norm_of(permute(a, tuple(order)), ord)
    if keepdim:
        kept = list(a.data.shape)
        kept[pair[0]] = kept[pair[1]] = 1
        out = reshape(out, tuple(kept))
    return out
define_op(norm, REDUCTION, FLOAT_ONLY, method="none", name="linalg.norm")
