"""BatchedTensor's methods and operators: each is lucid's function through the batching rules."""
from .. import _core
from . import inplace
from .batched import BatchedTensor
from .dispatch import dispatch
from .physical import wrap
from .shapes import repeat as _repeat


def _method(function):
    def method(self, *args, **kwargs):
        return dispatch(function, (self,) + args, kwargs)
    method.__name__ = getattr(function, "__name__", "method")
    method.__doc__ = getattr(function, "__doc__", None)
    return method


def _shape_method(function):
    """t.reshape(2, 3) and t.reshape((2, 3)) alike."""
    def method(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return dispatch(function, (self, shape), None)
    method.__name__ = function.__name__
    return method


def _binary(function, reflected=False):
    if reflected:
        def op(self, other):
            return dispatch(function, (other, self), None)
    else:
        def op(self, other):
            return dispatch(function, (self, other), None)
    return op


def _compare(function):
    def op(self, other):
        return dispatch(function, (self, other), None)
    return op


def _install():
    from .. import _ops
    cls = BatchedTensor
    for record in _core.registered_ops():
        short = record.name.rpartition(".")[2]
        if record.method == "function" and not hasattr(cls, short):
            setattr(cls, short, _method(record.function))
        if record.inplace == "values":
            setattr(cls, short + "_", inplace.values_form(record.function, short))
        elif record.inplace == "view":
            setattr(cls, short + "_", inplace.view_form(record.function, short))
    for name, fn in inplace.OWN.items():
        setattr(cls, name, fn)
    for name in ("reshape", "view", "expand", "permute"):
        setattr(cls, name, _shape_method(getattr(_core, {"reshape": "checked_reshape",
                                                         "expand": "checked_expand"}.get(name,
                                                                                         name))))
    cls.tile = _shape_method(_ops.tile)
    cls.flip = _shape_method(_ops.flip)
    cls.repeat = lambda self, *sizes: _repeat(
        self, tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list))
        else sizes)
    cls.split = _method(_ops.split)
    cls.pow = lambda self, exponent: dispatch(_core.pow, (self, exponent), None)
    cls.maximum = lambda self, other: dispatch(_core.maximum, (self, other), None)
    cls.minimum = lambda self, other: dispatch(_core.minimum, (self, other), None)
    cls.where = lambda self, condition, other: dispatch(_core.where, (condition, self, other),
                                                        None)
    cls.polygamma = lambda self, n: dispatch(_ops.polygamma, (n, self), None)
    cls.is_complex = lambda self: self.value.is_complex()
    cls.real = property(lambda self: dispatch(_core.real_part, (self,), None))
    cls.imag = property(lambda self: dispatch(_core.imag_part, (self,), None))
    cls.is_conj = lambda self: False
    cls.resolve_conj = lambda self: self
    cls.is_floating_point = lambda self: self.value.is_floating_point()
    cls.expand_as = lambda self, other: self.expand(*other.shape)
    cls.reshape_as = lambda self, other: self.reshape(*other.shape)
    cls.view_as = lambda self, other: self.view(*other.shape)
    cls.type_as = lambda self, other: wrap(self.value.to(other.dtype), self.levels)
    cls.inverse = lambda self: dispatch(_linalg_inv(), (self,), None)
    for name in ("contiguous", "detach", "cpu", "float", "double", "half", "int", "long",
                 "bool"):
        setattr(cls, name, _value_method(name))
    cls.to = lambda self, *a, **k: wrap(self.value.to(*a, **k), self.levels)
    cls.type = lambda self, *a, **k: (self.value.type() if not a and not k else
                                      wrap(self.value.type(*a, **k), self.levels))
    cls.requires_grad_ = _requires_grad_
    cls.detach_ = lambda self: (setattr(self, "value", self.value.detach()), self)[1]
    cls.retain_grad = lambda self: None
    cls.stride = lambda self, dim=None: (tuple(self.value.stride())[len(self.levels):]
                                         if dim is None else
                                         tuple(self.value.stride())[len(self.levels):][dim])
    # operators
    for name, fn in (("add", _core.add_alpha), ("sub", _core.sub_alpha), ("mul", _core.mul),
                     ("truediv", _core.div), ("pow", _core.pow), ("matmul", _core.matmul)):
        setattr(cls, f"__{name}__", _binary(fn))
        setattr(cls, f"__r{name}__", _binary(fn, reflected=True))
    cls.__neg__ = lambda self: dispatch(_core.neg, (self,), None)
    cls.__pos__ = lambda self: self
    cls.__abs__ = lambda self: dispatch(_core.abs, (self,), None)
    for name, fn in (("eq", _ops.eq), ("ne", _ops.ne), ("lt", _ops.lt), ("le", _ops.le),
                     ("gt", _ops.gt), ("ge", _ops.ge)):
        setattr(cls, f"__{name}__", _compare(fn))
    cls.__getitem__ = lambda self, key: dispatch(_core.Tensor.__getitem__, (self, key), None)
    cls.__setitem__ = lambda self, key, v: dispatch(_core.Tensor.__setitem__, (self, key, v),
                                                    None)
    cls.__iadd__ = lambda self, other: inplace.add_(self, other)
    cls.__isub__ = lambda self, other: inplace.sub_(self, other)
    cls.__imul__ = lambda self, other: inplace.mul_(self, other)
    cls.__itruediv__ = lambda self, other: inplace.div_(self, other)
    cls.__hash__ = lambda self: id(self)


def _value_method(name):
    def method(self, *args, **kwargs):
        return wrap(getattr(self.value, name)(*args, **kwargs), self.levels)
    method.__name__ = name
    return method


def _requires_grad_(self, requires_grad=True):
    self.value.requires_grad_(requires_grad)
    return self


def _linalg_inv():
    from .. import _linalg
    return _linalg.inv


_install()
