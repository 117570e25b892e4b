"""Batching rules of matrix ops: NumPy's and lucid's linear algebra broadcast over leading dims,
so the batch dims are more leading dims once each operand's own leading dims are padded to one
length. Vectors (matmul's 1-D operands, solve's vector right-hand side) become matrices first.
"""
import string

from .. import _core, _ops
from .dispatch import family, rule
from .physical import (aligned, is_batched, levels_of, logical_ndim, logical_shape, sizes_of,
                       wrap)
from .trees import rebuild


def _matrix_operands(call, core_ranks, expand=False):
    """Align the tensor arguments: each keeps core_ranks[i] trailing dims, and its leading
    (broadcast) logical dims are padded to the longest; returns the levels. expand: every
    operand, batched or not, gets the batch dims at their sizes (for ops whose results of one
    operand would not be broadcast over another's batch: lstsq's rank)."""
    slots = call.tensor_slots()
    levels = levels_of([v for _, v in slots])
    sizes = sizes_of(levels, [v for _, v in slots]) if expand else None
    leading = 0
    for i, (_, v) in enumerate(slots):
        leading = max(leading, logical_ndim(v) - _core_rank(core_ranks, i, v))
    for i, (slot, v) in enumerate(slots):
        if is_batched(v) or expand:
            call.put(slot, aligned(v, levels, sizes,
                                   rank=leading + _core_rank(core_ranks, i, v)))
    return levels


def _core_rank(core_ranks, i, v):
    r = core_ranks[i] if i < len(core_ranks) else core_ranks[-1]
    return min(r, logical_ndim(v))


def _with_batch(out, batch):
    """A tuple result's empty 1-D placeholders (qr's Q in mode 'r', lstsq's residuals or
    singular values when its driver gives none), which the op makes whatever the batch dims,
    given the batch dims, as each element's placeholder stacked."""
    if not isinstance(out, tuple) or not batch or 0 in batch:
        return out
    items = [_core.checked_expand(_core.checked_reshape(o, (1,) * len(batch) + (0,)),
                                  batch + (0,))
             if isinstance(o, _core.Tensor) and tuple(o.shape) == (0,) else o for o in out]
    return rebuild(type(out), items)


def _batch_of(call):
    """The batch sizes of the call's levels (read before its operands are made physical)."""
    values = [v for _, v in call.tensor_slots()]
    levels = levels_of(values)
    sizes = sizes_of(levels, values)
    return tuple(sizes[level] for level in levels)


@family("batched_matrix")
def batched_matrix(call, core_ranks=(2,)):
    """An op on the last two dims of each operand (linalg: inv, det, svd, solve, ...)."""
    batch = _batch_of(call)
    levels = _matrix_operands(call, core_ranks)
    return wrap(_with_batch(call.run(), batch), levels)


@rule("linalg.lu_solve")
def lu_solve(call):
    """lu_solve(LU, pivots, B): pivots keep one trailing dim, LU and B two."""
    return batched_matrix(call, (2, 1, 2))


def _solver(is_vector, doc, expand=False):
    """The rule of a solver of A X = B whose B may be a vector (batch), as is_vector(A's logical
    shape, B's) says: B made a one-column matrix, the column dropped from the solution."""
    def solver(call):
        a, b = call.get("A"), call.get("B")
        vector = is_vector(logical_shape(a), logical_shape(b))
        if vector:
            call.set("B", _unsqueezed(b, -1))
        batch = _batch_of(call)
        levels = _matrix_operands(call, (2, 2), expand)
        out = call.run()
        if vector and isinstance(out, tuple):
            out = rebuild(type(out), [_core.squeeze(out[0], -1)] + list(out[1:]))
        elif vector:
            out = _core.squeeze(out, -1)
        return wrap(_with_batch(out, batch), levels)
    solver.__doc__ = doc
    return solver


rule("linalg.solve")(_solver(
    lambda a, b: len(b) == 1 or (len(b) == len(a) - 1 and b == a[:-1]),
    "solve(A, B): B is a vector (batch) when it is 1-D or A's shape without its last dim."))
rule("linalg.lstsq")(_solver(
    lambda a, b: len(b) == len(a) - 1,
    "lstsq(A, B): B is a vector (batch) when it has one dim fewer than A (PyTorch's reading).",
    expand=True))


def matmul_physical(a, b, op="matmul"):
    """The physical matmul of logical a @ b (either batched) and the result's levels."""
    ra, rb = logical_ndim(a), logical_ndim(b)
    if ra == 0 or rb == 0:
        raise RuntimeError(f"{op}: both arguments need at least 1 dimension, got {ra} and {rb}")
    levels = levels_of([a, b])
    if ra == 1:
        a = _unsqueezed(a, -2)
    if rb == 1:
        b = _unsqueezed(b, -1)
    leading = max(logical_ndim(a), logical_ndim(b)) - 2
    pa = aligned(a, levels, rank=leading + 2) if is_batched(a) else a
    pb = aligned(b, levels, rank=leading + 2) if is_batched(b) else b
    out = _core.matmul(pa, pb)
    if rb == 1:
        out = _core.squeeze(out, -1)
    if ra == 1:
        out = _core.squeeze(out, -1 if rb == 1 else -2)
    return out, levels


