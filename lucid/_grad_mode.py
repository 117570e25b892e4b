"""Grad-mode switches: no_grad, enable_grad, set_grad_enabled (context managers and decorators)."""
import functools

from . import _core


class _GradMode:
    """Sets grad mode on entry and restores the previous mode on exit."""

    enabled = True

    def __enter__(self):
        self._previous = _core._set_grad_enabled(self.enabled)
        return self

    def __exit__(self, *exc):
        _core._set_grad_enabled(self._previous)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            previous = _core._set_grad_enabled(self.enabled)
            try:
                return fn(*args, **kwargs)
            finally:
                _core._set_grad_enabled(previous)
        return wrapper


class no_grad(_GradMode):
    """Operations inside are not recorded for backward."""
    enabled = False


class enable_grad(_GradMode):
    """Operations inside are recorded, even within no_grad."""
    enabled = True


class set_grad_enabled(_GradMode):
    """Turn recording on or off; takes effect at once, and restores on exit when used with `with`."""

    def __init__(self, mode):
        self.enabled = bool(mode)
        self._previous = _core._set_grad_enabled(self.enabled)

    def __enter__(self):
        return self

    def __call__(self, fn):
        # Used as a decorator: the mode applies to calls of fn only, not from now on.
        _core._set_grad_enabled(self._previous)
        return super().__call__(fn)


def is_grad_enabled():
    """True when operations in this thread are recorded."""
    return _core.is_grad_enabled()
