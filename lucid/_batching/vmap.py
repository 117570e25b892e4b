"""lucid.func.vmap: a function mapped over a batch dim of its inputs, run once on batched tensors.

vmap(func, in_dims, out_dims, randomness, chunk_size)(*args, **kwargs): each input leaf with an
in_dim enters as a BatchedTensor of a new level (lucid/_batching/levels.py) whose physical value
is the input with that dim moved behind the batch dims it already has; func runs once; each
output leaf leaves with the level's batch dim moved to its out_dim. kwargs are passed as they
are (not mapped), as in torch.func.vmap.
"""
import functools
import numbers

from .. import _core, _ops
from . import levels as _levels
from .batched import BatchedTensor
from .physical import logical_ndim, logical_shape
from .trees import broadcast_prefix, describe, flatten, unflatten

Tensor = _core.Tensor
RANDOMNESS = ("error", "different", "same")


def _is_dim(x):
    return x is None or (isinstance(x, numbers.Integral) and not isinstance(x, bool))


def _name(func):
    return getattr(func, "__name__", None) or type(func).__name__


def _check_dims_type(dims, what, label):
    leaves, _ = flatten(dims)
    for leaf in leaves:
        if not _is_dim(leaf):
            raise ValueError(f"{label}: expected `{what}` to be int or a (potentially nested) "
                             f"tuple matching the structure of {'inputs' if what == 'in_dims' else 'outputs'}, "
                             f"got: {type(leaf).__name__}.")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """func mapped over dim in_dims of its inputs: the results stacked along out_dims."""
    if not callable(func):
        raise TypeError(f"vmap: func must be callable, got {type(func).__name__}")
    if randomness not in RANDOMNESS:
        raise RuntimeError("vmap: only allowed values for randomness are 'error', 'different', "
                           f"or 'same'. Got {randomness!r}")
    if chunk_size is not None and (not isinstance(chunk_size, numbers.Integral) or
                                   isinstance(chunk_size, bool) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    label = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
    if in_dims is None or not (_is_dim(in_dims) or isinstance(in_dims, tuple)):
        raise ValueError(f"{label}: expected `in_dims` to be int or a (potentially nested) tuple "
                         f"matching the structure of inputs, got: {type(in_dims)}.")
    _check_dims_type(in_dims, "in_dims", label)
    _check_dims_type(out_dims, "out_dims", f"vmap({_name(func)}, ..., out_dims={out_dims})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        flat_args, args_spec = flatten(args)
        flat_in = broadcast_prefix(in_dims, args, _is_dim) \
            if _is_dim(in_dims) or isinstance(in_dims, tuple) else None
        if flat_in is None:
            raise ValueError(f"{label}: in_dims is not compatible with the structure of `inputs`. "
                             f"in_dims has structure {describe(flatten(in_dims)[1])} but inputs "
                             f"has structure {describe(args_spec)}.")
        size = _batch_size(flat_args, flat_in, label)
        if chunk_size is None or chunk_size >= size:
            return _run(func, args_spec, flat_args, flat_in, size, out_dims, randomness, kwargs)
        return _chunked(func, args_spec, flat_args, flat_in, size, out_dims, randomness, kwargs,
                        chunk_size)
    return wrapped


def _batch_size(flat_args, flat_in, label):
    size = None
    sizes = []
    for x, d in zip(flat_args, flat_in):
        if d is None:
            continue
        if not isinstance(x, (Tensor, BatchedTensor)):
            raise ValueError(f"{label}: Got in_dim={d} for an input but the input is of type "
                             f"{type(x)}. We cannot vmap over non-Tensor arguments, please use "
                             "None as the respective in_dim")
        rank = logical_ndim(x)
        if not -rank <= d < rank:
            raise ValueError(f"{label}: Got in_dim={d} for some input, but that input is a "
                             f"Tensor of dimensionality {rank} so expected in_dim to satisfy "
                             f"-{rank} <= in_dim < {rank}.")
        sizes.append(logical_shape(x)[d % rank])
    if not sizes:
        raise ValueError(f"{label}: at least one input must be a Tensor with an in_dim that is "
                         "not None (there is nothing to map over)")
    size = sizes[0]
    if any(s != size for s in sizes):
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return size


def _enter(x, d, level):
    """Input x with its logical dim d as the batch dim of level."""
    if d is None:
        return x
    if type(x) is BatchedTensor:
        k = len(x.levels)
        d = d % logical_ndim(x)
        value = x.value if d == 0 else _ops.movedim(x.value, k + d, k)
        return BatchedTensor(value, x.levels + (level.id,))
    d = d % x.ndim
    return BatchedTensor(x if d == 0 else _ops.movedim(x, d, 0), (level.id,))


def _leave(out, d, level, size, name):
    """Output out with level's batch dim at logical dim d (expanded when out is not batched)."""
    if not isinstance(out, (Tensor, BatchedTensor)):
        if d is None:
            return out
        raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                         f"{type(out)}. Did you mean to set out_dims= to None for output?")
    batched_here = type(out) is BatchedTensor and level.id in out.levels
    if d is None:
        if batched_here:
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when "
                             "out_dim is None")
        return out
    rank = logical_ndim(out) + 1
    if not -rank <= d < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, "
                         f"{rank - 1}], but got {d})")
    d = d % rank
    if type(out) is BatchedTensor:
        value, outer = out.value, tuple(l for l in out.levels if l != level.id)
    else:
        value, outer = out, ()
    k = len(outer)
    if batched_here:
        position = out.levels.index(level.id)
        value = value if position == k + d else _ops.movedim(value, position, k + d)
    else:
        value = _core.unsqueeze(value, k + d)
        shape = list(value.shape)
        shape[k + d] = size
        value = _core.checked_expand(value, tuple(shape))
    return BatchedTensor(value, outer) if outer else value


