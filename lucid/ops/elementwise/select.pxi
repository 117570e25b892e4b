# Elementwise selection: maximum, minimum (ties split the gradient) and where, and the one
# differentiable helper every backward uses to mask a gradient (select_grad).
#
# Note [Mask by selection]: a backward that keeps part of a gradient must select, not multiply
# by a 0/1 mask: inf * 0 is NaN, so an inf or NaN gradient would leak into places the forward
# never picked. select_grad writes exactly 0 there (as PyTorch does) and is itself an op, so
# create_graph records it and double backward sees the same selection.

cdef class SelectGradBackward(Node):
    """z = select_grad(g, w)  ->  gg = select_grad(gz, w)  (w constant; summed back to g's shape)"""
    cdef object weight
    cdef tuple g_shape            # g's shape when w broadcast it, else None

    cdef void release_saved(self):
        self.weight = None

    cdef tuple apply(self, tuple grads):
        if self.weight is None:
            raise_freed_graph(self)
        cdef Tensor gg = select_grad(grads[0], self.weight)
        return (gg if self.g_shape is None else sum_to(gg, self.g_shape),)


cpdef Tensor select_grad(Tensor g, object weight):
    """g*w where w != 0, exactly 0 elsewhere (w: a bool mask or per-element shares, broadcast)."""
    cdef object w = as_array(weight)
    cdef object arr
    # one vectorised multiply; only an inf or NaN in g can leave a NaN where w == 0, and those
    # places are then zeroed (a branchy select over every element costs 10-40x more)
    with np.errstate(invalid="ignore"):
        arr = as_array(np.multiply(g.data, w, dtype=g.data.dtype))
    if np.isnan(arr).any():
        np.copyto(arr, 0, where=(w == 0))
    cdef Tensor out = wrap(arr)
    cdef SelectGradBackward node
    if fw_active():                      # linear in g: the same selection of g's tangent
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(g, select_grad, (w,)))
    if grad_enabled() and g.requires_grad_c():
        node = SelectGradBackward.__new__(SelectGradBackward)
        record(node, g, None)
        node.weight = w
        node.g_shape = None if same_shape(g.data, arr) else g.data.shape
        attach_output(out, node, 0)
    return out


cdef object NOTHING_SELECTED = np.array(False)


cdef Tensor zero_grad_like(Tensor g):
    """Zeros of g's shape, recorded as a selection of nothing from g (connected under create_graph)."""
    return select_grad(g, NOTHING_SELECTED)


cdef class SelectBackward(BinaryBackward):
    """z = select(x, y) elementwise  ->  gx = select_grad(g, wx), gy = select_grad(g, wy)

    The weights are kept (weight_x, weight_y), or made here from what the node saved: for
    maximum and minimum of a plain pair (fn) the inputs a, b; for where of one (cond) the
    condition; where nothing records, those compute the gradients in one pass instead."""
    cdef object weight_x          # ndarray: x's share of g (1 picked, 0.5 tie, 0 not picked)
    cdef object weight_y          # ndarray: y's share of g
    cdef int fn                   # FN_MAXIMUM / FN_MINIMUM when a, b are saved, else FN_NONE
    cdef SavedTensor cond         # where's condition, when saved

    cdef void release_saved(self):
        self.weight_x = None
        self.weight_y = None
        self.a = None
        self.b = None
        self.cond = None

    cdef tuple apply(self, tuple grads):
        cdef Tensor g = grads[0]
        cdef Tensor x, y, c
        cdef tuple fused
        wx, wy = self.weight_x, self.weight_y
        if self.fn != FN_NONE and self.a is not None:
            x = self.a.unpack(self)
            y = self.b.unpack(self)
            fused = fused_binary_grads(self, self.fn, g, x, y)
            if fused is not None:
                return fused
            wx, wy = extremum_weights(x.data, y.data, self.fn == FN_MAXIMUM, descr(x.data))
        elif self.cond is not None:
            c = self.cond.unpack(self)
            if fusing() and small_fast(g.data) and fast_mask_for(c.data, g.data) and \
                    descr(g.data) is self.a_dtype:
                return wrapped_pair(fast_select_grads(c.data, g.data, needs(self, 0),
                                                      needs(self, 1)))
            wx, wy = c.data.astype(self.a_dtype), np.logical_not(c.data).astype(self.a_dtype)
        elif wx is None:
            raise_freed_graph(self)
        return self.reduced(select_grad(g, wx) if needs(self, 0) else None,
                            select_grad(g, wy) if needs(self, 1) else None)


cdef class MaximumBackward(SelectBackward):
    """z = maximum(x, y)  ->  gx = g*[not y>x]*(1/2 if x==y), gy = g*[not x>y]*(1/2 if x==y)"""


cdef class MinimumBackward(SelectBackward):
    """z = minimum(x, y)  ->  gx = g*[not y<x]*(1/2 if x==y), gy = g*[not x<y]*(1/2 if x==y)"""


cdef class WhereBackward(SelectBackward):
    """z = where(c, x, y)  ->  gx = g*c, gy = g*(not c)"""


cdef Tensor select_jvp(Tensor a, Tensor b, object weight_x, object weight_y, Tensor out):
    """dz = select_grad(tx, wx) + select_grad(ty, wy): the backward's selection applied to the
    tangents (ties split alike), shaped and typed like out; None when neither has a tangent."""
    cdef Tensor ta = tangent_of(a), tb = tangent_of(b)
    if ta is None and tb is None:
        return None
    cdef long level = suspend_fw()
    try:
        return fit_tangent(add_tangents(None if ta is None else select_grad(ta, weight_x),
                                        None if tb is None else select_grad(tb, weight_y)), out)
    finally:
        resume_fw(level)


