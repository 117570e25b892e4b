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

Note [Checkpoint inputs]: the re-run reads the function's inputs as they are at backward, so
checkpoint records the version of every tensor among them (positional, keyword, and inside
lists, tuples and dicts) when it is called, and backward refuses to recompute from one changed
in place since (PyTorch's in-place-modification RuntimeError, naming the input); both modes. A
re-run whose saved tensors (use_reentrant=False) or outputs (use_reentrant=True) differ in shape
or dtype from the forward pass's raises a RuntimeError saying so.
"""
import contextlib

from .. import _core
from .._random import get_rng_state, set_rng_state
from .._grad_mode import enable_grad, no_grad
from ..autograd.function import Function
from ..autograd.graph import saved_tensors_hooks
from . import _selective
from ._selective import (CheckpointPolicy, SelectiveCheckpointContext,
                         create_selective_checkpoint_contexts)

__all__ = ["checkpoint", "checkpoint_sequential", "set_checkpoint_early_stop",
           "create_selective_checkpoint_contexts", "CheckpointPolicy",
           "SelectiveCheckpointContext", "noop_context_fn"]

_early_stop_override = None        # set_checkpoint_early_stop's setting (None: checkpoint's own)


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Within the block, checkpoints made stop (enable=True) or do not stop (False) their re-run
    as soon as the saved tensors backward needs are rebuilt, whatever their early_stop says."""
    global _early_stop_override
    if not isinstance(enable, bool):
        raise TypeError(f"set_checkpoint_early_stop: enable must be a bool, not "
                        f"{type(enable).__name__}")
    previous = _early_stop_override
    _early_stop_override = enable
    try:
        yield
    finally:
        _early_stop_override = previous


def noop_context_fn():
    """checkpoint's default context_fn: no context around the forward or the re-run."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def _internal(hook):
    """Mark a saved-tensor hook as checkpoint's own: what it raises says what went wrong, with
    no note about a hook the user never wrote."""
    hook._lucid_internal = True
    return hook


class _StopRecomputation(Exception):
    """Raised inside a re-run once every saved tensor needed so far is rebuilt."""


class _InputVersions:
    """The version of each tensor among a checkpointed call's arguments when it was made
    (Note [Checkpoint inputs])."""
    __slots__ = ("entries",)

    def __init__(self, args, kwargs):
        self.entries = [(label, t, t._version) for label, t in _tensors_in(args, kwargs)]

    def check(self):
        """RuntimeError naming the first input changed in place since."""
        for label, tensor, version in self.entries:
            if tensor._version != version:
                raise RuntimeError(
                    f"checkpoint: {label} of the checkpointed function was modified by an "
                    f"inplace operation since checkpoint was called (it was at version "
                    f"{version} and is now at version {tensor._version}); checkpoint recomputes "
                    "the function from its inputs in backward, so the gradient would be that "
                    "of the new values. Change a .clone() of the input instead, or change it "
                    "after backward")


def _tensors_in(args, kwargs):
    """(label, tensor) for each tensor among args and kwargs, in lists, tuples and dicts too."""
    found = []
    for i, arg in enumerate(args):
        _collect_tensors(arg, f"argument {i}", found)
    for key, arg in kwargs.items():
        _collect_tensors(arg, f"keyword argument {key!r}", found)
    return found


def _collect_tensors(value, label, found):
    """Append (label, tensor) for value and the tensors inside it to found."""
    if isinstance(value, _core.Tensor):
        found.append((label, value))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _collect_tensors(item, f"{label}[{i}]", found)
    elif isinstance(value, dict):
        for key, item in value.items():
            _collect_tensors(item, f"{label}[{key!r}]", found)


def _metadata_error(what, position, saved, recomputed, trace=""):
    """The RuntimeError for a re-run whose tensor `what` `position` has another (shape, dtype)."""
    return RuntimeError(trace + 
        "checkpoint: recomputed values for the following tensors have different metadata than "
        f"during the forward pass: {what} {position}: forward pass: shape {tuple(saved[0])}, "
        f"dtype {_core.dtype_name(saved[1])}; recomputed: shape {tuple(recomputed[0])}, dtype "
        f"{_core.dtype_name(recomputed[1])}. The checkpointed function must run the same "
        "operations on tensors of the same shapes and dtypes when backward re-runs it (does "
        "it depend on state that changed since the forward pass?)")


def _trace_text(segment, recomputed):
    """debug=True: the ops that saved a tensor in the forward pass and in the re-run."""
    if segment.trace is None:
        return ""
    return ("checkpoint (debug=True): operations that saved a tensor during the original "
            f"forward: {', '.join(segment.trace)}; during recomputation: "
            f"{', '.join(recomputed)}.\n")


class _Segment:
    """What one checkpointed call needs to re-run: fn, its arguments and the RNG state."""

    def __init__(self, fn, args, kwargs, rng_state, recompute_context, early_stop, check,
                 debug):
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.rng_state = rng_state
        self.versions = _InputVersions(args, kwargs)
        self.meta = []              # (shape, dtype) of each tensor saved by the forward run
        self.kept = set()           # numbers the selective policy saved (their handles hold them)
        self.rebuilt = {}           # number -> tensor, from the current re-run
        self.recompute_context = recompute_context
        self.early_stop = early_stop
        self.check = check          # compare the re-run's metadata (determinism_check="default")
        self.trace = [] if debug else None      # debug: the node of each saved tensor

    @property
    def count(self):
        """How many tensors the forward run saved."""
        return len(self.meta)

    @_internal
    def pack(self, tensor):
        self.meta.append((tensor.shape, tensor.dtype))
        number = len(self.meta) - 1
        if self.trace is not None:
            self.trace.append(_node_name())
        policy = _selective.current_policy()
        if policy is not None and _selective.should_save(policy, tensor):
            self.kept.add(number)
            return _Handle(self, number, tensor)
        return _Handle(self, number, None)

    def unpack(self, handle):
        if handle.tensor is not None:
            return handle.tensor
        number = handle.number
        if number not in self.rebuilt:
            self.recompute(number)
        return self.rebuilt.pop(number)

    def recompute(self, wanted):
        """Re-run fn and keep every tensor it saves (the backward that asked for `wanted` will
        ask for the others too), stopping as soon as the last one is rebuilt."""
        self.versions.check()
        counter = iter(range(self.count))
        rebuilt = {}
        last = max((n for n in range(self.count) if n not in self.kept), default=-1)
        if not self.early_stop:
            last = None
        mismatch = []
        trace = [] if self.trace is not None else None

        @_internal
        def keep(tensor):
            number = next(counter, None)
            if trace is not None:
                trace.append(_node_name())
            if number is None:
                if not self.check:
                    raise _StopRecomputation()
                raise RuntimeError(_trace_text(self, trace) +
                                   "checkpoint: the re-run of the checkpointed function saved "
                                   "more tensors than the forward run did; the function must "
                                   "do the same operations every time it is called")
            got = (tensor.shape, tensor.dtype)
            if self.check and got != self.meta[number]:
                mismatch.append((number, got))
                raise _StopRecomputation()
            if number not in self.kept:
                rebuilt[number] = tensor
            if number == last:
                raise _StopRecomputation()
            return tensor

        saved_rng = get_rng_state()
        set_rng_state(self.rng_state)
        try:
            with enable_grad(), saved_tensors_hooks(keep, _identity), self.recompute_context:
                self.fn(*self.args, **self.kwargs)
        except _StopRecomputation:
            pass
        finally:
            set_rng_state(saved_rng)
        if mismatch:
            number, got = mismatch[0]
            raise _metadata_error("saved tensor", number, self.meta[number], got,
                                  _trace_text(self, trace))
        if wanted not in rebuilt:
            raise RuntimeError(_trace_text(self, trace) + "checkpoint: the re-run of the checkpointed function saved fewer "
                               "tensors than the forward run did; the function must do the same "
                               "operations every time it is called")
        self.rebuilt = rebuilt


class _Handle:
    """The packed form of a saved tensor: its number in the segment, and the tensor itself
    only when the selective policy saves it."""
    __slots__ = ("segment", "number", "tensor")

    def __init__(self, segment, number, tensor):
        self.segment = segment
        self.number = number
        self.tensor = tensor


def _node_name():
    """The name of the node whose tensor is being packed (debug traces)."""
    node = _core._saving_node()
    return node.name() if node is not None else "?"


@_internal
def _identity(x):
    return x


@_internal
def _unpack(handle):
    return handle.segment.unpack(handle)


def checkpoint(function, *args, use_reentrant=False, preserve_rng_state=True,
               context_fn=None, determinism_check="default", debug=False,
               early_stop=True, **kwargs):
    """function(*args, **kwargs) without keeping its activations: backward recomputes them.

    use_reentrant=False (default) works with backward(), autograd.grad() and create_graph=True
    (Note [Checkpointing]); use_reentrant=True runs function under no_grad inside a Function
    whose backward re-runs it and calls backward() again (backward() only). context_fn (None:
    noop_context_fn) returns
    the (forward, recompute) context managers (create_selective_checkpoint_contexts: save what
    a policy says); determinism_check="none" skips the re-run's shape/dtype check; debug=True
    lists the ops of both runs in a re-run error; early_stop=False re-runs function whole."""
    if not callable(function):
        raise TypeError(f"checkpoint: function must be callable, not {type(function).__name__}")
    if context_fn is None:
        context_fn = noop_context_fn
    if not callable(context_fn):
        raise TypeError(f"checkpoint: context_fn must be callable, not "
                        f"{type(context_fn).__name__}")
    if determinism_check not in ("default", "none"):
        raise ValueError("checkpoint: determinism_check should be one of ['default', 'none'], "
                         f"but got {determinism_check!r}")
    for name, value in (("debug", debug), ("early_stop", early_stop),
                        ("preserve_rng_state", preserve_rng_state)):
        if not isinstance(value, bool):
            raise TypeError(f"checkpoint: {name} must be a bool, not {type(value).__name__}")
    if use_reentrant:
        if context_fn is not noop_context_fn or debug:
            raise ValueError("checkpoint: Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        if kwargs:
            raise ValueError("checkpoint(use_reentrant=True) does not take keyword arguments for "
                             "the function; use use_reentrant=False")
        rng_state = get_rng_state() if preserve_rng_state else None
        return _ReentrantCheckpoint.apply(function, rng_state, *args)
    contexts = context_fn()
    if (not isinstance(contexts, tuple) or len(contexts) != 2
            or not all(hasattr(c, "__enter__") and hasattr(c, "__exit__") for c in contexts)):
        raise TypeError("checkpoint: context_fn must return a tuple of two context managers "
                        f"(forward, recompute), not {type(contexts).__name__}")
    forward_context, recompute_context = contexts
    rng_state = get_rng_state()         # without preserve_rng_state: so the re-run does not
    if _early_stop_override is not None:        # move the RNG at least
        early_stop = _early_stop_override
    segment = _Segment(function, args, kwargs, rng_state, recompute_context, early_stop,
                       determinism_check == "default", debug)
    with saved_tensors_hooks(segment.pack, _unpack), forward_context:
        return function(*args, **kwargs)


class _ReentrantCheckpoint(Function):
    """checkpoint(use_reentrant=True): forward without a graph; backward re-runs with one."""

    @staticmethod
    def forward(ctx, function, rng_state, *args):
        ctx.function = function
        ctx.rng_state = rng_state
        ctx.versions = _InputVersions(args, {})
        ctx.save_for_backward(*[a if isinstance(a, _core.Tensor) else None for a in args])
        ctx.others = [None if isinstance(a, _core.Tensor) else a for a in args]
        outputs = function(*args)
        ctx.output_meta = [(o.shape, o.dtype) if isinstance(o, _core.Tensor) else None
                           for o in (outputs if isinstance(outputs, tuple) else (outputs,))]
        return outputs

    @staticmethod
    def backward(ctx, *grad_outputs):
        if not _core._in_plain_backward() or _core.is_grad_enabled():
            raise RuntimeError("checkpoint(use_reentrant=True) works only with .backward() "
                               "without inputs= and without create_graph=True; use "
                               "checkpoint(..., use_reentrant=False) with autograd.grad, "
                               "inputs= or create_graph")
        ctx.versions.check()
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
        _check_outputs_meta(ctx.output_meta, outputs)
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


def _check_outputs_meta(saved, outputs):
    """The re-run's outputs have the forward pass's shapes and dtypes (RuntimeError if not)."""
    for i, (meta, out) in enumerate(zip(saved, outputs)):
        got = (out.shape, out.dtype) if isinstance(out, _core.Tensor) else None
        if meta is not None and got != meta:
            if got is None:
                raise RuntimeError(f"checkpoint: the re-run of the checkpointed function "
                                   f"returned {type(out).__name__} as output {i}, where the "
                                   "forward pass returned a Tensor")
            raise _metadata_error("output", i, meta, got)


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
