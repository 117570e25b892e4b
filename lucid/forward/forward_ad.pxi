# Forward-mode AD: dual levels, tangents on tensors, and the helpers every op's jvp rule uses.
#
# Note [Forward mode]
#   A tensor's tangent lives in its TensorExtra (fw_grad), stamped with the dual level it was
#   made in (fw_level). A level is active per thread (lucid_fw_level, a C thread-local holding the
#   level's id; 0 when none), entered and exited as a LEVEL_DUAL level of the thread's transform
#   stack (Note [Transform levels]), which gives it its id: a tangent whose stamp is not the
#   active level is not there, so leaving a level drops every tangent made in it at once. Levels
#   nest (Note [Nested forward mode]). Each op, after computing its output, checks one flag
#   (fw_active) and only then reads its inputs' tangents and runs its jvp rule, once per level.
#   Rules are written with lucid's differentiable ops and run with the level suspended (the next
#   outer level, if any, active instead), but with grad mode as it is, so reverse mode can
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

# Note [Nested forward mode]
#   Dual levels nest (API.md section 7). This thread's forward-mode levels are a C stack of ids
#   (lucid_fw_ids, innermost last, each also a LEVEL_DUAL level of the transform stack); ids grow
#   inwards. lucid_fw_level is the level ops work at: the innermost one, or while a jvp rule of
#   level L runs, the level just outside L (suspend_fw), so the ops of L's rule carry the outer
#   levels' tangents: L's tangent is itself a dual at the outer levels, and nothing of L can reach
#   an outer level's tangent (no perturbation confusion). The levels visible to an op are those
#   from lucid_fw_level outwards; each op's jvp block runs once per visible level, outermost
#   first (`for _fw_lv in fw_levels():` under `if fw_active():`), with lucid_fw_level set to
#   that level, so a rule reading the op's output sees its outer tangents already there. In-place
#   ops go innermost first (fw_levels_inner_first), so an inner rule reads the self of before
#   the outer tangents changed. A tensor's tangents: the innermost it has in fw_grad/fw_level,
#   the others in TensorExtra.fw_outer [(level, tangent), ...] outermost first. With one level
#   the loop is a one-element tuple and nothing else changes; fused tangents (bare arrays,
#   no graph) are used only at the outermost visible level.

cdef extern from *:
    """
    static __thread long lucid_fw_ids[LUCID_MAX_TRANSFORM_LEVELS];
    static __thread int lucid_fw_depth = 0;
    """
    long lucid_fw_ids[]
    int lucid_fw_depth              # forward-mode dual levels entered in this thread


cdef long outer_dual_level(long level) noexcept nogil:
    """The forward-mode level just outside level in this thread (0: none, or level is 0)."""
    cdef int i = lucid_fw_depth - 1
    while i >= 0:
        if lucid_fw_ids[i] < level:
            return lucid_fw_ids[i]
        i -= 1
    return 0


cdef bint is_fw_level(long level) noexcept nogil:
    """Is level one of this thread's entered forward-mode levels?"""
    cdef int i
    for i in range(lucid_fw_depth):
        if lucid_fw_ids[i] == level:
            return True
    return False


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


cdef Tensor tangent_at(Tensor t, long level):
    """t's tangent at level, or None (Note [Nested forward mode])."""
    cdef TensorExtra e = t._extra
    if e is None or level == 0:
        return None
    if e.fw_level == level and e.fw_grad is not None:
        return tangent_tensor(e)
    if e.fw_outer is not None:
        for entry in e.fw_outer:
            if (<tuple>entry)[0] == level:
                return <Tensor>(<tuple>entry)[1]
    return None


cdef inline Tensor tangent_of(Tensor t):
    """t's tangent at the active level, or None."""
    cdef TensorExtra e = t._extra
    if e is None or lucid_fw_level == 0:
        return None
    if e.fw_level == lucid_fw_level and e.fw_grad is not None:
        return tangent_tensor(e)
    if e.fw_outer is None:
        return None
    return tangent_at(t, lucid_fw_level)


