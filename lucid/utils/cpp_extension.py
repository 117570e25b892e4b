"""Compile a Cython native op against the installed lucid and import it, in one call.

    square = lucid.utils.cpp_extension.load_inline("square_op", PYX_SOURCE)
    y = square.square(x)

The module is built with Cython's cythonize and setuptools' build_ext in a child process, with
lucid.get_include() and numpy.get_include() on the include paths, and cached under
$LUCID_EXTENSIONS_DIR (default ~/.cache/lucid_extensions) in a folder named by a hash of
everything the binary depends on: the source text, lucid's ABI version and C declarations, the
Python, NumPy and Cython versions, and the compiler flags. A later call with the same inputs
imports the cached binary without compiling. A failed build raises ExtensionBuildError with the
compiler's text and the offending line of your source; a cache folder that can't be written,
ExtensionCacheError (an OSError) naming it and how to choose another. The module is returned,
not registered in sys.modules (as PyTorch's load_inline does): a name that is already imported
(`json`, `lucid`) keeps its module.
"""
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import pathlib
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading

import numpy

import lucid

__all__ = ["load", "load_inline", "ExtensionBuildError", "ExtensionCacheError", "cache_root",
           "stats"]

# How many builds this process compiled, and how many it served from the disk or memory cache.
stats = {"built": 0, "disk_cache_hits": 0, "memory_cache_hits": 0}

_loaded = {}                 # binary path -> module (an extension binary initialises only once)
_lock = threading.Lock()

# The child process that compiles: cythonize then build_ext --inplace, in the build folder.
_BUILD_SCRIPT = """
import json, sys
from Cython.Build import cythonize
from setuptools import Extension, setup
cfg = json.loads(sys.argv[1])
ext = Extension(cfg["name"], cfg["sources"], include_dirs=cfg["include_dirs"],
                extra_compile_args=cfg["extra_compile_args"],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")])
setup(name=cfg["name"], script_args=["build_ext", "--inplace"] + ([] if cfg["verbose"] else ["-q"]),
      ext_modules=cythonize([ext], include_path=cfg["include_dirs"], force=True,
                            quiet=not cfg["verbose"], compiler_directives={"language_level": 3}))
"""


class ExtensionBuildError(RuntimeError):
    """Compiling a native extension failed; the message holds the compiler's text."""


class ExtensionCacheError(OSError):
    """The folder builds are cached in can't be written; the message names it and how to
    choose another (LUCID_EXTENSIONS_DIR, build_directory=)."""


def cache_root():
    """Where builds are cached: $LUCID_EXTENSIONS_DIR, else ~/.cache/lucid_extensions."""
    configured = os.environ.get("LUCID_EXTENSIONS_DIR")
    if configured:
        return pathlib.Path(configured).expanduser()
    return pathlib.Path.home() / ".cache" / "lucid_extensions"


def load(name, sources, extra_compile_args=None, build_directory=None, verbose=False):
    """Build (or fetch from the cache) the extension `name` from `sources` and import it.

    sources: a path or a list of paths; exactly one .pyx (the module), plus any .pxd, .pxi, .h,
    .c or .cpp files it uses (copied beside it; .c/.cpp are compiled in). build_directory: the
    folder builds are cached under (default: cache_root()).
    """
    paths = [pathlib.Path(s) for s in ([sources] if isinstance(sources, (str, os.PathLike))
                                       else sources)]
    pyx = [p for p in paths if p.suffix == ".pyx"]
    if len(pyx) != 1:
        raise ValueError(f"load({name!r}): sources must hold exactly one .pyx file, got "
                         f"{[str(p) for p in paths]}")
    files = {}
    for p in paths:
        target = f"{name}.pyx" if p is pyx[0] else p.name
        files[target] = p.read_text(encoding="utf-8")
    return _build_and_import(name, files, str(pyx[0]), extra_compile_args, build_directory,
                             verbose)


