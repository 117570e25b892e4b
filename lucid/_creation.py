"""Tensor constructors: lucid.tensor, zeros, ones, full, arange, randn, ..."""
import numpy as np

from . import _core

_rng = np.random.default_rng()


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    try:
        return tuple(int(s.__index__()) for s in size)
    except AttributeError:
        raise TypeError(f"a size is a sequence of ints, got {size!r}") from None


def _dtype(dtype, default):
    return default if dtype is None else _core.as_dtype(dtype)


_INT64_MAX = np.iinfo(np.int64).max


def _check_fits_int64(array):
    """Unsigned values past int64's range would wrap around: refuse them."""
    if array.dtype.kind == "u" and array.size and array.max() > _INT64_MAX:
        raise ValueError(f"tensor(): the value {array.max()} does not fit in lucid.int64 (the "
                         f"largest is {_INT64_MAX}) and lucid has no unsigned dtype; convert to "
                         "float64 first if an approximate value will do")


def _native(array):
    """array in the machine's byte order (same dtype, values unchanged)."""
    return array if array.dtype.isnative else array.astype(array.dtype.newbyteorder("="))


def _values_dtype(array):
    """The dtype lucid gives values read from Python data: floats -> float32."""
    kind = array.dtype.kind
    if kind == "f":
        return _core.float32
    if kind in "iu":
        return _core.int64
    if kind == "b":
        return _core.bool_
    raise TypeError(f"can't make a tensor from values of dtype {array.dtype}")


def tensor(data, dtype=None, requires_grad=False):
    """A new tensor holding a copy of data (Python floats become float32)."""
    if isinstance(data, _core.Tensor):
        array = np.array(data.detach().numpy(), copy=True)
    elif isinstance(data, np.ndarray):
        array = np.array(_native(data), copy=True)
        if array.dtype not in _core.SUPPORTED_DTYPES and dtype is None:
            _check_fits_int64(array)
            array = array.astype(_values_dtype(array))
    else:
        try:
            array = np.array(data)
        except ValueError as e:
            raise ValueError(f"tensor(): data must be a number or a rectangular nested "
                             f"sequence of numbers ({e})") from None
        if array.dtype == object:
            raise TypeError(f"tensor(): can't make a tensor from {type(data).__name__} values")
        if dtype is None:
            _check_fits_int64(array)
            array = array.astype(_values_dtype(array), copy=False)
    if dtype is not None:
        if _core.as_dtype(dtype).kind == "i":
            _check_fits_int64(array)
        array = array.astype(_core.as_dtype(dtype), copy=False)
    return _core._from_array(np.ascontiguousarray(array) if array.ndim else array, requires_grad)


def from_numpy(array):
    """A tensor sharing array's memory and keeping its dtype."""
    return _core.from_numpy(array)


def _filled(size, value, dtype, requires_grad, default):
    dt = _dtype(dtype, default)
    return _core._from_array(np.full(_shape(size), value, dtype=dt), requires_grad)


def zeros(*size, dtype=None, requires_grad=False):
    """A tensor of zeros."""
    return _filled(size, 0, dtype, requires_grad, _core.float32)


def ones(*size, dtype=None, requires_grad=False):
    """A tensor of ones."""
    return _filled(size, 1, dtype, requires_grad, _core.float32)


def empty(*size, dtype=None, requires_grad=False):
    """A tensor with unspecified values."""
    dt = _dtype(dtype, _core.float32)
    return _core._from_array(np.empty(_shape(size), dtype=dt), requires_grad)


def full(size, fill_value, dtype=None, requires_grad=False):
    """A tensor filled with fill_value (its dtype follows the value unless given)."""
    if isinstance(size, int):
        size = (size,)
    default = _values_dtype(np.array(fill_value))
    return _filled((tuple(size),), fill_value, dtype, requires_grad, default)


def zeros_like(t, dtype=None, requires_grad=False):
    """Zeros with t's shape and dtype."""
    return zeros(t.shape, dtype=t.dtype if dtype is None else dtype, requires_grad=requires_grad)


