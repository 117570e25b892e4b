"""Random ops under vmap: randomness="error" refuses them, "same" draws one value for the whole
batch, "different" draws one per batch element (a batch dim per level that asks for it)."""
from .. import _core
from . import levels as _levels
from .batched import BatchedTensor
from .physical import logical_shape


def active():
    """Is a random call on this thread under vmap (and not inside a batching rule)?"""
    return bool(_levels.stack()) and _core._batch_dispatch_on()


def different_levels():
    """The active levels whose elements draw different values; RuntimeError in "error" mode."""
    out = []
    for level in _levels.stack():
        if level.randomness == "error":
            raise RuntimeError("vmap: called random operation while in randomness error mode. "
                               "Please either use the 'same' or 'different' randomness flags on "
                               "vmap or perform the randomness operation out of vmap")
        if level.randomness == "different":
            out.append(level)
    return out


def sample(draw, shape):
    """draw(shape) -> a plain tensor of that shape, batched over the "different" levels."""
    levels = different_levels()
    with _levels.physical():
        value = draw(tuple(level.size for level in levels) + tuple(shape))
    if not levels:
        return value
    return BatchedTensor(value, tuple(level.id for level in levels))


def like_shape(x):
    return logical_shape(x) if isinstance(x, (BatchedTensor, _core.Tensor)) else None


def permutation(n, draw_rand, dtype):
    """randperm under vmap: one permutation per batch element of the "different" levels."""
    levels = different_levels()
    if not levels:
        return None
    from .. import _ops
    with _levels.physical():
        keys = draw_rand(tuple(level.size for level in levels) + (n,))
        value = _ops.argsort(keys, -1).to(dtype)
    return BatchedTensor(value, tuple(level.id for level in levels))


def _sizes(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def batched_random(original):
    """The vmap form of a random constructor of lucid/_random.py (by its name)."""
    name = original.__name__

    if name in ("randn", "rand"):
        def under_vmap(*size, **kwargs):
            return sample(lambda shape: original(*shape, **kwargs), _sizes(size))
    elif name in ("randn_like", "rand_like"):
        plain = {"randn_like": "randn", "rand_like": "rand"}[name]

        def under_vmap(input, **kwargs):
            from .. import _random
            kwargs.setdefault("dtype", input.dtype) if kwargs.get("dtype") is None else None
            make = getattr(_random, plain)
            return sample(lambda shape: make(*shape, **kwargs), like_shape(input))
    elif name == "randint":
        def under_vmap(low=None, high=None, size=None, **kwargs):
            if size is None and isinstance(high, (tuple, list)):
                low, high, size = None, low, high
            if high is None:
                low, high = None, low
            if not isinstance(size, (tuple, list)):
                return original(low, high, size, **kwargs)     # its own error
            low = 0 if low is None else low
            return sample(lambda shape: original(low, high, shape, **kwargs), tuple(size))
    elif name == "randint_like":
        def under_vmap(input, low=None, high=None, **kwargs):
            from .. import _random
            if high is None:
                low, high = None, low
            if kwargs.get("dtype") is None:
                kwargs["dtype"] = input.dtype
            low = 0 if low is None else low
            return sample(lambda shape: _random.randint(low, high, shape, **kwargs),
                          like_shape(input))
    elif name == "randperm":
        def under_vmap(n, **kwargs):
            from .. import _random
            dtype = kwargs.get("dtype") or _core.int64
            out = permutation(n, lambda shape: _random.rand(*shape), dtype)
            return original(n, **kwargs) if out is None else out
    elif name == "normal":
        def under_vmap(mean=0.0, std=1.0, size=None, **kwargs):
            from .. import _random
            tensors = [v for v in (mean, std) if isinstance(v, (BatchedTensor, _core.Tensor))]
            if not tensors:
                return sample(lambda shape: original(mean, std, shape, **kwargs),
                              tuple(size) if isinstance(size, (tuple, list)) else size)
            import numpy as np
            shape = np.broadcast_shapes(*[like_shape(t) for t in tensors])
            noise = sample(lambda s: _random.randn(*s, dtype=tensors[0].dtype), shape)
            return (mean + std * noise).detach()
    else:
        raise ValueError(f"batched_random: no vmap form for {name}")
    under_vmap.__name__ = name
    return under_vmap
