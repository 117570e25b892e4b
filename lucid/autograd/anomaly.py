"""detect_anomaly: make backward failures point at the forward call that made the failing node."""
import functools

from .. import _core

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]


def _set(mode, check_nan):
    """Set anomaly mode and its NaN check; returns the previous pair."""
    return _core._set_anomaly_enabled(mode), _core._set_anomaly_check_nan(check_nan)


class detect_anomaly:
    """Inside, every node records its forward traceback; an exception or NaN in backward shows it.

    Usable as a context manager or a decorator. `check_nan=False` keeps the traceback notes but
    skips the NaN check.
    """

    def __init__(self, check_nan=True):
        self.check_nan = bool(check_nan)

    def __enter__(self):
        self._previous = _set(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        _set(*self._previous)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Turn anomaly mode on or off (mode: a bool) with its NaN check, at once; used with `with`,
    the previous setting comes back on exit."""

    def __init__(self, mode, check_nan=True):
        if not isinstance(mode, bool):
            raise TypeError(f"set_detect_anomaly(): mode must be a bool, not {type(mode).__name__}")
        self._previous = _set(mode, bool(check_nan))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set(*self._previous)
        return False


def is_anomaly_enabled():
    """True inside detect_anomaly."""
    return _core.is_anomaly_enabled()


def is_anomaly_check_nan_enabled():
    """True when anomaly mode checks backward's gradients for NaN."""
    return _core.is_anomaly_check_nan_enabled()
