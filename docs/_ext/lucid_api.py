"""The API reference of lucid's documentation site, made when the site is built: a Sphinx
directive, ``lucid-api``, that lists every public name with its signature and the first
paragraph of its docstring, as Python-domain entries other pages link to.

Signatures come from the stubs (``lucid/*.pyi``: what mypy checks calls against, so the page
and the type checker agree) where a stub has the name, else from ``inspect.signature``, else
from the line Cython's embedsignature writes first. Ops name what the op registry says of them
(their batching family and dtypes). A literal such as ``lucid.add`` or ``Tensor.backward`` in
any page becomes a link to its entry (``link_literals``).

``entries()`` is plain Python (no Sphinx): tests/api/test_api_reference.py checks with it that
every public name is documented and has a docstring.
"""
import ast
import importlib
import inspect
import pathlib
import re
import types

ROOT = pathlib.Path(__file__).resolve().parents[2]

# The modules documented, in the order of the page's sections
MODULES = [
    "lucid", "lucid.autograd", "lucid.autograd.forward_ad", "lucid.autograd.graph",
    "lucid.autograd.functional", "lucid.autograd.profiler", "lucid.func", "lucid.linalg",
    "lucid.utils.checkpoint", "lucid.utils.cpp_extension", "lucid.testing",
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
STUBS = ("_core.pyi", "_ops.pyi", "_linalg.pyi", "_creation.pyi", "_random.pyi")


class Entry:
    """One documented name: its kind (function, class, method, property, data, module), the
    qualified name, its signature ("" for none) and its summary line."""

    def __init__(self, kind, qualname, sig, summary, notes=""):
        self.kind, self.qualname, self.sig, self.summary, self.notes = (kind, qualname, sig,
                                                                        summary, notes)

    def __repr__(self):
        return f"Entry({self.kind}, {self.qualname}{self.sig})"


# -- where a signature comes from ---------------------------------------------------------------

def _stub_signatures():
    """{name: "(params) -> ret"} of the stubs' module-level functions, and {"Tensor.name": ...}
    of their classes' methods (without self); an overloaded name keeps its first signature."""
    found = {}

    def add(key, fn, drop_self):
        if key in found:
            return
        args = fn.args
        if drop_self and args.posonlyargs:
            args.posonlyargs = args.posonlyargs[1:]
        elif drop_self and args.args:
            args.args = args.args[1:]
        ret = f" -> {ast.unparse(fn.returns)}" if fn.returns is not None else ""
        found[key] = f"({ast.unparse(args)}){ret}".replace("builtins.", "")

    for stub in STUBS:
        path = ROOT / "lucid" / stub
        if not path.is_file():
            continue
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef):
                add(node.name, node, False)
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and not any(
                            isinstance(d, ast.Name) and d.id in ("property", "staticmethod",
                                                                 "classmethod")
                            for d in item.decorator_list):
                        add(f"{node.name}.{item.name}", item, True)
    return found


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


def runtime_signature(obj, drop_self=False):
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


# -- the entries --------------------------------------------------------------------------------

class _Reference:
    """What the page says of lucid, made once per build."""

    def __init__(self):
        import lucid
        import_all()
        self.stubs = _stub_signatures()
        self.ops = {id(op.function): op for op in lucid._core.registered_ops()}

    def signature(self, obj, stub_key, drop_self=False):
        return self.stubs.get(stub_key) or runtime_signature(obj, drop_self)

    def op_notes(self, obj):
        """What the op registry says of obj when it is a registered op."""
        op = self.ops.get(id(obj.__func__ if is_function_method(obj) else obj))
        if op is None:
            return ""
        return f"op {op.name}: batching family {op.batching}, dtypes {op.dtypes}"

    def class_entries(self, cls, qualname):
        bases = [b.__name__ for b in cls.__bases__
                 if b is not object and not b.__name__.startswith("_")
                 and b.__name__ != cls.__name__]
        sig = ("" if issubclass(cls, BaseException) or not _own_init(cls)
               else runtime_signature(cls))
        notes = f"subclass of {', '.join(bases)}" if bases else ""
        out = [Entry("class", qualname, sig, describe(cls), notes)]
        for name, raw in class_members(cls):
            member = f"{qualname}.{name}"
            if isinstance(raw, (property, types.GetSetDescriptorType, types.MemberDescriptorType)):
                out.append(Entry("property", member, "", describe(raw)))
            elif isinstance(raw, (classmethod, staticmethod)):
                attr = getattr(cls, name)
                out.append(Entry("method", member, runtime_signature(attr), describe(attr)))
            else:
                out.append(Entry("method", member, runtime_signature(raw, drop_self=True),
                                 describe(raw)))
        return out

    def tensor_entries(self):
        import lucid
        T = lucid.Tensor
        out = [Entry("class", "lucid.Tensor", "", describe(T))]
        for name in tensor_public_names():
            raw = inspect.getattr_static(T, name)
            qual = f"lucid.Tensor.{name}"
            if isinstance(raw, (property, types.GetSetDescriptorType, types.MemberDescriptorType)):
                out.append(Entry("property", qual, "", describe(raw)))
            else:
                out.append(Entry("method", qual,
                                 self.signature(raw, f"Tensor.{name}", drop_self=True),
                                 describe(raw), self.op_notes(raw)))
        return out

    def module_entries(self, modname):
        import lucid
        module = importlib.import_module(modname)
        out = [Entry("module", modname, "", first_paragraph(prose(module)))]
        for name in public_names(module):
            obj = getattr(module, name)
            qual = f"{modname}.{name}"
            if modname == "lucid" and obj is lucid.Tensor:
                continue
            if isinstance(obj, types.ModuleType):
                out.append(Entry("submodule", qual, "", describe(obj)))
            elif isinstance(obj, type):
                out.extend(self.class_entries(obj, qual))
            elif is_data(obj):
                out.append(Entry("data", qual, "", describe(obj, module, name)))
            else:
                stub_key = getattr(obj, "__name__", name)
                out.append(Entry("function", qual, self.signature(obj, stub_key),
                                 describe(obj), self.op_notes(obj)))
        if modname == "lucid":
            out.extend(self.tensor_entries())
        return out


