"""Batching rules of ops over a sequence of tensors: cat, stack, broadcast_tensors, meshgrid."""
from .. import _core
from .dispatch import rule
from .physical import aligned, levels_of, logical_shape, normalized_dim, sizes_of, wrap


def _joined(call, extra):
    tensors = list(call.first())
    levels = levels_of(tensors)
    sizes = sizes_of(levels, tensors)
    ranks = {len(logical_shape(t)) for t in tensors}
    rank = max(ranks)
    call.set_first([aligned(t, levels, sizes) for t in tensors])
    d = call.get("dim", 0)
    call.set("dim", normalized_dim(d, rank + extra, call.name) + len(levels))
    return wrap(call.run(), levels)


@rule("cat")
def cat(call):
    """cat(tensors, dim): every tensor given the call's batch dims (expanded), dim shifted."""
    return _joined(call, 0)


@rule("stack")
def stack(call):
    """stack(tensors, dim): dim names a position in the result (rank + 1 dims)."""
    return _joined(call, 1)


def _broadcast_shape(shapes):
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        size = 1
        for s in shapes:
            j = i - (rank - len(s))
            if j >= 0 and s[j] != 1:
                if size not in (1, s[j]):
                    raise RuntimeError(f"broadcast_tensors: shapes {shapes} do not broadcast")
                size = s[j]
        out.append(size)
    return tuple(out)


def _sequence(args):
    """The tensors of a *tensors op, given one by one or as one list or tuple."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return list(args[0])
    return list(args)


@rule("broadcast_tensors")
def broadcast_tensors(call):
    """Each tensor expanded to the batch sizes and the broadcast logical shape."""
    tensors = _sequence(call.args)
    levels = levels_of(tensors)
    sizes = sizes_of(levels, tensors)
    shape = _broadcast_shape([logical_shape(t) for t in tensors])
    batch = tuple(sizes[level] for level in levels)
    return tuple(wrap(_core.checked_expand(aligned(t, levels, rank=len(shape)), batch + shape),
                      levels) for t in tensors)


@rule("meshgrid")
def meshgrid(call):
    """meshgrid(*vectors, indexing): output i varies along its own dim (xy: the first two swap)."""
    tensors = _sequence(call.args)
    indexing = call.kwargs.get("indexing") or "ij"
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', not {indexing!r}")
    levels = levels_of(tensors)
    sizes = sizes_of(levels, tensors)
    batch = tuple(sizes[level] for level in levels)
    lengths = []
    for t in tensors:
        shape = logical_shape(t)
        if len(shape) > 1:
            raise RuntimeError("meshgrid: expects 0-d or 1-d tensors")
        lengths.append(shape[0] if shape else 1)
    m = len(tensors)
    order = list(range(m))
    if indexing == "xy" and m >= 2:
        order[0], order[1] = 1, 0
    grid = tuple(lengths[order[p]] for p in range(m))
    out = []
    for i, t in enumerate(tensors):
        position = order.index(i)
        value = aligned(t, levels)
        shape = tuple(value.shape[:len(levels)]) + tuple(
            lengths[i] if p == position else 1 for p in range(m))
        out.append(wrap(_core.checked_expand(_core.checked_reshape(value, shape), batch + grid),
                        levels))
    return tuple(out)
