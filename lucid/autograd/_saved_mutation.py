"""allow_mutation_on_saved_tensors: in-place changes of tensors saved for backward, allowed
(Note [Mutation of saved tensors] in lucid/graph/saved_hooks.pxi)."""
import weakref

from .. import _core
from .._grad_mode import no_grad

__all__ = ["allow_mutation_on_saved_tensors"]

_open = None                 # the open context (they do not nest)


class _Saved:
    """One tensor saved for backward in the context: an alias of it, and its copy once the
    memory was about to change."""
    __slots__ = ("alias", "copy", "context", "__weakref__")

    def __init__(self, alias, context):
        self.alias = alias
        self.copy = None
        self.context = context


class _AllowMutationOnSavedContext:
    """An open allow_mutation_on_saved_tensors block: what it saved, by storage."""

    def __init__(self):
        self._saved = {}     # storage -> WeakSet of _Saved (alive while their node keeps them)

    def _pack(self, alias):
        entry = _Saved(alias, self)
        self._saved.setdefault(_core._storage_of(alias), weakref.WeakSet()).add(entry)
        return entry

    def _before_write(self, storage):
        """storage is about to change in place: copy every value saved over it first."""
        entries = self._saved.pop(storage, None)
        if not entries:
            return
        with no_grad():
            for entry in entries:
                if entry.copy is None:
                    entry.copy = entry.alias.clone()

    def _clear(self):
        self._saved.clear()


def _unpack(entry):
    if _open is not entry.context:
        raise RuntimeError("Trying to backward outside of the 'allow_mutation_on_saved_tensors' "
                           "context in which the graph was originally recorded: run backward "
                           "inside the same `with` block")
    return entry.alias if entry.copy is None else entry.copy


class allow_mutation_on_saved_tensors:
    """While active, an in-place change of a tensor saved for backward is allowed: the saved
    value is copied just before the change, so backward sees the value at save time. Backward
    of what was recorded inside must run inside too; the blocks do not nest."""

    def __enter__(self):
        global _open
        if _open is not None:
            raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
        context = _AllowMutationOnSavedContext()

        def pack(alias):
            return context._pack(alias)
        pack._lucid_mutation_safe = True         # the saved value needs no version check
        _core._push_saved_tensors_hooks(pack, _unpack)
        _core._set_saved_mutation_callback(context._before_write)
        _open = self._context = context
        return context

    def __exit__(self, *exc):
        global _open
        _core._set_saved_mutation_callback(None)
        _core._pop_saved_tensors_hooks()
        self._context._clear()
        _open = None
        return False
