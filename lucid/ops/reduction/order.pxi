# Order statistics with PyTorch's signatures: sort, argsort, topk, kthvalue, median, nanmedian,
# quantile and nanquantile.
#
# Each picks entries of x at positions found by a stable sort (NaN sorts as the largest value,
# as in PyTorch), so each value is y = x[key] (Note [Ops as keys], ops/shape/gather.pxi): take_at
# gives the backward (g scattered to the picked places, repeated places adding up), its double
# backward and the jvp (the same key on the tangent). Ties keep their input order, so the place a
# gradient reaches is the one whose index is returned. quantile's linear and midpoint forms are
# lerp(lower, upper, w) of two such picks, so their gradient splits as (1 - w, w). median and
# nanmedian over every dim share the gradient among the entries equal to the result, as PyTorch
# does (extreme_weight, ops/reduction/reduce.pxi).


cdef object stable_order(object arr, Py_ssize_t d, bint descending):
    """The positions that sort arr along d stably: ascending with NaN last, or descending with
    NaN first (ties keep their input order either way)."""
    if not descending:
        return np.argsort(arr, axis=d, kind="stable")
    cdef Py_ssize_t n = arr.shape[d]
    return (n - 1) - np.flip(np.argsort(np.flip(arr, axis=d), axis=d, kind="stable"), axis=d)


cdef tuple reducing_key(object pos, Py_ssize_t d, tuple shape, bint keepdim):
    """The key picking x (of shape) at positions pos along d: pos is shaped like x with d of
    size 1, after leading dims of its own (quantile's q); d is kept (size 1) or dropped."""
    cdef Py_ssize_t lead = pos.ndim - len(shape), j = lead, e
    if not keepdim:
        pos = np.squeeze(pos, axis=lead + d)
    cdef Py_ssize_t out_nd = pos.ndim
    cdef list key = []
    for e in range(len(shape)):
        if e == d:
            key.append(pos)
            if keepdim:
                j += 1
        else:
            key.append(np.arange(shape[e], dtype=np.intp).reshape(
                tuple([shape[e] if k == j else 1 for k in range(out_nd)])))
            j += 1
    return tuple(key)


cdef Tensor as_vector(Tensor a):
    """a, or a 0-d a as one entry (an op along a dim treats a 0-d tensor as a 1-d one)."""
    return reshape(a, (1,)) if ndim_of(a.data) == 0 else a


cdef object picked(Tensor a, object idx, Py_ssize_t d, type node_type, bint scalar):
    """(a's entries at positions idx along d, idx as int64), both 0-d when scalar."""
    cdef Tensor values = take_at(a, key_along(idx, d, idx.shape), node_type, False)
    if scalar:
        return ReductionResult(reshape(values, ()), wrap(idx.reshape(()).astype(int64)))
    return ReductionResult(values, wrap(idx.astype(int64)))


cdef object picked_reducing(Tensor a, object pos, Py_ssize_t d, bint keepdim, type node_type,
                            bint scalar):
    """(a's entries at positions pos (d of size 1) along d, pos as int64), d kept or dropped."""
    cdef Tensor values = take_at(a, reducing_key(pos, d, a.data.shape, keepdim), node_type, False)
    cdef object idx = pos if keepdim else np.squeeze(pos, axis=d)
    if scalar:
        return ReductionResult(reshape(values, ()), wrap(idx.reshape(()).astype(int64)))
    return ReductionResult(values, wrap(idx.astype(int64)))


cdef Py_ssize_t order_k(object k, Py_ssize_t low, Py_ssize_t n, str name, Py_ssize_t d) except? -1:
    """k as an int in [low, n]; RuntimeError naming the op and k otherwise."""
    cdef Py_ssize_t kk = int_arg(k, name, "k")
    if kk < low or kk > n:
        raise RuntimeError(f"{name}: k={kk} is out of range for dim {d} of size {n} (selected "
                           f"{'index' if low == 0 else 'number'} k out of range); k must be in "
                           f"[{low}, {n}]")
    return kk


# -- sort and argsort -----------------------------------------------------------------------------

cdef class SortBackward(IndexBackward):
    """y = sort(x, d) = x[key]  ->  gx = index_backward(g, x.shape, key)"""


