"""lucid.utils: tools built on the autograd core (checkpointing)."""
from . import checkpoint

__all__ = ["checkpoint"]
