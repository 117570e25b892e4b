"""The recorded form of a custom Function under vmap: one node on the physical graph.

cls.apply(*args) at levels L, recorded: a Function made once per cls (its "vmapped form") is
applied to the physical tensors of args. Its forward enters fresh levels like L, rebuilds the
batched arguments there, computes cls's outputs (forward_value) and runs cls.setup_context on the
batched inputs and outputs with a BatchedCtx; it returns the outputs physical, batched at every
level of L. Its backward enters fresh levels again and runs cls.backward on the batched gradients
and saved tensors (the gradient of an input not batched at a level is summed over that level's
batch dim): d(input) = backward(ctx, d(outputs)), per batch element.
"""
import contextlib
import weakref

from .. import _core
from . import levels as _levels
from .batched import BatchedTensor
from .physical import aligned

_FORMS = weakref.WeakKeyDictionary()     # Function class -> its vmapped form


class BatchedCtx:
    """The ctx cls.setup_context and cls.backward see under vmap: it saves batched tensors (kept
    physical by the vmapped form's ctx) and passes the other calls on."""

    def __init__(self, ctx, needs_input_grad):
        self._lucid = {"ctx": ctx, "needs": tuple(needs_input_grad), "saved": (),
                       "saved_fw": (), "in_jvp": False, "levels": None, "non_diff": ()}

    @staticmethod
    def _checked(tensors, what):
        for i, t in enumerate(tensors):
            if t is not None and not (type(t) is BatchedTensor or isinstance(t, _core.Tensor)):
                raise TypeError(f"{what} takes Tensors or None; argument {i} is "
                                f"{type(t).__name__} (store other values as ctx attributes)")
        return tensors

    def save_for_backward(self, *tensors):
        self._lucid["saved"] = self._checked(tensors, "save_for_backward")

    def save_for_forward(self, *tensors):
        self._lucid["saved_fw"] = self._checked(tensors, "save_for_forward")

    @property
    def saved_tensors(self):
        """What save_for_backward got (inside jvp: save_for_forward), batched as it was."""
        state = self._lucid
        key = "saved_fw" if state["in_jvp"] else "saved"
        if state["levels"] is None:        # in setup_context: what it saved
            return tuple(state[key])
        physical = state["ctx"].saved_tensors
        out = []
        for value, where in zip(physical, state[key]):
            if where is None or value is None:
                out.append(value)
            else:
                out.append(BatchedTensor(value, tuple(state["levels"][p] for p in where)))
        return tuple(out)

    @property
    def needs_input_grad(self):
        return self._lucid["needs"]

    def mark_non_differentiable(self, *outputs):
        self._lucid["non_diff"] = outputs

    def set_materialize_grads(self, value):
        ctx = self._lucid["ctx"]
        if ctx is not None:
            ctx.set_materialize_grads(value)

    def mark_dirty(self, *tensors):
        raise RuntimeError("vmap: a custom Function that changes its inputs in place "
                           "(mark_dirty) is not supported under vmap")


def _form(cls):
    """cls's vmapped form, made once: a Function of (spec, *physical arguments)."""
    form = _FORMS.get(cls)
    if form is None:
        from ..autograd.function import Function
        form = type(cls.__name__, (Function,), {
            "__module__": cls.__module__, "__qualname__": cls.__qualname__,
            "__doc__": f"{cls.__qualname__} under vmap (lucid/_batching/function_node.py).",
            "forward": staticmethod(_forward), "backward": staticmethod(_backward),
            "jvp": staticmethod(_jvp)})
        _FORMS[cls] = form
    return form


class _Spec:
    """What the vmapped form needs besides the physical tensors: the Function, the levels (sizes,
    randomness) and each argument's levels (as positions in them; None: not a tensor)."""
    __slots__ = ("cls", "sizes", "randomness", "arg_levels", "n_levels")

    def __init__(self, cls, levels, args):
        objects = [_level(i) for i in levels]
        self.cls = cls
        self.n_levels = len(levels)
        self.sizes = tuple(level.size for level in objects)
        self.randomness = tuple(level.randomness for level in objects)
        self.arg_levels = tuple(
            tuple(levels.index(l) for l in a.levels) if type(a) is BatchedTensor else
            (() if isinstance(a, _core.Tensor) else None) for a in args)


def _level(level_id):
    from .rules import level_object
    return level_object(level_id)


@contextlib.contextmanager
def _fresh(spec):
    """New levels like spec's (sizes, randomness) for the block; yields their ids."""
    with contextlib.ExitStack() as stack:
        ids = [stack.enter_context(_levels.entered(size, randomness)).id
               for size, randomness in zip(spec.sizes, spec.randomness)]
        yield tuple(ids)


def _physical(x, ids, sizes):
    """x (batched at some of ids, or plain) as a plain tensor batched at all of them."""
    with _levels.physical():
        return aligned(x, ids, sizes)


def _where(t, ids):
    """Positions in ids of the levels batched tensor t has (it must have only those)."""
    if type(t) is not BatchedTensor:
        return None
    try:
        return tuple(ids.index(level) for level in t.levels)
    except ValueError:
        raise RuntimeError("vmap: setup_context saved a tensor batched at a vmap level the "
                           "Function's inputs are not batched at") from None


