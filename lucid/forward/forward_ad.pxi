# Forward-mode AD: dual levels, tangents on tensors, and the helpers every op's jvp rule uses.
#
# Note [Forward mode]
#   A tensor's tangent lives in its TensorExtra (fw_grad), stamped with the dual level it was
#   made in (fw_level). A level is active per thread (lucid_fw_level, a C thread-local holding the
#   level's id; 0 when none), entered and exited as a LEVEL_DUAL level of the thread's transform
#   stack (Note [Transform levels]), which gives it its id: a tangent whose stamp is not the
#   active level is not there, so leaving a level drops every tangent made in it at once. One
#   dual level at a time for now: entering a second raises. Each op, after computing its output,
#   checks one flag (fw_active) and only then reads its inputs' tangents and runs its jvp rule.
#   Rules are written with lucid's differentiable ops and run with forward mode suspended (a
#   tangent has no tangent of its own), but with grad mode as it is, so reverse mode can
#   differentiate through tangents (reverse-over-forward); backward formulas run with forward
#   mode on, so gradients of duals carry tangents (forward-over-reverse).
#
# Note [Tangent memory]
#   A tangent shares memory with another tensor's tangent exactly where the primals share
#   memory: the tangent of a view is the same view of its base's tangent (view ops apply
#   themselves to the tangent), while an op whose output has memory of its own gives it a
#   tangent of its own (own_tangent copies one that came out as an input's tangent, as
#   x + y does when only x has one). make_dual gives the tangent the primal's layout (a
#   copy when the strides differ), so view ops make views of both or of neither. In-place
#   ops then write the new tangent into the tangent's memory (ops/elementwise/inplace.pxi), which is how
#   the base and the other views of a changed view see their new tangent.

cdef inline bint fw_active() noexcept nogil:
    """Is a dual level active in this thread (and not suspended for a jvp rule)? (Note [Rare
    modes]: a plain global first, the thread-local only when some thread has a rare mode.)"""
    return rare_modes != 0 and lucid_fw_level != 0


cdef Tensor tangent_tensor(TensorExtra e):
    """e's tangent (fw_grad) as a tensor, or None: a fused op leaves it a bare array (Note
    [Fused tangents]), made a tensor here on first need and kept, so it is one tensor."""
    cdef object g = e.fw_grad
    if type(g) is not cnp.ndarray:
        return <Tensor>g
    cdef Tensor t = Tensor.__new__(Tensor)
    gc_untrack(t)                        # Note [GC tracking]
    t.data = g
    e.fw_grad = t
    return t


cdef inline Tensor tangent_of(Tensor t):
    """t's tangent at the active level, or None."""
    cdef TensorExtra e = t._extra
    if e is None or e.fw_grad is None or e.fw_level != lucid_fw_level or lucid_fw_level == 0:
        return None
    return tangent_tensor(e)


cdef inline void set_tangent(Tensor t, Tensor tangent):
    """Give t a tangent at the active level (None: nothing)."""
    cdef TensorExtra e
    if tangent is not None:
        e = tensor_extra(t)
        e.fw_grad = tangent
        e.fw_level = lucid_fw_level


cdef inline long suspend_fw() noexcept nogil:
    """Turn forward mode off while a jvp rule runs; returns the level to resume."""
    global lucid_fw_level
    cdef long level = lucid_fw_level
    lucid_fw_level = 0
    return level


cdef inline void resume_fw(long level) noexcept nogil:
    global lucid_fw_level
    lucid_fw_level = level


# add_tangents(a, b), a + b where either may be None: _core_internal.pxi


cdef Tensor fit_tangent(Tensor t, Tensor out):
    """t broadcast to out's shape and cast to out's dtype (a tangent has its primal's form)."""
    if t is None:
        return None
    if not shape_is(t.data, out.data.shape):
        t = expand(t, out.data.shape)
    if descr(t.data) is not descr(out.data) and t.data.dtype != out.data.dtype:
        t = cast(t, descr(out.data))
    return t


