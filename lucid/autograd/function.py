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

from .. import _core
from .._grad_mode import no_grad
from .._core import FunctionCtx, PythonBackwardNode

__all__ = ["Function", "FunctionCtx", "PythonBackwardNode", "once_differentiable"]


class Function:
    """Base class of custom differentiable operations (see the module docstring)."""

    _lucid_info = None

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__name__} is not instantiated: call "
                           f"{type(self).__name__}.apply(...)")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._lucid_make_info()

    @classmethod
    def _lucid_make_info(cls):
        """Compute once what apply needs: the node class, forward and backward."""
        forward = None if cls.forward is Function.forward else cls.forward
        backward = None if cls.backward is Function.backward else cls.backward
        jvp = getattr(cls, "jvp", None)
        setup = None if cls.setup_context is Function.setup_context else cls.setup_context
        cls._lucid_info = _core.FunctionInfo(cls, _core.make_backward_class(cls), forward,
                                             backward, jvp, setup)
        own_apply = cls.__dict__.get("apply")
        if own_apply is None or isinstance(own_apply, _core.FunctionApply):
            cls.apply = _core.FunctionApply(cls._lucid_info)     # apply with this info at hand
        return cls._lucid_info

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

    # Optional: @staticmethod jvp(ctx, *tangents) -> one tangent per output (forward mode);
    # ctx.save_for_forward(*tensors) in forward keeps what it needs (ctx.saved_tensors in jvp).

    # Function.apply(*args): run forward and record the call for backward (compiled); every
    # subclass gets its own _core.FunctionApply, which skips the per-call class lookups.
    apply = classmethod(_core.function_apply)


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

