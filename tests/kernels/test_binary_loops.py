"""The one-pass loops of lucid/kernels/binary_loops.h (the binary functions, where, masked_fill,
clamp, nan_to_num, sinc, neg): on small contiguous leaves an op's forward and its backward run
there; on a strided view of the same values the op takes NumPy's kernels and its rules. Both
must give the same values and gradients, in float32 and float64, on special values (signed
zeros, infinities, NaN, ties, the clamp bounds, tiny arguments of sinc), and under create_graph
the loops' forward must still build a graph whose second derivatives match the rules'."""
import numpy as np
import pytest

import lucid

VALUES = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, np.inf, -np.inf, np.nan, 1e-3, -7e-3,
                   2.0, 0.25, 1e30, -1e-30])
X = np.repeat(VALUES, len(VALUES))              # every pair of special values, ties included
Y = np.tile(VALUES, len(VALUES))
MASK = np.random.default_rng(0).random(X.size) < 0.5

BINARY = {
    "maximum": lucid.maximum, "minimum": lucid.minimum, "xlogy": lucid.xlogy,
    "copysign": lucid.copysign, "atan2": lucid.atan2, "hypot": lucid.hypot, "fmod": lucid.fmod,
    "remainder": lucid.remainder, "logaddexp": lucid.logaddexp, "logaddexp2": lucid.logaddexp2,
    "pow": lucid.pow, "div": lucid.div, "add": lucid.add, "sub": lucid.sub,
    "where": lambda x, y: lucid.where(lucid.tensor(MASK[:x.shape[0]]), x, y),
}
UNARY = {
    "neg": lucid.neg, "sinc": lucid.sinc, "nan_to_num": lucid.nan_to_num,
    "nan_to_num_values": lambda x: lucid.nan_to_num(x, nan=1.5, posinf=1e300, neginf=-3.0),
    "clamp": lambda x: lucid.clamp(x, -0.5, 2), "clamp_min": lambda x: lucid.clamp_min(x, 0.25),
    "clamp_max": lambda x: lucid.clamp_max(x, 0), "clamp_crossed": lambda x: lucid.clamp(x, 2, -1),
    "masked_fill": lambda x: lucid.masked_fill(x, lucid.tensor(MASK[:x.shape[0]]), -1.25),
}
DTYPES = [np.float32, np.float64]


def _leaf(values, dtype, contiguous):
    """A leaf over values: contiguous (the loops) or a strided view (NumPy and the rules)."""
    arr = values.astype(dtype)
    if not contiguous:
        spread = np.zeros(arr.size * 2, dtype)
        spread[::2] = arr
        arr = spread[::2]
    return lucid.tensor(arr, requires_grad=True)


def _run(op, inputs, dtype, contiguous):
    leaves = [_leaf(v, dtype, contiguous) for v in inputs]
    out = op(*leaves)
    out.backward(lucid.tensor(np.linspace(-2, 2, out.shape[0]).astype(dtype)))
    return [out.detach().numpy()] + [t.grad.numpy() for t in leaves]


def _assert_same(fast, general, dtype, what):
    # libm's float functions and NumPy's SIMD ones may differ in the last bits
    rtol = 4e-6 if dtype == np.float32 else 1e-13
    for name, u, v in zip(("value", "grad x", "grad y"), fast, general):
        same = (u == v) | np.isclose(u, v, rtol=rtol, atol=0, equal_nan=True)
        bad = np.nonzero(~same)[0]
        assert bad.size == 0, (f"{what} {name}: loops {u[bad[:4]]} rules {v[bad[:4]]} at "
                               f"x={X[bad[:4]]} y={Y[bad[:4]]}")


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_loops_match_the_rules_on_special_values(name, dtype):
    fast = _run(BINARY[name], (X, Y), dtype, True)
    general = _run(BINARY[name], (X, Y), dtype, False)
    _assert_same(fast, general, dtype, name)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_loops_match_the_rules_on_special_values(name, dtype):
    _assert_same(_run(UNARY[name], (X,), dtype, True), _run(UNARY[name], (X,), dtype, False),
                 dtype, name)


