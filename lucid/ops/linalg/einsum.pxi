# Einstein summation: lucid.einsum(equation, *operands).
#
# Note [einsum gradients]: when no operand repeats a letter, einsum is linear in each operand,
# and the gradient of operand k is itself one einsum: the output's gradient g (the output's
# letters) with every other operand, summed down to operand k's letters. A letter only operand k
# has (summed away by the forward) is supplied by a constant ones operand with that letter, so the
# gradient is broadcast along it. A letter repeated within one operand ("ii->i") is first taken
# as a diagonal (a view, whose backward puts the gradient back on the diagonal), so the einsum
# that records a node only ever sees distinct letters. The jvp is the sum over operands of the
# einsum with that operand replaced by its tangent.

cdef tuple parse_einsum(str equation, list ts):
    """(input subscripts, output subscripts, {letter: size}) of equation for the operands ts."""
    cdef str eq = equation.replace(" ", "")
    cdef str lhs, out, sub
    cdef dict sizes = {}
    cdef Py_ssize_t i
    if "." in eq:
        raise RuntimeError(f"einsum: ellipsis ('...') is not supported in {equation!r}; name "
                           "every dim with a letter")
    if eq.count("->") > 1:
        raise RuntimeError(f"einsum: {equation!r} has more than one '->'")
    lhs, out = eq.split("->") if "->" in eq else (eq, None)
    cdef list ins = lhs.split(",")
    if len(ins) != len(ts):
        raise RuntimeError(f"einsum: {equation!r} names {len(ins)} operand(s) but {len(ts)} "
                           "were given")
    for i in range(len(ins)):
        sub = ins[i]
        shape = (<Tensor>ts[i]).data.shape
        if not (sub == "" or (sub.isascii() and sub.isalpha())):
            raise RuntimeError(f"einsum: subscripts {sub!r} of operand {i} must be letters "
                               "a-z, A-Z")
        if len(sub) != len(shape):
            raise RuntimeError(f"einsum: operand {i} has {len(shape)} dims (shape {shape}) but "
                               f"its subscripts {sub!r} name {len(sub)}")
        for c, n in zip(sub, shape):
            if sizes.setdefault(c, n) != n:
                raise RuntimeError(f"einsum: letter {c!r} has size {sizes[c]} in one place but "
                                   f"{n} in operand {i} (shape {shape}); sizes must be equal")
    if out is None:                  # implicit form: the letters used once, alphabetically
        out = "".join(sorted([c for c in sizes if lhs.count(c) == 1]))
    if not (out == "" or (out.isascii() and out.isalpha())):
        raise RuntimeError(f"einsum: output subscripts {out!r} must be letters a-z, A-Z")
    for c in out:
        if c not in sizes:
            raise RuntimeError(f"einsum: output letter {c!r} of {equation!r} is in no operand")
        if out.count(c) > 1:
            raise RuntimeError(f"einsum: output letter {c!r} of {equation!r} appears twice")
    return ins, out, sizes


cdef tuple distinct_letters(Tensor t, str sub):
    """t with each letter that sub repeats taken as a diagonal (last dim), and its subscripts."""
    cdef Py_ssize_t p, q
    while True:
        q = -1
        for p in range(len(sub)):
            q = sub.find(sub[p], p + 1)
            if q >= 0:
                break
        if q < 0:
            return t, sub
        c = sub[p]
        t = diagonal(t, 0, p, q)
        sub = sub[:p] + sub[p + 1:q] + sub[q + 1:] + c


cdef class EinsumBackward(Node):
    """z = einsum(s_1,...,s_n->o; x_1..x_n)  ->  g_k = einsum(o, s_j (j != k), ones(letters only
    s_k has) -> s_k; g, x_j, ...)  (Note [einsum gradients])"""
    cdef list subs
    cdef str out
    cdef dict sizes
    cdef list saved               # a SavedTensor per operand another operand's gradient reads
    cdef list dtypes

    cdef void release_saved(self):
        self.saved = None

    cdef tuple apply(self, tuple grads):
        if self.saved is None:
            raise_freed_graph(self)
        cdef Tensor g = grads[0]
        cdef list xs = [None if s is None else (<SavedTensor>s).unpack(self) for s in self.saved]
        cdef list result = []
        cdef Py_ssize_t k
        for k in range(self.num_inputs):
            result.append(reduce_grad(einsum_operand_grad(g, xs, self.subs, self.out,
                                                          self.sizes, k), None, self.dtypes[k])
                          if needs(self, k) else None)
        return tuple(result)


