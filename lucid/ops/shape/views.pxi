# PyTorch's other spellings of views and shape ops: select, t, swapaxes/swapdims, broadcast_to,
# broadcast_tensors, meshgrid, unflatten, split_with_sizes, as_strided; numel and is_tensor.
# Each is built from lucid's own ops (getitem, transpose, expand, reshape, split), so its
# gradient and tangent are theirs: a linear op's jvp is the op on the tangent. as_strided is
# x.flatten()[positions] as its own op (Note [Ops as keys]): the view of the memory forward, the
# positions' gradient backward.

def select(input, dim, index):
    """input[..., index, ...] at dim (the dim removed); a view."""
    cdef Tensor t = tensor_arg(input, "select", "input")
    refuse_zero_dim_view(t, "select")
    cdef tuple shape = t.data.shape
    cdef Py_ssize_t d = normalize_dim(dim, len(shape), "select")
    cdef Py_ssize_t i = int_arg(index, "select", "index")
    if i < -shape[d] or i >= shape[d]:
        raise IndexError(f"select(): index {i} out of range for tensor of size {list(shape)} at "
                         f"dimension {d}")
    return take_at(t, key_in_dim(d, i + shape[d] if i < 0 else i), SelectDimBackward, True)
define_op(select, DIMS, ANY)


cdef class SelectDimBackward(IndexBackward):
    """y = select(x, d, i) = x[..., i, ...]  ->  gx = index_backward(g, x.shape, key)"""


def t(input):
    """input with its two dims swapped (a matrix's transpose); a 0-d or 1-d input as it is. A view."""
    cdef Tensor a = tensor_arg(input, "t", "input")
    cdef int nd = ndim_of(a.data)
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    return transpose(a, 0, nd - 1) if nd == 2 else transpose(a, 0, 0)
define_op(t, DIMS, ANY, inplace=IN_PLACE_VIEW)


cdef Tensor swapped_dims(object input, object dim0, object dim1, str op):
    """transpose(input, dim0, dim1), its arguments checked in op's name."""
    cdef Tensor t = tensor_arg(input, op, "input")
    cdef Py_ssize_t nd = ndim_of(t.data)
    return transpose(t, normalize_dim(dim0, nd, op), normalize_dim(dim1, nd, op))


def swapaxes(input, axis0, axis1):
    """input with dims axis0 and axis1 swapped (lucid.transpose's NumPy name); a view."""
    return swapped_dims(input, axis0, axis1, "swapaxes")
define_op(swapaxes, DIMS, ANY, inplace=IN_PLACE_VIEW)


def swapdims(input, dim0, dim1):
    """input with dims dim0 and dim1 swapped (lucid.transpose); a view."""
    return swapped_dims(input, dim0, dim1, "swapdims")
define_op(swapdims, DIMS, ANY, inplace=IN_PLACE_VIEW)


def broadcast_to(input, size):
    """input broadcast to size (lucid.expand); a read-only view when it broadcasts."""
    return expand(tensor_arg(input, "broadcast_to", "input"),
                  int_tuple(size, "broadcast_to", "size"))
define_op(broadcast_to, SHAPE, ANY)


