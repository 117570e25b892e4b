# Elementwise unary ops and their fused backward kernels.

cdef class UnaryBackward(Node):
    """Shared field of unary nodes: the one saved tensor (input or output)."""
    cdef SavedTensor saved_x

    cdef void release_saved(self):
        self.saved_x = None


cdef class ExpBackward(UnaryBackward):
    """y = exp(x)  ->  gx = g*y"""
    cdef tuple apply(self, tuple grads):
        return (mul(grads[0], self.saved_x.unpack(self)),)


cdef class LogBackward(UnaryBackward):
    """y = log(x)  ->  gx = g/x"""
    cdef tuple apply(self, tuple grads):
        return (div(grads[0], self.saved_x.unpack(self)),)


cdef class TanhBackward(UnaryBackward):
    """y = tanh(x)  ->  gx = tanh_backward(g, y) = g*(1 - y*y)"""
    cdef tuple apply(self, tuple grads):
        return (tanh_backward(grads[0], self.saved_x.unpack(self)),)


cdef class ReluBackward(UnaryBackward):
    """y = relu(x)  ->  gx = relu_backward(g, y) = g*(y > 0)"""
    cdef tuple apply(self, tuple grads):
        return (relu_backward(grads[0], self.saved_x.unpack(self)),)


cdef Tensor record_unary(Tensor out, Tensor a, UnaryBackward node, bint save_output):
    """Attach node to out when a requires grad; save a, or out when save_output."""
    if not (grad_enabled() and a.requires_grad_c()):
        return out
    record(node, a, None)
    attach_output(out, node, 0)
    node.saved_x = save_tensor(out if save_output else a, node, save_output)
    return out


cpdef Tensor exp(object x):
    """e ** x."""
    cdef Tensor a = operand(x, "exp")
    return record_unary(wrap(unary_kernel(np.exp, a)), a, ExpBackward.__new__(ExpBackward), True)


cpdef Tensor log(object x):
    """Natural logarithm of x."""
    cdef Tensor a = operand(x, "log")
    return record_unary(wrap(unary_kernel(np.log, a)), a, LogBackward.__new__(LogBackward), False)


cpdef Tensor tanh(object x):
    """Hyperbolic tangent of x."""
    cdef Tensor a = operand(x, "tanh")
    return record_unary(wrap(unary_kernel(np.tanh, a)), a, TanhBackward.__new__(TanhBackward),
                        True)


cpdef Tensor relu(object x):
    """max(x, 0)."""
    cdef Tensor a = operand(x, "relu")
    cdef Tensor out = wrap(as_array(np.maximum(a.data, 0).astype(a.data.dtype, copy=False)))
    return record_unary(out, a, ReluBackward.__new__(ReluBackward), True)


# -- fused backward kernels: each is an op, so a recorded backward differentiates it ------------

cdef class TanhBackwardBackward(Node):
    """z = g*(1 - y*y)  ->  gg = tanh_backward(gz, y), gy = -2*gz*g*y"""
    cdef SavedTensor g
    cdef SavedTensor y

    cdef void release_saved(self):
        self.g = None
        self.y = None

    cdef tuple apply(self, tuple grads):
        gz = grads[0]
        y = self.y.unpack(self)
        return (tanh_backward(gz, y) if needs(self, 0) else None,
                mul(mul(gz, self.g.unpack(self)), mul(y, -2.0)) if needs(self, 1) else None)


cpdef Tensor tanh_backward(Tensor g, Tensor y):
    """g * (1 - y*y), in one pass over fresh memory."""
    cdef object yy = as_array(np.multiply(y.data, y.data))
    np.subtract(1, yy, out=yy)
    np.multiply(g.data, yy, out=yy)
    cdef Tensor out = wrap(as_array(yy))
    cdef TanhBackwardBackward node
    if grad_enabled() and (g.requires_grad_c() or y.requires_grad_c()):
        node = TanhBackwardBackward.__new__(TanhBackwardBackward)
        record(node, g, y)
        node.y = save_tensor(y, node, False)
        if needs(node, 1):
            node.g = save_tensor(g, node, False)
        attach_output(out, node, 0)
    return out


cdef class ReluBackwardBackward(Node):
    """z = g*(y > 0)  ->  gg = relu_backward(gz, y)  (the mask y has zero gradient)"""
    cdef SavedTensor y

    cdef void release_saved(self):
        self.y = None

    cdef tuple apply(self, tuple grads):
        return (relu_backward(grads[0], self.y.unpack(self)),)


cpdef Tensor relu_backward(Tensor g, Tensor y):
    """g where y > 0, else 0."""
    cdef Tensor out = wrap(as_array(np.where(y.data > 0, g.data, 0).astype(g.data.dtype,
                                                                          copy=False)))
    cdef ReluBackwardBackward node
    if grad_enabled() and g.requires_grad_c():
        node = ReluBackwardBackward.__new__(ReluBackwardBackward)
        record(node, g, None)
        node.y = save_tensor(y, node, False)
        attach_output(out, node, 0)
    return out


# -- dtype casts and copies --------------------------------------------------------------------

cdef class CastBackward(Node):
    """y = x.to(dtype)  ->  gx = g.to(x.dtype)"""
    cdef cnp.dtype in_dtype

    cdef tuple apply(self, tuple grads):
        return (cast(grads[0], self.in_dtype),)


cpdef Tensor cast(Tensor a, cnp.dtype dtype):
    """a converted to dtype (a itself when it already has it)."""
    if descr(a.data) is dtype or a.data.dtype == dtype:
        return a
    cdef Tensor out = wrap(a.data.astype(dtype))
    cdef CastBackward node
    if grad_enabled() and a.requires_grad_c() and is_float_dtype(dtype):
        node = CastBackward.__new__(CastBackward)
        record(node, a, None)
        node.in_dtype = descr(a.data)
        attach_output(out, node, 0)
    return out


cdef class CloneBackward(Node):
    """y = clone(x)  ->  gx = g"""
    cdef tuple apply(self, tuple grads):
        return (grads[0],)


cpdef Tensor clone(Tensor a):
    """A copy of a with its own memory."""
    cdef Tensor out = wrap(np.array(a.data, copy=True))
    if grad_enabled() and a.requires_grad_c():
        attach_output(out, record(CloneBackward.__new__(CloneBackward), a, None), 0)
    return out