def test_maximum_ties_split_the_gradient_and_nan_sends_it_to_both():
    x = lucid.tensor(np.array([1.0, 2.0, np.nan, 3.0], np.float32), requires_grad=True)
    y = lucid.tensor(np.array([1.0, 5.0, 1.0, 2.0], np.float32), requires_grad=True)
    lucid.maximum(x, y).backward(lucid.tensor(np.ones(4, np.float32)))
    assert x.grad.tolist() == [0.5, 0.0, 1.0, 1.0]
    assert y.grad.tolist() == [0.5, 1.0, 1.0, 0.0]


def test_clamp_passes_the_gradient_at_its_bounds():
    x = lucid.tensor(np.array([-0.5, 0.5, -0.7, 0.9, np.nan], np.float32), requires_grad=True)
    lucid.clamp(x, -0.5, 0.5).backward(lucid.tensor(np.ones(5, np.float32)))
    assert x.grad.tolist() == [1.0, 1.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize("name", ["maximum", "xlogy", "atan2", "pow", "div", "where"])
def test_second_derivatives_through_the_loops_match_the_rules(name):
    rng = np.random.default_rng(1)
    xv, yv = rng.uniform(0.5, 2.0, 6), rng.uniform(-1.5, 1.5, 6)
    results = []
    for contiguous in (True, False):
        x, y = _leaf(xv, np.float64, contiguous), _leaf(yv, np.float64, contiguous)
        out = BINARY[name](x * x, y)
        gx, gy = lucid.autograd.grad(out.sum(), (x, y), create_graph=True)
        assert gx.requires_grad                  # x * x feeds every gx
        second = lucid.autograd.grad((gx * gy).sum(), (x, y), allow_unused=True)
        results.append([None if t is None else t.numpy() for t in second])
    for u, v in zip(*results):
        assert (u is None) == (v is None)
        if u is not None:
            np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-14)


def test_maximum_saves_its_inputs_and_refuses_an_in_place_change():
    x = lucid.tensor(np.array([1.0, 2.0], np.float32), requires_grad=True)
    a = x * 1.0
    out = lucid.maximum(a, lucid.tensor(np.array([0.0, 3.0], np.float32)))
    assert out.grad_fn._saved_self is not None
    before = x.grad
    a.add_(1.0)
    with pytest.raises(RuntimeError, match="inplace|in-place|modified"):
        out.backward(lucid.tensor(np.ones(2, np.float32)))
    assert x.grad is before


@pytest.mark.parametrize("n", [511, 512, 1023, 1024, 2047, 2048])
def test_every_size_around_the_loops_limits_gives_the_rules_values(n):
    rng = np.random.default_rng(n)
    xv, yv = rng.uniform(0.5, 2.0, n), rng.uniform(-1.5, 1.5, n)
    for name in ("pow", "atan2", "logaddexp", "hypot"):
        fast = _run(BINARY[name], (xv, yv), np.float32, True)
        general = _run(BINARY[name], (xv, yv), np.float32, False)
        for u, v in zip(fast, general):
            np.testing.assert_allclose(u, v, rtol=4e-6, atol=0, err_msg=f"{name} n={n}")


def test_where_saves_its_condition_and_refuses_an_in_place_change():
    x = lucid.tensor(np.array([1.0, 2.0, 3.0], np.float32), requires_grad=True)
    y = lucid.tensor(np.array([4.0, 5.0, 6.0], np.float32), requires_grad=True)
    c = lucid.tensor(np.array([True, False, True]))
    out = lucid.where(c, x, y)
    c[0] = False                                 # as PyTorch: the saved condition is checked
    with pytest.raises(RuntimeError, match="inplace|in-place|modified"):
        out.backward(lucid.tensor(np.ones(3, np.float32)))
    assert x.grad is None and y.grad is None
