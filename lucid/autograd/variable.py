"""Variable: PyTorch's deprecated tensor wrapper, kept so that old code runs."""
from .. import _core

__all__ = ["Variable"]


class _VariableMeta(type):
    """isinstance(x, Variable) holds for every Tensor, and Variable(...) makes a Tensor."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _core.Tensor)

    def __subclasscheck__(cls, sub):
        return isinstance(sub, type) and issubclass(sub, _core.Tensor)

    def __call__(cls, data=None, requires_grad=False, volatile=False):
        if data is None:
            from .._creation import tensor
            return tensor([])
        if not isinstance(data, _core.Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out


class Variable(metaclass=_VariableMeta):
    """Deprecated: tensors are Variables. Variable(t, requires_grad=False) is a new tensor
    sharing t's memory (t.detach(), requiring grad if asked); every tensor is an instance."""
