# In-place writes: add_ sub_ mul_ div_ copy_ fill_ zero_, += -= *= /=, x[idx] = v.
# Outside the graph they only write memory and bump the version counter.

cdef enum InplaceOp:
    # the first four equal OP_ADD ... OP_DIV, so in-place ops share the binary nodes
    INPLACE_ADD = OP_ADD
    INPLACE_SUB = OP_SUB
    INPLACE_MUL = OP_MUL
    INPLACE_DIV = OP_DIV
    INPLACE_COPY = 4                    # INPLACE_NAMES[4]; never given to the binary nodes

cdef tuple INPLACE_NAMES = ("add_", "sub_", "mul_", "div_", "copy_")


# Note [No-grad views]: a view taken in no_grad mode has no history, even when its base requires
# grad, so an in-place change of it with grad mode on could not be recorded: the base's gradient
# would silently miss it. wrap_like_view marks such a view (its _view_version is stored as
# -1 - the storage's graph_version: negative; a view of a marked view is marked too), and with
# grad mode on an in-place op, or a Function's mark_dirty, that would be recorded (the view's
# base requires grad, or the value does) raises PyTorch's error, for every view op. Both the
# view and the change under no_grad stay allowed (nothing is recorded), as in PyTorch; views
# taken with grad mode on are not marked.

cdef void check_no_grad_view(Tensor t, bint recorded, str op) except *:
    """Note [No-grad views]: refuse (grad mode on) an in-place change of t, a view taken in
    no_grad mode, when the change would be recorded: t's base requires grad, or recorded (the
    value requires grad)."""
    if not taken_in_no_grad(t):
        return
    cdef bint base_requires_grad = t._view_base.requires_grad_c()
    if not (recorded or base_requires_grad):
        return
    raise RuntimeError(
        f"{op}: A view was created in no_grad mode and is being modified inplace with grad mode "
        "enabled. This tensor is a view taken under no_grad, so nothing links it to its base "
        f"in the graph{' (which requires grad)' if base_requires_grad else ''}, and {op} "
        "could not be recorded: the gradient would miss the change. Make the change under "
        "`with lucid.no_grad():` as well if it is not to be tracked, or write into the base "
        "tensor itself (grad mode on) if it is")


cdef bint check_inplace(Tensor self, Tensor value, str op) except -1:
    """Raise before writing when the write can't be recorded; True when it must be recorded."""
    if not grad_enabled():
        return False
    if self._grad_fn is None and self._requires_grad:
        raise RuntimeError(f"{op}: a leaf tensor that requires grad can't be changed in place "
                           "while grad mode is on; do it under `with lucid.no_grad():`")
    cdef bint value_requires_grad = value is not None and value.requires_grad_c()
    check_no_grad_view(self, value_requires_grad, op)
    if self._view_base is not None and self._view_base._grad_fn is not None and \
            not self.requires_grad_c() and view_taken_at(self) != self._storage.graph_version:
        raise_stale_view(self, op)     # taken before its base got a history: the write misses it
    if self._view_base is not None and self._view_base._grad_fn is None and \
            self._view_base._requires_grad:
        raise RuntimeError(f"{op}: a view of a leaf Variable that requires grad is being used in "
                           "an in-place operation: changing it while grad mode is on would "
                           "change the leaf behind autograd's back; do it under "
                           "`with lucid.no_grad():`")
    if not (self.requires_grad_c() or value_requires_grad):
        return False
    if self._view_base is not None:
        raise RuntimeError(f"{op}: in-place changes of a view that takes part in the graph are "
                           "not supported; change the base tensor, or clone() the view first")
    return True


cdef object memory_owner(object arr):
    """The ndarray at the root of arr's chain of views (the one holding or wrapping the memory)."""
    while isinstance(arr.base, cnp.ndarray):
        arr = arr.base
    return arr


cdef object readonly_error(str op, Tensor self):
    """Why self's memory can't be written, and what to do (None when it can be)."""
    if self.data.flags.writeable:
        return None
    if is_guarded(self.data):
        return RuntimeError(f"{op}: this tensor is saved for backward and the saved-tensor guard "
                            "is on (lucid.autograd.set_saved_tensor_guard); clone() it, or write "
                            "after backward")
    if not memory_owner(self.data).flags.writeable:
        return RuntimeError(f"{op}: this tensor's memory is read-only (it comes from a read-only "
                            "NumPy array, e.g. np.frombuffer or an array with writeable=False); "
                            "copy it first: lucid.tensor(array) or t.clone()")
    return RuntimeError(f"{op}: this tensor is a read-only view (from expand, or an as_strided "
                        "whose elements overlap); clone() it before writing")


