"""The ABI guard of native ops: an extension compiled against another lucid C layout (a different
ABI_VERSION in lucid/_core.pxd) must fail at import with an ImportError naming both versions, never
crash. The tests build a tiny native op (a Node subclass, as real ones define) against a copy of
_core.pxd whose ABI_VERSION is changed, and against the real _core.pxd of the previous layout
(tests/api/abi_previous_layout.pxd): Cython's own import check refuses a class that got smaller with
a ValueError before check_abi runs, so that one proves no class of the pxd shrank."""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

import lucid

HERE = pathlib.Path(__file__).resolve().parent
PREVIOUS_LAYOUT = HERE / "abi_previous_layout.pxd"

SOURCE = textwrap.dedent("""
    from lucid._core cimport Node, Tensor, wrap, check_abi, ABI_VERSION
    check_abi(ABI_VERSION)

    cdef class ProbeBackward(Node):
        cdef tuple apply(self, tuple grads):
            return grads

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


def _abi_of(pxd_text):
    return int(re.search(r"ABI_VERSION = (\d+)", pxd_text).group(1))


def _current_pxd():
    return (pathlib.Path(lucid.get_include()) / "lucid" / "_core.pxd").read_text()


def _shifted_pxd(abi_shift):
    """Today's _core.pxd claiming ABI_VERSION + abi_shift."""
    text = _current_pxd()
    current = _abi_of(text)
    return text.replace(f"ABI_VERSION = {current}", f"ABI_VERSION = {current + abi_shift}")


def _build(tmp_path, pxd_text):
    """Build abi_probe against lucid's .pxd files, with pxd_text as _core.pxd."""
    pytest.importorskip("Cython", reason="building a native op needs Cython")
    inc = tmp_path / "include"
    shutil.copytree(pathlib.Path(lucid.get_include()) / "lucid", inc / "lucid",
                    ignore=shutil.ignore_patterns("*.so", "*.c", "*.pyd", "__pycache__"))
    (inc / "lucid" / "_core.pxd").write_text(pxd_text)
    (tmp_path / "abi_probe.pyx").write_text(SOURCE)
    (tmp_path / "setup_probe.py").write_text(SETUP)
    build = subprocess.run([sys.executable, "setup_probe.py", str(inc)], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout + build.stderr
    return _abi_of(pxd_text)


def _import(tmp_path):
    code = "import abi_probe; print('ABI', abi_probe.built_against())"
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              [str(tmp_path)] + [p for p in [os.environ.get("PYTHONPATH")] if p])})


def _assert_refused(run, built, current):
    """The import failed with check_abi's ImportError naming both versions (no other error)."""
    assert run.returncode == 1, f"expected a clean ImportError, got rc={run.returncode}\n{run.stderr}"
    last_line = run.stderr.strip().splitlines()[-1]
    assert last_line.startswith("ImportError: "), run.stderr
    assert (f"built against lucid ABI version {built}" in last_line
            and f"installed lucid has ABI version {current}" in last_line)
    assert "rebuild" in last_line


def test_same_abi_imports(tmp_path):
    current = _build(tmp_path, _shifted_pxd(0))
    run = _import(tmp_path)
    assert run.returncode == 0, run.stderr
    assert f"ABI {current}" in run.stdout
    assert current == lucid._core._abi_version()


@pytest.mark.parametrize("abi_shift", [-1, 1], ids=["claims-older", "claims-newer"])
def test_other_abi_fails_at_import_naming_both(tmp_path, abi_shift):
    built = _build(tmp_path, _shifted_pxd(abi_shift))
    _assert_refused(_import(tmp_path), built, lucid._core._abi_version())


def test_module_built_against_the_previous_layout_is_refused(tmp_path):
    """A native op built against the real _core.pxd of the layout before this one (4 against 5)
    reaches check_abi: no class of the pxd got smaller (Cython would refuse it first with
    'size changed' ValueError, naming no version)."""
    current = lucid._core._abi_version()
    previous = _abi_of(PREVIOUS_LAYOUT.read_text())
    assert previous == current - 1, (
        f"{PREVIOUS_LAYOUT.name} holds layout {previous}, not the one before {current}: copy the "
        "old lucid/_core.pxd there at each ABI bump")
    built = _build(tmp_path, PREVIOUS_LAYOUT.read_text())
    _assert_refused(_import(tmp_path), built, current)


def test_storage_has_no_reserved_base():
    """Layout 5 dropped the reserved Storage.base slot, and its property with it."""
    assert not hasattr(lucid.Storage, "base")
    assert all(hasattr(lucid.Storage, name) for name in ("version", "graph_version", "last_op"))
