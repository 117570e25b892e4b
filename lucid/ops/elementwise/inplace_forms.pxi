# In-place forms made from out-of-place ops: t.exp_(), t.clamp_(lo, hi), t.masked_fill_(m, v),
# t.unsqueeze_(0), t.t_(), ... one method per op registered with an in-place kind (ops/registry.pxi).
#
# Note [In-place forms]: `t.name_(*args)` is `lucid.name(t, *args)` made in-place by one of two
# rules, so an op's in-place form has no formula of its own:
# - "values": the result is computed out of place and written into t by copy_'s path
#   (inplace_binary with INPLACE_COPY): t's version bumps and views of t see the new values; on
#   a leaf that requires grad (grad mode on) it raises before anything is computed; recorded,
#   t's grad_fn becomes the copy's node, whose value input is the op's node applied to a
#   snapshot of t's old value and history (history_snapshot: the op's node keeps the snapshot,
#   not t's memory, which is about to change); forward mode writes the result's tangent into
#   t's tangent (Note [In-place tangents]). The result must have t's shape (the other operands
#   broadcast to it) and a dtype t can hold (exp_ of an int64 tensor raises, as in PyTorch).
# - "view": t becomes the view lucid.name(t, ...) of its own memory (t_, unsqueeze_, squeeze_,
#   transpose_): t takes the view's array, its history (the view's node) and its tangent (the
#   view of t's tangent); the version bumps, as PyTorch's does.

cdef bint any_requires_grad(tuple args, dict kwargs):
    """Does a tensor among args or kwargs' values require grad?"""
    for a in args:
        if isinstance(a, Tensor) and (<Tensor>a).requires_grad_c():
            return True
    if kwargs:
        for a in kwargs.values():
            if isinstance(a, Tensor) and (<Tensor>a).requires_grad_c():
                return True
    return False


cdef bint any_batched(tuple args, dict kwargs):
    """Is one of the arguments a BatchedTensor met under vmap (Note [Batch dispatch])?"""
    if lucid_batch_levels_any == 0:        # no vmap level anywhere: nothing to scan
        return False
    for a in args:
        if batched_operand(a):
            return True
    if kwargs:
        for a in kwargs.values():
            if batched_operand(a):
                return True
    return False


cdef Tensor write_in_place(object target, object function, tuple args, dict kwargs, str name):
    """Note [In-place forms]: target = name(target, *args, **kwargs), written into its memory."""
    cdef str op = name + "_"
    cdef Tensor self = tensor_arg(target, op, "self")
    cdef object error = readonly_error(op, self)
    if error is not None:
        raise error
    if any_batched(args, kwargs):          # under vmap, self is not batched (a BatchedTensor's
        raise batched_into_plain(op)       # own name_ is lucid/_batching/inplace.py)
    check_inplace(self, None, op)          # a leaf that requires grad: raise before computing
    cdef Tensor src = self
    if grad_enabled() and (self.requires_grad_c() or any_requires_grad(args, kwargs)):
        src = history_snapshot(self)       # the op's node saves the old value, not self's memory
    result = function(src, *args, **kwargs)
    if not isinstance(result, Tensor):
        raise TypeError(f"{op}: lucid.{name} gave {type(result).__name__}, not a tensor")
    cdef Tensor y = <Tensor>result
    if y.data.shape != self.data.shape:
        raise RuntimeError(f"{op}: the result has shape {tuple(y.data.shape)}, which can't be "
                           f"written into a tensor of shape {tuple(self.data.shape)} in place "
                           f"(the other operands must broadcast to it); use x = lucid.{name}(x, ...)")
    if dtype_category(descr(y.data)) > dtype_category(descr(self.data)):
        raise RuntimeError(f"{op}: the result has dtype {dtype_name(y.data.dtype)}, which can't be "
                           f"written into a {dtype_name(self.data.dtype)} tensor in place; use "
                           f"x = lucid.{name}(x) for a new tensor, or convert x first")
    return inplace_binary(self, y, INPLACE_COPY, op)


cdef Tensor view_in_place(object target, object function, tuple args, dict kwargs, str name):
    """Note [In-place forms]: target becomes the view name(target, *args, **kwargs)."""
    cdef str op = name + "_"
    cdef Tensor self = tensor_arg(target, op, "self")
    if grad_enabled() and self._grad_fn is None and self._requires_grad:
        raise RuntimeError(f"{op}: a leaf tensor that requires grad can't be changed in place "
                           "while grad mode is on; do it under `with lucid.no_grad():`")
    cdef Tensor y = function(self, *args, **kwargs)
    cdef bint dual = fw_active() and has_tangent(y)
    self.data = y.data
    if y._grad_fn is not None:
        attach_inplace_output(self, y._grad_fn)
    if dual:
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(self, tangent_of(y))
    self.bump_version_by(op)
    return self


import inspect as _inspect


@cython.final
cdef class InplaceForm:
    """A Tensor method t.name_(...): the in-place form of lucid.name (Note [In-place forms])."""
    cdef readonly object function          # the op, lucid.name
    cdef str name
    cdef bint is_view

    def __call__(self, target, *args, **kwargs):
        if self.is_view:
            return view_in_place(target, self.function, args, kwargs, self.name)
        return write_in_place(target, self.function, args, kwargs, self.name)

    @property
    def __name__(self):
        return self.name + "_"

    @property
    def __qualname__(self):
        return "Tensor." + self.name + "_"

    @property
    def __signature__(self):
        """The op's own signature, its first parameter the tensor written into."""
        return _inspect.signature(self.function)

    @property
    def __doc__(self):
        if self.is_view:
            return (f"self becomes lucid.{self.name}(self, ...), a view of its own memory, in "
                    "place; returns self.")
        return (f"self = lucid.{self.name}(self, ...), written into self's memory, in place; "
                "returns self.")

    def __repr__(self):
        return f"<in-place method Tensor.{self.name}_>"


cdef object inplace_form(object function, str name, bint is_view):
    """The Tensor method name_ of the op name (Note [In-place forms])."""
    cdef InplaceForm form = InplaceForm.__new__(InplaceForm)
    form.function, form.name, form.is_view = function, name, is_view
    return form
