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


@needs_mypy
def test_stubtest_finds_the_stubs_and_the_built_modules_in_agreement():
    result = run_mypy("mypy.stubtest", "lucid._core", "lucid._linalg", "lucid._ops",
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
