"""Function.apply with a batched argument (Note [Batch dispatch]): a custom Function under vmap.

As in torch.func, a setup_context-style Function says how it batches: a `vmap` staticmethod
(lucid/_batching/rules.py: called once per level), or `generate_vmap_rule = True` (its forward,
written with lucid ops, runs on the batched tensors). When the call is recorded for backward (grad
mode on and an input requires grad), one node of the Function's vmapped form
(lucid/_batching/function_node.py) joins the physical graph: its backward runs the Function's
backward on the batched gradients, so a gradient through the Function is its backward's, also
inside vmap(grad(f)) and for a rule computed without lucid ops. An input with a forward-mode
tangent records it too: the form's jvp runs the Function's jvp on the batched tangents (vmap of
jvp, jacfwd under vmap), as torch.func does.
"""
from .. import _core
from . import levels as _levels
from .batched import BatchedTensor
from .rules import run_rule

_DOCS = "For more details, please see lucid's docs/custom_functions.md (Functions under vmap)."


def _own(cls, name):
    from ..autograd.function import _own_method
    return _own_method(cls, name)


def check_vmappable(cls):
    """RuntimeError (PyTorch's words) unless cls says how it batches, exactly one way."""
    name = cls.__name__
    if _own(cls, "setup_context") is None:
        raise RuntimeError("In order to use an autograd.Function with functorch transforms "
                           "(vmap, grad, jvp, jacrev, ...), it must override the setup_context "
                           f"staticmethod ({name} has forward(ctx, ...) without it). {_DOCS}")
    has_rule = _own(cls, "vmap") is not None
    if getattr(cls, "generate_vmap_rule", False):
        if has_rule:
            raise RuntimeError(f"You tried to vmap over {name}, but it has both "
                               "generate_vmap_rule=True and an overridden vmap staticmethod. "
                               "Please set generate_vmap_rule=False or delete the overridden "
                               f"vmap staticmethod to avoid ambiguity. {_DOCS}")
        return
    if not has_rule:
        raise RuntimeError(f"You tried to vmap over {name}, but it does not have vmap support. "
                           "Please override and implement the vmap staticmethod or set "
                           f"generate_vmap_rule=True. {_DOCS}")


def _tensors(args):
    return [a for a in args if type(a) is BatchedTensor or isinstance(a, _core.Tensor)]


def _recorded(args):
    """Will this call be recorded for backward (grad mode on, an input requires grad)?"""
    if not _core.is_grad_enabled():
        return False
    return any(a.requires_grad for a in _tensors(args))


def forward_value(cls, args):
    """cls's outputs for batched args, nothing recorded: its rule at the innermost level, or
    (generate_vmap_rule) its forward on the batched tensors."""
    if getattr(cls, "generate_vmap_rule", False):
        from .function_node import BatchedCtx
        from .._grad_mode import no_grad
        with _levels.dispatching(), no_grad():
            out = cls.forward(*args)
            cls.setup_context(BatchedCtx(None, (False,) * len(args)), args, out)
        return out
    return run_rule(cls.vmap, f"the vmap staticmethod of {cls.__name__}", args)


def _has_tangent(args):
    """Does a tensor argument (its physical tensor) carry a forward-mode tangent?"""
    from ..autograd import forward_ad
    for a in _tensors(args):
        value = a.value if type(a) is BatchedTensor else a
        if forward_ad.unpack_dual(value).tangent is not None:
            return True
    return False


def function_call(cls, args):
    """cls.apply(*args) with a batched argument: recorded (for backward, or for forward mode:
    its jvp on the batched tangents) through its vmapped form, else its outputs alone."""
    check_vmappable(cls)
    if _recorded(args) or _has_tangent(args):
        from .function_node import recorded_call
        return recorded_call(cls, args)
    return forward_value(cls, args)
