# Saved-tensor hooks: what a node saves goes through the user's pack hook, and comes back through
# the unpack hook when backward needs it.
#
# Note [Saved-tensor hooks]
#   While `saved_tensors_hooks(pack, unpack)` is active in a thread (lucid_saved_hooks_on, a C
#   thread-local; the pairs themselves live in a per-thread stack), save_tensor keeps
#   pack(alias) instead of the tensor: alias shares the saved memory and version counter but
#   has no history, so an identity hook forms no cycle. Only the version counter and, for a
#   saved input, its place in the graph (producer node and slot, or its leaf's accumulator)
#   are kept beside it, so the memory itself is the hook's to keep or drop. Unpacking checks
#   the version, calls unpack(packed), checks the result (a Tensor of the saved shape and
#   dtype) and gives it the saved tensor's history back, so create_graph records through it.
#
# Note [Hooks inside hooks]
#   Hooks never apply to what the hooks themselves save. While a pack or unpack hook runs, the
#   pairs that were in the thread's stack when it was called are shut off (saved_hooks_floors:
#   how many of the stack's pairs are, for the running hook); a pair the hook pushes itself
#   applies while it is pushed (checkpoint's re-run inside an unpack hook relies on it), and
#   popping it turns nothing back on. When the hook returns or raises, the floor of the hook
#   that called it (if any) is back. lucid_saved_hooks_on is 1 exactly when this thread's
#   stack is higher than its floor.

from cpython.pythread cimport PyThread_get_thread_ident as _thread_ident

cdef dict saved_hooks_stacks = {}       # thread ident -> [(pack, unpack), ...], innermost last
cdef dict saved_hooks_disabled = {}     # thread ident -> [message, ...] of disable blocks
cdef dict saved_hooks_floors = {}       # thread ident -> pairs shut off for the running hook
cdef object saving_node = None          # the node whose save the running pack hook serves


# Note [Mutation of saved tensors]
#   allow_mutation_on_saved_tensors (lucid/autograd/_saved_mutation.py) is a pair of saved-tensor
#   hooks marked _lucid_mutation_safe plus a callback. A tensor it packs gets a version counter
#   of its own in the SavedTensor (nothing changes it, so unpacking never refuses it), and while
#   the context is open (lucid_saved_mutation_on) every in-place write first calls the callback
#   with the storage about to change, which clones the saved values over it. Outside the context
#   the in-place path pays one test of the flag.
cdef int lucid_saved_mutation_on = 0
cdef object saved_mutation_callback = None


def _set_saved_mutation_callback(callback):
    """Call callback(storage) before each in-place write (None: stop); returns the previous."""
    global lucid_saved_mutation_on, saved_mutation_callback
    if callback is not None and not callable(callback):
        raise TypeError(f"_set_saved_mutation_callback takes a callable or None, not "
                        f"{type(callback).__name__}")
    previous = saved_mutation_callback
    saved_mutation_callback = callback
    lucid_saved_mutation_on = 0 if callback is None else 1
    return previous


def _storage_of(Tensor t):
    """t's storage (its version counter): one object for every tensor over the same memory."""
    return t.storage()


cdef void before_saved_write(Tensor t) except *:
    """Note [Mutation of saved tensors]: t's memory is about to change in place."""
    if saved_mutation_callback is not None:
        saved_mutation_callback(t.storage())


def _saving_node():
    """The node whose tensor the running pack hook is packing (None outside a pack hook):
    selective checkpointing asks it which op saves."""
    return saving_node


def _push_saved_tensors_hooks(pack_hook, unpack_hook):
    """Make (pack_hook, unpack_hook) the innermost pair of this thread."""
    global lucid_saved_hooks_on
    if not callable(pack_hook) or not callable(unpack_hook):
        raise TypeError("saved_tensors_hooks takes two callables: pack_hook(tensor) -> object "
                        "and unpack_hook(object) -> Tensor")
    ident = _thread_ident()
    cdef list disabled = saved_hooks_disabled.get(ident)
    if disabled:
        raise RuntimeError(disabled[len(disabled) - 1])     # (no wraparound in this build)
    global rare_modes
    cdef list stack = saved_hooks_stacks.setdefault(ident, [])
    if not stack:
        rare_modes += 1                        # Note [Rare modes]
    stack.append((pack_hook, unpack_hook))
    lucid_saved_hooks_on = 1 if len(stack) > saved_hooks_floors.get(ident, 0) else 0


def _pop_saved_tensors_hooks():
    global lucid_saved_hooks_on, rare_modes
    ident = _thread_ident()
    stack = saved_hooks_stacks.get(ident)
    if not stack:
        raise RuntimeError("saved_tensors_hooks: no hooks to pop in this thread")
    stack.pop()
    lucid_saved_hooks_on = 1 if len(stack) > saved_hooks_floors.get(ident, 0) else 0
    if not stack:
        del saved_hooks_stacks[ident]
        rare_modes -= 1                        # Note [Rare modes]


def _push_saved_hooks_disabled(str message):
    """Entering saved_tensors_hooks raises RuntimeError(message) until the matching pop."""
    saved_hooks_disabled.setdefault(_thread_ident(), []).append(message)


def _pop_saved_hooks_disabled():
    ident = _thread_ident()
    stack = saved_hooks_disabled.get(ident)
    if stack:
        stack.pop()
        if not stack:
            del saved_hooks_disabled[ident]


