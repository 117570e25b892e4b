"""Batching rules of indexing: x[key], x[key] = v, gather, scatter, index_select, index_add.

x[key] with a key that holds no batched tensor: the batch dims get a full slice each, before the
key. A batched index tensor picks per batch element: the batch dims are indexed by aranges that
broadcast with it. Advanced indices (tensors, lists, and ints beside them) that are not adjacent
put their broadcast dims first, as in NumPy and PyTorch; the rule moves the batch dims back in
front.
"""
import numpy as np

from .. import _core
from .batched import BatchedTensor, data_dependent
from .dispatch import rule
from .physical import (aligned, is_batched, levels_of, logical_ndim, logical_shape,
                       normalized_dim, sizes_of, wrap)
from .reductions import shifted_dims

Tensor = _core.Tensor
_FULL = slice(None)


def _key_tuple(key):
    return key if isinstance(key, tuple) else (key,)


def _is_advanced(entry):
    return isinstance(entry, (Tensor, BatchedTensor, list, np.ndarray))


def _expanded_key(key, rank):
    """key with its Ellipsis replaced by full slices (rank: the indexed tensor's logical rank)."""
    used = sum(0 if e is None or e is Ellipsis else
               (logical_ndim(e) if isinstance(e, (Tensor, BatchedTensor)) and
                getattr(e, "dtype", None) == _core.bool_ else 1) for e in key)
    out = []
    for e in key:
        if e is Ellipsis:
            out.extend([_FULL] * max(rank - used, 0))
        else:
            out.append(e)
    return tuple(out)


def _advanced_layout(key):
    """(positions of advanced entries (ints counted when a tensor or list is among them),
    whether they are adjacent)."""
    has_array = any(_is_advanced(e) for e in key)
    if not has_array:
        return [], True
    positions = [i for i, e in enumerate(key)
                 if _is_advanced(e) or (isinstance(e, int) and not isinstance(e, bool))]
    adjacent = positions == list(range(positions[0], positions[-1] + 1))
    return positions, adjacent


def _index_ndim(key, positions):
    shapes = []
    for i in positions:
        e = key[i]
        if isinstance(e, BatchedTensor):
            shapes.append(e.shape)
        elif isinstance(e, Tensor):
            shapes.append(tuple(e.shape))
        elif isinstance(e, (list, np.ndarray)):
            shapes.append(np.shape(e))
        else:
            shapes.append(())
    return len(np.broadcast_shapes(*shapes)) if shapes else 0


def _basic_dims_before(key, first):
    """The result dims made by the basic entries of key before position first."""
    return sum(1 for e in key[:first] if e is None or isinstance(e, slice))


def _physical_key(x, key):
    """(physical tensor, physical key, levels, dims to move) for x[key]: the batch dims are moved
    from `move` (a position) to the front afterwards when not None."""
    key = _expanded_key(_key_tuple(key), logical_ndim(x))
    batched_index = [e for e in key if isinstance(e, BatchedTensor)]
    levels = levels_of([x] + batched_index)
    k = len(levels)
    positions, adjacent = _advanced_layout(key)
    if not batched_index:
        value = x.value
        move = None
        if positions and not adjacent:
            move = _index_ndim(key, positions)     # the broadcast dims went first
        return value, (_FULL,) * k + key, levels, move
    for e in batched_index:
        if e.dtype == _core.bool_:
            raise data_dependent("indexing with a batched boolean mask (its result's shape)")
    sizes = sizes_of(levels, [x] + batched_index)
    value = aligned(x, levels, sizes)
    m = _index_ndim(key, positions)
    aranges = []
    for j, level in enumerate(levels):
        shape = [1] * (k + m)
        shape[j] = sizes[level]
        aranges.append(_core._from_array(np.arange(sizes[level]).reshape(shape)))
    new_key = []
    for e in key:
        if isinstance(e, BatchedTensor):
            new_key.append(aligned(e, levels, rank=m))
        else:
            new_key.append(e)
    move = None
    if adjacent and positions[0] > 0:
        move = ("block", k, m, _basic_dims_before(key, positions[0]))
    return value, tuple(aranges) + tuple(new_key), levels, move


def _move_order(ndim, k, move):
    """The permutation taking the physical result of x[key] (ndim dims) to the batched one
    (batch dims first, the index dims where the logical result has them); None: as it is."""
    if move is None:
        return None
    order = list(range(ndim))
    if isinstance(move, tuple):
        _, start, m, before = move
        if before == 0 or m == 0:
            return None
        block = order[start:start + m]
        rest = order[:start] + order[start + m:]
        return tuple(rest[:start + before] + block + rest[start + before:])
    m = move
    return tuple(order[m:m + k] + order[:m] + order[m + k:])


def _moved(out, k, move):
    order = _move_order(out.ndim, k, move)
    return out if order is None else _core.permute(out, order)


@rule("Tensor.__getitem__")
def getitem(call):
    """x[key] on the logical tensor, per batch element."""
    x, key = call.args[0], call.args[1]
    if not is_batched(x):
        x = BatchedTensor(x, ())
    value, pkey, levels, move = _physical_key(x, key)
    out = _core.Tensor.__getitem__(value, pkey)
    return wrap(_moved(out, len(levels), move), levels)


