"""A fused softplus for lucid, written as a native (Cython) custom op."""
from ._softplus import softplus, SoftplusBackward, kernel, KERNELS

__all__ = ["softplus", "SoftplusBackward", "kernel", "KERNELS"]
