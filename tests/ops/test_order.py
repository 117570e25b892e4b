"""sort, argsort, topk, kthvalue, median, nanmedian, quantile, nanquantile, cummax, cummin,
logcumsumexp, var_mean, std_mean, aminmax, nansum, nanmean and cdist beyond their table rows
(tests/support/op_rows_order.py: values, gradients, second derivatives, tangents and layouts):
the indices, ties, NaN, result types, the gradient at special points, and the errors, compared
with PyTorch where it is installed.
"""
import numpy as np
import pytest

import lucid
import lucid.autograd.forward_ad as fwAD
from support.checks import assert_close, f64, to_numpy

try:
    import torch
except ImportError:          # the PyTorch comparisons say why they did not run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed; "
                                 "pip install torch==2.13.0 to compare with PyTorch")

NAN = float("nan")
TIES = np.array([[1.0, 1.0, 0.0, 1.0, 2.0], [3.0, 3.0, 3.0, 1.0, 1.0]])
WITH_NAN = np.array([[1.0, NAN, 0.0, 1.0, 2.0], [3.0, 3.0, 3.0, 1.0, 1.0], [NAN] * 5])
rng = np.random.default_rng(7)
PLAIN = rng.permutation(24).reshape(2, 3, 4) * 0.5 + rng.uniform(-0.1, 0.1, (2, 3, 4))


def _t(a):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def _parts(result):
    """A tuple of NumPy arrays from a tensor or a tuple of tensors (lucid's or torch's)."""
    items = result if isinstance(result, tuple) else (result,)
    return tuple(to_numpy(r) if isinstance(r, lucid.Tensor) else r.detach().numpy() for r in items)


def _first(result):
    return result[0] if isinstance(result, tuple) else result


# each: lucid call, torch call (on the same float64 input); values, indices and the gradient of
# the first output must agree; the ties' order is that of a stable sort in both
AGREE = [
    ("sort", lambda x: lucid.sort(x), lambda x: torch.sort(x, stable=True)),
    ("sort_descending_dim0", lambda x: x.sort(0, descending=True),
     lambda x: torch.sort(x, dim=0, descending=True, stable=True)),
    ("topk_smallest", lambda x: lucid.topk(x, 2, largest=False),
     lambda x: torch.topk(x, 2, largest=False)),
    ("median_all", lambda x: lucid.median(x), lambda x: torch.median(x)),
    ("nanmedian_all", lambda x: x.nanmedian(), lambda x: torch.nanmedian(x)),
    ("median_dim1", lambda x: lucid.median(x, 1), lambda x: torch.median(x, 1)),
    ("nanmedian_dim1_keep", lambda x: lucid.nanmedian(x, -1, True),
     lambda x: torch.nanmedian(x, -1, True)),
    ("cummax", lambda x: lucid.cummax(x, 1), lambda x: torch.cummax(x, 1)),
    ("cummin_dim0", lambda x: x.cummin(0), lambda x: torch.cummin(x, 0)),
    ("nansum_dim1", lambda x: lucid.nansum(x, 1), lambda x: torch.nansum(x, 1)),
    ("nanmean_all", lambda x: x.nanmean(), lambda x: torch.nanmean(x)),
    ("var_mean_dim1", lambda x: lucid.var_mean(x, 1), lambda x: torch.var_mean(x, 1)),
    ("std_mean_c0", lambda x: lucid.std_mean(x, 0, correction=0),
     lambda x: torch.std_mean(x, 0, correction=0)),
] + [(f"quantile_{m}", (lambda m: lambda x: lucid.quantile(x, f64([0.0, 0.3, 0.5, 0.75, 1.0]), 1,
                                                          interpolation=m))(m),
      (lambda m: lambda x: torch.quantile(x, torch.tensor([0.0, 0.3, 0.5, 0.75, 1.0],
                                                          dtype=torch.float64), 1,
                                          interpolation=m))(m))
     for m in ("linear", "lower", "higher", "midpoint", "nearest")] + [
    ("nanquantile_keep", lambda x: lucid.nanquantile(x, 0.4, 1, keepdim=True),
     lambda x: torch.nanquantile(x, 0.4, 1, keepdim=True)),
    ("quantile_all", lambda x: lucid.quantile(x, 0.6), lambda x: torch.quantile(x, 0.6)),
]


