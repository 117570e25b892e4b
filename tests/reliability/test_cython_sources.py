"""Rules of lucid's Cython sources that the release build does not check at run time.

setup.py builds the release with wraparound and boundscheck off, so an index below 0 on a tuple
or list that Cython indexes directly (`shape[-1]` on a typed tuple) reads outside the object
instead of counting from the end: a crash or garbage, never an IndexError. A source that needs
the last item spells it `shape[len(shape) - 1]` (or goes through the NumPy array).
"""
import re

from support.paths import ROOT

NEGATIVE_LITERAL_INDEX = re.compile(r"\w[\])]?\[-\d")


def cython_sources():
    return sorted((ROOT / "lucid").rglob("*.pxi")) + sorted((ROOT / "lucid").rglob("*.pyx"))


def test_the_sources_are_found():
    assert len(cython_sources()) > 40


def test_no_cython_source_indexes_with_a_negative_literal():
    found = []
    for path in cython_sources():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if NEGATIVE_LITERAL_INDEX.search(code):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "negative indices are unchecked in the release build:\n" + "\n".join(found)