cdef list tensor_list(tuple tensors, str op):
    """f(a, b, c) and f([a, b, c]) alike: the tensors, each checked."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    return [tensor_arg(x, op, f"tensors[{i}]") for i, x in enumerate(tensors)]


def broadcast_tensors(*tensors):
    """The tensors expanded to their common broadcast shape (views), as a tuple."""
    batched = _batch_dispatch_call(broadcast_tensors, *tensors)   # Note [Batch dispatch]
    if batched is not NotImplemented:
        return batched
    cdef list ts = tensor_list(tensors, "broadcast_tensors")
    cdef tuple shape
    try:
        shape = np.broadcast_shapes(*[(<Tensor>x).data.shape for x in ts])
    except ValueError:
        raise RuntimeError("broadcast_tensors: shapes " +
                           ", ".join(str(tuple((<Tensor>x).data.shape)) for x in ts) +
                           " cannot be broadcast together") from None
    return tuple([expand(<Tensor>x, shape) for x in ts])
define_op(broadcast_tensors, TENSORS, ANY, method="none")


def meshgrid(*tensors, indexing=None):
    """Coordinate grids of 1-d tensors: out[i] holds tensors[i] along dim i ("ij") or with the
    first two dims swapped ("xy"); expanded views."""
    batched = _batch_dispatch_call(meshgrid, *tensors, indexing=indexing)
    if batched is not NotImplemented:
        return batched
    cdef list ts = tensor_list(tensors, "meshgrid")
    if not ts:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if indexing is None:
        import warnings
        warnings.warn("lucid.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'meshgrid: indexing must be one of "xy" or "ij", but received: '
                           f"{indexing}")
    for x in ts:
        if ndim_of((<Tensor>x).data) > 1:
            raise RuntimeError(f"meshgrid: expected 0D or 1D tensors, got one of shape "
                               f"{tuple((<Tensor>x).data.shape)}")
        if (<Tensor>x).data.dtype != (<Tensor>ts[0]).data.dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    cdef bint swap = indexing == "xy" and len(ts) > 1
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    cdef Py_ssize_t k = len(ts), i
    cdef tuple shape = tuple([(<Tensor>x).data.size for x in ts])
    cdef list grids = [expand(reshape(<Tensor>ts[i], (1,) * i + (-1,) + (1,) * (k - i - 1)),
                              shape) for i in range(k)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)
define_op(meshgrid, TENSORS, ANY, method="none")


def unflatten(input, dim, sizes):
    """input with dim split into dims of the given sizes (one may be -1); a view when the layout
    allows."""
    cdef Tensor t = tensor_arg(input, "unflatten", "input")
    cdef tuple shape = t.data.shape
    cdef Py_ssize_t d = normalize_dim(dim, len(shape), "unflatten")
    cdef tuple s = int_tuple(sizes, "unflatten", "sizes")
    if not s:
        raise RuntimeError("unflatten: sizes must be non-empty")
    cdef Py_ssize_t known = 1, free = 0
    for n in s:
        if n == -1:
            free += 1
        else:
            known *= n
    size = shape[d] if len(shape) else 1
    if free > 1 or (free == 0 and known != size) or (free == 1 and (known == 0 or size % known)):
        raise RuntimeError(f"unflatten: Provided sizes {list(s)} don't multiply up to the size "
                           f"of dim {dim} ({size}) in the input tensor")
    if free:
        s = tuple([size // known if n == -1 else n for n in s])
    return reshape(t, shape[:d] + s + shape[d + 1:])
define_op(unflatten, DIMS, ANY)


def split_with_sizes(input, split_sizes, dim=0):
    """input cut along dim into pieces of the given sizes (adding up to its size); views."""
    cdef Tensor t = tensor_arg(input, "split_with_sizes", "input")
    cdef tuple sizes = int_tuple(split_sizes, "split_with_sizes", "split_sizes")
    refuse_zero_dim_view(t, "split_with_sizes")
    cdef Py_ssize_t d = normalize_dim(dim, ndim_of(t.data), "split_with_sizes")
    if sum_ints(list(sizes)) != t.data.shape[d]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{t.data.shape[d]} (input tensor's size at dimension {d}), but got "
                           f"split_sizes={list(sizes)}")
    return split(t, list(sizes), d)
define_op(split_with_sizes, DIMS, ANY)


def numel(input):
    """The number of elements of input, prod(shape) (an int)."""
    return tensor_arg(input, "numel", "input").data.size
define_op(numel, CUSTOM, ANY, method="own")


def is_tensor(obj):
    """True when obj is a lucid Tensor."""
    return isinstance(obj, Tensor)
define_op(is_tensor, CUSTOM, ANY, method="none")


def is_floating_point(input):
    """True when input's dtype is a floating one (input.is_floating_point())."""
    return tensor_arg(input, "is_floating_point", "input").is_floating_point()
define_op(is_floating_point, CUSTOM, ANY, method="own")


def is_complex(input):
    """True when input's dtype is a complex one (input.is_complex())."""
    return tensor_arg(input, "is_complex", "input").is_complex()
define_op(is_complex, CUSTOM, ANY, method="own")


# -- as_strided ---------------------------------------------------------------------------------

cdef class AsStridedBackward(Node):
    """y = as_strided(x, ...) = x.flatten()[pos]  ->  gx = index_backward(g, (n,), pos) as x.shape"""
    cdef tuple in_shape
    cdef object positions

    cdef tuple apply(self, tuple grads):
        return (reshape(index_backward(grads[0], (mul_ints(self.in_shape),), (self.positions,)),
                        self.in_shape),)


cdef Py_ssize_t mul_ints(tuple sizes):
    cdef Py_ssize_t n = 1
    for s in sizes:
        n *= s
    return n


def strided_take(x, positions):
    """x.flatten()[positions]: as_strided's tangent (linear_jvp's op)."""
    return getitem(reshape(x, (-1,)), (positions,))