def _unsqueezed(x, d):
    if is_batched(x):
        return wrap(_core.unsqueeze(x.value, d), x.levels)
    return _core.unsqueeze(x, d)


@rule("matmul")
def matmul(call):
    """a @ b: vectors made matrices, leading dims padded, the batch dims broadcast."""
    out, levels = matmul_physical(call.args[0], call.args[1])
    return wrap(out, levels)


def _need_rank(x, rank, op, what):
    if logical_ndim(x) != rank:
        raise RuntimeError(f"{op}: {what} must be a {rank}-d tensor, got {logical_ndim(x)}-d")


def _product_of_rank(op, rank, names):
    """The rule of matmul restricted to operands of one rank (mm: 2, bmm: 3, dot: 1)."""
    def product(call):
        a, b = call.args[0], call.args[1]
        _need_rank(a, rank, op, names[0])
        _need_rank(b, rank, op, names[1])
        out, levels = matmul_physical(a, b, op)
        return wrap(out, levels)
    product.__doc__ = f"{op}(a, b): matmul of two logical {rank}-d tensors."
    return product


rule("mm")(_product_of_rank("mm", 2, ("self", "mat2")))
rule("bmm")(_product_of_rank("bmm", 3, ("self", "mat2")))
rule("dot")(_product_of_rank("dot", 1, ("self", "tensor")))


@rule("outer")
def outer(call):
    """outer(a, b) = a[:, None] * b[None, :] of two logical vectors."""
    a, b = call.args[0], call.args[1]
    _need_rank(a, 1, "outer", "self")
    _need_rank(b, 1, "outer", "vec2")
    levels = levels_of([a, b])
    pa = aligned(_unsqueezed(a, -1), levels, rank=2) if is_batched(a) else _core.unsqueeze(a, -1)
    pb = aligned(b, levels, rank=2) if is_batched(b) else b
    return wrap(_core.mul(pa, pb), levels)


@rule("linalg.multi_dot")
def multi_dot(call):
    """multi_dot(tensors): a chain of matmuls (the first may be a row, the last a column)."""
    tensors = list(call.first())
    if len(tensors) < 2:
        raise RuntimeError("multi_dot(): expected at least 2 tensors but got "
                           f"{len(tensors)}")
    acc = tensors[0]
    for t in tensors[1:]:
        out, levels = matmul_physical(acc, t, "linalg.multi_dot")
        acc = wrap(out, levels) if levels else out
    return acc


@rule("trace")
def trace(call):
    """trace(x): the sum of a logical matrix's diagonal."""
    x = call.first()
    _need_rank(x, 2, "trace", "input")
    k = len(x.levels)
    return wrap(_core.sum(_ops.diagonal(x.value, 0, k, k + 1), -1), x.levels)


@rule("diag")
def diag(call):
    """diag(x, d): a logical matrix's d-th diagonal, or the matrix with a vector on it."""
    x = call.first()
    offset = call.get("diagonal", 0)
    k = len(x.levels)
    rank = logical_ndim(x)
    if rank == 2:
        return wrap(_ops.diagonal(x.value, offset, k, k + 1), x.levels)
    if rank != 1:
        raise RuntimeError(f"diag: expects a 1-d or 2-d tensor, got {rank}-d")
    n = x.shape[0]
    size = n + abs(offset)
    import numpy as np
    place = np.zeros((n, size, size), dtype=np.dtype(x.value.dtype))
    rows = np.arange(n) + max(-offset, 0)
    place[np.arange(n), rows, rows + offset] = 1
    spread = _core.mul(_core.unsqueeze(_core.unsqueeze(x.value, -1), -1),
                       _core._from_array(place))
    return wrap(_core.sum(spread, k), x.levels)


@rule("einsum")
def einsum(call):
    """einsum(eq, *ops): each batched operand's batch dims get fresh letters, leading the output."""
    equation = call.args[0]
    operands = list(call.args[1:])
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = list(operands[0])
    if not isinstance(equation, str):
        raise TypeError("einsum: the equation must be a str")
    levels = levels_of(operands)
    eq = equation.replace(" ", "")
    inputs, arrow, output = eq.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum: the equation has {len(terms)} operands, but "
                         f"{len(operands)} tensors were given")
    used = set(eq)
    free = [c for c in string.ascii_letters if c not in used]
    if len(free) < len(levels):
        raise RuntimeError("einsum: too many subscripts to add the batch dims")
    letters = {level: free[i] for i, level in enumerate(levels)}
    if not arrow:
        counts = {}
        for term in terms:
            for c in term:
                if c.isalpha():
                    counts[c] = counts.get(c, 0) + 1
        output = ("..." if "..." in inputs else "") + "".join(
            sorted(c for c, n in counts.items() if n == 1))
    physical, new_terms = [], []
    for term, op in zip(terms, operands):
        if is_batched(op):
            new_terms.append("".join(letters[level] for level in op.levels) + term)
            physical.append(op.value)
        else:
            new_terms.append(term)
            physical.append(op)
    new_eq = ",".join(new_terms) + "->" + "".join(letters[level] for level in levels) + output
    return wrap(_core_einsum()(new_eq, *physical), levels)


def _core_einsum():
    from .. import _linalg
    return _linalg.einsum
