# Reductions: sum and mean over all, one or several dimensions.

cdef tuple ALL_DIMS = tuple([tuple(range(n)) for n in range(33)])   # (0, ..., n-1) per n <= 32


cdef tuple reduction_dims(object dim, Py_ssize_t ndim, str op):
    """dim (None, int or sequence of ints) as a sorted tuple of distinct non-negative dims."""
    if dim is None:
        return <tuple>ALL_DIMS[ndim] if ndim <= 32 else tuple(range(ndim))
    if isinstance(dim, (tuple, list)):
        dims = sorted({normalize_dim(d, ndim, op) for d in dim})
        if len(dims) != len(dim):
            raise RuntimeError(f"{op}: dim {tuple(dim)} names a dimension more than once")
        return tuple(dims) if ndim > 0 else ()
    d = normalize_dim(dim, ndim, op)
    return (d,) if ndim > 0 else ()


cdef class SumBackward(Node):
    """y = sum(x, dims)  ->  gx = expand(g, x.shape)"""
    cdef tuple in_shape
    cdef tuple dims
    cdef bint keepdim

    cdef tuple apply(self, tuple grads):
        return (spread_reduced(grads[0], self.in_shape, self.dims, self.keepdim, 1.0),)


cdef class MeanBackward(SumBackward):
    """y = mean(x, dims)  ->  gx = expand(g, x.shape) / n"""
    cdef double count

    cdef tuple apply(self, tuple grads):
        return (spread_reduced(grads[0], self.in_shape, self.dims, self.keepdim, 1.0 / self.count),)


cdef Tensor spread_reduced(Tensor g, tuple in_shape, tuple dims, bint keepdim, double scale):
    """scale * expand_reduced(g): a fresh filled array when g is one value and nothing records."""
    if not grad_enabled() and not fw_active() and cnp.PyArray_SIZE(<cnp.ndarray>g.data) == 1 \
            and is_fast(g.data) and len(in_shape) <= 32:
        return wrap(fast_fill(in_shape, g.data, scale))
    g = expand_reduced(g, in_shape, dims, keepdim)
    return g if scale == 1.0 else mul(g, scale)


cdef Tensor expand_reduced(Tensor g, tuple in_shape, tuple dims, bint keepdim):
    """A reduction's gradient g broadcast back over the reduced dims of in_shape."""
    cdef list kept
    if not keepdim and dims:
        kept = list(in_shape)
        for d in dims:
            kept[d] = 1
        g = reshape(g, tuple(kept))
    return expand_to(g, in_shape)


cdef tuple reduced_shape(tuple shape, tuple dims, bint keepdim):
    """shape with dims kept as 1 (keepdim) or dropped."""
    if keepdim:
        return tuple([1 if i in dims else shape[i] for i in range(len(shape))])
    return tuple([shape[i] for i in range(len(shape)) if i not in dims])


cdef Py_ssize_t reduced_count(tuple shape, tuple dims):
    """How many entries of x each output of a reduction over dims combines."""
    cdef Py_ssize_t n = 1
    for d in dims:
        n *= shape[d]
    return n


