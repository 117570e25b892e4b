"""A fused softplus for lucid, written as a native (Cython) custom op."""
from ._softplus import softplus, SoftplusBackward

__all__ = ["softplus", "SoftplusBackward"]
