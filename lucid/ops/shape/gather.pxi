# Picking and placing entries by index tensors and masks: gather, scatter_add, index_select,
# take_along_dim, masked_select and masked_fill.
#
# Note [Ops as keys]: gather, index_select, take_along_dim and masked_select (and the views
# narrow, split, chunk, unbind in ops/shape/rearrange.pxi) each pick entries of x at a NumPy key, so
# each is y = x[key]: its backward is index_backward(g, x.shape, key) (zeros with g added at key,
# repeated entries accumulating; its own backward is gz[key] again) and its jvp is the same key
# applied to the tangent. Such an op only builds its key (and checks its arguments); take_at
# does the rest.

cdef Tensor take_at(Tensor a, tuple key, type node_type, bint is_view):
    """a[key] as its own op (Note [Ops as keys]): a view for ints and slices, else a copy."""
    cdef object arr = a.data[key]
    cdef Tensor out = wrap_like_view(arr, a) if is_view else wrap(as_array(arr))
    if fw_active():
        set_tangent(out, linear_jvp(a, getitem, (key,)))
    cdef IndexBackward node
    if grad_enabled() and a.requires_grad_c():
        node = <IndexBackward>node_type.__new__(node_type)
        record(node, a, None)
        node.in_shape = a.data.shape
        node.key = key
        attach_output(out, node, 0)
    return out


cdef object index_array(object index, str op):
    """index as an intp ndarray (an int64 or int32 tensor, array or list); else TypeError."""
    cdef object arr
    if isinstance(index, Tensor):
        arr = (<Tensor>index).data
    elif isinstance(index, (np.ndarray, list, tuple)):
        try:
            arr = np.asarray(index)
        except ValueError:                   # a ragged list
            raise TypeError(f"{op}: index must be an int64 tensor (or a rectangular list of "
                            f"ints), got a ragged {type(index).__name__}") from None
        if arr.size == 0 and arr.dtype.kind == "f":      # an empty list reads as float
            arr = arr.astype(np.intp)
    else:
        raise TypeError(f"{op}: index must be an int64 tensor, not {type(index).__name__}")
    if arr.dtype != int64 and arr.dtype != int32:
        raise TypeError(f"{op}: index must be an int64 (or int32) tensor, not "
                        f"{dtype_name(arr.dtype) if arr.dtype in _SUPPORTED else arr.dtype}")
    return arr.astype(np.intp, copy=True)    # a copy: later writes to index can't change a key


cdef void check_index_range(object idx, Py_ssize_t size, bint negative_ok, str op,
                            Py_ssize_t dim, tuple in_shape) except *:
    """IndexError unless every entry of idx picks one of size places along dim."""
    if idx.size == 0:
        return
    cdef Py_ssize_t low = -size if negative_ok else 0
    bad = (idx < low) | (idx >= size)
    if bad.any():
        raise IndexError(f"{op}: index {int(idx[bad].flat[0])} is out of range for dim {dim} of "
                         f"size {size} (input shape {in_shape}, index shape {idx.shape}); "
                         f"indices must be in [{low}, {size - 1}]")


cdef void refuse_zero_dim(Tensor a, str op) except *:
    if ndim_of(a.data) == 0:
        raise RuntimeError(f"{op}: the input is 0-d; index ops need at least one dim "
                           "(unsqueeze(0) it first)")


cdef tuple key_along(object idx, Py_ssize_t dim, tuple sizes):
    """The key picking x[..., idx, ...] along dim: idx there, and along every other dim d the
    aranges 0..sizes[d]-1 (broadcast against idx)."""
    cdef Py_ssize_t nd = len(sizes), d
    cdef list key = []
    for d in range(nd):
        if d == dim:
            key.append(idx)
        else:
            key.append(np.arange(sizes[d], dtype=np.intp).reshape(
                tuple([sizes[d] if e == d else 1 for e in range(nd)])))
    return tuple(key)


