"""vmap's levels on this thread, and the switch between batched calls and physical ones.

A level is entered by each vmap call (lucid/_batching/vmap.py) on the thread's transform stack
(Note [Transform levels]); its id orders it (an inner level has a larger id). While a level is
active, ops send calls with batched arguments to the dispatcher (Note [Batch dispatch]); the
dispatcher runs each op on the physical tensors with dispatch off (`physical()`).
"""
import contextlib
import threading

from .. import _core

_state = threading.local()


class Level:
    """One active vmap: its id, batch size and randomness mode."""
    __slots__ = ("id", "size", "randomness")

    def __init__(self, id, size, randomness):
        self.id = id
        self.size = size
        self.randomness = randomness

    def __repr__(self):
        return f"Level(id={self.id}, size={self.size}, randomness={self.randomness!r})"


def stack():
    """This thread's active levels, outermost first."""
    levels = getattr(_state, "levels", None)
    if levels is None:
        levels = _state.levels = []
    return levels


def innermost():
    """The innermost active level, or None."""
    levels = stack()
    return levels[-1] if levels else None


@contextlib.contextmanager
def entered(size, randomness):
    """A new batch level of size for the block; yields it."""
    level = Level(_core._batch_push(size), size, randomness)
    levels = stack()
    levels.append(level)
    previous = _core._batch_dispatch(True)
    try:
        yield level
    finally:
        _core._batch_dispatch(previous)
        levels.pop()
        _core._batch_pop(level.id)


@contextlib.contextmanager
def physical():
    """Ops in the block run on plain tensors, not through the batching rules."""
    previous = _core._batch_dispatch(False)
    try:
        yield
    finally:
        _core._batch_dispatch(previous)


def run(f, args, kwargs):
    """f(*args, **kwargs) on physical tensors (batch dispatch off)."""
    previous = _core._batch_dispatch(False)
    try:
        return f(*args, **kwargs) if kwargs else f(*args)
    finally:
        _core._batch_dispatch(previous)


@contextlib.contextmanager
def dispatching():
    """Batched calls dispatch in the block (a custom Function's backward run by the engine)."""
    previous = _core._batch_dispatch(True)
    try:
        yield
    finally:
        _core._batch_dispatch(previous)
