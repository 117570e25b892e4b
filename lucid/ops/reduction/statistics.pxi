# Statistical reductions with PyTorch's signatures: prod, var, std, norm and logsumexp (with
# gradients), argmax, argmin, all and any (without).
#
# Note [Spread rules]: a reduction z = f(x over dims) has a Jacobian of one row per output, and
# each of these reductions states it once as a rule, rule(g, x, z, dims, param) = g * dz/dx,
# with g shaped like x and z with the reduced dims kept. The backward calls it with the
# output's gradient spread back over the reduced dims (expand_reduced); the jvp calls it with
# the input's tangent and sums over the dims: dz = sum(dz/dx * t). The rules are written with
# differentiable ops, so create_graph records them.

ctypedef Tensor (*spread_rule)(Tensor g, Tensor x, Tensor z, tuple dims, object param)


cdef class SpreadBackward(Node):
    """Shared fields of the reductions of Note [Spread rules]: the rule, what it reads (x, and
    z when save_z) and how the output was reduced."""
    cdef spread_rule rule
    cdef SavedTensor saved_x
    cdef SavedTensor saved_z
    cdef tuple in_shape
    cdef tuple dims
    cdef bint keepdim
    cdef object param

    cdef void release_saved(self):
        self.saved_x = None
        self.saved_z = None

    cdef tuple apply(self, tuple grads):
        cdef Tensor z = None, x = self.saved_x.unpack(self)
        if self.saved_z is not None:
            z = kept_dims(self.saved_z.unpack(self), self.in_shape, self.dims, self.keepdim)
            if descr(z.data).kind == b'c':          # a holomorphic spread (prod): the real
                x, z = conj(x), conj(z)             # rule conjugated (Note [Complex gradients])
        return (self.rule(expand_reduced(grads[0], self.in_shape, self.dims, self.keepdim),
                          x, z, self.dims, self.param),)


cdef Tensor kept_dims(Tensor z, tuple in_shape, tuple dims, bint keepdim):
    """A reduction's output z with its reduced dims present (size 1), to broadcast against x."""
    if keepdim or not dims:
        return z
    cdef list kept = list(in_shape)
    for d in dims:
        kept[d] = 1
    return reshape(z, tuple(kept))


cdef Tensor spread_jvp(spread_rule rule, Tensor a, Tensor out, tuple dims, bint keepdim,
                       object param):
    """Note [Spread rules]: out's tangent, sum(rule(t, a, out) over dims), or None."""
    cdef Tensor t = tangent_of(a)
    if t is None:
        return None
    cdef long level = suspend_fw()
    cdef bint real_of_complex = descr(a.data).kind == b'c' and descr(out.data).kind != b'c'
    cdef Tensor tangent
    try:                                 # a real spread of complex x (var, std): its tangent is
        tangent = reduce_op(rule(t, conj(a) if real_of_complex else a,   # re(rule(t, conj(x)))
                                 kept_dims(out, a.data.shape, dims, keepdim), dims, param),
                            dims, keepdim, False)
        return fit_tangent(real_part(tangent) if real_of_complex else tangent, out)
    finally:
        resume_fw(level)


cdef Tensor record_spread(Tensor out, Tensor a, type node_type, spread_rule rule, tuple dims,
                          bint keepdim, object param, bint save_z):
    """out's tangent when a dual level is active; a node of node_type on out when a requires
    grad. The node is attached before the tangent is made, so the tangent's formula reaches x
    through out (reverse-over-forward), and saved after, so a saved out keeps its tangent."""
    cdef bint recorded = grad_enabled() and a.requires_grad_c()
    cdef SpreadBackward node = None
    if recorded:
        node = node_type.__new__(node_type)
        record(node, a, None)
        attach_output(out, node, 0)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, spread_jvp(rule, a, out, dims, keepdim, param))
    if recorded:
        node.rule = rule
        node.in_shape = a.data.shape
        node.dims = dims
        node.keepdim = keepdim
        node.param = param
        node.saved_x = save_tensor(a, node, False)
        if save_z:
            node.saved_z = save_tensor(out, node, True)
    return out


cdef Tensor float_operand(object input, object dtype, str name):
    """input as a floating point tensor (cast to dtype when given); RuntimeError otherwise."""
    cdef Tensor a = operand(input, name)
    if dtype is not None:
        a = cast(a, as_supported_dtype(dtype, name))
    if not is_float_dtype(descr(a.data)):
        raise RuntimeError(f"{name}: input dtype {dtype_name(a.data.dtype)} is not floating "
                           "point; convert with .float() first (or pass dtype=)")
    return a


