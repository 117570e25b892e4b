# Elementwise selection: maximum, minimum (ties split the gradient) and where.

cdef class SelectBackward(Node):
    """z = select(x, y) elementwise  ->  gx = g*wx, gy = g*(1 - wx)  (wx: x's share, constant)"""
    cdef object weight_x          # ndarray: 1 where x was picked, 0.5 on ties, 0 where y was
    cdef object a_shape
    cdef object b_shape
    cdef cnp.dtype a_dtype
    cdef cnp.dtype b_dtype

    cdef void release_saved(self):
        self.weight_x = None

    cdef tuple apply(self, tuple grads):
        if self.weight_x is None:
            raise_freed_graph(self)
        g = grads[0]
        gx = gy = None
        if needs(self, 0):
            gx = reduce_grad(mul(g, wrap(self.weight_x)), self.a_shape, self.a_dtype)
        if needs(self, 1):
            gy = reduce_grad(mul(g, wrap(as_array(1 - self.weight_x))), self.b_shape, self.b_dtype)
        return (gx, gy)


cdef class MaximumBackward(SelectBackward):
    """z = maximum(x, y)  ->  gx = g*[x>y] + g/2*[x==y], gy = g*[y>x] + g/2*[x==y]"""


cdef class MinimumBackward(SelectBackward):
    """z = minimum(x, y)  ->  gx = g*[x<y] + g/2*[x==y], gy = g*[y<x] + g/2*[x==y]"""


cdef class WhereBackward(SelectBackward):
    """z = where(c, x, y)  ->  gx = g*c, gy = g*(1 - c)"""


cdef Tensor record_select(Tensor out, Tensor a, Tensor b, SelectBackward node, object weight_x):
    if not (grad_enabled() and (a.requires_grad_c() or b.requires_grad_c())):
        return out
    record(node, a, b)
    node.weight_x = np.broadcast_to(as_array(weight_x), out.data.shape).astype(out.data.dtype)
    node.a_shape = shape_if_broadcast(a.data, out.data)
    node.b_shape = shape_if_broadcast(b.data, out.data)
    node.a_dtype = descr(a.data)
    node.b_dtype = descr(b.data)
    attach_output(out, node, 0)
    return out


cdef Tensor extremum(object x, object y, bint is_max):
    cdef str name = "maximum" if is_max else "minimum"
    cdef Tensor a = operand(x, name), b = operand(y, name)
    cdef cnp.dtype dt = result_dtype(a, b)
    cdef Tensor out = wrap(binary_kernel(np.maximum if is_max else np.minimum, a, b, dt, name))
    if not (grad_enabled() and (a.requires_grad_c() or b.requires_grad_c())):
        return out
    wins = (a.data > b.data) if is_max else (a.data < b.data)
    weight = wins + 0.5 * (a.data == b.data)
    node = MaximumBackward.__new__(MaximumBackward) if is_max else \
        MinimumBackward.__new__(MinimumBackward)
    return record_select(out, a, b, node, weight)


cpdef Tensor maximum(object x, object y):
    """Elementwise max of x and y (ties split the gradient equally)."""
    return extremum(x, y, True)


cpdef Tensor minimum(object x, object y):
    """Elementwise min of x and y (ties split the gradient equally)."""
    return extremum(x, y, False)


cpdef Tensor where(object condition, object x, object y):
    """x where condition holds, else y (broadcasting all three)."""
    cdef Tensor c = operand(condition, "where")
    if c.data.dtype != bool_:
        raise TypeError(f"where: condition must be a bool tensor, got {dtype_name(c.data.dtype)}")
    cdef Tensor a = operand(x, "where"), b = operand(y, "where")
    cdef cnp.dtype dt = result_dtype(a, b)
    cdef object arr
    try:
        arr = as_array(np.where(c.data, a.data, b.data)).astype(dt, copy=False)
    except ValueError:
        raise RuntimeError(f"where: shapes {c.data.shape}, {a.data.shape} and {b.data.shape} "
                           "cannot be broadcast together") from None
    return record_select(wrap(arr), a, b, WhereBackward.__new__(WhereBackward), c.data)
