"""Random tensors: rand, randn, randint, randperm, normal and the *_like forms, all drawn from one
generator that manual_seed seeds (lucid has no Generator objects: generator= takes None only)."""
import numpy as np

from . import _core
from ._creation import _check_grad_dtype, _count, _device, _dtype, _leaf, _like, _number, _shape, zeros
from .autograd.function import Function

_rng = np.random.default_rng()


def manual_seed(seed):
    """Seed lucid's random generator (every random constructor); seed is a non-negative int."""
    global _rng
    if not hasattr(seed, "__index__"):
        raise TypeError(f"manual_seed: seed must be an int, not {type(seed).__name__}")
    if seed.__index__() < 0:
        raise ValueError(f"manual_seed: seed must be >= 0, got {seed}")
    _rng = np.random.default_rng(seed.__index__())


def get_rng_state():
    """The state of lucid's random generator, to restore with set_rng_state."""
    return _rng.bit_generator.state


def set_rng_state(state):
    """Restore lucid's random generator to a state from get_rng_state."""
    try:
        _rng.bit_generator.state = state
    except (TypeError, ValueError, KeyError) as e:
        raise TypeError(f"set_rng_state: state must be what get_rng_state() returned ({e})") \
            from None


def _no_generator(generator, op):
    """generator= must be None: lucid's one generator is seeded by manual_seed."""
    if generator is not None:
        raise TypeError(f"{op}: lucid has no Generator objects, got generator="
                        f"{type(generator).__name__}; pass generator=None and seed lucid's "
                        "generator with lucid.manual_seed")


def _float_dtype(dtype, default, op, device, generator):
    """The float dtype op samples in (dtype, else default), after checking device= and
    generator=; TypeError for a dtype that is not floating point."""
    _no_generator(generator, op)
    _device(device, op)
    dt = _dtype(dtype, default, op)
    if dt.kind != "f":
        raise TypeError(f"{op} needs a floating point dtype, not {_core.dtype_name(dt)}")
    return dt


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Standard normal samples."""
    dt = _float_dtype(dtype, _core.get_default_dtype(), "randn", device, generator)
    return _leaf(_rng.standard_normal(_shape(size, "randn"), dtype=dt), requires_grad, "randn")


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform samples in [0, 1)."""
    dt = _float_dtype(dtype, _core.get_default_dtype(), "rand", device, generator)
    return _leaf(_rng.random(_shape(size, "rand"), dtype=dt), requires_grad, "rand")


