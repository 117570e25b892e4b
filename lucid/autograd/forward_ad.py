"""Forward-mode automatic differentiation: dual tensors carry a tangent through every op.

    import lucid.autograd.forward_ad as fwAD
    with fwAD.dual_level():
        x = fwAD.make_dual(primal, tangent)     # tangent: same shape, cast to primal's dtype
        y = f(x)
        out, jvp = fwAD.unpack_dual(y)          # jvp = J_f(primal) @ tangent

Levels are per thread, like grad mode, and nest: `with dual_level() as lvl` gives the level's
id; make_dual and unpack_dual work at the innermost level unless given `level=`; levels exit in
the reverse order of entering. A dual of a dual keeps its outer tangent, so each level's
tangents stay independent. Leaving a level drops every tangent made in it.
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
    """(primal, tangent) of a dual tensor at level (the innermost when None); tangent is None
    when it has none there, and the primal keeps the tangents of the other levels."""
    return UnpackedDualTensor(*_core._unpack_dual(tensor, level))


def enter_dual_level():
    """Start a dual level in this thread and return its id (prefer `with dual_level():`)."""
    return _core._enter_dual_level()


def exit_dual_level(*, level=None):
    """End this thread's innermost dual level (level, if given, must be it); its tangents are
    dropped."""
    _core._exit_dual_level(level)


class dual_level:
    """Context manager (and decorator): a dual level for the duration of the block."""

    def __enter__(self):
        self._levels = getattr(self, "_levels", [])
        self._levels.append(enter_dual_level())
        return self._levels[-1]

    def __exit__(self, *exc):
        exit_dual_level(level=self._levels.pop())
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with dual_level():
                return fn(*args, **kwargs)
        return wrapper
