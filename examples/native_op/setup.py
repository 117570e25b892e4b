"""Build the native op against the installed lucid: its .pxd files come from lucid.get_include().

The softplus loops (lucid_softplus/softplus_kernels.h) vectorise with gcc when math calls may skip
setting errno (-fno-math-errno); on x86-64 Linux with glibc >= 2.35 their exp/log1p calls then go
to glibc's vector math library, libmvec, which this build links. LUCID_SOFTPLUS_LIBMVEC=0 in the
environment builds the scalar loops instead (what other platforms get).
"""
import os
import platform
import sys

try:
    import lucid
except ModuleNotFoundError as error:      # pip's build isolation hides the installed lucid
    raise SystemExit("lucid_softplus builds against the lucid installed in this environment, which "
                     "pip's build isolation hides: build with "
                     "`pip install --no-build-isolation .`") from error
import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup


def glibc_has_libmvec_log1p():
    """x86-64 Linux with glibc 2.35 or newer (the first with vector log1p/log1pf), unless disabled."""
    if os.environ.get("LUCID_SOFTPLUS_LIBMVEC") == "0":
        return False
    if not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "AMD64"):
        return False
    libc, version = platform.libc_ver()
    if libc != "glibc" or not version:
        return False
    return tuple(int(p) for p in version.split(".")[:2]) >= (2, 35)


macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
compile_args, libraries = [], []
if os.name != "nt":
    compile_args.append("-fno-math-errno")
if glibc_has_libmvec_log1p():
    macros.append(("LUCID_SOFTPLUS_LIBMVEC", "1"))
    libraries.append("mvec")

setup(
    ext_modules=cythonize(
        [Extension("lucid_softplus._softplus", ["lucid_softplus/_softplus.pyx"],
                   depends=["lucid_softplus/softplus_kernels.h"],
                   include_dirs=[lucid.get_include(), numpy.get_include(), "lucid_softplus"],
                   define_macros=macros, extra_compile_args=compile_args, libraries=libraries)],
        include_path=[lucid.get_include()],
        compiler_directives={"language_level": 3, "boundscheck": False, "wraparound": False},
    ),
)
