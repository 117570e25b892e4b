# Elementwise unary ops and their fused backward kernels.

# Note [Elementwise rules]: an elementwise op's Jacobian is diagonal, so one function per op,
# rule(g, x, y) = g * f'(x) (x the input, y the output), is both its backward (g: the gradient
# of y) and its jvp (g: the tangent of x). The backward node calls it with what it saved (x or
# y; the other is None); the forward calls it with both when a dual level is active.

# (unary_rule, the C type of such a rule, is declared in _core_internal.pxi)


cdef class UnaryBackward(Node):
    """Shared field of unary nodes: the one saved tensor (input or output)."""
    # its field (saved_x) is declared in _core_internal.pxi: lucid._ops subclasses it

    cdef void release_saved(self):
        self.saved_x = None


cdef Tensor unary_jvp(unary_rule rule, Tensor a, Tensor out):
    """Note [Elementwise rules]: out's tangent, rule(tangent of a, a, out), or None."""
    cdef Tensor t = tangent_of(a)
    if t is None:
        return None
    cdef long level = suspend_fw()
    try:
        return rule(t, a, output_for_rule(out))
    finally:
        resume_fw(level)


cdef Tensor exp_rule(Tensor g, Tensor x, Tensor y):
    """g*y"""
    return mul(g, y)


cdef Tensor log_rule(Tensor g, Tensor x, Tensor y):
    """g/x"""
    return div(g, x)


cdef Tensor tanh_rule(Tensor g, Tensor x, Tensor y):
    """g*(1 - y*y) (a complex y by lucid's ops, whose nodes differentiate complex values)"""
    return fused_grad_by_ops(True, g, y) if descr(y.data).kind == b'c' else tanh_backward(g, y)


cdef Tensor relu_rule(Tensor g, Tensor x, Tensor y):
    """g where y > 0, else 0"""
    return relu_backward(g, y)


cdef Tensor sqrt_rule(Tensor g, Tensor x, Tensor y):
    """g/(2*y)"""
    return div(g, mul(y, 2.0))


cdef Tensor abs_rule(Tensor g, Tensor x, Tensor y):
    """g*sign(x), exactly 0 at x == 0 (Note [Mask by selection])"""
    return select_grad(g, np.sign(x.data))


cdef Tensor sin_rule(Tensor g, Tensor x, Tensor y):
    """g*cos(x)"""
    return mul(g, cos(x))


cdef Tensor cos_rule(Tensor g, Tensor x, Tensor y):
    """-g*sin(x)"""
    return neg(mul(g, sin(x)))


cdef Tensor sigmoid_rule(Tensor g, Tensor x, Tensor y):
    """g*y*(1 - y) (a complex y by lucid's ops, as tanh_rule)"""
    return fused_grad_by_ops(False, g, y) if descr(y.data).kind == b'c' else \
        sigmoid_backward(g, y)


cdef class RuleBackward(UnaryBackward):
    """Shared apply of the elementwise nodes: the op's rule on its saved input (or output).

    An elementwise op's node class is a docstring on this base (ExpBackward, Log1pBackward, ...);
    a table op's node runs its fused loop instead when nothing records (table_grad); tanh and
    sigmoid apply their own fused kernel, which may write into the gradient."""
    # its fields (rule, saved_is_output) are declared in _core_internal.pxi: lucid._ops
    # subclasses it

    cdef tuple apply(self, tuple grads):
        cdef Tensor saved = self.saved_x.unpack(self)
        cdef Tensor fused
        if self.table_op != UN_NONE:
            fused = table_grad(self, self.table_op, grads[0], saved, 0.0, 0.0)
            if fused is not None:
                return (fused,)
        if descr(saved.data).kind == b'c':       # Note [Complex gradients]: the real rule on
            saved = conj(saved)                   # the conjugate (a holomorphic op's)
        if self.saved_is_output:
            return (self.rule(grads[0], None, saved),)
        return (self.rule(grads[0], saved, None),)


cdef Tensor record_rule(Tensor out, Tensor a, RuleBackward node, bint save_output,
                        unary_rule rule):
    """out's tangent and node by rule (record_unary), the node applying the same rule."""
    node.rule = rule
    node.saved_is_output = save_output
    return record_unary(out, a, node, save_output, rule)


