"""W12's per-sample gradients: the NumPy floor's hand-written batched gradients equal lucid's loop
of func.grad and the batch gradient (float64), lucid.func.vmap (when it exists) and torch.func
equal the floor, and the harness's float32 cells pass their checks."""
import sys

import numpy as np
import pytest

import lucid
from support.paths import ROOT

sys.path.insert(0, str(ROOT))
from benchmarks import _harness as h  # noqa: E402
from benchmarks import _tanh_mlp  # noqa: E402
from benchmarks import w12_per_sample_grads as w12  # noqa: E402


def float64_problem():
    params, X, Y = w12.values(np.float64)
    return params, X, Y, w12.numpy_per_example_grads(params, X, Y)


def assert_same_grads(got, want):
    assert len(got) == len(want) == 6
    for g, w in zip(got, want):
        assert g.shape == w.shape == (w12.BATCH,) + w.shape[1:]
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_the_floor_equals_lucids_loop_of_grad():
    params, X, Y, floor = float64_problem()
    got = w12.lucid_loop(lucid, tuple(lucid.tensor(a) for a in params), lucid.tensor(X),
                         lucid.tensor(Y))
    assert all(g.dtype == lucid.float64 for g in got)
    assert_same_grads([g.numpy() for g in got], floor)


def test_the_floors_mean_is_the_batch_gradient():
    """The mean over examples of the per-example gradients is the gradient of the mean loss."""
    params, X, Y, floor = float64_problem()
    leaves = [lucid.tensor(a, requires_grad=True) for a in params]
    logp = _tanh_mlp.forward(leaves, lucid.tensor(X)).log_softmax(1)
    loss = -logp.gather(1, lucid.tensor(Y).reshape(-1, 1)).mean()
    for g, per_example in zip(lucid.autograd.grad(loss, leaves), floor):
        np.testing.assert_allclose(g.numpy(), per_example.mean(axis=0), rtol=1e-10, atol=1e-13)


def test_lucid_vmap_equals_the_floor():
    if not hasattr(lucid.func, "vmap"):
        pytest.skip("lucid.func.vmap does not exist yet (W12's main cell is n/a until it does)")
    params, X, Y, floor = float64_problem()
    per_sample = lucid.func.vmap(w12.lucid_example_grad(lucid), in_dims=(None, 0, 0))
    got = per_sample(tuple(lucid.tensor(a) for a in params), lucid.tensor(X), lucid.tensor(Y))
    assert_same_grads([g.numpy() for g in got], floor)


def test_torch_func_equals_the_floor():
    torch = pytest.importorskip("torch", reason="torch is optional (W12's torch.func column)")
    params, X, Y, floor = float64_problem()
    per_sample = torch.func.vmap(torch.func.grad(w12.example_loss), in_dims=(None, 0, 0))
    got = per_sample(tuple(torch.from_numpy(a) for a in params), torch.from_numpy(X),
                     torch.from_numpy(Y))
    assert_same_grads([g.numpy() for g in got], floor)


def test_the_harness_cells_pass_their_float32_checks():
    floor = h.run_once(w12.setup(h.Lib("numpy", np), quick=True))
    assert [g.dtype for g in floor] == [np.float32] * 6
    cells = w12.setup(h.Lib("lucid", lucid), quick=True)
    assert list(cells) == ["vmap", "loop"]
    assert isinstance(cells["vmap"], h.NotAvailable) == (not hasattr(lucid.func, "vmap"))
    for case in cells.values():
        if not isinstance(case, h.NotAvailable):
            ok, msg = h.compare(h.run_once(case), floor, 1e-3, w12.ATOL)
            assert ok, msg
    ok, msg = h.compare(w12.reference("loop"), floor, 0, 0)
    assert ok, msg