cdef Tensor reduce_op(Tensor a, object dim, bint keepdim, bint is_mean):
    cdef tuple dims = reduction_dims(dim, ndim_of(a.data), "mean" if is_mean else "sum")
    cdef cnp.dtype dt = descr(a.data)
    cdef object out_dtype = None if is_float_dtype(dt) or dt.kind == b'c' else int64   # integers
                                         # and bools sum to int64
    cdef object arr
    if is_mean and not is_differentiable_dtype(dt):
        raise RuntimeError(f"mean: input dtype {dtype_name(dt)} is not floating point; "
                           "convert with .float() first")
    cdef Py_ssize_t n = cnp.PyArray_SIZE(<cnp.ndarray>a.data)
    if dim is None and is_fast(a.data) and n > 0 and ndim_of(a.data) <= 32:
        arr = fast_sum_all(a.data, keepdim, 1.0 / n if is_mean else 1.0)
    elif fast_block_ok(a.data, dims):
        arr = fast_reduce_block(a.data, dims, reduced_shape(a.data.shape, dims, keepdim), R_SUM,
                                1.0 / reduced_count(a.data.shape, dims) if is_mean else 1.0)
    elif is_mean and n == 0:                 # the mean of nothing is NaN, without NumPy's warning
        arr = np.full(np.sum(a.data, axis=dims, keepdims=keepdim).shape, np.nan, dtype=dt)
    elif is_mean:
        arr = np.mean(a.data, axis=dims, keepdims=keepdim)
    else:
        arr = np.sum(a.data, axis=dims, keepdims=keepdim, dtype=out_dtype)
    cdef Tensor out = wrap(as_array(arr))
    cdef SumBackward node
    if fw_active():                      # linear: the same reduction of the tangent
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(a, mean if is_mean else sum, (dims, keepdim)))
    if grad_enabled() and a.requires_grad_c():
        if is_mean:
            node = MeanBackward.__new__(MeanBackward)
            (<MeanBackward>node).count = reduced_count(a.data.shape, dims)
        else:
            node = SumBackward.__new__(SumBackward)
        record(node, a, None)
        node.in_shape = a.data.shape
        node.dims = dims
        node.keepdim = keepdim
        attach_output(out, node, 0)
    return out


def sum(input, dim=None, keepdim=False):
    """Sum of input over dim (all dims when None)."""
    return reduce_op(operand(input, "sum"), dim, keepdim, False)
define_op(sum, REDUCTION, ANY)


def mean(input, dim=None, keepdim=False):
    """Mean of input over dim (all dims when None)."""
    return reduce_op(operand(input, "mean"), dim, keepdim, True)
define_op(mean, REDUCTION, FLOAT_ONLY)


cdef class AmaxBackward(Node):
    """y = amax(x, dims)  ->  gx = expand(g)*w, w = [x == y]/count(x == y) (ties share
    equally: extreme_weight); its jvp is dz = sum(tx*w, dims) (extreme_jvp).

    A NaN extreme is matched by the NaNs that made it; unpicked places get exactly 0 (Note
    [Mask by selection]). The weight is made from the saved x when backward runs: an extreme
    whose result is detached (the max-shift of a log-sum-exp) costs no more than the max."""
    # its fields (x, dims, keepdim) are in _core_internal.pxi: lucid._ops subclasses it

    cdef void release_saved(self):
        self.x = None

    cdef tuple apply(self, tuple grads):
        if self.x is None:
            raise_freed_graph(self)
        cdef Tensor x = self.x.unpack(self)
        cdef object kept = extreme_values(x, self.dims, type(self) is AmaxBackward)
        return (select_grad(expand_reduced(grads[0], x.data.shape, self.dims, self.keepdim),
                            extreme_weight(x, kept, self.dims)),)


cdef class AminBackward(AmaxBackward):
    """y = amin(x, dims)  ->  gx = expand(g)*[x == y]/count(x == y)  (ties share equally)"""


cdef object extreme_values(Tensor a, tuple dims, bint is_max):
    """The max (or min) of a over dims, the dims kept as 1 (NaN wins, as in NumPy)."""
    if fast_block_ok(a.data, dims):
        return fast_reduce_block(a.data, dims, reduced_shape(a.data.shape, dims, True),
                                 R_MAX if is_max else R_MIN, 1.0)
    return (np.max if is_max else np.min)(a.data, axis=dims, keepdims=True)


cdef object extreme_weight(Tensor a, object kept, tuple dims):
    """Each element's share of an extreme over dims: 1/count where it is the extreme (a NaN
    extreme is matched by the NaNs that made it), else 0; the backward's and the jvp's weight."""
    cdef object hit = as_array(a.data == kept)
    if is_float_dtype(descr(a.data)):
        hit |= np.isnan(a.data) & np.isnan(kept)
    hit = hit.astype(a.data.dtype)
    return as_array(hit / np.sum(hit, axis=dims, keepdims=True))


