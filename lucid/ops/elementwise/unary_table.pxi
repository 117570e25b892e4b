# The table ops: one-input elementwise ops whose forward and fused backward are typed loops
# (lucid/kernels/unary_loops.h, one LucidUnary code per op) for fast arrays up to the op's size
# limit, NumPy's kernels and the op's rule otherwise.
#
# Note [Table ops]
#   A small op on NumPy costs a ufunc call (~200 ns before any data, more with np.errstate) in
#   its forward, and its backward one lucid op call per term of its rule (sin: cos(x), then a
#   multiply). A table op instead runs one loop forward and, when nothing records (no
#   create_graph, no forward mode; the rule would build no graph), one loop backward computing
#   g * f'(x) with its rule's formula, written into g when the engine owns g. Otherwise (grad
#   mode on with an input requiring grad, a dual level, arrays not fast, or above the limit) the
#   node runs its rule with lucid's ops, so double backward and forward mode differentiate the
#   same rule as before. The limits (LUCID_UNARY_LIMITS) are where NumPy's SIMD kernels win back,
#   on the NumPy path this process runs (NUMPY_AVX512).


cdef object table_forward(int op, Tensor a, double p, double q):
    """op's typed loop (p, q: its parameters) on a's array when it is fast and within op's
    forward limit, else None (the caller runs NumPy)."""
    if is_fast(a.data) and table_loop_fits(op, a.data, False):
        return table_loop(op, a.data, p, q)
    return None


cdef bint fused_grad_applies(Tensor g, Tensor s):
    """May a backward compute from g and s (its saved input or output) by a fused loop: nothing
    would record (no forward mode, and grad mode off or neither requiring grad), and g, s a fast
    pair (Note [Table ops])?"""
    return not fw_active() and \
        not (grad_enabled() and (g.requires_grad_c() or s.requires_grad_c())) and \
        fast_pair(g.data, s.data)


cdef object numpy_slope(int op, object x):
    """sin' = cos(x) or cos' = -sin(x) of a fast x by NumPy's SIMD kernel, in a new array (None
    for another op): above those ops' limits their backward multiplies it by g in a typed loop,
    the rule's values (-(g*s) is g*(-s) exactly) without its op calls."""
    if op == UN_SIN:
        return np.cos(x, out=empty_like_fast(x))
    if op != UN_COS:
        return None
    cdef object out = np.sin(x, out=empty_like_fast(x))
    return fast_scalar_into(OP_MUL, out, -1.0, out)


cdef Tensor table_grad(Node node, int op, Tensor g, Tensor s, double p, double q):
    """g * op'(x) by op's fused loop (s: the saved input or output) when fused_grad_applies
    and s is within op's backward limit (sin, cos above it: numpy_slope), else None (Note [Table
    ops])."""
    if not fused_grad_applies(g, s):
        return None
    cdef object slope
    if not table_loop_fits(op, s.data, True):
        slope = numpy_slope(op, s.data)
        return None if slope is None else wrap(fast_binary(OP_MUL, g.data, slope, slope))
    if may_overwrite(node, g):
        table_grad_loop(op, g.data, s.data, g.data, p, q)
        return g
    return wrap(table_grad_loop(op, g.data, s.data, None, p, q))


cdef Tensor table_unary(object x, str name, int op, object ufunc, RuleBackward node,
                        bint save_output, unary_rule rule, bint quiet=True):
    """op of x: its typed loop, else ufunc (integer and bool inputs compute in the default float
    dtype, like PyTorch; quiet: NumPy's floating-point warnings silenced, at ~0.7 us a call);
    recorded by rule, node running op's fused loop (UN_NONE: the rule)."""
    cdef Tensor a = operand(x, name)
    cdef object arr = table_forward(op, a, 0.0, 0.0)
    if arr is None and not quiet:
        arr = unary_kernel(ufunc, a)
    elif arr is None:
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            arr = unary_kernel(ufunc, a)
    return record_table(arr, a, node, op, save_output, rule)


cdef Tensor record_table(object arr, Tensor a, RuleBackward node, int op, bint save_output,
                         unary_rule rule):
    """arr, op's forward of a, as a tensor recorded by rule (record_rule), node running op's
    fused loop."""
    node.table_op = op
    return record_rule(wrap(arr), a, node, save_output, rule)


cdef object new_array_like(object arr):
    """An uninitialised C-ordered array of a fast arr's dtype and shape (Note [Array pool])."""
    return empty_like_fast(arr)
