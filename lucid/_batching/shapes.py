"""Batching rules of ops taking a shape or a permutation: the batch sizes lead it."""
from .. import _core
from .dispatch import rule
from .physical import aligned, wrap


def _sizes(shape, op):
    if isinstance(shape, int) or hasattr(shape, "__index__") and not isinstance(shape, (tuple, list)):
        return (shape.__index__(),)
    try:
        return tuple(s.__index__() for s in shape)
    except (TypeError, AttributeError):
        raise TypeError(f"{op}: the shape must be a sequence of ints, got {shape!r}") from None


def _batch(x):
    return tuple(x.value.shape[:len(x.levels)])


@rule("reshape", "view")
def reshape(call):
    """x.reshape(shape): batch sizes + shape (-1 still infers a logical size)."""
    x = call.first()
    name = "shape" if call.has("shape") else call.positional[1]
    call.set_first(x.value)
    call.set(name, _batch(x) + _sizes(call.get(name), call.name))
    return wrap(call.run(), x.levels)


@rule("expand", "broadcast_to")
def expand(call):
    """x.expand(shape): x's logical dims padded to len(shape), then batch sizes + shape."""
    x = call.first()
    name = "shape" if call.has("shape") else call.positional[1]
    shape = _sizes(call.get(name), call.name)
    call.set_first(aligned(x, x.levels, rank=len(shape)))
    call.set(name, _batch(x) + shape)
    return wrap(call.run(), x.levels)


@rule("permute")
def permute(call):
    """x.permute(dims): the batch dims stay first, the logical ones are permuted."""
    x = call.first()
    k = len(x.levels)
    name = "dims" if call.has("dims") else call.positional[1]
    rank = x.ndim
    order = _sizes(call.get(name), "permute")
    if len(order) != rank:
        raise RuntimeError(f"permute: the number of dims ({len(order)}) does not match the "
                           f"tensor's ({rank})")
    call.set_first(x.value)
    call.set(name, tuple(range(k)) + tuple((d % max(rank, 1)) + k for d in order))
    return wrap(call.run(), x.levels)


@rule("tile")
def tile(call):
    """x.tile(dims): x and dims padded to one rank, the batch dims repeated once."""
    x = call.first()
    k = len(x.levels)
    reps = _sizes(call.get("dims"), "tile")
    rank = max(x.ndim, len(reps))
    call.set_first(aligned(x, x.levels, rank=rank))
    call.set("dims", (1,) * (k + rank - len(reps)) + reps)
    return wrap(call.run(), x.levels)


def repeat(x, sizes):
    """Tensor.repeat(*sizes) of a batched x (len(sizes) >= its rank)."""
    sizes = _sizes(sizes, "repeat")
    if len(sizes) < x.ndim:
        raise RuntimeError("repeat: the number of repeat dims can not be smaller than the "
                           "number of dims of the tensor")
    k = len(x.levels)
    value = aligned(x, x.levels, rank=len(sizes))
    return wrap(value.repeat((1,) * k + sizes), x.levels)


@rule("as_strided")
def as_strided(call):
    """as_strided(x, size, stride, offset): each batch element's view, offsets per element."""
    x = call.first()
    k = len(x.levels)
    value = x.value
    shape, strides = tuple(value.shape), tuple(value.stride())
    span = 1 + sum((s - 1) * st for s, st in zip(shape[k:], strides[k:]))
    if any(shape[i] > 1 and strides[i] < span for i in range(k)):
        raise RuntimeError("vmap: as_strided needs the batch dims in front of the logical dims "
                           "in memory (each batch element a block of its own); the input's "
                           "batch dim is not (call .contiguous() on it first)")
    call.set_first(value)
    call.set("size", _batch(x) + _sizes(call.get("size"), "as_strided"))
    call.set("stride", tuple(value.stride()[:k]) + _sizes(call.get("stride"), "as_strided"))
    return wrap(call.run(), x.levels)
