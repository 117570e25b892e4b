"""The diagnostics tests' settings: creation sites on and the saved-tensor guard off."""
import pytest

import lucid


@pytest.fixture(autouse=True)
def _restore_settings():
    """Every test starts with creation sites on and the guard off, and leaves them so."""
    previous_sites = lucid.autograd.set_creation_sites(True)
    previous_guard = lucid.autograd.set_saved_tensor_guard(False)
    yield
    lucid.autograd.set_creation_sites(previous_sites)
    lucid.autograd.set_saved_tensor_guard(previous_guard)
