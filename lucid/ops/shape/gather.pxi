# Picking and placing entries by index tensors and masks: gather, scatter_add, scatter, index_add,
# index_select, take_along_dim, masked_select and masked_fill.
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
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
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

    cdef Tensor src_grad(self, Tensor g):
        """g[key] = g.gather(d, idx), zero-padded to s's shape where s is past idx."""
        cdef Tensor gs = getitem(g, self.key)
        if self.src_part is not None:
            gs = index_backward(gs, self.src_shape, self.src_part)
        return gs

    cdef tuple apply(self, tuple grads):
        cdef Tensor g = grads[0]
        return (g if needs(self, 0) else None, self.src_grad(g) if needs(self, 1) else None)


def scatter_tangents(list ts, dim, index):
    """scatter_add of the tangents of (input, src) (linear_jvp_n's op)."""
    return scatter_add(ts[0], dim, index, ts[1])


cdef void check_same_dtype(Tensor t, Tensor s, str op, str what) except *:
    if s.data.dtype != t.data.dtype:
        raise RuntimeError(f"{op}: {what} has dtype {dtype_name(s.data.dtype)} but input has "
                           f"{dtype_name(t.data.dtype)}; they must be equal")


cdef tuple scatter_key(Tensor t, object dim, object index, tuple src_shape, str op):
    """(d, idx, key) of a scatter into t along dim: index checked against t (and, src_shape not
    None, against src), key = key_along(idx, d)."""
    refuse_zero_dim(t, op)
    cdef tuple shape = t.data.shape
    cdef Py_ssize_t d = normalize_dim(dim, len(shape), op)
    cdef object idx = index_array(index, op)
    check_index_fits(idx.shape, shape, d, op, "input", shape)
    if src_shape is not None:
        check_index_fits(idx.shape, src_shape, -1, op, "src", shape)
    check_index_range(idx, shape[d], False, op, d, shape)
    return d, idx, key_along(idx, d, idx.shape)


cdef tuple covered_part(tuple src_shape, object idx):
    """The slices of src that idx covers; None when idx covers all of it."""
    return None if src_shape == idx.shape else tuple([slice(0, n) for n in idx.shape])


cdef Tensor scatter_src_out(Tensor t, Tensor s, object arr, type node_type, object op_args,
                            object tangents_op, tuple key, tuple src_part):
    """arr (the scattered values of input t and src s) as the op's output: its tangent by
    tangents_op over (d, idx) and a node_type (a ScatterAddBackward) saving key."""
    cdef Tensor out = wrap(arr)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp_n((t, s), tangents_op, op_args))
    cdef ScatterAddBackward node
    if grad_enabled() and (t.requires_grad_c() or s.requires_grad_c()):
        node = <ScatterAddBackward>node_type.__new__(node_type)
        record(node, t, s)
        node.key = key
        node.src_shape = s.data.shape
        node.src_part = src_part
        attach_output(out, node, 0)
    return out


def scatter_add(input, dim, index, src):
    """A copy of input with src[i][j] added at [index[i][j]][j] (dim 0; repeated indices add up)."""
    cdef Tensor t = tensor_arg(input, "scatter_add", "input")
    cdef Tensor s = tensor_arg(src, "scatter_add", "src")
    check_same_dtype(t, s, "scatter_add", "src")
    cdef tuple dik = scatter_key(t, dim, index, s.data.shape, "scatter_add")
    cdef tuple key = dik[2]
    cdef tuple src_part = covered_part(s.data.shape, dik[1])
    cdef object arr = np.array(t.data, copy=True)
    np.add.at(arr, key, s.data if src_part is None else s.data[src_part])
    return scatter_src_out(t, s, arr, ScatterAddBackward, dik[:2], scatter_tangents, key, src_part)
define_op(scatter_add, CUSTOM, ANY, inplace=IN_PLACE)


# -- scatter -------------------------------------------------------------------------------------

