"""Activation checkpointing: keep no activation of a segment after forward, recompute in backward.

    from lucid.utils.checkpoint import checkpoint
    y = checkpoint(block, x)          # block's intermediate tensors are not kept
    y.sum().backward()                # block runs again, once, when backward first needs them

Note [Checkpointing]: the default (use_reentrant=False) runs `fn` normally, so its graph is
recorded, but under saved-tensor hooks whose pack keeps only a number: no saved tensor of the
segment stays alive. The first unpack in a backward re-runs `fn` (with lucid's RNG state of the
forward) under hooks that collect the saved tensors, in the same order, and stops the re-run as
soon as the one being asked for and all before it are rebuilt. The rebuilt values are handed out
once each and dropped; a backward that stops early or never comes leaves nothing behind: every
piece of state hangs off the saved tensors of the graph, so it dies with the graph.
"""
import functools

from .. import _core
from .._creation import get_rng_state, set_rng_state
from .._grad_mode import enable_grad, no_grad
from ..autograd.function import Function
from ..autograd.graph import saved_tensors_hooks

__all__ = ["checkpoint", "checkpoint_sequential"]


class _StopRecomputation(Exception):
    """Raised inside a re-run once every saved tensor needed so far is rebuilt."""


class _Segment:
    """What one checkpointed call needs to re-run: fn, its arguments and the RNG state."""

    def __init__(self, fn, args, kwargs, rng_state):
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.rng_state = rng_state
        self.count = 0              # tensors saved by the forward run
        self.rebuilt = {}           # number -> tensor, from the current re-run

    def pack(self, tensor):
        number = self.count
        self.count += 1
        return _Handle(self, number)

    def unpack(self, handle):
        number = handle.number
        if number not in self.rebuilt:
            self.recompute(number)
        return self.rebuilt.pop(number)

    def recompute(self, wanted):
        """Re-run fn and keep every tensor it saves (the backward that asked for `wanted` will
        ask for the others too), stopping as soon as the last one is rebuilt."""
        counter = iter(range(self.count))
        rebuilt = {}
        last = self.count - 1

        def keep(tensor):
            number = next(counter, None)
            if number is None:
                raise RuntimeError("checkpoint: the re-run of the checkpointed function saved "
                                   "more tensors than the forward run did; the function must "
                                   "do the same operations every time it is called")
            rebuilt[number] = tensor
            if number == last:
                raise _StopRecomputation()
            return tensor

        saved_rng = get_rng_state()
        set_rng_state(self.rng_state)
        try:
            with enable_grad(), saved_tensors_hooks(keep, _identity):
                self.fn(*self.args, **self.kwargs)
        except _StopRecomputation:
            pass
        finally:
            set_rng_state(saved_rng)
        if wanted not in rebuilt:
            raise RuntimeError("checkpoint: the re-run of the checkpointed function saved fewer "
                               "tensors than the forward run did; the function must do the same "
                               "operations every time it is called")
        self.rebuilt = rebuilt


class _Handle:
    """The packed form of a saved tensor: its number in the segment (no tensor)."""
    __slots__ = ("segment", "number")

    def __init__(self, segment, number):
        self.segment = segment
        self.number = number


def _identity(x):
    return x


def _unpack(handle):
    return handle.segment.unpack(handle)


def checkpoint(function, *args, use_reentrant=False, preserve_rng_state=True, **kwargs):
    """function(*args, **kwargs) without keeping its activations: backward recomputes them.

    use_reentrant=False (default) works with backward(), autograd.grad() and create_graph=True
    (Note [Checkpointing]); use_reentrant=True runs function under no_grad inside a Function
    whose backward re-runs it and calls backward() again (backward() only)."""
    if not callable(function):
        raise TypeError(f"checkpoint: function must be callable, not {type(function).__name__}")
    rng_state = get_rng_state() if preserve_rng_state else None
    if use_reentrant:
        if kwargs:
            raise ValueError("checkpoint(use_reentrant=True) does not take keyword arguments for "
                             "the function; use use_reentrant=False")
        return _ReentrantCheckpoint.apply(function, rng_state, *args)
    segment = _Segment(function, args, kwargs, rng_state)
    if rng_state is None:
        segment.rng_state = get_rng_state()     # the re-run must at least not move the RNG
    with saved_tensors_hooks(segment.pack, _unpack):
        return function(*args, **kwargs)


class _ReentrantCheckpoint(Function):
    """checkpoint(use_reentrant=True): forward without a graph; backward re-runs with one."""

    @staticmethod
    def forward(ctx, function, rng_state, *args):
        ctx.function = function
        ctx.rng_state = rng_state
        ctx.save_for_backward(*[a if isinstance(a, _core.Tensor) else None for a in args])
        ctx.others = [None if isinstance(a, _core.Tensor) else a for a in args]
        return function(*args)

    @staticmethod
    def backward(ctx, *grad_outputs):
        if not _core._in_plain_backward() or _core.is_grad_enabled():
            raise RuntimeError("checkpoint(use_reentrant=True) works only with .backward() "
                               "without inputs= and without create_graph=True; use "
                               "checkpoint(..., use_reentrant=False) with autograd.grad, "
                               "inputs= or create_graph")
        saved = ctx.saved_tensors
        inputs = []
        for tensor, other in zip(saved, ctx.others):
            if tensor is None:
                inputs.append(other)
            else:
                fresh = tensor.detach()
                fresh.requires_grad_(tensor.requires_grad)
                inputs.append(fresh)
        current = get_rng_state()
        if ctx.rng_state is not None:
            set_rng_state(ctx.rng_state)
        try:
            with enable_grad():
                outputs = ctx.function(*inputs)
        finally:
            set_rng_state(current)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(o, g) for o, g in zip(outputs, grad_outputs)
                 if isinstance(o, _core.Tensor) and o.requires_grad and g is not None]
        wanted = [x for x in inputs if isinstance(x, _core.Tensor) and x.requires_grad]
        grads = iter(_core.grad(tuple(o for o, _ in pairs), tuple(wanted),
                                tuple(g for _, g in pairs), allow_unused=True)
                     if pairs and wanted else ())
        result = [None, None]
        for x in inputs:
            result.append(next(grads, None) if isinstance(x, _core.Tensor) and x.requires_grad
                          else None)
        return tuple(result)


def checkpoint_sequential(functions, segments, input, use_reentrant=False, **kwargs):
    """Run functions one after the other on input, checkpointing them in `segments` groups
    (the last group runs normally, as its activations are needed right away)."""
    if hasattr(functions, "children"):
        functions = functions.children()
    if not isinstance(functions, (list, tuple)) and not hasattr(functions, "__iter__"):
        raise TypeError(f"checkpoint_sequential: functions must be a sequence of callables, not "
                        f"{type(functions).__name__}")
    functions = list(functions)
    for i, f in enumerate(functions):
        if not callable(f):
            raise TypeError(f"checkpoint_sequential: functions[{i}] must be callable, not "
                            f"{type(f).__name__}")
    if not functions:
        raise ValueError("checkpoint_sequential: no functions given")
    if not isinstance(segments, int) or segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be a positive int, not {segments!r}")
    size = -(-len(functions) // segments)

    def run(start, end):
        def segment(x):
            for f in functions[start:end]:
                x = f(x)
            return x
        return segment

    start = 0
    while start + size < len(functions):
        input = checkpoint(run(start, start + size), input, use_reentrant=use_reentrant, **kwargs)
        start += size
    return run(start, len(functions))(input)