TIE_ORDER_UNSPECIFIED = {"topk_smallest"}     # PyTorch's topk picks among ties its own way


@needs_torch
@pytest.mark.parametrize("data", ["ties", "plain"])
@pytest.mark.parametrize("name,fn,tfn", AGREE, ids=[a[0] for a in AGREE])
def test_values_indices_and_gradients_match_pytorch(name, fn, tfn, data):
    a = TIES if data == "ties" else PLAIN.reshape(4, 6)
    x, tx = f64(a, requires_grad=True), _t(a)
    got, want = _parts(fn(x)), _parts(tfn(tx))
    assert len(got) == len(want)
    if data == "ties" and name in TIE_ORDER_UNSPECIFIED:   # which equal entry is picked (and
        got, want = got[:1], want[:1]                       # gets the gradient) is unspecified
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype.kind == w.dtype.kind
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    if data == "ties" and name in TIE_ORDER_UNSPECIFIED:
        return
    up = rng.standard_normal(got[0].shape)
    _first(fn(x)).backward(f64(up))
    _first(tfn(tx)).backward(torch.tensor(up))
    np.testing.assert_allclose(to_numpy(x.grad), tx.grad.numpy(), rtol=1e-12, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("name,fn,tfn", AGREE, ids=[a[0] for a in AGREE])
def test_nan_values_and_indices_match_pytorch(name, fn, tfn):
    got, want = _parts(fn(f64(WITH_NAN))), _parts(tfn(torch.tensor(WITH_NAN)))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-12)
    if len(got) > 1 and name.startswith(("sort", "cummax", "cummin", "median_dim")):
        np.testing.assert_array_equal(got[1], want[1])


def test_results_are_named_like_pytorchs():
    x = f64(PLAIN)
    for result in (lucid.sort(x), lucid.topk(x, 2), lucid.kthvalue(x, 1), lucid.median(x, 0),
                   lucid.nanmedian(x, 1), lucid.cummax(x, 2), lucid.cummin(x, 0)):
        values, indices = result
        assert result.values is values and result.indices is indices
        assert indices.dtype == lucid.int64 and values.dtype == lucid.float64
    mm = lucid.aminmax(x)
    assert mm.min is mm[0] and mm.max is mm[1]
    assert_close(mm.min, PLAIN.min()) and assert_close(mm.max, PLAIN.max())
    assert "min=" in repr(mm)
    assert type(lucid.var_mean(x)) is tuple and type(lucid.std_mean(x, 1)) is tuple


def test_indices_point_at_the_values():
    x = f64(TIES)
    for values, indices, d in ((*lucid.sort(x, 1, descending=True), 1), (*lucid.topk(x, 2, 0), 0),
                               (*lucid.cummax(x, 1), 1), (*lucid.cummin(x, 1), 1)):
        np.testing.assert_array_equal(np.take_along_axis(TIES, to_numpy(indices), d),
                                      to_numpy(values))
    np.testing.assert_array_equal(to_numpy(lucid.argsort(x, 1, descending=True)),
                                  to_numpy(lucid.sort(x, 1, descending=True).indices))


def test_sort_is_stable_and_puts_nan_at_the_large_end():
    x = f64([2.0, NAN, 1.0, 2.0, NAN])
    assert lucid.sort(x).indices.tolist() == [2, 0, 3, 1, 4]
    assert lucid.sort(x, descending=True).indices.tolist() == [1, 4, 0, 3, 2]
    assert lucid.topk(x, 2).indices.tolist() == [1, 4]
    assert lucid.kthvalue(x, 3).indices.tolist() == 3


def test_median_is_the_lower_middle_and_propagates_nan():
    assert lucid.median(f64([4.0, 1.0, 3.0, 2.0])).item() == 2.0
    assert lucid.median(lucid.tensor([4, 1, 3, 2])).dtype == lucid.int64
    assert np.isnan(lucid.median(f64([1.0, NAN, 3.0])).item())
    assert lucid.nanmedian(f64([1.0, NAN, 3.0, 2.0])).item() == 2.0
    assert np.isnan(lucid.nanmedian(f64([NAN, NAN])).item())
    assert np.isnan(lucid.median(f64([])).item())