cdef object element_positions(Py_ssize_t offset, tuple sizes, tuple strides):
    """The memory position (in elements) of each element of a layout, an int64 array of sizes."""
    cdef object pos = np.full(sizes, offset, dtype=np.int64)
    cdef Py_ssize_t k, nd = len(sizes)
    for k in range(nd):
        pos = pos + (np.arange(sizes[k], dtype=np.int64) * strides[k]).reshape(
            (1,) * k + (sizes[k],) + (1,) * (nd - k - 1))
    return pos


cdef bint overlaps(tuple sizes, tuple strides):
    """May two elements of the layout share a place in memory? (True when unsure.)"""
    cdef list dims = sorted([(st, n) for n, st in zip(sizes, strides) if n > 1])
    cdef Py_ssize_t extent = 0
    if any(n == 0 for n in sizes):
        return False
    for st, n in dims:
        if st <= extent:
            return True
        extent += (n - 1) * st
    return False


def as_strided(input, size, stride, storage_offset=None):
    """The view of input's memory with the given sizes and strides (in elements) from
    storage_offset (input's own when None); read-only where its elements overlap."""
    cdef Tensor t = tensor_arg(input, "as_strided", "input")
    cdef tuple sizes = int_tuple(size, "as_strided", "size")
    cdef tuple strides = int_tuple(stride, "as_strided", "stride")
    if len(sizes) != len(strides):
        raise RuntimeError(f"as_strided: mismatch in length of strides and shape ({len(strides)} "
                           f"strides, {len(sizes)} sizes)")
    if any(n < 0 for n in sizes) or any(st < 0 for st in strides):
        raise RuntimeError(f"as_strided: sizes {list(sizes)} and strides {list(strides)} must be "
                           "non-negative")
    cdef object root = memory_root(t.data)
    cdef Py_ssize_t item = t.data.itemsize
    if root.flags.f_contiguous and not root.flags.c_contiguous:
        root = root.ravel(order="K")     # one block too (a reduction's result, ...): flat, in place
    if not root.flags.c_contiguous or root.dtype != t.data.dtype:
        raise RuntimeError("as_strided: the tensor's memory is not one block of its dtype")
    cdef Py_ssize_t own = (address_of(t.data) - address_of(root)) // item
    cdef Py_ssize_t offset = own if storage_offset is None else \
        int_arg(storage_offset, "as_strided", "storage_offset")
    cdef Py_ssize_t capacity = root.size, need = offset + 1
    for n, st in zip(sizes, strides):
        need += (n - 1) * st
    if any(n == 0 for n in sizes):
        need = 0
    if offset < 0 or need > capacity:
        raise RuntimeError(f"as_strided: sizes {list(sizes)}, strides {list(strides)} and storage "
                           f"offset {offset} need a storage of {need} elements, but the tensor's "
                           f"memory holds {capacity}")
    cdef object arr = np.ndarray(sizes, dtype=t.data.dtype, buffer=root, offset=offset * item,
                                 strides=tuple([st * item for st in strides]))
    if overlaps(sizes, strides):
        arr.flags.writeable = False           # writes would race on shared places
    cdef Tensor out = wrap_like_view(arr, t)
    cdef bint grads = grad_enabled() and t.requires_grad_c()
    if not (grads or (fw_active() and has_tangent(t))):
        return out
    positions = strided_positions(t, root, item, sizes, strides, offset)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(t, strided_take, (positions,)))
    cdef AsStridedBackward node
    if grads:
        node = AsStridedBackward.__new__(AsStridedBackward)
        record(node, t, None)
        node.in_shape = t.data.shape
        node.positions = positions
        attach_output(out, node, 0)
    return out
define_op(as_strided, CUSTOM, ANY, inplace=IN_PLACE_VIEW)


cdef object strided_positions(Tensor t, object root, Py_ssize_t item, tuple sizes, tuple strides,
                              Py_ssize_t offset):
    """For each element of as_strided's result, the flat index of input's element at its place
    in memory; RuntimeError when one is not an element of input (or input overlaps itself)."""
    cdef tuple in_sizes = t.data.shape
    cdef tuple in_strides = tuple([st // item for st in t.data.strides])
    if overlaps(in_sizes, in_strides):
        raise RuntimeError("as_strided: the gradient of an input whose elements share memory "
                           "(an expanded tensor) is not supported; clone() it first")
    cdef Py_ssize_t own = (address_of(t.data) - address_of(root)) // item
    cdef object owner = np.full(root.size, -1, dtype=np.int64)
    owner[element_positions(own, in_sizes, in_strides).reshape(-1)] = np.arange(t.data.size)
    cdef object positions = owner[element_positions(offset, sizes, strides)]
    if positions.size and positions.min() < 0:
        raise RuntimeError("as_strided: the view reaches memory outside the input tensor's "
                           "elements, which has no gradient to give; take it from the base "
                           "tensor instead")
    return positions
