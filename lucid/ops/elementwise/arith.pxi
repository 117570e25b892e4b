# Arithmetic: + - * / ** and unary minus, with broadcasting and PyTorch promotion.

cdef class BinaryBackward(Node):
    """Shared fields of binary nodes: each input's shape (None if not broadcast) and dtype."""
    # its fields, and reduced(), are in _core_internal.pxi: lucid._ops subclasses it

    cdef void release_saved(self):
        self.a = None
        self.b = None


cdef void record_broadcast(BinaryBackward node, Tensor a, Tensor b, Tensor out) except *:
    """node's edges to a and b, and what its backward reduces each gradient to: the input's
    shape where out broadcast it, and its dtype. The caller saves and attaches."""
    record(node, a, b)
    node.a_shape = shape_if_broadcast(a.data, out.data)
    node.b_shape = shape_if_broadcast(b.data, out.data)
    node.a_dtype = descr(a.data)
    node.b_dtype = descr(b.data)


# Note [Elementwise rules] (ops/elementwise/unary.pxi) for binary ops: rule_x(g, x, y) and rule_y(g, x, y)
# are the gradient terms of each input; backward reduces them to the input's shape, the jvp
# sums rule_x(tx) + rule_y(ty) (broadcast to the output's shape).

cdef inline Tensor rule_y_term(binary_rule rule_x, binary_rule rule_y, Tensor g, Tensor x,
                               Tensor y):
    """y's term, rule_y(g, x, y); a symmetric op (f(x, y) = f(y, x)) passes rule_y NULL, and
    its y term is x's rule with the operands swapped, rule_x(g, y, x)."""
    if rule_y == NULL:
        return rule_x(g, y, x)
    return rule_y(g, x, y)


cdef Tensor identity_rule(Tensor g, Tensor x, Tensor y):
    """g"""
    return g


cdef Tensor negate_rule(Tensor g, Tensor x, Tensor y):
    """-g"""
    return neg(g)


cdef Tensor mul_rule_x(Tensor g, Tensor x, Tensor y):
    """g*y"""
    return mul(g, y)


cdef Tensor mul_rule_y(Tensor g, Tensor x, Tensor y):
    """g*x"""
    return mul(g, x)


cdef Tensor div_rule_x(Tensor g, Tensor x, Tensor y):
    """g/y"""
    return div(g, y)


cdef Tensor div_rule_y(Tensor g, Tensor x, Tensor y):
    """-g*x/y**2"""
    return neg(div(mul(g, x), mul(y, y)))


cdef Tensor pow_rule_x(Tensor g, Tensor x, Tensor y):
    """g*y*x**(y-1), exactly 0 where y == 0 (x**0 is constant, as in PyTorch)"""
    return select_grad(mul(g, mul(y, pow(x, sub(y, 1)))), y.data != 0)


cdef Tensor pow_rule_y(Tensor g, Tensor x, Tensor y):
    """g*x**y*log(x), exactly 0 where x == 0 and re(y) >= 0 (0**y is flat there, as in
    PyTorch)"""
    return select_grad(mul(g, mul(pow(x, y), log(x))),
                       np.logical_not((x.data == 0) & (np.real(y.data) >= 0)))


@cython.final
cdef class _ArithOp:
    """Every fact about one arithmetic op (OP_ADD ... OP_POW) the forward, backward and jvp read."""
    cdef str name                       # "add", ... (the op's name in errors)
    cdef str node_name                  # "AddBackward", ... (also its scalar node's name)
    cdef object ufunc                   # NumPy's kernel, for the general (not typed-loop) path
    cdef binary_rule rule_x             # Note [Elementwise rules]: x's and y's gradient terms
    cdef binary_rule rule_y


cdef _ArithOp arith_op(str name, object ufunc, binary_rule rule_x, binary_rule rule_y):
    cdef _ArithOp op = _ArithOp.__new__(_ArithOp)
    op.name, op.node_name, op.ufunc = name, name.capitalize() + "Backward", ufunc
    op.rule_x, op.rule_y = rule_x, rule_y
    return op


