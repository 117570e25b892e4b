"""Write the API reference (docs/api.md) from lucid's docstrings: `python docs/gen_api.py > docs/api.md`.

Every public name gets its signature and the first paragraph of its docstring. A signature comes
from inspect.signature where that works, else from the first docstring line Cython's
embedsignature writes. Public: the names of a module's __all__, or, for lucid itself and Tensor,
every name not starting with "_". tests/api/test_api_reference.py checks the page against this.
"""
import importlib
import inspect
import pathlib
import re
import sys
import types

ROOT = pathlib.Path(__file__).resolve().parent.parent

# The modules documented, in the order of the page's sections
MODULES = [
    "lucid", "lucid.autograd", "lucid.autograd.forward_ad", "lucid.autograd.graph",
    "lucid.autograd.functional", "lucid.autograd.profiler", "lucid.func", "lucid.linalg", "lucid.utils.checkpoint",
    "lucid.utils.cpp_extension", "lucid.testing",
]

# The operators Tensor defines, and the Python expression each one spells (x is the tensor).
OPERATORS = [
    ("__add__", "x + y", "lucid.add"), ("__radd__", "y + x", "lucid.add"),
    ("__sub__", "x - y", "lucid.sub"), ("__rsub__", "y - x", "lucid.sub"),
    ("__mul__", "x * y", "lucid.mul"), ("__rmul__", "y * x", "lucid.mul"),
    ("__truediv__", "x / y", "lucid.div"), ("__rtruediv__", "y / x", "lucid.div"),
    ("__pow__", "x ** y", "lucid.pow"), ("__rpow__", "y ** x", "lucid.pow"),
    ("__matmul__", "x @ y", "lucid.matmul"), ("__rmatmul__", "y @ x", "lucid.matmul"),
    ("__neg__", "-x", "lucid.neg"), ("__pos__", "+x", "x itself"),
    ("__abs__", "abs(x)", "lucid.abs"),
    ("__eq__", "x == y", "lucid.eq"), ("__ne__", "x != y", "lucid.ne"),
    ("__lt__", "x < y", "lucid.lt"), ("__le__", "x <= y", "lucid.le"),
    ("__gt__", "x > y", "lucid.gt"), ("__ge__", "x >= y", "lucid.ge"),
    ("__iadd__", "x += y", "in place, Tensor.add_"), ("__isub__", "x -= y", "in place, Tensor.sub_"),
    ("__imul__", "x *= y", "in place, Tensor.mul_"),
    ("__itruediv__", "x /= y", "in place, Tensor.div_"),
    ("__getitem__", "x[index]", "basic indexing gives a view, advanced indexing a copy"),
    ("__setitem__", "x[index] = v", "in place"),
    ("__len__", "len(x)", "the size of the first dim"),
    ("__iter__", "iter(x)", "x[0], x[1], ... along the first dim"),
    ("__bool__", "bool(x)", "one-element tensors only"),
    ("__float__", "float(x)", "one-element tensors only"),
    ("__int__", "int(x)", "one-element tensors only"),
    ("__index__", "operator.index(x)", "one-element integer tensors only"),
    ("__format__", 'f"{x:.2f}"', "0-d tensors format like their number"),
    ("__array__", "numpy.asarray(x)", "the ndarray behind x (refused when x requires grad)"),
    ("__array_ufunc__", "numpy.exp(x)", "NumPy ufuncs on tensors run as lucid ops"),
    ("__dlpack__", "numpy.from_dlpack(x)", "zero-copy export (CPU)"),
    ("__copy__", "copy.copy(x)", "a new leaf sharing x's memory (leaves only)"),
    ("__deepcopy__", "copy.deepcopy(x)", "a new leaf with its own memory and .grad (leaves only)"),
    ("__reduce_ex__", "pickle.dumps(x)", "leaves only: values, requires_grad and .grad"),
]

EMBEDDED = re.compile(r"^[\w.]+(\(.*\))(\s*->\s*\S.*)?$")   # what embedsignature writes first


