# Arithmetic: + - * / ** and unary minus, with broadcasting and PyTorch promotion.

cdef class BinaryBackward(Node):
    """Shared fields of binary nodes: each input's shape (None if not broadcast) and dtype."""
    cdef object a_shape
    cdef object b_shape
    cdef cnp.dtype a_dtype
    cdef cnp.dtype b_dtype
    cdef SavedTensor a
    cdef SavedTensor b

    cdef void release_saved(self):
        self.a = None
        self.b = None

    cdef inline tuple reduced(self, object ga, object gb):
        return (None if ga is None else reduce_grad(ga, self.a_shape, self.a_dtype),
                None if gb is None else reduce_grad(gb, self.b_shape, self.b_dtype))


cdef class AddBackward(BinaryBackward):
    """z = x + y  ->  gx = g, gy = g"""
    cdef tuple apply(self, tuple grads):
        g = grads[0]
        return self.reduced(g if needs(self, 0) else None, g if needs(self, 1) else None)


cdef class SubBackward(BinaryBackward):
    """z = x - y  ->  gx = g, gy = -g"""
    cdef tuple apply(self, tuple grads):
        g = grads[0]
        return self.reduced(g if needs(self, 0) else None, neg(g) if needs(self, 1) else None)


cdef class MulBackward(BinaryBackward):
    """z = x * y  ->  gx = g*y, gy = g*x"""
    cdef tuple apply(self, tuple grads):
        g = grads[0]
        return self.reduced(mul(g, self.b.unpack(self)) if needs(self, 0) else None,
                            mul(g, self.a.unpack(self)) if needs(self, 1) else None)


cdef class DivBackward(BinaryBackward):
    """z = x / y  ->  gx = g/y, gy = -g*x/y**2"""
    cdef tuple apply(self, tuple grads):
        g = grads[0]
        y = self.b.unpack(self)
        gx = div(g, y) if needs(self, 0) else None
        gy = neg(div(mul(g, self.a.unpack(self)), mul(y, y))) if needs(self, 1) else None
        return self.reduced(gx, gy)


cdef class PowBackward(BinaryBackward):
    """z = x ** y  ->  gx = g*y*x**(y-1), gy = g*x**y*log(x)"""
    cdef tuple apply(self, tuple grads):
        g = grads[0]
        x = self.a.unpack(self)
        y = self.b.unpack(self)
        gx = mul(g, mul(y, pow(x, sub(y, 1)))) if needs(self, 0) else None
        gy = mul(g, mul(pow(x, y), log(x))) if needs(self, 1) else None
        return self.reduced(gx, gy)


cdef enum BinaryOp:
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_POW

cdef tuple BINARY_NAMES = ("add", "sub", "mul", "div", "pow")
cdef tuple BINARY_UFUNCS = (np.add, np.subtract, np.multiply, np.true_divide, np.power)


cdef Tensor binary_op(int op, object x, object y):
    """The forward of every binary arithmetic op: promote, compute, record."""
    cdef str name = BINARY_NAMES[op]
    cdef Tensor a = operand(x, name)
    cdef Tensor b = operand(y, name)
    cdef cnp.dtype dt = result_dtype(a, b)
    if op == OP_DIV and not is_float_dtype(dt):
        dt = float32
    elif op == OP_SUB and dt.kind == b'b':
        raise TypeError("sub: subtracting bool tensors is not supported; use logical ops")
    cdef Tensor out = wrap(binary_kernel(BINARY_UFUNCS[op], a, b, dt, name))
    if not (grad_enabled() and (a.requires_grad_c() or b.requires_grad_c())):
        return out
    cdef BinaryBackward node
    if op == OP_ADD:
        node = AddBackward.__new__(AddBackward)
    elif op == OP_SUB:
        node = SubBackward.__new__(SubBackward)
    elif op == OP_MUL:
        node = MulBackward.__new__(MulBackward)
    elif op == OP_DIV:
        node = DivBackward.__new__(DivBackward)
    else:
        node = PowBackward.__new__(PowBackward)
    record(node, a, b)
    node.a_shape = shape_if_broadcast(a.data, out.data)
    node.b_shape = shape_if_broadcast(b.data, out.data)
    node.a_dtype = descr(a.data)
    node.b_dtype = descr(b.data)
    if op == OP_MUL:
        if needs(node, 0):
            node.b = save_tensor(b, node, False)
        if needs(node, 1):
            node.a = save_tensor(a, node, False)
    elif op == OP_DIV:
        node.b = save_tensor(b, node, False)
        if needs(node, 1):
            node.a = save_tensor(a, node, False)
    elif op == OP_POW:
        node.a = save_tensor(a, node, False)
        node.b = save_tensor(b, node, False)
    attach_output(out, node, 0)
    return out


cpdef Tensor add(object x, object y):
    """x + y, broadcasting."""
    return binary_op(OP_ADD, x, y)


cpdef Tensor sub(object x, object y):
    """x - y, broadcasting."""
    return binary_op(OP_SUB, x, y)


cpdef Tensor mul(object x, object y):
    """x * y, broadcasting."""
    return binary_op(OP_MUL, x, y)


cpdef Tensor div(object x, object y):
    """x / y (true division), broadcasting."""
    return binary_op(OP_DIV, x, y)


cpdef Tensor pow(object x, object y):
    """x ** y, broadcasting."""
    return binary_op(OP_POW, x, y)


cdef class NegBackward(Node):
    """z = -x  ->  gx = -g"""
    cdef tuple apply(self, tuple grads):
        return (neg(grads[0]),)


cpdef Tensor neg(object x):
    """-x."""
    cdef Tensor a = operand(x, "neg")
    if a.data.dtype.kind == "b":
        raise TypeError("neg: negation of a bool tensor is not supported; use logical_not")
    cdef Tensor out = wrap(as_array(np.negative(a.data)))
    if grad_enabled() and a.requires_grad_c():
        attach_output(out, record(NegBackward.__new__(NegBackward), a, None), 0)
    return out


cdef object compare(Tensor self, object other, int op):
    """Elementwise comparison: a bool tensor outside the graph."""
    cdef Tensor b = scalar_operand(other) if not isinstance(other, Tensor) else <Tensor>other
    if b is None:
        if isinstance(other, np.ndarray):
            b = wrap(other)
        else:
            return NotImplemented
    try:
        return wrap(as_array(COMPARE_UFUNCS[op](self.data, b.data)))
    except ValueError:
        raise shape_error("compare", self, b) from None


cdef tuple COMPARE_UFUNCS = (np.less, np.less_equal, np.equal, np.not_equal, np.greater,
                             np.greater_equal)
