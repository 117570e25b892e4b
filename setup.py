"""Build the compiled core. All Cython compiler directives live here, in one place.

LUCID_DEBUG=1 turns bounds checks, wraparound and other safety checks back on (and builds without
optimisation); it never changes what is computed: both builds give the same numbers.
LUCID_SANITIZE=1 builds with AddressSanitizer and UndefinedBehaviorSanitizer (-O1 -g) and without
the array pool, whose recycled memory would hide a use after free from ASan; run it under the
release interpreter with libasan preloaded (.ci/sanitize, which also holds the suppressions).
LUCID_ANNOTATE=1 writes Cython's HTML annotation next to the sources.
A build whose inputs are those of the last one that succeeded here (the sources, the mode, the
flags, the Cython, NumPy and Python versions: build/lucid-last-build/ keeps their digest and the
module made) reuses that module: neither Cython nor the compiler runs again, so README's second install command does
not compile what its first one did (each runs in its own isolated build environment, whose fresh
files would otherwise look newer than the generated C). Any other change regenerates and
recompiles, so a release build never reuses debug output.
"""
import os
import shutil
import sys

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

DEBUG = os.environ.get("LUCID_DEBUG", "") not in ("", "0")
SANITIZE = os.environ.get("LUCID_SANITIZE", "") not in ("", "0")
MODE = "sanitize" if SANITIZE else "debug" if DEBUG else "release"
LAST_BUILD = os.path.join("build", "lucid-last-build")   # the digest and the module it made
INPUTS_FILE = os.path.join(LAST_BUILD, "inputs")
GENERATED_C = os.path.join("lucid", "_core.c")


def build_inputs_digest(*settings):
    """sha256 of everything the compiled core depends on: its sources, this file, the settings."""
    import hashlib
    import Cython
    digest = hashlib.sha256()
    for value in (MODE, sys.version, Cython.__version__, numpy.__version__, *settings):
        digest.update(repr(value).encode() + b"\0")
    sources = [os.path.join(root, name) for root, _, names in os.walk("lucid") for name in names
               if name.endswith((".pyx", ".pxd", ".pxi", ".h"))]
    for path in sorted(sources) + ["setup.py"]:
        with open(path, "rb") as f:
            digest.update(path.encode() + b"\0" + f.read() + b"\0")
    return digest.hexdigest()


def last_build_inputs():
    try:
        with open(INPUTS_FILE) as f:
            return f.read().strip()
    except OSError:
        return None


class BuildExtRemembering(build_ext):
    """build_ext that keeps the module of a build that succeeded, with its inputs' digest, and
    gives it back (instead of compiling) to a build whose inputs are the same."""

    def build_extension(self, ext):
        target = self.get_ext_fullpath(ext.name)
        kept = os.path.join(LAST_BUILD, os.path.basename(target))
        if REUSE and os.path.exists(kept):
            print(f"lucid: the inputs of {ext.name} are those of the last build: reusing {kept}")
            self.mkpath(os.path.dirname(target))
            shutil.copy2(kept, target)
            return
        super().build_extension(ext)
        os.makedirs(LAST_BUILD, exist_ok=True)
        shutil.copy2(target, kept)

    def run(self):
        super().run()
        with open(INPUTS_FILE, "w") as f:
            f.write(INPUTS + "\n")


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
    COMPILE_ARGS = (["-O0", "-g"] if DEBUG else ["-O3", "-g0", "-fno-trapping-math"]) + \
        ["-ffp-contract=off"]
    LINK_ARGS = ["-s"] if not DEBUG and sys.platform.startswith("linux") else []
    if SANITIZE:
        # -fno-sanitize-recover: the first report ends the process, so a finding fails the run
        SANITIZERS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                      "-fno-omit-frame-pointer"]
        COMPILE_ARGS = ["-O1", "-g"] + SANITIZERS + ["-fno-trapping-math", "-ffp-contract=off"]
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

def core_extension(source):
    return Extension(
        "lucid._core",
        [source],
        include_dirs=[numpy.get_include(), "lucid"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")] +
        ([("LUCID_DEBUG", "1")] if DEBUG else []) +
        ([("LUCID_NO_POOL", "1")] if SANITIZE else []),
        extra_compile_args=COMPILE_ARGS,
        extra_link_args=LINK_ARGS,
    )


ANNOTATE = os.environ.get("LUCID_ANNOTATE", "") not in ("", "0")
INPUTS = build_inputs_digest(DIRECTIVES, COMPILE_ARGS, LINK_ARGS, ANNOTATE)
REUSE = INPUTS == last_build_inputs() and os.path.exists(GENERATED_C)
if REUSE:
    extensions = [core_extension(GENERATED_C)]     # Cython's output of the last build is this one's
else:
    extensions = cythonize([core_extension("lucid/_core.pyx")], compiler_directives=DIRECTIVES,
                           force=True, annotate=ANNOTATE)

setup(ext_modules=extensions, cmdclass={"build_ext": BuildExtRemembering})