cdef Tensor spread_operand(object input, str name):
    """input as a float or complex tensor (var, std: a complex input has a real spread)."""
    cdef Tensor a = operand(input, name)
    if descr(a.data).kind == b'c':
        return a
    return float_operand(a, None, name)


cdef Tensor div_where_nonzero(Tensor g, Tensor d, double q=1.0):
    """g/d**q, exactly 0 where d == 0 (a norm's or std's gradient at 0, as in PyTorch)."""
    cdef object nonzero = d.data != 0
    if not nonzero.all():
        d = where(wrap(np.logical_not(nonzero)), 1.0, d)
    cdef Tensor out = div(g, d if q == 1.0 else pow(d, q))
    return out if nonzero.all() else select_grad(out, nonzero)


# -- prod -----------------------------------------------------------------------------------------

cdef class ProdBackward(SpreadBackward):
    """z = prod(x, dims)  ->  gx = prod_rule = g*z/x, or g*prod_{j!=i} x_j when x holds zeros"""


cdef Tensor prod_rule(Tensor g, Tensor x, Tensor z, tuple dims, object param):
    """g*z/x without zeros; else g times the product of the other entries (no mask: where
    another entry is 0 that product is 0, but its derivative is not, as double backward needs)"""
    if not dims or not (x.data == 0).any():
        return mul(g, div(z, x)) if dims else g
    return mul(g, product_of_others(x, dims))


cdef Tensor product_of_others(Tensor x, tuple dims):
    """prod_{j != i} x_j over the reduced dims: the running products from both ends, exclusive
    of i, multiplied (no division, so exact with zeros, and differentiable through cumprod)."""
    cdef Py_ssize_t nd = ndim_of(x.data)
    cdef tuple kept = tuple(i for i in range(nd) if i not in dims)
    cdef tuple perm = kept + dims
    cdef Tensor moved = permute(x, perm)
    cdef tuple lead = moved.data.shape[:len(kept)]
    cdef Py_ssize_t last = len(kept)
    cdef Tensor flat = reshape(moved, lead + (reduced_count(x.data.shape, dims),))
    cdef Tensor others = mul(exclusive_cumprod(flat),
                             flip_along(exclusive_cumprod(flip_along(flat, last)), last))
    return permute(reshape(others, moved.data.shape), tuple(int(i) for i in np.argsort(perm)))


cdef Tensor exclusive_cumprod(Tensor t):
    """prod_{j < i} t_j along t's last dim (1 at i == 0)."""
    cdef Py_ssize_t last = ndim_of(t.data) - 1
    cdef Tensor one = wrap(np.ones(t.data.shape[:last] + (1,), dtype=t.data.dtype))
    return cat([one, getitem(cumprod_op(t, last), (Ellipsis, slice(None, -1)))], last)


def prod(input, dim=None, keepdim=False, *, dtype=None):
    """The product of input over dim (all dims when None; integers and bools in int64)."""
    cdef Tensor a = accumulating_operand(input, dtype, "prod")
    cdef tuple dims = reduction_dims(dim, ndim_of(a.data), "prod")
    cdef bint keep = keepdim
    cdef Tensor out = wrap(as_array(np.prod(a.data, axis=dims, keepdims=keep)))
    if not is_differentiable_dtype(descr(a.data)):
        return out
    return record_spread(out, a, ProdBackward, prod_rule, dims, keep, None, True)
define_op(prod, REDUCTION, ANY)


# -- var and std ------------------------------------------------------------------------------------

cdef class VarBackward(SpreadBackward):
    """z = var(x, dims, correction)  ->  gx = var_rule = g*2*(x - mean(x))/(n - correction)"""


cdef class StdBackward(SpreadBackward):
    """z = std(x, dims, correction)  ->  gx = std_rule = g*(x - mean(x))/((n - correction)*z),
    exactly 0 where z == 0"""


cdef Tensor var_rule(Tensor g, Tensor x, Tensor z, tuple dims, object correction):
    """g*2*(x - mean(x over dims))/(n - correction)"""
    cdef double dof = reduced_count(x.data.shape, dims) - <double>correction
    cdef double scale = 2.0 / dof if dof > 0 else np.inf
    return mul(mul(g, sub(x, reduce_op(x, dims, True, True))), scale)


