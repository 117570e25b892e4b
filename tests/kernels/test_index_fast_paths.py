"""x[key] with integer arrays, and the three paths of index_backward (the gradient of x[key] and
of the ops that are x[key]). Integer arrays on the leading dims become row numbers (checked,
negatives from the end) and rows are copied out by a typed loop when the arrays are C-contiguous
intp of one shape; otherwise NumPy indexes. The gradient scatters those rows back by a typed loop
(after np.ravel_multi_index for broadcast or int32 arrays); basic keys are assigned; every other
key goes through np.add.at. Each is checked against NumPy / np.add.at in float32 and float64,
with repeated and negative indices, and by gradcheck/gradgradcheck in float64."""
import numpy as np
import pytest

import lucid
from support.checks import assert_close
from lucid.autograd import gradcheck, gradgradcheck

DTYPES = [np.float32, np.float64]
ROWS = np.array([0, 2, 2, -1, 1, 0, 3, 2])

# (x shape, key builder): keys of integer arrays on the leading dims (the typed scatter)
SCATTERED = [
    ((4, 5), lambda: (ROWS, np.array([1, 4, 4, 0, -2, 1, 3, 4]))),        # x[i, j], repeats
    ((4, 5), lambda: ROWS),                                                # x[i]: rows of 5
    ((4, 3, 2), lambda: ROWS),                                             # rows of 3x2
    ((4, 3, 2), lambda: (ROWS, ROWS % 3)),                                 # rows of 2
    ((4, 5), lambda: ROWS.reshape(2, 4)),                                  # a 2-d index
    ((4, 5), lambda: (ROWS[:, None], np.array([[0, 1, 1]]))),              # broadcast arrays
    ((4, 5), lambda: (ROWS.astype(np.int32), np.zeros(8, np.int32))),      # int32 arrays
    ((6,), lambda: np.array([5, 5, -6, 0])),                               # 1-d x
]
# keys that take assignment (basic) or np.add.at (the rest)
OTHERS = [
    ((4, 5), lambda: (slice(1, 3),)), ((4, 5), lambda: (slice(None), 2)),
    ((4, 5), lambda: (None, Ellipsis, 1)), ((4, 5), lambda: (slice(None, None, 2),)),
    ((4, 5), lambda: 3), ((4, 5), lambda: (slice(None), ROWS % 5)),
    ((4, 5), lambda: np.arange(20).reshape(4, 5) % 3 == 0), ((4, 5), lambda: (ROWS, slice(1, 4))),
]


def _reference(shape, key, g):
    out = np.zeros(shape, dtype=g.dtype)
    np.add.at(out, key, g)
    return out


def _check_gradient(shape, key, dtype, strided_grad=False):
    x = lucid.tensor(np.random.default_rng(0).standard_normal(shape).astype(dtype),
                     requires_grad=True)
    y = x[key]
    g = np.random.default_rng(1).standard_normal(y.shape).astype(dtype)
    if strided_grad:                                      # not C-contiguous: no typed loop
        wide = np.repeat(g[..., None], 2, axis=-1)
        y.backward(lucid.from_numpy(wide)[..., 0])
    else:
        y.backward(lucid.from_numpy(g.copy()))
    assert x.grad.numpy().dtype == dtype
    assert_close(x.grad, _reference(shape, key, g), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("strided_grad", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize("shape,key", SCATTERED, ids=[f"s{i}" for i in range(len(SCATTERED))])
def test_integer_array_keys_scatter_like_add_at(shape, key, dtype, strided_grad):
    _check_gradient(shape, key(), dtype, strided_grad)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("shape,key", OTHERS, ids=[f"o{i}" for i in range(len(OTHERS))])
def test_other_keys_give_add_at_values(shape, key, dtype):
    _check_gradient(shape, key(), dtype)


@pytest.mark.parametrize("shape,key", SCATTERED[:5] + OTHERS[:2] + OTHERS[5:6],
                         ids=[f"k{i}" for i in range(8)])
def test_index_gradient_gradcheck_and_create_graph_in_float64(shape, key):
    k = key()
    x = lucid.tensor(np.random.default_rng(2).standard_normal(shape), requires_grad=True)
    fn = lambda x: x[k] * x[k]
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))
    assert gradcheck(lambda x: x[k] * 2.0, (x,), check_forward_ad=True)


def test_log_softmax_pick_gradient_matches_the_hand_written_one():
    rng = np.random.default_rng(3)
    z0, labels = rng.standard_normal((50, 10)), rng.integers(0, 10, 50)
    z = lucid.tensor(z0, requires_grad=True)
    logp = z - z.exp().sum(dim=1, keepdim=True).log()
    (-logp[np.arange(50), labels].mean()).backward()
    p = np.exp(z0) / np.exp(z0).sum(1, keepdims=True)
    p[np.arange(50), labels] -= 1.0
    assert_close(z.grad, p / 50, rtol=1e-12, atol=1e-15)


def test_gather_and_take_along_dim_gradients_accumulate_repeats():
    x = lucid.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    idx = lucid.tensor(np.array([[0, 0], [3, 3], [1, 2]]))
    lucid.gather(x, 1, idx).sum().backward()
    want = np.zeros((3, 4))
    np.add.at(want, (np.arange(3)[:, None], idx.numpy()), 1.0)
    assert_close(x.grad, want, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("shape,key", SCATTERED, ids=[f"s{i}" for i in range(len(SCATTERED))])
def test_integer_array_keys_pick_like_numpy(shape, key, dtype, layout):
    a = np.random.default_rng(4).standard_normal(shape).astype(dtype)
    if layout == "transposed":                    # not C-contiguous: NumPy indexes
        a = np.ascontiguousarray(a.T).T
    k = key()
    got = lucid.from_numpy(a)[k]
    assert got.numpy().dtype == dtype
    assert_close(got, a[k], rtol=0, atol=0)


@pytest.mark.parametrize("key", [(np.array([0, 4]),), (ROWS, np.array([0, 1, 2, 3, 5, 0, 0, 0])),
                                 (np.array([-5]),), (np.array([1]), np.array([-6]))],
                         ids=["row 4", "col 5", "row -5", "col -6"])
def test_out_of_range_integer_arrays_raise_index_error(key):
    a = np.arange(20.0).reshape(4, 5)
    x = lucid.tensor(a, requires_grad=True)
    with pytest.raises(IndexError, match="out of range"):
        x[key]
    assert np.array_equal(x.detach().numpy(), a) and x.grad is None
