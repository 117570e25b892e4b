"""The ABI guard of native ops: an extension compiled against another lucid C layout (a different
ABI_VERSION in lucid/_core.pxd) must fail at import with an ImportError naming both versions, never
crash. The test builds a tiny extension against a copy of _core.pxd whose ABI_VERSION is changed."""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

import lucid

SOURCE = textwrap.dedent("""
    from lucid._core cimport Tensor, wrap, check_abi, ABI_VERSION
    check_abi(ABI_VERSION)

    def built_against():
        return ABI_VERSION
""")

SETUP = textwrap.dedent("""
    import sys
    from Cython.Build import cythonize
    from setuptools import Extension, setup
    import numpy
    inc = sys.argv.pop(1)
    setup(name="abi_probe", script_args=["build_ext", "--inplace", "-q"],
          ext_modules=cythonize([Extension("abi_probe", ["abi_probe.pyx"],
                                           include_dirs=[inc, numpy.get_include()])],
                                include_path=[inc], language_level=3, quiet=True))
""")


def _build(tmp_path, abi_shift):
    """Build abi_probe against lucid's .pxd files with ABI_VERSION shifted by abi_shift."""
    pytest.importorskip("Cython", reason="building a native op needs Cython")
    inc = tmp_path / "include"
    shutil.copytree(pathlib.Path(lucid.get_include()) / "lucid", inc / "lucid",
                    ignore=shutil.ignore_patterns("*.so", "*.c", "*.pyd", "__pycache__"))
    pxd = inc / "lucid" / "_core.pxd"
    text = pxd.read_text()
    current = int(re.search(r"ABI_VERSION = (\d+)", text).group(1))
    pxd.write_text(text.replace(f"ABI_VERSION = {current}", f"ABI_VERSION = {current + abi_shift}"))
    (tmp_path / "abi_probe.pyx").write_text(SOURCE)
    (tmp_path / "setup_probe.py").write_text(SETUP)
    build = subprocess.run([sys.executable, "setup_probe.py", str(inc)], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout + build.stderr
    return current


def _import(tmp_path):
    code = "import abi_probe; print('ABI', abi_probe.built_against())"
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)})


def test_same_abi_imports(tmp_path):
    current = _build(tmp_path, 0)
    run = _import(tmp_path)
    assert run.returncode == 0, run.stderr
    assert f"ABI {current}" in run.stdout
    assert current == lucid._core._abi_version()


def test_other_abi_fails_at_import_naming_both(tmp_path):
    current = _build(tmp_path, 1)
    run = _import(tmp_path)
    assert run.returncode == 1, f"expected a clean ImportError, got rc={run.returncode}\n{run.stderr}"
    assert "ImportError" in run.stderr
    assert f"ABI version {current + 1}" in run.stderr and f"ABI version {current}" in run.stderr
    assert "rebuild" in run.stderr
