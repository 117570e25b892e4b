"""lucid.autograd.Function: differentiable operations written in Python.

Subclass Function and write two static methods::

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad_y):
            (y,) = ctx.saved_tensors
            return grad_y * y

    y = Exp.apply(x)

`forward` runs with grad mode off and may take and return non-tensors; `backward` gets one
gradient per output and returns one per input (None where there is none). The per-call work is
compiled (lucid._core.function_apply); the graph node of a call is an instance of
`<ClassName>Backward`, a subclass of PythonBackwardNode made once per Function subclass.
"""
import functools
import inspect
from typing import TYPE_CHECKING, Any

from .. import _core
from .._grad_mode import no_grad
from .._core import FunctionCtx, PythonBackwardNode

__all__ = ["Function", "FunctionCtx", "PythonBackwardNode", "once_differentiable"]

# The class attributes apply's cache is made from (Note [Late methods]).
_APPLY_METHODS = frozenset({"forward", "backward", "vjp", "jvp", "setup_context"})


class FunctionMeta(type):
    """The type of Function classes: assigning or deleting forward, backward, vjp, jvp or
    setup_context on one after its definition is seen by its next apply (and its subclasses').

    Note [Late methods]: apply reads a per-class cache (the FunctionInfo); rebuilding it here,
    when one of the attributes it is made from changes, keeps every call free of lookups."""

    def __setattr__(cls, name, value):
        super().__setattr__(name, value)
        if name in _APPLY_METHODS:
            cls._lucid_refresh_info()

    def __delattr__(cls, name):
        super().__delattr__(name)
        if name in _APPLY_METHODS:
            cls._lucid_refresh_info()


class Function(metaclass=FunctionMeta):
    """Base class of custom differentiable operations (see the module docstring)."""

    _lucid_info = None
    # Under lucid.func.vmap (lucid/_batching/functions.py): with True, a setup_context-style
    # Function's forward and backward run on the batched tensors (they must use lucid ops)
    generate_vmap_rule = False

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__name__} is not instantiated: call "
                           f"{type(self).__name__}.apply(...)")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._lucid_make_info()

    @classmethod
    def _lucid_make_info(cls):
        """Compute what apply needs: the node class (made once per class), forward, backward
        (or vjp), jvp and setup_context."""
        previous = cls.__dict__.get("_lucid_info")
        node_cls = previous.node_cls if isinstance(previous, _core.FunctionInfo) else \
            _core.make_backward_class(cls)
        forward = _own_method(cls, "forward")
        setup = _own_method(cls, "setup_context")
        cls._lucid_info = _core.FunctionInfo(cls, node_cls, forward, _backward_of(cls),
                                             _own_method(cls, "jvp"), setup)
        own_apply = cls.__dict__.get("apply")
        if own_apply is None or isinstance(own_apply, (_core.FunctionApply, _DefaultsApply)):
            cls.apply = _core.FunctionApply(cls._lucid_info)     # apply with this info at hand
            if setup is not None and _has_defaults(forward):
                cls.apply = _DefaultsApply(cls.apply, forward)
        return cls._lucid_info

    @classmethod
    def _lucid_refresh_info(cls):
        """Rebuild the apply cache of cls and of every subclass (Note [Late methods])."""
        pending = [cls]
        while pending:
            c = pending.pop()
            if isinstance(c.__dict__.get("_lucid_info"), _core.FunctionInfo):
                c._lucid_make_info()
            pending.extend(type.__subclasses__(c))

    @staticmethod
    def forward(ctx, *args):
        """Compute the outputs from args (grad mode is off here)."""
        raise NotImplementedError("a Function must implement forward(ctx, *args)")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Optional: with it, forward(*args) takes no ctx and this fills ctx afterwards from
        the inputs tuple and forward's output (the style torch.func needs)."""
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grad_outputs):
        """Gradients of the inputs from the gradients of the outputs."""
        raise NotImplementedError("a Function must implement backward(ctx, *grad_outputs)")

    @staticmethod
    def jvp(ctx, *tangents):
        """Optional: the forward-mode rule, one tangent per output from one per input (None where
        there is none); forward keeps what it needs with ctx.save_for_forward(*tensors), read here
        as ctx.saved_tensors."""
        raise NotImplementedError

    @staticmethod
    def vmap(info, in_dims, *args):
        """Optional: the batching rule under lucid.func.vmap, once per level: args unwrapped at
        the level (in_dims[i]: the batch dim of args[i], None if not batched there; info:
        batch_size, randomness) -> (outputs, out_dims), the outputs with their batch dims."""
        raise NotImplementedError

    # Function.apply(*args): run forward and record the call for backward (compiled); every
    # subclass gets its own _core.FunctionApply, which skips the per-call class lookups.
    if TYPE_CHECKING:
        # typed as the common case, one Tensor out; several outputs unpack as a Tensor's rows do
        # (`lo, hi = F.apply(x)` is Tensor, Tensor), other results need a cast at the call
        @classmethod
        def apply(cls, *args: Any, **kwargs: Any) -> "_core.Tensor": ...
    else:
        apply = classmethod(_core.function_apply)


def _has_defaults(forward):
    """Has forward parameters with defaults (setup_context must see their values)?"""
    try:
        parameters = inspect.signature(forward).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.default is not p.empty for p in parameters)


class _DefaultsApply:
    """apply of a setup_context-style Function whose forward has defaults: the omitted
    arguments are filled in, so forward, setup_context's inputs and the node see them all (as
    PyTorch binds them)."""

    def __init__(self, apply, forward):
        self.apply = apply
        self.signature = inspect.signature(forward)

    def __call__(self, *args, **kwargs):
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return self.apply(*bound.args, **bound.kwargs)


def _own_method(cls, name):
    """cls's `name`, or None while it is Function's placeholder (or absent)."""
    method = getattr(cls, name, None)
    return None if method is getattr(Function, name, None) else method


def _backward_of(cls):
    """The backward apply runs: backward, or vjp (its other name, as in PyTorch); one that
    raises PyTorch's error when a class implements both."""
    backward, vjp = _own_method(cls, "backward"), _own_method(cls, "vjp")
    if backward is None or vjp is None:
        return backward if vjp is None else vjp
    name = cls.__name__

    def both(ctx, *grad_outputs):
        raise RuntimeError(f"Implementing both 'backward' and 'vjp' for a custom Function is "
                           f"not allowed ({name} has both). You should only implement one of "
                           "them.")
    return both


def once_differentiable(backward):
    """Mark a Function's backward as not differentiable: a second derivative through it raises."""

    @functools.wraps(backward)
    def wrapper(ctx, *grad_outputs):
        with no_grad():
            result = backward(ctx, *grad_outputs)
        if not _core.is_grad_enabled():      # not create_graph: nothing records the backward
            return result
        name = backward.__qualname__.split(".")[0]
        message = (f"trying to differentiate the backward of {name} a second time, but it is "
                   "marked @once_differentiable: its backward is not differentiable")
        single = not isinstance(result, (tuple, list))
        outs = _core.delayed_error(message, (result,) if single else tuple(result),
                                   tuple(grad_outputs))
        return outs[0] if single else outs

    return wrapper

