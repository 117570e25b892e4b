"""lucid.autograd.profiler: PyTorch's profiler names over lucid.autograd.profile."""
from .. import _core

__all__ = ["record_function"]


class record_function:
    """A labelled range: its time, from entry to exit, is a "range" event named `name` in the
    open lucid.autograd.profile blocks (their table and Chrome trace); free when none is open.
    Usable as a context manager or a decorator."""

    def __init__(self, name, args=None):
        self.name = str(name)
        self.args = args

    def __enter__(self):
        self._start = _core._profile_now()
        return self

    def __exit__(self, *exc):
        _core._profile_record_range(self.name, self._start)
        return False

    def __call__(self, fn):
        import functools
        name = self.name

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(name):
                return fn(*args, **kwargs)
        return wrapper
