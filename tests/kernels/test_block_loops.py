"""The typed loops over one block of adjacent dims (lucid/kernels/block_loops.h) against NumPy in float32
and float64: the reductions sum, mean, amax/amin and the broadcast gradient's sum_to, and binary
arithmetic with one operand broadcast over a block of the other's dims. The typed path takes
C-contiguous float32/float64 data reduced over (or stretched over) adjacent dims; the NumPy path
takes the rest (strided input, dims with a gap, integers, mixed dtypes, empty tensors), and both
are checked. amax/amin build their tie-sharing weight from the saved input when backward runs."""
import numpy as np
import pytest

import lucid
from support.checks import assert_close
from lucid.autograd import gradcheck, gradgradcheck

DTYPES = [np.float32, np.float64]
# (shape, dims): rows (inner 1), columns (outer 1), a middle block, lengths around the vector
# widths of the row sum's eight accumulators
BLOCKS = [((7, 10), (1,)), ((7, 10), (0,)), ((3, 4, 5), (1,)), ((3, 4, 5), (0, 1)),
          ((3, 4, 5), (1, 2)), ((2, 3, 4, 5), (1, 2)), ((5, 1), (1,)), ((1, 9), (0,)),
          ((4, 7), (1,)), ((4, 8), (1,)), ((4, 9), (1,)), ((3, 17), (1,)), ((2, 33), (1,)),
          ((6,), (0,)), ((257, 3), (0,))]
TOL = {np.float32: dict(rtol=2e-6, atol=1e-6), np.float64: dict(rtol=1e-13, atol=1e-13)}


def _data(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _ids(blocks):
    return [f"{s}-{d}" for s, d in blocks]


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("shape,dims", BLOCKS, ids=_ids(BLOCKS))
def test_sum_and_mean_over_a_block_match_numpy(shape, dims, keepdim, dtype):
    a = _data(shape, dtype)
    t = lucid.from_numpy(a.copy())
    for op, ref in ((lucid.sum, np.sum), (lucid.mean, np.mean)):
        got = op(t, dim=dims, keepdim=keepdim)
        want = ref(a.astype(np.float64), axis=dims, keepdims=keepdim).astype(dtype)
        assert got.numpy().dtype == dtype
        assert_close(got, want, msg=f"{op.__name__} {shape} {dims}", **TOL[dtype])
    assert np.array_equal(t.numpy(), a)                   # the input is untouched


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("shape,dims", BLOCKS, ids=_ids(BLOCKS))
def test_amax_and_amin_over_a_block_equal_numpy(shape, dims, keepdim, dtype):
    a = _data(shape, dtype)
    t = lucid.from_numpy(a)
    for op, ref in ((lucid.amax, np.amax), (lucid.amin, np.amin)):
        got = op(t, dim=dims, keepdim=keepdim)
        assert_close(got, ref(a, axis=dims, keepdims=keepdim), rtol=0, atol=0)


def test_float64_columns_add_in_numpys_order():
    a = _data((1000, 3), np.float64) * 10.0 ** np.arange(-8, 8, 16 / 3000).reshape(1000, 3)
    got = lucid.from_numpy(a).sum(dim=0).numpy()
    assert np.array_equal(got, a.sum(axis=0))


@pytest.mark.parametrize("case", ["strided", "gap", "int32", "int64", "empty"])
def test_numpy_path_gives_the_same_values(case):
    a = _data((4, 5, 6), np.float64)
    dims = (1,)
    if case == "strided":
        t = lucid.from_numpy(a).transpose(0, 2)
        a = a.transpose(2, 1, 0)
    elif case == "gap":
        t, dims = lucid.from_numpy(a), (0, 2)
    elif case == "int32":
        a = (a * 10).astype(np.int32)
        t = lucid.from_numpy(a)
    elif case == "int64":
        a = (a * 10).astype(np.int64)
        t = lucid.from_numpy(a)
    else:
        a = np.zeros((0, 5, 6))
        t = lucid.from_numpy(a)
    assert_close(t.sum(dim=dims, keepdim=True), a.sum(axis=dims, keepdims=True), rtol=1e-3)
    if case != "empty":
        assert_close(t.amax(dim=dims), a.max(axis=dims), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_extremes_propagate_nan_and_keep_infinities(dtype):
    a = np.array([[1.0, np.nan, 3.0], [np.inf, 2.0, -np.inf], [-1.0, -2.0, np.nan],
                  [np.nan, 5.0, 6.0]], dtype=dtype)
    t = lucid.from_numpy(a)
    for dim in (0, 1):
        assert_close(t.amax(dim=dim), np.amax(a, axis=dim), rtol=0, atol=0)
        assert_close(t.amin(dim=dim), np.amin(a, axis=dim), rtol=0, atol=0)
    with np.errstate(invalid="ignore"):                 # inf + -inf is NaN, in both
        want = a.sum(axis=1)
    assert_close(t.sum(dim=1), want, rtol=0, atol=0)


@pytest.mark.parametrize("shape,dims", [((3, 4), (1,)), ((3, 4), (0,)), ((2, 3, 4), (1, 2)),
                                        ((2, 3, 4), (0, 2))])
@pytest.mark.parametrize("op", ["amax", "amin", "sum", "mean"])
def test_block_reductions_gradcheck_in_float64(op, shape, dims):
    x = lucid.tensor(np.random.default_rng(1).permutation(np.prod(shape)).reshape(shape) * 0.3,
                     dtype=lucid.float64, requires_grad=True)       # distinct: no ties
    fn = lambda x: getattr(lucid, op)(x, dim=dims, keepdim=True) * 1.5
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))
    assert gradcheck(fn, (x,), check_forward_ad=True)


