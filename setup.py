"""Build the compiled modules: the core (lucid._core) and the op families split off it
(lucid._linalg), which cimport the core's _core.pxd. All Cython compiler directives live here,
in one place, and every module is built with the same directives, flags and mode.

LUCID_DEBUG=1 turns bounds checks, wraparound and other safety checks back on (and builds without
optimisation); it never changes what is computed: both builds give the same numbers.
LUCID_SANITIZE=1 builds with AddressSanitizer and UndefinedBehaviorSanitizer (-O1 -g) and without
the array pool, whose recycled memory would hide a use after free from ASan; run it under the
release interpreter with libasan preloaded (.ci/sanitize, which also holds the suppressions).
LUCID_ANNOTATE=1 writes Cython's HTML annotation next to the sources.
A module whose inputs are those of the last build that succeeded here (its sources: the
files Cython reads for it and the C headers; the mode, the flags, the Cython, NumPy and Python
versions: build/lucid-last-build/ keeps each module's digest and the module made) reuses that
module: neither Cython nor the compiler runs again for it, so README's second install command
does not compile what its first one did (each runs in its own isolated build environment, whose
fresh files would otherwise look newer than the generated C), and an edit of a file only one
module reads (lucid/ops/linalg/solve.pxi: lucid._linalg) rebuilds only that module. Any other
change regenerates and recompiles, so a release build never reuses debug output; `build_ext
--force` reuses nothing. Cython runs on the modules to build in two processes, and the C
compiles run in parallel (build_ext --parallel; by default one job per module, at most one per
CPU).
"""
import functools
import os
import shutil
import subprocess
import sys

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

DEBUG = os.environ.get("LUCID_DEBUG", "") not in ("", "0")
SANITIZE = os.environ.get("LUCID_SANITIZE", "") not in ("", "0")
MODE = "sanitize" if SANITIZE else "debug" if DEBUG else "release"
LAST_BUILD = os.path.join("build", "lucid-last-build")   # each module's digest and the module
# the compiled modules, each from one .pyx: the core, then the op families split off it
MODULES = {"lucid._core": "lucid/_core.pyx", "lucid._linalg": "lucid/_linalg.pyx",
           "lucid._ops": "lucid/_ops.pyx"}


def lucid_sources():
    """Every file under lucid/ that a compiled module may read (Cython sources, C headers)."""
    return sorted(os.path.join(root, name) for root, _, names in os.walk("lucid")
                  for name in names if name.endswith((".pyx", ".pxd", ".pxi", ".h")))


@functools.lru_cache(maxsize=None)
def files_read():
    """{module: the Cython files its .pyx reads}, from Cython's dependency tree (made once)."""
    from Cython.Build.Dependencies import create_dependency_tree
    tree = create_dependency_tree(quiet=True)
    return {name: {os.path.normpath(p) for p in tree.all_dependencies(pyx)}
            for name, pyx in MODULES.items()}


def module_sources(module):
    """The files module's build reads: every source except the Cython files that only the other
    modules read."""
    reads = files_read()
    others = set().union(*(files for name, files in reads.items() if name != module))
    return [p for p in lucid_sources() if p in reads[module] or p not in others]


def build_inputs_digest(module, *settings):
    """sha256 of everything module depends on: its sources, this file, the settings."""
    import hashlib
    import Cython
    digest = hashlib.sha256()
    for value in (MODE, sys.version, Cython.__version__, numpy.__version__, *settings):
        digest.update(repr(value).encode() + b"\0")
    for path in module_sources(module) + ["setup.py"]:
        with open(path, "rb") as f:
            digest.update(path.encode() + b"\0" + f.read() + b"\0")
    return digest.hexdigest()


def inputs_file(module):
    return os.path.join(LAST_BUILD, module + ".inputs")


def last_build_inputs(module):
    try:
        with open(inputs_file(module)) as f:
            return f.read().strip()
    except OSError:
        return None


class BuildExtRemembering(build_ext):
    """build_ext that keeps each module of a build that succeeded, with its inputs' digest, and
    gives it back (instead of running Cython and compiling) to a build whose inputs for that
    module are the same; it runs Cython on the others (two processes) and compiles them in
    parallel."""

    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:          # the user gave no --parallel / -j
            self.parallel = max(1, min(len(MODULES), os.cpu_count() or 1))

    def kept_module(self, ext):
        return os.path.join(LAST_BUILD, os.path.basename(self.get_ext_fullpath(ext.name)))

    def reusable(self, ext):
        return (not self.force and ext.inputs == last_build_inputs(ext.name)
                and os.path.exists(self.kept_module(ext)))

    def run(self):
        stale = [ext for ext in self.extensions if not self.reusable(ext)]
        if stale:
            generated = cythonize(stale, compiler_directives=DIRECTIVES, force=True,
                                  annotate=ANNOTATE, nthreads=2)
            for ext, made in zip(stale, generated):
                ext.sources = made.sources
        self.stale = {ext.name for ext in stale}
        super().run()
        for ext in self.extensions:
            with open(inputs_file(ext.name), "w") as f:
                f.write(ext.inputs + "\n")

    def build_extension(self, ext):
        target = self.get_ext_fullpath(ext.name)
        kept = self.kept_module(ext)
        if ext.name not in self.stale:
            print(f"lucid: the inputs of {ext.name} are those of the last build: reusing {kept}")
            self.mkpath(os.path.dirname(target))
            shutil.copy2(kept, target)
            return
        super().build_extension(ext)
        os.makedirs(LAST_BUILD, exist_ok=True)
        shutil.copy2(target, kept)