cdef class ScatterBackward(ScatterAddBackward):
    """z = scatter(x, d, idx, s)  ->  gx = g with 0 at key, gs = g[key] = g.gather(d, idx) (every
    repeat of a position gets its g, as in PyTorch; zeros where s is past idx)"""
    cdef object mask              # True at the positions of x that s overwrites

    cdef tuple apply(self, tuple grads):
        cdef Tensor g = grads[0]
        return (masked_fill(g, self.mask, 0.0) if needs(self, 0) else None,
                self.src_grad(g) if needs(self, 1) else None)


def scatter_src_tangents(list ts, dim, index):
    """scatter of the tangents of (input, src) (linear_jvp_n's op)."""
    return scatter(ts[0], dim, index, ts[1])


cdef object key_mask(tuple shape, tuple key):
    """A bool array of shape, True at key."""
    cdef object mask = np.zeros(shape, dtype=bool_)
    mask[key] = True
    return mask


cdef object scatter_reduced(Tensor t, object key, object values, str reduce):
    """A copy of t's values with values added (reduce 'add') or multiplied ('multiply') in at
    key, repeats accumulating; no history (PyTorch has no derivative for it either)."""
    if reduce not in ("add", "multiply"):
        raise RuntimeError(f"scatter: reduce must be 'add' or 'multiply', not {reduce!r} (use "
                           "scatter_reduce for other reductions)")
    cdef object arr = np.array(t.data, copy=True)
    (np.add if reduce == "add" else np.multiply).at(arr, key, values)
    return arr


cdef void refuse_reduce_derivative(tuple ins) except *:
    for x in ins:
        if (grad_enabled() and (<Tensor>x).requires_grad_c()) or \
                (fw_active() and has_tangent(<Tensor>x)):
            raise RuntimeError("scatter: the derivative of scatter with reduce= is not "
                               "implemented (as in PyTorch); detach the inputs, or use "
                               "scatter_add for a differentiable sum")


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """A copy of input with src[i][j] (or the number value) written at [index[i][j]][j] (dim 0;
    reduce 'add' / 'multiply' combines with input there instead)."""
    if src is not None and not isinstance(src, Tensor):
        if value is not None:
            raise TypeError("scatter: give src (a tensor) or value (a number), not both")
        src, value = None, src
    if (src is None) == (value is None):
        raise TypeError("scatter: give exactly one of src (a tensor) and value (a number)")
    cdef Tensor t = tensor_arg(input, "scatter", "input")
    cdef Tensor s = None
    if src is not None:
        s = tensor_arg(src, "scatter", "src")
        check_same_dtype(t, s, "scatter", "src")
    elif scalar_operand(value) is None:
        raise TypeError(f"scatter: value must be a number, not {type(value).__name__}")
    else:
        check_int_fits(value, descr(t.data), "scatter")
    if reduce is not None and not isinstance(reduce, str):
        raise TypeError(f"scatter: reduce must be a str ('add' or 'multiply'), not "
                        f"{type(reduce).__name__}")
    cdef tuple dik = scatter_key(t, dim, index, None if s is None else s.data.shape, "scatter")
    cdef tuple key = dik[2]
    cdef tuple src_part = None if s is None else covered_part(s.data.shape, dik[1])
    cdef object values = value if s is None else (s.data if src_part is None else s.data[src_part])
    if reduce is not None:
        refuse_reduce_derivative((t,) if s is None else (t, s))
        reduced = scatter_reduced(t, key, values, reduce)
        if s is not None:
            warnings.warn("scatter: the reduce argument with a tensor src is deprecated (as in "
                          "PyTorch); use scatter_reduce", UserWarning, stacklevel=2)
        return wrap(reduced)
    cdef object mask = key_mask(t.data.shape, key)
    if s is None:                        # value written at key: masked_fill at key's positions
        return masked_fill(t, mask, value)
    cdef object arr = np.array(t.data, copy=True)
    arr[key] = values                    # a repeated position keeps one of its values
    cdef Tensor out = scatter_src_out(t, s, arr, ScatterBackward, dik[:2], scatter_src_tangents,
                                      key, src_part)
    if out._grad_fn is not None:
        (<ScatterBackward>out._grad_fn).mask = mask
    return out
