# How Tensor gets methods that are functions. t.exp() is lucid.exp(t): the function is the one
# definition (its signature, checks and docstring) and the method is that function put in Tensor's
# dict at import, wrapped in a method descriptor (tensor/function_method.h) that passes the call on
# unchanged, so it costs what the function costs. The op families' functions are installed by
# their registration (ops/registry.pxi, Note [Op registry]); the protocol and conversion methods (t.numpy(), t.__dlpack__(),
# t.to(...), copy/pickle) by the files that define them. The class body (tensor/tensor.pxi) keeps
# the fields, properties, operator slots and the methods that reach its C state.

cdef extern from "tensor/function_method.h":
    object lucid_function_method(object func)

cdef extern from "Python.h":
    ctypedef struct PyTypeObject_dict "PyTypeObject":
        PyObject* tp_dict
    void PyType_Modified(void* type)


cdef void set_type_attribute(type cls, str name, object value) except *:
    """cls.name = value on an extension type (whose attributes Python code cannot set)."""
    (<dict><object>(<PyTypeObject_dict*><PyObject*>cls).tp_dict)[name] = value
    PyType_Modified(<void*><PyObject*>cls)


cdef void install_methods(type cls, dict methods) except *:
    """cls.name(self, ...) = fn(self, ...) for each name: fn of methods."""
    for name, fn in methods.items():
        set_type_attribute(cls, name, lucid_function_method(fn))



# -- methods with PyTorch's keyword names (t.pow(exponent=2)), not the function's; a batched
#    argument (self is not: BatchedTensor has its own methods) goes to its batching rule, a
#    complex one is refused (Note [Complex guard]) ---------------------------------------------

def _tensor_maximum(Tensor self, other):
    """max(self, other) elementwise, broadcasting (lucid.maximum)."""
    if batched_operand(other):
        return _batch_dispatch_call(maximum, self, other)
    refuse_complex("maximum", self, other)
    return maximum(self, other)


def _tensor_minimum(Tensor self, other):
    """min(self, other) elementwise, broadcasting (lucid.minimum)."""
    if batched_operand(other):
        return _batch_dispatch_call(minimum, self, other)
    refuse_complex("minimum", self, other)
    return minimum(self, other)


def _tensor_pow(Tensor self, exponent):
    """self ** exponent, broadcasting (lucid.pow)."""
    if batched_operand(exponent):
        return _batch_dispatch_call(pow, self, exponent)
    return pow(self, exponent)


def _tensor_where(Tensor self, condition, other):
    """self where condition holds, else other (lucid.where(condition, self, other))."""
    if batched_operand(condition) or batched_operand(other):
        return _batch_dispatch_call(where, condition, self, other)
    return where(condition, self, other)


install_methods(Tensor, {"maximum": _tensor_maximum, "minimum": _tensor_minimum,
                         "pow": _tensor_pow, "where": _tensor_where})