cdef str OP_SYMBOLS = "+-*/"


cdef void check_writable(Tensor self, Tensor value, int op, str name) except *:
    """Raise, before anything is written or recorded, when name can't write into self."""
    cdef object error = readonly_error(name, self)
    if error is not None:
        raise error
    if op == INPLACE_COPY:
        return                                  # copy_ converts like NumPy's unsafe casting
    cdef cnp.dtype own = descr(self.data)
    cdef cnp.dtype result = result_dtype(self, value)
    if op == INPLACE_SUB and result.kind == b'b':
        raise TypeError(f"{name}: subtracting bool tensors is not supported; use logical ops")
    if op == INPLACE_DIV and not is_float_dtype(result) and result.kind != b'c':
        raise RuntimeError(f"{name}: true division gives floating-point results, which can't be "
                           f"written into a {dtype_name(own)} tensor in place; use x = x / v for "
                           "a new float tensor, or convert first with x = x.float()")
    if dtype_category(result) > dtype_category(own):
        raise RuntimeError(f"{name}: the result has dtype {dtype_name(result)} ({dtype_name(own)} "
                           f"{OP_SYMBOLS[op]} {dtype_name(value.data.dtype)}), which can't be "
                           f"written into a {dtype_name(own)} tensor in place; use x = x "
                           f"{OP_SYMBOLS[op]} v for a new tensor, or convert x first")


cdef object write_error(str op, Tensor self, Tensor value, object error):
    if isinstance(error, TypeError):
        return RuntimeError(f"{op}: can't write {dtype_name(value.data.dtype)} values into a "
                            f"{dtype_name(self.data.dtype)} tensor in place")
    cdef object readonly = readonly_error(op, self)
    if readonly is not None:
        return readonly
    return RuntimeError(f"{op}: a value of shape {value.data.shape} can't be written into a "
                        f"tensor of shape {self.data.shape}")


cdef void write_inplace(Tensor self, Tensor value, int op, str name) except *:
    if op != INPLACE_COPY and cnp.PyArray_NDIM(<cnp.ndarray>value.data) == 0 and \
            is_fast(self.data) and descr(value.data).kind in b"biuf":
        # a 0-d value is a scalar in promotion: self's own typed loop, not NumPy's float64 loop
        # and a cast back (3.5x slower for a float32 self)
        fast_scalar_into(op, self.data, float(value.data), self.data)  # INPLACE_x is OP_x
        return
    try:
        if op == INPLACE_COPY:
            if not same_shape(self.data, value.data):
                np.broadcast_to(value.data, self.data.shape)   # raise before writing
            np.copyto(self.data, value.data, casting="unsafe")
        elif op == INPLACE_ADD:
            np.add(self.data, value.data, out=self.data)
        elif op == INPLACE_SUB:
            np.subtract(self.data, value.data, out=self.data)
        elif op == INPLACE_MUL:
            np.multiply(self.data, value.data, out=self.data)
        else:
            np.true_divide(self.data, value.data, out=self.data)
    except (ValueError, TypeError) as e:
        raise write_error(name, self, value, e) from None


cdef inline bint shares_storage(Tensor a, Tensor b) noexcept:
    return a is b or (a._storage is not None and a._storage is b._storage)


cdef void mark_graph_changed(Tensor self):
    """A recorded in-place op rewrote self's history: views taken before are now stale."""
    cdef Storage s = self.storage()
    s.graph_version += 1


cdef Tensor history_snapshot(Tensor self):
    """A copy of self's values that keeps self's current place in the graph, and in a dual level
    a copy of self's current tangent (Note [In-place tangents])."""
    cdef Tensor old = wrap(np.array(self.data, copy=True))
    old._grad_fn = self._grad_fn
    old._output_nr = self._output_nr
    old._requires_grad = self._requires_grad
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(old, tangent_copy(self))
    return old


