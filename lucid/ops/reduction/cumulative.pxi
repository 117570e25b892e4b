# Running sums and products along one dim: cumsum and cumprod (PyTorch's signatures).

cdef Py_ssize_t scan_dim(Tensor a, object dim, str name) except -1:
    """dim as a non-negative int for a scan over a (a 0-d tensor takes 0 or -1)."""
    if dim is None or isinstance(dim, (tuple, list)):
        raise TypeError(f"{name}: dim must be one int, got {dim!r}")
    return normalize_dim(dim, ndim_of(a.data), name)


cdef Tensor accumulating_operand(object input, object dtype, str name):
    """input for cumsum/cumprod/prod: cast to dtype when given; else integers and bools
    accumulate in int64, as in PyTorch."""
    cdef Tensor a = operand(input, name)
    if dtype is not None:
        return cast(a, as_supported_dtype(dtype, name))
    if not is_differentiable_dtype(descr(a.data)) and a.data.dtype != int64:
        return cast(a, int64)
    return a


cdef Tensor flip_along(Tensor t, Py_ssize_t d):
    """t reversed along dim d (a differentiable view)."""
    if ndim_of(t.data) == 0:
        return t
    return getitem(t, (slice(None),) * d + (slice(None, None, -1),))


cdef Tensor reverse_cumsum(Tensor g, Py_ssize_t d):
    """The sum of g over the places k >= i along dim d."""
    return flip_along(cumsum_op(flip_along(g, d), d), d)


# -- cumsum ---------------------------------------------------------------------------------------

cdef class CumsumBackward(Node):
    """y = cumsum(x, d)  ->  gx = reverse_cumsum(g, d) (the sum of g over k >= i)"""
    cdef Py_ssize_t dim

    cdef tuple apply(self, tuple grads):
        return (reverse_cumsum(grads[0], self.dim),)


cpdef Tensor cumsum_op(Tensor a, Py_ssize_t d):
    """The running sum of a along dim d, in a's dtype (a linear op: its jvp is itself)."""
    cdef Tensor out = wrap(as_array(np.cumsum(a.data, axis=d, dtype=a.data.dtype))
                           if ndim_of(a.data) > 0 else a.data.copy())
    cdef CumsumBackward node
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(a, cumsum_op, (d,)))
    if grad_enabled() and a.requires_grad_c():
        node = CumsumBackward.__new__(CumsumBackward)
        record(node, a, None)
        node.dim = d
        attach_output(out, node, 0)
    return out


def cumsum(input, dim, *, dtype=None):
    """The running sum of input along dim (integers and bools sum in int64)."""
    cdef Tensor a = accumulating_operand(input, dtype, "cumsum")
    return cumsum_op(a, scan_dim(a, dim, "cumsum"))
define_op(cumsum, DIMS, ANY)


# -- cumprod --------------------------------------------------------------------------------------

cdef class CumprodBackward(Node):
    """y = cumprod(x, d)  ->  gx_i = cumprod_grad = sum_{k>=i} g_k * prod_{j<=k, j!=i} x_j"""
    cdef SavedTensor saved_x
    cdef SavedTensor saved_y
    cdef Py_ssize_t dim

    cdef void release_saved(self):
        self.saved_x = None
        self.saved_y = None

    cdef tuple apply(self, tuple grads):
        cdef Tensor x = self.saved_x.unpack(self), y = self.saved_y.unpack(self)
        if descr(y.data).kind == b'c':               # Note [Complex gradients]: conjugated
            x, y = conj(x), conj(y)
        return (cumprod_grad(grads[0], x, y, self.dim),)


cdef Tensor cumprod_grad(Tensor g, Tensor x, Tensor y, Py_ssize_t d):
    """sum_{k>=i} g_k * prod_{j<=k, j!=i} x_j: reverse_cumsum(g*y)/x without zeros; with zeros
    cumprod_grad_zeros, or cumprod_grad_pairwise when this backward is itself recorded."""
    if ndim_of(x.data) == 0:
        return g
    cdef object zero = x.data == 0
    if not zero.any():
        return div(reverse_cumsum(mul(g, y), d), x)
    if grad_enabled():
        return cumprod_grad_pairwise(g, x, d)
    return cumprod_grad_zeros(g, x, zero, d)


