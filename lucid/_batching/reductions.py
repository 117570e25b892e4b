"""Batching rules of reductions: `dim` shifts past the batch dims; no dim reduces the logical dims.

dim=None (every dim) flattens the logical dims first and reduces the one that remains, which is
what "every element" means for all of them (sum, argmax's flat index, median, norm, quantile).
"""
from .. import _core, _ops
from .dispatch import family, rule
from .physical import is_batched, levels_of, logical_shape, normalized_dim, wrap


def shifted_dims(dim, rank, k, op):
    """dim (an int, or a tuple/list of ints) of a rank-dim logical tensor as physical dims."""
    if isinstance(dim, (tuple, list)):
        return type(dim)(normalized_dim(d, rank, op) + k for d in dim)
    return normalized_dim(dim, rank, op) + k


def _reduce(call, default_dim=None, dim_name="dim"):
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
        if keepdim:
            out = _reshape_outputs(out, batch + (1,) * rank)
        return wrap(out, levels)
    call.set_first(value)
    call.set(dim_name, shifted_dims(dim, rank, k, call.name))
    return wrap(call.run(), levels)


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _reshape_outputs(out, shape):
    if isinstance(out, _core.Tensor):
        return _core.checked_reshape(out, shape)
    items = [_core.checked_reshape(o, shape) if isinstance(o, _core.Tensor) else o for o in out]
    return type(out)(*items) if hasattr(out, "_fields") else type(out)(items)


@family("reduction")
def reduction(call):
    """A reduction over dim (None: every logical dim)."""
    out = _reduce(call)
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
    return reduction(call)


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
    """quantile(x, q, dim): a 1-D q puts its dim first, before the batch dims: moved back."""
    q = call.get("q")
    if is_batched(q):
        from .dispatch import fallback
        return fallback(call)
    x = call.first()
    levels = levels_of([x])
    out = _reduce(call)
    if isinstance(q, _core.Tensor) and q.ndim == 1:
        value = out.value
        out = wrap(_ops.movedim(value, 0, len(levels)), levels)
    return out


@rule("aminmax")
def aminmax(call):
    """(amin, amax) over dim (keyword only)."""
    return reduction(call)

