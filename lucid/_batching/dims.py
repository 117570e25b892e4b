"""Batching rules of ops taking dim arguments: each dim shifts past the batch dims.

The dims are normalized against the logical rank (unsqueeze's against rank + 1, since it names a
position in its result), then offset by the number of batch dims. Several tensor arguments
(linalg.cross) are first aligned as elementwise operands.
"""
from .. import _core
from .dispatch import family, rule
from .physical import (aligned, is_batched, levels_of, logical_ndim, logical_shape,
                       normalized_dim, wrap)
from .reductions import on_0d, shifted_dims

_DIM_PARAMS = ("dim", "dim0", "dim1", "dim2", "dims", "start_dim", "end_dim", "source",
               "destination", "axis0", "axis1")


def shift_dims(call, rank, k, extra=0):
    """Shift every dim argument of call (normalized against rank + extra) by k; one left at
    its default is shifted too (diagonal's dim1=0 names the first logical dim, not the batch's)."""
    for name in _DIM_PARAMS:
        d = call.get_or_default(name)
        if d is not None:
            call.set(name, shifted_dims(d, rank + extra, k, call.name))


# ops whose dims 0 and -1 name a 0-d tensor itself: run on it as a 1-element vector
_ZERO_D = frozenset(("transpose", "swapaxes", "swapdims", "movedim", "flip", "roll", "cumsum",
                     "cumprod", "softmax", "log_softmax", "sort", "argsort", "topk", "kthvalue",
                     "cummax", "cummin", "logcumsumexp"))


def _aligned_tensors(call, rank=0):
    """Align the tensor arguments to the call's levels and one logical rank (at least rank)."""
    slots = call.tensor_slots()
    levels = levels_of([v for _, v in slots])
    rank = max([rank] + [logical_ndim(v) for _, v in slots])
    for slot, v in slots:
        if is_batched(v) or len(slots) > 1 or logical_ndim(v) < rank:
            call.put(slot, aligned(v, levels, rank=rank))
    return levels, rank


@family("dims")
def dims(call):
    """An op whose dim arguments name logical dims (a 0-d input's: as a 1-element vector's)."""
    zero_d = call.name in _ZERO_D and logical_ndim(call.first()) == 0
    levels, rank = _aligned_tensors(call, 1 if zero_d else 0)
    shift_dims(call, rank, len(levels))
    out = call.run()
    return wrap(on_0d(out, len(levels)) if zero_d else out, levels)


@rule("flatten")
def flatten(call):
    """flatten of a 0-d tensor is a 1-element vector; else the dims family's."""
    x = call.first()
    if logical_ndim(x) != 0:
        return dims(call)
    for name in ("start_dim", "end_dim"):
        normalized_dim(call.get_or_default(name), 0, "flatten")
    return wrap(_core.checked_reshape(x.value, tuple(x.value.shape) + (1,)), x.levels)


@rule("unsqueeze")
def unsqueeze(call):
    """unsqueeze's dim is a position in its result (rank + 1 dims)."""
    levels, rank = _aligned_tensors(call)
    shift_dims(call, rank, len(levels), extra=1)
    return wrap(call.run(), levels)


@rule("squeeze")
def squeeze(call):
    """squeeze(x) drops the logical size-1 dims only (never a batch dim of size 1)."""
    x = call.first()
    levels = x.levels
    k = len(levels)
    shape = logical_shape(x)
    call.set_first(x.value)
    dim = call.get("dim")
    if not shape:                       # a 0-d tensor: nothing to drop (dim 0 or -1 checked)
        if dim is not None:
            shifted_dims(dim, 0, k, "squeeze")
        return wrap(_core.view(x.value, tuple(x.value.shape)), levels)
    if dim is None:
        dropped = tuple(i + k for i, s in enumerate(shape) if s == 1)
        if not dropped:
            return wrap(_core.view(x.value, tuple(x.value.shape)), levels)
        call.set("dim", dropped)
    else:
        call.set("dim", shifted_dims(dim, len(shape), k, "squeeze"))
    return wrap(call.run(), levels)


@rule("t")
def t(call):
    """t(x): the transpose of a logical matrix; 0-d and 1-d tensors as they are."""
    x = call.first()
    k = len(x.levels)
    rank = logical_ndim(x)
    if rank > 2:
        raise RuntimeError(f"t: expects a tensor of at most 2 dims, but got {rank} dims")
    if rank < 2:
        return wrap(_core.view(x.value, tuple(x.value.shape)), x.levels)
    return wrap(_core.transpose(x.value, k, k + 1), x.levels)


@rule("roll")
def roll(call):
    """roll over dims, or over the flattened logical tensor when dims is None."""
    x = call.first()
    levels = x.levels
    k = len(levels)
    shape = logical_shape(x)
    if call.get("dims") is None:
        batch = tuple(x.value.shape[:k])
        n = 1
        for s in shape:
            n *= s
        call.set_first(_core.checked_reshape(x.value, batch + (n,)))
        call.set("dims", k)
        return wrap(_core.checked_reshape(call.run(), batch + shape), levels)
    call.set_first(x.value)
    shift_dims(call, len(shape), k)
    return wrap(call.run(), levels)
