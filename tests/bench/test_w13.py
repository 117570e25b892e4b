"""W13's batched Laplacian: the NumPy floor's hand-written forward-mode second derivatives equal
central differences and lucid's loop of func.hessian (float64), lucid.func.vmap (when it exists)
and torch.func equal the floor, and the harness's float32 cells pass their checks."""
import sys

import numpy as np
import pytest

import lucid
from support.paths import ROOT

sys.path.insert(0, str(ROOT))
from benchmarks import _harness as h  # noqa: E402
from benchmarks import w13_batched_laplacian as w13  # noqa: E402

STEP = 1e-4                       # central second differences in float64: error ~1e-8


def numpy_f(params, X):
    """The MLP's output at each row of X, in NumPy."""
    a = X
    for k in range(0, len(params) - 2, 2):
        a = np.tanh(a @ params[k] + params[k + 1])
    return (a @ params[-2] + params[-1])[:, 0]


def test_the_floor_equals_central_second_differences():
    params, X = w13.values(np.float64)
    want = sum((numpy_f(params, X + STEP * e) - 2 * numpy_f(params, X)
                + numpy_f(params, X - STEP * e)) / STEP ** 2 for e in np.eye(2))
    got = w13.numpy_laplacian(params, X)
    assert got.shape == (w13.POINTS,)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_the_floor_equals_lucids_loop_of_hessian():
    params, X = w13.values(np.float64)
    got = w13.lucid_loop_laplacian(lucid, [lucid.tensor(a) for a in params], lucid.tensor(X))
    assert got.dtype == lucid.float64 and got.shape == (w13.POINTS,)
    np.testing.assert_allclose(got.numpy(), w13.numpy_laplacian(params, X), rtol=1e-10,
                               atol=1e-12)


def test_lucid_vmap_equals_the_floor():
    if not hasattr(lucid.func, "vmap"):
        pytest.skip("lucid.func.vmap does not exist yet (W13's main cell is n/a until it does)")
    params, X = w13.values(np.float64)
    got = w13.vmap_laplacian(lucid.func, [lucid.tensor(a) for a in params], lucid.tensor(X))
    np.testing.assert_allclose(got.numpy(), w13.numpy_laplacian(params, X), rtol=1e-10,
                               atol=1e-12)


def test_torch_func_equals_the_floor():
    torch = pytest.importorskip("torch", reason="torch is optional (W13's torch.func column)")
    params, X = w13.values(np.float64)
    got = w13.vmap_laplacian(torch.func, [torch.from_numpy(a) for a in params],
                             torch.from_numpy(X))
    np.testing.assert_allclose(got.numpy(), w13.numpy_laplacian(params, X), rtol=1e-10,
                               atol=1e-12)


def test_the_harness_cells_pass_their_float32_checks():
    floor = h.run_once(w13.setup(h.Lib("numpy", np), quick=True))
    assert floor[0].dtype == np.float32 and floor[0].shape == (w13.POINTS,)
    cells = w13.setup(h.Lib("lucid", lucid), quick=True)
    assert list(cells) == ["vmap", "loop"]
    assert isinstance(cells["vmap"], h.NotAvailable) == (not hasattr(lucid.func, "vmap"))
    for case in cells.values():
        if not isinstance(case, h.NotAvailable):
            ok, msg = h.compare(h.run_once(case), floor, 1e-3, w13.ATOL)
            assert ok, msg
    ok, msg = h.compare(w13.reference("loop"), floor, 0, 0)
    assert ok, msg