def sort(input, dim=-1, descending=False, *, stable=False):
    """(values, indices): input sorted along dim (stably: ties keep their order; NaN sorts as
    the largest value)."""
    cdef Tensor a = operand(input, "sort")
    cdef Py_ssize_t d = normalize_dim(dim, ndim_of(a.data), "sort")
    cdef bint scalar = ndim_of(a.data) == 0
    a = as_vector(a)
    return picked(a, stable_order(a.data, d, descending), d, SortBackward, scalar)
define_op(sort, DIMS, ANY)


def argsort(input, dim=-1, descending=False, *, stable=False):
    """The indices that sort input along dim (stably; NaN sorts as the largest value), int64."""
    cdef Tensor a = operand(input, "argsort")
    cdef Py_ssize_t d = normalize_dim(dim, ndim_of(a.data), "argsort")
    if ndim_of(a.data) == 0:
        return wrap(np.zeros((), dtype=int64))
    return wrap(stable_order(a.data, d, descending).astype(int64))
define_op(argsort, DIMS, ANY)


# -- topk and kthvalue ----------------------------------------------------------------------------

cdef class TopkBackward(IndexBackward):
    """y = topk(x, k, d) = x[key]  ->  gx = index_backward(g, x.shape, key)"""


def topk(input, k, dim=-1, largest=True, sorted=True):
    """(values, indices) of the k largest (or smallest) entries along dim, in order (NaN counts
    as the largest)."""
    cdef Tensor a = operand(input, "topk")
    if a.data.dtype == bool_:
        raise RuntimeError("topk: bool tensors are not supported; convert with .int() first")
    cdef Py_ssize_t d = normalize_dim(dim, ndim_of(a.data), "topk")
    cdef bint scalar = ndim_of(a.data) == 0
    a = as_vector(a)
    cdef Py_ssize_t kk = order_k(k, 0, a.data.shape[d], "topk", d)
    cdef object order = stable_order(a.data, d, largest)
    return picked(a, np.take(order, np.arange(kk), axis=d), d, TopkBackward, scalar and kk == 1)
define_op(topk, DIMS, NUMERIC)


cdef class KthvalueBackward(IndexBackward):
    """y = kthvalue(x, k, d) = x[key]  ->  gx = index_backward(g, x.shape, key)"""


def kthvalue(input, k, dim=-1, keepdim=False):
    """(values, indices) of the k-th smallest entry along dim (k from 1; NaN counts as the
    largest)."""
    cdef Tensor a = operand(input, "kthvalue")
    if a.data.dtype == bool_:
        raise RuntimeError("kthvalue: bool tensors are not supported; convert with .int() first")
    cdef Py_ssize_t d = normalize_dim(dim, ndim_of(a.data), "kthvalue")
    cdef bint scalar = ndim_of(a.data) == 0
    a = as_vector(a)
    cdef Py_ssize_t kk = order_k(k, 1, a.data.shape[d], "kthvalue", d)
    cdef object pos = np.take(stable_order(a.data, d, False), [kk - 1], axis=d)
    return picked_reducing(a, pos, d, keepdim, KthvalueBackward, scalar)
define_op(kthvalue, DIMS, NUMERIC)


# -- median and nanmedian -------------------------------------------------------------------------

cdef class MedianBackward(IndexBackward):
    """y = median(x, d) = x[key]  ->  gx = index_backward(g, x.shape, key)"""


cdef class MedianAllBackward(AmaxBackward):
    """y = median(x)  ->  gx = g*w, w = [x == y]/count(x == y) (ties share equally, as in
    PyTorch: extreme_weight; a NaN result is shared by the NaNs)"""
    cdef object kept              # the result, shaped (1,)*x.ndim

    cdef tuple apply(self, tuple grads):
        if self.x is None:
            raise_freed_graph(self)
        cdef Tensor x = self.x.unpack(self)
        return (select_grad(expand_reduced(grads[0], x.data.shape, self.dims, False),
                            extreme_weight(x, self.kept, self.dims)),)