cdef Tensor extreme_jvp(Tensor t, object weight, tuple dims, bint keepdim):
    """dz = sum(select_grad(tx, w), dims): the tangents of the extremes, ties averaged."""
    return sum(select_grad(t, weight), dims, keepdim)


cdef Tensor extreme_op(Tensor a, object dim, bint keepdim, bint is_max):
    cdef str name = "amax" if is_max else "amin"
    cdef tuple dims = reduction_dims(dim, ndim_of(a.data), name)
    if dim is None and a.data.size == 0:
        raise RuntimeError(f"{name}: the tensor of shape {a.data.shape} has no elements; "
                           "pass dim= to reduce over a dim of non-zero size")
    for d in dims:
        if a.data.shape[d] == 0:
            raise IndexError(f"{name}: dim {d} of the tensor of shape {a.data.shape} has size 0, "
                             "so it has no extreme value; reduce over a dim of non-zero size")
    cdef object kept = extreme_values(a, dims, is_max)
    cdef Tensor out = wrap(as_array(kept if keepdim else kept.reshape(
        tuple(s for i, s in enumerate(a.data.shape) if i not in dims))))
    cdef AmaxBackward node
    cdef Tensor ta
    cdef long level
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            ta = tangent_of(a)
            if ta is not None:
                level = suspend_fw()
                try:
                    ta = extreme_jvp(ta, extreme_weight(a, kept, dims), dims, keepdim)
                finally:
                    resume_fw(level)
                set_tangent(out, ta)
    if grad_enabled() and a.requires_grad_c():
        node = AmaxBackward.__new__(AmaxBackward) if is_max else AminBackward.__new__(AminBackward)
        record(node, a, None)
        node.x = save_tensor(a, node, False)
        node.dims = dims
        node.keepdim = keepdim
        attach_output(out, node, 0)
    return out


def amax(input, dim=None, keepdim=False):
    """Largest value of input over dim (all dims when None); ties share the gradient."""
    return extreme_op(operand(input, "amax"), dim, keepdim, True)
define_op(amax, REDUCTION, ANY)


def amin(input, dim=None, keepdim=False):
    """Smallest value of input over dim (all dims when None); ties share the gradient."""
    return extreme_op(operand(input, "amin"), dim, keepdim, False)
define_op(amin, REDUCTION, ANY)


class ReductionResult(tuple):
    """(values, indices) from max/min over a dim."""
    __slots__ = ()

    def __new__(cls, values, indices):
        return tuple.__new__(cls, (values, indices))

    @property
    def values(self):
        return self[0]

    @property
    def indices(self):
        return self[1]

    def __repr__(self):
        return f"(values={self[0]!r}, indices={self[1]!r})"


cdef object max_or_min(object input, object dim, bint keepdim, bint is_max):
    cdef Tensor a = operand(input, "max" if is_max else "min")
    if dim is None:
        return extreme_op(a, None, False, is_max)
    if isinstance(dim, (tuple, list)):
        raise TypeError(f"{'max' if is_max else 'min'}: dim must be one int; use "
                        f"{'amax' if is_max else 'amin'} for several dims")
    cdef Py_ssize_t d = normalize_dim(dim, ndim_of(a.data), "max" if is_max else "min")
    values = extreme_op(a, d, keepdim, is_max)
    if ndim_of(a.data) == 0:
        idx = np.zeros((), dtype=np.int64)
    else:
        idx = (np.argmax if is_max else np.argmin)(a.data, axis=d, keepdims=keepdim)
    return ReductionResult(values, wrap(as_array(idx).astype(np.int64, copy=False)))


def reduce_max(input, dim=None, keepdim=False):
    """max(x): the largest value (0-d); max(x, dim): (values, indices) along dim."""
    return max_or_min(input, dim, keepdim, True)
define_op(reduce_max, REDUCTION, ANY, name="max")


def reduce_min(input, dim=None, keepdim=False):
    """min(x): the smallest value (0-d); min(x, dim): (values, indices) along dim."""
    return max_or_min(input, dim, keepdim, False)
define_op(reduce_min, REDUCTION, ANY, name="min")
