"""Where the suite's neighbours are: TESTS is this tests/ folder, ROOT the tree holding it (a
checkout or an unpacked sdist: README.md, docs/, examples/, benchmarks/)."""
import pathlib

TESTS = pathlib.Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
