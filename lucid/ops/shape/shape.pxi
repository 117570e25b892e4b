# Shape ops: reshape, view, transpose, expand, and sum_to (expand's reverse).
# NOTE: expand is sum in reverse, and sum is expand in reverse; each backward is the other op.
# All are linear: each one's jvp is the op itself on the tangent (linear_jvp), so the tangent
# of a view is the same view of the tangent (Note [Tangent memory]).

cdef tuple as_shape(object shape, str op):
    """shape as a tuple of ints (TypeError/ValueError naming op otherwise, see int_tuple)."""
    return int_tuple(shape, op, "shape")


cdef void check_new_shape(tuple s, str op) except *:
    """RuntimeError for a size below -1 (-1 alone means "the rest"), in PyTorch's words."""
    cdef Py_ssize_t i
    for i in range(len(s)):
        if <Py_ssize_t>s[i] < -1:
            raise RuntimeError(f"{op}: invalid shape dimension {s[i]} at index {i} of shape "
                               f"{list(s)}")


cdef class ReshapeBackward(Node):
    """y = reshape(x, s)  ->  gx = reshape(g, x.shape)"""
    cdef tuple in_shape

    cdef tuple apply(self, tuple grads):
        return (reshape(grads[0], self.in_shape),)


cdef Tensor reshape_impl(Tensor a, object shape, bint must_view, str op):
    cdef tuple s = as_shape(shape, op)
    check_new_shape(s, op)
    cdef object arr
    try:
        arr = a.data.reshape(s)
    except ValueError:
        if a.data.size == 0 and -1 in s:
            raise RuntimeError(f"{op}: shape {s} is ambiguous for a tensor of shape "
                               f"{a.data.shape} (0 elements): -1 could be any size; give every "
                               "size explicitly") from None
        raise RuntimeError(f"{op}: shape {s} is invalid for a tensor of shape "
                           f"{a.data.shape} ({a.data.size} elements)") from None
    # NumPy points a view's base at the array that owns the memory
    cdef object owner = a.data if a.data.base is None else a.data.base
    cdef bint is_view = arr.base is owner
    if must_view and not is_view:
        raise RuntimeError(f"view: a tensor of shape {a.data.shape} and strides "
                           f"{a.data.strides} cannot be viewed as {s}; use reshape()")
    cdef Tensor out = wrap_like_view(arr, a) if is_view else wrap(arr)
    cdef ReshapeBackward node
    if fw_active():                      # linear: the tangent reshaped (a view where out is one)
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, shape_jvp(out, a, reshape, (s,)))
    if grad_enabled() and a.requires_grad_c():
        node = ReshapeBackward.__new__(ReshapeBackward)
        record(node, a, None)
        node.in_shape = a.data.shape
        attach_output(out, node, 0)
    return out


cpdef Tensor reshape(Tensor a, object shape):
    """a with a new shape (a view when the layout allows, else a copy)."""
    return reshape_impl(a, shape, False, "reshape")


def checked_reshape(a, shape):
    """a with a new shape (a view when the layout allows, else a copy)."""
    return reshape_impl(tensor_arg(a, "reshape", "a"), shape, False, "reshape")
define_op(checked_reshape, SHAPE, ANY, method="own", name="reshape")


cpdef Tensor view(a, object shape):
    """a with a new shape, sharing its memory (RuntimeError when the layout does not allow)."""
    cdef Tensor t = tensor_arg(a, "view", "a")
    return reshape_impl(t, shape, True, "view")
define_op(view, SHAPE, ANY, method="own")


cdef class TransposeBackward(Node):
    """y = transpose(x, d0, d1)  ->  gx = transpose(g, d0, d1)"""
    cdef int dim0
    cdef int dim1

    cdef tuple apply(self, tuple grads):
        return (transpose(grads[0], self.dim0, self.dim1),)


cpdef Tensor transpose(a, object dim0, object dim1):
    """a with dims dim0 and dim1 swapped (a view)."""
    cdef Tensor t = tensor_arg(a, "transpose", "a")
    cdef int nd = ndim_of(t.data)
    cdef Py_ssize_t d0 = normalize_dim(dim0, nd, "transpose")
    cdef Py_ssize_t d1 = normalize_dim(dim1, nd, "transpose")
    cdef Tensor out = wrap_like_view(np.swapaxes(t.data, d0, d1) if nd > 0 else t.data.view(), t)
    cdef TransposeBackward node
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(t, transpose, (d0, d1)))
    if grad_enabled() and t.requires_grad_c():
        node = TransposeBackward.__new__(TransposeBackward)
        record(node, t, None)
        node.dim0 = d0
        node.dim1 = d1
        attach_output(out, node, 0)
    return out
