# Fused tangents: the jvp of the common elementwise ops, computed by the typed loops right after
# the op's own output, inside the op call.
#
# Note [Fused tangents]
#   The general jvp of an op (Note [Forward mode]) suspends forward mode and runs the op's rule
#   with lucid's ops: each term is a full op call (operand checks, promotion, a tensor, a
#   possible node), and the sum of the terms is fitted to the output and given its own memory.
#   For a chain of small ops that costs more than the op itself. When the op's primal ran on
#   fast arrays (lucid/kernels/typed_loops.pxi), every tangent it reads is a fast array of its primal's dtype
#   and shape, and nothing could be recorded (grad mode off, or neither the inputs nor their
#   tangents require grad), the op instead computes its rule's formula directly with the same
#   typed loops, term by term with the same roundings, into memory no live tensor uses: the
#   tangents are bit for bit the general path's, which still runs in every other case. The
#   tangent is stored as the bare array; tangent_tensor (forward/forward_ad.pxi) makes it a tensor the
#   first time anything asks for it, so a chain of fused ops makes no tangent tensors at all.
#   These functions return False when they do not apply (the caller then runs the general jvp);
#   each reads the active level once.
#
#   Their new arrays come from empty_like_fast, so a chain of fused ops reuses the tangent arrays
#   of the tensors it drops (Note [Array pool]).

cdef object NOT_FUSABLE = object()      # fused_input: the tangent is there, but not fast


cdef inline object fused_input(Tensor t, long level, bint recording):
    """t's tangent at level as a fast array of t's dtype and shape; None when t has none, and
    NOT_FUSABLE when it is of another form or (recording) requires grad."""
    cdef TensorExtra e = t._extra
    if e is None:
        return None
    if e.fw_outer is not None:
        return NOT_FUSABLE                       # tangents at several levels: the general path
    if e.fw_level != level or e.fw_grad is None:
        return None
    cdef object g = e.fw_grad
    if type(g) is not cnp.ndarray:
        if recording and (<Tensor>g).requires_grad_c():
            return NOT_FUSABLE
        g = (<Tensor>g).data
    return g if fast_pair(g, t.data) else NOT_FUSABLE


cdef inline void give_tangent(Tensor out, object arr, long level) except *:
    """out's tangent at level: arr itself (tangent_tensor makes it a tensor on first need), or a
    tensor over it marked like out under inference mode."""
    cdef Tensor t
    cdef TensorExtra e = tensor_extra(out)
    if e.inference:
        t = wrap(arr)
        tensor_extra(t).inference = True
        arr = t
    e.fw_grad = arr
    e.fw_level = level


cdef object fast_negative(object x):
    """-x into a new array (np.negative's values: x * -1 is exact, and makes -0 of +0); x fast."""
    return fast_scalar(OP_MUL, x, -1.0)


cdef object fast_copy(object x):
    """A copy of x in new memory; x fast."""
    cdef object out = empty_like_fast(x)
    cdef cnp.ndarray a = <cnp.ndarray>x
    memcpy(cnp.PyArray_DATA(<cnp.ndarray>out), cnp.PyArray_DATA(a), cnp.PyArray_NBYTES(a))
    return out


cdef inline long fused_level(bint recording, Tensor a, Tensor b) noexcept:
    """The active level when a fused tangent may run for inputs a (and b, or None), else 0: not
    below another level (a bare array carries no tangent of its own: Note [Nested forward
    mode])."""
    cdef long level = lucid_fw_level
    if lucid_fw_depth > 1 and outer_dual_level(level) != 0:
        return 0
    if recording and (a.requires_grad_c() or (b is not None and b.requires_grad_c())):
        return 0
    return level


# -- tensor (op) number: the ops linear in the tensor -------------------------------------------

