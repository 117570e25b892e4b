"""Diagnostics: creation sites, the saved-tensor guard, and engine counters."""
import contextlib

from .. import _core

__all__ = ["set_saved_tensor_guard", "saved_tensor_guard", "set_creation_sites", "profile"]


def set_saved_tensor_guard(on):
    """While on, arrays saved for backward are read-only as long as their node holds them, so a
    write through `t.numpy()` raises at the write instead of corrupting a gradient later.
    Returns the previous setting."""
    return _core.set_saved_tensor_guard(bool(on))


@contextlib.contextmanager
def saved_tensor_guard(on=True):
    """set_saved_tensor_guard(on) for the duration of a with block (forward included)."""
    previous = _core.set_saved_tensor_guard(bool(on))
    try:
        yield
    finally:
        _core.set_saved_tensor_guard(previous)


def set_creation_sites(on):
    """Record where each node's forward ran (on by default; node.creation_site, error notes).
    Returns the previous setting."""
    return _core.set_creation_sites(bool(on))


class profile:
    """Count what the engine does inside the block::

        with lucid.autograd.profile() as p:
            loss.backward()
        p.nodes_run, p.nodes_skipped, p.python_reentries, p.python_seconds, p.engine_seconds

    `backward_calls` counts traversals (a re-entrant backward counts as its own), `nodes_skipped`
    the nodes pruned by grad()/inputs= or reached by no gradient, `python_reentries` the calls
    into Python (Function backwards and tensor hooks) and `python_seconds` the time spent in them.
    """

    def __enter__(self):
        self._previous = _core._profile_start()
        return self

    def __exit__(self, *exc):
        for name, value in _core._profile_stop(self._previous).items():
            setattr(self, name, value)
        return False

    def __repr__(self):
        fields = ("backward_calls", "nodes_run", "nodes_skipped", "python_reentries",
                  "python_seconds", "engine_seconds")
        return "profile(" + ", ".join(f"{f}={getattr(self, f, None)!r}" for f in fields) + ")"
