"""Build the native op against the installed lucid: its .pxd files come from lucid.get_include()."""
import lucid
import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

setup(
    ext_modules=cythonize(
        [Extension("lucid_softplus._softplus", ["lucid_softplus/_softplus.pyx"],
                   include_dirs=[lucid.get_include(), numpy.get_include()],
                   define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")])],
        include_path=[lucid.get_include()],
        compiler_directives={"language_level": 3, "boundscheck": False, "wraparound": False},
    ),
)
