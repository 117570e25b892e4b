"""detect_anomaly: make backward failures point at the forward call that made the failing node."""
import functools

from .. import _core


class detect_anomaly:
    """Inside, every node records its forward traceback; an exception or NaN in backward shows it.

    Usable as a context manager or a decorator. `check_nan=False` keeps the traceback notes but
    skips the NaN check.
    """

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        self._previous = _core._set_anomaly_enabled(True)
        return self

    def __exit__(self, *exc):
        _core._set_anomaly_enabled(self._previous)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


def is_anomaly_enabled():
    """True inside detect_anomaly."""
    return _core.is_anomaly_enabled()