cdef Tensor einsum_operand_grad(Tensor g, list xs, list subs, str out, dict sizes, Py_ssize_t k):
    """Note [einsum gradients]: g pulled back to operand k, as one einsum."""
    cdef list subs_g = [out], ops = [g]
    cdef set have = set(out)
    cdef Py_ssize_t j
    for j in range(len(subs)):
        if j != k:
            subs_g.append(subs[j])
            ops.append(xs[j])
            have.update(subs[j])
    cdef str only = "".join([c for c in subs[k] if c not in have])
    if only:
        subs_g.append(only)
        ops.append(wrap(np.ones(tuple([sizes[c] for c in only]), dtype=g.data.dtype)))
    return einsum_core(subs_g, subs[k], ops, sizes)


cdef Tensor einsum_jvp(list subs, str out, list ts, dict sizes, Tensor result):
    """Note [einsum gradients]: the sum over operands k with a tangent of einsum(..., t_k, ...)."""
    cdef list tangents = [tangent_of(<Tensor>t) for t in ts]
    cdef Tensor total = None
    cdef Py_ssize_t k
    cdef list ops
    cdef long level = suspend_fw()
    try:
        for k in range(len(ts)):
            if tangents[k] is not None:
                ops = list(ts)
                ops[k] = tangents[k]
                total = add_tangents(total, einsum_core(subs, out, ops, sizes))
        return fit_tangent(total, result)
    finally:
        resume_fw(level)


cdef Py_ssize_t EINSUM_OPTIMIZE_SIZE = 4096   # from here on NumPy's contraction paths (BLAS) pay


cdef Tensor einsum_core(list subs, str out, list ts, dict sizes):
    """The einsum of operands whose subscripts have distinct letters; records EinsumBackward."""
    cdef cnp.dtype dt = joined_dtype(ts)
    cdef list arrays = [(<Tensor>t).data if descr((<Tensor>t).data) is dt or
                        (<Tensor>t).data.dtype == dt else (<Tensor>t).data.astype(dt) for t in ts]
    cdef Py_ssize_t total = 0, j
    for a in arrays:
        total += a.size
    cdef object arr = as_array(np.einsum(",".join(subs) + "->" + out, *arrays,
                                         optimize=len(arrays) > 2 or total >= EINSUM_OPTIMIZE_SIZE))
    for a in arrays:                 # NumPy returns a view for a mere transposition
        if np.may_share_memory(arr, a):
            arr = arr.copy()
            break
    cdef Tensor z = wrap(arr)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(z, einsum_jvp(subs, out, ts, sizes, z))
    cdef bint wanted = False
    for t in ts:
        wanted = wanted or (<Tensor>t).requires_grad_c()
    if not (grad_enabled() and wanted):
        return z
    cdef EinsumBackward node = EinsumBackward.__new__(EinsumBackward)
    record_join(node, z, ts)
    node.subs = subs
    node.out = out
    node.sizes = sizes
    node.dtypes = [descr((<Tensor>t).data) for t in ts]
    node.saved = []
    cdef Py_ssize_t n = len(ts), k
    cdef bint read
    cdef bint cplx = descr(z.data).kind == b'c'     # Note [Complex gradients]: conjugated
    for j in range(n):
        read = False                 # operand j is read by the gradient of every other operand
        for k in range(n):
            read = read or (k != j and needs(node, k))
        node.saved.append(save_tensor(conj(<Tensor>ts[j]) if cplx else <Tensor>ts[j], node,
                                      False) if read else None)
    return z


def einsum(equation, *operands):
    """Einstein summation over the operands' letters, e.g. einsum("ij,jk->ik", a, b) == a @ b.

    Operands may also be given as one list; without '->' the output is the letters used once,
    in alphabetical order; a letter repeated in one operand ("ii->i") takes its diagonal."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum: the equation must be a str, not {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if len(operands) == 0:
        raise RuntimeError("einsum: needs at least one operand")
    cdef list ts = []
    for i, x in enumerate(operands):
        if not isinstance(x, Tensor):
            raise TypeError(f"einsum: operand {i} must be a Tensor, not {type(x).__name__}")
        ts.append(x)
    ins, out, sizes = parse_einsum(equation, ts)
    cdef Py_ssize_t k
    for k in range(len(ts)):
        ts[k], ins[k] = distinct_letters(<Tensor>ts[k], <str>ins[k])
    return einsum_core(ins, out, ts, sizes)
define_op(einsum, CUSTOM, FLOAT_ONLY, method="none")