cdef Tensor tangent_copy(Tensor t):
    """A copy of t's tangent (recorded when the tangent is in a graph), or None without one."""
    cdef Tensor tangent = tangent_of(t)
    if tangent is None:
        return None
    cdef long level = suspend_fw()
    try:
        return clone(tangent)
    finally:
        resume_fw(level)


cdef class CopyBackward(Node):
    """x.copy_(v)  ->  gx_old = 0, gv = g (reduced to v's shape and dtype)"""
    cdef object v_shape
    cdef cnp.dtype v_dtype

    cdef tuple apply(self, tuple grads):
        g = grads[0]
        return (zero_grad_like(g) if needs(self, 0) else None,
                reduce_grad(g, self.v_shape, self.v_dtype) if needs(self, 1) else None)


# -- forward mode: the tangent of the new value, written into self's tangent -----------------
#
# Note [In-place tangents]: an in-place op gives self the tangent of its new value by writing
# it into self's tangent in place, with lucid's in-place ops (recorded when the tangent is in a
# graph), before the primal is written: add_ t += tv; sub_ t -= tv; mul_ t = t*v + x*tv;
# div_ t = (t - x*tv/v)/v; copy_/fill_/zero_ t = tv broadcast (zeros without one); setitem
# t[idx] = tv (zeros without one). Writing in place is what lets a view's base and its other
# views see the change, as they see the primal's (Note [Tangent memory]). A tensor without a
# tangent gets zeros first (a view: the same view of zeros given to its base, when the layout
# allows); a tangent that can't be written in place (read-only, or a leaf or view that
# requires grad while grad mode is on) is replaced by a copy. What a recorded in-place op keeps
# for its backward (the old value for mul_/div_, a copy of a value sharing self's memory) is
# taken before the tangent is rewritten, with a copy of its tangent (history_snapshot, or
# clone's own jvp), so a backward run in the dual level (forward-over-reverse) differentiates
# the old value too.

cdef bint tangent_writable(Tensor t, Tensor value, Tensor tv):
    """Can t, a tangent, be changed in place by lucid's in-place ops with value and tv?"""
    if not t.data.flags.writeable:
        return False
    if not grad_enabled():
        return True
    if t._grad_fn is None and t._requires_grad:
        return False
    if t._view_base is None:
        return True
    if t._view_base._grad_fn is None and t._view_base._requires_grad:
        return False
    return not (t.requires_grad_c() or value.requires_grad_c() or
                (tv is not None and tv.requires_grad_c()))


cdef bint fits_into(Tensor value, Tensor self):
    """Does value broadcast to self's shape?"""
    if same_shape(value.data, self.data):
        return True
    try:
        return np.broadcast_shapes(value.data.shape, self.data.shape) == self.data.shape
    except ValueError:
        return False


cdef Tensor base_view_tangent(Tensor self):
    """For a view without a tangent: the same view of its base's tangent (the base gets zeros
    when it has none), or None when the base's layout does not let it be found."""
    cdef Tensor base = self._view_base
    cdef object b = base.data
    cdef Tensor bt = tangent_of(base)
    if self.data.size == 0 or not (b.flags.c_contiguous or b.flags.f_contiguous):
        return None
    if bt is None:
        bt = wrap(np.zeros_like(b))
        set_tangent(base, bt)
    elif bt.data.strides != b.strides or bt.data.dtype != b.dtype or \
            not (bt.data.flags.c_contiguous or bt.data.flags.f_contiguous):
        return None
    cdef Py_ssize_t offset = self.data.ctypes.data - b.ctypes.data
    cdef object arr = np.ndarray(self.data.shape, self.data.dtype,
                                 buffer=np.ravel(bt.data, order="K"), offset=offset,
                                 strides=self.data.strides)
    cdef Tensor vt = wrap_like_view(arr, bt)
    set_tangent(self, vt)
    return vt


cdef Tensor tangent_to_update(Tensor self, Tensor value, Tensor tv):
    """self's tangent, ready to be changed in place (Note [In-place tangents]); None when self
    has none and the value brings none (the new value has no tangent either)."""
    cdef Tensor t = tangent_of(self)
    if t is None and tv is None:
        return None
    if t is None and self._view_base is not None:
        t = base_view_tangent(self)
    if t is None:
        t = wrap(np.zeros_like(self.data))
    elif not tangent_writable(t, value, tv):
        t = clone(t)
    set_tangent(self, t)
    return t