cdef SavedTensor save_packed(Tensor t, Node owner, bint is_output):
    """Note [Saved-tensor hooks]: save pack(alias of t), its version counter and its history."""
    cdef object ident = _thread_ident()
    cdef list stack = saved_hooks_stacks[ident]
    pack_hook, unpack_hook = stack[len(stack) - 1]      # above the floor: lucid_saved_hooks_on
    cdef Tensor alias = wrap(t.data)
    alias._storage = t.storage()
    cdef SavedTensor s = SavedTensor.__new__(SavedTensor)
    s.is_output = is_output
    s.out_storage = alias._storage
    s.saved_version = s.out_storage.version
    cdef object history = None
    if is_output:
        s.out_requires_grad = t.requires_grad_c()
        s.output_nr = t._output_nr
    elif t.requires_grad_c():
        history = gradient_node(t)       # the producer, or the leaf's accumulator
        s.output_nr = t._output_nr
    cdef Py_ssize_t floor = shut_off_saved_hooks(ident)
    cdef int64_t version = alias._storage.version
    global saving_node
    cdef object outer_node = saving_node
    saving_node = owner
    try:
        packed = pack_hook(alias)
        if alias._storage.version != version:
            raise RuntimeError("A saved tensor pack hook is modifying its input in place. "
                               "Tensors provided as input to pack hook can not be modified by "
                               "in-place operations as this can lead to unexpected "
                               "side-effects: clone() it in the hook and change the copy")
    except BaseException as e:
        note_hook_error(e, pack_hook, f"lucid: raised in a saved-tensor pack hook (saving for "
                                      f"{owner.name()})")
        raise
    finally:
        saving_node = outer_node
        restore_saved_hooks(ident, floor)
    if getattr(pack_hook, "_lucid_mutation_safe", False):   # Note [Mutation of saved tensors]
        s.out_storage = new_storage()
        s.saved_version = 0
    s.packed = packed
    s.unpack_hook = unpack_hook
    s.packed_meta = (t.data.shape, t.data.dtype, history)
    if t._extra is not None and t._extra.fw_grad is not None:   # Note [Forward mode]
        save_tangents(s, t)                                     # (forward-over-reverse)
    return s                             # tracked by the GC: packed may be anything


cdef void note_hook_error(BaseException e, object hook, str note):
    """Add note to what a hook raised, unless the hook is one of lucid's own (marked
    _lucid_internal, e.g. checkpoint's): its errors say what went wrong without it."""
    if not getattr(hook, "_lucid_internal", False):
        e.add_note(note)


cdef Py_ssize_t shut_off_saved_hooks(object ident) except -1:
    """Note [Hooks inside hooks]: a hook is about to run in this thread; shut off the pairs
    now in the stack. Returns the floor to give back to restore_saved_hooks."""
    global lucid_saved_hooks_on
    cdef Py_ssize_t previous = saved_hooks_floors.get(ident, 0)
    cdef list stack = saved_hooks_stacks.get(ident)
    cdef Py_ssize_t height = 0 if stack is None else len(stack)
    if height != previous:
        saved_hooks_floors[ident] = height
    lucid_saved_hooks_on = 0
    return previous


cdef int restore_saved_hooks(object ident, Py_ssize_t floor) except -1:
    """The hook returned or raised: the floor it was called under, and the flag it implies."""
    global lucid_saved_hooks_on
    if floor:
        saved_hooks_floors[ident] = floor
    else:
        saved_hooks_floors.pop(ident, None)
    cdef list stack = saved_hooks_stacks.get(ident)
    lucid_saved_hooks_on = 1 if stack is not None and len(stack) > floor else 0
    return 0


cdef Tensor unpack_packed(SavedTensor s, Node owner):
    """Note [Saved-tensor hooks]: unpack(packed), checked, with the saved tensor's history."""
    cdef tuple meta = s.packed_meta
    cdef object ident = _thread_ident()
    cdef Py_ssize_t floor = shut_off_saved_hooks(ident)
    try:
        got = s.unpack_hook(s.packed)
    except BaseException as e:
        note_hook_error(e, s.unpack_hook, f"lucid: raised in a saved-tensor unpack hook "
                                          f"(unpacking for {describe(owner)})")
        raise
    finally:
        restore_saved_hooks(ident, floor)
    if not isinstance(got, Tensor):
        raise RuntimeError(f"a saved-tensor unpack hook returned {type(got).__name__} for "
                           f"{describe(owner)}; it must return a Tensor")
    cdef Tensor g = <Tensor>got
    if g.data.shape != meta[0] or g.data.dtype != meta[1]:
        raise RuntimeError(f"a saved-tensor unpack hook returned a tensor of shape "
                           f"{g.data.shape} and dtype {dtype_name(g.data.dtype)} for "
                           f"{describe(owner)}; the saved tensor had shape {meta[0]} and "
                           f"dtype {dtype_name(meta[1])}")
    cdef Tensor t = wrap(g.data)
    t._storage = g._storage
    cdef Node history
    if s.is_output:
        if s.out_requires_grad and grad_enabled():
            attach_output(t, owner, s.output_nr)
    elif meta[2] is not None:
        history = <Node>meta[2]
        if type(history) is AccumulateGrad:
            t._requires_grad = True
            t._grad_accumulator = PyWeakref_NewRef(history, None)
        else:
            attach_output(t, history, s.output_nr)
    if s.fw_tangent is not None:
        restore_tangents(t, s.fw_tangent, s.fw_level)
    return t