cdef Tensor float_unary(object x, str name, object ufunc, RuleBackward node, bint save_output,
                        unary_rule rule):
    """ufunc(x) (integer and bool inputs compute in the default float dtype, like PyTorch),
    recorded by rule."""
    return table_unary(x, name, UN_NONE, ufunc, node, save_output, rule)


cdef class ExpBackward(RuleBackward):
    """y = exp(x)  ->  gx = exp_rule(g, x, y) = g*y"""


cdef class LogBackward(RuleBackward):
    """y = log(x)  ->  gx = log_rule(g, x, y) = g/x"""


cdef class TanhBackward(UnaryBackward):
    """y = tanh(x)  ->  gx = tanh_backward(g, y) = g*(1 - y*y)"""
    cdef tuple apply(self, tuple grads):
        cdef Tensor g = grads[0], y = self.saved_x.unpack(self)
        if descr(y.data).kind == b'c':                   # Note [Complex gradients]
            return (tanh_rule(g, None, conj(y)),)
        return (fused_grad(True, g, y, may_overwrite(self, g)),)


cdef class ReluBackward(RuleBackward):
    """y = relu(x)  ->  gx = relu_rule(g, x, y) = g where y > 0"""


cdef Tensor record_unary(Tensor out, Tensor a, UnaryBackward node, bint save_output,
                         unary_rule rule):
    """out's tangent by rule when a dual level is active; attach node to out when a requires
    grad, saving a, or out when save_output. The node is attached before the rule runs, so a
    rule reading out differentiates through out's history (reverse-over-forward), and the
    output saved after, so it keeps its tangent (forward-over-reverse)."""
    cdef bint recording = grad_enabled() and a.requires_grad_c()
    if recording:
        record(node, a, None)
        attach_output(out, node, 0)
    if fw_active() and not fused_unary_tangent(rule, a, out):       # Note [Fused tangents]
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, unary_jvp(rule, a, out))
    if recording:
        node.saved_x = save_tensor(out if save_output else a, node, save_output)
    return out


cpdef Tensor exp(object x):
    """e ** x."""
    cdef Tensor a = operand(x, "exp")
    cdef object arr = fast_unary(U_EXP, np.exp, a.data) if is_fast(a.data) else unary_kernel(np.exp, a)
    return record_rule(wrap(arr), a, ExpBackward.__new__(ExpBackward), True, exp_rule)
define_op(exp, POINTWISE, FLOAT, inplace=IN_PLACE)


cpdef Tensor log(object x):
    """Natural logarithm of x."""
    cdef Tensor a = operand(x, "log")
    cdef object arr = fast_unary(U_LOG, np.log, a.data) if is_fast(a.data) else unary_kernel(np.log, a)
    return record_rule(wrap(arr), a, LogBackward.__new__(LogBackward), False, log_rule)
define_op(log, POINTWISE, FLOAT, inplace=IN_PLACE)


cpdef Tensor tanh(object x):
    """Hyperbolic tangent of x."""
    cdef Tensor a = operand(x, "tanh")
    cdef object arr = fast_unary(U_TANH, np.tanh, a.data) if is_fast(a.data) else \
        unary_kernel(np.tanh, a)
    return record_unary(wrap(arr), a, TanhBackward.__new__(TanhBackward), True, tanh_rule)
define_op(tanh, POINTWISE, FLOAT, inplace=IN_PLACE)


cpdef Tensor relu(object x):
    """max(x, 0)."""
    cdef Tensor a = operand(x, "relu")
    cdef object arr = table_forward(UN_RELU, a, 0.0, 0.0)
    if arr is None:
        arr = as_array(np.maximum(a.data, 0).astype(a.data.dtype, copy=False))
    return record_table(arr, a, ReluBackward.__new__(ReluBackward), UN_RELU, True, relu_rule)
define_op(relu, POINTWISE, ANY, inplace=IN_PLACE)


cdef class SqrtBackward(RuleBackward):
    """y = sqrt(x)  ->  gx = sqrt_rule(g, x, y) = g/(2*y)"""


cdef class AbsBackward(RuleBackward):
    """y = |x|  ->  gx = abs_rule(g, x, y) = g*sign(x), exactly 0 at x == 0"""