cdef void inplace_jvp(Tensor self, Tensor value, int op) except *:
    """Note [In-place tangents]: write the tangent of self (op)= value into self's tangent,
    before self is written (the rules read self's old value)."""
    if not (is_float_dtype(descr(self.data)) or descr(self.data).kind == b'c') or \
            not fits_into(value, self):
        return                                   # (the write itself raises)
    cdef Tensor tv = tangent_of(value)
    cdef Tensor t = tangent_to_update(self, value, tv)
    if t is None or (tv is None and (op == INPLACE_ADD or op == INPLACE_SUB)):
        return
    cdef long level = suspend_fw()
    cdef Tensor x = self
    try:
        if tv is not None and same_memory(tv, t):
            tv = clone(tv)                       # x.mul_(x): tv must not change under t
        if grad_enabled():                       # old values, kept for the tangent's graph
            if shares_storage(value, self):
                value = history_snapshot(value)
            if tv is not None and tv.requires_grad_c():
                x = history_snapshot(self)
        if op == INPLACE_ADD:
            inplace_binary(t, tv, INPLACE_ADD)
        elif op == INPLACE_SUB:
            inplace_binary(t, tv, INPLACE_SUB)
        elif op == INPLACE_MUL:
            inplace_binary(t, value, INPLACE_MUL)
            if tv is not None:
                inplace_binary(t, mul(tv, x), INPLACE_ADD)
        elif op == INPLACE_DIV:
            if tv is not None:
                inplace_binary(t, div(mul(tv, x), value), INPLACE_SUB)
            inplace_binary(t, value, INPLACE_DIV)
        elif tv is None:
            inplace_binary(t, 0, INPLACE_COPY)
        else:
            inplace_binary(t, tv, INPLACE_COPY)
    finally:
        resume_fw(level)


cdef void setitem_jvp(Tensor self, object key, Tensor value) except *:
    """Note [In-place tangents]: self's tangent with tangent[key] = value's tangent (or 0)."""
    if not is_float_dtype(descr(self.data)):
        return
    cdef Tensor tv = tangent_of(value)
    cdef Tensor t = tangent_to_update(self, value, tv)
    if t is None:
        return
    cdef long level = suspend_fw()
    try:
        setitem(t, key, 0.0 if tv is None else (clone(tv) if same_memory(tv, t) else tv))
    finally:
        resume_fw(level)


cdef Tensor inplace_binary(Tensor self, object other, int op, str name=None):
    if name is None:
        name = INPLACE_NAMES[op]
    cdef Tensor value = operand(other, name)
    if value._wrapped_number:
        check_int_fits(other, descr(self.data), name)
    cdef bint recorded = check_inplace(self, value, name)
    check_writable(self, value, op, name)
    cdef Tensor old = None             # self before the write, if the value's gradient needs it
    if recorded:                       # (before the tangent changes: Note [In-place tangents])
        if shares_storage(value, self):
            value = clone(value)      # x.mul_(x): the value must not change under its node
        if (op == INPLACE_MUL or op == INPLACE_DIV) and value.requires_grad_c():
            old = history_snapshot(self)
    if lucid_saved_mutation_on:        # Note [Mutation of saved tensors]
        before_saved_write(self)
    if fw_active():
        for _fw_lv in fw_levels_inner_first():   # Note [Nested forward mode]
            inplace_jvp(self, value, op)
    if not recorded:
        write_inplace(self, value, op, name)
        self.bump_version_by(name)
        return self
    cdef Node node
    cdef BinaryBackward bnode
    if op == INPLACE_COPY:
        node = CopyBackward.__new__(CopyBackward)
        (<CopyBackward>node).v_shape = shape_if_broadcast(value.data, self.data)
        (<CopyBackward>node).v_dtype = descr(value.data)
        record(node, self, value)      # edges to self's history before the write
    else:
        bnode = new_binary_node(op)    # INPLACE_ADD ... INPLACE_DIV are OP_ADD ... OP_DIV
        bnode.a_shape = None
        bnode.b_shape = shape_if_broadcast(value.data, self.data)
        bnode.a_dtype = descr(self.data)
        bnode.b_dtype = descr(value.data)
        record(bnode, self, value)     # edges to self's history before the write
        save_binary_inputs(bnode, op, old, value)
        node = bnode
    write_inplace(self, value, op, name)
    self.bump_version_by(name)
    mark_graph_changed(self)
    attach_inplace_output(self, node)
    return self


