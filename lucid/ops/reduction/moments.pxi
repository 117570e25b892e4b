# Reductions made of other reductions, with PyTorch's signatures: var_mean and std_mean (a
# tuple), aminmax (a named pair), nansum and nanmean (NaN entries left out).
#
# Each is built from ops that have their rules already (var/std, mean, amin/amax, sum, where),
# so its gradient, double backward and tangent are theirs: nansum's NaN entries are selected out
# by where, so their gradient is exactly 0 (a selection, not a 0/1 mask).


# -- var_mean and std_mean ------------------------------------------------------------------------

cdef tuple moments_pair(object input, object dim, object unbiased, bint keepdim, object correction,
                        bint is_std):
    cdef str name = "std_mean" if is_std else "var_mean"
    cdef Tensor a = spread_operand(input, name)
    cdef object mean_dim = None if isinstance(dim, bool) else dim   # var_mean(x, True): unbiased
    reduction_dims(mean_dim, ndim_of(a.data), name)                # a bad argument names this op
    if not isinstance(dim, bool):
        resolved_correction(unbiased, correction, name)
    return (var_or_std(a, dim, unbiased, keepdim, correction, is_std),
            reduce_op(a, mean_dim, keepdim, True))


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var(input, dim, correction), mean(input, dim)) in one call."""
    return moments_pair(input, dim, unbiased, keepdim, correction, False)
define_op(var_mean, REDUCTION, FLOAT_ONLY, method="none")


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std(input, dim, correction), mean(input, dim)) in one call."""
    return moments_pair(input, dim, unbiased, keepdim, correction, True)
define_op(std_mean, REDUCTION, FLOAT_ONLY, method="none")


# -- aminmax --------------------------------------------------------------------------------------

class MinMaxResult(tuple):
    """(min, max) from aminmax."""
    __slots__ = ()

    def __new__(cls, min, max):
        return tuple.__new__(cls, (min, max))

    @property
    def min(self):
        return self[0]

    @property
    def max(self):
        return self[1]

    def __repr__(self):
        return f"(min={self[0]!r}, max={self[1]!r})"


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max): amin and amax of input over dim (one int, or every dim when None); ties
    share each gradient."""
    cdef Tensor a = operand(input, "aminmax")
    cdef Py_ssize_t d
    if dim is None:
        if a.data.size == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               f"operation has no identity (input shape {a.data.shape})")
    else:
        if isinstance(dim, (tuple, list)):
            raise TypeError(f"aminmax: dim must be one int or None, got {dim!r}")
        d = normalize_dim(dim, ndim_of(a.data), "aminmax")
        if ndim_of(a.data) > 0 and a.data.shape[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size (input "
                             f"shape {a.data.shape})")
        dim = d
    return MinMaxResult(extreme_op(a, dim, keepdim, False), extreme_op(a, dim, keepdim, True))
define_op(aminmax, REDUCTION, ANY)


# -- nansum and nanmean ---------------------------------------------------------------------------

cdef Tensor without_nan(Tensor a):
    """a with its NaN entries 0, selected by where (their gradient is exactly 0)."""
    if not is_float_dtype(descr(a.data)):
        return a
    cdef object nan = np.isnan(a.data)
    return where(wrap(nan), 0.0, a) if nan.any() else a


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """The sum of input's non-NaN entries over dim (all dims when None; integers and bools in
    int64); the gradient is 0 at NaN entries."""
    cdef Tensor a = operand(input, "nansum")
    if dtype is not None:
        a = cast(a, as_supported_dtype(dtype, "nansum"))
    cdef tuple dims = reduction_dims(dim, ndim_of(a.data), "nansum")
    return reduce_op(without_nan(a), dims, keepdim, False)
define_op(nansum, REDUCTION, ANY)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean of input's non-NaN entries over dim (NaN where all are NaN); the gradient is 0
    at NaN entries."""
    cdef Tensor a = float_operand(input, dtype, "nanmean")
    cdef tuple dims = reduction_dims(dim, ndim_of(a.data), "nanmean")
    cdef bint keep = keepdim
    cdef object count = np.sum(np.logical_not(np.isnan(a.data)), axis=dims, keepdims=keep)
    with np.errstate(divide="ignore", invalid="ignore"):
        return div(reduce_op(without_nan(a), dims, keep, False),
                   wrap(as_array(count).astype(a.data.dtype)))
define_op(nanmean, REDUCTION, FLOAT_ONLY)