cdef class SinBackward(RuleBackward):
    """y = sin(x)  ->  gx = sin_rule(g, x, y) = g*cos(x)"""


cdef class CosBackward(RuleBackward):
    """y = cos(x)  ->  gx = cos_rule(g, x, y) = -g*sin(x)"""


cdef class SigmoidBackward(UnaryBackward):
    """y = sigmoid(x)  ->  gx = sigmoid_backward(g, y) = g*y*(1 - y)"""
    cdef tuple apply(self, tuple grads):
        cdef Tensor g = grads[0], y = self.saved_x.unpack(self)
        if descr(y.data).kind == b'c':                   # Note [Complex gradients]
            return (sigmoid_rule(g, None, conj(y)),)
        return (fused_grad(False, g, y, may_overwrite(self, g)),)


cdef class ClampBackward(UnaryBackward):
    """y = clamp(x, lo, hi)  ->  gx = g*(lo <= x <= hi)"""
    cdef object lo
    cdef object hi
    cdef bint plain                   # lo, hi exact doubles, not NaN: the one-pass loop applies

    cdef tuple apply(self, tuple grads):
        cdef Tensor g = grads[0]
        cdef Tensor x = self.saved_x.unpack(self)
        if self.plain and fusing() and fast_pair(g.data, x.data) and small_fast(x.data):
            return (wrap(fast_fn1_grad(FN1_CLAMP, g.data, x.data, 0 if self.lo is None else
                                       self.lo, 0 if self.hi is None else self.hi,
                                       self.lo is not None, self.hi is not None)),)
        return (clamp_grad(g, x, self.lo, self.hi),)


cdef Tensor clamp_grad(Tensor g, Tensor x, object lo, object hi):
    """g where lo <= x <= hi, else exactly 0 (the backward and the jvp of clamp)"""
    cdef object inside = np.ones(x.data.shape, dtype=bool)
    if lo is not None:
        inside &= x.data >= lo
    if hi is not None:
        inside &= x.data <= hi
    return select_grad(g, inside)


cpdef Tensor sqrt(object x):
    """Square root of x."""
    cdef Tensor a = operand(x, "sqrt")
    return record_rule(wrap(unary_kernel(np.sqrt, a)), a, SqrtBackward.__new__(SqrtBackward), True,
                        sqrt_rule)
define_op(sqrt, POINTWISE, FLOAT, inplace=IN_PLACE)


cpdef Tensor abs(object x):
    """|x|."""
    cdef Tensor a = operand(x, "abs")
    if descr(a.data).kind == b'c':
        return complex_abs(a)
    cdef object arr = table_forward(UN_ABS, a, 0.0, 0.0)
    if arr is None:
        arr = as_array(np.abs(a.data))
    return record_table(arr, a, AbsBackward.__new__(AbsBackward), UN_ABS, False, abs_rule)
define_op(abs, POINTWISE, ANY, inplace=IN_PLACE)


cpdef Tensor sin(object x):
    """Sine of x."""
    # NumPy's path without np.errstate (~0.7 us a call): sin(inf) warns as before
    return table_unary(x, "sin", UN_SIN, np.sin, SinBackward.__new__(SinBackward), False,
                       sin_rule, False)
define_op(sin, POINTWISE, FLOAT, inplace=IN_PLACE)


cpdef Tensor cos(object x):
    """Cosine of x."""
    # NumPy's path without np.errstate (~0.7 us a call): sin(inf) warns as before
    return table_unary(x, "cos", UN_COS, np.cos, CosBackward.__new__(CosBackward), False,
                       cos_rule, False)
define_op(cos, POINTWISE, FLOAT, inplace=IN_PLACE)


cdef object sigmoid_numpy(Tensor a):
    """1 / (1 + exp(-a)) by NumPy's kernels, in a new array (integer and bool a in the default
    float dtype). For a below about -88 (float32) or -709 (float64) exp(-a) overflows to inf, and
    1/(1 + inf) = 0 is the right value (PyTorch's too): that overflow is not reported."""
    cdef object arr = as_array(np.negative(a.data, dtype=a.data.dtype
                                           if is_differentiable_dtype(descr(a.data))
                                           else default_float_dtype()))
    with np.errstate(over="ignore"):
        np.exp(arr, out=arr)
    np.add(arr, 1, out=arr)
    np.reciprocal(arr, out=arr)
    return arr


