"""lucid's types: the stub of the compiled core matches the built module (mypy's stubtest), mypy
accepts a small user program and reports a call of a method Tensor lacks. Needs mypy (the `test`
extra installs it); skipped, with the reason printed, without it."""
import importlib.util
import pathlib
import subprocess
import sys

import pytest

import lucid
from support.paths import ROOT

TYPING = pathlib.Path(__file__).resolve().parent / "typing"
PACKAGE = pathlib.Path(lucid.__file__).resolve().parent
CONFIG = TYPING / "mypy.ini"      # report the checked file's errors, not those of lucid's own modules

needs_mypy = pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                                reason="mypy is not installed (pip install mypy, or the test extra)")


def run_mypy(*args):
    """Run a mypy tool in a child process that sees the lucid under test: from the checkout's
    root when that is where lucid is imported from (mypy searches the working folder), else
    the installed package (found through its py.typed)."""
    cwd = ROOT if PACKAGE.parent == ROOT else TYPING
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True,
                          cwd=str(cwd), timeout=600)


def mypy_on(script):
    return run_mypy("mypy", "--no-incremental", "--config-file", str(CONFIG), str(script))


def test_the_package_ships_its_types():
    assert (PACKAGE / "py.typed").is_file()
    assert (PACKAGE / "_core.pyi").is_file()
    assert (PACKAGE / "_linalg.pyi").is_file()
    assert (PACKAGE / "_ops.pyi").is_file()
    assert (PACKAGE / "_creation.pyi").is_file()
    assert (PACKAGE / "func.pyi").is_file()


@needs_mypy
def test_stubtest_finds_the_stubs_and_the_built_modules_in_agreement():
    result = run_mypy("mypy.stubtest", "lucid._core", "lucid._linalg", "lucid._ops", "lucid.func",
                      "--mypy-config-file", str(CONFIG),
                      "--allowlist", str(TYPING / "stubtest_allowlist.txt"))
    assert result.returncode == 0, result.stdout + result.stderr


@needs_mypy
def test_mypy_accepts_a_user_program():
    result = mypy_on(TYPING / "user_script.py")
    assert result.returncode == 0, result.stdout + result.stderr


@needs_mypy
def test_mypy_reports_a_method_tensor_lacks():
    result = mypy_on(TYPING / "user_error.py")
    assert result.returncode == 1, result.stdout + result.stderr
    assert '"Tensor" has no attribute "not_a_method"' in result.stdout, result.stdout
    assert "user_error.py:5: error" in result.stdout, result.stdout


USER_FOLDER_SCRIPT = '''\
import lucid
from lucid import Tensor


def loss(w: Tensor, scale: float) -> Tensor:
    return (w * scale).sum()


class Square(lucid.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * x

    @staticmethod
    def backward(ctx, g):
        return g


reveal_type(lucid.tensor([1.0, 2.0]))
reveal_type(lucid.func.grad(loss))
reveal_type(lucid.func.jacrev(loss, argnums=(0,)))
reveal_type(Square.apply(lucid.ones(2)))
lucid.func.grad(loss)(lucid.ones(2), "not a float")
'''


@needs_mypy
def test_mypy_from_a_user_folder_outside_the_tree_sees_lucids_types(tmp_path):
    """mypy run where a user runs it (their own folder, no lucid beside it) finds the lucid that
    this interpreter imports, typed: an editable install must be a path mypy follows (a static
    .pth, pyproject.toml's package-dir), not an import hook only the interpreter runs. The config
    here reports a missing lucid (no ignore_missing_imports)."""
    (tmp_path / "mypy.ini").write_text("[mypy]\nfollow_imports = silent\n")
    script = tmp_path / "user_code.py"
    script.write_text(USER_FOLDER_SCRIPT)
    result = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", script.name],
                            capture_output=True, text=True, cwd=str(tmp_path), timeout=600)
    out = result.stdout + result.stderr
    assert "import-not-found" not in out and "import-untyped" not in out, out
    assert 'Revealed type is "lucid._core.Tensor"' in out, out
    # the transforms keep the function's parameters (ParamSpec); apply returns a Tensor
    assert 'Revealed type is "def (w: lucid._core.Tensor, scale: float) -> ' \
           'lucid._core.Tensor"' in out, out
    assert 'Revealed type is "def (w: lucid._core.Tensor, scale: float) -> ' \
           'tuple[lucid._core.Tensor, ...]"' in out, out
    assert out.count('Revealed type is "lucid._core.Tensor"') == 2, out
    assert 'user_code.py:23: error: Argument 2 has incompatible type "str"; expected "float"' \
        in out, out
    assert result.returncode == 1, out