cdef list live_outer(TensorExtra e, long level):
    """e's tangents at entered levels other than level, as fw_outer holds them (or None)."""
    cdef list kept = []
    if e.fw_outer is not None:
        for entry in e.fw_outer:
            if (<tuple>entry)[0] != level and is_fw_level((<tuple>entry)[0]):
                kept.append(entry)
    return kept


cdef void set_tangent_at(Tensor t, Tensor tangent, long level) except *:
    """Give t a tangent at level (None: nothing), keeping its tangents at the other levels:
    the innermost in fw_grad, the others in fw_outer (Note [Nested forward mode])."""
    if tangent is None:
        return
    cdef TensorExtra e = tensor_extra(t)
    if e.fw_outer is None and (e.fw_grad is None or e.fw_level == level
                               or not is_fw_level(e.fw_level)):
        e.fw_grad = tangent                      # the one-level case
        e.fw_level = level
        return
    cdef list kept = live_outer(e, level)
    if e.fw_grad is not None and e.fw_level != level and is_fw_level(e.fw_level):
        kept.append((e.fw_level, tangent_tensor(e)))
    kept.append((level, tangent))
    kept.sort(key=_entry_level)
    e.fw_level, e.fw_grad = kept.pop()           # the innermost
    e.fw_outer = kept or None


def _entry_level(tuple entry):
    return entry[0]


cdef inline void set_tangent(Tensor t, Tensor tangent):
    """Give t a tangent at the active level (None: nothing)."""
    cdef TensorExtra e
    if tangent is not None:
        e = tensor_extra(t)
        if e.fw_outer is None and (e.fw_grad is None or e.fw_level == lucid_fw_level
                                   or lucid_fw_depth == 1):
            e.fw_grad = tangent
            e.fw_level = lucid_fw_level
        else:
            set_tangent_at(t, tangent, lucid_fw_level)


cdef bint has_tangent(Tensor t):
    """Has t a tangent at any level visible from the active one?"""
    cdef long level = lucid_fw_level
    while level != 0:
        if tangent_at(t, level) is not None:
            return True
        level = outer_dual_level(level)
    return False


cdef void copy_tangents(Tensor dst, Tensor src, long skip) except *:
    """dst gets src's tangents at every entered level but skip (0: none skipped)."""
    cdef int i
    cdef long level
    for i in range(lucid_fw_depth):
        level = lucid_fw_ids[i]
        if level != skip:
            set_tangent_at(dst, tangent_at(src, level), level)


cdef void save_tangents(SavedTensor s, Tensor t) except *:
    """s keeps saved output t's tangents (forward-over-reverse): the one as it is, several in a
    carrier tensor whose extra holds them, marked by level -1 (Note [Nested forward mode])."""
    cdef TensorExtra e = t._extra
    if e is None or e.fw_grad is None:
        return
    if e.fw_outer is None:
        s.fw_tangent = tangent_tensor(e)         # ops give an output its tangent first
        s.fw_level = e.fw_level
        return
    cdef Tensor carrier = Tensor.__new__(Tensor)
    gc_untrack(carrier)                          # Note [GC tracking]
    carrier.data = t.data
    cdef TensorExtra c = tensor_extra(carrier)
    c.fw_grad = tangent_tensor(e)
    c.fw_level = e.fw_level
    c.fw_outer = list(e.fw_outer)
    s.fw_tangent = carrier
    s.fw_level = -1


cdef void restore_tangents(Tensor t, Tensor tangent, long level) except *:
    """Give an unpacked saved output t the tangents save_tangents kept, at the visible levels."""
    if level == lucid_fw_level:
        set_tangent(t, tangent)
        return
    if lucid_fw_level == 0:
        return
    if level > 0:
        if level < lucid_fw_level and is_fw_level(level):
            set_tangent_at(t, tangent, level)
        return
    cdef TensorExtra c = tangent._extra
    cdef list entries = list(c.fw_outer) + [(c.fw_level, tangent_tensor(c))]
    for entry in entries:
        level = (<tuple>entry)[0]
        if level <= lucid_fw_level and is_fw_level(level):
            set_tangent_at(t, <Tensor>(<tuple>entry)[1], level)


