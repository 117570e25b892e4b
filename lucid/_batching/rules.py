"""User batching rules, torch.func's way: rule(info, in_dims, *args) -> (outputs, out_dims).

A user rule (a custom Function's vmap staticmethod, or one given to lucid.func.register_vmap_rule)
handles one vmap level per call: the innermost level any argument is batched at. Its arguments
come unwrapped at that level (a tensor batched there arrives as a tensor whose dim in_dims[i] is
the batch dim, still batched at the outer levels; None in in_dims for an argument that is not
batched there) and its outputs, with their out_dims, are wrapped back at it. The rule runs with
that level and the inner ones lowered (not active): its ops, and a Function.apply it calls, are
batched by the outer levels, so nested vmap calls the rule once per level.
"""
import collections
import contextlib

from .. import _core
from . import levels as _levels
from .batched import BatchedTensor
from .physical import logical_ndim, logical_shape
from .trees import broadcast_prefix, describe, flatten, unflatten

VmapInfo = collections.namedtuple("VmapInfo", ["batch_size", "randomness"])
VmapInfo.__doc__ = "What a batching rule is told of its vmap level: batch size and randomness."


def innermost_of(values):
    """The largest level id among the batched values (one level into tuples and lists)."""
    found = 0
    for v in values:
        items = v if type(v) in (tuple, list) else (v,)
        for item in items:
            if type(item) is BatchedTensor and item.levels[-1] > found:
                found = item.levels[-1]
    return found


def level_object(level_id):
    for level in _levels.stack():
        if level.id == level_id:
            return level
    raise RuntimeError(f"vmap: level {level_id} of a batched argument is not active (a batched "
                       "tensor escaped the vmap that made it)")


def _unwrapped(x, level_id):
    """(x at level_id: its physical tensor there, the batch dim) -- (x, None) if not batched."""
    if type(x) in (tuple, list):
        pairs = [_unwrapped(item, level_id) for item in x]
        return type(x)(p[0] for p in pairs), type(x)(p[1] for p in pairs)
    if type(x) is not BatchedTensor or x.levels[-1] != level_id:
        return x, None
    outer = x.levels[:-1]
    return (BatchedTensor(x.value, outer) if outer else x.value), 0


@contextlib.contextmanager
def lowered(level_id):
    """The block runs below level_id: that level and the inner ones are not active, the outer
    ones batch its ops (torch.func's interpreter.lower())."""
    stack = _levels.stack()
    kept = [level for level in stack if level.id < level_id]
    removed = stack[len(kept):]
    del stack[len(kept):]
    previous = _core._batch_dispatch(True)
    try:
        yield
    finally:
        _core._batch_dispatch(previous)
        stack.extend(removed)


def _wrapped(out, d, level_id, size, label):
    """Rule output out with out_dim d, as a tensor batched at level_id."""
    if d is None:
        return out
    if not isinstance(out, (_core.Tensor, BatchedTensor)):
        raise RuntimeError(f"{label} returned a {type(out).__name__} with out_dim {d}: only "
                           "tensors have a batch dim (use None as its out_dim)")
    rank = logical_ndim(out)
    if not -rank <= d < rank:
        raise RuntimeError(f"{label} returned out_dim {d} for an output of {rank} dims")
    d %= rank
    if logical_shape(out)[d] != size:
        raise RuntimeError(f"{label} returned an output whose dim {d} (its out_dim) has size "
                           f"{logical_shape(out)[d]}, but the batch size is {size}")
    value, outer = (out.value, out.levels) if type(out) is BatchedTensor else (out, ())
    k = len(outer)
    if d:
        from .. import _ops
        with _levels.physical():
            value = _ops.movedim(value, k + d, k)
    return BatchedTensor(value, outer + (level_id,))


def _is_dim(x):
    return x is None or (isinstance(x, int) and not isinstance(x, bool))


def run_rule(rule, label, args, kwargs=None):
    """rule(info, in_dims, *args, **kwargs) at the innermost level of args: its outputs batched
    there. label names the rule in errors ("the vmap staticmethod of Sort", ...)."""
    level_id = innermost_of(list(args) + list((kwargs or {}).values()))
    level = level_object(level_id)
    pairs = [_unwrapped(a, level_id) for a in args]
    unwrapped = [p[0] for p in pairs]
    in_dims = tuple(p[1] for p in pairs)
    kwargs = {k: _unwrapped(v, level_id)[0] for k, v in (kwargs or {}).items()}
    with lowered(level_id):
        result = rule(VmapInfo(level.size, level.randomness), in_dims, *unwrapped, **kwargs)
    if not isinstance(result, tuple) or len(result) != 2:
        raise RuntimeError(f"Expected {label} to have two returns, an output and out_dims with "
                           "pytree structure compatible with the output. Got a "
                           f"{type(result)} instead")
    output, out_dims = result
    leaves, spec = flatten(output)
    dims_leaves, _ = flatten(out_dims)
    flat_dims = broadcast_prefix(out_dims, output, _is_dim) \
        if all(_is_dim(d) for d in dims_leaves) else None
    if flat_dims is None:
        raise RuntimeError(f"{label} returned an incompatible (output, out_dims) tuple. Expected "
                           f"out_dims={out_dims!r} to be compatible with the structure of "
                           f"`output`. out_dims has structure {describe(flatten(out_dims)[1])} "
                           f"but output has structure {describe(spec)}")
    with _levels.physical():
        wrapped = [_wrapped(o, d, level_id, level.size, label) for o, d in zip(leaves, flat_dims)]
    return unflatten(wrapped, spec)
