# Saved tensors: what a node keeps for backward, checked against in-place changes when unpacked.
#
# Note [Saved outputs]: a node that saves its own output must not hold the output Tensor (the
# tensor holds the node as grad_fn: a reference cycle). It keeps the values and the storage (for
# the version check); unpacking makes a fresh tensor over them whose grad_fn is the owning node
# again when the backward itself is being recorded (create_graph).

cdef class SavedTensor:
    """A tensor saved for backward, with its version at save time."""

    def __init__(self):
        raise TypeError("SavedTensor objects are made by save_tensor()")

    @property
    def shape(self):
        """The saved tensor's shape (None once freed)."""
        if self.packed_meta is not None:
            return self.packed_meta[0]
        arr = self.data if self.is_output else (None if self.tensor is None else self.tensor.data)
        return None if arr is None else arr.shape

    @property
    def dtype(self):
        """The saved tensor's dtype (None once freed)."""
        if self.packed_meta is not None:
            return self.packed_meta[1]
        arr = self.data if self.is_output else (None if self.tensor is None else self.tensor.data)
        return None if arr is None else arr.dtype

    cdef Tensor unpack(self, Node owner):
        cdef int64_t current
        cdef bint packed = self.packed_meta is not None
        if owner.released or (self.tensor is None and self.data is None and not packed):
            raise_freed_graph(owner)
        if self.is_output or packed:
            current = self.out_storage.version
        else:
            current = self.tensor.version()
        if current != self.saved_version:
            storage = self.out_storage if self.is_output or packed else self.tensor._storage
            by = "" if storage is None or storage.last_op is None else \
                f" (last changed in place by {storage.last_op})"
            raise RuntimeError(
                "one of the tensors needed for gradient computation has been modified by an "
                f"inplace operation: it was saved by {owner.name()} at version "
                f"{self.saved_version} and is now at version {current}{by}; a saved value "
                "modified by an in-place operation can't give its gradient. Avoid changing it in "
                "place (use an out-of-place op or .clone() it before the change)")
        if packed:
            return unpack_packed(self, owner)
        if not self.is_output:
            return self.tensor
        cdef Tensor t = wrap(self.data)
        t._storage = self.out_storage
        if self.out_requires_grad and grad_enabled():
            attach_output(t, owner, self.output_nr)
        if self.fw_tangent is not None:        # Note [Forward mode]: forward-over-reverse
            restore_tangents(t, self.fw_tangent, self.fw_level)
        return t

    cdef void clear(self):
        self.tensor = None
        self.data = None
        self.out_storage = None
        self.fw_tangent = None
        self.packed = None
        self.unpack_hook = None
        self.packed_meta = None
        if self.guarded_array is not None:
            unguard(self.guarded_array)
            self.guarded_array = None

    def __dealloc__(self):
        if self.guarded_array is not None:
            unguard(self.guarded_array)


cdef SavedTensor save_tensor(Tensor t, Node owner, bint is_output):
    """Save t for owner's backward; is_output when t is one of owner's own outputs."""
    if rare_modes and lucid_saved_hooks_on:
        return save_packed(t, owner, is_output)       # Note [Saved-tensor hooks]
    cdef SavedTensor s = SavedTensor.__new__(SavedTensor)
    gc_untrack(s)                        # Note [GC tracking]
    s.is_output = is_output
    if is_output:
        s.data = t.data
        s.out_storage = t.storage()
        s.saved_version = s.out_storage.version
        s.out_requires_grad = t.requires_grad_c()
        s.output_nr = t._output_nr
        if t._extra is not None and t._extra.fw_grad is not None:
            save_tangents(s, t)
    else:
        s.tensor = t
        s.saved_version = t.version()
    if saved_tensor_guard_on:
        s.guarded_array = guard(t.data)
    return s


# -- the saved-tensor guard: saved arrays are read-only while a node holds them --------------------

cdef bint saved_tensor_guard_on = False
cdef dict guarded_counts = {}          # id(array) -> number of SavedTensors guarding it


def set_saved_tensor_guard(bint on):
    """Make arrays saved for backward read-only while their node holds them; returns the previous setting."""
    global saved_tensor_guard_on
    cdef bint previous = saved_tensor_guard_on
    saved_tensor_guard_on = on
    return previous


cdef object guard(object array):
    """Make array read-only (counting nested guards); None when it already was read-only."""
    cdef Py_ssize_t key = id(array)
    count = guarded_counts.get(key)
    if count is None:
        if not array.flags.writeable:
            return None
        array.flags.writeable = False
        guarded_counts[key] = 1
    else:
        guarded_counts[key] = count + 1
    return array


cdef void unguard(object array):
    cdef Py_ssize_t key = id(array)
    count = guarded_counts.get(key)
    if count is None:
        return
    if count <= 1:
        del guarded_counts[key]
        array.flags.writeable = True
    else:
        guarded_counts[key] = count - 1


cdef bint is_guarded(object array):
    """Is array, or an array it views, made read-only by the guard?"""
    while array is not None:
        if id(array) in guarded_counts:
            return True
        array = getattr(array, "base", None)
    return False


cdef void raise_freed_graph(Node node) except *:
    raise RuntimeError(
        f"Trying to backward through the graph a second time, through {describe(node)}: its "
        "saved values were freed when backward() or autograd.grad() first ran through it. "
        "Specify retain_graph=True in the first call if you need to backward through the graph "
        "again.")