define_op(transpose, DIMS, ANY, inplace=IN_PLACE_VIEW)


cdef class ExpandBackward(Node):
    """y = expand(x, s)  ->  gx = sum_to(g, x.shape)"""
    cdef tuple in_shape

    cdef tuple apply(self, tuple grads):
        return (sum_to(grads[0], self.in_shape),)


cpdef Tensor expand(Tensor a, object shape):
    """a broadcast to shape (-1 keeps a dim), as a view (read-only when it broadcasts)."""
    cdef list s = list(as_shape(shape, "expand"))
    cdef tuple in_shape = a.data.shape
    cdef Py_ssize_t lead = len(s) - len(in_shape), i
    if lead < 0:
        raise RuntimeError(f"expand: shape {tuple(s)} has fewer dims than the tensor's {in_shape}")
    for i in range(len(s)):
        if s[i] == -1:
            if i < lead:
                raise RuntimeError(f"expand: -1 is not allowed for a new leading dim in {tuple(s)}")
            s[i] = in_shape[i - lead]
    cdef tuple target = tuple(s)
    try:
        # a new tensor even for the same shape (a view, like PyTorch's), so hooks on it stay its own
        arr = a.data.view() if target == in_shape else np.broadcast_to(a.data, target)
    except ValueError:
        raise RuntimeError(f"expand: a tensor of shape {in_shape} cannot be expanded to "
                           f"{target}") from None
    cdef Tensor out = wrap_like_view(arr, a)
    cdef ExpandBackward node
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(a, expand, (target,)))
    if grad_enabled() and a.requires_grad_c():
        node = ExpandBackward.__new__(ExpandBackward)
        record(node, a, None)
        node.in_shape = in_shape
        attach_output(out, node, 0)
    return out


def checked_expand(a, shape):
    """a broadcast to shape (-1 keeps a dim), as a view (read-only when it broadcasts)."""
    return expand(tensor_arg(a, "expand", "a"), shape)
define_op(checked_expand, SHAPE, ANY, method="own", name="expand")


cdef Tensor expand_to(Tensor a, tuple shape):
    """a broadcast to shape for a backward: a itself when it already has it, else expand."""
    return a if shape_is(a.data, shape) else expand(a, shape)


cdef class SumToBackward(Node):
    """y = sum_to(x, s)  ->  gx = expand(g, x.shape)"""
    cdef tuple in_shape

    cdef tuple apply(self, tuple grads):
        return (expand_to(grads[0], self.in_shape),)


cpdef Tensor sum_to(Tensor a, tuple shape):
    """a summed over the dims that broadcasting added or stretched, down to shape."""
    cdef tuple in_shape = a.data.shape
    if in_shape == shape:
        return a
    cdef Py_ssize_t lead = len(in_shape) - len(shape), i
    if lead < 0:
        raise RuntimeError(f"sum_to: shape {in_shape} cannot be reduced to {shape}")
    cdef list axes = list(range(lead))
    for i in range(len(shape)):
        if shape[i] == 1 and in_shape[lead + i] != 1:
            axes.append(lead + i)
        elif shape[i] != in_shape[lead + i]:
            raise RuntimeError(f"sum_to: shape {in_shape} cannot be reduced to {shape}")
    cdef tuple dims = tuple(axes)
    cdef object arr
    if fast_block_ok(a.data, dims):
        arr = fast_reduce_block(a.data, dims, shape, R_SUM, 1.0)
    else:
        arr = as_array(np.sum(a.data, axis=dims, keepdims=True)).reshape(shape)
    cdef Tensor out = wrap(arr)
    cdef SumToBackward node
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(a, sum_to, (shape,)))
    if grad_enabled() and a.requires_grad_c():
        node = SumToBackward.__new__(SumToBackward)
        record(node, a, None)
        node.in_shape = in_shape
        attach_output(out, node, 0)
    return out


cdef class PermuteBackward(Node):
    """y = permute(x, p)  ->  gx = permute(g, inverse(p))"""
    cdef tuple inverse

    cdef tuple apply(self, tuple grads):
        return (permute(grads[0], self.inverse),)


