# Indexing: x[idx] with ints, slices, None, ellipsis, and integer or boolean index arrays.

cdef object index_key(object index):
    """The NumPy key for a lucid index (tensors become their arrays)."""
    if isinstance(index, tuple):
        return tuple(index_key(i) for i in index)
    if isinstance(index, Tensor):
        if (<Tensor>index).data.dtype.kind == "f":
            raise IndexError("tensors used as indices must be integer or bool tensors")
        return (<Tensor>index).data
    if isinstance(index, list):
        key = np.asarray(index)
        # an empty list selects nothing: NumPy reads it as float, which can't index
        return key.astype(np.intp) if key.size == 0 and key.dtype.kind == "f" else key
    return index


cdef object index_error(object index, object key, Tensor a, object error):
    """The IndexError for a[index] that NumPy refused with error; an int past 64 bits (NumPy:
    OverflowError, or a message about valid index types) is said to be one."""
    cdef tuple parts = key if isinstance(key, tuple) else (key,)
    cdef str why = str(error)
    for p in parts:
        if type(p) is int and not -2**63 <= p < 2**63:
            why = "an index must fit in 64 bits"
    return IndexError(f"index {index!r} is out of range for a tensor of shape {a.data.shape}: "
                      f"{why}")


cdef bint is_basic(object key):
    """Ints, slices, None and ellipsis only: NumPy returns a view."""
    cdef tuple parts = key if isinstance(key, tuple) else (key,)
    for p in parts:
        if not (p is None or p is Ellipsis or isinstance(p, (int, slice, np.integer))) or \
                isinstance(p, (bool, np.bool_)):
            return False
    return True


cdef class IndexBackward(Node):
    """y = x[idx]  ->  gx = index_backward(g, x.shape, idx): zeros with g added at idx"""
    # its fields (in_shape, key) are declared in _core_internal.pxi: lucid._ops subclasses it

    cdef tuple apply(self, tuple grads):
        return (index_backward(grads[0], self.in_shape, self.key),)


cpdef Tensor getitem(Tensor a, object index):
    """a[index]: a view for basic indexing, a copy for index arrays."""
    cdef object key = index_key(index)
    cdef bint basic = is_basic(key)
    cdef object arr
    try:
        if basic:
            arr = a.data[(key if isinstance(key, tuple) else (key,)) + (Ellipsis,)] \
                if Ellipsis not in (key if isinstance(key, tuple) else (key,)) else a.data[key]
        else:
            arr = fast_gather_rows(a.data, key)
            if arr is None:
                arr = as_array(a.data[key])
    except (IndexError, OverflowError) as e:
        raise index_error(index, key, a, e) from None
    cdef Tensor out = wrap_like_view(arr, a) if basic else wrap(arr)
    cdef IndexBackward node
    if fw_active():                      # linear: the same index on the tangent
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(a, getitem, (key,)))
    if grad_enabled() and a.requires_grad_c():
        node = IndexBackward.__new__(IndexBackward)
        record(node, a, None)
        node.in_shape = a.data.shape
        node.key = key
        attach_output(out, node, 0)
    return out


cdef class IndexBackwardBackward(Node):
    """z = index_backward(g, s, idx)  ->  gg = gz[idx]"""
    cdef object key

    cdef tuple apply(self, tuple grads):
        return (getitem(grads[0], self.key),)


cpdef Tensor index_backward(Tensor g, tuple shape, object key):
    """zeros(shape) with g added at key (repeated indices accumulate); key has indexed an array
    of shape already. A basic key picks each place once, so g is assigned; integer arrays on
    the leading dims are scattered by a typed loop; other keys take np.add.at."""
    cdef object arr = fast_scatter_rows(g.data, shape, key)
    if arr is None:
        arr = np.zeros(shape, dtype=g.data.dtype)
        if is_basic(key):
            arr[key] = g.data
        else:
            np.add.at(arr, key, g.data)
    cdef Tensor out = wrap(arr)
    cdef IndexBackwardBackward node
    if fw_active():                      # linear in g (forward-over-reverse through x[idx])
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(g, index_backward, (shape, key)))
    if grad_enabled() and g.requires_grad_c():
        node = IndexBackwardBackward.__new__(IndexBackwardBackward)
        record(node, g, None)
        node.key = key
        attach_output(out, node, 0)
    return out
