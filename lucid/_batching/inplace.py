"""In-place ops on batched tensors: each writes into its physical value, element by element.

The result is computed out of place by the op's batching rule and copied into the target's
physical value; a value batched at a level the target is not batched at would need a target per
batch element: RuntimeError, as in PyTorch.
"""
from .. import _core
from .batched import BatchedTensor
from .dispatch import dispatch
from .physical import aligned, is_batched, levels_of


def check_batched_target(target, values, op):
    """RuntimeError unless target is batched at every level of the batched values."""
    own = target.levels if is_batched(target) else ()
    extra = [level for level in levels_of(list(values)) if level not in own]
    if extra:
        raise RuntimeError(
            f"vmap: {op} is an in-place op whose value is batched at a level its target is not "
            "batched at (a tensor from outside vmap, or one with in_dims=None): there is one "
            "target for all batch elements. Make the target batched first (x = x.expand(...) or "
            "clone a batched value) or use the out-of-place op")


def write(target, result, op):
    """Copy the batched or plain result into the batched target's physical value; target."""
    check_batched_target(target, [result], op)
    if is_batched(result):
        result = aligned(result, target.levels, rank=target.ndim)
    target.value.copy_(result)
    return target


def values_form(function, name):
    """t.name_(...) = write(t, lucid.name(t, ...)) for a batched t."""
    def method(self, *args, **kwargs):
        check_batched_target(self, list(args) + list(kwargs.values()), name + "_")
        return write(self, dispatch(function, (self,) + args, kwargs), name + "_")
    method.__name__ = name + "_"
    return method


def view_form(function, name):
    """t.name_(...): t becomes the view lucid.name(t, ...)."""
    def method(self, *args, **kwargs):
        out = dispatch(function, (self,) + args, kwargs)
        self.value, self.levels = out.value, out.levels
        return self
    method.__name__ = name + "_"
    return method


def add_(self, other, *, alpha=1):
    return write(self, dispatch(_core.add_alpha, (self, other), {"alpha": alpha}), "add_")


def sub_(self, other, *, alpha=1):
    return write(self, dispatch(_core.sub_alpha, (self, other), {"alpha": alpha}), "sub_")


def mul_(self, other):
    return write(self, dispatch(_core.mul, (self, other), None), "mul_")


def div_(self, other):
    return write(self, dispatch(_core.div, (self, other), None), "div_")


def copy_(self, src):
    return write(self, src, "copy_")


def fill_(self, value):
    if isinstance(value, (BatchedTensor, _core.Tensor)):
        return write(self, value, "fill_")
    self.value.fill_(value)
    return self


def zero_(self):
    self.value.zero_()
    return self


OWN = {"add_": add_, "sub_": sub_, "mul_": mul_, "div_": div_, "copy_": copy_,
       "fill_": fill_, "zero_": zero_}