@rule("Tensor.__setitem__")
def setitem(call):
    """x[key] = v: writes into each batch element of x (which must be batched at every level
    of the key and of v)."""
    x, key, v = call.args[0], call.args[1], call.args[2]
    from .inplace import check_batched_target
    key_tensors = [e for e in _key_tuple(key) if isinstance(e, BatchedTensor)]
    check_batched_target(x, [v] + key_tensors, "x[key] = value")
    for e in key_tensors:
        if e.dtype == _core.bool_:
            raise data_dependent("indexing with a batched boolean mask (its result's shape)")
    value, pkey, levels, move = _physical_key(x, key)   # value is x.value: x has every level
    target = _core.Tensor.__getitem__(value, pkey)       # the physical layout of x[key]
    if isinstance(v, (Tensor, BatchedTensor)):
        k = len(levels)
        v = aligned(v, levels, rank=target.ndim - k)      # the logical layout, batch dims first
        order = _move_order(target.ndim, k, move)
        if order is not None:                              # back to the physical layout
            v = _core.permute(v, tuple(order.index(i) for i in range(len(order))))
    _core.Tensor.__setitem__(value, pkey, v)
    return None


def _gather_like(call, names):
    """Align the named tensor arguments to the call's levels, expanded; shift dim."""
    tensors = [call.get(n) for n in names if isinstance(call.get(n), (Tensor, BatchedTensor))]
    levels = levels_of(tensors)
    sizes = sizes_of(levels, tensors)
    x = call.first()
    rank = logical_ndim(x)
    for n in names:
        v = call.get(n)
        if isinstance(v, (Tensor, BatchedTensor)):
            call.set(n, aligned(v, levels, sizes))
    call.set("dim", normalized_dim(call.get("dim"), rank, call.name) + len(levels))
    return levels


@rule("gather")
def gather(call):
    """gather(x, dim, index): x and index share the batch dims (expanded)."""
    levels = _gather_like(call, ("input", "index"))
    return wrap(call.run(), levels)


@rule("scatter", "scatter_add")
def scatter(call):
    """scatter(x, dim, index, src): x, index and src share the batch dims (expanded)."""
    levels = _gather_like(call, ("input", "index", "src"))
    return wrap(call.run(), levels)


def _index_along(index, x, dim, levels, sizes):
    """A batched 1-d index of dim as a gather index shaped like x with dim's size replaced."""
    shape = list(logical_shape(x))
    rank = len(shape)
    d = normalized_dim(dim, rank, "index_select")
    idx = aligned(index, levels, sizes)
    k = len(levels)
    lead = tuple(idx.shape[:k])
    view = lead + tuple(idx.shape[k] if i == d else 1 for i in range(rank))
    shape[d] = idx.shape[k]
    return _core.checked_expand(_core.checked_reshape(idx, view), lead + tuple(shape)), d


@rule("index_select")
def index_select(call):
    """index_select(x, dim, index); a batched index picks per element (a gather)."""
    x, index = call.get("input"), call.get("index")
    if not is_batched(index):
        k = len(x.levels)
        call.set_first(x.value)
        call.set("dim", shifted_dims(call.get("dim"), logical_ndim(x), k, "index_select"))
        return wrap(call.run(), x.levels)
    levels = levels_of([x, index])
    sizes = sizes_of(levels, [x, index])
    gather_index, d = _index_along(index, x, call.get("dim"), levels, sizes)
    value = aligned(x, levels, sizes)
    return wrap(_ops().gather(value, d + len(levels), gather_index), levels)


@rule("index_add")
def index_add(call):
    """index_add(x, dim, index, source, alpha): x and source share the batch dims; a batched
    index is a scatter_add."""
    x, index, source = call.get("input"), call.get("index"), call.get("source")
    alpha = call.kwargs.get("alpha", 1)
    levels = levels_of([x, index, source])
    sizes = sizes_of(levels, [x, index, source])
    k = len(levels)
    if not is_batched(index):
        call.set_first(aligned(x, levels, sizes))
        call.set("source", aligned(source, levels, sizes))
        call.set("dim", shifted_dims(call.get("dim"), logical_ndim(x), k, "index_add"))
        return wrap(call.run(), levels)
    scatter_index, d = _index_along(index, source, call.get("dim"), levels, sizes)
    src = aligned(source, levels, sizes)
    if alpha != 1:
        src = _core.mul(src, alpha)
    return wrap(_ops().scatter_add(aligned(x, levels, sizes), d + k, scatter_index, src), levels)


@rule("take_along_dim")
def take_along_dim(call):
    """take_along_dim(x, indices, dim): broadcast like elementwise operands; no dim: flat."""
    x, indices = call.get("input"), call.get("indices")
    levels = levels_of([x, indices])
    k = len(levels)
    dim = call.get("dim")
    if dim is None:
        sizes = sizes_of(levels, [x, indices])
        flat_x = aligned(x, levels, sizes)
        flat_x = _core.checked_reshape(flat_x, tuple(flat_x.shape[:k]) + (-1,))
        flat_i = aligned(indices, levels, sizes)
        flat_i = _core.checked_reshape(flat_i, tuple(flat_i.shape[:k]) + (-1,))
        return wrap(_ops().take_along_dim(flat_x, flat_i, k), levels)
    rank = max(logical_ndim(x), logical_ndim(indices))
    call.set_first(aligned(x, levels, rank=rank))
    call.set("indices", aligned(indices, levels, rank=rank))
    call.set("dim", shifted_dims(dim, rank, k, "take_along_dim"))
    return wrap(call.run(), levels)


@rule("masked_select")
def masked_select(call):
    """Its result's length depends on the mask's values: not batchable."""
    raise RuntimeError("vmap: lucid.masked_select's result has a data-dependent shape, which "
                       "vmap cannot batch; use lucid.where(mask, x, 0) or masked_fill instead")


def _ops():
    from .. import _ops
    return _ops
