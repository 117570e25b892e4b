"""lucid.func's transforms called under vmap: each runs on the physical tensors.

Inside vmap, grad(f)(x) must give each batch element the gradient of its own output. The
transform gives every differentiated argument all the active levels' batch dims (an unbatched
argument is expanded, a view), runs f on BatchedTensors of those physical tensors, and
differentiates the physical output, batched at every active level, with a seed of ones: as the
batch elements never mix (every op works per element), the physical gradient holds each
element's own gradient. jvp and vjp do the same with their tangents and cotangents. A
cotangent batched at a level the recorded output lacks (vmap over a vjp_fn made outside it)
cannot use the recorded graph: vjp_fn then runs f again inside that level.
"""
from .. import _core
from . import levels as _levels
from .batched import BatchedTensor
from .physical import aligned, is_batched, logical_shape


def active():
    """Is a transform call on this thread under vmap (a batch level active, dispatch on)?"""
    return bool(_levels.stack()) and _core._batch_dispatch_on()


def active_levels():
    """(level ids, {id: size}) of this thread's active levels."""
    stack = _levels.stack()
    return tuple(level.id for level in stack), {level.id: level.size for level in stack}


def to_physical(x, levels, sizes):
    """x (batched or plain) as a plain tensor batched at every one of levels (expanded)."""
    with _levels.physical():
        return aligned(x, levels, sizes)


def to_logical(x, levels):
    return BatchedTensor(x, levels) if isinstance(x, _core.Tensor) else x


def logical_numel(x):
    n = 1
    for s in logical_shape(x):
        n *= s
    return n


def tensor_or_batched(x):
    return isinstance(x, _core.Tensor) or is_batched(x)


def levels_in(tree):
    """The levels of the batched tensors in tree (a tensor, or tuples and lists of them)."""
    if is_batched(tree):
        return tree.levels
    if isinstance(tree, (tuple, list)):
        out = ()
        for item in tree:
            out += tuple(levels_in(item))
        return out
    return ()


def any_batched(tree):
    return bool(levels_in(tree))


def first_element(tree, level):
    """tree (aux computed under a vmap over identical elements, which has exited) with each
    tensor batched at level replaced by its first element."""
    if is_batched(tree):
        if level not in tree.levels:
            return tree
        from .. import _ops
        position = tree.levels.index(level)
        rest = tuple(l for l in tree.levels if l != level)
        with _levels.physical():
            value = _ops.select(tree.value, position, 0)
        return BatchedTensor(value, rest) if rest else value
    if isinstance(tree, dict):
        return {k: first_element(v, level) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(first_element(v, level) for v in tree)
    return tree
