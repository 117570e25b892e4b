"""From logical arguments to physical tensors and back: aligning batch dims across arguments.

A batched argument's physical value has one leading dim per level it is batched at; the levels of
a call are the union of its arguments' levels, sorted (outermost first). `aligned` gives an
argument the leading dims of all the call's levels (size 1, or the batch size with expand=True,
where it lacks one) and pads its logical dims to a rank with size-1 dims, so that NumPy's
broadcasting lines up batch dims with batch dims and logical dims with logical dims.
"""
from .. import _core
from .batched import BatchedTensor
from .trees import rebuild

Tensor = _core.Tensor


def is_batched(x):
    return type(x) is BatchedTensor


def levels_of(values):
    """The sorted union of the levels of the batched values among values."""
    seen = ()
    for v in values:
        if type(v) is BatchedTensor and v.levels != seen:
            seen = tuple(sorted(set(seen) | set(v.levels)))
    return seen


def sizes_of(levels, values):
    """{level id: batch size} for levels, read off the batched values' physical shapes."""
    sizes = {}
    for v in values:
        if type(v) is BatchedTensor:
            shape = v.value.shape
            for i, level in enumerate(v.levels):
                sizes[level] = shape[i]
    return sizes


def logical_ndim(x):
    if type(x) is BatchedTensor:
        return x.value.ndim - len(x.levels)
    return x.ndim


def logical_shape(x):
    if type(x) is BatchedTensor:
        return tuple(x.value.shape)[len(x.levels):]
    return tuple(x.shape)


def aligned(x, levels, sizes=None, rank=None):
    """x's physical tensor with a leading dim for each of levels (its batch dim where x has the
    level; else 1, or sizes[level] when sizes is given), then its logical dims left-padded with 1s
    to rank (None: as they are). x may be a plain tensor."""
    if type(x) is BatchedTensor:
        value, own = x.value, x.levels
    else:
        value, own = x, ()
    shape = tuple(value.shape)
    logical = shape[len(own):]
    pad = 0 if rank is None else rank - len(logical)
    if own == levels and pad <= 0:
        return value
    lead = []
    for level in levels:
        if level in own:
            lead.append(shape[own.index(level)])
        else:
            lead.append(1)
    target = tuple(lead) + (1,) * max(pad, 0) + logical
    if target != shape:
        value = _core.checked_reshape(value, target)
    if sizes is not None:
        full = tuple(sizes[level] for level in levels) + target[len(levels):]
        if full != target:
            value = _core.checked_expand(value, full)
    return value


def wrap(out, levels):
    """Each tensor in out (a tensor, or a tuple or list of them) as a BatchedTensor at levels."""
    if isinstance(out, Tensor):
        return BatchedTensor(out, levels)
    if isinstance(out, tuple):
        items = [BatchedTensor(o, levels) if isinstance(o, Tensor) else o for o in out]
        return rebuild(type(out), items)     # a named result keeps its type (sort's values, ...)
    if isinstance(out, list):
        return [BatchedTensor(o, levels) if isinstance(o, Tensor) else o for o in out]
    return out


def normalized_dim(d, rank, op):
    """d (negative counts from the end) as an index into rank dims; IndexError if out of range."""
    if isinstance(d, bool) or not hasattr(d, "__index__"):
        raise TypeError(f"{op}: dim must be an int, not {type(d).__name__}")
    d = d.__index__()
    n = max(rank, 1)
    if not -n <= d < n:
        raise IndexError(f"{op}: dim {d} is out of range for a tensor of {rank} dims "
                         f"(expected a dim in [{-n}, {n - 1}])")
    return d % n