def ones_like(t, dtype=None, requires_grad=False):
    """Ones with t's shape and dtype."""
    return ones(t.shape, dtype=t.dtype if dtype is None else dtype, requires_grad=requires_grad)


def full_like(t, fill_value, dtype=None, requires_grad=False):
    """A tensor of t's shape filled with fill_value, with t's dtype unless given."""
    return full(t.shape, fill_value, dtype=t.dtype if dtype is None else dtype,
                requires_grad=requires_grad)


def empty_like(t, dtype=None, requires_grad=False):
    """A tensor of t's shape and dtype with unspecified values."""
    return empty(t.shape, dtype=t.dtype if dtype is None else dtype, requires_grad=requires_grad)


def _count(value, name, op):
    """A non-negative int argument (a size or a number of steps)."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{op}: {name} must be an int, not {type(value).__name__}")
    value = value.__index__()
    if value < 0:
        raise RuntimeError(f"{op}: {name} must be >= 0, got {value}")
    return value


def eye(n, m=None, dtype=None, requires_grad=False):
    """The n x m matrix (m = n by default) with ones on the diagonal and zeros elsewhere."""
    n = _count(n, "n", "eye")
    m = n if m is None else _count(m, "m", "eye")
    return _core._from_array(np.eye(n, m, dtype=_dtype(dtype, _core.float32)), requires_grad)


def linspace(start, end, steps, dtype=None, requires_grad=False):
    """steps values evenly spaced from start to end, both included."""
    steps = _count(steps, "steps", "linspace")
    dt = _dtype(dtype, _core.float32)
    return _core._from_array(np.linspace(start, end, steps).astype(dt), requires_grad)


def logspace(start, end, steps, base=10.0, dtype=None, requires_grad=False):
    """steps values base**e for e evenly spaced from start to end, both included."""
    steps = _count(steps, "steps", "logspace")
    dt = _dtype(dtype, _core.float32)
    return _core._from_array(np.power(float(base), np.linspace(start, end, steps)).astype(dt),
                             requires_grad)


def as_tensor(data, dtype=None):
    """data as a tensor, without a copy when it already is one (or a NumPy array) of dtype."""
    if isinstance(data, _core.Tensor):
        return data if dtype is None else data.to(dtype)
    if (isinstance(data, np.ndarray) and data.dtype in _core.SUPPORTED_DTYPES
            and data.dtype.isnative and (dtype is None or _core.as_dtype(dtype) == data.dtype)):
        return _core.from_numpy(data)
    return tensor(data, dtype=dtype)


def arange(start, end=None, step=1, dtype=None, requires_grad=False):
    """Values from start to end (exclusive) by step; int64 for ints, float32 for floats."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    for name, value in (("start", start), ("end", end), ("step", step)):
        if not np.isfinite(value):
            raise RuntimeError(f"arange: {name} must be a finite number, got {value}")
    values = np.arange(start, end, step)
    dt = _dtype(dtype, _values_dtype(values))
    return _core._from_array(values.astype(dt, copy=False), requires_grad)


def manual_seed(seed):
    """Seed lucid's random generator (randn, rand)."""
    global _rng
    _rng = np.random.default_rng(seed)


def get_rng_state():
    """The state of lucid's random generator (randn, rand), to restore with set_rng_state."""
    return _rng.bit_generator.state


def set_rng_state(state):
    """Restore lucid's random generator to a state from get_rng_state."""
    _rng.bit_generator.state = state


def randn(*size, dtype=None, requires_grad=False):
    """Standard normal samples."""
    dt = _dtype(dtype, _core.float32)
    if dt.kind != "f":
        raise TypeError("randn needs a floating point dtype")
    return _core._from_array(_rng.standard_normal(_shape(size), dtype=dt), requires_grad)


def rand(*size, dtype=None, requires_grad=False):
    """Uniform samples in [0, 1)."""
    dt = _dtype(dtype, _core.float32)
    if dt.kind != "f":
        raise TypeError("rand needs a floating point dtype")
    return _core._from_array(_rng.random(_shape(size), dtype=dt), requires_grad)