cdef class IndexPutBackward(Node):
    """x[idx] = v  ->  gx_old = g with exact zeros at idx, gv = g[idx] (reduced to v's shape)"""
    cdef object key
    cdef object v_shape
    cdef cnp.dtype v_dtype

    cdef tuple apply(self, tuple grads):
        cdef Tensor g = grads[0]
        gx = gv = None
        if needs(self, 0):
            keep = np.ones(g.data.shape, dtype=bool_)
            keep[self.key] = False
            gx = select_grad(g, keep)
        if needs(self, 1):
            picked = getitem(g, self.key)
            gv = reduce_grad(picked, None if self.v_shape == picked.data.shape else self.v_shape,
                             self.v_dtype)
        return (gx, gv)


cdef void setitem(Tensor self, object index, object value) except *:
    """self[index] = value."""
    cdef Tensor v = operand(value, "setitem")
    if v._wrapped_number:
        check_int_fits(value, descr(self.data), "setitem")
    cdef bint recorded = check_inplace(self, v, "setitem")
    cdef object readonly = readonly_error("setitem", self)
    if readonly is not None:
        raise readonly
    cdef object key = index_key(index)
    cdef IndexPutBackward node
    if recorded and shares_storage(v, self):
        v = clone(v)
    try:
        target_shape = self.data[key].shape
        np.broadcast_to(v.data, target_shape)          # raise before writing
    except (IndexError, OverflowError) as e:
        raise index_error(index, key, self, e) from None
    except ValueError as e:
        raise write_error("setitem", self, v, e) from None
    if fw_active():
        for _fw_lv in fw_levels_inner_first():   # Note [Nested forward mode]
            setitem_jvp(self, key, v)
    if recorded:
        node = IndexPutBackward.__new__(IndexPutBackward)
        node.key = key
        node.v_shape = v.data.shape
        node.v_dtype = descr(v.data)
        record(node, self, v)
    if lucid_saved_mutation_on:        # Note [Mutation of saved tensors]
        before_saved_write(self)
    try:
        self.data[key] = v.data
    except (ValueError, TypeError) as e:
        raise write_error("setitem", self, v, e) from None
    self.bump_version_by("setitem")
    if recorded:
        mark_graph_changed(self)
        attach_inplace_output(self, node)


# -- Tensor methods: the in-place ops (installed on Tensor below) ----------

def _tensor_add_inplace(Tensor self, other, *, alpha=1):
    """self += alpha * other, in place; returns self."""
    return inplace_binary(self, other if alpha == 1 else mul(other, alpha), INPLACE_ADD)


def _tensor_sub_inplace(Tensor self, other, *, alpha=1):
    """self -= alpha * other, in place; returns self."""
    return inplace_binary(self, other if alpha == 1 else mul(other, alpha), INPLACE_SUB)


def _tensor_mul_inplace(Tensor self, other):
    """self *= other, in place; returns self."""
    return inplace_binary(self, other, INPLACE_MUL)


def _tensor_div_inplace(Tensor self, other):
    """self /= other, in place; returns self."""
    return inplace_binary(self, other, INPLACE_DIV)


def _tensor_copy_inplace(Tensor self, src):
    """Copy src (broadcast, cast to self's dtype) into self, in place; returns self."""
    return inplace_binary(self, src, INPLACE_COPY)


def _tensor_fill_inplace(Tensor self, value):
    """Set every element of self to value, in place; returns self."""
    return inplace_binary(self, value, INPLACE_COPY, "fill_")


def _tensor_zero_inplace(Tensor self):
    """Set every element of self to 0, in place; returns self."""
    return inplace_binary(self, 0, INPLACE_COPY, "zero_")


install_methods(Tensor, {
    "add_": _tensor_add_inplace,
    "sub_": _tensor_sub_inplace,
    "mul_": _tensor_mul_inplace,
    "div_": _tensor_div_inplace,
    "copy_": _tensor_copy_inplace,
    "fill_": _tensor_fill_inplace,
    "zero_": _tensor_zero_inplace,
})
