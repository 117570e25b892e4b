# Engine counters: one flag; when off, each counting site costs one branch.

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

cdef EngineCounters counters
cdef bint recording_nodes = False     # profile(record_nodes=True): time every node apply
cdef list node_events = None           # (kind, name, code, lasti, sequence_nr, start, ns, thread)


cdef void note_event(str kind, Node node, int64_t start) noexcept:
    """Record one timed event of a profile(record_nodes=True) block (kind: node, hook,
    python)."""
    cdef int64_t end = now_ns()
    if recording_nodes and node_events is not None:
        try:
            node_events.append((kind, node.name(), node.creation_code, node.creation_lasti,
                                node.sequence_nr, start, end - start, PyThread_get_thread_ident()))
        except BaseException:
            pass


cdef void note_python_call(Node node, str kind, int64_t start) noexcept:
    """A call into Python (a Function's backward, a hook) ended: count it, and time it."""
    counters.python_reentries += 1
    counters.python_ns += now_ns() - start
    if recording_nodes:
        note_event(kind, node, start)


cdef inline int64_t now_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec * 1000000000 + ts.tv_nsec


def _profile_start(bint record_nodes=False):
    """Zero the counters and start counting (and timing every node apply when record_nodes);
    returns the previous setting."""
    global profiling, counters, recording_nodes, node_events
    cdef tuple previous = (profiling, recording_nodes, node_events)
    counters = EngineCounters(0, 0, 0, 0, 0, 0)
    profiling = True
    recording_nodes = record_nodes
    node_events = [] if record_nodes else None
    return previous


def _profile_events():
    """The events recorded so far: (kind, name, creation site, sequence_nr, start_ns,
    duration_ns, thread)."""
    if node_events is None:
        return []
    return [(kind, name, site_of_code(code, lasti), seq, start, ns, thread)
            for kind, name, code, lasti, seq, start, ns, thread in node_events]


def _profile_stop(tuple previous):
    """Stop counting (restore the previous setting) and return the counters as a dict."""
    global profiling, recording_nodes, node_events
    profiling, recording_nodes, node_events = previous
    return {"backward_calls": counters.backward_calls, "nodes_run": counters.nodes_run,
            "nodes_skipped": counters.nodes_skipped,
            "python_reentries": counters.python_reentries,
            "python_seconds": counters.python_ns * 1e-9,
            "engine_seconds": counters.engine_ns * 1e-9}