cdef void check_index_fits(tuple idx_shape, tuple shape, Py_ssize_t skip, str op, str what,
                           tuple in_shape) except *:
    """RuntimeError unless index's size is at most shape's in every dim but skip (-1: none)."""
    cdef Py_ssize_t d
    if len(idx_shape) != len(shape):
        raise RuntimeError(f"{op}: index has {len(idx_shape)} dims (shape {idx_shape}) but "
                           f"{what} has {len(shape)} (shape {shape}); they must be equal")
    for d in range(len(shape)):
        if d != skip and idx_shape[d] > shape[d]:
            raise RuntimeError(f"{op}: index shape {idx_shape} is larger than {what} shape "
                               f"{shape} in dim {d} (input shape {in_shape})")


# -- gather --------------------------------------------------------------------------------------

cdef class GatherBackward(IndexBackward):
    """y = gather(x, d, idx) = x[key]  ->  gx = index_backward(g, x.shape, key)"""


def gather(input, dim, index):
    """out[i][j][k] = input[index[i][j][k]][j][k] (for dim 0; likewise for the others)."""
    cdef Tensor t = tensor_arg(input, "gather", "input")
    refuse_zero_dim(t, "gather")
    cdef tuple shape = t.data.shape
    cdef Py_ssize_t d = normalize_dim(dim, len(shape), "gather")
    cdef object idx = index_array(index, "gather")
    check_index_fits(idx.shape, shape, d, "gather", "input", shape)
    check_index_range(idx, shape[d], False, "gather", d, shape)
    return take_at(t, key_along(idx, d, idx.shape), GatherBackward, False)
define_op(gather, CUSTOM, ANY)


# -- scatter_add ---------------------------------------------------------------------------------

cdef class ScatterAddBackward(Node):
    """z = scatter_add(x, d, idx, s)  ->  gx = g, gs = g[key] (zeros where s is past idx)"""
    cdef tuple key
    cdef tuple src_shape
    cdef tuple src_part           # the slices of s that idx covers; None when all of s

    cdef tuple apply(self, tuple grads):
        cdef Tensor g = grads[0]
        cdef Tensor gs = None
        if needs(self, 1):
            gs = getitem(g, self.key)
            if self.src_part is not None:
                gs = index_backward(gs, self.src_shape, self.src_part)
        return (g if needs(self, 0) else None, gs)


def scatter_tangents(list ts, dim, index):
    """scatter_add of the tangents of (input, src) (linear_jvp_n's op)."""
    return scatter_add(ts[0], dim, index, ts[1])


def scatter_add(input, dim, index, src):
    """A copy of input with src[i][j] added at [index[i][j]][j] (dim 0; repeated indices add up)."""
    cdef Tensor t = tensor_arg(input, "scatter_add", "input")
    cdef Tensor s = tensor_arg(src, "scatter_add", "src")
    refuse_zero_dim(t, "scatter_add")
    cdef tuple shape = t.data.shape
    cdef Py_ssize_t d = normalize_dim(dim, len(shape), "scatter_add")
    cdef object idx = index_array(index, "scatter_add")
    if s.data.dtype != t.data.dtype:
        raise RuntimeError(f"scatter_add: src has dtype {dtype_name(s.data.dtype)} but input has "
                           f"{dtype_name(t.data.dtype)}; they must be equal")
    check_index_fits(idx.shape, shape, d, "scatter_add", "input", shape)
    check_index_fits(idx.shape, s.data.shape, -1, "scatter_add", "src", shape)
    check_index_range(idx, shape[d], False, "scatter_add", d, shape)
    cdef tuple key = key_along(idx, d, idx.shape)
    cdef tuple src_part = None
    if s.data.shape != idx.shape:
        src_part = tuple([slice(0, n) for n in idx.shape])
    cdef object arr = np.array(t.data, copy=True)
    np.add.at(arr, key, s.data if src_part is None else s.data[src_part])
    cdef Tensor out = wrap(arr)
    if fw_active():
        set_tangent(out, linear_jvp_n((t, s), scatter_tangents, (d, idx)))
    cdef ScatterAddBackward node
    if grad_enabled() and (t.requires_grad_c() or s.requires_grad_c()):
        node = ScatterAddBackward.__new__(ScatterAddBackward)
        record(node, t, s)
        node.key = key
        node.src_shape = s.data.shape
        node.src_part = src_part
        attach_output(out, node, 0)
    return out
