"""Batching rules of reductions: `dim` shifts past the batch dims; no dim reduces the logical dims.

dim=None (every dim) flattens the logical dims first and reduces the one that remains, which is
what "every element" means for all of them (sum, argmax's flat index, median, norm, quantile).
"""
from .. import _core, _ops
from .dispatch import family, rule
from .batched import BatchedTensor
from .physical import aligned, is_batched, levels_of, logical_shape, normalized_dim, sizes_of, wrap
from .trees import rebuild


def shifted_dims(dim, rank, k, op):
    """dim (an int, or a tuple/list of ints) of a rank-dim logical tensor as physical dims."""
    if isinstance(dim, (tuple, list)):
        return type(dim)(normalized_dim(d, rank, op) + k for d in dim)
    return normalized_dim(dim, rank, op) + k


def on_0d(out, k):
    """The outputs of an op run on a 0-d logical tensor made a 1-element vector (dim k): each
    output's size-1 dim k dropped again (a reduced one has none)."""
    if isinstance(out, _core.Tensor):
        return _core.squeeze(out, k) if out.ndim == k + 1 else out
    if isinstance(out, tuple):
        return rebuild(type(out), [on_0d(o, k) for o in out])
    return out


def _reduce(call, default_dim=None, dim_name="dim", values_only=False):
    """The reduction on the physical value; values_only: the op without a dim returns only the
    values that it returns with indices when given one (max, min, median)."""
    x = call.first()
    levels = levels_of([x])
    others = [v for _, v in call.tensor_slots() if v is not x]
    if any(is_batched(v) for v in others):
        return None                     # a batched second tensor (quantile's q, max(x, y))
    k = len(levels)
    shape = logical_shape(x)
    rank = len(shape)
    value = x.value
    dim = call.get(dim_name, default_dim)
    keepdim = bool(call.get("keepdim", False))
    if dim is None or dim == ():
        batch = tuple(value.shape[:k])
        call.set_first(_core.checked_reshape(value, batch + (_numel(shape),)))
        call.set(dim_name, k)
        out = call.run()
        if values_only:
            out = out[0]
        if keepdim:
            out = _reshape_outputs(out, batch + (1,) * rank)
        return wrap(out, levels)
    dims = shifted_dims(dim, rank, k, call.name)
    if rank == 0:                       # dims 0 and -1 of a 0-d tensor: the 1-element vector
        call.set_first(_core.unsqueeze(value, k))
        call.set(dim_name, dims)
        return wrap(on_0d(call.run(), k), levels)
    call.set_first(value)
    call.set(dim_name, dims)
    return wrap(call.run(), levels)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _reshape_outputs(out, shape):
    if isinstance(out, _core.Tensor):
        return _core.checked_reshape(out, shape)
    return rebuild(type(out), [_core.checked_reshape(o, shape) if isinstance(o, _core.Tensor)
                               else o for o in out])


@family("reduction")
def reduction(call, values_only=False):
    """A reduction over dim (None: every logical dim)."""
    out = _reduce(call, values_only=values_only)
    if out is None:
        from .dispatch import fallback
        return fallback(call)
    return out


@rule("max", "min")
def max_min(call):
    """max(x) / max(x, dim) reduce; max(x, other) is elementwise (maximum)."""
    other = call.get("dim")
    if other is not None and (is_batched(other) or isinstance(other, _core.Tensor)):
        from .pointwise import pointwise
        return pointwise(call)
    return reduction(call, values_only=True)


@rule("median", "nanmedian")
def median(call):
    """median(x) is the value; median(x, dim) the (values, indices) pair."""
    return reduction(call, values_only=True)


@rule("linalg.matrix_norm")
def matrix_norm(call):
    """The norm of the matrices in the last two logical dims (or those dim names)."""
    levels = levels_of([call.first()])           # before _dims_call unwraps the input
    return wrap(_dims_call(call, (-2, -1)), levels)


@rule("linalg.norm")
def linalg_norm(call):
    """A vector norm over every element, or a matrix norm when ord needs one and x is 2-D."""
    x = call.first()
    if call.get("dim") is None and isinstance(call.get("ord"), str) and len(logical_shape(x)) == 2:
        levels = levels_of([x])
        return wrap(_dims_call(call, (-2, -1)), levels)
    return reduction(call)


def _dims_call(call, default):
    x = call.first()
    k = len(x.levels)
    call.set_first(x.value)
    call.set("dim", shifted_dims(call.get("dim", default), len(logical_shape(x)), k, call.name))
    return call.run()


@rule("quantile", "nanquantile")
def quantile(call):
    """quantile(x, q, dim, keepdim): the batch levels flattened into one leading dim of size n;
    a 1-D q puts its dim first (moved back after the batch dim). A batched q: every element's
    levels against every element's x, an (n * len(q), n, ...) result whose diagonal is kept."""
    x, q = call.first(), call.get("q")
    levels = levels_of([x, q])
    sizes = sizes_of(levels, [x, q])
    batch = tuple(sizes[level] for level in levels)
    n = _numel(batch)
    shape = logical_shape(x)
    rank = len(shape)
    dim = call.get("dim")
    keepdim = bool(call.get("keepdim", False))
    value = _core.checked_reshape(aligned(x, levels, sizes), (n,) + shape)
    if dim is None or rank == 0:
        if dim is not None:
            normalized_dim(dim, rank, call.name)
        value = _core.checked_reshape(value, (n, _numel(shape)))
        rest = (1,) * max(rank, dim is not None) if keepdim else ()   # as the op keeps them
        call.set("dim", 1)
        call.set("keepdim", False)
    else:
        d = normalized_dim(dim, rank, call.name)
        rest = tuple(1 if keepdim and i == d else s for i, s in enumerate(shape)
                     if keepdim or i != d)
        call.set("dim", d + 1)
    call.set_first(value)
    q_shape = tuple(logical_shape(q)) if isinstance(q, (_core.Tensor, BatchedTensor)) else ()
    if is_batched(q):
        call.set("q", _core.checked_reshape(aligned(q, levels, sizes), (-1,)))
        out = call.run()                                      # (n * nq, n, *rest)
        out = _core.checked_reshape(out, (n, _numel(q_shape), n) + rest)
        out = _ops.movedim(_ops.diagonal(out, 0, 0, 2), -1, 0)  # (n, nq, *rest)
    else:
        out = call.run()
        if q_shape:
            out = _ops.movedim(out, 0, 1)
    return wrap(_core.checked_reshape(out, batch + q_shape + rest), levels)


@rule("aminmax")
def aminmax(call):
    """(amin, amax) over dim (keyword only)."""
    return reduction(call)

