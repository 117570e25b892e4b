"""Every ```python block of README.md and of docs/*.md runs as written.

A block runs in a fresh namespace. A block that is a package's setup.py (it calls `setup(`) is
built for real: in a temporary folder holding the small native op it names, then imported and
called. A block is skipped, with the reason, only when it needs a module that is not installed
(a built native op, Cython for a setup.py).
"""
import ast
import importlib.util
import os
import re
import subprocess
import sys
import textwrap

import pytest

import lucid
from support.paths import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def blocks():
    for page in PAGES:
        for i, code in enumerate(BLOCK.findall(page.read_text(encoding="utf-8"))):
            yield pytest.param(code, id=f"{page.stem}-{i}")


def test_every_page_is_read():
    """The pages exist and the block pattern finds code in them (a renamed fence would not)."""
    assert (ROOT / "README.md") in PAGES and len(PAGES) >= 3, PAGES
    assert len(list(blocks())) >= 5


def missing_modules(code):
    """Top-level modules the block imports that cannot be found here."""
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return sorted(n for n in names if importlib.util.find_spec(n) is None)


def builds_native_code(code):
    """The block compiles a .pyx at run time (lucid.utils.cpp_extension): it needs Cython."""
    return "cpp_extension" in code


def is_setup_script(code):
    return any(isinstance(n, ast.Call) and getattr(n.func, "id", None) == "setup"
               for n in ast.walk(ast.parse(code)))


@pytest.mark.parametrize("code", list(blocks()))
def test_doc_block_runs(code, tmp_path):
    missing = missing_modules(code)
    if missing:
        pytest.skip(f"the block needs {', '.join(missing)}, not installed here")
    if builds_native_code(code) and importlib.util.find_spec("Cython") is None:
        pytest.skip("the block compiles a native op at run time and needs Cython, not installed "
                    "here (the native-op step of CI has it)")
    if is_setup_script(code):
        build_setup_block(code, tmp_path)
    else:
        exec(compile(code, "<doc>", "exec"), {"__name__": "__doc_example__"})


# A native op for the documented setup.py to build: it cimports lucid's C-level API.
OPS_PYX = textwrap.dedent("""\
    # cython: language_level=3
    from lucid._core cimport Tensor, wrap

    def doubled(Tensor x):
        return wrap(x.data * 2)
""")


def build_setup_block(code, folder):
    """Build the setup.py block in place beside the sources it names, then use what it built."""
    sources = re.findall(r'"([\w/]+\.pyx)"', code)
    assert sources, "a setup.py block should name the .pyx it builds"
    for source in sources:
        path = folder / source
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / "__init__.py").touch()
        path.write_text(OPS_PYX)
    (folder / "setup.py").write_text(code)
    # the child processes import the same lucid as this one (installed, or a source checkout)
    env = dict(os.environ, PYTHONPATH=lucid.get_include())

    def run(*args):
        done = subprocess.run([sys.executable, *args], cwd=folder, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, f"{args} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done.stdout

    run("setup.py", "-q", "build_ext", "--inplace")
    for source in sources:
        module = source[:-len(".pyx")].replace("/", ".")
        out = run("-c", f"import lucid, {module} as m; "
                        "print(m.doubled(lucid.tensor([1.0, 2.5])).tolist())")
        assert out.strip() == "[2.0, 5.0]"


# pip's default build isolation runs a package's setup.py where the installed lucid is not
# importable; imported as None here, which raises the ModuleNotFoundError such a build meets
HIDE_LUCID = ("import sys; sys.modules['lucid'] = None; sys.argv = ['setup.py', '--version']; "
              "exec(compile(open('setup.py').read(), 'setup.py', 'exec'))")


def native_setup_scripts():
    page = (ROOT / "docs" / "native_ops.md").read_text(encoding="utf-8")
    docs = [code for code in BLOCK.findall(page) if is_setup_script(code)]
    assert len(docs) == 1, "docs/native_ops.md has one package template setup.py"
    example = (ROOT / "examples" / "native_op" / "setup.py").read_text(encoding="utf-8")
    return [pytest.param(docs[0], id="docs-template"), pytest.param(example, id="example")]


@pytest.mark.parametrize("code", native_setup_scripts())
def test_native_setup_without_lucid_says_to_build_without_isolation(code, tmp_path):
    (tmp_path / "setup.py").write_text(code)
    done = subprocess.run([sys.executable, "-c", HIDE_LUCID], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "pip install --no-build-isolation ." in done.stderr, done.stderr
    assert "build isolation hides" in done.stderr and "Traceback" not in done.stderr, done.stderr
