# Reductions: sum and mean over all, one or several dimensions.

cdef tuple reduction_dims(object dim, Py_ssize_t ndim):
    """dim (None, int or sequence of ints) as a sorted tuple of distinct non-negative dims."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (tuple, list)):
        dims = sorted({normalize_dim(d, ndim) for d in dim})
        if len(dims) != len(dim):
            raise RuntimeError(f"dim {tuple(dim)} names a dimension more than once")
        return tuple(dims) if ndim > 0 else ()
    d = normalize_dim(dim, ndim)
    return (d,) if ndim > 0 else ()


cdef class SumBackward(Node):
    """y = sum(x, dims)  ->  gx = expand(g, x.shape)"""
    cdef tuple in_shape
    cdef tuple dims
    cdef bint keepdim

    cdef tuple apply(self, tuple grads):
        return (expand_reduced(grads[0], self.in_shape, self.dims, self.keepdim),)


cdef class MeanBackward(SumBackward):
    """y = mean(x, dims)  ->  gx = expand(g, x.shape) / n"""
    cdef double count

    cdef tuple apply(self, tuple grads):
        return (div(expand_reduced(grads[0], self.in_shape, self.dims, self.keepdim), self.count),)


cdef Tensor expand_reduced(Tensor g, tuple in_shape, tuple dims, bint keepdim):
    """A reduction's gradient g broadcast back over the reduced dims of in_shape."""
    cdef list kept
    if not keepdim and dims:
        kept = list(in_shape)
        for d in dims:
            kept[d] = 1
        g = reshape(g, tuple(kept))
    return expand(g, in_shape)


cdef Tensor reduce_op(Tensor a, object dim, bint keepdim, bint is_mean):
    cdef tuple dims = reduction_dims(dim, ndim_of(a.data))
    cdef cnp.dtype dt = descr(a.data)
    cdef object out_dtype = None
    if is_mean and not is_float_dtype(dt):
        raise RuntimeError(f"mean: input dtype {dtype_name(dt)} is not floating point; "
                           "convert with .float() first")
    if not is_float_dtype(dt):
        out_dtype = int64
    cdef object arr
    if is_mean:
        arr = np.mean(a.data, axis=dims, keepdims=keepdim)
    else:
        arr = np.sum(a.data, axis=dims, keepdims=keepdim, dtype=out_dtype)
    cdef Tensor out = wrap(as_array(arr))
    cdef SumBackward node
    cdef Py_ssize_t count = 1
    if grad_enabled() and a.requires_grad_c():
        if is_mean:
            node = MeanBackward.__new__(MeanBackward)
            for d in dims:
                count *= a.data.shape[d]
            (<MeanBackward>node).count = count
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


def mean(input, dim=None, keepdim=False):
    """Mean of input over dim (all dims when None)."""
    return reduce_op(operand(input, "mean"), dim, keepdim, True)