def test_median_of_every_entry_shares_the_gradient_among_ties():
    x = f64([1.0, 2.0, 2.0, 3.0, 2.0], requires_grad=True)
    lucid.median(x).backward()
    assert_close(x.grad, [0.0, 1 / 3, 1 / 3, 0.0, 1 / 3])
    with fwAD.dual_level():
        out = lucid.median(fwAD.make_dual(f64([1.0, 2.0, 2.0]), f64([5.0, 1.0, 3.0])))
        assert fwAD.unpack_dual(out).tangent.item() == 2.0


def test_selection_gradients_are_exact_zero_where_not_selected():
    """an inf upstream gradient reaches the picked places only (a selection, not a 0/1 mask)"""
    x = f64([3.0, 1.0, 2.0], requires_grad=True)
    lucid.topk(x, 1).values.backward(f64([float("inf")]))
    assert to_numpy(x.grad).tolist() == [float("inf"), 0.0, 0.0]
    y = f64([1.0, NAN, 2.0], requires_grad=True)
    lucid.nansum(y).backward(f64(float("inf")))
    assert to_numpy(y.grad).tolist() == [float("inf"), 0.0, float("inf")]


def test_quantile_gradient_splits_by_the_interpolation_weight():
    x = f64([3.0, 1.0, 2.0, 4.0], requires_grad=True)
    lucid.quantile(x, 0.4).backward()            # rank 1.2: 0.8 to 2.0, 0.2 to 3.0
    assert_close(x.grad, [0.2, 0.0, 0.8, 0.0])
    x.grad = None
    lucid.quantile(x, 0.4, interpolation="midpoint").backward()
    assert_close(x.grad, [0.5, 0.0, 0.5, 0.0])


def test_quantile_shapes():
    x = f64(PLAIN)
    q = f64([0.1, 0.9])
    assert lucid.quantile(x, 0.5).shape == ()
    assert lucid.quantile(x, q).shape == (2,)
    assert lucid.quantile(x, q, keepdim=True).shape == (2, 1, 1, 1)
    assert lucid.quantile(x, 0.5, keepdim=True).shape == (1, 1, 1)
    assert lucid.quantile(x, q, 1).shape == (2, 2, 4)
    assert lucid.quantile(x, f64(0.5), -1, keepdim=True).shape == (2, 3, 1)
    assert lucid.nanquantile(x, q, 0).shape == (2, 3, 4)


def test_logcumsumexp_does_not_overflow_and_its_gradient_is_stable():
    a = np.array([1000.0, 1000.0, -1000.0, 999.0])
    x = f64(a, requires_grad=True)
    y = lucid.logcumsumexp(x, 0)
    assert_close(y, np.logaddexp.accumulate(a))
    up = np.array([1.0, -2.0, 0.5, 3.0])
    y.backward(f64(up))
    w = np.exp(a[:, None] - np.logaddexp.accumulate(a)[None, :]) * np.triu(np.ones((4, 4)))
    assert_close(x.grad, w @ up)
    # the recorded (create_graph) form gives the same gradient
    x2 = f64(a, requires_grad=True)
    (g,) = lucid.autograd.grad(lucid.logcumsumexp(x2, 0), (x2,), f64(up), create_graph=True)
    assert_close(g, w @ up)


def test_nanmean_and_nansum_leave_nan_out():
    x = f64(WITH_NAN, requires_grad=True)
    assert_close(lucid.nansum(x, 1), np.nansum(WITH_NAN, axis=1))
    with np.errstate(invalid="ignore"):
        expected = np.array([np.nanmean(r) if not np.isnan(r).all() else np.nan for r in WITH_NAN])
    assert_close(lucid.nanmean(x, 1), expected)
    lucid.nanmean(x, 1).backward(f64(np.ones(3)))
    grad = to_numpy(x.grad)
    assert (grad[np.isnan(WITH_NAN)] == 0).all()
    assert_close(grad[0, ~np.isnan(WITH_NAN[0])], np.full(4, 0.25))
    assert lucid.nansum(lucid.tensor([True, True, False])).item() == 2