define_op(scatter, CUSTOM, ANY, inplace=IN_PLACE)


# -- index_add -----------------------------------------------------------------------------------

cdef object index_vector(object index, str op):
    """index (1-d or 0-d) as a 1-d intp array; else TypeError / IndexError naming op."""
    cdef object idx = index_array(index, op)
    if idx.ndim > 1:
        raise IndexError(f"{op}: index must be 1-d (or 0-d), got shape {idx.shape}")
    return idx.reshape(-1)


def index_add(input, dim, index, source, *, alpha=1):
    """A copy of input with alpha*source[.., i, ..] added at [.., index[i], ..] along dim
    (repeated indices add up)."""
    cdef Tensor t = tensor_arg(input, "index_add", "input")
    cdef Tensor s = tensor_arg(source, "index_add", "source")
    if scalar_operand(alpha) is None:
        raise TypeError(f"index_add: alpha must be a number, not {type(alpha).__name__}")
    check_same_dtype(t, s, "index_add", "source")
    cdef tuple shape = t.data.shape, src_shape = s.data.shape
    cdef Py_ssize_t d = normalize_dim(dim, max(len(shape), 1), "index_add")
    cdef object idx = index_vector(index, "index_add")
    if len(shape) == 0:                  # a 0-d input as a 1-vector (PyTorch takes it)
        if len(src_shape) != 0:
            raise RuntimeError(f"index_add: source has shape {src_shape} but input is 0-d; "
                               "source must be 0-d too")
        return reshape(index_add(reshape(t, (1,)), 0, idx, reshape(s, (1,)), alpha=alpha), ())
    cdef tuple want = shape[:d] + (len(idx),) + shape[d + 1:]
    if src_shape != want:
        raise RuntimeError(f"index_add: source has shape {src_shape} but must have shape {want}"
                           f" (input's shape {shape} with the number of indices, {len(idx)}, "
                           f"in dim {d})")
    check_index_range(idx, shape[d], False, "index_add", d, shape)
    if alpha != 1:
        s = mul(s, alpha) if is_float_dtype(descr(s.data)) else \
            wrap(s.data * np.asarray(alpha).astype(s.data.dtype))
    # index_add along d is scatter_add with the index repeated along the other dims
    return scatter_add(t, d, np.broadcast_to(
        idx.reshape(tuple([-1 if e == d else 1 for e in range(len(shape))])), want), s)
define_op(index_add, CUSTOM, ANY, inplace=IN_PLACE)


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
        if needs(self, 0) and self.x_shape is None and not grad_enabled() and not fw_active() \
                and small_fast(g.data) and fast_mask_for(self.mask, g.data) and \
                descr(g.data) is self.x_dtype:           # one pass where nothing records
            gx = wrap(fast_select_grads(self.mask, g.data, False, True)[1])
        elif needs(self, 0):
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
    cdef tuple full
    cdef object fill, arr
    cdef Tensor out
    if v is None and exact_number(value) and small_fast(t.data) and fast_mask_for(m, t.data):
        full = t.data.shape                                      # the typed loop
        out = wrap(fast_select(m, t.data, None, value))
    else:
        full = broadcast_with_mask(t.data.shape, m, "masked_fill")
        fill = v.data if v is not None else value
        arr = np.where(m, np.asarray(fill).astype(t.data.dtype, casting="unsafe"), t.data)
        out = wrap(as_array(arr).astype(t.data.dtype, copy=False))
    cdef tuple ins = (t,) if v is None else (t, v)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
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
