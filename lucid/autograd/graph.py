"""The backward graph: its node base, saved-tensor hooks, and hooks on nodes.

- `Node`: the base of every backward node (`t.grad_fn`); `node.register_prehook(fn)`,
  `node.register_hook(fn)`, `node.metadata`, `node.name()`, `node.next_functions`.
- `saved_tensors_hooks(pack_hook, unpack_hook)`: every tensor saved for backward while the
  block is active is stored as `pack_hook(tensor)` and given back as `unpack_hook(packed)`.
- `disable_saved_tensors_hooks(message)`: entering `saved_tensors_hooks` raises
  `RuntimeError(message)` while the block is active.
"""
from .. import _core

__all__ = ["Node", "saved_tensors_hooks", "disable_saved_tensors_hooks"]

Node = _core.Node


class saved_tensors_hooks:
    """Pack what backward saves with pack_hook(tensor) -> object and get it back with
    unpack_hook(object) -> Tensor (same shape and dtype). Per thread; the innermost pair
    applies. pack_hook receives an alias of the saved tensor without history."""

    def __init__(self, pack_hook, unpack_hook):
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("saved_tensors_hooks takes two callables: pack_hook(tensor) -> "
                            "object and unpack_hook(object) -> Tensor")
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        _core._push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)
        return self

    def __exit__(self, *exc):
        _core._pop_saved_tensors_hooks()
        return False


class disable_saved_tensors_hooks:
    """While active, entering saved_tensors_hooks raises RuntimeError(error_message)."""

    def __init__(self, error_message):
        self.error_message = str(error_message)

    def __enter__(self):
        _core._push_saved_hooks_disabled(self.error_message)
        return self

    def __exit__(self, *exc):
        _core._pop_saved_hooks_disabled()
        return False