cdef enum:
    # below this size one libm loop beats NumPy's four SIMD passes (and their ~1 us per call):
    # 0.1-0.3 us against 2-4 us at 8-256 elements, even at ~1000 (measured, float32 and float64)
    SIGMOID_LOOP_MAX = 1024


cpdef Tensor sigmoid(object x):
    """1 / (1 + exp(-x))."""
    cdef Tensor a = operand(x, "sigmoid")
    # small and contiguous: the typed loop (it reports no overflow); else NumPy's SIMD kernels
    cdef object arr = fast_unary(U_SIGMOID, None, a.data) \
        if is_fast(a.data) and cnp.PyArray_SIZE(<cnp.ndarray>a.data) < SIGMOID_LOOP_MAX \
        else sigmoid_numpy(a)
    return record_unary(wrap(arr), a, SigmoidBackward.__new__(SigmoidBackward), True,
                        sigmoid_rule)
define_op(sigmoid, POINTWISE, FLOAT, inplace=IN_PLACE)


cdef inline bint plain_bound(object v):
    """None, or a number a double holds exactly that is not NaN (clamp's loop takes it)."""
    return v is None or (exact_number(v) and v == v)


def clamp(input, min=None, max=None):
    """input limited to [min, max] (either bound may be None)."""
    return clamp_tensor(operand(input, "clamp"), min, max)


cdef Tensor clamp_tensor(Tensor a, object min, object max):
    """clamp(a, min, max): a small fast a with plain bounds by the typed loop, else np.clip."""
    if min is None and max is None:
        raise RuntimeError("clamp: at least one of min and max must be given")
    for bound in (min, max):
        if bound is not None and not isinstance(bound, (int, float)):
            raise TypeError(f"clamp: bounds must be numbers, got {type(bound).__name__}")
        check_int_fits(bound, descr(a.data), "clamp")
    cdef bint plain = small_fast(a.data) and plain_bound(min) and plain_bound(max)
    cdef Tensor out
    if plain:
        out = wrap(fast_fn1(FN1_CLAMP, a.data, 0 if min is None else min,
                            0 if max is None else max, 0, min is not None, max is not None))
    else:
        out = wrap(as_array(np.clip(a.data, min, max)).astype(a.data.dtype, copy=False))
    cdef Tensor ta
    cdef long level
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            ta = tangent_of(a)
            if ta is not None:
                level = suspend_fw()
                try:
                    ta = clamp_grad(ta, a, min, max)
                finally:
                    resume_fw(level)
                set_tangent(out, ta)
    if not (grad_enabled() and a.requires_grad_c()):
        return out
    cdef ClampBackward node = ClampBackward.__new__(ClampBackward)
    node.lo = min
    node.hi = max
    node.plain = plain
    record(node, a, None)
    attach_output(out, node, 0)
    node.saved_x = save_tensor(a, node, False)
    return out
define_op(clamp, POINTWISE, ANY, inplace=IN_PLACE)


cdef Tensor one_sided_clamp(object input, object bound, bint lower, str op):
    """input limited by bound from below (lower) or above: clamp for a number, maximum or
    minimum for a tensor; the arguments checked in op's name."""
    cdef Tensor t = tensor_arg(input, op, "input")
    if isinstance(bound, Tensor):
        return maximum(t, bound) if lower else minimum(t, bound)
    if not is_number(bound):
        raise TypeError(f"{op}: argument '{'min' if lower else 'max'}' must be a number or a "
                        f"Tensor, not {type(bound).__name__}")
    return clamp_tensor(t, bound, None) if lower else clamp_tensor(t, None, bound)


def clamp_min(input, min):
    """input limited from below by min (a number: clamp(input, min=min); a tensor: maximum)."""
    return one_sided_clamp(input, min, True, "clamp_min")
define_op(clamp_min, POINTWISE, ANY, inplace=IN_PLACE)


def clamp_max(input, max):
    """input limited from above by max (a number: clamp(input, max=max); a tensor: minimum)."""
    return one_sided_clamp(input, max, False, "clamp_max")
define_op(clamp_max, POINTWISE, ANY, inplace=IN_PLACE)


