# Engine counters: one flag; when off, each counting site costs one branch.

from posix.time cimport timespec, clock_gettime, CLOCK_MONOTONIC

cdef bint profiling = False

cdef struct EngineCounters:
    int64_t backward_calls        # traversals run
    int64_t nodes_run             # nodes whose apply ran
    int64_t nodes_skipped         # nodes pruned (no requested input behind them) or given no gradient
    int64_t python_reentries      # calls into Python: Function backwards and tensor hooks
    int64_t python_ns             # time inside those calls
    int64_t engine_ns             # time inside the engine in all, Python included

cdef EngineCounters counters


cdef inline int64_t now_ns() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec * 1000000000 + ts.tv_nsec


def _profile_start():
    """Zero the counters and start counting; returns the previous setting."""
    global profiling, counters
    cdef bint previous = profiling
    counters = EngineCounters(0, 0, 0, 0, 0, 0)
    profiling = True
    return previous


def _profile_stop(bint previous):
    """Stop counting (restore the previous setting) and return the counters as a dict."""
    global profiling
    profiling = previous
    return {"backward_calls": counters.backward_calls, "nodes_run": counters.nodes_run,
            "nodes_skipped": counters.nodes_skipped,
            "python_reentries": counters.python_reentries,
            "python_seconds": counters.python_ns * 1e-9,
            "engine_seconds": counters.engine_ns * 1e-9}