# indexed by the op code (kernels/loops.h LucidOp)
cdef tuple ARITH_OPS = (
    arith_op("add", np.add, identity_rule, identity_rule),             # OP_ADD
    arith_op("sub", np.subtract, identity_rule, negate_rule),          # OP_SUB
    arith_op("mul", np.multiply, mul_rule_x, mul_rule_y),              # OP_MUL
    arith_op("div", np.true_divide, div_rule_x, div_rule_y),           # OP_DIV
    arith_op("pow", np.power, pow_rule_x, pow_rule_y),                 # OP_POW
)


cdef class AddBackward(BinaryBackward):
    """z = x + y  ->  gx = g, gy = g"""
    cdef tuple apply(self, tuple grads):
        g = grads[0]
        if self.a_shape is None and self.b_shape is None and self.a_dtype is self.b_dtype and \
                descr((<Tensor>g).data) is self.a_dtype:
            return (g if needs(self, 0) else None, g if needs(self, 1) else None)
        return self.reduced(g if needs(self, 0) else None, g if needs(self, 1) else None)


cdef class SubBackward(BinaryBackward):
    """z = x - y  ->  gx = g, gy = negate_rule = -g"""
    cdef tuple apply(self, tuple grads):
        g = grads[0]
        cdef Tensor gx = None, gy = None
        if needs(self, 0):
            gx = reduce_grad(g, self.a_shape, self.a_dtype)
        if needs(self, 1):               # negated after the reduction: exact, and a smaller array
            gy = negate_rule(reduce_grad(g, self.b_shape, self.b_dtype), None, None)
        return (gx, gy)


cdef class MulBackward(BinaryBackward):
    """z = x * y  ->  gx = mul_rule_x = g*y, gy = mul_rule_y = g*x"""
    cdef tuple apply(self, tuple grads):
        g = grads[0]
        return self.reduced(mul_rule_x(g, None, self.b.unpack(self)) if needs(self, 0) else None,
                            mul_rule_y(g, self.a.unpack(self), None) if needs(self, 1) else None)


cdef class DivBackward(BinaryBackward):
    """z = x / y  ->  gx = div_rule_x = g/y, gy = div_rule_y = -g*x/y**2 (in one pass where
    nothing records: ops/elementwise/fused_grads.pxi)"""
    cdef tuple apply(self, tuple grads):
        g = grads[0]
        y = self.b.unpack(self)
        cdef tuple fused
        if not needs(self, 1):
            return self.reduced(div_rule_x(g, None, y), None)
        x = self.a.unpack(self)
        fused = fused_binary_grads(self, FN_DIV, g, x, y)
        if fused is not None:
            return fused
        return self.reduced(div_rule_x(g, None, y) if needs(self, 0) else None,
                            div_rule_y(g, x, y))


cdef class PowBackward(BinaryBackward):
    """z = x ** y  ->  gx = pow_rule_x = g*y*x**(y-1), gy = pow_rule_y = g*x**y*log(x)"""
    cdef tuple apply(self, tuple grads):
        g = grads[0]
        x = self.a.unpack(self)
        y = self.b.unpack(self)
        cdef tuple fused = fused_binary_grads(self, FN_POW, g, x, y)   # where nothing records
        if fused is not None:
            return fused
        return self.reduced(pow_rule_x(g, x, y) if needs(self, 0) else None,
                            pow_rule_y(g, x, y) if needs(self, 1) else None)


cdef Tensor rules_jvp(binary_rule rule_x, binary_rule rule_y, Tensor a, Tensor b, Tensor out):
    """Note [Elementwise rules]: out's tangent, rule_x(ta, a, b) + rule_y(tb, a, b), shaped and
    typed like out; None when neither input has a tangent."""
    cdef Tensor ta = tangent_of(a), tb = tangent_of(b)
    if ta is None and tb is None:
        return None
    cdef long level = suspend_fw()
    try:                                 # x + y gives ta itself: own_tangent copies it
        return own_tangent(fit_tangent(add_tangents(None if ta is None else rule_x(ta, a, b),
                                                    None if tb is None else
                                                    rule_y_term(rule_x, rule_y, tb, a, b)),
                                       out), ta, tb)
    finally:
        resume_fw(level)


