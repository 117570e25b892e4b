"""Tensor constructors: lucid.tensor, zeros, ones, full, arange, eye, linspace, ... (the random
ones are lucid/_random.py)."""
import numpy as np

from . import _core
from ._batching.batched import BatchedTensor as _BatchedTensor


def _shape(size, op):
    """f(2, 3) and f((2, 3)) alike, as a tuple of non-negative ints (errors name op)."""
    return _core.constructor_shape(tuple(size), op)


def _dtype(dtype, default, op):
    return default if dtype is None else _core.as_dtype(dtype, op)


def _device(device, op):
    """Check op's device= argument: None, "cpu" or an object whose str is "cpu" (RuntimeError
    naming any other device)."""
    if device is not None:
        _core.check_device_arg(device, op)


def _check_grad_dtype(dtype, requires_grad, op):
    """requires_grad only for a floating dtype (RuntimeError naming op otherwise)."""
    if requires_grad and dtype.kind not in "fc":
        raise RuntimeError(f"{op}: only floating point tensors can require gradients, not "
                           f"{_core.dtype_name(dtype)}; pass a float dtype")


def _leaf(array, requires_grad, op):
    """A new leaf tensor over array; requires_grad only for a floating dtype."""
    _check_grad_dtype(array.dtype, requires_grad, op)
    return _core._from_array(array, requires_grad)


_INT64_MIN, _INT64_MAX = np.iinfo(np.int64).min, np.iinfo(np.int64).max


def _check_fits_int64(array, op):
    """Unsigned values past int64's range would wrap around: refuse them."""
    if array.dtype.kind == "u" and array.size and array.max() > _INT64_MAX:
        raise ValueError(f"{op}: the value {array.max()} does not fit in lucid.int64 (the "
                         f"largest is {_INT64_MAX}) and lucid has no unsigned dtype; convert to "
                         "float64 first if an approximate value will do")


def _scan_ints(data):
    """(the first Python int in nested lists/tuples data that no int64 holds, or None; whether
    data holds a float)."""
    big, has_float, stack = None, False, [data]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        elif isinstance(item, (float, np.floating)):
            has_float = True
        elif big is None and type(item) is int and not _INT64_MIN <= item <= _INT64_MAX:
            big = item
    return big, has_float


def _values_array(data, dt, op):
    """np.array(data) of Python data. An int that fits no lucid integer dtype is a ValueError
    unless the values are floats (a float among them, or a float dtype asked for): NumPy would
    have made it float64 or object, changing it silently."""
    try:
        array = np.array(data)
    except ValueError as e:
        raise ValueError(f"{op}: data must be a number or a rectangular nested sequence of "
                         f"numbers ({e})") from None
    if array.dtype.kind == "O" or (array.dtype.kind == "f" and array.size and
                                    np.fmax.reduce(np.abs(array), axis=None) >= 2.0**63):
        big, has_float = _scan_ints(data)
        floats = has_float or (dt is not None and dt.kind == "f")
        if big is not None and not floats:
            raise ValueError(f"{op}: the value {big} does not fit in lucid.int64 (Overflow "
                             "when unpacking long); pass float values (e.g. float(v)) or "
                             "dtype=lucid.float64 if an approximate value will do")
        if array.dtype.kind == "O" and floats:
            try:                             # ints past 64 bits that are to become floats
                array = np.array(data, dtype=np.float64)
            except (TypeError, ValueError):
                pass
    return array


def _native(array):
    """array in the machine's byte order (same dtype, values unchanged)."""
    return array if array.dtype.isnative else array.astype(array.dtype.newbyteorder("="))


def _values_dtype(array, op):
    """The dtype lucid gives values read from Python data: floats -> the default float dtype."""
    kind = array.dtype.kind
    if kind == "f":
        return _core.get_default_dtype()
    if kind in "iu":
        return _core.int64
    if kind == "b":
        return _core.bool_
    if kind == "c":
        return _core.complex64 if _core.get_default_dtype() == _core.float32 else _core.complex128
    raise TypeError(f"{op}: can't make a tensor from values of dtype {array.dtype}")


def tensor(data, dtype=None, requires_grad=False, *, device=None):
    """A new tensor holding a copy of data (Python floats get the default float dtype)."""
    _device(device, "tensor")
    return tensor_from(data, dtype, requires_grad, "tensor")


