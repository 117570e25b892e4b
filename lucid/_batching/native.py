"""lucid.func.register_vmap_rule: the batching rule of an op lucid does not know (a native op).

rule(info, in_dims, *args, **kwargs) -> (outputs, out_dims) runs once per vmap level, as a custom
Function's vmap staticmethod (lucid/_batching/rules.py). The op is found by its function: the
dispatcher (a native op that calls lucid._core._batch_dispatch_call(op, ...) first, as lucid's own
ops do) and the callable register_vmap_rule returns, which sends a call with a batched argument
to the rule and any other call to the op itself.
"""
import functools

from .. import _core
from .dispatch import dispatch, register_function_rule
from .rules import run_rule


def register_vmap_rule(op, rule):
    """Make rule(info, in_dims, *args, **kwargs) -> (outputs, out_dims) op's batching rule under
    lucid.func.vmap; returns op as vmap-aware callable (export it under op's name)."""
    if not callable(op):
        raise TypeError(f"register_vmap_rule: op must be callable, got {type(op).__name__}")
    if not callable(rule):
        raise TypeError(f"register_vmap_rule: rule must be callable, got {type(rule).__name__}")
    if isinstance(op, type):
        raise TypeError(f"register_vmap_rule: {op.__name__} is a class; a custom Function "
                        "gives its rule as its vmap staticmethod")
    name = getattr(op, "__qualname__", None) or getattr(op, "__name__", None) or repr(op)
    label = f"the vmap rule of {name} (register_vmap_rule)"

    def batched(call):
        return run_rule(rule, label, call.args, call.kwargs)

    @functools.wraps(op)
    def op_under_vmap(*args, **kwargs):
        if _core._batch_dispatch_on():
            out = dispatch(op, args, kwargs)
            if out is not NotImplemented:
                return out
        return op(*args, **kwargs)

    register_function_rule(op, batched)
    register_function_rule(op_under_vmap, batched)
    return op_under_vmap
