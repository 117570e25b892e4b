"""The tests run where PyTorch is not installed (CI's README step has none): no test or benchmark
module imports torch outside a try/except ImportError or a function body, so a missing torch
skips the comparisons with a reason instead of failing collection."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
OPTIONAL = {"torch"}


def _unguarded_imports(tree):
    """Module-level import statements of an optional package not inside a try that catches ImportError."""
    found = []

    def visit(body, guarded):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(node, ast.Try):
                catches = any(h.type is None or "ImportError" in ast.unparse(h.type)
                              or "ModuleNotFoundError" in ast.unparse(h.type) for h in node.handlers)
                visit(node.body, guarded or catches)
                for h in node.handlers:
                    visit(h.body, guarded)
                visit(node.orelse + node.finalbody, guarded)
            elif isinstance(node, (ast.If, ast.With)):
                visit(node.body, guarded)
                visit(getattr(node, "orelse", []), guarded)
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and not guarded:
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if any(n.split(".")[0] in OPTIONAL for n in names):
                    found.append(node.lineno)

    visit(tree.body, False)
    return found


def test_no_module_imports_torch_unguarded():
    bad = []
    for folder in ("tests", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            lines = _unguarded_imports(ast.parse(path.read_text(), str(path)))
            bad += [f"{path.relative_to(ROOT)}:{n}" for n in lines]
    assert not bad, "torch imported where a missing torch fails collection: " + ", ".join(bad)


def test_the_check_sees_an_unguarded_import():
    assert _unguarded_imports(ast.parse("import torch\n")) == [1]
    assert _unguarded_imports(ast.parse("from torch import nn\n")) == [1]
    assert _unguarded_imports(ast.parse("try:\n    import torch\nexcept ImportError:\n    torch = None\n")) == []
    assert _unguarded_imports(ast.parse("def f():\n    import torch\n")) == []
