"""Batching rules of elementwise ops: batch dims lead, logical dims align on the right."""
from .. import _core
from .batched import BatchedTensor
from .call import Call
from .dispatch import family, rule
from .physical import aligned, is_batched, levels_of, logical_ndim, wrap


def pointwise_call(call):
    """Align every tensor argument of call to the call's levels and logical rank; returns the
    levels (the result's)."""
    slots = call.tensor_slots()
    levels = levels_of([v for _, v in slots])
    rank = max(logical_ndim(v) for _, v in slots)
    for slot, v in slots:
        if is_batched(v):
            call.put(slot, aligned(v, levels, rank=rank))
    return levels


@family("pointwise")
def pointwise(call):
    """An elementwise op: the batched operands get the call's batch dims, all align."""
    levels = pointwise_call(call)
    return wrap(call.run(), levels)


@rule("view_as_real", "view_as_complex")
def last_dim_pair(call):
    """view_as_real adds a last dim of 2, view_as_complex takes it away: the batch dims, which
    lead, stay as they are. view_as_complex needs pairs adjacent in memory: a batch dim moved to
    the front of a layout that has them apart (in_dims=-1, ...) is made contiguous first."""
    x = call.first()
    value = x.value
    if call.name == "view_as_complex" and value.ndim and value.stride()[-1] != 1 and \
            x.ndim and x.shape[-1] == 2:
        value = value.contiguous()
    call.set_first(value)
    return wrap(call.run(), x.levels)


@rule("masked_fill")
def masked_fill(call):
    """masked_fill(x, mask, value); a batched (0-d) value is where(mask, value, x) in x's dtype."""
    value = call.get("value")
    if not is_batched(value):
        return pointwise(call)
    x = call.first()
    if logical_ndim(value) != 0:
        raise RuntimeError("masked_fill: value must be a number or a 0-d tensor, got a tensor "
                           f"of {logical_ndim(value)} dims")
    value = BatchedTensor(value.value.to(x.dtype), value.levels)
    return pointwise(Call(_core.where, (call.get("mask"), value, x), None))


@rule("allclose")
def refuse_data_dependent(call):
    from .batched import data_dependent
    raise data_dependent(f"lucid.{call.name} (a Python bool)")


@rule("is_tensor")
def is_tensor(call):
    """A batched tensor is a tensor."""
    return True


@rule("is_complex", "is_floating_point")
def dtype_question(call):
    """A question about the dtype, which the batch dims do not change."""
    return call.f(call.first().value)


@rule("numel")
def numel(call):
    """The logical tensor's number of elements."""
    return call.first().numel()