define_op(scatter_add, CUSTOM, ANY, inplace=IN_PLACE)


# -- index_select --------------------------------------------------------------------------------

cdef class IndexSelectBackward(IndexBackward):
    """y = index_select(x, d, idx) = x[:, idx]  ->  gx = index_backward(g, x.shape, key)"""


def index_select(input, dim, index):
    """The entries of input at positions index (1-d) along dim."""
    cdef Tensor t = tensor_arg(input, "index_select", "input")
    refuse_zero_dim(t, "index_select")
    cdef tuple shape = t.data.shape
    cdef Py_ssize_t d = normalize_dim(dim, len(shape), "index_select")
    cdef object idx = index_array(index, "index_select")
    if idx.ndim > 1:
        raise IndexError(f"index_select: index must be 1-d (or 0-d), got shape {idx.shape}")
    check_index_range(idx, shape[d], False, "index_select", d, shape)
    cdef tuple key = (slice(None),) * d + (idx.reshape(-1),)
    return take_at(t, key, IndexSelectBackward, False)
define_op(index_select, CUSTOM, ANY)


# -- take_along_dim ------------------------------------------------------------------------------

cdef class TakeAlongDimBackward(IndexBackward):
    """y = take_along_dim(x, idx, d) = x[key]  ->  gx = index_backward(g, x.shape, key)"""


def take_along_dim(input, indices, dim=None):
    """input's entries at indices along dim, broadcasting the other dims (dim None: flattened)."""
    cdef Tensor t = tensor_arg(input, "take_along_dim", "input")
    cdef tuple shape = t.data.shape
    cdef object idx = index_array(indices, "take_along_dim")
    cdef Py_ssize_t n = t.data.size, d
    if dim is None:
        check_index_range(idx, n, True, "take_along_dim", 0, shape)
        if len(shape) == 0:
            return take_at(reshape(t, (1,)), (idx.reshape(-1),), TakeAlongDimBackward, False)
        return take_at(t, np.unravel_index(idx.reshape(-1) % n if n else idx.reshape(-1),
                                               shape), TakeAlongDimBackward, False)
    refuse_zero_dim(t, "take_along_dim")
    d = normalize_dim(dim, len(shape), "take_along_dim")
    if idx.ndim != len(shape):
        raise RuntimeError(f"take_along_dim: input (shape {shape}) and indices (shape "
                           f"{idx.shape}) must have the same number of dims")
    check_index_range(idx, shape[d], True, "take_along_dim", d, shape)
    cdef tuple key = key_along(idx, d, shape)
    try:
        np.broadcast_shapes(*[k.shape for k in key])
    except ValueError:
        raise RuntimeError(f"take_along_dim: input shape {shape} and indices shape {idx.shape} "
                           f"can't be broadcast together outside dim {d}") from None
    return take_at(t, key, TakeAlongDimBackward, False)
define_op(take_along_dim, CUSTOM, ANY)


# -- masked_select -------------------------------------------------------------------------------

cdef object bool_mask(object mask, str op):
    """mask's bool ndarray; TypeError for anything else."""
    cdef object arr = (<Tensor>mask).data if isinstance(mask, Tensor) else \
        mask if isinstance(mask, cnp.ndarray) else None
    if arr is None:
        raise TypeError(f"{op}: mask must be a bool tensor, not {type(mask).__name__}")
    if arr.dtype != bool_:
        raise TypeError(f"{op}: mask must be a bool tensor, not a {arr.dtype} one")
    return arr


cdef tuple broadcast_with_mask(tuple shape, object mask, str op):
    try:
        return np.broadcast_shapes(shape, mask.shape)
    except ValueError:
        raise RuntimeError(f"{op}: input shape {shape} and mask shape {mask.shape} can't be "
                           "broadcast together") from None


cdef class MaskedSelectBackward(IndexBackward):
    """y = masked_select(x, m) = x[key]  ->  gx = index_backward(g, x.shape, key)"""