cdef object median_position(object arr, Py_ssize_t d, bint ignore_nan):
    """The sorted position of the lower median along d (kept as size 1): (n-1)//2, or the
    first NaN when the slice holds one; ignoring NaN, (m-1)//2 of the m others (0 when none)."""
    cdef Py_ssize_t n = arr.shape[d]
    if not is_float_dtype(descr(arr)):
        return np.full(tuple([1 if e == d else s for e, s in enumerate(arr.shape)]), (n - 1) // 2)
    cdef object nans = np.sum(np.isnan(arr), axis=d, keepdims=True)
    if ignore_nan:
        return np.maximum((n - nans - 1) // 2, 0)
    return np.where(nans > 0, n - nans, (n - 1) // 2)


cdef Tensor median_all(Tensor a, bint ignore_nan, str name):
    """The lower median of every entry of a (NaN when a is empty or, unless ignore_nan, holds a
    NaN); the gradient is shared among the entries equal to it."""
    cdef object flat = a.data.reshape(-1)
    cdef object value
    if flat.size == 0:
        if not is_float_dtype(descr(a.data)):
            raise RuntimeError(f"{name}: the tensor of shape {a.data.shape} has no elements")
        value = np.array(np.nan, dtype=a.data.dtype)
    else:
        value = np.sort(flat)[median_position(flat, 0, ignore_nan)[0]]
    cdef Py_ssize_t nd = ndim_of(a.data)
    cdef Tensor out = wrap(np.array(value, dtype=a.data.dtype))
    if not is_float_dtype(descr(a.data)):
        return out
    cdef object kept = np.asarray(value).reshape((1,) * nd)
    cdef tuple dims = reduction_dims(None, nd, name)
    cdef Tensor ta
    cdef long level
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            ta = tangent_of(a)
            if ta is not None:
                level = suspend_fw()
                try:
                    ta = extreme_jvp(ta, extreme_weight(a, kept, dims), dims, False)
                finally:
                    resume_fw(level)
                set_tangent(out, ta)
    cdef MedianAllBackward node
    if grad_enabled() and a.requires_grad_c():
        node = MedianAllBackward.__new__(MedianAllBackward)
        record(node, a, None)
        node.x = save_tensor(a, node, False)
        node.dims = dims
        node.keepdim = False
        node.kept = kept
        attach_output(out, node, 0)
    return out


cdef object median_op(object input, object dim, bint keepdim, bint ignore_nan):
    cdef str name = "nanmedian" if ignore_nan else "median"
    cdef Tensor a = operand(input, name)
    if a.data.dtype == bool_:
        raise RuntimeError(f"{name}: bool tensors are not supported; convert with .int() first")
    if dim is None:
        return median_all(a, ignore_nan, name)
    cdef Py_ssize_t d = normalize_dim(dim, ndim_of(a.data), name)
    cdef bint scalar = ndim_of(a.data) == 0
    a = as_vector(a)
    if a.data.shape[d] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size (input "
                         f"shape {a.data.shape})")
    cdef object order = stable_order(a.data, d, False)
    cdef object pos = median_position(a.data, d, ignore_nan)
    return picked_reducing(a, np.take_along_axis(order, pos, axis=d), d, keepdim,
                           MedianBackward, scalar)


def median(input, dim=None, keepdim=False):
    """median(x): the lower of the two middle values of every entry (NaN if any is NaN);
    median(x, dim): (values, indices) of that along dim."""
    return median_op(input, dim, keepdim, False)
define_op(median, REDUCTION, NUMERIC)


def nanmedian(input, dim=None, keepdim=False):
    """median ignoring NaN entries (NaN only where every entry is NaN)."""
    return median_op(input, dim, keepdim, True)
define_op(nanmedian, REDUCTION, NUMERIC)


# -- quantile and nanquantile ---------------------------------------------------------------------

cdef class QuantileBackward(IndexBackward):
    """y = x[key] at one neighbour of quantile's rank  ->  gx = index_backward(g, x.shape, key)"""


QUANTILE_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


cdef object quantile_levels(object q, str name):
    """q (a number, or a 0-d or 1-d float tensor) as a float64 array; RuntimeError outside
    [0, 1]."""
    cdef object arr
    if isinstance(q, Tensor):
        arr = (<Tensor>q).data
        if arr.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor, got shape {arr.shape}")
        if not is_float_dtype(descr(arr)):
            raise RuntimeError(f"{name}() q tensor must be floating point, got "
                               f"{dtype_name(arr.dtype)}")
        arr = arr.astype(float64)
    else:
        arr = np.array(float_arg(q, name, "q"))
    if not ((arr >= 0) & (arr <= 1)).all():
        raise RuntimeError(f"{name}() q values must be in the range [0, 1] but got "
                           f"{arr[~((arr >= 0) & (arr <= 1))].reshape(-1)[0]}")
    return arr


cdef Tensor lerp_picks(Tensor lo, Tensor hi, object w):
    """lo + w*(hi - lo) for w < 0.5, hi - (1 - w)*(hi - lo) otherwise (PyTorch's lerp, exact
    at both ends); its gradient is (1 - w, w)."""
    cdef Tensor diff = sub(hi, lo)
    cdef object dt = lo.data.dtype
    return where(wrap(w >= 0.5), sub(hi, mul(diff, wrap((1.0 - w).astype(dt)))),
                 add(lo, mul(diff, wrap(w.astype(dt)))))


cdef Tensor quantile_op(object input, object q, object dim, bint keepdim, str interpolation,
                        bint ignore_nan):
    cdef str name = "nanquantile" if ignore_nan else "quantile"
    cdef Tensor a = operand(input, name)
    if not is_float_dtype(descr(a.data)):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype, got "
                           f"{dtype_name(a.data.dtype)}")
    cdef object levels = quantile_levels(q, name)
    if not isinstance(interpolation, str) or interpolation not in QUANTILE_MODES:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation!r}")
    cdef Py_ssize_t nd = ndim_of(a.data), d = 0
    cdef tuple in_shape = a.data.shape
    if dim is not None:
        d = normalize_dim(dim, nd, name)
    if a.data.size == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty (shape {in_shape})")
    cdef Tensor x = reshape(a, (-1,)) if dim is None else as_vector(a)
    cdef bint keep = keepdim and dim is not None
    if dim is None:
        d = 0
    cdef Py_ssize_t n = x.data.shape[d]
    cdef object order = stable_order(x.data, d, False)
    cdef object nans = np.sum(np.isnan(x.data), axis=d, keepdims=True)
    cdef object qs = levels.reshape((-1,) + (1,) * ndim_of(x.data))
    cdef object ranks
    if ignore_nan:                       # the m = n - nans others; all NaN: position 0, a NaN
        ranks = np.maximum(qs * (n - nans - 1), 0)
    else:                                # a NaN in the slice: the last position, a NaN
        ranks = np.where(nans > 0, n - 1, qs * (n - 1))
    cdef object lo = np.floor(ranks).astype(np.intp), hi = np.ceil(ranks).astype(np.intp)
    cdef object w = ranks - lo
    if interpolation == "higher":
        lo = hi
    elif interpolation == "nearest":
        lo = np.round(ranks).astype(np.intp)    # half to even, as PyTorch rounds
    order = order[None]
    cdef Tensor out = take_at(x, reducing_key(np.take_along_axis(order, lo, axis=d + 1), d,
                                              x.data.shape, keep), QuantileBackward, False)
    if interpolation == "linear" or interpolation == "midpoint":
        if interpolation == "midpoint":
            w = np.full(w.shape, 0.5)
        out = lerp_picks(out, take_at(x, reducing_key(np.take_along_axis(order, hi, axis=d + 1),
                                                      d, x.data.shape, keep),
                                      QuantileBackward, False),
                         w if keep else np.squeeze(w, axis=d + 1))
    cdef tuple lead = () if levels.ndim == 0 else (levels.shape[0],)
    if dim is None:
        return reshape(out, lead + ((1,) * nd if keepdim else ()))
    if levels.ndim == 0:
        return reshape(out, out.data.shape[1:])
    return out


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-th quantiles of input along dim (every entry when None): the sorted entries at
    rank q*(n-1), interpolated; NaN where a slice holds a NaN. A 1-d q leads the result."""
    return quantile_op(input, q, dim, keepdim, interpolation, False)
define_op(quantile, REDUCTION, FLOAT_ONLY)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile ignoring NaN entries (NaN only where every entry is NaN)."""
    return quantile_op(input, q, dim, keepdim, interpolation, True)
define_op(nanquantile, REDUCTION, FLOAT_ONLY)
