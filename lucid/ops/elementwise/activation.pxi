# Activations: silu, gelu (exact and tanh), softplus, leaky_relu, elu.
#
# silu and gelu have plain rules (Note [Elementwise rules]); softplus, leaky_relu and elu have a
# parameter, so their rule takes it: rule(g, x, p, q) is both the backward and the jvp.

cdef double INV_SQRT2 = 0.7071067811865476             # 1/sqrt(2)
cdef double INV_SQRT_2PI = 0.3989422804014327          # 1/sqrt(2*pi), the normal density at 0
cdef double GELU_K = 0.7978845608028654                # sqrt(2/pi), gelu's tanh form
cdef double GELU_C = 0.044715


# -- silu --------------------------------------------------------------------------------------

def _silu_kernel(arr, dtype=None):
    """x/(1 + exp(-x)) (exp overflows to inf for very negative x, giving -0)."""
    x = arr if dtype is None else arr.astype(dtype)
    with np.errstate(over="ignore"):
        out = as_array(np.negative(x))
        np.exp(out, out=out)
    out += 1
    np.divide(x, out, out=out)
    return out


cdef Tensor silu_rule(Tensor g, Tensor x, Tensor y):
    """g*s*(1 + x*(1 - s)), s = sigmoid(x)"""
    cdef Tensor s = sigmoid(x)
    return mul(g, mul(s, add(mul(x, sub(1.0, s)), 1.0)))


cdef class SiluBackward(RuleBackward):
    """y = x*sigmoid(x)  ->  gx = silu_rule(g, x, y) = g*s*(1 + x*(1 - s)), s = sigmoid(x)"""


cpdef Tensor silu(object x):
    """x * sigmoid(x)."""
    return table_unary(x, "silu", UN_SILU, _silu_kernel, SiluBackward.__new__(SiluBackward),
                       False, silu_rule)
define_op(silu, POINTWISE, FLOAT)


# -- gelu --------------------------------------------------------------------------------------

def _gelu_kernel(arr, dtype=None):
    """x*Phi(x), Phi(x) = (1 + erf(x/sqrt(2)))/2 the standard normal CDF."""
    x = arr if dtype is None else arr.astype(dtype)
    out = _erf_kernel(np.multiply(x, INV_SQRT2))
    out += 1
    out *= x
    out *= 0.5
    return out


def _gelu_tanh_kernel(arr, dtype=None):
    """x*(1 + tanh(u))/2, u = sqrt(2/pi)*(x + 0.044715*x**3)."""
    x = arr if dtype is None else arr.astype(dtype)
    out = as_array(np.multiply(x, x))
    out *= GELU_C * GELU_K
    out += GELU_K
    out *= x
    np.tanh(out, out=out)
    out += 1
    out *= x
    out *= 0.5
    return out


cdef Tensor gelu_rule(Tensor g, Tensor x, Tensor y):
    """g*(Phi(x) + x*phi(x)), Phi the standard normal CDF, phi its density"""
    cdef Tensor cdf = mul(add(erf(mul(x, INV_SQRT2)), 1.0), 0.5)
    cdef Tensor density = mul(exp(mul(mul(x, x), -0.5)), INV_SQRT_2PI)
    return mul(g, add(cdf, mul(x, density)))


cdef Tensor gelu_tanh_rule(Tensor g, Tensor x, Tensor y):
    """g*((1 + t) + x*(1 - t*t)*du)/2, t = tanh(u), u = k*(x + c*x**3), du = k*(1 + 3*c*x*x)"""
    cdef Tensor x2 = mul(x, x)
    cdef Tensor t = tanh(mul(add(mul(x2, GELU_C), 1.0), mul(x, GELU_K)))
    cdef Tensor du = mul(add(mul(x2, 3.0 * GELU_C), 1.0), GELU_K)
    return mul(g, mul(add(add(t, 1.0), mul(mul(x, sub(1.0, mul(t, t))), du)), 0.5))


cdef class GeluBackward(RuleBackward):
    """y = x*Phi(x)  ->  gx = gelu_rule(g, x, y) = g*(Phi(x) + x*phi(x)); with approximate="tanh"
    gelu_tanh_rule"""


def gelu(input, approximate="none"):
    """x * Phi(x) (Phi the standard normal CDF); approximate="tanh" uses PyTorch's tanh form."""
    if approximate == "none":
        return table_unary(input, "gelu", UN_GELU, _gelu_kernel,
                           GeluBackward.__new__(GeluBackward), False, gelu_rule)
    if approximate == "tanh":
        return table_unary(input, "gelu", UN_GELU_TANH, _gelu_tanh_kernel,
                           GeluBackward.__new__(GeluBackward), False, gelu_tanh_rule)
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', not {approximate!r}")
define_op(gelu, POINTWISE, FLOAT)


# -- the parametrised activations --------------------------------------------------------------

ctypedef Tensor (*param_rule)(Tensor g, Tensor x, double p, double q)


cdef class ParamRuleBackward(UnaryBackward):
    """Shared apply of the parametrised activations' nodes: rule(g, x, p, q) on the saved x, or
    the table op's fused loop when nothing records (Note [Table ops])."""
    cdef param_rule rule
    cdef int table_op
    cdef double p
    cdef double q

    cdef tuple apply(self, tuple grads):
        cdef Tensor x = self.saved_x.unpack(self)
        cdef Tensor fused = table_grad(self, self.table_op, grads[0], x, self.p, self.q)
        return (self.rule(grads[0], x, self.p, self.q) if fused is None else fused,)


