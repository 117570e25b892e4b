# softmax and log_softmax along one dim, stable for large inputs (stable_shift subtracts the
# largest entry first).

cdef class SoftmaxBackward(Node):
    """y = softmax(x, d)  ->  gx = softmax_rule(g, y) = y*(g - sum(g*y, d))"""
    cdef SavedTensor saved_y
    cdef tuple dims

    cdef void release_saved(self):
        self.saved_y = None

    cdef tuple apply(self, tuple grads):
        return (softmax_rule(grads[0], self.saved_y.unpack(self), self.dims),)


cdef class LogSoftmaxBackward(SoftmaxBackward):
    """y = log_softmax(x, d)  ->  gx = g - exp(y)*sum(g, d)"""

    cdef tuple apply(self, tuple grads):
        cdef Tensor g = grads[0]
        return (sub(g, mul(exp(self.saved_y.unpack(self)), reduce_op(g, self.dims, True, False))),)


cdef Tensor softmax_rule(Tensor g, Tensor y, tuple dims):
    """y*(g - sum(g*y, d)): softmax's Jacobian diag(y) - y*y^T is symmetric, so this is both its
    backward (g the output's gradient) and its jvp (g the input's tangent)"""
    return mul(y, sub(g, reduce_op(mul(g, y), dims, True, False)))


cdef Tensor log_softmax_tangent(Tensor t, Tensor y, tuple dims):
    """t - sum(exp(y)*t, d): the jvp of log_softmax (its Jacobian I - 1*softmax^T)"""
    return sub(t, reduce_op(mul(exp(y), t), dims, True, False))


cdef Tensor softmax_jvp(Tensor a, Tensor out, tuple dims, bint is_log):
    cdef Tensor t = tangent_of(a)
    if t is None:
        return None
    cdef long level = suspend_fw()
    try:
        return log_softmax_tangent(t, out, dims) if is_log else softmax_rule(t, out, dims)
    finally:
        resume_fw(level)


cdef Tensor softmax_family(object input, object dim, object dtype, bint is_log):
    cdef str name = "log_softmax" if is_log else "softmax"
    cdef Tensor a = float_operand(input, dtype, name)
    if dim is None or isinstance(dim, (tuple, list)):
        raise TypeError(f"{name}: dim must be one int, got {dim!r}")
    cdef tuple dims = reduction_dims(dim, ndim_of(a.data), name)
    cdef object shifted = a.data - stable_shift(a.data, dims)
    cdef object arr
    with np.errstate(divide="ignore", invalid="ignore"):
        if is_log:
            arr = shifted - np.log(np.sum(np.exp(shifted), axis=dims, keepdims=True))
        else:
            arr = np.exp(shifted)
            arr /= np.sum(arr, axis=dims, keepdims=True)
    cdef Tensor out = wrap(as_array(arr))
    cdef bint recorded = grad_enabled() and a.requires_grad_c()
    cdef SoftmaxBackward node = None
    if recorded:                 # attached first, so the tangent's formula reaches x through y
        node = LogSoftmaxBackward.__new__(LogSoftmaxBackward) if is_log else \
            SoftmaxBackward.__new__(SoftmaxBackward)
        record(node, a, None)
        attach_output(out, node, 0)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, softmax_jvp(a, out, dims, is_log))
    if recorded:
        node.dims = dims
        node.saved_y = save_tensor(out, node, True)
    return out


def softmax(input, dim, *, dtype=None):
    """exp(x)/sum(exp(x)) along dim (cast to dtype first when given)."""
    return softmax_family(input, dim, dtype, False)
define_op(softmax, DIMS, FLOAT_ONLY)


def log_softmax(input, dim, *, dtype=None):
    """x - logsumexp(x) along dim (cast to dtype first when given)."""
    return softmax_family(input, dim, dtype, True)
define_op(log_softmax, DIMS, FLOAT_ONLY)
