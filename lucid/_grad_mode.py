"""Grad-mode switches: no_grad, enable_grad, set_grad_enabled, inference_mode (context managers
and decorators; no_grad, enable_grad and inference_mode also bare, without parentheses)."""
import functools
import inspect

from . import _core


def _type_name(x):
    """x's type as an error names it: "str", "numpy.bool" (qualified unless a builtin)."""
    t = type(x)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _wrap_generator(make_mode, gen_fn):
    """gen_fn's generators run every resumption (next, send, throw, close) inside a fresh
    make_mode() context; the caller's mode holds in between."""

    @functools.wraps(gen_fn)
    def wrapper(*args, **kwargs):
        with make_mode():
            gen = gen_fn(*args, **kwargs)
        try:
            with make_mode():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with make_mode():
                        gen.close()
                    raise
                except BaseException as error:
                    with make_mode():
                        response = gen.throw(error)
                else:
                    with make_mode():
                        response = gen.send(request)
        except StopIteration as stop:
            return stop.value
    return wrapper


class _GradSwitch:
    """Sets grad mode to `enabled` on entry and restores the previous mode on exit."""

    def __init__(self, enabled):
        self.enabled = enabled

    def __enter__(self):
        self._previous = _core._set_grad_enabled(self.enabled)
        return self

    def __exit__(self, *exc):
        _core._set_grad_enabled(self._previous)
        return False


class _GradMode(_GradSwitch):
    """Sets grad mode on entry and restores the previous mode on exit; as a decorator, for
    each call of a function (each resumption of a generator)."""

    enabled = True

    def __init__(self):
        pass                     # the mode is the class's (no_grad, enable_grad) or __init__'s

    def __call__(self, fn):
        enabled = self.enabled
        if inspect.isgeneratorfunction(fn):
            return _wrap_generator(lambda: _GradSwitch(enabled), fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            previous = _core._set_grad_enabled(enabled)
            try:
                return fn(*args, **kwargs)
            finally:
                _core._set_grad_enabled(previous)
        return wrapper


class _BareDecorator:
    """`@mode` without parentheses decorates like `@mode()`: cls(fn) returns the wrapped fn."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        if not callable(orig_func):
            raise TypeError(f"{cls.__name__}() takes no arguments (it may decorate a function "
                            f"bare), got {type(orig_func).__name__}")
        return cls()(orig_func)

    def __init__(self, orig_func=None):
        pass


class no_grad(_BareDecorator, _GradMode):
    """Operations inside are not recorded for backward."""
    enabled = False


class enable_grad(_BareDecorator, _GradMode):
    """Operations inside are recorded, even within no_grad."""
    enabled = True


class set_grad_enabled(_GradMode):
    """Turn recording on or off (mode: a bool); takes effect at once, and restores on exit when
    used with `with`."""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'mode' must be bool, not "
                            f"{_type_name(mode)}")
        self.enabled = mode
        self._previous = _core._set_grad_enabled(self.enabled)

    def __enter__(self):
        return self

    def __call__(self, fn):
        # Used as a decorator: the mode applies to calls of fn only, not from now on.
        _core._set_grad_enabled(self._previous)
        return super().__call__(fn)


class inference_mode:
    """Like no_grad, and every tensor made inside can never require grad: requires_grad_(True)
    on it raises outside the mode, and has no effect inside it (nothing records there, and
    torch.ones(2, requires_grad=True) inside the mode must not fail). inference_mode(False)
    turns inference mode off inside (and grad mode on), as PyTorch's does."""

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode) and not isinstance(mode, bool):    # bare @inference_mode
            self.mode = True
            return self(mode)
        return self

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __enter__(self):
        self._previous = (_core._set_grad_enabled(not self.mode),
                          _core._set_inference_mode(self.mode))
        return self

    def __exit__(self, *exc):
        grad, inference = self._previous
        _core._set_grad_enabled(grad)
        _core._set_inference_mode(inference)
        return False

    def __call__(self, fn):
        mode = self.mode
        if inspect.isgeneratorfunction(fn):
            return _wrap_generator(lambda: inference_mode(mode), fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(mode):
                return fn(*args, **kwargs)
        return wrapper


def is_grad_enabled():
    """True when operations in this thread are recorded."""
    return _core.is_grad_enabled()


def is_inference_mode_enabled():
    """True inside inference_mode() in this thread."""
    return _core.is_inference_mode_enabled()