cdef inline Tensor binary_jvp(int op, Tensor a, Tensor b, Tensor out):
    """rules_jvp with the rules of OP_ADD ... OP_POW."""
    cdef _ArithOp info = <_ArithOp>ARITH_OPS[op]
    return rules_jvp(info.rule_x, info.rule_y, a, b, out)


cdef Tensor scalar_jvp(int op, Tensor a, object value, bint reflected, Tensor out):
    """The tangent of a (op) s, or s (op) a when reflected, for a Python number s: where the op
    is linear in a (a+s, a-s, s-a, a*s, a/s) the op itself on the tangent, through the fast
    tensor-with-number path; otherwise (s/a, a**s, s**a) the binary rules with s as a 0-d
    operand."""
    cdef Tensor ta = tangent_of(a)
    if ta is None:
        return None
    if op == OP_POW or (op == OP_DIV and reflected):
        return binary_jvp(op, scalar_operand(value), a, out) if reflected else \
            binary_jvp(op, a, scalar_operand(value), out)
    cdef long level = suspend_fw()
    try:
        if op == OP_ADD or op == OP_SUB:
            return neg(ta) if (op == OP_SUB and reflected) else clone(ta)   # its own memory
        return mul(ta, value) if op == OP_MUL else div(ta, value)
    finally:
        resume_fw(level)


cdef class ScalarBackward(Node):
    """Shared fields of tensor-with-Python-number nodes: the number, and a saved tensor.

    They are named like the tensor-tensor nodes of the same op (x * 2.0 -> "MulBackward").
    """
    cdef double scalar
    cdef SavedTensor saved_x
    cdef str label

    cpdef str name(self):
        return self.label

    cdef void release_saved(self):
        self.saved_x = None


cdef class AddScalarBackward(ScalarBackward):
    """z = x + s (or x - s)  ->  gx = g"""
    cdef tuple apply(self, tuple grads):
        return (grads[0],)


cdef class RSubScalarBackward(ScalarBackward):
    """z = s - x  ->  gx = -g"""
    cdef tuple apply(self, tuple grads):
        return (neg(grads[0]),)


cdef inline Tensor scaled_gradient(ScalarBackward node, Tensor g, int fop):
    """g (fop) node.scalar for fop OP_MUL or OP_DIV: into g itself when the engine let node own it,
    by the typed loop into a new tensor when nothing can be recorded (grad mode off, no dual
    level) and g is fast, else by the op (which records under create_graph)."""
    if may_overwrite(node, g):
        fast_scalar_into(fop, g.data, node.scalar, g.data)
        return g
    if not grad_enabled() and not fw_active() and is_fast(g.data):
        return wrap(fast_scalar(fop, g.data, node.scalar))
    return mul(g, node.scalar) if fop == OP_MUL else div(g, node.scalar)


cdef class MulScalarBackward(ScalarBackward):
    """z = x * s  ->  gx = g*s"""
    cdef tuple apply(self, tuple grads):
        return (scaled_gradient(self, <Tensor>grads[0], OP_MUL),)


cdef class DivScalarBackward(ScalarBackward):
    """z = x / s  ->  gx = g/s"""
    cdef tuple apply(self, tuple grads):
        return (scaled_gradient(self, <Tensor>grads[0], OP_DIV),)


cdef class RDivScalarBackward(ScalarBackward):
    """z = s / x  ->  gx = -g*s/x**2"""
    cdef tuple apply(self, tuple grads):
        x = self.saved_x.unpack(self)
        return (neg(div(mul(grads[0], self.scalar), mul(x, x))),)