cdef Tensor record_param(Tensor out, Tensor a, ParamRuleBackward node, param_rule rule,
                         int table_op, double p, double q):
    """out's tangent rule(tangent of a, a, p, q) under a dual level; node (saving a; its fused
    backward table_op's) when a requires grad."""
    cdef Tensor t
    cdef long level
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            t = tangent_of(a)
            if t is not None:
                level = suspend_fw()
                try:
                    t = rule(t, a, p, q)
                finally:
                    resume_fw(level)
                set_tangent(out, t)             # stamped with the active level, so after resuming
    if not (grad_enabled() and a.requires_grad_c()):
        return out
    node.rule = rule
    node.table_op = table_op
    node.p = p
    node.q = q
    record(node, a, None)
    attach_output(out, node, 0)
    node.saved_x = save_tensor(a, node, False)
    return out


cdef double number_arg(object value, str op, str name) except? -1.0:
    """A Python number argument as a double; TypeError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{op}: {name} must be a number, not {type(value).__name__}")
    return value


cdef Tensor activation_float_operand(object x, str op):
    """x as a tensor, and a floating point one (activations are not defined on integers)."""
    cdef Tensor a = operand(x, op)
    if not is_float_dtype(descr(a.data)):
        raise TypeError(f"{op}: expected a floating point tensor, got "
                        f"{dtype_name(a.data.dtype)}; convert with .float()")
    return a


cdef Tensor softplus_rule(Tensor g, Tensor x, double beta, double threshold):
    """g*sigmoid(beta*x), and g itself where beta*x > threshold (the linear part)"""
    return where(x.data * beta > threshold, g, mul(g, sigmoid(mul(x, beta))))


cdef class SoftplusBackward(ParamRuleBackward):
    """y = log(1 + exp(beta*x))/beta (x where beta*x > threshold)  ->  gx = softplus_rule(g, x)
    = g*sigmoid(beta*x) (g on the linear part)"""


def softplus(input, beta=1, threshold=20):
    """log(1 + exp(beta*x))/beta, and x itself where beta*x > threshold (like PyTorch)."""
    cdef Tensor a = activation_float_operand(input, "softplus")
    cdef double b = number_arg(beta, "softplus", "beta"), th = number_arg(threshold, "softplus",
                                                                           "threshold")
    if b == 0:
        raise ValueError("softplus: beta must be nonzero (the result divides by beta)")
    out = table_forward(UN_SOFTPLUS, a, b, th)
    if out is None:
        bx = np.multiply(a.data, b, dtype=a.data.dtype)
        # max(bx, 0) + log1p(exp(-|bx|)): no overflow for large |bx|, no loss for very negative bx
        smooth = as_array(np.negative(np.abs(bx)))
        np.exp(smooth, out=smooth)
        np.log1p(smooth, out=smooth)
        smooth += np.maximum(bx, 0)
        smooth /= b
        out = as_array(np.where(bx > th, a.data, smooth))
    return record_param(wrap(out), a, SoftplusBackward.__new__(SoftplusBackward), softplus_rule,
                        UN_SOFTPLUS, b, th)
define_op(softplus, POINTWISE, FLOAT_ONLY)


cdef Tensor leaky_relu_rule(Tensor g, Tensor x, double slope, double unused):
    """g where x > 0, else slope*g (a selection: exactly 0 there when slope == 0)"""
    return select_grad(g, np.where(x.data > 0, 1.0, slope))


cdef class LeakyReluBackward(ParamRuleBackward):
    """y = x if x > 0 else slope*x  ->  gx = leaky_relu_rule(g, x) = g if x > 0 else slope*g"""


def leaky_relu(input, negative_slope=0.01):
    """x where x > 0, else negative_slope * x."""
    cdef Tensor a = activation_float_operand(input, "leaky_relu")
    cdef double slope = number_arg(negative_slope, "leaky_relu", "negative_slope")
    out = table_forward(UN_LEAKY_RELU, a, slope, 0.0)
    if out is None:
        out = as_array(np.where(a.data > 0, a.data,
                                np.multiply(a.data, slope, dtype=a.data.dtype)))
    return record_param(wrap(out), a, LeakyReluBackward.__new__(LeakyReluBackward),
                        leaky_relu_rule, UN_LEAKY_RELU, slope, 0.0)
define_op(leaky_relu, POINTWISE, FLOAT_ONLY)


cdef Tensor elu_rule(Tensor g, Tensor x, double alpha, double unused):
    """g where x > 0, else g*alpha*exp(x) (exp of x only where x <= 0: no overflow)"""
    cdef object positive = x.data > 0
    cdef Tensor negative_part = exp(select_grad(x, np.logical_not(positive)))
    return where(positive, g, mul(g, mul(negative_part, alpha)))


cdef class EluBackward(ParamRuleBackward):
    """y = x if x > 0 else alpha*(exp(x) - 1)  ->  gx = elu_rule(g, x) = g if x > 0 else
    g*alpha*exp(x)"""


def elu(input, alpha=1.0):
    """x where x > 0, else alpha * (exp(x) - 1)."""
    cdef Tensor a = activation_float_operand(input, "elu")
    cdef double al = number_arg(alpha, "elu", "alpha")
    out = table_forward(UN_ELU, a, al, 0.0)
    if out is None:
        negative = as_array(np.expm1(np.minimum(a.data, 0)))
        negative *= al
        out = as_array(np.where(a.data > 0, a.data, negative))
    return record_param(wrap(out), a, EluBackward.__new__(EluBackward), elu_rule, UN_ELU, al,
                        0.0)
define_op(elu, POINTWISE, FLOAT_ONLY)
