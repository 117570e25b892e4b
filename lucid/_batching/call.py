"""One call of an op under vmap, its arguments by parameter name, and running it physically."""
import inspect

from .. import _core
from .batched import BatchedTensor
from .levels import run

Tensor = _core.Tensor
_PARAMS = {}                               # op function -> (positional names, all names, defaults)
_SPELLINGS = {"axis": "dim", "keepdims": "keepdim"}   # Note [Op keywords]


def params(f):
    """(names of f's positional parameters, names of all its parameters, {name: default})."""
    known = _PARAMS.get(f)
    if known is None:
        try:
            ps = list(inspect.signature(f).parameters.values())
        except (TypeError, ValueError):
            ps = []
        positional = tuple(p.name for p in ps if p.kind in (p.POSITIONAL_ONLY,
                                                              p.POSITIONAL_OR_KEYWORD))
        defaults = {p.name: p.default for p in ps if p.default is not p.empty}
        known = _PARAMS[f] = (positional, tuple(p.name for p in ps), defaults)
    return known


def tensor_like(x):
    return type(x) is BatchedTensor or isinstance(x, Tensor)


class Call:
    """f's arguments, readable and replaceable by parameter name."""
    __slots__ = ("f", "args", "kwargs", "positional", "defaults")

    def __init__(self, f, args, kwargs):
        self.f = f
        self.args = list(args)
        self.positional, names, self.defaults = params(f)
        self.kwargs = {}
        for k, v in (kwargs or {}).items():
            k = _SPELLINGS.get(k, k) if _SPELLINGS.get(k) in names else k
            self.kwargs[k] = v

    def _index(self, name):
        try:
            i = self.positional.index(name)
        except ValueError:
            return -1
        return i if i < len(self.args) else -1

    def has(self, name):
        return self._index(name) >= 0 or name in self.kwargs

    def get(self, name, default=None):
        i = self._index(name)
        if i >= 0:
            return self.args[i]
        return self.kwargs.get(name, default)

    def get_or_default(self, name):
        """The argument passed for name, else the op's default for it (None when it has none)."""
        i = self._index(name)
        if i >= 0:
            return self.args[i]
        if name in self.kwargs:
            return self.kwargs[name]
        return self.defaults.get(name)

    def set(self, name, value):
        i = self._index(name)
        if i >= 0:
            self.args[i] = value
        else:
            self.kwargs[name] = value

    def first(self):
        return self.args[0] if self.args else self.kwargs.get(self.positional[0])

    def set_first(self, value):
        if self.args:
            self.args[0] = value
        else:
            self.kwargs[self.positional[0]] = value

    def tensor_slots(self):
        """(position or keyword, value) of every tensor argument, batched or not."""
        out = [(i, a) for i, a in enumerate(self.args) if tensor_like(a)]
        out += [(k, v) for k, v in self.kwargs.items() if tensor_like(v)]
        return out

    def put(self, slot, value):
        if isinstance(slot, int):
            self.args[slot] = value
        else:
            self.kwargs[slot] = value

    def run(self):
        """The op on the arguments as they are now (physical tensors), dispatch off."""
        return run(self.f, self.args, self.kwargs)

    @property
    def name(self):
        return op_name(self.f)


_NAMES = {}


def op_name(f):
    """lucid's public name of op function f ('exp', 'linalg.det', 'Tensor.__getitem__')."""
    name = _NAMES.get(f)
    if name is None:
        for record in _core.registered_ops():
            _NAMES[record.function] = record.name
        name = _NAMES.get(f) or getattr(f, "__qualname__", None) or repr(f)
    return name