def test_amax_ties_share_the_gradient_with_create_graph():
    x = lucid.tensor([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]], dtype=lucid.float64, requires_grad=True)
    (g,) = lucid.autograd.grad((x.amax(dim=1) * x.sum(dim=1)).sum(), x, create_graph=True)
    # g = s * w + amax, s the row sums and w the tie-shared weights [0, .5, .5], [.5, 0, .5]
    assert_close(g, [[3.0, 6.5, 6.5], [4.0, 2.0, 4.0]])
    (gg,) = lucid.autograd.grad(g.sum(), x)            # d/dx of sum(s + 3 * amax) = 1 + 3w
    assert_close(gg, [[1.0, 2.5, 2.5], [2.5, 1.0, 2.5]])


def test_amax_backward_after_its_input_changed_in_place_raises():
    x = lucid.tensor([[1.0, 5.0], [4.0, 2.0]], dtype=lucid.float64, requires_grad=True)
    y = x * 1.0
    m = y.amax(dim=1)
    y.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        m.sum().backward()
    assert x.grad is None


def test_detached_amax_shift_gives_the_log_softmax_gradient():
    a = _data((6, 10), np.float64)
    z = lucid.tensor(a, requires_grad=True)
    shifted = z - z.amax(dim=1, keepdim=True).detach()
    logp = shifted - shifted.exp().sum(dim=1, keepdim=True).log()
    logp[np.arange(6), np.arange(6) % 10].sum().backward()
    p = np.exp(a - a.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    want = -p
    want[np.arange(6), np.arange(6) % 10] += 1.0
    assert_close(z.grad, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("small,big", [((4, 1), (4, 5)), ((5,), (4, 5)), ((3, 1, 5), (3, 4, 5)),
                                       ((1, 4, 1), (3, 4, 5)), ((2, 1, 1), (2, 3, 4)),
                                       ((1, 5), (4, 5))])
def test_broadcast_gradient_is_summed_back_like_numpy(small, big, dtype):
    a, b = _data(small, dtype, 1), _data(big, dtype, 2)
    x = lucid.tensor(a, requires_grad=True)
    y = lucid.tensor(b, requires_grad=True)
    g = _data(big, dtype, 3)
    (x + y).backward(lucid.tensor(g))
    lead = len(big) - len(small)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(small)
                                      if s == 1 and big[lead + i] != 1)
    want = g.astype(np.float64).sum(axis=axes, keepdims=True).reshape(small).astype(dtype)
    assert x.grad.numpy().dtype == dtype
    assert_close(x.grad, want, **TOL[dtype])
    assert_close(y.grad, g, rtol=0, atol=0)


def test_broadcast_gradient_gradcheck_in_float64():
    x = lucid.tensor(_data((3, 1, 5), np.float64), requires_grad=True)
    y = lucid.tensor(_data((3, 4, 5), np.float64), requires_grad=True)
    fn = lambda x, y: (x * y + x) * 2.0
    assert gradcheck(fn, (x, y))
    assert gradgradcheck(fn, (x, y))


BINARY = [("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.true_divide)]
# (big, small): the small one stretched over a block of the big one's dims
STRETCHED = [((7, 10), (10,)), ((7, 10), (7, 1)), ((7, 10), (1, 10)), ((3, 4, 5), (3, 1, 5)),
             ((3, 4, 5), (5,)), ((3, 4, 5), (3, 4, 1)), ((3, 4, 5), (1, 1, 5)),
             ((2, 3, 4, 5), (2, 1, 1, 5)), ((2, 1, 4, 5), (2, 1, 1, 5)), ((4, 5), ()),
             ((1, 6), (1, 1)), ((0, 5), (5,)), ((3, 17), (3, 1)), ((2, 33), (33,)),
             # empty: the loop has nothing to do and must read neither operand (an empty small
             # one has no s[0]; the sanitizer build reports the read)
             ((0, 0), (0,)), ((2, 0), (2, 1)), ((0, 3), (1, 3)), ((3, 0, 2), (3, 1, 2))]


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("big,small", STRETCHED, ids=_ids(STRETCHED))
@pytest.mark.parametrize("name,ref", BINARY, ids=[b[0] for b in BINARY])
def test_binary_with_a_stretched_operand_equals_numpy_either_way_round(name, ref, big, small,
                                                                       dtype):
    a, b = _data(big, dtype, 1), np.asarray(_data(small, dtype, 2) + dtype(3))
    x, y = lucid.from_numpy(a.copy()), lucid.from_numpy(b.copy())
    op = getattr(lucid, name)
    got = op(x, y)
    assert got.numpy().dtype == dtype
    assert_close(got, ref(a, b), rtol=0, atol=0)
    assert_close(op(y, x), ref(b, a), rtol=0, atol=0)
    assert np.array_equal(x.numpy(), a) and np.array_equal(y.numpy(), b)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("name,ref", BINARY, ids=[b[0] for b in BINARY])
def test_binary_with_an_expanded_view_equals_numpy(name, ref, dtype):
    a, b = _data((6, 1, 4), dtype, 1) + dtype(3), _data((6, 5, 4), dtype, 2)
    e = lucid.from_numpy(a).expand(6, 5, 4)                  # a stride-0 view
    assert e.numpy().strides[1] == 0
    op = getattr(lucid, name)
    assert_close(op(e, lucid.from_numpy(b)), ref(np.broadcast_to(a, b.shape), b), rtol=0, atol=0)
    assert_close(op(lucid.from_numpy(b), e), ref(b, np.broadcast_to(a, b.shape)), rtol=0, atol=0)


@pytest.mark.parametrize("case", ["both stretched", "gap", "strided big", "strided small",
                                  "mixed dtypes", "int64"])
@pytest.mark.parametrize("name,ref", BINARY, ids=[b[0] for b in BINARY])
def test_binary_numpy_path_gives_the_same_values(name, ref, case):
    a, b = _data((4, 5, 6), np.float64, 1), _data((4, 1, 6), np.float64, 2) + 3.0
    if case == "both stretched":
        a, b = _data((4, 1, 6), np.float64, 1), _data((1, 5, 6), np.float64, 2) + 3.0
    elif case == "gap":
        b = _data((1, 5, 1), np.float64, 2) + 3.0
    elif case == "strided big":
        a = _data((6, 5, 4), np.float64, 1).transpose(2, 1, 0)
    elif case == "strided small":
        b = (_data((4, 1, 12), np.float64, 2) + 3.0)[:, :, ::2]
    elif case == "mixed dtypes":
        b = b.astype(np.float32)
    else:
        a, b = (a * 10).astype(np.int64), (b * 10).astype(np.int64)
    got = getattr(lucid, name)(lucid.from_numpy(a), lucid.from_numpy(b))
    want = ref(a, b)
    assert got.numpy().dtype == (np.float32 if want.dtype == np.float64 and name == "div" and
                                 case == "int64" else want.dtype)
    assert_close(got, want, rtol=1e-6 if case == "int64" else 0, atol=0)


@pytest.mark.parametrize("big,small", [((3, 4), (4,)), ((3, 4), (3, 1)), ((2, 3, 4), (2, 1, 4))])
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
def test_binary_with_a_stretched_operand_gradcheck_in_float64(name, big, small):
    x = lucid.tensor(_data(big, np.float64, 1), requires_grad=True)
    y = lucid.tensor(_data(small, np.float64, 2) + 3.0, requires_grad=True)
    fn = lambda x, y: getattr(lucid, name)(x, y) + getattr(lucid, name)(y, x)
    assert gradcheck(fn, (x, y))
    assert gradgradcheck(fn, (x, y))
    assert gradcheck(fn, (x, y), check_forward_ad=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("small", [(4, 1), (5,), (1, 1)])
def test_subtracted_broadcast_operand_gets_the_negated_sum(small, dtype):
    x = lucid.tensor(_data((4, 5), dtype, 1), requires_grad=True)
    y = lucid.tensor(_data(small, dtype, 2), requires_grad=True)
    g = _data((4, 5), dtype, 3)
    (x - y).backward(lucid.tensor(g))
    axes = (0, 1) if small == (1, 1) else (1,) if small == (4, 1) else (0,)
    want = -g.astype(np.float64).sum(axis=axes, keepdims=True).reshape(small).astype(dtype)
    assert y.grad.numpy().dtype == dtype
    assert_close(y.grad, want, **TOL[dtype])
    assert_close(x.grad, g, rtol=0, atol=0)