def load_inline(name, source, extra_compile_args=None, build_directory=None, verbose=False):
    """load() for a module given as Cython source text rather than a file."""
    return _build_and_import(name, {f"{name}.pyx": source}, f"<source of {name}>",
                             extra_compile_args, build_directory, verbose)


def _build_and_import(name, files, shown_as, extra_compile_args, build_directory, verbose):
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"extension name must be a Python identifier, got {name!r}")
    flags = [str(f) for f in (extra_compile_args or [])]
    key = _build_key(name, files, flags)
    folder = pathlib.Path(build_directory or cache_root()).expanduser() / f"{name}-{key[:16]}"
    with _lock:
        binary = _find_binary(folder, name)
        if binary is not None and str(binary) in _loaded:
            stats["memory_cache_hits"] += 1
            return _loaded[str(binary)]
        if binary is None:
            binary = _compile(name, files, shown_as, flags, folder, verbose,
                              _cache_setting(build_directory))
            stats["built"] += 1
        else:
            stats["disk_cache_hits"] += 1
            if verbose:
                print(f"lucid.utils.cpp_extension: {name} served from the cache at {folder}")
        module = _import_binary(name, binary)
        _loaded[str(binary)] = module
        return module


def _build_key(name, files, flags):
    """A hash of everything the compiled binary depends on."""
    # _core.pxd and the file it includes (_core_internal.pxi): what a native op cimports
    core_pxd = b"".join(pathlib.Path(lucid.get_include(), "lucid", name).read_bytes()
                        for name in ("_core.pxd", "_core_internal.pxi"))
    parts = {
        "name": name,
        "files": sorted(files.items()),
        "flags": flags,
        "lucid_abi": lucid._core._abi_version(),
        "lucid_pxd": hashlib.sha256(core_pxd).hexdigest(),
        "python": [sys.version, sys.implementation.cache_tag, platform.machine()],
        "numpy": numpy.__version__,
        "cython": _cython_version(),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _cython_version():
    try:
        import Cython
    except ImportError:
        return None
    return Cython.__version__


def _find_binary(folder, name):
    """The built extension binary in folder, or None."""
    if not folder.is_dir():
        return None
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = folder / f"{name}{suffix}"
        if candidate.is_file():
            return candidate
    return None


def _cache_setting(build_directory):
    """Which setting chose the cache folder, as the error message names it."""
    if build_directory:
        return "the build_directory= argument"
    if os.environ.get("LUCID_EXTENSIONS_DIR"):
        return "LUCID_EXTENSIONS_DIR is set to it"
    return "the default (LUCID_EXTENSIONS_DIR is not set)"


def _cache_error(root, setting, error):
    """ExtensionCacheError for a cache folder root that can't be written."""
    reason = error.strerror or type(error).__name__
    return ExtensionCacheError(
        f"lucid.utils.cpp_extension: can't write the extension cache folder {root} "
        f"({reason}; {setting}); choose a writable folder with the LUCID_EXTENSIONS_DIR "
        "environment variable or load(..., build_directory=...) / "
        "load_inline(..., build_directory=...)")


def _work_folder(name, folder, setting):
    """A fresh folder beside the cache slot to compile in (ExtensionCacheError if the cache
    can't be written)."""
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        return pathlib.Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder.parent))
    except OSError as e:
        raise _cache_error(folder.parent, setting, e) from e


