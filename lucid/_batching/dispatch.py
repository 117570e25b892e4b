"""The dispatcher every batched op call reaches (Note [Batch dispatch]), and the rule table.

An op's rule is its own (registered by name with `rule`) or its batching family's (the family its
registration states, ops/registry.pxi). An op of the "custom" family without a rule of its own
runs the fallback: the op once per batch element, with a UserWarning naming it once per process
and a count in lucid.autograd.profile (`vmap_fallbacks`). A custom Function's apply comes here
with the Function class as f (lucid/_batching/functions.py); a native op's rule registered with
lucid.func.register_vmap_rule is found by its function (lucid/_batching/native.py).
"""
import warnings

from .. import _core
from .batched import BatchedTensor
from .call import Call, op_name
from .functions import function_call
from .physical import aligned, levels_of, sizes_of, wrap
from .trees import rebuild

_BY_NAME = {}                 # op name -> rule(call)
_FAMILIES = {}                # batching family -> rule(call)
_RULES = {}                   # op function -> rule(call), filled on first use
fallback_counts = {}          # op name -> how many fallback calls ran (profile reads the total)
_warned = set()


def rule(*names):
    """Decorator: the batching rule of the ops named (public names, 'Tensor.__getitem__', ...)."""
    def register(fn):
        for n in names:
            _BY_NAME[n] = fn
        return fn
    return register


def family(name):
    """Decorator: the batching rule of a family (a key of lucid's BATCHING_FAMILIES)."""
    def register(fn):
        _FAMILIES[name] = fn
        return fn
    return register


def register_function_rule(f, fn):
    """fn(call) is the batching rule of op function f (lucid.func.register_vmap_rule)."""
    _RULES[f] = fn


def _has_batched(args, kwargs):
    for a in args:
        if type(a) is BatchedTensor:
            return True
        if type(a) in (tuple, list):
            for b in a:
                if type(b) is BatchedTensor:
                    return True
    if kwargs:
        for a in kwargs.values():
            if type(a) is BatchedTensor:
                return True
    return False


def _rule_of(f):
    known = _RULES.get(f)
    if known is not None:
        return known
    name = op_name(f)
    found = _BY_NAME.get(name)
    if found is None:
        batching = _FAMILY_OF.get(f)
        found = _FAMILIES.get(batching, fallback) if batching is not None else fallback
    _RULES[f] = found
    return found


_FAMILY_OF = {}


def _load_families():
    for record in _core.registered_ops():
        _FAMILY_OF[record.function] = record.batching


def dispatch(f, args, kwargs):
    """The batched call f(*args, **kwargs), or NotImplemented when no argument is batched."""
    if not _has_batched(args, kwargs):
        return NotImplemented
    if not _FAMILY_OF:
        _load_families()
    previous = _core._batch_dispatch(False)      # the rule computes on physical tensors
    try:
        if isinstance(f, type):                  # Function.apply (lucid/function/apply.pxi)
            return function_call(f, args)
        return _rule_of(f)(Call(f, args, kwargs))
    finally:
        _core._batch_dispatch(previous)


def call_batched(f, *args, **kwargs):
    """f(*args, **kwargs) through the batching rules (for lucid's own Python code)."""
    out = dispatch(f, args, kwargs)
    if out is NotImplemented:
        return f(*args, **kwargs)
    return out


# -- the fallback: once per batch element -------------------------------------------------------

def _warn_fallback(name):
    if name not in _warned:
        _warned.add(name)
        warnings.warn(f"vmap: lucid.{name} has no batching rule; it runs once per batch element "
                      "(correct, but slower)", UserWarning, stacklevel=4)


def _element(x, levels, index):
    """The logical tensor of batch element index (a tuple, one per level) of x."""
    if type(x) is not BatchedTensor:
        return x
    value = aligned(x, levels)
    for i in index:
        value = value[i] if value.shape[0] != 1 else value[0]
    return value


def fallback(call):
    """The op once per batch element, stacked: for ops without a batching rule."""
    name = call.name
    _warn_fallback(name)
    fallback_counts[name] = fallback_counts.get(name, 0) + 1
    values = list(call.args) + list(call.kwargs.values())
    flat = [v for a in values for v in (a if type(a) in (tuple, list) else (a,))]
    levels = levels_of(flat)
    sizes = sizes_of(levels, flat)
    shape = tuple(sizes[level] for level in levels)
    total = 1
    for s in shape:
        total *= s
    results = []
    for flat_index in range(total):
        index, rest = [], flat_index
        for s in reversed(shape):
            index.append(rest % s)
            rest //= s
        index = tuple(reversed(index))

        def element(a):
            if type(a) in (tuple, list):
                return type(a)(_element(b, levels, index) for b in a)
            return _element(a, levels, index)
        args = [element(a) for a in call.args]
        kwargs = {k: element(v) for k, v in call.kwargs.items()}
        results.append(Call(call.f, args, kwargs).run())
    if not results:
        raise RuntimeError(f"vmap: lucid.{name} has no batching rule, and the batch is empty")
    return wrap(_stacked(results, shape, name), levels)


def _stacked(results, shape, name):
    first = results[0]
    if isinstance(first, _core.Tensor):
        out = _core.stack(results, 0)
        return _core.checked_reshape(out, shape + tuple(first.shape))
    if isinstance(first, (tuple, list)):
        parts = [_stacked([r[i] for r in results], shape, name) for i in range(len(first))]
        return rebuild(type(first), parts)
    raise RuntimeError(f"vmap: lucid.{name} returned a {type(first).__name__}, which cannot be "
                       "batched")
