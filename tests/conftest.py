"""pytest's set-up for the lucid test suite: the shared fixtures, and the layout's import rule.

Tests import the installed ``lucid`` (editable install). The test folders (ops/, graph/, ...) are
packages, so two folders may hold files of the same name; their shared helpers live in the
``support`` package, imported from this folder, which is put on sys.path here whatever pytest's
import mode (``from support.checks import assert_close``).
"""
import gc
import os
import sys

import numpy as np
import pytest

import lucid

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if TESTS_DIR not in sys.path:
    sys.path.insert(0, TESTS_DIR)

from support.checks import SEED  # noqa: E402


def pytest_collect_file(file_path, parent):
    """Refuse a test file outside a package folder: it would be imported by its bare name and
    clash with a file of the same name elsewhere."""
    if not (file_path.suffix == ".py" and file_path.name.startswith("test_")):
        return None
    if str(file_path.parent) == TESTS_DIR:
        raise pytest.UsageError(f"{file_path}: test files live in the folder of their area "
                                "(tests/ops/, tests/graph/, ...), not in tests/ itself")
    if not (file_path.parent / "__init__.py").exists():
        raise pytest.UsageError(f"{file_path}: every test folder is a package; add "
                                f"{file_path.parent / '__init__.py'} (as tests/ops/ has)")
    return None


@pytest.fixture(autouse=True)
def _grad_mode_enabled():
    """Every test starts with grad mode on; a test that leaves it off (a failing grad-mode test)
    must not make unrelated tests fail."""
    if not lucid.is_grad_enabled():
        lucid.set_grad_enabled(True)
    yield
    if not lucid.is_grad_enabled():
        lucid.set_grad_enabled(True)


@pytest.fixture
def gc_off():
    """The cyclic GC collected, then off for the test (on again after): what the test frees must go
    by reference counting alone."""
    gc.collect()
    gc.disable()
    yield
    gc.enable()


@pytest.fixture
def rng():
    """A freshly seeded NumPy generator per test (independent of lucid's RNG)."""
    return np.random.default_rng(SEED)