def _run(func, args_spec, flat_args, flat_in, size, out_dims, randomness, kwargs):
    name = _name(func)
    with _levels.entered(size, randomness) as level:
        with _levels.physical():
            entered = [_enter(x, d, level) for x, d in zip(flat_args, flat_in)]
        out = func(*unflatten(entered, args_spec), **kwargs)
        flat_out, out_spec = flatten(out)
        flat_dims = broadcast_prefix(out_dims, out, _is_dim)
        if flat_dims is None:
            raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                             "compatible with the structure of `outputs`. out_dims has structure "
                             f"{describe(flatten(out_dims)[1])} but outputs has structure "
                             f"{describe(out_spec)}.")
        with _levels.physical():
            results = [_leave(o, d, level, size, name) for o, d in zip(flat_out, flat_dims)]
    return unflatten(results, out_spec)


def _chunked(func, args_spec, flat_args, flat_in, size, out_dims, randomness, kwargs,
             chunk_size):
    """vmap over chunks of at most chunk_size batch elements, the outputs concatenated."""
    from .. import _random
    starts = list(range(0, size, chunk_size))
    state = _random.get_rng_state() if randomness == "same" else None
    pieces = []
    for start in starts:
        stop = min(start + chunk_size, size)
        chunk = [x if d is None else _narrowed(x, d, start, stop - start)
                 for x, d in zip(flat_args, flat_in)]
        if state is not None:
            _random.set_rng_state(state)
        pieces.append(_run(func, args_spec, chunk, flat_in, stop - start, out_dims, randomness,
                           kwargs))
    flat_first, out_spec = flatten(pieces[0])
    flat_dims = broadcast_prefix(out_dims, pieces[0], _is_dim)
    columns = [flatten(p)[0] for p in pieces]
    joined = []
    for i, d in enumerate(flat_dims):
        parts = [c[i] for c in columns]
        joined.append(parts[0] if d is None else _core.cat(parts, d))
    return unflatten(joined, out_spec)


def _narrowed(x, d, start, length):
    from .. import _ops
    return _ops.narrow(x, d, start, length)
