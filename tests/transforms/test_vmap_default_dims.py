"""vmap of ops whose dim arguments are left at their defaults: a default such as diagonal's
dim1=0 or flatten's start_dim=0 names a logical dim, so the batching rule shifts it past the
batch dims exactly as a dim that was passed (it once named the batch dim, silently). Each case
equals a loop over the batch, at one and at two levels, and at a batch dim that is not first."""
import numpy as np
import pytest

import lucid
from lucid.func import vmap

CASES = [
    ("diagonal", lambda t: t.diagonal()),
    ("lucid.diagonal", lambda t: lucid.diagonal(t)),
    ("flatten", lambda t: t.flatten()),
    ("lucid.flatten", lambda t: lucid.flatten(t)),
    ("flatten start 1", lambda t: t.flatten(1)),
    ("chunk", lambda t: t.chunk(3)[1]),
    ("lucid.chunk", lambda t: lucid.chunk(t, 3)[2]),
    ("split", lambda t: t.split(1)[2]),
    ("split sizes", lambda t: t.split([1, 2])[1]),
    ("unbind", lambda t: t.unbind()[1]),
    ("lucid.unbind", lambda t: lucid.unbind(t)[0]),
    ("sort", lambda t: t.sort()[0]),
    ("sort indices", lambda t: t.sort()[1]),
    ("argsort", lambda t: t.argsort()),
    ("topk", lambda t: t.topk(2)[0]),
    ("kthvalue", lambda t: t.kthvalue(2)[0]),
    ("cross", lambda t: lucid.linalg.cross(t[:, :3], t[:, 1:])),
    ("matrix_norm", lambda t: lucid.linalg.matrix_norm(t)),
    ("matrix_norm keepdim", lambda t: lucid.linalg.matrix_norm(t, keepdim=True)),
    ("norm fro", lambda t: lucid.linalg.norm(t, "fro")),
    ("trace", lambda t: t[:, :3].trace()),
    ("cat", lambda t: lucid.cat([t, t * 2])),
    ("stack", lambda t: lucid.stack([t, t * 2])),
]


def loop(f, x, dim=0):
    return np.stack([f(x.select(dim, i)).numpy() for i in range(x.shape[dim])])


@pytest.fixture
def x(rng):
    return lucid.tensor(rng.standard_normal((5, 3, 4)), dtype=lucid.float64)


@pytest.mark.parametrize("name,f", CASES, ids=[n for n, _ in CASES])
def test_a_default_dim_names_a_logical_dim(name, f, x):
    got = vmap(f)(x)
    expected = loop(f, x)
    assert tuple(got.shape) == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("name,f", CASES, ids=[n for n, _ in CASES])
def test_a_default_dim_under_two_levels_and_a_moved_batch_dim(name, f, rng):
    y = lucid.tensor(rng.standard_normal((2, 3, 4, 5)), dtype=lucid.float64)
    got = vmap(vmap(f, in_dims=2), in_dims=0)(y)
    expected = np.stack([loop(f, y[i], dim=2) for i in range(2)])
    assert tuple(got.shape) == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)
