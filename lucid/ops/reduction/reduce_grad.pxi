# The one helper that undoes broadcasting and promotion on the way back.

# needs(node, i), does forward input i of node want a gradient: _core_internal.pxi


cdef inline object shape_if_broadcast(object x, object out):
    """x's shape when the op broadcast it to out's, else None (no reduction needed)."""
    return None if same_shape(x, out) else x.shape


cdef Tensor reduce_grad(Tensor g, object shape, cnp.dtype dtype):
    """g summed back to an input's shape (None: already equal) and cast to its dtype."""
    if shape is not None:
        g = sum_to(g, shape)
    if descr(g.data) is not dtype and g.data.dtype != dtype:
        g = cast(g, dtype)
    return g
