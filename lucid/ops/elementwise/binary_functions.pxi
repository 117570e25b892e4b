# Binary elementwise functions of floats: atan2, logaddexp (and float_only_binary, the recording
# of the binary ops PyTorch defines on floating tensors only).
#
# Each section: its two rules (Note [Elementwise rules] in ops/elementwise/unary.pxi: each
# input's rule is both its backward term and its jvp term; a symmetric op writes x's alone), its
# node (a docstring on BinaryRuleBackward, which applies the rules), its forward (float_binary)
# and its registration, one blank line apart; two blank lines end a section.


cdef class BinaryRuleBackward(BinaryBackward):
    """Shared apply of the binary functions: each input's rule on the saved inputs, reduced to
    the input's shape. A function's node class is a docstring on this base (Atan2Backward, ...).
    Its fields (rule_x, rule_y) are in _core_internal.pxi: lucid._ops subclasses it."""

    cdef tuple apply(self, tuple grads):
        g = grads[0]
        x = self.a.unpack(self)
        y = self.b.unpack(self)
        cdef tuple fused = None
        if self.fn != FN_NONE:                   # one pass where nothing records
            fused = fused_binary_grads(self, self.fn, g, x, y)
        if fused is not None:
            return fused
        return self.reduced(self.rule_x(g, x, y) if needs(self, 0) else None,
                            rule_y_term(self.rule_x, self.rule_y, g, x, y) if needs(self, 1)
                            else None)


cdef Tensor float_binary(object x, object y, str name, object ufunc, type node_type,
                         binary_rule rule_x, binary_rule rule_y, int fn):
    """ufunc(x, y), broadcasting (integer and bool operands compute in the default float dtype):
    its tangent by rule_x and rule_y (NULL: the op is symmetric) when a dual level is active,
    and a node of node_type (a BinaryRuleBackward), applying the same rules to both saved
    inputs, when grad mode is on and an input requires grad. fn (a LucidFn, or FN_NONE) is
    the op's one-pass loops: the forward of a plain pair, the node's backward where nothing
    records (ops/elementwise/fused_grads.pxi)."""
    cdef Tensor a = operand(x, name), b = operand(y, name)
    cdef cnp.dtype dt
    cdef Tensor out
    if fn != FN_NONE and fn2_applies(fn, a, b):
        out = wrap(fast_fn2(fn, a.data, b.data))
    else:
        dt = result_dtype(a, b)
        if not is_float_dtype(dt):
            dt = default_float_dtype()
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            out = wrap(binary_kernel(ufunc, a, b, dt, name))
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, rules_jvp(rule_x, rule_y, a, b, out))
    cdef BinaryRuleBackward node
    if grad_enabled() and (a.requires_grad_c() or b.requires_grad_c()):
        node = node_type.__new__(node_type)
        node.rule_x, node.rule_y, node.fn = rule_x, rule_y, fn
        record_broadcast(node, a, b, out)
        node.a = save_tensor(a, node, False)
        node.b = save_tensor(b, node, False)
        attach_output(out, node, 0)
    return out


cdef void refuse_integers(cnp.dtype dt, str name) except *:
    """NotImplementedError (a RuntimeError, as PyTorch's) naming the op when dt is not floating
    (PyTorch has no integer or bool kernel for it)."""
    if not is_float_dtype(dt):
        raise NotImplementedError(f"{name}: not implemented for {dtype_name(dt)} inputs; convert "
                                  "them with .float() (or .double())")


cdef Tensor float_only_binary(object x, object y, str name, object ufunc, type node_type,
                              binary_rule rule_x, binary_rule rule_y, int fn):
    """float_binary for an op PyTorch defines on floating tensors only: integer and bool operands
    (their promoted dtype not floating) raise NotImplementedError."""
    cdef Tensor a = operand(x, name), b = operand(y, name)
    if not plain_pair(a, b):                     # (a plain pair is floating)
        refuse_integers(result_dtype(a, b), name)
    return float_binary(a, b, name, ufunc, node_type, rule_x, rule_y, fn)


cdef Tensor atan2_rule_x(Tensor g, Tensor x, Tensor y):
    """g*y/(x*x + y*y), and exactly 0 where x*x + y*y == 0 (PyTorch's value at the origin; a
    selection, so no NaN of the unused quotient reaches a further derivative)"""
    cdef Tensor norm2 = add(mul(x, x), mul(y, y))
    cdef object origin = norm2.data == 0
    if not origin.any():
        return div(mul(g, y), norm2)
    return where(origin, 0.0, div(mul(g, y), where(origin, 1.0, norm2)))

cdef Tensor atan2_rule_y(Tensor g, Tensor x, Tensor y):
    """-g*x/(x*x + y*y)  (atan2_rule_x with the roles of x and y swapped, negated)"""
    return neg(atan2_rule_x(g, y, x))

cdef class Atan2Backward(BinaryRuleBackward):
    """z = atan2(x, y)  ->  gx = atan2_rule_x = g*y/(x*x + y*y), gy = atan2_rule_y
    = -g*x/(x*x + y*y)"""

cpdef Tensor atan2(object input, object other):
    """The angle of the point (other, input): arctan(input/other) in the right quadrant."""
    return float_binary(input, other, "atan2", np.arctan2, Atan2Backward, atan2_rule_x,
                        atan2_rule_y, FN_ATAN2)
define_op(atan2, POINTWISE, FLOAT, inplace=IN_PLACE)


cdef Tensor logaddexp_rule_x(Tensor g, Tensor x, Tensor y):
    """g*sigmoid(x - y)"""
    return mul(g, sigmoid(sub(x, y)))

cdef class LogaddexpBackward(BinaryRuleBackward):
    """z = log(exp(x) + exp(y))  ->  gx = g*sigmoid(x - y), gy = g*sigmoid(y - x)"""

cpdef Tensor logaddexp(object input, object other):
    """log(exp(input) + exp(other)), without overflow."""
    return float_only_binary(input, other, "logaddexp", np.logaddexp, LogaddexpBackward,
                             logaddexp_rule_x, NULL, FN_LOGADDEXP)
define_op(logaddexp, POINTWISE, FLOAT_ONLY)
