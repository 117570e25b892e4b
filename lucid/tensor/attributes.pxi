# Tensor attributes PyTorch code reads: the memory layout (stride, storage_offset, data_ptr,
# element_size), the dtype's kind, the *_as conversions, and .data (the tensor outside the graph).
# Installed on Tensor as methods and properties; the C layout is unchanged.

cdef intptr_t address_of(object arr):
    """The address of arr's first element."""
    return <intptr_t>cnp.PyArray_DATA(<cnp.ndarray>arr)


cdef object memory_root(object arr):
    """The array owning the memory arr views (the last ndarray down arr's .base chain)."""
    cdef object base = arr.base
    while isinstance(base, cnp.ndarray):
        arr = base
        base = arr.base
    return arr


def _tensor_stride(Tensor self, dim=None):
    """The step in elements between neighbours along each dim (a tuple), or along dim."""
    cdef Py_ssize_t size = self.data.itemsize
    cdef tuple steps = tuple([s // size for s in self.data.strides])
    if dim is None:
        return steps
    if not steps and is_integer(dim):
        raise IndexError(f"stride: Dimension specified as {dim} but tensor has no dimensions")
    return steps[normalize_dim(dim, ndim_of(self.data), "stride")]


cdef Py_ssize_t element_offset(object arr):
    """Where arr's first element sits in the memory it views, counted in elements."""
    return (address_of(arr) - address_of(memory_root(arr))) // arr.itemsize


def _tensor_storage_offset(Tensor self):
    """Where the first element sits in the memory this tensor views, counted in elements."""
    return element_offset(self.data)


def _tensor_data_ptr(Tensor self):
    """The address of the first element, an int (0 for a tensor with no elements)."""
    return address_of(self.data) if self.data.size else 0


def _tensor_element_size(Tensor self):
    """The size of one element in bytes."""
    return self.data.itemsize


def _tensor_is_floating_point(Tensor self):
    """True for a float32 or float64 tensor."""
    return self.data.dtype.kind == "f"


def _tensor_is_complex(Tensor self):
    """True for a complex tensor."""
    return self.data.dtype.kind == "c"


def _tensor_is_conj(Tensor self):
    """False: lucid's conj computes its values (there is no lazy conjugate bit to resolve)."""
    return False


def _tensor_resolve_conj(Tensor self):
    """self: lucid's conj is never lazy, so there is nothing to resolve."""
    return self


def _tensor_type_as(Tensor self, other):
    """self cast to other's dtype (self when it already has it)."""
    return cast(self, descr(tensor_arg(other, "type_as", "other").data))


def _tensor_view_as(Tensor self, other):
    """self viewed with other's shape (lucid.view)."""
    return view(self, tensor_arg(other, "view_as", "other").data.shape)


def _tensor_reshape_as(Tensor self, other):
    """self reshaped to other's shape (lucid.reshape)."""
    return reshape(self, tensor_arg(other, "reshape_as", "other").data.shape)


def _tensor_data_get(Tensor self):
    """A tensor sharing this one's memory, outside the graph (requires_grad False), with a
    version counter of its own: writes through it are not seen by autograd."""
    cdef Tensor t = wrap(self.data)
    if is_inference(self):
        tensor_extra(t).inference = True
    return t


def _tensor_data_set(Tensor self, value):
    """x.data = t: x takes t's memory, shape and dtype; its history, grad and version counter
    stay x's own."""
    if not isinstance(value, Tensor):
        raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
    cdef Tensor t = <Tensor>value
    if self.requires_grad_c() and not is_float_dtype(descr(t.data)) and descr(t.data).kind != b'c':
        raise RuntimeError(f"data set to a tensor that requires gradients must be floating point "
                           f"or complex dtype, not {dtype_name(t.data.dtype)}")
    if descr(t.data) != descr(self.data):
        self._grad_accumulator = None    # as PyTorch: a new dtype gets a new accumulator
    self.data = t.data
    self._view_base = None               # the memory is no longer the old base's
    self._view_version = 0


install_methods(Tensor, {
    "stride": _tensor_stride,
    "storage_offset": _tensor_storage_offset,
    "data_ptr": _tensor_data_ptr,
    "element_size": _tensor_element_size,
    "is_floating_point": _tensor_is_floating_point,
    "is_complex": _tensor_is_complex,
    "is_conj": _tensor_is_conj,
    "resolve_conj": _tensor_resolve_conj,
    "type_as": _tensor_type_as,
    "view_as": _tensor_view_as,
    "reshape_as": _tensor_reshape_as,
})
set_type_attribute(Tensor, "real", property(real_part, None, None, "The real part (lucid.real): a "
                                            "view; a real tensor itself."))
set_type_attribute(Tensor, "imag", property(imag_part, None, None, "The imaginary part (lucid.imag): "
                                            "a view; RuntimeError for a real tensor."))
set_type_attribute(Tensor, "data", property(_tensor_data_get, _tensor_data_set, None,
                                            "This tensor's values as a tensor outside the graph "
                                            "(sharing memory); assigning rebinds the memory."))
