# Conversions and constructors reached from a tensor: x.to(...), x.type(...), x.cpu(),
# x.new_zeros / new_ones / new_full / new_empty / new_tensor. The dtype change itself is `cast`
# (ops/elementwise/unary.pxi), differentiable.

cdef dict TYPE_NAMES = {float32: "FloatTensor", float64: "DoubleTensor", int64: "LongTensor",
                        int32: "IntTensor", bool_: "BoolTensor"}


cdef Tensor tensor_to(Tensor t, tuple args, dict kwargs):
    """x.to(dtype) / x.to(device) / x.to(device, dtype) / x.to(other) / x.to(device=, dtype=)."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument {next(iter(kwargs))!r}")
    if len(args) > 2:
        raise TypeError(f"to() takes at most 2 positional arguments ({len(args)} given)")
    for arg in args:
        if isinstance(arg, Tensor):
            if dtype is not None or len(args) > 1:
                raise TypeError("to(other): the other tensor gives the dtype and device; "
                                "pass nothing else")
            dtype = (<Tensor>arg).data.dtype
        elif isinstance(arg, str):
            if device is not None:
                raise TypeError("to(): the device was given twice")
            device = arg
        else:
            if dtype is not None:
                raise TypeError("to(): the dtype was given twice")
            dtype = arg
    if device is not None:
        check_device(device, "to")
    cdef Tensor out = t if dtype is None else cast(t, as_supported_dtype(dtype, "to"))
    return clone(out) if copy and out is t else out


cdef object tensor_type(Tensor t, object dtype):
    """x.type(): 'lucid.FloatTensor' ...; x.type(dtype): x cast to dtype."""
    if dtype is None:
        return "lucid." + TYPE_NAMES[t.data.dtype]
    cdef str bare
    if isinstance(dtype, str):
        bare = dtype.rpartition(".")[2]          # "lucid.FloatTensor" -> "FloatTensor"
        for dt, name in TYPE_NAMES.items():
            if bare == name:
                return cast(t, dt)
        raise TypeError(f"type(): unknown tensor type {dtype!r}; use a dtype such as "
                        "lucid.float64")
    return cast(t, as_supported_dtype(dtype, "type"))


cdef tuple size_arg(tuple size, str op):
    """f(2, 3) and f((2, 3)) alike, as a tuple of non-negative ints (else an error naming op)."""
    cdef tuple shape = int_tuple(shape_arg(size), op, "size")
    cdef Py_ssize_t n
    for n in shape:
        if n < 0:
            raise RuntimeError(f"{op}: sizes must be non-negative, got {shape}")
    return shape


def constructor_shape(tuple size, str op):
    """The shape given to constructor op as f(2, 3) or f((2, 3)) (see size_arg)."""
    return size_arg(size, op)


cdef Tensor new_filled(Tensor t, tuple size, object value, object dtype, bint requires_grad,
                       str op):
    """A new tensor of size filled with value (None: uninitialised), with t's dtype unless
    dtype is given."""
    cdef object dt = descr(t.data) if dtype is None else as_supported_dtype(dtype, op)
    cdef tuple shape = size_arg(size, op)
    cdef Tensor out = wrap(np.empty(shape, dtype=dt) if value is None else
                           np.full(shape, check_fill_value(value, dt, op), dtype=dt))
    if requires_grad:
        out.requires_grad_(True)
    return out


def check_fill_value(value, dtype, str op):
    """value, a number to fill a tensor of dtype with: TypeError for anything else (None
    included), RuntimeError for an int that dtype cannot hold."""
    if isinstance(value, Tensor) and (<Tensor>value).data.size == 1:
        value = (<Tensor>value).item()
    if scalar_operand(value) is None:
        raise TypeError(f"{op}: fill_value must be a number, not {type(value).__name__}")
    check_int_fits(value, np.dtype(dtype), op)
    return value


cdef Tensor new_tensor_from(Tensor t, object data, object dtype, bint requires_grad):
    """A new tensor holding a copy of data, with t's dtype unless dtype is given."""
    from lucid._creation import tensor_from
    return tensor_from(data, descr(t.data) if dtype is None else dtype, requires_grad,
                       "new_tensor")


# -- Tensor methods: conversions and constructors reached from a tensor (installed on Tensor below) ----------

def _tensor_float(Tensor self):
    """self cast to float32 (self if it already is)."""
    return cast(self, float32)


def _tensor_double(Tensor self):
    """self cast to float64 (self if it already is)."""
    return cast(self, float64)


def _tensor_long(Tensor self):
    """self cast to int64 (no gradient)."""
    return cast(self, int64)


def _tensor_int(Tensor self):
    """self cast to int32 (no gradient)."""
    return cast(self, int32)


def _tensor_bool(Tensor self):
    """self cast to bool: True where non-zero (no gradient)."""
    return cast(self, bool_)


def _tensor_to(Tensor self, *args, **kwargs):
    """This tensor with another dtype (and on "cpu", lucid's one device); self if unchanged."""
    return tensor_to(self, args, kwargs)


def _tensor_type(Tensor self, dtype=None):
    """'lucid.FloatTensor' (etc.) without an argument; else this tensor cast to dtype."""
    return tensor_type(self, dtype)


def _tensor_cpu(Tensor self):
    """This tensor (lucid tensors live on the CPU)."""
    return self


def _tensor_new_zeros(Tensor self, *size, dtype=None, device=None, requires_grad=False):
    """A new tensor of zeros of the given size, with self's dtype unless dtype is given."""
    check_device(device, "new_zeros")
    return new_filled(self, size, 0, dtype, requires_grad, "new_zeros")


def _tensor_new_ones(Tensor self, *size, dtype=None, device=None, requires_grad=False):
    """A new tensor of ones of the given size, with self's dtype unless dtype is given."""
    check_device(device, "new_ones")
    return new_filled(self, size, 1, dtype, requires_grad, "new_ones")


def _tensor_new_empty(Tensor self, *size, dtype=None, device=None, requires_grad=False):
    """A new uninitialised tensor of the given size, with self's dtype unless dtype is given."""
    check_device(device, "new_empty")
    return new_filled(self, size, None, dtype, requires_grad, "new_empty")


def _tensor_new_full(Tensor self, size, fill_value, *, dtype=None, device=None,
                     requires_grad=False):
    """A new tensor of size filled with fill_value, with self's dtype unless dtype is given."""
    check_device(device, "new_full")
    return new_filled(self, (size,), check_fill_value(fill_value, descr(self.data), "new_full"),
                      dtype, requires_grad, "new_full")


def _tensor_new_tensor(Tensor self, data, *, dtype=None, device=None, requires_grad=False):
    """A new leaf tensor holding a copy of data, with self's dtype unless dtype is given."""
    check_device(device, "new_tensor")
    return new_tensor_from(self, data, dtype, requires_grad)


def _tensor_half(Tensor self):
    """float16 is not a lucid dtype: TypeError."""
    raise TypeError("half(): lucid has no float16 dtype; use .float() (float32) or .double()")


install_methods(Tensor, {
    "float": _tensor_float,
    "double": _tensor_double,
    "long": _tensor_long,
    "int": _tensor_int,
    "bool": _tensor_bool,
    "to": _tensor_to,
    "type": _tensor_type,
    "cpu": _tensor_cpu,
    "new_zeros": _tensor_new_zeros,
    "new_ones": _tensor_new_ones,
    "new_empty": _tensor_new_empty,
    "new_full": _tensor_new_full,
    "new_tensor": _tensor_new_tensor,
    "half": _tensor_half,
})