cdef Tensor cumprod_grad_zeros(Tensor g, Tensor x, object zero, Py_ssize_t d):
    """cumprod_grad with zeros in O(n): with x0 = x where x != 0 else 1 and Y = cumprod(x0),
    prod_{j<=k, j!=i} x_j = Y_k/x0_i when x_0..x_k hold no zero but x_i, else 0; so gx_i sums
    g_k*Y_k over k >= i with no zero up to k (x_i != 0) or exactly one (x_i the first zero).
    Right to first order only: x_i == 0 is held constant (PyTorch does the same)."""
    cdef object zeros_so_far = np.cumsum(zero, axis=d)
    cdef Tensor x0 = where(wrap(zero), 1.0, x)
    cdef Tensor w = mul(g, cumprod_op(x0, d))
    cdef Tensor before = reverse_cumsum(select_grad(w, zeros_so_far == 0), d)
    cdef Tensor after = reverse_cumsum(select_grad(w, zeros_so_far == 1), d)
    return div(where(wrap(zero), after, before), x0)


cdef Tensor cumprod_grad_pairwise(Tensor g, Tensor x, Py_ssize_t d):
    """cumprod_grad as sums over a matrix: row i is cumprod of x with x_i set to 1, so entry
    (i, k) is prod_{j<=k, j!=i} x_j; rows are summed against g over k >= i. O(n^2), and
    differentiable again through cumprod (used under create_graph, as PyTorch does)."""
    cdef Py_ssize_t last = ndim_of(x.data) - 1
    cdef Py_ssize_t n = x.data.shape[d]
    cdef Tensor rows = cumprod_op(where(wrap(np.eye(n, dtype=bool_)), 1.0,
                                        unsqueeze(transpose(x, d, last), -2)), last + 1)
    cdef Tensor terms = select_grad(mul(unsqueeze(transpose(g, d, last), -2), rows),
                                    np.triu(np.ones((n, n), dtype=bool_)))
    return transpose(reduce_op(terms, (last + 1,), False, False), d, last)


cdef Tensor cumprod_tangent(Tensor t, Tensor x, Tensor y, Py_ssize_t d):
    """dy_k = sum_{i<=k} t_i * prod_{j<=k, j!=i} x_j: y*cumsum(t/x) without zeros; with zeros
    (x0, Y as in cumprod_grad_zeros) Y_k*cumsum(t/x0)_k while x_0..x_k hold no zero, Y_k times
    the first zero's tangent while they hold one, then 0."""
    if ndim_of(x.data) == 0:
        return t
    cdef object zero = x.data == 0
    if not zero.any():
        return mul(y, cumsum_op(div(t, x), d))
    cdef object zeros_so_far = np.cumsum(zero, axis=d)
    cdef Tensor x0 = where(wrap(zero), 1.0, x)
    cdef Tensor picked = where(wrap(zeros_so_far == 0), cumsum_op(div(t, x0), d),
                               cumsum_op(select_grad(t, zero), d))
    return mul(cumprod_op(x0, d), select_grad(picked, zeros_so_far <= 1))


cdef Tensor cumprod_jvp(Tensor a, Tensor out, Py_ssize_t d):
    cdef Tensor t = tangent_of(a)
    if t is None:
        return None
    cdef long level = suspend_fw()
    try:
        return cumprod_tangent(t, a, out, d)
    finally:
        resume_fw(level)


cpdef Tensor cumprod_op(Tensor a, Py_ssize_t d):
    """The running product of a along dim d, in a's dtype."""
    cdef Tensor out = wrap(as_array(np.cumprod(a.data, axis=d, dtype=a.data.dtype))
                           if ndim_of(a.data) > 0 else a.data.copy())
    cdef bint recorded = grad_enabled() and a.requires_grad_c()
    cdef CumprodBackward node = None
    if recorded:                 # attached first, so the tangent's formula reaches x through y
        node = CumprodBackward.__new__(CumprodBackward)
        record(node, a, None)
        node.dim = d
        attach_output(out, node, 0)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, cumprod_jvp(a, out, d))
    if recorded:
        node.saved_x = save_tensor(a, node, False)
        node.saved_y = save_tensor(out, node, True)
    return out


def cumprod(input, dim, *, dtype=None):
    """The running product of input along dim (integers and bools multiply in int64)."""
    cdef Tensor a = accumulating_operand(input, dtype, "cumprod")
    return cumprod_op(a, scan_dim(a, dim, "cumprod"))
define_op(cumprod, DIMS, ANY)