def tensor_from(data, dtype, requires_grad, op):
    """lucid.tensor(data, dtype, requires_grad) for op (the name its errors give)."""
    dt = None if dtype is None else _core.as_dtype(dtype, op)
    if isinstance(data, _core.Tensor):
        array = np.array(data.detach().numpy(), copy=True)
    elif isinstance(data, (np.ndarray, np.generic)):     # a NumPy scalar keeps its dtype too
        array = np.array(_native(np.asarray(data)), copy=True)
        if array.dtype not in _core.SUPPORTED_DTYPES and dt is None:
            _check_fits_int64(array, op)
            array = array.astype(_core.float32 if array.dtype.kind == "f" else
                                 _values_dtype(array, op))
    else:
        array = _values_array(data, dt, op)
        if array.dtype == object or array.dtype.kind in "USV":
            raise TypeError(f"{op}: can't make a tensor from {type(data).__name__} values "
                            f"(dtype {array.dtype}); data must be numbers")
        if dt is None:
            _check_fits_int64(array, op)
            array = array.astype(_values_dtype(array, op), copy=False)
    if dt is not None:
        if dt.kind == "i":
            _check_fits_int64(array, op)
        array = array.astype(dt, copy=False)
    return _leaf(np.ascontiguousarray(array) if array.ndim else array, requires_grad, op)


def from_numpy(array):
    """A tensor sharing array's memory and keeping its dtype."""
    return _core.from_numpy(array)


def _filled(size, value, dtype, requires_grad, default, op):
    dt = _dtype(dtype, default, op)
    return _leaf(np.full(_shape(size, op), _core.check_fill_value(value, dt, op), dtype=dt),
                 requires_grad, op)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of zeros."""
    _device(device, "zeros")
    return _filled(size, 0, dtype, requires_grad, _core.get_default_dtype(), "zeros")


def ones(*size, dtype=None, device=None, requires_grad=False):
    """A tensor of ones."""
    _device(device, "ones")
    return _filled(size, 1, dtype, requires_grad, _core.get_default_dtype(), "ones")


def empty(*size, dtype=None, device=None, requires_grad=False):
    """A tensor with unspecified values."""
    _device(device, "empty")
    dt = _dtype(dtype, _core.get_default_dtype(), "empty")
    return _leaf(np.empty(_shape(size, "empty"), dtype=dt), requires_grad, "empty")


def _full(size, fill_value, dtype, requires_grad, op):
    """full() for op: the dtype follows fill_value unless given."""
    if not isinstance(size, (tuple, list)):
        size = (size,)
    default = None
    if dtype is None:
        value = _core.check_fill_value(fill_value, _core.float64, op)
        default = _core.int64 if type(value) is int else _values_dtype(np.array(value), op)
    return _filled((tuple(size),), fill_value, dtype, requires_grad, default, op)


def full(size, fill_value, dtype=None, requires_grad=False, *, device=None):
    """A tensor filled with fill_value (its dtype follows the value unless given)."""
    _device(device, "full")
    return _full(size, fill_value, dtype, requires_grad, "full")


def _like(t, op):
    """t, the tensor a *_like constructor copies the shape (and dtype) of."""
    if type(t) is _BatchedTensor:
        return t                                  # its logical shape (vmap's batched forms below)
    if not isinstance(t, _core.Tensor):
        raise TypeError(f"{op}: argument 't' must be a Tensor, not {type(t).__name__}")
    return t


def zeros_like(t, dtype=None, requires_grad=False, *, device=None):
    """Zeros with t's shape and dtype."""
    t = _like(t, "zeros_like")
    _device(device, "zeros_like")
    return _filled(t.shape, 0, t.dtype if dtype is None else dtype, requires_grad, None,
                   "zeros_like")


def ones_like(t, dtype=None, requires_grad=False, *, device=None):
    """Ones with t's shape and dtype."""
    t = _like(t, "ones_like")
    _device(device, "ones_like")
    return _filled(t.shape, 1, t.dtype if dtype is None else dtype, requires_grad, None,
                   "ones_like")


def full_like(t, fill_value, dtype=None, requires_grad=False, *, device=None):
    """A tensor of t's shape filled with fill_value, with t's dtype unless given."""
    t = _like(t, "full_like")
    _device(device, "full_like")
    return _full(t.shape, fill_value, t.dtype if dtype is None else dtype, requires_grad,
                 "full_like")


def empty_like(t, dtype=None, requires_grad=False, *, device=None):
    """A tensor of t's shape and dtype with unspecified values."""
    t = _like(t, "empty_like")
    _device(device, "empty_like")
    dt = _dtype(dtype, t.dtype, "empty_like")
    return _leaf(np.empty(t.shape, dtype=dt), requires_grad, "empty_like")


