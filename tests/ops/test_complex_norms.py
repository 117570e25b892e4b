"""norm, linalg.vector_norm, linalg.norm and logsumexp of complex tensors against PyTorch: values,
dtypes (a norm is real, logsumexp complex) and gradients, with a zero entry where the gradient
of a norm has its special case, in complex128 and complex64."""
import numpy as np
import pytest

import lucid

torch = pytest.importorskip("torch", reason="torch is not installed: these tests compare the "
                            "complex norms with PyTorch")

INF = float("inf")
CASES = {
    **{f"norm p={p}": (lambda m, p=p: m.norm(m.x, p, dim=1)) for p in (2, 1, 3, 0.5, INF, -INF, 0)},
    "norm fro": lambda m: m.norm(m.x, "fro"),
    **{f"vector_norm ord={o}": (lambda m, o=o: m.linalg.vector_norm(m.x, o, dim=-1))
       for o in (2, 1, 3, INF, -INF, 0)},
    "linalg.norm": lambda m: m.linalg.norm(m.x),
    "linalg.norm dim=0": lambda m: m.linalg.norm(m.x, dim=0, keepdim=True),
    **{f"linalg.norm ord={o}": (lambda m, o=o: m.linalg.norm(m.x, o)) for o in (1, -1, INF, "fro")},
    "logsumexp": lambda m: m.logsumexp(m.x, 1),
    "logsumexp all dims": lambda m: m.logsumexp(m.x, (0, 1), keepdim=True),
}


class Namespace:
    """The library (lucid or torch) with its input x, so one lambda serves both."""

    def __init__(self, lib, x):
        self.norm, self.linalg, self.logsumexp, self.x = lib.norm, lib.linalg, lib.logsumexp, x


def value_and_grad(lib, a, weight, fn):
    x = (lib.tensor(a, requires_grad=True))
    y = fn(Namespace(lib, x))
    w = lib.tensor(weight.astype(a.dtype) if np.iscomplexobj(y.detach().numpy()) else
                   weight.real.astype(a.real.dtype))
    loss = (y * w).real.sum() if y.is_complex() else (y * w).sum()
    if y.requires_grad:
        loss.backward()
    grad = np.zeros_like(a) if x.grad is None else x.grad.numpy()
    return y.detach().numpy(), str(y.dtype).replace("torch.", ""), grad


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("name", sorted(CASES))
def test_complex_norms_and_logsumexp_match_torch(name, dtype):
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(dtype)
    a[0, 1] = 0
    out_shape = CASES[name](Namespace(lucid, lucid.tensor(a)))
    weight = rng.standard_normal(out_shape.shape) + 1j * rng.standard_normal(out_shape.shape)
    got = value_and_grad(lucid, a, weight, CASES[name])
    want = value_and_grad(torch, a, weight, CASES[name])
    tol = 1e-12 if dtype == np.complex128 else 2e-5
    np.testing.assert_allclose(got[0], want[0], rtol=tol, atol=tol)
    assert got[1] == want[1]
    np.testing.assert_allclose(got[2], want[2], rtol=tol, atol=tol)