cdef Tensor record_select(Tensor out, Tensor a, Tensor b, SelectBackward node, object weight_x,
                          object weight_y):
    """Give out its tangent (select_jvp) when a dual level is active; attach node to out when
    an input requires grad, keeping the weights its backward selects with."""
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, select_jvp(a, b, weight_x, weight_y, out))
    if not (grad_enabled() and (a.requires_grad_c() or b.requires_grad_c())):
        return out
    record_broadcast(node, a, b, out)
    node.weight_x = weight_x
    node.weight_y = weight_y
    attach_output(out, node, 0)
    return out


cdef object extremum_share(object loses, object tie, cnp.dtype dtype):
    """An input's share of an extremum's gradient: 0 where it lost, 1/2 on a tie, else 1.

    Like PyTorch, a NaN (no comparison holds) sends the whole gradient to both inputs."""
    cdef object share = np.subtract(1, loses, dtype=dtype)      # branch-free: loses, tie disjoint
    share -= np.multiply(tie, 0.5, dtype=dtype)
    return share


cdef tuple extremum_weights(object x, object y, bint is_max, cnp.dtype dtype):
    """(x's share, y's share) of the gradient of maximum(x, y) (is_max) or minimum(x, y)."""
    a_wins = (x > y) if is_max else (x < y)
    b_wins = (y > x) if is_max else (y < x)
    tie = x == y
    return (extremum_share(b_wins, tie, dtype), extremum_share(a_wins, tie, dtype))


cdef inline bint records_pair(Tensor a, Tensor b) noexcept:
    """Does an op on a, b record a node (grad mode on, an input requiring grad)?"""
    return grad_enabled() and (a.requires_grad_c() or b.requires_grad_c())


cdef Tensor extremum(object x, object y, bint is_max):
    cdef str name = "maximum" if is_max else "minimum"
    cdef Tensor a = operand(x, name), b = operand(y, name)
    cdef Tensor out
    cdef SelectBackward node = None
    if fn2_applies(FN_MAXIMUM, a, b) and not fw_active():   # one loop; the backward saves a, b
        out = wrap(fast_fn2(FN_MAXIMUM if is_max else FN_MINIMUM, a.data, b.data))
        if not records_pair(a, b):
            return out
        node = MaximumBackward.__new__(MaximumBackward) if is_max else \
            MinimumBackward.__new__(MinimumBackward)
        record_broadcast(node, a, b, out)
        node.fn = FN_MAXIMUM if is_max else FN_MINIMUM
        node.a = save_tensor(a, node, False)
        node.b = save_tensor(b, node, False)
        attach_output(out, node, 0)
        return out
    cdef cnp.dtype dt = result_dtype(a, b)
    check_operands_fit(x, y, a, b, dt, name)
    out = wrap(binary_kernel(np.maximum if is_max else np.minimum, a, b, dt, name))
    if not (fw_active() or records_pair(a, b)):
        return out
    node = MaximumBackward.__new__(MaximumBackward) if is_max else \
        MinimumBackward.__new__(MinimumBackward)
    wx, wy = extremum_weights(a.data, b.data, is_max, descr(out.data))
    return record_select(out, a, b, node, wx, wy)


cpdef Tensor maximum(object x, object y):
    """Elementwise max of x and y (ties split the gradient equally)."""
    return extremum(x, y, True)
define_op(maximum, POINTWISE, ANY, method="own")


cpdef Tensor minimum(object x, object y):
    """Elementwise min of x and y (ties split the gradient equally)."""
    return extremum(x, y, False)
define_op(minimum, POINTWISE, ANY, method="own")


cpdef Tensor where(object condition, object x, object y):
    """x where condition holds, else y (broadcasting all three)."""
    cdef Tensor c = operand(condition, "where")
    if cnp.PyArray_TYPE(<cnp.ndarray>c.data) != cnp.NPY_BOOL:
        raise TypeError(f"where: condition must be a bool tensor, got {dtype_name(c.data.dtype)}")
    cdef Tensor a = operand(x, "where"), b = operand(y, "where")
    cdef Tensor out
    cdef SelectBackward node
    if plain_pair(a, b) and fast_mask_for(c.data, a.data) and not fw_active():
        out = wrap(fast_select(c.data, a.data, b.data, 0))   # the backward saves c
        if records_pair(a, b):
            node = WhereBackward.__new__(WhereBackward)
            record_broadcast(node, a, b, out)
            node.cond = save_tensor(c, node, False)
            attach_output(out, node, 0)
        return out
    cdef cnp.dtype dt = result_dtype(a, b)
    check_operands_fit(x, y, a, b, dt, "where")
    cdef object arr
    try:
        arr = as_array(np.where(c.data, a.data, b.data)).astype(dt, copy=False)
    except ValueError:
        raise RuntimeError(f"where: shapes {c.data.shape}, {a.data.shape} and {b.data.shape} "
                           "cannot be broadcast together") from None
    out = wrap(arr)
    if not (fw_active() or records_pair(a, b)):
        return out
    cdef cnp.dtype weights = real_of(dt) if dt.kind == b'c' else dt   # real: they select
    return record_select(out, a, b, WhereBackward.__new__(WhereBackward), c.data.astype(weights),
                         np.logical_not(c.data).astype(weights))
define_op(where, POINTWISE, ANY, method="own")