def _count(value, name, op):
    """A non-negative int argument (a size or a number of steps)."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"{op}: {name} must be an int, not {type(value).__name__}")
    value = value.__index__()
    if value < 0:
        raise RuntimeError(f"{op}: {name} must be >= 0, got {value}")
    if value > _INT64_MAX:
        raise ValueError(f"{op}: {name} = {value} does not fit in a 64-bit integer")
    return value


def _number(value, name, op):
    """A real number argument (start, end, step, base): TypeError naming op otherwise."""
    if isinstance(value, _core.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}: {name} must be a number, not {type(value).__name__}")
    if isinstance(value, int) and not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"{op}: {name} = {value} does not fit in a 64-bit integer")
    return value


def eye(n, m=None, dtype=None, requires_grad=False, *, device=None):
    """The n x m matrix (m = n by default) with ones on the diagonal and zeros elsewhere."""
    n = _count(n, "n", "eye")
    m = n if m is None else _count(m, "m", "eye")
    _device(device, "eye")
    return _leaf(np.eye(n, m, dtype=_dtype(dtype, _core.get_default_dtype(), "eye")),
                 requires_grad, "eye")


def linspace(start, end, steps, dtype=None, requires_grad=False, *, device=None):
    """steps values evenly spaced from start to end, both included."""
    start, end = _number(start, "start", "linspace"), _number(end, "end", "linspace")
    steps = _count(steps, "steps", "linspace")
    _device(device, "linspace")
    dt = _dtype(dtype, _core.get_default_dtype(), "linspace")
    return _leaf(np.linspace(start, end, steps).astype(dt), requires_grad, "linspace")


def logspace(start, end, steps, base=10.0, dtype=None, requires_grad=False, *, device=None):
    """steps values base**e for e evenly spaced from start to end, both included."""
    start, end = _number(start, "start", "logspace"), _number(end, "end", "logspace")
    base = _number(base, "base", "logspace")
    steps = _count(steps, "steps", "logspace")
    _device(device, "logspace")
    dt = _dtype(dtype, _core.get_default_dtype(), "logspace")
    return _leaf(np.power(float(base), np.linspace(start, end, steps)).astype(dt),
                 requires_grad, "logspace")


def as_tensor(data, dtype=None, device=None):
    """data as a tensor, without a copy when it already is one (or a NumPy array) of dtype."""
    _device(device, "as_tensor")
    if isinstance(data, _core.Tensor):
        return data if dtype is None else data.to(_core.as_dtype(dtype, "as_tensor"))
    if (isinstance(data, np.ndarray) and data.dtype in _core.SUPPORTED_DTYPES
            and data.dtype.isnative and (dtype is None or
                                         _core.as_dtype(dtype, "as_tensor") == data.dtype)):
        return _core.from_numpy(data)
    return tensor_from(data, dtype, False, "as_tensor")


def arange(start, end=None, step=1, dtype=None, requires_grad=False, *, device=None):
    """Values from start to end (exclusive) by step; int64 for ints, the default float dtype for
    floats."""
    _device(device, "arange")
    if end is None:
        start, end = 0, start
    start, end = _number(start, "start", "arange"), _number(end, "end", "arange")
    step = _number(step, "step", "arange")
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    for name, value in (("start", start), ("end", end), ("step", step)):
        if not np.isfinite(value):
            raise RuntimeError(f"arange: {name} must be a finite number, got {value}")
    try:
        values = np.arange(start, end, step)
    except ValueError as e:                  # more values than an array can hold
        raise RuntimeError(f"arange: {e} for start={start}, end={end}, step={step}") from None
    dt = _dtype(dtype, _values_dtype(values, "arange"), "arange")
    return _leaf(values.astype(dt, copy=False), requires_grad, "arange")


def _batched_like(make):
    """make(t, ...) for a batched t: the result batched like t (zeros_like of a per-sample
    tensor is per-sample), made from t's physical value."""
    import functools

    @functools.wraps(make)
    def like(t, *args, **kwargs):
        if type(t) is _BatchedTensor:
            return _BatchedTensor(make(t.value, *args, **kwargs), t.levels)
        return make(t, *args, **kwargs)
    return like


zeros_like = _batched_like(zeros_like)
ones_like = _batched_like(ones_like)
full_like = _batched_like(full_like)
empty_like = _batched_like(empty_like)
