"""Where an array's memory came from, seen through tracemalloc: made while a given function ran,
or taken from lucid's array pool (Note [Array pool]) that fill_pool stocked before."""
import contextlib
import tracemalloc

import numpy as np

import lucid
from lucid import _core

POOL_SIZE = 8                   # the arrays the pool keeps (POOL_SIZE in lucid/kernels/array_pool.pxi)
FRAMES = 32                     # frames kept per traced allocation: enough to reach the test


@contextlib.contextmanager
def tracing():
    """tracemalloc traces every allocation inside the block (left as it was after)."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start(FRAMES)
    try:
        yield
    finally:
        if started:
            tracemalloc.stop()


def _lines(code):
    """The source lines of a code object and of the code objects nested in it."""
    lines = {line for _, _, line in code.co_lines() if line is not None}
    for const in code.co_consts:
        if hasattr(const, "co_lines"):
            lines |= _lines(const)
    return lines


def made_in(array, fn):
    """Whether array's object was allocated while fn ran (its allocation traceback passes through
    fn's code); an array an op took from the pool was allocated before. Needs tracing() on since
    before fn ran."""
    traceback = tracemalloc.get_object_traceback(array)
    assert traceback is not None, "made_in needs tracing() on since the array was made"
    code, lines = fn.__code__, _lines(fn.__code__)
    return any(f.filename == code.co_filename and f.lineno in lines for f in traceback)


def fill_pool(shape, dtype):
    """Empty the pool, then fill it with POOL_SIZE arrays of this shape and dtype (results of a
    typed loop, dropped unshared); False, doing nothing, in a build that keeps no pool."""
    if not _core._array_pool_enabled():
        return False
    _core._array_pool_size(empty=True)
    source = lucid.tensor(np.ones(shape, dtype))
    results = [source * 1.0 for _ in range(POOL_SIZE)]
    del results
    assert _core._array_pool_size() == POOL_SIZE
    return True