cdef Tensor std_rule(Tensor g, Tensor x, Tensor z, tuple dims, object correction):
    """var_rule(g/(2*z)), exactly 0 where z == 0 (as in PyTorch)"""
    return var_rule(div_where_nonzero(g, mul(z, 2.0)), x, None, dims, correction)


cdef double resolved_correction(object unbiased, object correction, str name) except? -1:
    """PyTorch's correction: given, or 1/0 from unbiased, or 1."""
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{name}: pass only one of unbiased and correction")
    if correction is not None:
        if isinstance(correction, bool) or not isinstance(correction, (int, float)):
            raise TypeError(f"{name}: correction must be a number, got "
                            f"{type(correction).__name__}")
        return correction
    if unbiased is not None:
        return 1.0 if unbiased else 0.0
    return 1.0


cdef Tensor var_or_std(object input, object dim, object unbiased, bint keepdim,
                       object correction, bint is_std):
    cdef str name = "std" if is_std else "var"
    cdef Tensor a = spread_operand(input, name)
    if isinstance(dim, bool):             # var(x, True): the unbiased flag in dim's place
        if unbiased is not None:
            raise TypeError(f"{name}: dim must be an int or a tuple of ints, not bool")
        unbiased, dim = dim, None
    cdef double c = resolved_correction(unbiased, correction, name)
    cdef tuple dims = reduction_dims(dim, ndim_of(a.data), name)
    cdef double dof = reduced_count(a.data.shape, dims) - c
    cdef object arr
    with np.errstate(divide="ignore", invalid="ignore"):
        dev = a.data - np.mean(a.data, axis=dims, keepdims=True)
        arr = np.sum(dev * dev if not np.iscomplexobj(dev) else (dev * np.conj(dev)).real,
                     axis=dims, keepdims=keepdim) / (dof if dof > 0 else 0.0)
        if a.data.size:                  # equal values: exactly 0 (their mean is off by an ulp,
            arr = np.where(np.ptp(a.data, axis=dims, keepdims=keepdim) == 0, 0.0 * arr, arr)
        if is_std:                       # and std's gradient would divide by that ulp)
            arr = np.sqrt(arr)
    cdef Tensor out = wrap(as_array(arr).astype(a.data.real.dtype, copy=False))
    if is_std:
        return record_spread(out, a, StdBackward, std_rule, dims, keepdim, c, True)
    return record_spread(out, a, VarBackward, var_rule, dims, keepdim, c, False)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """sum((x - mean(x))**2)/(n - correction) over dim (all dims when None; correction 1)."""
    return var_or_std(input, dim, unbiased, keepdim, correction, False)
define_op(var, REDUCTION, FLOAT_ONLY)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """sqrt(var(input, dim, correction)); its gradient is 0 where it is 0."""
    return var_or_std(input, dim, unbiased, keepdim, correction, True)
define_op(std, REDUCTION, FLOAT_ONLY)


# -- norm -------------------------------------------------------------------------------------------

cdef class NormBackward(SpreadBackward):
    """z = ||x||_p over dims  ->  gx = norm_rule = g*sign(x)*|x|^(p-1)/z^(p-1) (p = 1, 2, inf,
    -inf, 0 and others), exactly 0 where z == 0"""


cdef Tensor norm_rule(Tensor g, Tensor x, Tensor z, tuple dims, object p):
    """p=2: g*x/z; p=1: g*sign(x); p=+-inf: g*sign(x) shared among the extreme |x|; p=0: 0;
    else g*sign(x)*|x|^(p-1)/z^(p-1); exactly 0 where z == 0, and at x == 0 for p < 1"""
    cdef double q = p
    if q == 2.0:
        return mul(div_where_nonzero(g, z), x)
    if descr(x.data).kind == b'c':
        return complex_norm_rule(g, x, z, dims, q)
    if q == 1.0:
        return select_grad(g, np.sign(x.data))
    if q == 0.0:
        return zero_grad_like(g)
    if q == np.inf or q == -np.inf:
        return select_grad(g, extreme_shares(x, z, dims))
    return mul(div_where_nonzero(g, z, q - 1.0), signed_power(x, q - 1.0))


