"""Forward-mode automatic differentiation: dual tensors carry a tangent through every op.

    import lucid.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        x = fwAD.make_dual(primal, tangent)     # tangent: same shape, cast to primal's dtype
        y = f(x)
        out, jvp = fwAD.unpack_dual(y)          # jvp = J_f(primal) @ tangent

Levels are per thread, like grad mode. One level at a time: entering a second one raises.
Leaving a level drops every tangent made in it.
"""
import collections
import functools

from .. import _core

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "UnpackedDualTensor"]

make_dual = _core.make_dual


class UnpackedDualTensor(collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])):
    """What unpack_dual returns: the primal (a view without tangent) and the tangent or None."""


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of a dual tensor; tangent is None when it has none at the level."""
    current = _core._current_dual_level()
    if level is not None and level != current:
        raise RuntimeError(f"unpack_dual: level {level} is not the active level ({current})")
    return UnpackedDualTensor(*_core._unpack_dual(tensor))


def enter_dual_level():
    """Start a dual level in this thread and return its id (prefer `with dual_level():`)."""
    return _core._enter_dual_level()


def exit_dual_level(*, level=None):
    """End this thread's dual level; its tangents are dropped."""
    _core._exit_dual_level(level)


class dual_level:
    """Context manager (and decorator): a dual level for the duration of the block."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with dual_level():
                return fn(*args, **kwargs)
        return wrapper
