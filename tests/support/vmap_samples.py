"""The pieces of the vmap table (tests/ops/test_vmap_table.py): sample inputs, calls, and the loop.

A sample call `Call(name, *args, **kwargs)` holds the op's arguments, with tensor placeholders
(`T` normal, `P` positive, `U` in (-0.9, 0.9), `Idx` int64 indices, `Mask` booleans, `Well`
well-conditioned matrices, `Spd`, `Q` quantile levels) among them, also inside lists (cat's
tensors). A placeholder makes one fresh logical tensor per batch element; the test vmaps the
call over one placeholder (or all) and compares with the op run once per element, stacked.
"""
import zlib

import numpy as np

import lucid

B = 3                                       # the batch size of every case


class Leaf:
    """A tensor argument: its logical shape and how to draw one value of it."""

    def __init__(self, shape, draw):
        self.shape = tuple(shape)
        self.draw = draw

    def make(self, rng):
        return lucid.tensor(self.draw(rng, self.shape))


def T(*shape):
    return Leaf(shape, lambda rng, s: rng.standard_normal(s))


def P(*shape):
    return Leaf(shape, lambda rng, s: rng.uniform(0.5, 2.0, s))


def U(*shape):
    return Leaf(shape, lambda rng, s: rng.uniform(-0.9, 0.9, s))


def NZ(*shape):
    return Leaf(shape, lambda rng, s: rng.choice([-1.0, 1.0], s) * rng.uniform(0.5, 2.0, s))


def Z(*shape):
    """complex128 values, normal real and imaginary parts."""
    return Leaf(shape, lambda rng, s: rng.standard_normal(s) + 1j * rng.standard_normal(s))


def Mask(*shape):
    return Leaf(shape, lambda rng, s: rng.random(s) < 0.5)


def Q(n):
    """n quantile levels in [0, 1]."""
    return Leaf((n,), lambda rng, s: np.sort(rng.random(s)))


def Idx(shape, high):
    """int64 indices in [0, high)."""
    return Leaf(shape, lambda rng, s: rng.integers(0, high, s).astype(np.int64))


def Distinct(shape, high):
    """int64 indices in [0, high), distinct along the last dim (scatter writes no index twice)."""
    def draw(rng, s):
        rows = [rng.permutation(high)[:s[-1]] for _ in range(int(np.prod(s[:-1])))]
        return np.array(rows, dtype=np.int64).reshape(s)
    return Leaf(shape, draw)


def Well(n, *lead):
    """Well-conditioned n x n matrices: Gaussian entries plus 4 I."""
    return Leaf(lead + (n, n), lambda rng, s: rng.standard_normal(s) + 4 * np.eye(n))


def Spd(n):
    def draw(rng, s):
        x = rng.standard_normal(s)
        return x @ x.T + n * np.eye(n)
    return Leaf((n, n), draw)


def Upper(n):
    """An upper-triangular matrix with a dominant diagonal."""
    return Leaf((n, n), lambda rng, s: np.triu(rng.standard_normal(s)) + 4 * np.eye(n))


class Call:
    """One sample call of a registered op: lucid.<name>(*args, **kwargs), or fn(*args, **kwargs)
    (a composite the op needs, or its Tensor method spelling)."""

    def __init__(self, name, *args, fn=None, label="", **kwargs):
        self.name, self.args, self.kwargs, self.fn, self.label = name, args, kwargs, fn, label

    def leaves(self):
        """The placeholders, in order (list items included)."""
        out = []
        for a in list(self.args) + list(self.kwargs.values()):
            for item in (a if isinstance(a, list) else [a]):
                if isinstance(item, Leaf):
                    out.append(item)
        return out

    def function(self):
        if self.fn is not None:
            return self.fn
        module, _, short = self.name.rpartition(".")
        return getattr(lucid.linalg if module == "linalg" else lucid, short)

    def bound(self):
        """f(*tensors): the call with its placeholders filled in order by tensors."""
        f = self.function()

        def call(*tensors):
            it = iter(tensors)

            def fill(a):
                if isinstance(a, list):
                    return [fill(item) for item in a]
                return next(it) if isinstance(a, Leaf) else a
            args = [fill(a) for a in self.args]
            kwargs = {k: fill(v) for k, v in self.kwargs.items()}
            return f(*args, **kwargs)
        return call

    def describe(self):
        parts = [_show(a) for a in self.args] + [f"{k}={_show(v)}" for k, v in self.kwargs.items()]
        return f"{self.label or self.name}({', '.join(parts)})"


def _show(a):
    if isinstance(a, list):
        return "[" + ", ".join(_show(item) for item in a) + "]"
    if isinstance(a, Leaf):
        return "T" + "x".join(map(str, a.shape)) if a.shape else "T0d"
    return repr(a)


def rng_for(text):
    return np.random.default_rng(zlib.crc32(text.encode()))


def batched(leaf, rng, in_dim):
    """(B values of leaf, the tensor stacking them at in_dim)."""
    values = [leaf.make(rng) for _ in range(B)]
    stacked = np.stack([v.numpy() for v in values], axis=in_dim % (len(leaf.shape) + 1))
    return values, lucid.tensor(stacked)


def nested(leaf, rng, outer):
    """(outer * B values of leaf, the tensor of them with the batch dims (outer, B) leading)."""
    values = [leaf.make(rng) for _ in range(outer * B)]
    stacked = np.stack([v.numpy() for v in values]).reshape((outer, B) + leaf.shape)
    return values, lucid.tensor(stacked)


def regrouped(expected, batch):
    """stack_results' result with its leading dim split into the batch dims."""
    if isinstance(expected, tuple):
        kind, parts = expected
        return kind, [regrouped(p, batch) for p in parts]
    return expected.reshape(batch + expected.shape[1:])


def looped(f, per_element):
    """f on each element's arguments, the results stacked (tuples elementwise, their type kept)."""
    return stack_results([f(*args) for args in per_element])


def stack_results(results):
    first = results[0]
    if isinstance(first, lucid.Tensor):
        return np.stack([r.numpy() for r in results])
    if isinstance(first, (tuple, list)):
        parts = [stack_results([r[i] for r in results]) for i in range(len(first))]
        return type(first), parts
    raise TypeError(f"the op returned a {type(first).__name__}")


def assert_matches(actual, expected, where):
    """actual (vmap's result) equals expected (stack_results of the loop): values, dtypes, and
    the type of each tuple (a named tuple stays one)."""
    if isinstance(expected, tuple):
        kind, parts = expected
        assert type(actual) is kind, f"{where}: {type(actual).__name__}, not {kind.__name__}"
        assert len(actual) == len(parts), where
        for i, (a, e) in enumerate(zip(actual, parts)):
            assert_matches(a, e, f"{where}[{i}]")
        return
    assert isinstance(actual, lucid.Tensor), f"{where}: got a {type(actual).__name__}"
    got = actual.numpy()
    assert got.shape == expected.shape, f"{where}: shape {got.shape}, expected {expected.shape}"
    assert got.dtype == expected.dtype, f"{where}: dtype {got.dtype}, expected {expected.dtype}"
    if got.dtype.kind in "fc":
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-11, err_msg=where)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=where)