@needs_torch
@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, 0.5, float("inf")])
def test_cdist_matches_pytorch_at_coincident_points(p):
    x2 = rng.standard_normal((2, 4, 3))
    x1 = np.concatenate([x2[:, :2], rng.standard_normal((2, 3, 3))], 1)   # two rows coincide
    x1[0, 2, 0] = x2[0, 3, 0]                                              # and one coordinate
    a, b = f64(x1, requires_grad=True), f64(x2, requires_grad=True)
    ta, tb = _t(x1), _t(x2)
    out, tout = lucid.cdist(a, b, p), torch.cdist(ta, tb, p)
    np.testing.assert_allclose(to_numpy(out), tout.detach().numpy(), rtol=1e-10, atol=1e-12)
    up = rng.standard_normal(tout.shape)
    out.backward(f64(up))
    tout.backward(torch.tensor(up))
    np.testing.assert_allclose(to_numpy(a.grad), ta.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_numpy(b.grad), tb.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_cdist_broadcasts_batches_and_takes_empty_rows():
    assert lucid.cdist(f64(np.ones((2, 2, 3))), f64(np.ones((1, 4, 3)))).shape == (2, 2, 4)
    assert_close(lucid.cdist(f64(np.ones((2, 0))), f64(np.ones((3, 0))), float("inf")),
                 np.zeros((2, 3)))


def test_zero_dim_inputs_act_as_one_entry():
    x = f64(3.0)
    for values, indices in (lucid.sort(x), lucid.topk(x, 1), lucid.kthvalue(x, 1),
                            lucid.median(x, 0), lucid.cummax(x, 0), lucid.cummin(x, -1)):
        assert values.shape == () and indices.shape == () and values.item() == 3.0
    assert lucid.logcumsumexp(x, 0).item() == 3.0
    assert lucid.argsort(x).item() == 0


def test_integer_and_bool_inputs():
    i = lucid.tensor([[3, 1, 2]])
    assert lucid.sort(i).values.tolist() == [[1, 2, 3]]
    assert lucid.topk(i, 2).values.dtype == lucid.int64
    running = lucid.cummax(lucid.tensor([False, True, False]), 0).values
    assert running.tolist() == [False, True, True]
    assert lucid.aminmax(lucid.tensor([True, False])).min.item() is False
    assert lucid.nansum(i, 1).tolist() == [6]


ERRORS = [
    ("topk_k_too_big", lambda x: lucid.topk(x, 4), RuntimeError, "topk: k=4"),
    ("topk_k_negative", lambda x: x.topk(-1), RuntimeError, "topk: k=-1"),
    ("topk_k_not_int", lambda x: lucid.topk(x, 1.5), TypeError, "topk: argument 'k'"),
    ("topk_bool", lambda x: lucid.topk(lucid.tensor([True]), 1), RuntimeError, "topk: bool"),
    ("kthvalue_k_too_big", lambda x: lucid.kthvalue(x, 4), RuntimeError, "kthvalue: k=4"),
    ("kthvalue_k_zero", lambda x: x.kthvalue(0, 0), RuntimeError, "kthvalue: k=0"),
    ("sort_dim_range", lambda x: lucid.sort(x, 2), IndexError, "sort: Dimension out of range"),
    ("argsort_dim_range", lambda x: lucid.argsort(x, -3), IndexError, "argsort: Dimension"),
    ("topk_dim_range", lambda x: lucid.topk(x, 1, 5), IndexError, "topk: Dimension"),
    ("median_dim_range", lambda x: x.median(2), IndexError, "median: Dimension"),
    ("median_empty_dim", lambda x: lucid.median(lucid.zeros(3, 0), 1), IndexError, "non-zero size"),
    ("median_bool", lambda x: lucid.median(lucid.tensor([True])), RuntimeError, "median: bool"),
    ("quantile_q_above_1", lambda x: lucid.quantile(x, 1.5), RuntimeError, r"\[0, 1\]"),
    ("quantile_q_negative", lambda x: x.quantile(f64([0.5, -0.1])), RuntimeError, r"\[0, 1\]"),
    ("quantile_q_nan", lambda x: lucid.nanquantile(x, NAN), RuntimeError, r"\[0, 1\]"),
    ("quantile_q_2d", lambda x: lucid.quantile(x, f64([[0.5]])), RuntimeError, "1D tensor"),
    ("quantile_q_str", lambda x: lucid.quantile(x, "half"), TypeError, "quantile: argument 'q'"),
    ("quantile_mode", lambda x: lucid.quantile(x, 0.5, interpolation="cubic"), RuntimeError,
     "interpolation must be one of"),
    ("quantile_int", lambda x: lucid.quantile(lucid.tensor([1, 2]), 0.5), RuntimeError,
     "float or double"),
    ("quantile_empty", lambda x: lucid.quantile(lucid.zeros(0), 0.5), RuntimeError, "non-empty"),
    ("quantile_dim_range", lambda x: lucid.quantile(x, 0.5, 3), IndexError, "quantile: Dimension"),
    ("cummax_dim_range", lambda x: lucid.cummax(x, 2), IndexError, "cummax: Dimension"),
    ("cummin_dim_none", lambda x: lucid.cummin(x, None), TypeError, "cummin: dim"),
    ("logcumsumexp_int", lambda x: lucid.logcumsumexp(lucid.tensor([1, 2]), 0), RuntimeError,
     "logcumsumexp: input dtype .*int64"),
    ("logcumsumexp_dim_range", lambda x: x.logcumsumexp(-3), IndexError,
     "logcumsumexp: Dimension"),
    ("var_mean_dim_range", lambda x: lucid.var_mean(x, 4), IndexError,
     "var_mean: Dimension"),
    ("std_mean_int", lambda x: lucid.std_mean(lucid.tensor([1, 2])), RuntimeError, "std_mean"),
    ("var_mean_both_corrections", lambda x: lucid.var_mean(x, 0, True, correction=1), RuntimeError,
     "var_mean: pass only one"),
    ("aminmax_tuple_dim", lambda x: x.aminmax(dim=(0, 1)), TypeError, "aminmax: dim"),
    ("aminmax_empty", lambda x: lucid.aminmax(lucid.zeros(0)), RuntimeError, "aminmax"),
    ("aminmax_empty_dim", lambda x: lucid.aminmax(lucid.zeros(2, 0), dim=1), IndexError,
     "non-zero size"),
    ("nansum_dim_range", lambda x: lucid.nansum(x, 2), IndexError, "nansum: Dimension"),
    ("nanmean_int", lambda x: lucid.nanmean(lucid.tensor([1, 2])), RuntimeError, "nanmean"),
    ("cdist_1d", lambda x: lucid.cdist(x[0], x), RuntimeError, "at least 2D"),
    ("cdist_columns", lambda x: lucid.cdist(x, x[:, :2]), RuntimeError, "same number of columns"),
    ("cdist_negative_p", lambda x: lucid.cdist(x, x, -1.0), RuntimeError, "non-negative p"),
    ("cdist_int", lambda x: lucid.cdist(lucid.tensor([[1, 2]]), x), RuntimeError,
     "floating-point"),
    ("cdist_dtypes", lambda x: lucid.cdist(x, x.float()), RuntimeError, "same dtype"),
    ("cdist_batches", lambda x: lucid.cdist(x.expand(2, 2, 3), x.expand(3, 2, 3)),
     RuntimeError, "batch dims"),
    ("cdist_mode", lambda x: lucid.cdist(x, x, compute_mode="fast"), ValueError, "compute_mode"),
    ("cdist_not_tensor", lambda x: lucid.cdist([[1.0]], x), TypeError, "cdist: argument 'x1'"),
]


@pytest.mark.parametrize("name,call,exc,words", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_name_the_problem_and_change_nothing(name, call, exc, words):
    a = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]])
    x = f64(a, requires_grad=True)
    version = x._version
    with pytest.raises(exc, match=words):
        call(x)
    assert_close(x, a, rtol=0, atol=0)
    assert x.grad is None and x._version == version
