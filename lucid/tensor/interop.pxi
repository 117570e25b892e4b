# NumPy interop: a ufunc that meets a tensor (np.float64(0.5) * w, np.ones(2) + t, np.exp(t))
# runs the lucid op and gives a tensor, so results never silently leave lucid or the graph.

cdef dict UFUNC_OPS = {
    np.add: add, np.subtract: sub, np.multiply: mul, np.true_divide: div, np.power: pow,
    np.matmul: matmul, np.maximum: maximum, np.minimum: minimum, np.negative: neg,
    np.exp: exp, np.log: log, np.sqrt: sqrt, np.absolute: abs, np.sin: sin, np.cos: cos,
    np.tanh: tanh,
}

cdef dict UFUNC_COMPARISONS = {
    np.less: 0, np.less_equal: 1, np.equal: 2, np.not_equal: 3, np.greater: 4,
    np.greater_equal: 5,
}


cdef object array_ufunc(object ufunc, str method, tuple inputs, dict kwargs):
    """The lucid op for a NumPy ufunc call on tensors; NotImplemented (NumPy then raises
    TypeError) for ufuncs and methods lucid does not have. With out= NumPy arrays, NumPy
    computes into them from the tensors' values, as the caller asked."""
    cdef object out = kwargs.get("out")
    if out is not None:
        if len(kwargs) == 1 and all(isinstance(o, cnp.ndarray) for o in out):
            arrays = tuple(np.asarray(x) if isinstance(x, Tensor) else x for x in inputs)
            return getattr(ufunc, method)(*arrays, out=out)
        return NotImplemented
    if method != "__call__" or kwargs:
        return NotImplemented
    op = UFUNC_OPS.get(ufunc)
    if op is not None:
        return op(*inputs)
    cmp = UFUNC_COMPARISONS.get(ufunc)
    if cmp is not None and len(inputs) == 2:
        return compare(operand(inputs[0], ufunc.__name__), inputs[1], cmp)
    return NotImplemented


# -- tensors from other arrays ---------------------------------------------------------------

def from_numpy(array):
    """A tensor sharing array's memory and dtype."""
    if not isinstance(array, cnp.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__}")
    if array.dtype not in _SUPPORTED:
        raise TypeError(f"from_numpy: unsupported dtype {array.dtype}; lucid supports float32, "
                        "float64, int32, int64, bool, complex64 and complex128")
    if not array.dtype.isnative:
        raise TypeError("from_numpy: arrays in non-native byte order are not supported")
    if array.dtype.kind == "c":
        note_complex()
    return wrap(array)


def from_dlpack(obj):
    """A tensor sharing the memory of any DLPack exporter on the CPU (NumPy arrays, PyTorch
    CPU tensors, lucid tensors)."""
    if not hasattr(obj, "__dlpack__"):
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ (a NumPy array, a "
                        f"lucid or PyTorch CPU tensor, ...), not {type(obj).__name__}")
    try:
        array = np.from_dlpack(obj)
    except (BufferError, RuntimeError, TypeError, ValueError) as e:
        raise RuntimeError(f"from_dlpack: {type(obj).__name__} could not be imported: "
                           f"{e}") from None
    if array.dtype not in _SUPPORTED:
        raise TypeError(f"from_dlpack: unsupported dtype {array.dtype}; lucid supports float32, "
                        "float64, int32, int64, bool, complex64 and complex128")
    if array.dtype.kind == "c":
        note_complex()
    return wrap(array)


def _from_array(array, bint requires_grad=False):
    """A tensor over an ndarray lucid already owns (constructors use it)."""
    if array.dtype.kind == "c":
        note_complex()
    cdef Tensor t = wrap(array)
    if requires_grad:
        t.requires_grad_(True)
    return t


# -- Tensor methods: the NumPy and DLPack protocols, and formatting (installed on Tensor below) ----------

def _tensor_numpy(Tensor self):
    """The ndarray behind this tensor (shares memory)."""
    if self.requires_grad_c():
        raise RuntimeError("can't call numpy() on a tensor that requires grad; "
                           "use tensor.detach().numpy()")
    return self.data


def _tensor_array(Tensor self, dtype=None, copy=None):
    """The values as an ndarray for NumPy (np.asarray(t)): shared unless dtype or copy asks."""
    if self.requires_grad_c():
        raise RuntimeError("can't convert a tensor that requires grad to an array; "
                           "use tensor.detach().numpy()")
    if copy:
        return np.array(self.data, dtype=dtype, copy=True)
    return self.data if dtype is None else self.data.astype(dtype, copy=False)


def _tensor_dlpack(Tensor self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """Export this tensor's memory through DLPack (zero-copy; CPU)."""
    if self.requires_grad_c():
        raise RuntimeError("can't export a tensor that requires grad through DLPack; use "
                           "tensor.detach()")
    kwargs = {}
    if max_version is not None:
        kwargs["max_version"] = max_version
    if dl_device is not None:
        kwargs["dl_device"] = dl_device
    if copy is not None:
        kwargs["copy"] = copy
    return self.data.__dlpack__(stream=stream, **kwargs)


def _tensor_dlpack_device(Tensor self):
    """(device type, device id): (1, 0), the CPU."""
    return (1, 0)


def _tensor_array_ufunc(Tensor self, ufunc, method, *inputs, **kwargs):
    """NumPy ufuncs on tensors run as lucid ops and give tensors (see array_ufunc)."""
    return array_ufunc(ufunc, method, inputs, kwargs)


def _tensor_format(Tensor self, spec):
    """A 0-d tensor formats like its number (f"{t:.2f}"); others only with an empty spec."""
    if ndim_of(self.data) == 0:
        return format(self.data.item(), spec)
    if not spec:
        return tensor_repr(self)
    raise TypeError(f"unsupported format string {spec!r} for a tensor of shape "
                    f"{self.data.shape}: only 0-d tensors format like numbers; format "
                    "t.item() or the values of t.tolist()")


install_methods(Tensor, {
    "numpy": _tensor_numpy,
    "__array__": _tensor_array,
    "__dlpack__": _tensor_dlpack,
    "__dlpack_device__": _tensor_dlpack_device,
    "__array_ufunc__": _tensor_array_ufunc,
    "__format__": _tensor_format,
})
