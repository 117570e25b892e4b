# Engine counters: one flag, read once per traversal; a traversal that starts while it is on
# runs its nodes through run_node_profiled (engine/engine.pxi), which counts and times around run_node.

from posix.time cimport timespec, clock_gettime, CLOCK_MONOTONIC
from cpython.pythread cimport PyThread_get_thread_ident

cdef bint profiling = False

cdef struct EngineCounters:
    int64_t backward_calls        # traversals run
    int64_t nodes_run             # nodes whose apply ran
    int64_t nodes_skipped         # nodes pruned (no requested input behind them) or given no gradient
    int64_t python_reentries      # calls into Python: Function backwards and tensor hooks
    int64_t python_ns             # time inside those calls
    int64_t engine_ns             # time inside the engine in all, Python included

cdef EngineCounters counters          # only ever grows: a block reports its end minus its start
cdef bint recording_nodes = False     # profile(record_nodes=True): time every node apply
cdef list node_events = None           # (kind, name, code, lasti, sequence_nr, start, ns, thread)

# Note [Nested profiles]: blocks may nest (and, in threads, overlap in any order). Counting is on
# while any block is open and node events are kept while any block that wants them is open;
# nothing is zeroed or swapped. A block keeps a mark (the counters and the number of events when
# it opened) and reports the difference at its end, so each block sees exactly what happened
# while it was open, an enclosing block's own report included. A traversal is profiled, or not,
# as a whole: by whether a block was open when it started (a block opened inside a backward
# counts the traversals that start after it: re-entrant ones, other threads').
cdef int open_profiles = 0            # profile blocks open in the process
cdef int open_recording_profiles = 0  # of them, those with record_nodes=True


cdef void note_event(str kind, Node node, int64_t start, object fn=None) noexcept:
    """Record one timed event of a profile(record_nodes=True) block (kind: node, hook,
    python; fn: the Function class or the hook of a python or hook event)."""
    cdef int64_t end = now_ns()
    if recording_nodes and node_events is not None:
        try:
            node_events.append((kind, event_name(kind, node, fn), node.creation_code,
                                node.creation_lasti, node.sequence_nr, start, end - start,
                                PyThread_get_thread_ident()))
        except BaseException:
            pass


cdef str event_name(str kind, Node node, object fn):
    """A node apply is named for its node; the time inside a Function's backward is
    '<Function>.backward', a hook's '<hook> (hook on <node>)': one event per apply bears the
    node's name."""
    if kind == "node" or fn is None:
        return node.name()
    if kind == "python":
        return f"{getattr(fn, '__name__', '?')}.backward"
    return f"{getattr(fn, '__qualname__', type(fn).__name__)} ({kind} on {node.name()})"


cdef void note_python_call(Node node, str kind, int64_t start, object fn) noexcept:
    """A call into Python (a Function's backward, a hook fn) ended: count it, and time it."""
    counters.python_reentries += 1
    counters.python_ns += now_ns() - start
    if recording_nodes:
        note_event(kind, node, start, fn)


cdef inline int64_t traversal_started() noexcept:
    """A profiled traversal starts: count it; returns its start time."""
    counters.backward_calls += 1
    return now_ns()


cdef inline void traversal_ended(int64_t started) noexcept:
    """A profiled traversal ended: add its time to the engine's."""
    counters.engine_ns += now_ns() - started


cdef void note_node_done(Node node, bint ran, int64_t start) noexcept:
    """A node of a profiled traversal is done: count it as run (and record its event from
    start, in a record_nodes block) or as skipped (pruned, or reached by no gradient)."""
    if not ran:
        counters.nodes_skipped += 1
        return
    counters.nodes_run += 1
    if recording_nodes:
        note_event("node", node, start)


cdef inline int64_t now_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec * 1000000000 + ts.tv_nsec


cdef tuple counter_values():
    return (counters.backward_calls, counters.nodes_run, counters.nodes_skipped,
            counters.python_reentries, counters.python_ns, counters.engine_ns)


def _profile_start(bint record_nodes=False):
    """Open a profile block (Note [Nested profiles]): count (and time every node apply when
    record_nodes) until its _profile_stop; returns the block's mark."""
    global profiling, recording_nodes, node_events, open_profiles, open_recording_profiles
    open_profiles += 1
    profiling = True
    if record_nodes:
        if open_recording_profiles == 0:
            node_events = []
        open_recording_profiles += 1
        recording_nodes = True
    return (counter_values(), len(node_events) if record_nodes else None)


def _profile_events(tuple mark):
    """The events recorded since the block of mark opened: (kind, name, creation site,
    sequence_nr, start_ns, duration_ns, thread)."""
    first = mark[1]
    if first is None or node_events is None:
        return []
    return [(kind, name, site_of_code(code, lasti), seq, start, ns, thread)
            for kind, name, code, lasti, seq, start, ns, thread in node_events[first:]]


def _profile_stop(tuple mark):
    """Close the block of mark (counting stops with the last open block) and return what the
    counters counted while it was open, as a dict."""
    global profiling, recording_nodes, node_events, open_profiles, open_recording_profiles
    if open_profiles <= 0:
        raise RuntimeError("profile: no profile block is open")
    open_profiles -= 1
    profiling = open_profiles > 0
    if mark[1] is not None:
        open_recording_profiles -= 1
        if open_recording_profiles == 0:
            recording_nodes = False
            node_events = None
    cdef tuple start = mark[0], now = counter_values()
    calls, run, skipped, reentries, python_ns, engine_ns = [b - a for a, b in zip(start, now)]
    return {"backward_calls": calls, "nodes_run": run, "nodes_skipped": skipped,
            "python_reentries": reentries, "python_seconds": python_ns * 1e-9,
            "engine_seconds": engine_ns * 1e-9}


def _profile_now():
    """The profile clock, in nanoseconds (a record_function range's start)."""
    return now_ns()


def _profile_record_range(str name, int64_t start):
    """A record_function range from start to now: a "range" event of the open profile blocks
    that record events (nothing when none is open)."""
    cdef int64_t end = now_ns()
    if recording_nodes and node_events is not None:
        node_events.append(("range", name, None, -1, -1, start, end - start,
                            PyThread_get_thread_ident()))