cdef Tensor complex_norm_rule(Tensor g, Tensor x, Tensor z, tuple dims, double q):
    """norm_rule for complex x (Note [Complex gradients]): sgn(x) = x/|x| takes sign(x)'s place,
    made of ops, since unlike a real sign its derivative is not 0."""
    if q == 0.0:
        return mul(zero_grad_like(g), x)
    if q == np.inf or q == -np.inf:
        return mul(select_grad(g, extreme_shares(x, z, dims)), phase_power(x, 0.0))
    if q == 1.0:
        return mul(g, phase_power(x, 0.0))
    return mul(div_where_nonzero(g, z, q - 1.0), phase_power(x, q - 1.0))


cdef Tensor phase_power(Tensor x, double q):
    """sgn(x)*|x|**q = x*|x|**(q-1) for complex x, exactly 0 at x == 0 (also when q < 0)."""
    cdef object zero = x.data == 0
    cdef bint any_zero = zero.any()
    cdef Tensor safe = where(wrap(zero), 1.0, x) if any_zero else x
    cdef Tensor r = abs(safe)
    cdef Tensor out = div(safe, r) if q == 0.0 else mul(div(safe, r), pow(r, q))
    return select_grad(out, ~zero) if any_zero else out


cdef object extreme_shares(Tensor x, Tensor z, tuple dims):
    """sign(x) where |x| is the slice's extreme z, shared equally among ties; else 0 (for a
    complex x, 1 in sign(x)'s place: complex_norm_rule multiplies by sgn(x))."""
    cdef object hit = np.abs(x.data) == z.data
    cdef object sign = 1.0 if descr(x.data).kind == b'c' else np.sign(x.data)   # complex: apart
    with np.errstate(invalid="ignore", divide="ignore"):
        return sign * hit / np.sum(hit, axis=dims, keepdims=True)


cdef Tensor signed_power(Tensor x, double q):
    """sign(x)*|x|**q, exactly 0 at x == 0 (also when q < 0)."""
    cdef object zero = x.data == 0
    cdef Tensor base = abs(where(wrap(zero), 1.0, x) if zero.any() else x)
    return select_grad(pow(base, q), np.sign(x.data))


cdef double norm_order(object p) except? -1:
    """p as a number: "fro" and None are 2; other strings are not vector norms."""
    if p is None or (isinstance(p, str) and p == "fro"):
        return 2.0
    if isinstance(p, str) or isinstance(p, bool) or not isinstance(p, (int, float, np.number)):
        raise ValueError(f"norm: p={p!r} is not supported; use a number, inf, -inf or 'fro' "
                         "(matrix norms such as 'nuc' are not vector norms)")
    return float(p)


cdef object norm_values(object x, double p, tuple dims, bint keepdim):
    """||x||_p over dims, in x's dtype (its real counterpart for a complex x)."""
    cdef object ax = np.abs(x)
    if p == np.inf:
        return np.max(ax, axis=dims, keepdims=keepdim)
    if p == -np.inf:
        return np.min(ax, axis=dims, keepdims=keepdim)
    if p == 0.0:
        return np.sum(x != 0, axis=dims, keepdims=keepdim, dtype=ax.dtype)
    if p == 1.0:
        return np.sum(ax, axis=dims, keepdims=keepdim)
    if p == 2.0:
        return np.sqrt(np.sum(x * x if ax.dtype == x.dtype else ax * ax, axis=dims,
                              keepdims=keepdim))
    return np.power(np.sum(ax ** p, axis=dims, keepdims=keepdim), 1.0 / p)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """The vector p-norm (sum |x|**p)**(1/p) over dim (all dims when None), real for a complex
    input; its gradient is 0 where it is 0."""
    cdef double q = norm_order(p)
    cdef Tensor a = spread_operand(input, "norm") if dtype is None else float_operand(input,
                                                                                    dtype, "norm")
    cdef tuple dims = reduction_dims(dim, ndim_of(a.data), "norm")
    if q == np.inf or q == -np.inf:
        for d in dims:
            if a.data.shape[d] == 0:
                raise IndexError(f"norm: p={p} over dim {d} of the tensor of shape "
                                 f"{a.data.shape}, which has size 0, has no value; reduce over "
                                 "a dim of non-zero size")
    with np.errstate(divide="ignore", over="ignore"):
        arr = as_array(norm_values(a.data, q, dims, keepdim)).astype(a.data.real.dtype,
                                                                     copy=False)
    return record_spread(wrap(arr), a, NormBackward, norm_rule, dims, keepdim, q,
                         q != 1.0 and q != 0.0)
define_op(norm, REDUCTION, FLOAT_ONLY)


# -- logsumexp --------------------------------------------------------------------------------------