def _forward(ctx, spec, *physical):
    """The vmapped form's forward: cls's outputs, physical, and its ctx filled."""
    from .functions import forward_value
    cls = spec.cls
    with _fresh(spec) as ids:
        sizes = dict(zip(ids, spec.sizes))
        args = tuple(p if where is None else (BatchedTensor(p, tuple(ids[i] for i in where))
                                               if where else p)
                     for p, where in zip(physical, spec.arg_levels))
        outputs = forward_value(cls, args)
        batched_ctx = BatchedCtx(ctx, ctx.needs_input_grad[1:])
        batched_ctx._lucid["ctx"] = ctx
        cls.setup_context(batched_ctx, args, outputs)
        state = batched_ctx._lucid
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        result = tuple(_physical(o, ids, sizes)
                       if type(o) is BatchedTensor or isinstance(o, _core.Tensor) else o
                       for o in outs)
        saved, saved_fw = state["saved"], state["saved_fw"]
        ctx.save_for_backward(*_values(saved))
        ctx.save_for_forward(*_values(saved_fw))
        state["saved"] = tuple(None if t is None else _where(t, ids) for t in saved)
        state["saved_fw"] = tuple(None if t is None else _where(t, ids) for t in saved_fw)
        non_diff = [r for o, r in zip(outs, result) if any(o is n for n in state["non_diff"])]
        if non_diff:
            ctx.mark_non_differentiable(*non_diff)
        state["ctx"], state["non_diff"] = None, ()
    ctx._lucid_batched = (spec, batched_ctx)
    return result[0] if single else result


def _values(tensors):
    """The physical tensors of saved batched tensors (plain ones and None as they are)."""
    return [None if t is None else (t.value if type(t) is BatchedTensor else t) for t in tensors]


def _jvp(ctx, spec_tangent, *tangents):
    """The vmapped form's jvp: cls.jvp on the batched tangents (each laid out as its input),
    its output tangents physical like the outputs (batched at every level)."""
    from .functions import _own
    spec, batched_ctx = ctx._lucid_batched
    if _own(spec.cls, "jvp") is None:
        raise RuntimeError(f"Function {spec.cls.__name__} got an input with a forward-mode "
                           "tangent (a dual tensor) but does not implement jvp(ctx, *tangents): "
                           "add a @staticmethod jvp to use it under forward_ad.dual_level()")
    state = batched_ctx._lucid
    with _fresh(spec) as ids:
        sizes = dict(zip(ids, spec.sizes))
        state["ctx"], state["levels"], state["in_jvp"] = ctx, ids, True
        try:
            logical = [None if t is None or where is None else
                       (BatchedTensor(t, tuple(ids[i] for i in where)) if where else t)
                       for t, where in zip(tangents, spec.arg_levels)]
            with _levels.dispatching():
                got = spec.cls.jvp(batched_ctx, *logical)
        finally:
            state["ctx"], state["levels"], state["in_jvp"] = None, None, False
        single = not isinstance(got, (tuple, list))
        out = tuple(None if g is None else _physical(g, ids, sizes)
                    for g in ((got,) if single else got))
    return out[0] if single else out


def _backward(ctx, *grads):
    """The vmapped form's backward: cls.backward on the batched gradients, per batch element."""
    spec, batched_ctx = ctx._lucid_batched
    state = batched_ctx._lucid
    with _fresh(spec) as ids:
        sizes = dict(zip(ids, spec.sizes))
        state["ctx"], state["levels"] = ctx, ids
        try:
            logical = [None if g is None else BatchedTensor(g, ids) for g in grads]
            with _levels.dispatching():
                got = spec.cls.backward(batched_ctx, *logical)
        finally:
            state["ctx"], state["levels"] = None, None
        got = got if isinstance(got, (tuple, list)) else (got,)
        out = [None]
        for i, where in enumerate(spec.arg_levels):
            g = got[i] if i < len(got) else None
            out.append(None if g is None or where is None else
                       _input_gradient(g, ids, sizes, where))
        out.extend(got[len(spec.arg_levels):])     # extra entries: apply reports them
    return tuple(out)


def _input_gradient(g, ids, sizes, where):
    """Backward's batched gradient g of an input batched at levels `where` (positions in ids):
    physical like the input, summed over the batch dims of the levels the input lacks."""
    full = _physical(g, ids, sizes)
    lacking = tuple(i for i in range(len(ids)) if i not in where)
    if lacking:
        with _levels.physical():
            full = _core.sum(full, lacking)
    return full


def recorded_call(cls, args):
    """cls.apply(*args) recorded: its vmapped form applied to the physical tensors."""
    from .physical import levels_of
    for a in args:
        if type(a) in (tuple, list) and levels_of(a):
            raise RuntimeError(f"vmap: {cls.__name__}.apply got a batched tensor inside a "
                               f"{type(a).__name__} argument while recording for backward; pass "
                               "each tensor as an argument of its own")
    levels = levels_of(args)
    spec = _Spec(cls, levels, args)
    physical = [a.value if type(a) is BatchedTensor else a for a in args]
    out = _form(cls).apply(spec, *physical)
    if isinstance(out, tuple):
        return tuple(BatchedTensor(o, levels) if isinstance(o, _core.Tensor) else o for o in out)
    return BatchedTensor(out, levels) if isinstance(out, _core.Tensor) else out
