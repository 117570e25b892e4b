# Handles of registered hooks (tensor hooks, node hooks, saved-tensor hooks): handle.remove()
# takes the hook out of the dict it was put in; a handle is also a context manager.

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


# -- Tensor methods: tensor hooks (installed on Tensor below) ----------

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


install_methods(Tensor, {
    "register_hook": _tensor_register_hook,
})
