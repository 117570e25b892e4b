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
    """Count what the engine does inside the block, and time every node it runs::

        with lucid.autograd.profile() as prof:
            loss.backward()
        print(prof.table())                      # per node name: count, total, mean, share
        prof.export_chrome_trace("trace.json")   # open in Perfetto or chrome://tracing

    Counters: `vmap_fallbacks` (vmap calls of an op without a batching rule, run once per
    batch element), `backward_calls` (traversals; a re-entrant backward counts as its own),
    `nodes_run`, `nodes_skipped` (pruned by grad()/inputs= or reached by no gradient),
    `python_reentries` (Function backwards and hooks) and `python_seconds`, `engine_seconds`.
    With `record_nodes=True` (the default) each node apply, hook and Function backward is also
    an event (`prof.events`); `record_nodes=False` keeps only the near-free counters. Outside a
    profile block nothing is recorded. Blocks nest: each reports exactly what ran while it was
    open (an enclosing block includes what its inner blocks saw). The counters are process-wide:
    a block also counts the backward passes other threads run while it is open.
    """

    _FIELDS = ("backward_calls", "nodes_run", "nodes_skipped", "python_reentries",
               "python_seconds", "engine_seconds")

    def __init__(self, record_nodes=True):
        self.record_nodes = bool(record_nodes)
        self.events = []

    def __enter__(self):
        self._fallbacks = _fallback_total()
        self._mark = _core._profile_start(self.record_nodes)
        return self

    def __exit__(self, *exc):
        self.events = [ProfileEvent(*e) for e in _core._profile_events(self._mark)]
        for name, value in _core._profile_stop(self._mark).items():
            setattr(self, name, value)
        self.vmap_fallbacks = _fallback_total() - self._fallbacks
        return False

    def table(self, by="name", kinds=("node", "range"), limit=None):
        """Per node name (or creation site, by="site"), and per record_function label: count,
        total, mean and share of the recorded time, sorted by total."""
        if by not in ("name", "site"):
            raise ValueError(f"profile.table: by must be 'name' or 'site', not {by!r}")
        if not self.record_nodes:
            raise RuntimeError("profile.table needs profile(record_nodes=True): without it only "
                               "the counters are kept")
        rows = {}
        for e in self.events:
            if e.kind in kinds:
                key = e.name if by == "name" else f"{e.creation_site or '?'} ({e.name})"
                count, total = rows.get(key, (0, 0))
                rows[key] = (count + 1, total + e.duration_ns)
        grand = sum(total for _, total in rows.values()) or 1
        ordered = sorted(rows.items(), key=lambda item: -item[1][1])[:limit]
        width = max([len("node" if by == "name" else "creation site")] +
                    [len(k) for k, _ in ordered])
        lines = [f"{'node' if by == 'name' else 'creation site':<{width}}  {'count':>7}  "
                 f"{'total':>10}  {'mean':>10}  {'share':>6}"]
        for key, (count, total) in ordered:
            lines.append(f"{key:<{width}}  {count:>7}  {_fmt_ns(total):>10}  "
                         f"{_fmt_ns(total / count):>10}  {100 * total / grand:>5.1f}%")
        return "\n".join(lines)

    def export_chrome_trace(self, path):
        """Write the events as Chrome trace-event JSON (one complete event per node apply, hook
        and Function backward, with name, creation site and sequence number)."""
        import json
        import os
        pid = os.getpid()
        base = min((e.start_ns for e in self.events), default=0)
        trace = [{"name": e.name, "cat": e.kind, "ph": "X", "pid": pid, "tid": e.thread,
                  "ts": (e.start_ns - base) / 1000.0, "dur": e.duration_ns / 1000.0,
                  "args": {"creation_site": e.creation_site, "sequence_nr": e.sequence_nr}}
                 for e in self.events]
        with open(path, "w") as f:
            json.dump({"traceEvents": trace, "displayTimeUnit": "ns"}, f)
        return path

    def __repr__(self):
        return "profile(" + ", ".join(f"{f}={getattr(self, f, None)!r}" for f in self._FIELDS) + \
            f", events={len(self.events)})"


def _fallback_total():
    from .._batching.dispatch import fallback_counts
    return sum(fallback_counts.values())


class ProfileEvent:
    """One timed event: kind ('node', 'hook', 'python', or 'range' for a record_function
    label), name, the node's creation site and
    sequence number, start and duration in nanoseconds, thread. A node apply is named for its
    node; the Function backward or hook it runs, '<Function>.backward' or '<hook> (hook on
    <node>)'."""
    __slots__ = ("kind", "name", "creation_site", "sequence_nr", "start_ns", "duration_ns",
                 "thread")

    def __init__(self, kind, name, creation_site, sequence_nr, start_ns, duration_ns, thread):
        self.kind = kind
        self.name = name
        self.creation_site = creation_site
        self.sequence_nr = sequence_nr
        self.start_ns = start_ns
        self.duration_ns = duration_ns
        self.thread = thread

    def __repr__(self):
        return (f"ProfileEvent({self.kind}, {self.name}, {self.creation_site}, "
                f"{_fmt_ns(self.duration_ns)})")


def _fmt_ns(ns):
    if ns < 1e3:
        return f"{ns:.0f} ns"
    if ns < 1e6:
        return f"{ns / 1e3:.1f} us"
    if ns < 1e9:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.2f} s"
