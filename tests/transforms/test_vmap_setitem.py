"""x[key] = v under vmap has a batching rule (no per-element loop): a batched index tensor,
non-adjacent advanced indices, a batched or plain value, each against a loop of the unbatched
writes; a batched boolean mask key (a data-dependent shape) raises."""
import itertools

import numpy as np
import pytest

import lucid

B = 3
COLUMNS = lucid.tensor(np.array([4, 1]))


def _normal(rng, *shape):
    return lucid.tensor(rng.standard_normal(shape))


def _indices(rng, shape, high):
    return lucid.tensor(rng.integers(0, high, shape).astype(np.int64))


# (name, x's shape, write(x, index, value), draw an index, draw a value)
CASES = [
    ("x[i] = v", (4, 5), lambda x, i, v: x.__setitem__(i, v),
     lambda r: _indices(r, (2,), 4), lambda r: _normal(r, 5)),
    ("x[:, i] = v", (4, 5), lambda x, i, v: x.__setitem__((slice(None), i), v),
     lambda r: _indices(r, (2,), 5), lambda r: _normal(r, 4, 1)),
    ("x[i, :, cols] = v", (3, 4, 5), lambda x, i, v: x.__setitem__((i, slice(None), COLUMNS), v),
     lambda r: _indices(r, (2,), 3), lambda r: _normal(r, 4)),
    ("x[[0, 1], :, [0, 1]] = v", (3, 4, 5),
     lambda x, i, v: x.__setitem__(([0, 1], slice(None), [0, 1]), v * i),
     lambda r: _normal(r, 1), lambda r: _normal(r, 2, 4)),
    ("x[:, 1:, i] = 2", (3, 4, 5), lambda x, i, v: x.__setitem__((slice(None), slice(1, None), i),
                                                               2.0 + v),
     lambda r: _indices(r, (2, 2), 5), lambda r: _normal(r)),
]


def _written(write):
    def f(x, i, v):
        x = x.clone()
        write(x, i, v)
        return x
    return f


@pytest.mark.parametrize("case,dims", list(itertools.product(
    CASES, [(0, 0, 0), (0, 0, None), (0, None, 0), (0, None, None), (1, -1, 0)])),
    ids=lambda c: c[0] if isinstance(c[0], str) else str(c))
def test_a_write_equals_the_loop(case, dims):
    name, shape, write, index, value = case
    rng = np.random.default_rng(len(name) + sum(d or 0 for d in dims))
    draws = ([_normal(rng, *shape) for _ in range(B)], [index(rng) for _ in range(B)],
             [value(rng) for _ in range(B)])
    args = [vals[0] if d is None else lucid.tensor(np.stack([v.numpy() for v in vals], d % (
        vals[0].ndim + 1))) for vals, d in zip(draws, dims)]
    f = _written(write)
    got = lucid.func.vmap(f, in_dims=dims)(*args)
    want = [f(*[vals[0] if d is None else vals[b] for vals, d in zip(draws, dims)]).numpy()
            for b in range(B)]
    np.testing.assert_allclose(got.numpy(), np.stack(want), rtol=0, atol=0)


def test_a_batched_boolean_mask_key_raises():
    x, mask = lucid.zeros(B, 4, dtype=lucid.float64), lucid.tensor(np.eye(B, 4) > 0)
    with pytest.raises(RuntimeError, match="batched boolean mask"):
        lucid.func.vmap(_written(lambda a, m, v: a.__setitem__(m, v)), in_dims=(0, 0, None))(
            x, mask, 1.0)
    assert not x.numpy().any()