def _compile(name, files, shown_as, flags, folder, verbose, setting):
    """Compile in a fresh folder beside the cache slot, then move it into place."""
    if _cython_version() is None:
        raise ImportError('building a native extension needs Cython: pip install "Cython>=3.0"')
    work = _work_folder(name, folder, setting)
    try:
        for filename, text in files.items():
            (work / filename).write_text(text, encoding="utf-8")
        sources = [f for f in files if f.endswith((".pyx", ".c", ".cpp")) and
                   f != f"{name}.c"]
        sources.sort(key=lambda f: not f.endswith(".pyx"))
        config = {"name": name, "sources": sources, "extra_compile_args": flags,
                  "include_dirs": [lucid.get_include(), numpy.get_include()],
                  "verbose": bool(verbose)}
        done = subprocess.run([sys.executable, "-c", _BUILD_SCRIPT, json.dumps(config)],
                              cwd=work, capture_output=True, text=True)
        output = done.stdout + done.stderr
        if verbose:
            print(output)
        if done.returncode != 0 or _find_binary(work, name) is None:
            raise ExtensionBuildError(_build_failure_message(name, files, shown_as, work,
                                                             output))
        try:
            os.replace(work, folder)             # atomic: a concurrent build may have won
        except OSError:
            if _find_binary(folder, name) is None:
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return _find_binary(folder, name)


def _import_binary(name, binary):
    """The module of the extension binary, initialised, and not left in sys.modules (a Cython
    module adds itself there while it initialises, when the name is free)."""
    spec = importlib.util.spec_from_file_location(name, binary)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    finally:
        if sys.modules.get(name) is module:
            del sys.modules[name]
    return module


# -- error messages ----------------------------------------------------------------------------

_CYTHON_ERROR = re.compile(r"^(?:.*/)?(?P<file>[\w.]+\.pyx?):(?P<line>\d+):(?P<col>\d+): "
                           r"(?P<msg>.*)$", re.M)
_C_ERROR = re.compile(r"^(?:.*/)?(?P<file>[\w.]+\.(?:c|cpp)):(?P<line>\d+):(?:(?P<col>\d+):)? "
                      r"(?:fatal )?error: (?P<msg>.*)$", re.M)


def _build_failure_message(name, files, shown_as, work, output):
    """The compiler's text, led by each error's position and line in the user's source."""
    pyx_lines = files[f"{name}.pyx"].splitlines()
    located, c_errors = [], []
    for m in _CYTHON_ERROR.finditer(output):
        if m.group("file") == f"{name}.pyx":
            located.append((int(m.group("line")), int(m.group("col")), m.group("msg")))
    for m in _C_ERROR.finditer(output):
        line = _pyx_line_of_c_line(work / m.group("file"), int(m.group("line")), name)
        if line is not None:
            located.append((line, None, f"C compiler: {m.group('msg')}"))
        else:
            c_errors.append(f"  generated {m.group('file')}, line {m.group('line')}: "
                            f"{m.group('msg')}")
    head = [f"building the native extension {name!r} failed"]
    for line, col, msg in located:
        where = f"{shown_as}, line {line}" + (f", column {col}" if col else "")
        code = pyx_lines[line - 1] if 0 < line <= len(pyx_lines) else ""
        head.append(f"  {where}: {msg}\n    {line} | {code}")
    head.extend(c_errors)
    if not located and not c_errors:
        head.append(f"  (no line of {shown_as} could be located; see the compiler output)")
    return "\n".join(head) + "\n\ncompiler output:\n" + _tail(_without_traceback(output), 80)


def _without_traceback(output):
    """The output without the build script's own Python traceback (it says nothing new)."""
    return re.sub(r"^Traceback \(most recent call last\):\n(?:[ \t].*\n)*.*CompileError.*\n?",
                  "", output, flags=re.M)


def _pyx_line_of_c_line(c_file, c_line, name):
    """The .pyx line that generated line c_line of the C file (Cython's `/* "x.pyx":N` marks)."""
    try:
        lines = c_file.read_text(encoding="utf-8", errors="replace").splitlines()[:c_line]
    except OSError:
        return None
    mark = re.compile(r'/\* "' + re.escape(name) + r'\.pyx":(\d+)')
    for text in reversed(lines):
        m = mark.search(text)
        if m:
            return int(m.group(1))
    return None


def _tail(text, n):
    lines = text.rstrip().splitlines()
    return "\n".join(lines if len(lines) <= n else ["..."] + lines[-n:])