def masked_select(input, mask):
    """The entries of input where mask holds (both broadcast), as a 1-d tensor."""
    cdef Tensor t = tensor_arg(input, "masked_select", "input")
    cdef object m = bool_mask(mask, "masked_select")
    cdef tuple shape = t.data.shape
    cdef tuple full = broadcast_with_mask(shape, m, "masked_select")
    cdef tuple picked = np.nonzero(np.broadcast_to(m, full))
    if len(shape) == 0:
        return take_at(reshape(t, (1,)), (np.zeros(len(picked[0]), dtype=np.intp),),
                       MaskedSelectBackward, False)
    cdef Py_ssize_t lead = len(full) - len(shape), d
    # a dim that input broadcast (size 1) is read at 0; the gradient adds up there
    cdef tuple key = tuple([picked[lead + d] if shape[d] == full[lead + d] else
                            np.zeros_like(picked[lead + d]) for d in range(len(shape))])
    return take_at(t, key, MaskedSelectBackward, False)
define_op(masked_select, CUSTOM, ANY)


# -- masked_fill ---------------------------------------------------------------------------------

cdef class MaskedFillBackward(Node):
    """z = masked_fill(x, m, v)  ->  gx = g where not m (exactly 0 at m), gv = sum(g where m)"""
    cdef object mask
    cdef object x_shape           # x's shape when the mask broadcast it, else None
    cdef cnp.dtype x_dtype
    cdef cnp.dtype v_dtype

    cdef tuple apply(self, tuple grads):
        cdef Tensor g = grads[0]
        gx = gv = None
        if needs(self, 0):
            gx = reduce_grad(select_grad(g, np.logical_not(self.mask)), self.x_shape, self.x_dtype)
        if self.num_inputs > 1 and needs(self, 1):
            gv = reduce_grad(select_grad(g, self.mask), (), self.v_dtype)
        return (gx, gv) if self.num_inputs > 1 else (gx,)


def masked_fill_tangents(list ts, mask):
    """masked_fill of the tangents of (input, value) (linear_jvp_n's op)."""
    return masked_fill(ts[0], mask, ts[1] if len(ts) > 1 else 0.0)


def masked_fill(input, mask, value):
    """input with value (a number or a 0-d tensor) where mask holds (broadcast)."""
    cdef Tensor t = tensor_arg(input, "masked_fill", "input")
    cdef object m = bool_mask(mask, "masked_fill")
    cdef Tensor v = None
    if isinstance(value, Tensor):
        v = <Tensor>value
        if ndim_of(v.data) != 0:
            raise RuntimeError(f"masked_fill: value must be a number or a 0-d tensor, got a "
                               f"tensor of shape {v.data.shape}")
    elif scalar_operand(value) is None:
        raise TypeError(f"masked_fill: value must be a number or a 0-d tensor, not "
                        f"{type(value).__name__}")
    else:
        check_int_fits(value, descr(t.data), "masked_fill")
    cdef tuple full = broadcast_with_mask(t.data.shape, m, "masked_fill")
    cdef object fill = v.data if v is not None else value
    cdef object arr = np.where(m, np.asarray(fill).astype(t.data.dtype, casting="unsafe"),
                               t.data)
    cdef Tensor out = wrap(as_array(arr).astype(t.data.dtype, copy=False))
    cdef tuple ins = (t,) if v is None else (t, v)
    if fw_active():
        set_tangent(out, fit_tangent(linear_jvp_n(ins, masked_fill_tangents, (m,)), out))
    cdef MaskedFillBackward node
    if grad_enabled() and (t.requires_grad_c() or (v is not None and v.requires_grad_c())):
        node = MaskedFillBackward.__new__(MaskedFillBackward)
        record(node, t, v)
        node.mask = m
        node.x_shape = None if t.data.shape == full else t.data.shape
        node.x_dtype = descr(t.data)
        node.v_dtype = descr(t.data if v is None else v.data)
        attach_output(out, node, 0)
    return out
define_op(masked_fill, POINTWISE, ANY, inplace=IN_PLACE)
