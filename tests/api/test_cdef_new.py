"""Objects of lucid's cdef classes made by `cls.__new__(cls)` from Python.

Each check runs in a child interpreter: a half-made object used to crash lucid (repro_02).
"""
import pytest

from support.child_process import run_child

_TENSOR_NEW_CHILD = r"""
import lucid
x = lucid.tensor([1.0, 2.0])
class Sub(lucid.Tensor):
    pass
class SubNew(lucid.Tensor):
    def __new__(cls):
        return super().__new__(cls)
attempts = {
    "Tensor.__new__(Tensor)": lambda: lucid.Tensor.__new__(lucid.Tensor),
    "Tensor.__new__ with args": lambda: lucid.Tensor.__new__(lucid.Tensor, [1.0], True),
    "type(x).__new__": lambda: type(x).__new__(type(x)),
    "object.__new__(Tensor)": lambda: object.__new__(lucid.Tensor),
    "Tensor()": lambda: lucid.Tensor(),
    "Sub.__new__(Sub)": lambda: Sub.__new__(Sub),
    "Sub()": lambda: Sub(),
    "SubNew()": lambda: SubNew(),
    "Tensor.__new__(Sub)": lambda: lucid.Tensor.__new__(Sub),
}
made = []
for name, make in attempts.items():
    try:
        t = make()
    except TypeError:
        continue
    made.append(name)
    for use in (lambda: t + 1, lambda: t.exp(), lambda: t.sum(), lambda: t.requires_grad_(),
                lambda: repr(t), lambda: t.shape):
        try:
            use()
        except Exception:
            pass
assert made == [], f"made a Tensor without data: {made}"
print("OK")
"""


def test_tensor_new_from_python_raises_typeerror():
    """Bug (repro_02): Tensor.__new__(Tensor) made a tensor without data, and using it (t + 1,
    t.exp(), t.sum(), requires_grad_()) segfaulted. Every route, subclasses included, must
    raise TypeError."""
    assert run_child(_TENSOR_NEW_CHILD).strip() == "OK"


_EXERCISE_CHILD = r"""
import gc, sys
import lucid
from lucid import _core
which = sys.argv[1]
x = lucid.tensor([1.0, 2.0], requires_grad=True)
y = x * 3
class Scale(lucid.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2
    @staticmethod
    def backward(ctx, g):
        return g * 2
z = Scale.apply(x)
handle = x.register_hook(lambda g: g)
reachable = {
    "Storage": lucid.Storage,
    "MulBackward": type((x * x).grad_fn),
    "MulScalarBackward": type(y.grad_fn),
    "SumBackward": type(y.sum().grad_fn),
    "AccumulateGrad": type(y.grad_fn.next_functions[0][0]),
    "Node": lucid.autograd.Node,
    "ScaleBackward": type(z.grad_fn),
    "PythonBackwardNode": lucid.autograd.PythonBackwardNode,
    "FunctionCtx": lucid.autograd.FunctionCtx,
    "RemovableHandle": type(handle),
    "NodeExtra": getattr(_core, "NodeExtra", None),
    "TensorExtra": getattr(_core, "TensorExtra", None),
    "SavedTensor": getattr(_core, "SavedTensor", None),
    "Traversal": getattr(_core, "Traversal", None),
}
cls = reachable[which]
if cls is None:
    print("ABSENT")
    sys.exit(0)
try:
    obj = cls.__new__(cls)
except TypeError:
    print("TYPEERROR")
    sys.exit(0)
args_pool = [(), (x,), (lambda *a: None,), (0,), (None,), ((x,),), (x, x), ("s",)]
skip = {"__setstate__", "__setstate_cython__", "__reduce_cython__", "__init_subclass__",
        "__subclasshook__", "__new__", "__init__", "__class__", "__getattribute__",
        "__setattr__", "__delattr__", "__dir__", "__format__", "__sizeof__",
        "__reduce__", "__reduce_ex__"}
for name in dir(obj):
    if name in skip or (name.startswith("__") and name not in ("__repr__", "__str__",
                                                              "__hash__", "__eq__")):
        continue
    try:
        attr = getattr(obj, name)
    except Exception:
        continue
    if callable(attr):
        for args in args_pool:
            try:
                attr(*args)
            except Exception:
                pass
for use in (repr, str, hash, bool):
    try:
        use(obj)
    except Exception:
        pass
del obj
gc.collect()
print("OK")
"""


@pytest.mark.parametrize("which", [
    "Storage", "MulBackward", "MulScalarBackward", "SumBackward", "AccumulateGrad", "Node",
    "ScaleBackward", "PythonBackwardNode", "FunctionCtx", "RemovableHandle", "NodeExtra",
    "TensorExtra", "SavedTensor", "Traversal",
])
def test_cdef_class_new_then_every_public_member(which):
    """Guard next to the Tensor.__new__ fix: every other cdef class a user can reach (types of
    grad_fn / next_functions, a Function's node, FunctionCtx, the hook handle, lucid._core's
    NodeExtra and SavedTensor), made by cls.__new__(cls), either refuses with TypeError or has
    public members that work or raise a clean Python exception: never a crash."""
    out = run_child(_EXERCISE_CHILD, args=(which,)).strip()
    assert out in ("OK", "TYPEERROR", "ABSENT")


_SETSTATE_CHILD = r"""
import sys
import lucid
from lucid import _core
which, state = sys.argv[1], eval(sys.argv[2])
x = lucid.tensor([1.0], requires_grad=True)
objects = {
    "RemovableHandle": lambda: x.register_hook(lambda g: g),
    "Storage": lambda: lucid.Storage.__new__(lucid.Storage),
    "NodeExtra": lambda: _core.NodeExtra.__new__(_core.NodeExtra),
    "TensorExtra": lambda: _core.TensorExtra.__new__(_core.TensorExtra),
}
obj = objects[which]()
try:
    obj.__setstate__(state)
except Exception:
    pass
print("OK")
"""


@pytest.mark.parametrize("which", ["RemovableHandle", "Storage", "NodeExtra", "TensorExtra"])
@pytest.mark.parametrize("state", ["()", "(None,)"])
def test_setstate_with_a_malformed_state_does_not_crash(which, state):
    """obj.__setstate__(()) on a hook handle (or a Storage / NodeExtra) must raise a Python
    exception, not read past the end of the tuple."""
    assert run_child(_SETSTATE_CHILD, args=(which, state)).strip() == "OK"