cdef bint fused_scalar_tangent(int fop, Tensor a, double s, Tensor out) except -1:
    """out = a (fop) s, or s - a for OP_RSUB: its tangent as scalar_jvp's, by the typed loops.
    a + s, a - s: a copy of a's tangent; s - a: its negation; a * s, a / s: the same op on it."""
    if fop == OP_RDIV:
        return False
    cdef bint recording = grad_enabled()
    cdef long level = fused_level(recording, a, None)
    if level == 0:
        return False
    cdef object ta = fused_input(a, level, recording), arr
    if ta is None:
        return True                      # no tangent in, none out
    if ta is NOT_FUSABLE:
        return False
    if fop == OP_ADD or fop == OP_SUB:
        arr = fast_copy(ta)
    elif fop == OP_RSUB:
        arr = fast_negative(ta)
    else:
        arr = fast_scalar(fop, ta, s)
    give_tangent(out, arr, level)
    return True


# -- tensor (op) tensor of one shape and dtype ---------------------------------------------------

cdef object fused_binary_terms(int op, object ta, object tb, object x, object y):
    """rule_x(ta, x, y) + rule_y(tb, x, y) of binary op (Note [Elementwise rules]) on fast
    arrays, each term and the sum rounded as the ops of the rules round them; ta or tb may be
    None (that term is absent)."""
    cdef object tx = None, ty = None
    if (op == OP_ADD or op == OP_SUB) and ta is not None and tb is not None:
        return fast_binary(op, ta, tb, None)     # ta + tb; ta + (-tb) is exactly ta - tb
    if ta is not None:                   # add, sub: ta; mul: ta*y; div: ta/y
        tx = fast_copy(ta) if op == OP_ADD or op == OP_SUB else \
            fast_binary(OP_MUL if op == OP_MUL else OP_DIV, ta, y, None)
    if tb is not None:                   # add: tb; sub: -tb; mul: tb*x; div: -(tb*x)/(y*y)
        if op == OP_ADD:
            ty = fast_copy(tb)
        elif op == OP_SUB:
            ty = fast_negative(tb)
        else:
            ty = fast_binary(OP_MUL, tb, x, None)
            if op == OP_DIV:
                fast_binary(OP_DIV, ty, fast_binary(OP_MUL, y, y, None), ty)
                ty = fast_negative(ty)
    if tx is None:
        return ty
    if ty is not None:
        fast_binary(OP_ADD, tx, ty, tx)
    return tx


cdef bint fused_binary_tangent(int op, Tensor a, Tensor b, Tensor out) except -1:
    """The tangent of out = a (op) b for a fast pair a, b (op: add, sub, mul, div), as
    binary_jvp's, by the typed loops."""
    cdef bint recording = grad_enabled()
    cdef long level = fused_level(recording, a, b)
    if level == 0:
        return False
    cdef object ta = fused_input(a, level, recording), tb = fused_input(b, level, recording)
    if ta is None and tb is None:
        return True
    if ta is NOT_FUSABLE or tb is NOT_FUSABLE:
        return False
    give_tangent(out, fused_binary_terms(op, ta, tb, a.data, b.data), level)
    return True


# -- unary ops -----------------------------------------------------------------------------------

cdef object fused_unary_term(unary_rule rule, object t, object x, object y):
    """rule(t, x, y) on fast arrays for the rules with a typed form, else None: exp t*y,
    log t/x, tanh t*(1 - y*y), sigmoid t*y*(1 - y), sqrt t/(y*2)."""
    if rule == exp_rule:
        return fast_binary(OP_MUL, t, y, None)
    if rule == log_rule:
        return fast_binary(OP_DIV, t, x, None)
    if rule == tanh_rule or rule == sigmoid_rule:
        return fast_fused_backward(rule == tanh_rule, t, y)
    if rule == sqrt_rule:
        return fast_binary(OP_DIV, t, fast_scalar(OP_MUL, y, 2.0), None)
    return None


cdef bint fused_unary_tangent(unary_rule rule, Tensor a, Tensor out) except -1:
    """out's tangent by rule (Note [Elementwise rules]) through fused_unary_term, when a and out
    are fast arrays of one dtype and shape."""
    if not fast_pair(a.data, out.data):
        return False
    cdef bint recording = grad_enabled()
    cdef long level = fused_level(recording, a, None)
    if level == 0:
        return False
    cdef object ta = fused_input(a, level, recording)
    if ta is None:
        return True
    if ta is NOT_FUSABLE:
        return False
    cdef object arr = fused_unary_term(rule, ta, a.data, out.data)
    if arr is None:
        return False
    give_tangent(out, arr, level)
    return True