def compiler_is_gcc():
    """The C compiler setuptools will call is GCC (link-time optimisation is set up for it)."""
    import sysconfig
    command = (os.environ.get("CC") or sysconfig.get_config_var("CC") or "").split()
    if not command:
        return False
    try:
        out = subprocess.run([command[0], "--version"], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "Free Software Foundation" in out and "clang" not in out.lower()


if sys.platform == "win32":                      # MSVC: debug info only with /Zi
    COMPILE_ARGS = ["/Od", "/Zi"] if DEBUG else ["/O2"]
    LINK_ARGS = []
else:
    # -fno-trapping-math lets GCC and clang vectorise loops that select between computed
    # branches (lucid/kernels/simd.h); lucid never reads the floating-point exception flags.
    # A release build carries no debug info: -g0 overrides the -g in Python's own CFLAGS
    # (7.9 MB of DWARF otherwise), and on Linux -s drops the static symbol table too.
    # -ffp-contract=off: no fused multiply-add unless written, so a typed loop gives the same
    # bits on its vector body, its scalar head and tail, and every target_clones version
    # (with contraction, which elements took the FMA path depended on the array's alignment).
    # The -Werror= flags are the diagnostics GCC 14 turned into errors: an older compiler fails
    # on them too, so the build cannot break first on a user's newer one.
    GCC14_ERRORS = ["-Werror=incompatible-pointer-types", "-Werror=int-conversion",
                    "-Werror=implicit-function-declaration"]
    COMPILE_ARGS = (["-O0", "-g"] if DEBUG else ["-O3", "-g0", "-fno-trapping-math"]) + \
        ["-ffp-contract=off"] + GCC14_ERRORS
    LINK_ARGS = ["-s"] if not DEBUG and sys.platform.startswith("linux") else []
    if not DEBUG and compiler_is_gcc() and os.environ.get("LUCID_LTO", "1") != "0":
        # Link-time optimisation, for build time: each module's C file is compiled to GCC's IR
        # (quick), and the optimising code generation runs at link time in parallel partitions
        # (-flto=auto: one job per core). A one-file edit of the core rebuilds in about 0.6 of
        # the time of a plain -O3 compile on two cores; the hot paths' instruction counts move
        # by 0-3% with it, depending on the code's layout (Note [Build time] in
        # docs/design.md). LUCID_LTO=0 builds without it.
        COMPILE_ARGS += ["-flto=auto"]
        LINK_ARGS += ["-flto=auto", "-O3", "-fno-trapping-math", "-ffp-contract=off"]
    if SANITIZE:
        # -fno-sanitize-recover: the first report ends the process, so a finding fails the run
        SANITIZERS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                      "-fno-omit-frame-pointer"]
        COMPILE_ARGS = ["-O1", "-g"] + SANITIZERS + ["-fno-trapping-math", "-ffp-contract=off"] + \
            GCC14_ERRORS
        LINK_ARGS = SANITIZERS

DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    # C division in both builds: float division by zero is IEEE (inf / NaN, like NumPy), and
    # Python's ZeroDivisionError raised inside the noexcept typed loops (lucid/kernels/typed_loops.pxi) could
    # only be printed and lost, leaving the output unwritten. The core does no C integer
    # division; code that needs one must check its divisor itself.
    "cdivision": True,
        # Signatures in the docstrings, in the form CPython's inspect reads (__text_signature__):
    # inspect.signature(lucid.add) and inspect.signature(lucid.Tensor.add_) work at no cost per
    # call. binding=True would give the same through Cython's own function objects, but slows
    # every call from Python: W1 lucid/floor 1.11x, W4 1.13x (measured, beyond noise).
    "embedsignature": True,
    "embedsignature.format": "clinic",
    "binding": False,
    # no Cython-generated __reduce__/__setstate__: they read raw fields from any tuple given
    # (a crash); Tensor pickles through its own __reduce_ex__, the rest refuse
    "auto_pickle": False,
    # a typed parameter (`Tensor x`) of a Python-visible function refuses None with a TypeError
    # instead of letting the body dereference it (a crash); a parameter that takes None says so
    # (`Tensor x=None`, or `Tensor x or None`). Public ops convert their tensor arguments with
    # tensor_arg (lucid/tensor/tensor.pxi), whose errors name the op.
    "allow_none_for_extension_args": False,
}

def lucid_extension(name):
    """The Extension of one of lucid's modules: its .pyx (Cython runs in build_ext, on the
    modules whose inputs changed), the one set of flags, and its inputs' digest."""
    ext = Extension(
        name,
        [MODULES[name]],
        include_dirs=[numpy.get_include(), "lucid"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")] +
        ([("LUCID_DEBUG", "1")] if DEBUG else []) +
        ([("LUCID_NO_POOL", "1")] if SANITIZE else []),
        extra_compile_args=COMPILE_ARGS,
        extra_link_args=LINK_ARGS,
    )
    ext.inputs = build_inputs_digest(name, DIRECTIVES, COMPILE_ARGS, LINK_ARGS, ANNOTATE)
    return ext


ANNOTATE = os.environ.get("LUCID_ANNOTATE", "") not in ("", "0")
setup(ext_modules=[lucid_extension(name) for name in MODULES],
      cmdclass={"build_ext": BuildExtRemembering})
