"""Zero-size tensors: every op family runs forward and backward on empty inputs (several shapes,
float32 and float64), and the ops that once refused them or got them wrong give PyTorch's answer.

flatten built its shape with -1, which is ambiguous when another dim is 0 (zeros(2,3,0)
.flatten(0,1) and zeros(0,3).flatten(1) raised); amax/amin/max/min refused any empty input even
when the reduced dim had elements to spare; x[[]] read the empty list as a float index; repr of
an empty tensor showed "[]" without its shape; a mean over an empty dim warned from NumPy;
gradcheck read a 0-size input as "not contiguous". The tests named test_guard_* pin families that
already worked and must stay supported.
"""
import warnings

import numpy as np
import pytest

import lucid
from support.checks import assert_exact, to_numpy

DTYPES = [lucid.float32, lucid.float64]


@pytest.mark.parametrize("shape,args,expect", [
    ((2, 3, 0), (0, 1), (6, 0)), ((0, 3), (1,), (0, 3)), ((4, 0, 2, 3), (2, 3), (4, 0, 6)),
    ((0, 3, 4), (1, 2), (0, 12)), ((0, 2, 2), (1, -1), (0, 4)),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_flatten_zero_size(shape, args, expect, dtype):
    x = lucid.zeros(*shape, dtype=dtype, requires_grad=True)
    y = x.flatten(*args)
    assert y.shape == expect
    y.sum().backward()
    assert x.grad.shape == shape


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["amax", "amin", "max", "min"])
@pytest.mark.parametrize("shape,dim,keepdim,expect", [
    ((0, 3), 1, False, (0,)), ((0, 3), 1, True, (0, 1)), ((2, 0, 3), 2, False, (2, 0)),
    ((2, 0, 3), -1, True, (2, 0, 1)),
])
def test_extreme_reduction_over_nonempty_dim_of_empty_tensor(dtype, op, shape, dim, keepdim,
                                                             expect):
    x = lucid.zeros(*shape, dtype=dtype, requires_grad=True)
    out = getattr(x, op)(dim=dim, keepdim=keepdim)
    values = out.values if op in ("max", "min") else out
    assert values.shape == expect
    if op in ("max", "min"):
        assert out.indices.shape == expect and out.indices.dtype == lucid.int64
    values.sum().backward()
    assert x.grad.shape == shape


@pytest.mark.parametrize("op", ["amax", "amin", "max", "min"])
def test_extreme_reduction_over_empty_dim_raises_clearly(op):
    x = lucid.zeros(0, 3)
    with pytest.raises(IndexError, match="size 0"):
        getattr(x, op)(dim=0)
    with pytest.raises(RuntimeError, match="no elements"):
        getattr(x, op)()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4,), (4, 3), (2, 0)])
def test_index_with_empty_list(dtype, shape):
    x = lucid.ones(*shape, dtype=dtype, requires_grad=True)
    y = x[[]]
    assert y.shape == (0,) + shape[1:]
    y.sum().backward()
    assert_exact(x.grad, np.zeros(shape))


@pytest.mark.parametrize("make,expect", [
    (lambda: lucid.zeros(0, 3), "tensor([], size=(0, 3))"),
    (lambda: lucid.zeros(2, 0, dtype=lucid.float64), "tensor([], size=(2, 0), dtype=lucid.float64)"),
    (lambda: lucid.zeros(0, 3, requires_grad=True), "tensor([], size=(0, 3), requires_grad=True)"),
    (lambda: lucid.zeros(3, 0, 2, dtype=lucid.int64), "tensor([], size=(3, 0, 2))"),
])
def test_repr_of_empty_tensor_shows_shape(make, expect):
    assert repr(make()) == expect
    assert repr(lucid.zeros(0)) == "tensor([])"                # 1-d: the shape is plain, as in torch


def test_mean_over_empty_dim_is_nan_without_warning():
    x = lucid.zeros(2, 0, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = x.mean(dim=1)
        assert m.shape == (2,) and np.all(np.isnan(to_numpy(m)))
        m.sum().backward()
    assert x.grad.shape == (2, 0)


ZERO_SIZE_FAMILIES = {
    "arith": (lambda a, b: (a + b) * (a - b) / (b + 1.0) + a ** 2 + 2.0 ** a, [(0, 3), (0, 3)]),
    "arith_broadcast": (lambda a, b: a * b + a / (b + 3.0) - b ** a, [(0, 3), (1, 3)]),
    "unary": (lambda a: (a.exp() + (a + 1).log() + a.tanh() + a.relu() + (a + 1).sqrt()
                         + a.abs() + a.sin() + a.cos() + a.sigmoid() - a
                         + a.clamp(-1, 1)), [(2, 0)]),
    "select": (lambda a, b: lucid.maximum(a, b) + lucid.minimum(a, b)
               + lucid.where(a > b, a, b), [(0, 4), (0, 4)]),
    "reduce": (lambda a: a.sum(dim=0) + a.mean(dim=0) + a.amax(dim=0) + a.min(dim=0).values,
               [(3, 0)]),
    "shape": (lambda a: a.reshape(0, 2, 3).transpose(0, 1).permute(2, 0, 1).flatten(1)
              .unsqueeze(0).squeeze(0).T, [(0, 6)]),
    "expand": (lambda a: a.expand(4, 0, 3), [(1, 0, 3)]),
    "index": (lambda a: a[1:1] + a[[]] + a[a > 5], [(4,)]),
    "join": (lambda a, b: lucid.cat([a, b], dim=0).sum(dim=0) + lucid.stack([b, b]).sum(dim=(0, 1)),
             [(0, 3), (2, 3)]),
    "matmul_inner": (lambda a, b: a @ b, [(2, 0), (0, 3)]),
    "matmul_outer": (lambda a, b: a @ b, [(0, 4), (4, 3)]),
    "inplace": (lambda a: (a * 1).mul_(2).add_(1).div_(3), [(0, 2)]),
}


ZERO_SIZE_BROKEN = ["reduce", "index"]                       # the families that failed before


def run_zero_size_family(dtype, family):
    fn, shapes = ZERO_SIZE_FAMILIES[family]
    xs = [lucid.zeros(*s, dtype=dtype, requires_grad=True) for s in shapes]
    out = fn(*xs)
    out.sum().backward()
    for x, s in zip(xs, shapes):
        assert x.grad is not None and x.grad.shape == s and x.grad.dtype == dtype


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("family", ZERO_SIZE_BROKEN)
def test_zero_size_forward_and_backward(dtype, family):
    run_zero_size_family(dtype, family)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("family", sorted(set(ZERO_SIZE_FAMILIES) - set(ZERO_SIZE_BROKEN)))
def test_guard_zero_size_forward_and_backward(dtype, family):
    run_zero_size_family(dtype, family)


def test_ambiguous_minus_one_reshape_says_so():
    with pytest.raises(RuntimeError, match="ambiguous"):
        lucid.zeros(0, 3).reshape(-1, 0)


def test_gradcheck_accepts_zero_size_inputs():
    """gradcheck's contiguity check read a 0-size input as 'not contiguous' (np.shares_memory is
    False for empty arrays): an empty input has nothing to perturb and must simply pass."""
    for shape in [(0,), (2, 0), (0, 3, 1)]:
        x = lucid.tensor(np.zeros(shape), dtype=lucid.float64, requires_grad=True)
        assert lucid.autograd.gradcheck(lambda t: (t * 2.0).exp(), (x,))
        assert lucid.autograd.gradgradcheck(lambda t: (t * t).sum(0), (x,))