cdef class PowScalarBackward(ScalarBackward):
    """z = x ** p  ->  gx = g*p*x**(p-1)  (0 when p == 0: x**0 is constant)"""
    cdef tuple apply(self, tuple grads):
        if self.scalar == 0:
            return (zero_grad_like(grads[0]),)
        x = self.saved_x.unpack(self)
        cdef Tensor g = grads[0]
        cdef object twice
        if self.scalar == 2 and not grad_enabled() and not fw_active() and \
                fast_pair(g.data, x.data):       # g*(x*2): two typed passes, one buffer
            twice = fast_scalar(OP_MUL, x.data, 2.0)
            return (wrap(fast_binary(OP_MUL, g.data, twice, twice)),)
        return (mul(g, mul(pow(x, self.scalar - 1), self.scalar)),)


cdef class RPowScalarBackward(ScalarBackward):
    """z = s ** x  ->  gx = g*z*log(s)  (for s == 0: 0 where x >= 0, i.e. where z is finite)"""
    cdef tuple apply(self, tuple grads):
        z = self.saved_x.unpack(self)
        gx = mul(grads[0], mul(z, self.scalar))
        if self.scalar == -np.inf:                           # s == 0
            return (select_grad(gx, np.logical_not(np.isfinite(z.data))),)
        return (gx,)





cdef inline bint is_number(object v) noexcept:
    return (type(v) is float or type(v) is int) and not isinstance(v, bool)


cdef Tensor scalar_op(int op, Tensor a, object value, bint reflected):
    """a (op) value, or value (op) a when reflected, for a float tensor a and a Python number."""
    cdef double s = value
    cdef object arr
    cdef int fop = -1                        # the typed loop's op, when the fast path runs
    cdef ScalarBackward node = None
    cdef bint record_it = grad_enabled() and a.requires_grad_c()
    if op == OP_POW or not is_fast(a.data):
        ufunc = (<_ArithOp>ARITH_OPS[op]).ufunc
        if reflected:
            arr = as_array(ufunc(value, a.data, dtype=a.data.dtype))
        else:
            arr = as_array(ufunc(a.data, value, dtype=a.data.dtype))
    else:
        fop = op
        if reflected and op == OP_SUB:
            fop = OP_RSUB
        elif reflected and op == OP_DIV:
            fop = OP_RDIV
        arr = fast_scalar(fop, a.data, s)
    cdef Tensor out = wrap(arr)
    if fw_active() and not (fop >= 0 and fused_scalar_tangent(fop, a, s, out)):
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, scalar_jvp(op, a, value, reflected, out))   # Note [Fused tangents]
    if not record_it:
        return out
    if op == OP_ADD or (op == OP_SUB and not reflected):
        node = AddScalarBackward.__new__(AddScalarBackward)
    elif op == OP_SUB:
        node = RSubScalarBackward.__new__(RSubScalarBackward)
    elif op == OP_MUL:
        node = MulScalarBackward.__new__(MulScalarBackward)
    elif op == OP_DIV and not reflected:
        node = DivScalarBackward.__new__(DivScalarBackward)
    elif op == OP_DIV:
        node = RDivScalarBackward.__new__(RDivScalarBackward)
    elif not reflected:
        node = PowScalarBackward.__new__(PowScalarBackward)
    else:
        node = RPowScalarBackward.__new__(RPowScalarBackward)
    record(node, a, None)
    node.scalar = s
    node.label = (<_ArithOp>ARITH_OPS[op]).node_name
    attach_output(out, node, 0)
    if op == OP_POW and reflected:
        node.scalar = np.log(s) if s > 0 else (np.nan if s < 0 else -np.inf)
        node.saved_x = save_tensor(out, node, True)
    elif (op == OP_DIV and reflected) or op == OP_POW:
        node.saved_x = save_tensor(a, node, False)
    return out


cdef BinaryBackward new_binary_node(int op):
    """The node class of a binary op (OP_ADD ... OP_POW)."""
    if op == OP_ADD:
        return AddBackward.__new__(AddBackward)
    if op == OP_SUB:
        return SubBackward.__new__(SubBackward)
    if op == OP_MUL:
        return MulBackward.__new__(MulBackward)
    if op == OP_DIV:
        return DivBackward.__new__(DivBackward)
    return PowBackward.__new__(PowBackward)


cdef inline bint is_complex_tensor(Tensor t):
    """t is a complex tensor (not None)."""
    return t is not None and descr(t.data).kind == b'c'