def import_all():
    """Import every documented module first: importing a submodule adds it to its package, so
    the names of lucid (lucid.utils among them) do not depend on what ran before."""
    return [importlib.import_module(m) for m in MODULES]


def public_names(module):
    """The module's __all__, else its names not starting with "_" (sorted)."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = sorted(n for n in dir(module) if not n.startswith("_"))
    return list(names)


def tensor_public_names():
    """Tensor's attributes not starting with "_" (sorted)."""
    import lucid
    return sorted(n for n in dir(lucid.Tensor) if not n.startswith("_"))


def prose(obj):
    """The docstring without the signature line embedsignature puts first ("" when none)."""
    doc = inspect.getdoc(obj) or ""
    if isinstance(obj, type) and doc == inspect.getdoc(object):
        return ""
    lines = doc.strip().splitlines()
    if lines and EMBEDDED.match(lines[0].strip()):
        lines = lines[1:]
    return "\n".join(lines).strip()


def first_paragraph(text):
    """The text up to its first blank line, on one line (a closing "::" becomes ".")."""
    line = " ".join(text.split("\n\n")[0].split())
    return line[:-2] + "." if line.endswith("::") else line


def assigned_comment(module, name):
    """The comment lines just above `name = ...` in the module's source."""
    try:
        lines = inspect.getsource(module).splitlines()
    except (OSError, TypeError):
        return ""
    for i, line in enumerate(lines):
        if re.match(re.escape(name) + r"\s*=", line):
            above = []
            j = i - 1
            while j >= 0 and lines[j].startswith("#"):
                above.insert(0, lines[j].lstrip("#").strip())
                j -= 1
            return " ".join(above)
    return ""


def is_function_method(obj):
    """Is obj one of lucid's functions installed as a Tensor method (tensor/methods.pxi)?"""
    return type(obj).__name__ == "function_method"


def describe(obj, module=None, name=None):
    """One line for obj: its docstring's first paragraph, or for data what it is."""
    import numpy
    if is_function_method(obj):
        return first_paragraph(prose(obj.__func__))
    if isinstance(obj, numpy.dtype):
        return f"The dtype {obj} (NumPy's, which lucid tensors use as theirs)."
    if isinstance(obj, types.ModuleType):
        return first_paragraph(prose(obj))
    if callable(obj) or isinstance(obj, (property, types.GetSetDescriptorType,
                                         types.MemberDescriptorType)):
        return first_paragraph(prose(obj))
    return assigned_comment(module, name) if module is not None else ""


def signature(obj, drop_self=False):
    """"(params) -> ret" for obj: inspect.signature, else embedsignature's line, else ""."""
    function_method = is_function_method(obj)
    obj = obj.__func__ if function_method else obj
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        sig = None
    if sig is not None:
        params = list(sig.parameters.values())
        if drop_self and params and (function_method or params[0].name == "self"):
            sig = sig.replace(parameters=params[1:])
        return str(sig)
    first = (getattr(obj, "__doc__", None) or "").strip().splitlines()[:1]
    m = EMBEDDED.match(first[0].strip()) if first else None
    if not m:
        return ""
    params, ret = m.group(1), (m.group(2) or "")
    if drop_self:
        params = re.sub(r"^\(self(, )?", "(", params)
    return params + ret


def is_data(obj):
    return not callable(obj) and not isinstance(obj, (types.ModuleType, property))


def entry(qualname, sig, line):
    """One list item: the name with its signature, then its line."""
    return f"- `{qualname}{sig}` — {line}" if line else f"- `{qualname}{sig}`"


def class_entry(cls, qualname):
    """`class qualname(constructor params)`, naming a public base class that is not object."""
    bases = [b.__name__ for b in cls.__bases__
             if b is not object and not b.__name__.startswith("_") and b.__name__ != cls.__name__]
    sig = "" if issubclass(cls, BaseException) or not _own_init(cls) else signature(cls)
    base = f" (subclass of {', '.join(bases)})" if bases else ""
    return f"- class `{qualname}{sig}`{base} — {describe(cls)}"


