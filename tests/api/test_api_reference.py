"""docs/api.md names every public name of lucid, each public name has a docstring, and the page
is what docs/gen_api.py writes today (public: in a module's __all__, or not starting with "_" in
lucid itself and on Tensor)."""
import importlib
import importlib.util
import inspect
import re
import types

import pytest

import lucid
from support.paths import ROOT

PAGE_PATH = ROOT / "docs" / "api.md"
REGENERATE = "regenerate it: python docs/gen_api.py > docs/api.md"


def load_generator():
    spec = importlib.util.spec_from_file_location("gen_api", ROOT / "docs" / "gen_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = load_generator()


def public_entries():
    """(qualified name as the page writes it, object, its module or None, owner class or None)."""
    out = []
    gen.import_all()
    for modname in gen.MODULES:
        module = importlib.import_module(modname)
        for name in gen.public_names(module):
            out.append((f"{modname}.{name}", getattr(module, name), module, name, None))
    for name in gen.tensor_public_names():
        out.append((f"Tensor.{name}", inspect.getattr_static(lucid.Tensor, name), None, name,
                    lucid.Tensor))
    return out


def missing_from(page, qualnames):
    """The names with no entry on the page: an entry is `name` or `name(...)` in backticks."""
    return [q for q in qualnames if not re.search(r"`" + re.escape(q) + r"[(`]", page)]


def without_docstring(entries):
    return [qual for qual, obj, module, name, owner in entries
            if not gen.describe(obj, module, name)]


def test_the_lists_of_public_names_are_complete():
    # the names the page must hold include what users reach first (and the checker sees them)
    quals = {q for q, *_ in public_entries()}
    for q in ("lucid.add", "lucid.Tensor", "lucid.float32", "lucid.no_grad", "lucid.max",
              "lucid.autograd.Function", "lucid.autograd.forward_ad.make_dual",
              "lucid.autograd.graph.saved_tensors_hooks", "lucid.autograd.functional.hessian",
              "lucid.func.jacrev", "lucid.linalg.solve", "lucid.utils.checkpoint.checkpoint",
              "lucid.utils.cpp_extension.load_inline", "lucid.testing.opcheck",
              "Tensor.backward", "Tensor.grad", "Tensor.shape", "Tensor.T", "Tensor.add_"):
        assert q in quals, q
    assert len([q for q in quals if q.startswith("Tensor.")]) >= 150


def test_every_public_name_is_on_the_page():
    page = PAGE_PATH.read_text()
    missing = missing_from(page, [q for q, *_ in public_entries()])
    assert not missing, f"docs/api.md lacks {missing}; {REGENERATE}"


def test_every_public_name_has_a_docstring():
    missing = without_docstring(public_entries())
    assert not missing, f"no docstring (or, for a value, no comment above it): {missing}"


def test_every_function_and_method_shows_its_signature():
    no_signature = [qual for qual, obj, *_ in public_entries()
                    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType,
                                        types.MethodDescriptorType))
                    and not gen.signature(obj, drop_self=True).startswith("(")]
    assert not no_signature, no_signature


def test_the_page_is_up_to_date():
    assert gen.render() == PAGE_PATH.read_text(), f"docs/api.md is out of date; {REGENERATE}"


def test_the_checks_catch_a_missing_entry_and_a_missing_docstring():
    page = "- `lucid.add(x, y)` — x + y.\n- `lucid.float32` — a dtype.\n"
    assert missing_from(page, ["lucid.add", "lucid.float32", "lucid.sub", "lucid.ad"]) == \
        ["lucid.sub", "lucid.ad"]

    def undocumented(x):
        return x

    def documented(x):
        """Twice x."""
        return 2 * x

    entries = [("m.undocumented", undocumented, None, "undocumented", None),
               ("m.documented", documented, None, "documented", None)]
    assert without_docstring(entries) == ["m.undocumented"]


def test_an_embedded_signature_line_gives_the_signature_not_the_prose():
    class Fake:
        __doc__ = "add(x, y) -> Tensor\n\nx + y, broadcasting."

    def fake(x, y):
        pass
    fake.__doc__ = "add(Tensor a, b) -> Tensor\n\nx + y."
    assert gen.prose(Fake()) == "x + y, broadcasting."
    assert gen.signature(Fake()) == "(x, y) -> Tensor"       # inspect.signature fails on it
    assert gen.first_paragraph(gen.prose(fake)) == "x + y."


@pytest.mark.parametrize("module", [lucid.func, lucid.autograd.functional],
                         ids=["lucid.func", "lucid.autograd.functional"])
def test_dir_and_star_import_show_only_the_public_names(module):
    assert dir(module) == sorted(module.__all__)
    assert all(not name.startswith("_") for name in module.__all__)
    namespace = {}
    exec(f"from {module.__name__} import *", namespace)
    assert sorted(n for n in namespace if n != "__builtins__") == sorted(module.__all__)