cpdef Tensor permute(a, object dims):
    """a with its dims reordered (a view)."""
    cdef Tensor t = tensor_arg(a, "permute", "a")
    cdef int nd = ndim_of(t.data)
    cdef tuple order = seq_arg(dims, "permute", "dims")
    if nd > 0:
        order = tuple([normalize_dim(d, nd, "permute") for d in order])
    if nd > 0 and sorted(order) != list(range(nd)):
        raise RuntimeError(f"permute: {tuple(dims)} is not a permutation of the {nd} dims of a "
                           f"tensor of shape {t.data.shape}")
    if nd == 0 and order not in ((), (0,), (-1,)):
        raise RuntimeError(f"permute: {tuple(dims)} is not a permutation of a 0-d tensor's dims")
    cdef Tensor out = wrap_like_view(np.transpose(t.data, order) if nd > 0 else t.data.view(), t)
    cdef PermuteBackward node
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(t, permute, (order,)))
    if grad_enabled() and t.requires_grad_c():
        node = PermuteBackward.__new__(PermuteBackward)
        record(node, t, None)
        node.inverse = tuple(np.argsort(order).tolist()) if nd > 0 else ()
        attach_output(out, node, 0)
    return out
define_op(permute, SHAPE, ANY, method="own")


cdef Tensor view_as_shape(Tensor a, object arr):
    """A view of a with arr's (size-1-dims-only different) shape; gradient reshaped back."""
    cdef Tensor out = wrap_like_view(arr, a)
    cdef ReshapeBackward node
    if fw_active():                      # size-1 dims only: the tangent reshaped is a view
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(a, reshape, (arr.shape,)))
    if grad_enabled() and a.requires_grad_c():
        node = ReshapeBackward.__new__(ReshapeBackward)
        record(node, a, None)
        node.in_shape = a.data.shape
        attach_output(out, node, 0)
    return out


def squeeze(input, dim=None):
    """input without its size-1 dims (only dim, when given); a view."""
    cdef Tensor t = tensor_arg(input, "squeeze", "input")
    cdef int nd = ndim_of(t.data)
    if dim is None:
        axes = tuple(i for i, s in enumerate(t.data.shape) if s == 1)
    else:
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        axes = tuple(d for d in (normalize_dim(x, nd, "squeeze") for x in dims)
                     if nd > 0 and t.data.shape[d] == 1)
    return view_as_shape(t, t.data.squeeze(axis=axes) if axes else t.data.view())
define_op(squeeze, DIMS, ANY, inplace=IN_PLACE_VIEW)


def unsqueeze(input, dim):
    """input with a new size-1 dim at position dim; a view."""
    cdef Tensor t = tensor_arg(input, "unsqueeze", "input")
    cdef Py_ssize_t d = normalize_dim(dim, ndim_of(t.data) + 1, "unsqueeze")
    cdef tuple shape = t.data.shape
    # a reshape that inserts a size-1 dim is always a view (np.expand_dims is a Python function
    # doing the same, 6x slower on small tensors)
    return view_as_shape(t, t.data.reshape(shape[:d] + (1,) + shape[d:]))
define_op(unsqueeze, DIMS, ANY, inplace=IN_PLACE_VIEW)


def flatten(input, start_dim=0, end_dim=-1):
    """input with dims start_dim..end_dim merged into one (a view when the layout allows)."""
    cdef Tensor t = tensor_arg(input, "flatten", "input")
    cdef int nd = ndim_of(t.data)
    if nd == 0:
        return reshape(t, (1,))
    cdef Py_ssize_t s = normalize_dim(start_dim, nd, "flatten")
    cdef Py_ssize_t e = normalize_dim(end_dim, nd, "flatten")
    if s > e:
        raise RuntimeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    shape = t.data.shape
    cdef Py_ssize_t merged = 1
    for size in shape[s:e + 1]:
        merged *= size                   # never -1: it is ambiguous when a size is 0
    return reshape(t, shape[:s] + (merged,) + shape[e + 1:])
define_op(flatten, DIMS, ANY)


# -- mT, expand_as, contiguous: the existing views and clone under PyTorch's names (Tensor's
#    own methods, so in the core; movedim is in ops/shape/rearrange.pxi) ---------------------

cdef Tensor matrix_transpose(Tensor a):
    """a with its last two dims swapped (a view)."""
    cdef int nd = ndim_of(a.data)
    if nd < 2:
        raise RuntimeError(f"mT: needs a matrix or a batch of matrices, got shape {a.data.shape}")
    return transpose(a, nd - 2, nd - 1)


cdef Tensor expand_as(Tensor a, object other):
    """a expanded to other's shape (a view)."""
    return expand(a, tensor_arg(other, "expand_as", "other").data.shape)


cdef Tensor contiguous(Tensor a):
    """a when its memory is already C-contiguous, else a C-contiguous copy (like clone)."""
    if a.data.flags.c_contiguous:
        return a
    cdef Tensor out = wrap(np.ascontiguousarray(a.data))
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(a, clone, ()))
    if grad_enabled() and a.requires_grad_c():
        attach_output(out, record(CloneBackward.__new__(CloneBackward), a, None), 0)
    return out