def entries():
    """{module name: [Entry, ...]} for every documented module, Tensor's under lucid."""
    ref = _Reference()
    return {m: ref.module_entries(m) for m in MODULES}


def operator_rows():
    """(expression, meaning) of each operator Tensor defines."""
    import lucid
    return [(expr, meaning) for dunder, expr, meaning in OPERATORS if hasattr(lucid.Tensor, dunder)]


# -- the Sphinx side ----------------------------------------------------------------------------

def _escaped(text):
    """text as reST shows it literally (no markup, roles or references)."""
    return re.sub(r"([\\`*|_<>\[\]])", r"\\\1", text)


DIRECTIVE_OF = {"function": "py:function", "method": "py:method", "class": "py:class",
                "property": "py:property", "data": "py:data"}
TITLES = {"class": "Classes", "function": "Functions", "data": "Values", "submodule": "Submodules"}


def _rst_lines(modname, rows):
    """The reST of one module's section."""
    head, *rows = rows
    out = [modname, "-" * len(modname), "", f".. py:module:: {modname}", "",
           _escaped(head.summary), ""]
    groups = {}
    for row in rows:
        top = "class" if row.kind in ("method", "property") else row.kind
        if row.qualname.startswith("lucid.Tensor"):
            top = "tensor"
        groups.setdefault(top, []).append(row)
    for kind in ("class", "function", "data", "submodule", "tensor"):
        if kind not in groups:
            continue
        title = "Tensor" if kind == "tensor" else TITLES[kind]
        out += [title, "~" * len(title), ""]
        for row in groups[kind]:
            if row.kind == "submodule":
                out += [f"- ``{row.qualname}`` — {_escaped(row.summary)}", ""]
                continue
            indent = "   " if row.kind in ("method", "property") else ""
            short = row.qualname.rpartition(".")[2]
            if row.qualname == "lucid.Tensor":
                short = "Tensor"
            out += [f"{indent}.. {DIRECTIVE_OF[row.kind]}:: {short}{_one_line(row.sig)}", ""]
            for text in (row.summary, row.notes):
                if text:
                    out += [f"{indent}   {_escaped(text)}", ""]
        if kind == "tensor":
            out += ["Operators", "^^^^^^^^^", "", ".. list-table::", "   :header-rows: 1", "",
                    "   * - expression", "     - meaning"]
            for expr, meaning in operator_rows():
                out += [f"   * - ``{expr}``", f"     - {_escaped(meaning)}"]
            out += [""]
    return out


def _one_line(sig):
    return " ".join(sig.split())


def setup(app):
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx import addnodes
    from sphinx.util.docutils import SphinxDirective
    from sphinx.util.nodes import nested_parse_with_titles

    class LucidAPI(SphinxDirective):
        """Every public name of lucid, a section per module."""

        def run(self):
            lines = []
            for modname, rows in entries().items():
                lines += _rst_lines(modname, rows)
            node = nodes.section()
            node.document = self.state.document
            nested_parse_with_titles(self.state, StringList(lines, source="lucid-api"), node)
            return node.children

    PUBLIC = re.compile(r"^(lucid(?:\.\w+)+|Tensor\.\w+)(?:\(.*\))?$")

    def link_literals(app, doctree):
        """Make each inline literal that names a public object (``lucid.add``, ``Tensor.grad``,
        ``lucid.func.vmap(f)``) a link to its entry; names with no entry stay text."""
        for literal in list(doctree.findall(nodes.literal)):
            if isinstance(literal.parent, (addnodes.pending_xref, nodes.reference)):
                continue
            m = PUBLIC.match(literal.astext())
            if not m:
                continue
            target = m.group(1)
            if target.startswith("Tensor."):
                target = "lucid." + target
            ref = addnodes.pending_xref("", refdomain="py", reftype="obj", reftarget=target,
                                        refexplicit=True, refwarn=False)
            literal.replace_self(ref)
            ref += literal

    app.add_directive("lucid-api", LucidAPI)
    app.connect("doctree-read", link_literals)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
