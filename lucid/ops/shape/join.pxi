# Joining tensors: cat along an existing dim, stack along a new one.

cdef class CatBackward(Node):
    """y = cat(xs, dim)  ->  gx_i = g[..., offset_i : offset_i + size_i, ...]"""
    cdef int dim
    cdef list bounds              # [(start, stop)] per input along dim
    cdef list dtypes

    cdef tuple apply(self, tuple grads):
        cdef Tensor g = grads[0]
        cdef list out = []
        lead = (slice(None),) * self.dim
        for i in range(self.num_inputs):
            if not needs(self, i):
                out.append(None)
                continue
            start, stop = self.bounds[i]
            out.append(reduce_grad(getitem(g, lead + (slice(start, stop),)), None, self.dtypes[i]))
        return tuple(out)


cdef class StackBackward(Node):
    """y = stack(xs, dim)  ->  gx_i = g.select(dim, i)"""
    cdef int dim
    cdef list dtypes

    cdef tuple apply(self, tuple grads):
        cdef Tensor g = grads[0]
        lead = (slice(None),) * self.dim
        return tuple(reduce_grad(getitem(g, lead + (i,)), None, self.dtypes[i])
                     if needs(self, i) else None for i in range(self.num_inputs))


cdef list join_operands(object tensors, str op):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (tuple, list)):
        raise TypeError(f"{op} takes a sequence of tensors")
    if len(tensors) == 0:
        raise RuntimeError(f"{op}: expected a non-empty sequence of tensors")
    return [operand(t, op) for t in tensors]


cdef cnp.dtype joined_dtype(list ts):
    cdef Tensor acc = ts[0]
    cdef cnp.dtype dt = descr(acc.data)
    for t in ts[1:]:
        probe = wrap(np.empty((1,), dtype=dt))
        dt = result_dtype(probe, wrap(np.empty((1,), dtype=(<Tensor>t).data.dtype)))
    return dt


cdef Tensor record_join(Node node, Tensor out, list ts):
    cdef Py_ssize_t i
    init_identity(node)
    node.set_num_inputs(len(ts))
    for i in range(len(ts)):
        node.set_edge(i, <Tensor>ts[i])
    attach_output(out, node, 0)
    return out


def cat(tensors, dim=0):
    """The tensors joined along dim (all other dims must match)."""
    cdef list ts = join_operands(tensors, "cat")
    cdef int nd = ndim_of((<Tensor>ts[0]).data)
    if nd == 0:
        raise RuntimeError("cat: zero-dimensional tensors cannot be concatenated; use stack")
    cdef Py_ssize_t d = normalize_dim(dim, nd, "cat")
    cdef cnp.dtype dt = joined_dtype(ts)
    try:
        arr = np.concatenate([(<Tensor>t).data for t in ts], axis=d, dtype=dt, casting="unsafe")
    except ValueError:
        raise RuntimeError("cat: shapes " + ", ".join(str((<Tensor>t).data.shape) for t in ts) +
                           f" must match except in dim {d}") from None
    cdef Tensor out = wrap(arr)
    cdef CatBackward node
    if fw_active():                      # linear: the tangents joined (zeros for missing ones)
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, fit_tangent(linear_jvp_n(ts, cat, (d,)), out))
    if grad_enabled() and any((<Tensor>t).requires_grad_c() for t in ts):
        node = CatBackward.__new__(CatBackward)
        node.dim = d
        node.bounds = []
        start = 0
        for t in ts:
            stop = start + (<Tensor>t).data.shape[d]
            node.bounds.append((start, stop))
            start = stop
        node.dtypes = [descr((<Tensor>t).data) for t in ts]
        record_join(node, out, ts)
    return out
define_op(cat, TENSORS, ANY, method="none")


def stack(tensors, dim=0):
    """The tensors (all of one shape) joined along a new dim."""
    cdef list ts = join_operands(tensors, "stack")
    cdef Py_ssize_t d = normalize_dim(dim, ndim_of((<Tensor>ts[0]).data) + 1, "stack")
    cdef cnp.dtype dt = joined_dtype(ts)
    try:
        arr = np.stack([(<Tensor>t).data for t in ts], axis=d, dtype=dt, casting="unsafe")
    except ValueError:
        raise RuntimeError("stack: all tensors must have one shape, got " +
                           ", ".join(str((<Tensor>t).data.shape) for t in ts)) from None
    cdef Tensor out = wrap(arr)
    cdef StackBackward node
    if fw_active():                      # linear: the tangents stacked (zeros for missing ones)
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, fit_tangent(linear_jvp_n(ts, stack, (d,)), out))
    if grad_enabled() and any((<Tensor>t).requires_grad_c() for t in ts):
        node = StackBackward.__new__(StackBackward)
        node.dim = d
        node.dtypes = [descr((<Tensor>t).data) for t in ts]
        record_join(node, out, ts)
    return out
define_op(stack, TENSORS, ANY, method="none")
