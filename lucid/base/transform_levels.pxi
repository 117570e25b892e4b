# Transform levels: one stack per thread, shared by vmap's batch levels and forward mode's dual
# levels.
#
# Note [Transform levels]
#   Each transform that changes what an op computes (a vmap: its tensors carry a batch dim; a dual
#   level: its tensors carry tangents) enters a level on this thread's stack and exits it in the
#   reverse order (LIFO). A level has a kind, an id unique in the process (so a tensor stamped
#   with a level made in another thread, or in an exited level, never matches an active one) and,
#   for a batch level, its batch size. Forward mode's dual levels are such levels, and nest
#   (Note [Nested forward mode]: a dual tensor's tangents at outer levels are in
#   TensorExtra.fw_outer, the innermost staying in fw_grad); a batched tensor's (level, batch
#   dim) pairs are reserved in TensorExtra.batch_dims. A dual level enters and leaves through
#   forward_ad's dual_level (pop_level refuses forward mode's levels), and suspending a level
#   while its jvp rule runs leaves the stack as it is. The stack is a fixed C thread-local array (no allocation);
#   every level counts in rare_modes (Note [Rare modes]), so while no thread has a level no op
#   reads it. Reverse mode is not a level: it stays the engine.

cdef extern from *:
    """
    static __thread lucid_transform_level lucid_levels[LUCID_MAX_TRANSFORM_LEVELS];
    static __thread int lucid_level_depth = 0;
    """
    TransformLevel lucid_levels[]
    int lucid_level_depth           # levels on this thread's stack


cdef long _level_counter = 0        # the last level id given out, in any thread


cdef long push_level(int kind, Py_ssize_t size) except -1:
    """Enter a level of kind (LEVEL_BATCH with its batch size, or LEVEL_DUAL with size 0) on this
    thread's stack; returns its id."""
    global _level_counter, lucid_level_depth, rare_modes
    if kind == LEVEL_BATCH:
        if size < 0:
            raise ValueError(f"push_level: a batch level's size must be >= 0, not {size}")
    elif kind == LEVEL_DUAL:
        if size != 0:
            raise ValueError(f"push_level: a dual level has no size (0), not {size}")
    else:
        raise ValueError(f"push_level: unknown level kind {kind}")
    if lucid_level_depth >= MAX_TRANSFORM_LEVELS:
        raise RuntimeError(f"push_level: transforms nest at most {MAX_TRANSFORM_LEVELS} levels "
                           "deep in a thread")
    _level_counter += 1
    cdef TransformLevel* level = &lucid_levels[lucid_level_depth]
    level.kind = kind
    level.id = _level_counter
    level.size = size
    lucid_level_depth += 1
    rare_modes += 1                            # Note [Rare modes]
    return _level_counter


cdef str kind_name(int kind):
    """'batch' or 'dual': a level kind as messages and the testing hook name it."""
    return "batch" if kind == LEVEL_BATCH else "dual"


cdef str level_name(TransformLevel level):
    """'batch level 3' / 'dual level 4': a level as error messages name it."""
    return f"{kind_name(level.kind)} level {level.id}"


cdef int exit_level(long id, str where) except -1:
    """Pop level id, which must be this thread's innermost; RuntimeError naming where if not."""
    global lucid_level_depth, rare_modes
    if lucid_level_depth == 0:
        raise RuntimeError(f"{where}: no transform level is active in this thread")
    cdef TransformLevel innermost = lucid_levels[lucid_level_depth - 1]
    if innermost.id != id:
        raise RuntimeError(f"{where}: level {id} is not the innermost transform level of this "
                           f"thread ({level_name(innermost)} is): levels exit in the reverse "
                           "order of entering")
    lucid_level_depth -= 1
    rare_modes -= 1                            # Note [Rare modes]
    return 0


cdef int pop_level(long id) except -1:
    if is_fw_level(id):
        raise RuntimeError(f"pop_level: level {id} is one of forward mode's dual levels: leave "
                           "it with exit_dual_level (or the dual_level block)")
    return exit_level(id, "pop_level")


cdef int transform_depth() noexcept nogil:
    return lucid_level_depth


cdef TransformLevel innermost_level() noexcept nogil:
    cdef TransformLevel none
    if lucid_level_depth == 0:
        none.kind = LEVEL_NONE
        none.id = 0
        none.size = 0
        return none
    return lucid_levels[lucid_level_depth - 1]


# -- a testing hook (private): the C functions above, reached from Python ------------------------

cdef dict _LEVEL_KINDS = {"batch": LEVEL_BATCH, "dual": LEVEL_DUAL}


cdef tuple level_tuple(TransformLevel level):
    """(kind name, id, size) of a level; None for LEVEL_NONE."""
    if level.kind == LEVEL_NONE:
        return None
    return (kind_name(level.kind), level.id, level.size)


def _debug_push_level(str kind, Py_ssize_t size=0):
    """Testing hook, private: push_level() of a "batch" or "dual" level; returns its id. A dual
    level pushed here is only a stack entry (forward mode enters its levels itself)."""
    if kind not in _LEVEL_KINDS:
        raise ValueError(f"_debug_push_level: kind must be 'batch' or 'dual', not {kind!r}")
    return push_level(_LEVEL_KINDS[kind], size)


def _debug_pop_level(long id):
    """Testing hook, private: pop_level(id)."""
    pop_level(id)


def _debug_levels():
    """Testing hook, private: this thread's transform levels as {"depth": transform_depth(),
    "innermost": innermost_level(), "stack": (level, ...) outermost first}, each level a
    (kind, id, size) tuple and innermost None when the stack is empty."""
    cdef int i
    cdef list stack = []
    for i in range(lucid_level_depth):
        stack.append(level_tuple(lucid_levels[i]))
    return {"depth": transform_depth(), "innermost": level_tuple(innermost_level()),
            "stack": tuple(stack)}