cdef inline bint same_memory(Tensor t, Tensor src) noexcept:
    """Is t src, or a view of src's memory?"""
    return src is not None and (t is src or (t._storage is not None and t._storage is src._storage))


cdef Tensor own_tangent(Tensor t, Tensor src_a, Tensor src_b):
    """Note [Tangent memory]: t, or a copy of it when it is (a view of) src_a or src_b, the
    tangents of the inputs of an op whose output does not share their memory."""
    if t is not None and (same_memory(t, src_a) or same_memory(t, src_b)):
        return clone(t)
    return t


cdef Tensor output_for_rule(Tensor out):
    """out's values and history for a jvp rule that reads the op's output: under grad mode a
    new tensor, so a tangent's recorded graph does not hold out (out -> tangent -> node -> out
    would be a cycle among objects the GC does not watch: Note [GC tracking])."""
    if not grad_enabled():
        return out
    cdef Tensor y = wrap(out.data)
    y._storage = out.storage()
    if out._grad_fn is not None:
        attach_output(y, out._grad_fn, out._output_nr)
    return y


cdef Tensor linear_jvp(Tensor a, object op, tuple args):
    """A linear op's tangent: the op itself applied to a's tangent (None when a has none)."""
    cdef Tensor t = tangent_of(a)
    if t is None:
        return None
    cdef long level = suspend_fw()
    try:
        return op(t, *args)
    finally:
        resume_fw(level)


cdef Tensor shape_jvp(Tensor out, Tensor a, object op, tuple args):
    """The tangent of a shape op's output: the op on a's tangent (as linear_jvp), a copy when
    out is not a view of a but the tangent came out as a view (Note [Tangent memory])."""
    cdef Tensor src = tangent_of(a), t
    if src is None:
        return None
    cdef long level = suspend_fw()
    try:
        t = op(src, *args)
        return t if out._view_base is not None else own_tangent(t, src, None)
    finally:
        resume_fw(level)


cdef Tensor linear_jvp_n(object tensors, object op, tuple args):
    """The tangent of a linear op of several tensors (cat, stack): the op on their tangents,
    zeros standing in for the missing ones; None when none has a tangent."""
    cdef list tangents = []
    cdef bint any_tangent = False
    cdef Tensor t
    for x in tensors:
        t = tangent_of(<Tensor>x) if isinstance(x, Tensor) else None
        any_tangent = any_tangent or t is not None
        tangents.append(t)
    if not any_tangent:
        return None
    for i in range(len(tangents)):
        if tangents[i] is None:
            x = tensors[i]
            tangents[i] = wrap(np.zeros((<Tensor>x).data.shape, dtype=(<Tensor>x).data.dtype))
    cdef long level = suspend_fw()
    try:
        return op(tangents, *args)
    finally:
        resume_fw(level)


cdef Tensor checked_tangent(Tensor primal, object tangent, str where):
    """A tangent for primal: a float tensor of primal's shape, cast to primal's dtype and laid
    out like primal (a tangent in a graph keeps its own layout, so its history stays)."""
    if not isinstance(tangent, Tensor):
        raise TypeError(f"{where}: a tangent must be a Tensor, not {type(tangent).__name__}")
    cdef Tensor t = <Tensor>tangent
    if not is_float_dtype(descr(t.data)):
        raise TypeError(f"{where}: a tangent must be a floating point tensor, not "
                        f"{dtype_name(t.data.dtype)}")
    if not shape_is(t.data, primal.data.shape):
        raise RuntimeError(f"{where}: the tangent has shape {t.data.shape} but the primal has "
                           f"shape {primal.data.shape}; they must be equal")
    if descr(t.data) is not descr(primal.data) and t.data.dtype != primal.data.dtype:
        t = cast(t, descr(primal.data))
    if t.data.size > 1 and t.data.strides != primal.data.strides and not t.requires_grad_c():
        t = wrap(copy_like(t.data, primal.data))     # Note [Tangent memory]: the same layout
    return t


# -- the same, exported through _core.pxd for native ops ---------------------------------------

