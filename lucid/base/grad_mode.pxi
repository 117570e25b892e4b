# Grad mode: one C thread-local flag, defined here once and reached through cdef accessors.

cdef extern from *:
    """
    static __thread int lucid_grad_disabled = 0;
    static __thread int lucid_traversal_depth = 0;
    static __thread long lucid_fw_level = 0;
    static __thread int lucid_saved_hooks_on = 0;
    static __thread int lucid_plain_backward = 0;
    static __thread int lucid_inference_on = 0;
    """
    int lucid_grad_disabled
    int lucid_traversal_depth
    long lucid_fw_level             # the active dual level's id in this thread (0: none)
    int lucid_saved_hooks_on        # saved-tensor hooks are active in this thread
    int lucid_plain_backward        # the running traversal is backward() into every leaf's .grad
    int lucid_inference_on          # inference_mode is on: new tensors can never require grad


cdef bint grad_enabled() noexcept nogil:
    return lucid_grad_disabled == 0


cdef bint set_grad_enabled_c(bint on) noexcept nogil:
    global lucid_grad_disabled
    cdef bint previous = lucid_grad_disabled == 0
    lucid_grad_disabled = 0 if on else 1
    return previous


def is_grad_enabled():
    """True when operations in this thread are recorded for backward."""
    return grad_enabled()


# Note [Rare modes]: reading a C thread-local from a shared library is a call (__tls_get_addr),
# so the per-op and per-tensor tests of the rare modes (a transform level: a dual level or a
# batch level, Note [Transform levels]; inference mode; saved-tensor hooks) first read this
# plain process-wide count of the modes on in any thread: zero in the common case, and then
# nothing thread-local is read at all.
cdef int rare_modes = 0


def _set_grad_enabled(bint on):
    """Set this thread's grad mode; return the previous one."""
    return set_grad_enabled_c(on)


def is_inference_mode_enabled():
    """True inside lucid.inference_mode() in this thread."""
    return lucid_inference_on != 0


def _set_inference_mode(bint on):
    """Set this thread's inference mode (tensors made in it are marked); return the previous."""
    global lucid_inference_on, rare_modes
    cdef bint previous = lucid_inference_on != 0
    if on != previous:
        rare_modes += 1 if on else -1          # Note [Rare modes]
    lucid_inference_on = 1 if on else 0
    return previous