cdef inline long suspend_fw() noexcept nogil:
    """Leave the active level while its jvp rule runs (the next outer level, if any, becomes the
    active one: Note [Nested forward mode]); returns the level to resume."""
    global lucid_fw_level
    cdef long level = lucid_fw_level
    if level != 0:
        lucid_fw_level = outer_dual_level(level) if lucid_fw_depth > 1 else 0
    return level


cdef inline long suspend_all_fw() noexcept nogil:
    """Turn forward mode off (a Function's forward); returns the level to resume."""
    global lucid_fw_level
    cdef long level = lucid_fw_level
    lucid_fw_level = 0
    return level


cdef tuple ONE_LEVEL = (None,)


@cython.final
cdef class FwLevelLoop:
    """Iterates the visible levels, making each the active one; the active level comes back at
    the end, and when the loop is left early (an exception, a return) with the iterator."""
    cdef long top
    cdef int n, i
    cdef long levels[MAX_TRANSFORM_LEVELS]

    def __iter__(self):
        return self

    def __next__(self):
        global lucid_fw_level
        if self.i >= self.n:
            lucid_fw_level = self.top
            raise StopIteration
        lucid_fw_level = self.levels[self.i]
        self.i += 1
        return None

    def __dealloc__(self):
        global lucid_fw_level
        lucid_fw_level = self.top


