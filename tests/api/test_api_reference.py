"""The site's API reference (docs/_ext/lucid_api.py, made when the site is built) has an entry for
every public name of lucid, each with its docstring's summary, functions and methods with their
signatures, ops with what the registry says of them (public: in a module's __all__, or not
starting with "_" in lucid itself and on Tensor). Plain Python: Sphinx is not needed here; CI's
docs step builds the site with warnings as errors."""
import importlib
import importlib.util
import inspect
import types

import pytest

import lucid
from support.paths import ROOT


def load_reference():
    spec = importlib.util.spec_from_file_location("lucid_api", ROOT / "docs" / "_ext" / "lucid_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


api = load_reference()


@pytest.fixture(scope="module")
def documented():
    """{qualified name: Entry} of every entry the page shows."""
    return {e.qualname: e for rows in api.entries().values() for e in rows}


def public_names():
    """(qualified name as the page writes it, object) of every public name."""
    out = []
    api.import_all()
    for modname in api.MODULES:
        module = importlib.import_module(modname)
        for name in api.public_names(module):
            out.append((f"{modname}.{name}", getattr(module, name)))
    for name in api.tensor_public_names():
        out.append((f"lucid.Tensor.{name}", inspect.getattr_static(lucid.Tensor, name)))
    return out


def test_the_lists_of_public_names_are_complete():
    # the names the page must hold include what users reach first (and the checker sees them)
    quals = {q for q, _ in public_names()}
    for q in ("lucid.add", "lucid.Tensor", "lucid.float32", "lucid.no_grad", "lucid.max",
              "lucid.autograd.Function", "lucid.autograd.forward_ad.make_dual",
              "lucid.autograd.graph.saved_tensors_hooks", "lucid.autograd.functional.hessian",
              "lucid.func.jacrev", "lucid.linalg.solve", "lucid.utils.checkpoint.checkpoint",
              "lucid.utils.cpp_extension.load_inline", "lucid.testing.opcheck",
              "lucid.Tensor.backward", "lucid.Tensor.grad", "lucid.Tensor.shape", "lucid.Tensor.T",
              "lucid.Tensor.add_"):
        assert q in quals, q
    assert len([q for q in quals if q.startswith("lucid.Tensor.")]) >= 150


def test_every_public_name_has_an_entry(documented):
    missing = [q for q, _ in public_names() if q not in documented and
               not isinstance(_, types.ModuleType)]
    assert not missing, f"the API reference lacks {missing}"


def test_every_entry_has_a_summary(documented):
    bare = [q for q, e in documented.items() if not e.summary]
    assert not bare, f"no docstring (or, for a value, no comment above it): {bare}"


def test_every_function_and_method_shows_its_signature(documented):
    no_signature = [q for q, e in documented.items()
                    if e.kind in ("function", "method") and not e.sig.startswith("(")]
    assert not no_signature, no_signature


def test_signatures_come_from_the_stubs_and_ops_say_their_family(documented):
    add = documented["lucid.add"]
    assert "Tensor" in add.sig, add.sig                   # the stub's annotations, not inspect's
    assert "batching family pointwise" in add.notes, add.notes
    assert "dtypes" in documented["lucid.Tensor.exp"].notes
    assert documented["lucid.autograd.Function"].kind == "class"


def test_the_checks_see_a_missing_docstring_and_an_embedded_signature():
    def undocumented(x):
        return x

    assert api.describe(undocumented) == ""

    class Fake:
        __doc__ = "add(x, y) -> Tensor\n\nx + y, broadcasting."

    def fake(x, y):
        pass
    fake.__doc__ = "add(Tensor a, b) -> Tensor\n\nx + y."
    assert api.prose(Fake()) == "x + y, broadcasting."
    assert api.runtime_signature(Fake()) == "(x, y) -> Tensor"   # inspect.signature fails on it
    assert api.first_paragraph(api.prose(fake)) == "x + y."


def test_the_reference_text_is_shown_literally():
    assert api._escaped("a_b `c` *d* |e| <f>") == r"a\_b \`c\` \*d\* \|e\| \<f\>"


@pytest.mark.parametrize("module", [lucid.func, lucid.autograd.functional],
                         ids=["lucid.func", "lucid.autograd.functional"])
def test_dir_and_star_import_show_only_the_public_names(module):
    assert dir(module) == sorted(module.__all__)
    assert all(not name.startswith("_") for name in module.__all__)
    namespace = {}
    exec(f"from {module.__name__} import *", namespace)
    assert sorted(n for n in namespace if n != "__builtins__") == sorted(module.__all__)