# -- fused backward kernels: each is an op, so a recorded backward differentiates it ------------

cdef class FusedGradBackward(Node):
    """Shared fields of the fused gradient ops' nodes: their inputs g and y."""
    cdef SavedTensor g
    cdef SavedTensor y

    cdef void release_saved(self):
        self.g = None
        self.y = None


cdef Tensor fused_rule_y(bint is_tanh, Tensor gz, Tensor g, Tensor y):
    """d/dy of the fused gradients, times gz: tanh -2*gz*g*y; sigmoid gz*g*(1 - 2*y)
    (Note [Elementwise rules]: the backward for y and the jvp's term for y's tangent)"""
    if is_tanh:
        return mul(mul(gz, g), mul(y, -2.0))
    return mul(mul(gz, g), sub(1.0, mul(y, 2.0)))


cdef class TanhBackwardBackward(FusedGradBackward):
    """z = g*(1 - y*y)  ->  gg = tanh_backward(gz, y), gy = fused_rule_y(gz, g, y) = -2*gz*g*y"""
    cdef tuple apply(self, tuple grads):
        gz = grads[0]
        y = self.y.unpack(self)
        return (tanh_backward(gz, y) if needs(self, 0) else None,
                fused_rule_y(True, gz, self.g.unpack(self), y) if needs(self, 1) else None)


cdef class SigmoidBackwardBackward(FusedGradBackward):
    """z = g*y*(1 - y)  ->  gg = sigmoid_backward(gz, y), gy = fused_rule_y(gz, g, y)
    = gz*g*(1 - 2*y)"""
    cdef tuple apply(self, tuple grads):
        gz = grads[0]
        y = self.y.unpack(self)
        return (sigmoid_backward(gz, y) if needs(self, 0) else None,
                fused_rule_y(False, gz, self.g.unpack(self), y) if needs(self, 1) else None)


cdef Tensor fused_jvp(bint is_tanh, Tensor g, Tensor y):
    """The tangent of tanh_backward(g, y) / sigmoid_backward(g, y): the same op on g's tangent
    plus fused_rule_y on y's tangent (None when neither has one)."""
    cdef Tensor tg = tangent_of(g), ty = tangent_of(y)
    if tg is None and ty is None:
        return None
    cdef long level = suspend_fw()
    try:
        return add_tangents(None if tg is None else fused_grad(is_tanh, tg, y, False),
                            None if ty is None else fused_rule_y(is_tanh, ty, g, y))
    finally:
        resume_fw(level)


cdef Tensor fused_grad_by_ops(bint is_tanh, Tensor g, Tensor y):
    """tanh: g*(1 - y*y); sigmoid: g*y*(1 - y), by lucid's ops (each recorded and complex-capable:
    a complex y, which the caller conjugates)."""
    return mul(g, sub(1.0, mul(y, y)) if is_tanh else mul(y, sub(1.0, y)))


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
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, fused_jvp(is_tanh, g, y))
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
    cdef object arr = a.data
    if descr(arr).kind == b'c' and dtype.kind != b'c':
        arr = arr.real                   # complex to real keeps the real part (as PyTorch)
    cdef Tensor out = wrap(arr.astype(dtype))
    cdef CastBackward node
    cdef bint differentiable = is_float_dtype(dtype) or dtype.kind == b'c'
    if fw_active() and differentiable:
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(a, cast, (dtype,)))
    if grad_enabled() and a.requires_grad_c() and differentiable:
        node = CastBackward.__new__(CastBackward)
        record(node, a, None)
        node.in_dtype = descr(a.data)
        attach_output(out, node, 0)
    return out


cdef class CloneBackward(Node):
    """y = clone(x)  ->  gx = g"""
    cdef tuple apply(self, tuple grads):
        return (grads[0],)


cpdef Tensor clone(a):
    """A copy of a with its own memory."""
    cdef Tensor t = tensor_arg(a, "clone", "a")
    cdef Tensor out = wrap(np.array(t.data, copy=True))
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(t, clone, ()))
    if grad_enabled() and t.requires_grad_c():
        attach_output(out, record(CloneBackward.__new__(CloneBackward), t, None), 0)
    return out
define_op(clone, POINTWISE, ANY)
