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
        cdef Tensor g = grads[0]
        return (fused_grad(True, g, self.saved_x.unpack(self), may_overwrite(self, g)),)


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
    cdef object arr = fast_unary(U_EXP, np.exp, a.data) if is_fast(a.data) else unary_kernel(np.exp, a)
    return record_unary(wrap(arr), a, ExpBackward.__new__(ExpBackward), True)


cpdef Tensor log(object x):
    """Natural logarithm of x."""
    cdef Tensor a = operand(x, "log")
    cdef object arr = fast_unary(U_LOG, np.log, a.data) if is_fast(a.data) else unary_kernel(np.log, a)
    return record_unary(wrap(arr), a, LogBackward.__new__(LogBackward), False)


cpdef Tensor tanh(object x):
    """Hyperbolic tangent of x."""
    cdef Tensor a = operand(x, "tanh")
    cdef object arr = fast_unary(U_TANH, np.tanh, a.data) if is_fast(a.data) else \
        unary_kernel(np.tanh, a)
    return record_unary(wrap(arr), a, TanhBackward.__new__(TanhBackward), True)


cpdef Tensor relu(object x):
    """max(x, 0)."""
    cdef Tensor a = operand(x, "relu")
    cdef Tensor out = wrap(as_array(np.maximum(a.data, 0).astype(a.data.dtype, copy=False)))
    return record_unary(out, a, ReluBackward.__new__(ReluBackward), True)


cdef class SqrtBackward(UnaryBackward):
    """y = sqrt(x)  ->  gx = g/(2*y)"""
    cdef tuple apply(self, tuple grads):
        return (div(grads[0], mul(self.saved_x.unpack(self), 2.0)),)


cdef class AbsBackward(UnaryBackward):
    """y = |x|  ->  gx = g*sign(x)  (exactly 0 at x == 0: Note [Mask by selection])"""
    cdef tuple apply(self, tuple grads):
        return (select_grad(grads[0], np.sign(self.saved_x.unpack(self).data)),)


cdef class SinBackward(UnaryBackward):
    """y = sin(x)  ->  gx = g*cos(x)"""
    cdef tuple apply(self, tuple grads):
        return (mul(grads[0], cos(self.saved_x.unpack(self))),)


cdef class CosBackward(UnaryBackward):
    """y = cos(x)  ->  gx = -g*sin(x)"""
    cdef tuple apply(self, tuple grads):
        return (neg(mul(grads[0], sin(self.saved_x.unpack(self)))),)


cdef class SigmoidBackward(UnaryBackward):
    """y = sigmoid(x)  ->  gx = sigmoid_backward(g, y) = g*y*(1 - y)"""
    cdef tuple apply(self, tuple grads):
        cdef Tensor g = grads[0]
        return (fused_grad(False, g, self.saved_x.unpack(self), may_overwrite(self, g)),)


cdef class ClampBackward(UnaryBackward):
    """y = clamp(x, lo, hi)  ->  gx = g*(lo <= x <= hi)"""
    cdef object lo
    cdef object hi

    cdef tuple apply(self, tuple grads):
        cdef object x = self.saved_x.unpack(self).data
        cdef object inside = np.ones(x.shape, dtype=bool)
        if self.lo is not None:
            inside &= x >= self.lo
        if self.hi is not None:
            inside &= x <= self.hi
        return (select_grad(grads[0], inside),)


cpdef Tensor sqrt(object x):
    """Square root of x."""
    cdef Tensor a = operand(x, "sqrt")
    return record_unary(wrap(unary_kernel(np.sqrt, a)), a, SqrtBackward.__new__(SqrtBackward), True)


cpdef Tensor abs(object x):
    """|x|."""
    cdef Tensor a = operand(x, "abs")
    return record_unary(wrap(as_array(np.abs(a.data))), a, AbsBackward.__new__(AbsBackward), False)


cpdef Tensor sin(object x):
    """Sine of x."""
    cdef Tensor a = operand(x, "sin")
    return record_unary(wrap(unary_kernel(np.sin, a)), a, SinBackward.__new__(SinBackward), False)


cpdef Tensor cos(object x):
    """Cosine of x."""
    cdef Tensor a = operand(x, "cos")
    return record_unary(wrap(unary_kernel(np.cos, a)), a, CosBackward.__new__(CosBackward), False)