def randn_like(input, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Standard normal samples with input's shape and (unless given) dtype."""
    t = _like(input, "randn_like")
    dt = _float_dtype(dtype, t.dtype, "randn_like", device, generator)
    return _leaf(_rng.standard_normal(t.shape, dtype=dt), requires_grad, "randn_like")


def rand_like(input, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform samples in [0, 1) with input's shape and (unless given) dtype."""
    t = _like(input, "rand_like")
    dt = _float_dtype(dtype, t.dtype, "rand_like", device, generator)
    return _leaf(_rng.random(t.shape, dtype=dt), requires_grad, "rand_like")


def _int(value, name, op):
    """An int argument (a bound of randint): TypeError naming op otherwise."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{op}: argument '{name}' must be an int, not {type(value).__name__}")
    return _number(value.__index__(), name, op)


def _check_bounds(low, high, dt, op):
    """low < high, both holdable by integer or bool dtype dt (PyTorch's words)."""
    if low >= high:
        raise RuntimeError(f"{op}: random_ expects 'from' to be less than 'to', but got "
                           f"from={low} >= to={high}")
    if dt.kind == "b":
        lo, hi = 0, 1
    elif dt.kind == "i":
        lo, hi = np.iinfo(dt).min, np.iinfo(dt).max
    else:
        return
    if low < lo:
        raise RuntimeError(f"{op}: from is out of bounds for {_core.dtype_name(dt)}")
    if high - 1 > hi:
        raise RuntimeError(f"{op}: to - 1 is out of bounds for {_core.dtype_name(dt)}")


def _integers(low, high, shape, dt, requires_grad, op):
    """A leaf of uniform integers in [low, high) of shape, as dtype dt."""
    low, high = _int(low, "low", op), _int(high, "high", op)
    _check_bounds(low, high, dt, op)
    _check_grad_dtype(dt, requires_grad, op)
    return _leaf(_rng.integers(low, high, size=shape, dtype=np.int64).astype(dt, copy=False),
                 requires_grad, op)


def randint(low=None, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False):
    """Uniform integers in [low, high) (low = 0 when only high is given) of shape size:
    randint(high, size) or randint(low, high, size); int64 unless dtype is given."""
    if size is None and isinstance(high, (tuple, list)):
        low, high, size = None, low, high        # randint(high, size)
    if high is None:
        low, high = None, low                    # randint(high, size=...)
    if high is None:
        raise TypeError("randint: missing the argument 'high'")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"randint: argument 'size' must be a tuple of ints, not "
                        f"{type(size).__name__}")
    _no_generator(generator, "randint")
    _device(device, "randint")
    dt = _dtype(dtype, _core.int64, "randint")
    return _integers(0 if low is None else low, high, _shape((tuple(size),), "randint"), dt,
                     requires_grad, "randint")


def randint_like(input, low=None, high=None, *, generator=None, dtype=None, device=None,
                 requires_grad=False):
    """Uniform integers in [low, high) (low = 0 when only high is given) with input's shape and
    (unless given) dtype."""
    t = _like(input, "randint_like")
    if high is None:
        low, high = None, low
    if high is None:
        raise TypeError("randint_like: missing the argument 'high'")
    _no_generator(generator, "randint_like")
    _device(device, "randint_like")
    dt = _dtype(dtype, t.dtype, "randint_like")
    return _integers(0 if low is None else low, high, t.shape, dt, requires_grad, "randint_like")


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of 0, 1, ..., n - 1 (int64 unless dtype is given)."""
    n = _count(n, "n", "randperm")
    _no_generator(generator, "randperm")
    _device(device, "randperm")
    dt = _dtype(dtype, _core.int64, "randperm")
    if dt.kind == "b":
        raise TypeError("randperm: not implemented for lucid.bool; use an integer or float dtype")
    if dt.kind == "i" and n > 0:
        _check_bounds(0, n, dt, "randperm")
    _check_grad_dtype(dt, requires_grad, "randperm")
    return _leaf(_rng.permutation(n).astype(dt, copy=False), requires_grad, "randperm")



def _normal_operand(value, name):
    """normal's mean or std: a float tensor or a number (float)."""
    if isinstance(value, _core.Tensor):
        if not value.is_floating_point():
            raise TypeError(f"normal: {name} must be a floating point tensor, not "
                            f"{_core.dtype_name(value.dtype)}")
        return value
    return float(_number(value, name, "normal"))


class Normal(Function):
    """The graph node of normal() with a tensor mean or std: PyTorch's gradient of a sample with
    respect to its mean and std is zero (it is not reparameterised; mean + std * randn_like(std)
    is)."""

    @staticmethod
    def forward(ctx, mean, std, values):
        ctx.inputs = [(t.shape, t.dtype) if isinstance(t, _core.Tensor) else None
                      for t in (mean, std)]
        return _core._from_array(values, False)

    @staticmethod
    def backward(ctx, grad):
        return tuple(None if i is None else zeros(i[0], dtype=i[1]) for i in ctx.inputs) + (None,)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None,
           requires_grad=False):
    """Normal samples of mean and std: tensors (broadcast together; the tensor mean's dtype, else
    std's) or numbers with size (dtype= and requires_grad= then apply)."""
    _no_generator(generator, "normal")
    _device(device, "normal")
    m, s = _normal_operand(mean, "mean"), _normal_operand(std, "std")
    tensors = [t for t in (m, s) if isinstance(t, _core.Tensor)]
    if size is not None or not tensors:
        if size is None:
            raise TypeError("normal: with numbers for mean and std, pass size (a tuple of ints)")
        if not isinstance(size, (tuple, list)):
            raise TypeError(f"normal: argument 'size' must be a tuple of ints, not "
                            f"{type(size).__name__}")
        m, s = (float(_number(v, n, "normal")) for v, n in ((m, "mean"), (s, "std")))
        if not s >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {s}")
        dt = _float_dtype(dtype, _core.get_default_dtype(), "normal", None, None)
        z = _rng.standard_normal(_shape((tuple(size),), "normal"), dtype=dt)
        return _leaf((m + s * z).astype(dt, copy=False), requires_grad, "normal")
    if dtype is not None or requires_grad:
        raise TypeError("normal: dtype= and requires_grad= go with numbers for mean and std (and "
                        "size); with a tensor mean or std, its dtype is the result's")
    if not isinstance(s, _core.Tensor) and not s >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {s}")
    ma, sa = (v.detach().numpy() if isinstance(v, _core.Tensor) else v for v in (m, s))
    if isinstance(s, _core.Tensor) and not np.all(sa >= 0):
        raise RuntimeError("normal expects all elements of std >= 0.0")
    try:
        shape = np.broadcast_shapes(np.shape(ma), np.shape(sa))
    except ValueError:
        raise RuntimeError(f"normal: the shapes of mean {tuple(np.shape(ma))} and std "
                           f"{tuple(np.shape(sa))} do not broadcast") from None
    dt = tensors[0].dtype
    values = np.asarray(ma + sa * _rng.standard_normal(shape, dtype=dt)).astype(dt, copy=False)
    if _core.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return Normal.apply(m, s, values)
    return _core._from_array(values, False)


def _with_vmap_forms():
    """Each random constructor takes vmap's randomness into account while vmap is active
    (lucid/_batching/randomness.py); outside vmap a call pays one test."""
    from ._batching import randomness
    import functools

    def add(original):
        under_vmap = randomness.batched_random(original)

        @functools.wraps(original)
        def random_op(*args, **kwargs):
            if randomness.active():
                return under_vmap(*args, **kwargs)
            return original(*args, **kwargs)
        return random_op
    names = ("randn", "rand", "randn_like", "rand_like", "randint", "randint_like", "randperm",
             "normal")
    for name in names:
        globals()[name] = add(globals()[name])


_with_vmap_forms()