cdef void save_binary_inputs(BinaryBackward node, int op, Tensor a, Tensor b,
                             bint maybe_complex=True) except *:
    """Save what the op's backward reads, and only that: x*y keeps y for gx and x for gy; x/y
    keeps y, and x for gy; x**y keeps both; + and - keep nothing. The node's edges are set.
    maybe_complex False: a and b are a fast (real) pair, not tested for complex."""
    if maybe_complex and (op == OP_MUL or op == OP_DIV or op == OP_POW) and \
            (is_complex_tensor(a) or is_complex_tensor(b)):
        a = None if a is None else conj(a)   # Note [Complex gradients]: the real rules,
        b = None if b is None else conj(b)   # conjugated
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


cdef Tensor record_binary(int op, Tensor out, Tensor a, Tensor b, bint fast=False):
    """Give out its tangent when a dual level is active (fused when a, b are a fast pair: Note
    [Fused tangents]); make it the result of a recorded a (op) b when grad mode is on and an
    input needs it."""
    if fw_active() and not (fast and fused_binary_tangent(op, a, b, out)):
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, binary_jvp(op, a, b, out))
    if not (grad_enabled() and (a.requires_grad_c() or b.requires_grad_c())):
        return out
    cdef BinaryBackward node = new_binary_node(op)
    record_broadcast(node, a, b, out)
    save_binary_inputs(node, op, a, b, not fast)
    attach_output(out, node, 0)
    return out


cdef Tensor binary_op(int op, object x, object y):
    """The forward of every binary arithmetic op: promote, compute, record."""
    cdef Tensor a, b
    cdef object arr
    # fast paths: tensor (op) Python number, and two tensors of one float dtype of the same
    # shape, or one broadcast over a block of the other's dims
    if type(x) is Tensor:
        a = <Tensor>x
        if type(y) is Tensor:
            b = <Tensor>y
            if op != OP_POW and fast_pair(a.data, b.data):
                return record_binary(op, wrap(fast_binary(op, a.data, b.data, None)), a, b, True)
            if op == OP_POW and fn2_applies(FN_POW, a, b):   # libm's pow, when small
                return record_binary(op, wrap(fast_fn2(FN_POW, a.data, b.data)), a, b)
            if op != OP_POW:                     # one stretched over a block of the other
                arr = fast_broadcast(op, a.data, b.data)
                if arr is not None:
                    return record_binary(op, wrap(arr), a, b)
        elif is_number(y) and is_float_dtype(descr(a.data)):
            return scalar_op(op, a, y, False)
    elif type(y) is Tensor and is_number(x) and is_float_dtype(descr((<Tensor>y).data)):
        return scalar_op(op, <Tensor>y, x, True)
    cdef str name = (<_ArithOp>ARITH_OPS[op]).name
    a = operand(x, name)
    b = operand(y, name)
    cdef cnp.dtype dt = result_dtype(a, b)
    check_operands_fit(x, y, a, b, dt, name)
    if op == OP_DIV and not is_float_dtype(dt) and dt.kind != b'c':
        dt = default_float_dtype()
    elif op == OP_SUB and dt.kind == b'b':
        raise TypeError("sub: subtracting bool tensors is not supported; use logical ops")
    elif op == OP_POW and not is_float_dtype(dt) and dt.kind != b'c' and \
            b.data.dtype.kind != "b" and np.any(b.data < 0):
        raise RuntimeError("pow: integers to negative integer powers are not allowed (the "
                           "result is not an integer); use a float base, e.g. x.float() ** y")
    return record_binary(op, wrap(binary_kernel((<_ArithOp>ARITH_OPS[op]).ufunc, a, b, dt, name)), a, b)


cpdef Tensor add(object x, object y):
    """x + y, broadcasting (the C API's add; lucid.add is add_alpha)."""
    return binary_op(OP_ADD, x, y)


cpdef Tensor sub(object x, object y):
    """x - y, broadcasting (the C API's sub; lucid.sub is sub_alpha)."""
    return binary_op(OP_SUB, x, y)


