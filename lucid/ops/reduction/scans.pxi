# Running extremes and log-sum-exps along one dim: cummax, cummin and logcumsumexp (PyTorch's
# signatures; cumsum and cumprod are in ops/reduction/cumulative.pxi).
#
# cummax's values are x[key] at the running argmax (Note [Ops as keys]), so its gradient is g
# scattered to those places (a place that stays the maximum gathers every later g) and its jvp
# the same key on the tangent. Ties and NaN pick as PyTorch does: the latest of equal entries,
# and once a NaN is met the latest NaN.


# -- cummax and cummin ----------------------------------------------------------------------------

cdef class CummaxBackward(IndexBackward):
    """y = cummax(x, d) = x[key]  ->  gx = index_backward(g, x.shape, key)"""


cdef class CumminBackward(IndexBackward):
    """y = cummin(x, d) = x[key]  ->  gx = index_backward(g, x.shape, key)"""


cdef object running_extreme_index(object arr, Py_ssize_t d, bint is_max):
    """The index along d of the running max (or min) of arr: the latest entry equal to it (a
    new extreme or a tie), the latest NaN once one is met."""
    cdef object run = (np.maximum if is_max else np.minimum).accumulate(arr, axis=d)
    cdef object hit = arr == run
    if is_float_dtype(descr(arr)):
        hit |= np.isnan(arr)
    cdef object place = np.arange(arr.shape[d], dtype=np.intp).reshape(
        tuple([-1 if e == d else 1 for e in range(arr.ndim)]))
    return np.maximum.accumulate(np.where(hit, place, 0), axis=d)


cdef object scan_extreme(object input, object dim, bint is_max):
    cdef str name = "cummax" if is_max else "cummin"
    cdef Tensor a = operand(input, name)
    cdef Py_ssize_t d = scan_dim(a, dim, name)
    cdef bint scalar = ndim_of(a.data) == 0
    a = as_vector(a)
    return picked(a, running_extreme_index(a.data, d, is_max), d,
                  CummaxBackward if is_max else CumminBackward, scalar)


def cummax(input, dim):
    """(values, indices): the running maximum of input along dim and where it is (the latest of
    ties; NaN propagates)."""
    return scan_extreme(input, dim, True)
define_op(cummax, DIMS, ANY)


def cummin(input, dim):
    """(values, indices): the running minimum of input along dim and where it is (the latest of
    ties; NaN propagates)."""
    return scan_extreme(input, dim, False)
define_op(cummin, DIMS, ANY)


# -- logcumsumexp ---------------------------------------------------------------------------------

cdef class LogcumsumexpBackward(Node):
    """y = logcumsumexp(x, d)  ->  gx_i = logcumsumexp_grad = sum_{k>=i} g_k*exp(x_i - y_k)"""
    cdef SavedTensor saved_x
    cdef SavedTensor saved_y
    cdef Py_ssize_t dim

    cdef void release_saved(self):
        self.saved_x = None
        self.saved_y = None

    cdef tuple apply(self, tuple grads):
        if self.saved_x is None:
            raise_freed_graph(self)
        return (logcumsumexp_grad(grads[0], self.saved_x.unpack(self), self.saved_y.unpack(self),
                                  self.dim),)


cdef Tensor scan_weights(Tensor x, Tensor y, Py_ssize_t d):
    """W[..., i, k] = exp(x_i - y_k) for k >= i, else exactly 0 (d moved last): the weight of x_i
    in y_k = logcumsumexp(x)_k, at most 1, through lucid ops (differentiable again)."""
    cdef Py_ssize_t last = ndim_of(x.data) - 1
    cdef Py_ssize_t n = x.data.shape[d]
    cdef Tensor gap = sub(unsqueeze(transpose(x, d, last), -1),
                          unsqueeze(transpose(y, d, last), -2))
    return exp(where(wrap(np.triu(np.ones((n, n), dtype=bool_))), gap, -np.inf))


cdef Tensor logcumsumexp_grad(Tensor g, Tensor x, Tensor y, Py_ssize_t d):
    """sum_{k>=i} g_k*exp(x_i - y_k): as exp(x + reverse logcumsumexp(log(g) - y)) of g's positive
    and negative parts when nothing records, else through scan_weights (O(n^2), recorded)."""
    cdef Py_ssize_t last = ndim_of(x.data) - 1
    if not grad_enabled() and not fw_active():
        return wrap(as_array(scan_grad_parts(g.data, x.data, y.data, d)).astype(x.data.dtype,
                                                                               copy=False))
    cdef Tensor w = scan_weights(x, y, d)
    return transpose(reduce_op(mul(w, unsqueeze(transpose(g, d, last), -2)), (last + 1,), False,
                               False), d, last)


cdef object scan_grad_parts(object g, object x, object y, Py_ssize_t d):
    """logcumsumexp_grad in NumPy: exp(x_i + log sum_{k>=i} g_k exp(-y_k)), for g > 0 and g < 0
    apart (a log-sum-exp never overflows)."""
    cdef object total = np.zeros(np.broadcast_shapes(g.shape, x.shape), dtype=x.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        for part, sign in ((np.maximum(g, 0), 1.0), (np.maximum(-g, 0), -1.0)):
            tail = np.flip(np.logaddexp.accumulate(np.flip(np.log(part) - y, axis=d), axis=d),
                           axis=d)
            total += sign * np.exp(x + tail)
    return total


cdef Tensor logcumsumexp_jvp(Tensor a, Tensor out, Py_ssize_t d):
    """dy_k = sum_{i<=k} t_i*exp(x_i - y_k) (scan_weights applied to the tangent)."""
    cdef Tensor t = tangent_of(a)
    if t is None:
        return None
    cdef Py_ssize_t last = ndim_of(a.data) - 1
    cdef long level = suspend_fw()
    try:
        return transpose(reduce_op(mul(scan_weights(a, out, d),
                                       unsqueeze(transpose(t, d, last), -1)), (last,), False,
                                   False), d, last)
    finally:
        resume_fw(level)


def logcumsumexp(input, dim):
    """log(cumsum(exp(input))) along dim, computed without overflow."""
    cdef Tensor a = operand(input, "logcumsumexp")
    if not is_float_dtype(descr(a.data)):
        raise RuntimeError(f"logcumsumexp: input dtype {dtype_name(a.data.dtype)} is not "
                           "floating point; convert with .float() first")
    cdef Py_ssize_t d = scan_dim(a, dim, "logcumsumexp")
    cdef bint scalar = ndim_of(a.data) == 0
    a = as_vector(a)
    cdef Tensor out = wrap(as_array(np.logaddexp.accumulate(a.data, axis=d)).astype(
        a.data.dtype, copy=False))
    cdef bint recorded = grad_enabled() and a.requires_grad_c()
    cdef LogcumsumexpBackward node = None
    if recorded:                 # attached first, so the tangent's formula reaches x through y
        node = LogcumsumexpBackward.__new__(LogcumsumexpBackward)
        record(node, a, None)
        node.dim = d
        attach_output(out, node, 0)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, logcumsumexp_jvp(a, out, d))
    if recorded:
        node.saved_x = save_tensor(a, node, False)
        node.saved_y = save_tensor(out, node, True)
    return reshape(out, ()) if scalar else out
define_op(logcumsumexp, DIMS, FLOAT_ONLY)