def _own_init(cls):
    """True when a Python class defines the constructor it is called with."""
    return any("__init__" in vars(k) and isinstance(vars(k)["__init__"], types.FunctionType)
               for k in cls.__mro__ if k is not object)


def class_members(cls):
    """The public methods and attributes a class defines itself, in definition order."""
    members = []
    for name, raw in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(raw, (property, types.GetSetDescriptorType, types.MemberDescriptorType,
                            classmethod, staticmethod)) or callable(raw):
            members.append((name, raw))
    return members


def member_entry(cls, name, raw):
    prefix = f"{cls.__name__}.{name}"
    if isinstance(raw, (property, types.GetSetDescriptorType, types.MemberDescriptorType)):
        return entry(prefix, "", describe(raw))
    if isinstance(raw, (classmethod, staticmethod)):
        attr = getattr(cls, name)
        return entry(prefix, signature(attr), describe(attr))
    return entry(prefix, signature(raw, drop_self=True), describe(raw))


def class_section(cls, qualname):
    return [class_entry(cls, qualname),
            *("  " + member_entry(cls, name, raw) for name, raw in class_members(cls))]


def tensor_section():
    import lucid
    T = lucid.Tensor
    props, methods = [], []
    for name in tensor_public_names():
        raw = inspect.getattr_static(T, name)
        if isinstance(raw, (property, types.GetSetDescriptorType, types.MemberDescriptorType)):
            props.append(entry(f"Tensor.{name}", "", describe(raw)))
        else:
            methods.append(entry(f"Tensor.{name}", signature(raw, drop_self=True), describe(raw)))
    ops = [f"| `{expr}` | {meaning} |" for dunder, expr, meaning in OPERATORS
           if hasattr(T, dunder)]
    return (["### Tensor", "", class_entry(T, "lucid.Tensor"), "", "#### Properties", "", *props, "",
             "#### Methods", "", *methods, "", "#### Operators", "",
             "| expression | meaning |", "| --- | --- |", *ops, ""])


def module_section(modname):
    import lucid
    module = importlib.import_module(modname)
    out = [f"## {modname}", "", first_paragraph(prose(module)), ""]
    classes, functions, data, submodules = [], [], [], []
    for name in public_names(module):
        obj = getattr(module, name)
        qual = f"{modname}.{name}"
        if modname == "lucid" and obj is lucid.Tensor:
            continue
        if isinstance(obj, types.ModuleType):
            section = f" (section `{obj.__name__}`)" if obj.__name__ in MODULES else ""
            submodules.append(entry(qual, "", describe(obj) + section))
        elif isinstance(obj, type):
            classes.extend(class_section(obj, qual))
        elif is_data(obj):
            data.append(entry(qual, "", describe(obj, module, name)))
        else:
            functions.append(entry(qual, signature(obj), describe(obj)))
    for title, rows in (("Classes", classes), ("Functions", functions), ("Values", data),
                        ("Submodules", submodules)):
        if rows:
            out += [f"### {title}", "", *rows, ""]
    if modname == "lucid":
        out += tensor_section()
    return out


def render():
    """The whole page as a string."""
    import_all()
    out = ["# API reference", "",
           "Every public name of lucid with its signature and the first line of its docstring "
           "(`help(name)` shows the whole docstring). This page is generated from the "
           "docstrings: `python docs/gen_api.py > docs/api.md` rewrites it, and "
           "`tests/api/test_api_reference.py` fails when it misses a public name or is out of date.",
           "", "Types: `lucid/_core.pyi` and `lucid/_linalg.pyi` type the compiled modules, and lucid "
           "ships `py.typed`, so mypy and IDEs check calls against it.", "",
           "Sections: " + ", ".join(f"`{m}`" for m in MODULES) + ".", ""]
    for modname in MODULES:
        out += module_section(modname)
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.stdout.write(render())