cdef Tensor scaled_by(object alpha, object input, object other, str name):
    """alpha * other, refusing a float alpha with integer operands (PyTorch's rule)."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: alpha must be a number, not {type(alpha).__name__}")
    cdef Tensor y = operand(other, name)
    if isinstance(alpha, (float, np.floating)) and \
            not is_float_dtype(result_dtype(operand(input, name), y)):
        raise RuntimeError(f"{name}: for integral input tensors, argument alpha must not be a "
                           "floating point number")
    return mul(y, alpha)


def add_alpha(input, other, *, alpha=1):
    """input + alpha * other, broadcasting (alpha=1: input + other, the operator's path)."""
    if alpha is 1:
        return binary_op(OP_ADD, input, other)
    return binary_op(OP_ADD, input, scaled_by(alpha, input, other, "add"))
define_op(add_alpha, POINTWISE, ANY, name="add")


def sub_alpha(input, other, *, alpha=1):
    """input - alpha * other, broadcasting (alpha=1: input - other, the operator's path)."""
    if alpha is 1:
        return binary_op(OP_SUB, input, other)
    return binary_op(OP_SUB, input, scaled_by(alpha, input, other, "sub"))
define_op(sub_alpha, POINTWISE, NUMERIC, name="sub")


cpdef Tensor mul(object x, object y):
    """x * y, broadcasting."""
    return binary_op(OP_MUL, x, y)
define_op(mul, POINTWISE, ANY)


cpdef Tensor div(object x, object y):
    """x / y (true division), broadcasting."""
    return binary_op(OP_DIV, x, y)
define_op(div, POINTWISE, FLOAT)


cpdef Tensor pow(object x, object y):
    """x ** y, broadcasting."""
    return binary_op(OP_POW, x, y)
define_op(pow, POINTWISE, NUMERIC, method="own", inplace=IN_PLACE)


cdef class NegBackward(Node):
    """z = -x  ->  gx = -g"""
    cdef tuple apply(self, tuple grads):
        cdef Tensor g = grads[0]
        if may_overwrite(self, g):
            fast_fn1(FN1_NEG, g.data, 0, 0, 0, False, False, g.data)
            return (g,)
        return (neg(g),)


cpdef Tensor neg(object x):
    """-x."""
    cdef Tensor a = operand(x, "neg")
    if descr(a.data).kind == b'b':
        raise TypeError("neg: negation of a bool tensor is not supported; use logical_not")
    cdef Tensor out = wrap(fast_fn1(FN1_NEG, a.data, 0, 0, 0, False, False) if is_fast(a.data)
                           else as_array(np.negative(a.data)))
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(a, neg, ()))
    if grad_enabled() and a.requires_grad_c():
        attach_output(out, record(NegBackward.__new__(NegBackward), a, None), 0)
    return out
define_op(neg, POINTWISE, NUMERIC, inplace=IN_PLACE)


cdef tuple RICHCMP_NAMES = ("lt", "le", "eq", "ne", "gt", "ge")   # Python's richcmp order


cdef object compare(Tensor self, object other, int op):
    """Elementwise comparison: a bool tensor outside the graph."""
    cdef Tensor b = scalar_operand(other) if not isinstance(other, Tensor) else <Tensor>other
    if b is None:
        if isinstance(other, cnp.ndarray):
            b = wrap(other)
        elif isinstance(other, (complex, np.complexfloating)):
            b = operand(other, RICHCMP_NAMES[op])
        else:
            return NotImplemented
    if op != 2 and op != 3:              # the ordering tests (Note [Complex guard])
        refuse_complex(RICHCMP_NAMES[op], self, b)
    try:
        return wrap(as_array(COMPARE_UFUNCS[op](self.data, b.data)))
    except ValueError:
        raise shape_error("compare", self, b) from None


cdef tuple COMPARE_UFUNCS = (np.less, np.less_equal, np.equal, np.not_equal, np.greater,
                             np.greater_equal)


cdef object compare_ufunc(int op):
    """The NumPy ufunc of comparison op (Py_LT ... Py_GE), for lucid.eq and the others."""
    return COMPARE_UFUNCS[op]
