# A tensor's place in the graph, as methods: register_hook and the handles of registered hooks
# (tensor, node and saved-tensor hooks: handle.remove() takes the hook out of the dict it was put
# in; a handle is also a context manager), detach, detach_, retain_grad.

cdef Py_ssize_t _hook_counter = 0


cdef class RemovableHandle:
    """Returned by register_hook; remove() unregisters the hook."""
    cdef object hooks_ref
    cdef readonly object id

    def __init__(self, dict hooks):
        global _hook_counter
        _hook_counter += 1
        self.hooks_ref = hooks
        self.id = _hook_counter

    def remove(self):
        """Unregister the hook (a second call does nothing)."""
        if self.hooks_ref is not None:
            self.hooks_ref.pop(self.id, None)
            self.hooks_ref = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


cdef RemovableHandle add_hook(dict hooks, object fn):
    """Register fn in hooks; the handle removes it."""
    cdef RemovableHandle handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    return handle


# -- Tensor methods: hooks, detach, retain_grad (installed on Tensor below) ----------------------

def _tensor_register_hook(Tensor self, hook):
    """Call hook(grad) when this tensor's gradient is computed; it may return a replacement."""
    if not callable(hook):
        raise TypeError(f"register_hook: hook must be callable, not {type(hook).__name__}")
    if not self.requires_grad_c():
        raise RuntimeError("register_hook: can't register a hook on a tensor that doesn't "
                           "require grad")
    check_not_stale(self)
    cdef dict hooks
    cdef NodeExtra extra
    cdef TensorExtra leaf_extra
    gc_track(self)                   # Note [GC tracking]: the hook may capture self
    if self._grad_fn is None:
        leaf_extra = tensor_extra(self)
        gc_track(leaf_extra)         # the hooks live here
        if leaf_extra.hooks is None:
            leaf_extra.hooks = {}
        hooks = leaf_extra.hooks
    else:
        extra = self._grad_fn.get_extra()
        if extra.tensor_pre_hooks is None:
            extra.tensor_pre_hooks = {}
        hooks = extra.tensor_pre_hooks.setdefault(self._output_nr, {})
    return add_hook(hooks, hook)

cdef class PostAccumulateGradHook:
    """A leaf's hook fn(tensor), run after backward accumulated the leaf's .grad; it lives in
    the leaf's hooks dict, which the gradient hooks (run_hooks) skip it in."""
    cdef readonly object fn

    def __init__(self, fn):
        self.fn = fn


def _tensor_register_post_accumulate_grad_hook(Tensor self, hook):
    """Call hook(tensor) after backward accumulated this leaf's .grad (its result is ignored)."""
    if not callable(hook):
        raise TypeError(f"register_post_accumulate_grad_hook: hook must be callable, not "
                        f"{type(hook).__name__}")
    if self._grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    if not self._requires_grad:
        raise RuntimeError("register_post_accumulate_grad_hook: can't register a hook on a "
                           "tensor that doesn't require grad (requires_grad=False)")
    gc_track(self)                   # Note [GC tracking]: the hook may capture self
    cdef TensorExtra leaf_extra = tensor_extra(self)
    gc_track(leaf_extra)
    if leaf_extra.hooks is None:
        leaf_extra.hooks = {}
    return add_hook(leaf_extra.hooks, PostAccumulateGradHook(hook))


def _tensor_detach(Tensor self):
    """A tensor sharing this one's memory and version counter, outside the graph."""
    cdef Tensor t = wrap(self.data)
    t._storage = self.storage()          # not a view: it has no history to go stale
    if is_inference(self):
        tensor_extra(t).inference = True
    return t


def _tensor_detach_inplace(Tensor self):
    """Take this tensor out of the graph in place; returns self."""
    if self._view_base is not None and self.requires_grad_c():
        raise RuntimeError("can't detach_() a view of a tensor that requires grad; use detach()")
    self._grad_fn = None
    self._output_nr = 0
    self._requires_grad = False
    return self


def _tensor_retain_grad(Tensor self):
    """Keep .grad on this non-leaf tensor after backward."""
    if not self.requires_grad_c():
        raise RuntimeError("can't retain_grad on a tensor that doesn't require grad")
    if self._grad_fn is None or self._retains_grad:
        return
    check_not_stale(self)
    add_retain_grad_slot(self)
    self._retains_grad = True


install_methods(Tensor, {
    "register_hook": _tensor_register_hook,
    "register_post_accumulate_grad_hook": _tensor_register_post_accumulate_grad_hook,
    "detach": _tensor_detach,
    "detach_": _tensor_detach_inplace,
    "retain_grad": _tensor_retain_grad,
})