cdef bint fw_enabled() noexcept nogil:
    return fw_active()


cdef Tensor fw_tangent(Tensor t):
    return tangent_of(t)


cdef void fw_set_tangent(Tensor t, Tensor tangent) except *:
    if tangent is not None:
        set_tangent(t, checked_tangent(t, tangent, "fw_set_tangent"))


cdef long fw_suspend() noexcept nogil:
    return suspend_fw()


cdef void fw_resume(long level) noexcept nogil:
    resume_fw(level)
cdef object copy_like(object values, object layout):
    """values copied into a new array laid out like layout (Note [Tangent memory])."""
    cdef object arr = np.empty_like(layout)
    np.copyto(arr, values)
    return arr


# -- the alias op: make_dual's and unpack_dual's result shares memory and history ---------------

cdef class AliasBackward(Node):
    """y = alias(x)  ->  gx = g"""
    cdef tuple apply(self, tuple grads):
        return (grads[0],)


cdef Tensor alias(Tensor a):
    """A tensor over a's memory with a's history (an identity op), without a's tangent: it has
    no jvp rule, since make_dual gives it the tangent it is asked to and unpack_dual none."""
    cdef Tensor out = wrap_like_view(a.data, a)
    if grad_enabled() and a.requires_grad_c():
        attach_output(out, record(AliasBackward.__new__(AliasBackward), a, None), 0)
    return out


# -- the Python entry points (lucid.autograd.forward_ad) ----------------------------------------

def _enter_dual_level():
    """Start a dual level in this thread (a LEVEL_DUAL transform level); returns its id."""
    global lucid_fw_level
    if lucid_fw_level != 0:
        raise RuntimeError("nested forward-mode levels are not supported: a dual level is "
                           "already active in this thread (exit it first)")
    lucid_fw_level = push_level(LEVEL_DUAL, 0)   # counts in rare_modes (Note [Rare modes])
    return lucid_fw_level


def _exit_dual_level(level=None):
    """End this thread's dual level: every tangent made in it is dropped."""
    global lucid_fw_level
    if lucid_fw_level == 0:
        raise RuntimeError("exit_dual_level: no dual level is active in this thread")
    if level is not None and level != lucid_fw_level:
        raise RuntimeError(f"exit_dual_level: level {level} is not the active level "
                           f"({lucid_fw_level})")
    exit_level(lucid_fw_level, "exit_dual_level")   # raises, changing nothing, unless innermost
    lucid_fw_level = 0


def _current_dual_level():
    """The active level's id in this thread, or None."""
    return lucid_fw_level if lucid_fw_level != 0 else None


def make_dual(tensor, tangent, *, level=None):
    """A dual tensor: tensor's values and history, with tangent as its forward-mode derivative."""
    if lucid_fw_level == 0:
        raise RuntimeError("make_dual needs an active dual level: use it inside "
                           "`with lucid.autograd.forward_ad.dual_level():`")
    if level is not None and level != lucid_fw_level:
        raise RuntimeError(f"make_dual: level {level} is not the active level ({lucid_fw_level})")
    if not isinstance(tensor, Tensor):
        raise TypeError(f"make_dual: the primal must be a Tensor, not {type(tensor).__name__}")
    cdef Tensor primal = <Tensor>tensor
    if not is_float_dtype(descr(primal.data)):
        raise TypeError(f"make_dual: the primal must be a floating point tensor, not "
                        f"{dtype_name(primal.data.dtype)}")
    cdef Tensor t = checked_tangent(primal, tangent, "make_dual")
    cdef Tensor out = alias(primal)
    set_tangent(out, t)
    return out


def _unpack_dual(tensor):
    """(primal, tangent): a view of tensor without its tangent, and the tangent (or None)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"unpack_dual expects a Tensor, not {type(tensor).__name__}")
    cdef Tensor t = <Tensor>tensor
    cdef Tensor tangent = tangent_of(t)
    if tangent is None:
        return t, None
    return alias(t), tangent