cpdef Tensor sigmoid(object x):
    """1 / (1 + exp(-x))."""
    cdef Tensor a = operand(x, "sigmoid")
    cdef object arr = as_array(np.negative(a.data, dtype=a.data.dtype if is_float_dtype(descr(a.data))
                                           else float32))
    np.exp(arr, out=arr)
    np.add(arr, 1, out=arr)
    np.reciprocal(arr, out=arr)
    return record_unary(wrap(arr), a, SigmoidBackward.__new__(SigmoidBackward), True)


def clamp(input, min=None, max=None):
    """input limited to [min, max] (either bound may be None)."""
    cdef Tensor a = operand(input, "clamp")
    if min is None and max is None:
        raise RuntimeError("clamp: at least one of min and max must be given")
    for bound in (min, max):
        if bound is not None and not isinstance(bound, (int, float)):
            raise TypeError(f"clamp: bounds must be numbers, got {type(bound).__name__}")
    cdef Tensor out = wrap(as_array(np.clip(a.data, min, max)).astype(a.data.dtype, copy=False))
    cdef ClampBackward node = ClampBackward.__new__(ClampBackward)
    node.lo = min
    node.hi = max
    return record_unary(out, a, node, False)


cpdef Tensor sign(Tensor a):
    """-1, 0 or 1 by the sign of a (a constant: its gradient is zero)."""
    return wrap(as_array(np.sign(a.data)))


# -- fused backward kernels: each is an op, so a recorded backward differentiates it ------------

cdef class FusedGradBackward(Node):
    """Shared fields of the fused gradient ops' nodes: their inputs g and y."""
    cdef SavedTensor g
    cdef SavedTensor y

    cdef void release_saved(self):
        self.g = None
        self.y = None


cdef class TanhBackwardBackward(FusedGradBackward):
    """z = g*(1 - y*y)  ->  gg = tanh_backward(gz, y), gy = -2*gz*g*y"""
    cdef tuple apply(self, tuple grads):
        gz = grads[0]
        y = self.y.unpack(self)
        return (tanh_backward(gz, y) if needs(self, 0) else None,
                mul(mul(gz, self.g.unpack(self)), mul(y, -2.0)) if needs(self, 1) else None)


cdef class SigmoidBackwardBackward(FusedGradBackward):
    """z = g*y*(1 - y)  ->  gg = sigmoid_backward(gz, y), gy = gz*g*(1 - 2*y)"""
    cdef tuple apply(self, tuple grads):
        gz = grads[0]
        y = self.y.unpack(self)
        return (sigmoid_backward(gz, y) if needs(self, 0) else None,
                mul(mul(gz, self.g.unpack(self)), sub(1.0, mul(y, 2.0))) if needs(self, 1) else None)


cdef Tensor fused_grad(bint is_tanh, Tensor g, Tensor y, bint into_g):
    """tanh: g*(1 - y*y); sigmoid: g*y*(1 - y). One pass, written into g when into_g (the engine
    owns g and nothing records: Note [Gradient ownership]), else into fresh memory and recorded
    as an op of its own when grad mode is on."""
    cdef object arr
    if fast_pair(g.data, y.data):
        arr = fast_fused_backward(is_tanh, g.data, y.data, g.data if into_g else None)
        if into_g:
            return g
    elif is_tanh:
        arr = as_array(np.multiply(y.data, y.data))
        np.subtract(1, arr, out=arr)
        np.multiply(g.data, arr, out=arr)
    else:
        arr = as_array(np.subtract(1, y.data, dtype=y.data.dtype))
        np.multiply(arr, y.data, out=arr)
        np.multiply(arr, g.data, out=arr)
    cdef Tensor out = wrap(arr)
    cdef FusedGradBackward node
    if grad_enabled() and (g.requires_grad_c() or y.requires_grad_c()):
        node = TanhBackwardBackward.__new__(TanhBackwardBackward) if is_tanh else \
            SigmoidBackwardBackward.__new__(SigmoidBackwardBackward)
        record(node, g, y)
        node.y = save_tensor(y, node, False)
        if needs(node, 1):
            node.g = save_tensor(g, node, False)
        attach_output(out, node, 0)
    return out


cpdef Tensor tanh_backward(Tensor g, Tensor y):
    """g * (1 - y*y), in one pass over fresh memory."""
    return fused_grad(True, g, y, False)


cpdef Tensor sigmoid_backward(Tensor g, Tensor y):
    """g * y * (1 - y), in one pass over fresh memory."""
    return fused_grad(False, g, y, False)


cpdef Tensor relu_backward(Tensor g, Tensor y):
    """g where y > 0, else 0."""
    return select_grad(g, y.data > 0)


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