cdef class LogsumexpBackward(SpreadBackward):
    """z = log(sum(exp(x), dims))  ->  gx = logsumexp_rule = g*exp(x - z)"""


cdef Tensor logsumexp_rule(Tensor g, Tensor x, Tensor z, tuple dims, object param):
    """g*exp(x - z) (the softmax of x over dims)"""
    return mul(g, exp(sub(x, z)))


cdef object stable_shift(object x, tuple dims):
    """The largest entry of x over dims (kept; of its real part for a complex x), or 0 where
    that is not finite: subtracted before exponentials so they cannot overflow."""
    cdef object top = np.max(x.real, axis=dims, keepdims=True, initial=-np.inf)
    return np.where(np.isfinite(top), top, 0).astype(x.real.dtype, copy=False)


def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(input))) over dim, computed without overflow (integers give the default float
    dtype; a complex input the principal log, holomorphic)."""
    cdef Tensor a = operand(input, "logsumexp")
    if not is_differentiable_dtype(descr(a.data)):
        a = cast(a, default_float_dtype())
    cdef tuple dims = reduction_dims(dim, ndim_of(a.data), "logsumexp")
    cdef object shift = stable_shift(a.data, dims)
    with np.errstate(divide="ignore"):
        arr = np.log(np.sum(np.exp(a.data - shift), axis=dims, keepdims=True)) + shift
    if not keepdim:
        arr = arr.reshape(tuple(s for i, s in enumerate(a.data.shape) if i not in dims))
    return record_spread(wrap(as_array(arr)), a, LogsumexpBackward, logsumexp_rule, dims,
                         keepdim, None, True)
define_op(logsumexp, REDUCTION, FLOAT)


# -- argmax, argmin, all, any: no gradient ---------------------------------------------------------

cdef Tensor arg_extreme(object input, object dim, bint keepdim, bint is_max):
    cdef str name = "argmax" if is_max else "argmin"
    cdef Tensor a = operand(input, name)
    cdef Py_ssize_t nd = ndim_of(a.data), d
    cdef object find = np.argmax if is_max else np.argmin
    cdef object arr
    if isinstance(dim, (tuple, list)):
        raise TypeError(f"{name}: dim must be one int or None, got {dim!r}")
    if dim is None:
        if a.data.size == 0:
            raise RuntimeError(f"{name}: the tensor of shape {a.data.shape} has no elements; "
                               "pass dim= to reduce over a dim of non-zero size")
        arr = np.asarray(find(a.data.reshape(-1)), dtype=int64)
        if keepdim:
            arr = arr.reshape((1,) * nd)
        return wrap(arr)
    d = normalize_dim(dim, nd, name)
    if nd == 0:
        return wrap(np.zeros((), dtype=int64))
    if a.data.shape[d] == 0:
        raise IndexError(f"{name}: dim {d} of the tensor of shape {a.data.shape} has size 0; "
                         "reduce over a dim of non-zero size")
    return wrap(as_array(find(a.data, axis=d, keepdims=keepdim)).astype(int64, copy=False))


def argmax(input, dim=None, keepdim=False):
    """The index of the largest entry (the first of ties; NaN counts as largest) along dim, or
    in the flattened input when dim is None; int64, no gradient."""
    return arg_extreme(input, dim, keepdim, True)
define_op(argmax, REDUCTION, ANY)


def argmin(input, dim=None, keepdim=False):
    """The index of the smallest entry (the first of ties; NaN counts as smallest) along dim,
    or in the flattened input when dim is None; int64, no gradient."""
    return arg_extreme(input, dim, keepdim, False)
define_op(argmin, REDUCTION, ANY)


cdef Tensor truth_reduction(object input, object dim, bint keepdim, bint is_all):
    cdef Tensor a = operand(input, "all" if is_all else "any")
    cdef tuple dims = reduction_dims(dim, ndim_of(a.data), "all" if is_all else "any")
    return wrap(as_array((np.all if is_all else np.any)(a.data, axis=dims, keepdims=keepdim)))


def reduce_all(input, dim=None, keepdim=False):
    """Whether every entry of input over dim is non-zero (bool, no gradient)."""
    return truth_reduction(input, dim, keepdim, True)
define_op(reduce_all, REDUCTION, ANY, name="all")


def reduce_any(input, dim=None, keepdim=False):
    """Whether some entry of input over dim is non-zero (bool, no gradient)."""
    return truth_reduction(input, dim, keepdim, False)
define_op(reduce_any, REDUCTION, ANY, name="any")