cdef object level_loop(bint inner_first):
    """The visible levels (lucid_fw_level and those outside it) for one op's jvp block."""
    cdef long top = lucid_fw_level
    if lucid_fw_depth <= 1 or outer_dual_level(top) == 0:
        return ONE_LEVEL
    cdef FwLevelLoop loop = FwLevelLoop.__new__(FwLevelLoop)
    loop.top = top
    cdef long level = top
    cdef int n = 0
    while level != 0:
        loop.levels[n] = level
        n += 1
        level = outer_dual_level(level)
    cdef int k
    cdef long swap
    if not inner_first:
        for k in range(n // 2):
            swap = loop.levels[k]
            loop.levels[k] = loop.levels[n - 1 - k]
            loop.levels[n - 1 - k] = swap
    loop.n = n
    return loop


cdef object fw_levels():
    """`for _ in fw_levels():` runs an op's jvp block once per visible level, outermost first
    (Note [Nested forward mode])."""
    return level_loop(False)


cdef object fw_levels_inner_first():
    """The same, innermost first (in-place ops)."""
    return level_loop(True)


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
    """out's values, history and tangents for a jvp rule that reads the op's output: under grad
    mode a new tensor, so a tangent's recorded graph does not hold out (out -> tangent -> node
    -> out would be a cycle among objects the GC does not watch: Note [GC tracking])."""
    if not grad_enabled():
        return out
    cdef Tensor y = wrap(out.data)
    y._storage = out.storage()
    if out._grad_fn is not None:
        attach_output(y, out._grad_fn, out._output_nr)
    if lucid_fw_depth > 1:
        copy_tangents(y, out, 0)         # the outer levels' (Note [Nested forward mode])
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
    if not is_float_dtype(descr(t.data)) and descr(t.data).kind != b'c':
        raise TypeError(f"{where}: a tangent must be a floating point or complex tensor, not "
                        f"{dtype_name(t.data.dtype)}")
    if descr(t.data).kind == b'c' and descr(primal.data).kind != b'c':
        raise TypeError(f"{where}: a complex tangent needs a complex primal, not "
                        f"{dtype_name(primal.data.dtype)}")
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
    """Start a dual level in this thread (a LEVEL_DUAL transform level), inside any already
    entered (Note [Nested forward mode]); returns its id."""
    global lucid_fw_level, lucid_fw_depth
    if lucid_fw_depth >= MAX_TRANSFORM_LEVELS:
        raise RuntimeError(f"enter_dual_level: forward-mode levels nest at most "
                           f"{MAX_TRANSFORM_LEVELS} deep in a thread")
    cdef long id = push_level(LEVEL_DUAL, 0)     # counts in rare_modes (Note [Rare modes])
    lucid_fw_ids[lucid_fw_depth] = id
    lucid_fw_depth += 1
    lucid_fw_level = id
    return id


def _exit_dual_level(level=None):
    """End this thread's innermost dual level (or level, which must be the innermost): every
    tangent made in it is dropped."""
    global lucid_fw_level, lucid_fw_depth
    if lucid_fw_depth == 0:
        raise RuntimeError("exit_dual_level: no dual level is active in this thread")
    cdef long innermost = lucid_fw_ids[lucid_fw_depth - 1]
    if level is not None and level != innermost:
        if isinstance(level, int) and is_fw_level(level):
            raise RuntimeError(f"exit_dual_level: level {level} is not the innermost dual level "
                               f"({innermost} is): dual levels exit in the reverse order of "
                               "entering (exit the inner ones first)")
        raise RuntimeError(f"exit_dual_level: level {level} is not an active dual level of this "
                           f"thread (the innermost is {innermost})")
    exit_level(innermost, "exit_dual_level")   # raises, changing nothing, unless innermost
    lucid_fw_depth -= 1
    lucid_fw_level = lucid_fw_ids[lucid_fw_depth - 1] if lucid_fw_depth > 0 else 0


def _current_dual_level():
    """The innermost dual level's id in this thread, or None."""
    return lucid_fw_ids[lucid_fw_depth - 1] if lucid_fw_depth > 0 else None


cdef long chosen_level(object level, str where) except -1:
    """The level make_dual/unpack_dual work at: the innermost for None, else level, which must
    be an entered dual level of this thread."""
    if lucid_fw_depth == 0:
        raise RuntimeError(f"{where} needs an active dual level: use it inside "
                           "`with lucid.autograd.forward_ad.dual_level():`")
    if level is None:
        return lucid_fw_ids[lucid_fw_depth - 1]
    if isinstance(level, bool) or not isinstance(level, int):
        raise TypeError(f"{where}: level must be an int (a dual level's id) or None, not "
                        f"{type(level).__name__}")
    if not is_fw_level(level):
        raise RuntimeError(f"{where}: level {level} is not an active dual level of this thread")
    return level


def make_dual(tensor, tangent, *, level=None):
    """A dual tensor: tensor's values and history, with tangent as its forward-mode derivative at
    level (the innermost when None); tensor's tangents at the other levels are kept."""
    cdef long lv = chosen_level(level, "make_dual")
    if not isinstance(tensor, Tensor):
        raise TypeError(f"make_dual: the primal must be a Tensor, not {type(tensor).__name__}")
    cdef Tensor primal = <Tensor>tensor
    if not is_float_dtype(descr(primal.data)) and descr(primal.data).kind != b'c':
        raise TypeError(f"make_dual: the primal must be a floating point or complex tensor, not "
                        f"{dtype_name(primal.data.dtype)}")
    cdef Tensor t = checked_tangent(primal, tangent, "make_dual")
    cdef Tensor out = alias(primal)
    copy_tangents(out, primal, lv)               # a dual of a dual: the outer tangents stay
    set_tangent_at(out, t, lv)
    return out


def _unpack_dual(tensor, level=None):
    """(primal, tangent) at level (the innermost when None): a view of tensor without its tangent
    there (keeping those at the other levels), and the tangent (or None)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"unpack_dual expects a Tensor, not {type(tensor).__name__}")
    cdef Tensor t = <Tensor>tensor
    if lucid_fw_depth == 0:
        if level is not None:
            chosen_level(level, "unpack_dual")
        return t, None
    cdef long lv = chosen_level(level, "unpack_dual")
    cdef Tensor tangent = tangent_at(t, lv)
    if tangent is None:
        return t, None
    cdef Tensor primal = alias(t)
    copy_tangents(primal, t, lv)
    return primal, tangent


def _tangents(tensor):
    """[(level, tangent), ...]: tensor's tangents at this thread's entered dual levels,
    outermost first (private: lucid.autograd._aliases)."""
    cdef Tensor t = <Tensor?>tensor
    cdef list out = []
    cdef Tensor tangent
    cdef int i
    for i in range(lucid_fw_depth):
        tangent = tangent_at(t, lucid_fw_ids[i])
        if tangent is not None:
            out.append((lucid_fw_ids[i], tangent))
    return out
