"""Op-table rows for the order statistics and the reductions built from others
(ops/reduction/order.pxi, scans.pxi, moments.pxi) and cdist (ops/linalg/cdist.pxi).

Each row is an ``op_spec.OpSpec`` made by ``Rows.op``. The ops that return (values, indices) are
checked on their values here (the indices, ties and NaN are pinned by tests/ops/test_order.py);
var_mean, std_mean and aminmax return two float tensors (``multi_output``). The rows that select
entries by their order take ``DISTINCT`` inputs and fresh leaves in random programs: an
intermediate value may hold ties (an expanded value), where the order has a kink.
"""
import numpy as np

import lucid
from .op_spec import ANY, DISTINCT, Rows

ROWS = Rows()
_row = ROWS.op
R3 = ((2, 3, 4),)
MATRIX = ((3, 4),)


def _shapes(*shapes):
    return tuple((s,) for s in shapes)


def _ordered(name, fn, ref, shapes, **traits):
    """A row whose value picks entries by their order: distinct entries, fresh leaves."""
    return _row(name, fn, ref, shapes, (DISTINCT,), fresh_inputs=True, **traits)


def _take(a, pos, axis, keepdims=False):
    out = np.take(a, [pos], axis=axis)
    return out if keepdims else np.squeeze(out, axis=axis)


def _lower_median(a, axis=None, keepdims=False):
    if axis is None:
        return np.sort(a.reshape(-1))[(a.size - 1) // 2]
    return _take(np.sort(a, axis=axis), (a.shape[axis] - 1) // 2, axis, keepdims)


def _var(a, axis, correction=1, keepdims=False):
    return np.var(a, axis=axis, ddof=correction, keepdims=keepdims)


def _cdist(a, b, p):
    return np.linalg.norm(a[..., :, None, :] - b[..., None, :, :], ord=p, axis=-1)


# sort, topk, kthvalue
_ordered("sort_values", lambda x: lucid.sort(x).values,
         lambda a: np.sort(np.atleast_1d(a), axis=-1).reshape(a.shape),
         _shapes((), (5,), (2, 3, 4)))
_ordered("sort_method_dim0_descending", lambda x: x.sort(0, descending=True)[0],
         lambda a: -np.sort(-a, axis=0), (R3, MATRIX))
_ordered("topk_values", lambda x: lucid.topk(x, 2).values,
         lambda a: -np.sort(-a, axis=-1)[..., :2], (R3, MATRIX))
_ordered("topk_method_smallest_dim0", lambda x: x.topk(2, 0, largest=False).values,
         lambda a: np.sort(a, axis=0)[:2], (MATRIX,))
_ordered("kthvalue_values", lambda x: lucid.kthvalue(x, 2).values,
         lambda a: _take(np.sort(a, axis=-1), 1, -1), (R3, MATRIX))
_ordered("kthvalue_method_dim1_keep", lambda x: x.kthvalue(3, 1, keepdim=True)[0],
         lambda a: _take(np.sort(a, axis=1), 2, 1, True), (R3,))
# median and nanmedian (no NaN here: with NaN they are pinned by tests/ops/test_order.py)
_ordered("median_all", lambda x: lucid.median(x), _lower_median, _shapes((5,), (4,), (2, 3, 4)))
_ordered("median_method_dim1", lambda x: x.median(1).values, lambda a: _lower_median(a, 1),
         (R3, MATRIX))
_ordered("median_dim_neg_keep", lambda x: lucid.median(x, -1, keepdim=True)[0],
         lambda a: _lower_median(a, -1, True), (R3,))
_ordered("nanmedian_all", lambda x: x.nanmedian(), _lower_median, _shapes((6,), (2, 3, 4)))
_ordered("nanmedian_dim0", lambda x: lucid.nanmedian(x, 0).values, lambda a: _lower_median(a, 0),
         (MATRIX,))
# quantile and nanquantile: each interpolation
_ordered("quantile_linear", lambda x: lucid.quantile(x, 0.4), lambda a: np.quantile(a, 0.4),
         _shapes((5,), (2, 3, 4)))
_ordered("quantile_method_q_vector_dim1",
         lambda x: x.quantile(lucid.tensor([0.0, 0.3, 0.5, 1.0], dtype=x.dtype), dim=1,
                              keepdim=True),
         lambda a: np.quantile(a, [0.0, 0.3, 0.5, 1.0], axis=1, keepdims=True), (R3, MATRIX))
for _mode in ("lower", "higher", "midpoint", "nearest"):
    _ordered(f"quantile_{_mode}_dim0",
             (lambda m: lambda x: lucid.quantile(x, 0.7, 0, interpolation=m))(_mode),
             (lambda m: lambda a: np.quantile(a, 0.7, axis=0, method=m))(_mode), (MATRIX,))
_ordered("nanquantile_dim_neg", lambda x: lucid.nanquantile(x, 0.25, -1),
         lambda a: np.nanquantile(a, 0.25, axis=-1), (R3,))
_ordered("nanquantile_method_q_vector_keep_all",
         lambda x: x.nanquantile(lucid.tensor([0.0, 0.3, 0.5, 1.0], dtype=x.dtype),
                                   keepdim=True),
         lambda a: np.nanquantile(a, [0.0, 0.3, 0.5, 1.0], keepdims=True), (MATRIX,))
# cummax, cummin, logcumsumexp
_ordered("cummax_values", lambda x: lucid.cummax(x, 1).values,
         lambda a: np.maximum.accumulate(a, axis=1), (R3, MATRIX))
_ordered("cummin_method_neg", lambda x: x.cummin(-1)[0],
         lambda a: np.minimum.accumulate(a, axis=-1), _shapes((5,), (2, 3, 4)))
_row("logcumsumexp_dim1", lambda x: lucid.logcumsumexp(x, 1),
     lambda a: np.logaddexp.accumulate(a, axis=1), (R3, MATRIX), (ANY,))
_row("logcumsumexp_method_neg", lambda x: x.logcumsumexp(-1),
     lambda a: np.logaddexp.accumulate(np.atleast_1d(a), axis=-1).reshape(a.shape),
     _shapes((), (5,)), (ANY,))
# var_mean, std_mean, aminmax
_row("var_mean_dim1", lambda x: lucid.var_mean(x, 1), lambda a: (_var(a, 1), np.mean(a, axis=1)),
     (R3, MATRIX), (ANY,), multi_output=True)
_row("var_mean_all_c0", lambda x: lucid.var_mean(x, correction=0),
     lambda a: (_var(a, None, 0), np.mean(a)), _shapes((5,), (2, 3, 4)), (ANY,), multi_output=True)
_row("std_mean_dims02_keep", lambda x: lucid.std_mean(x, (0, 2), keepdim=True),
     lambda a: (np.sqrt(_var(a, (0, 2), 1, True)), np.mean(a, axis=(0, 2), keepdims=True)),
     (R3,), (ANY,), multi_output=True)
_ordered("aminmax_all", lambda x: lucid.aminmax(x), lambda a: (np.min(a), np.max(a)),
         _shapes((5,), (2, 3, 4)), multi_output=True)
_ordered("aminmax_method_dim1_keep", lambda x: x.aminmax(dim=1, keepdim=True),
         lambda a: (np.min(a, axis=1, keepdims=True), np.max(a, axis=1, keepdims=True)),
         (R3, MATRIX), multi_output=True)
# nansum, nanmean (no NaN here: the NaN cases are in tests/ops/test_order.py)
_row("nansum_all", lambda x: lucid.nansum(x), np.nansum, _shapes((), (5,), (2, 3, 4)), (ANY,))
_row("nansum_method_dim1_keep", lambda x: x.nansum(1, keepdim=True),
     lambda a: np.nansum(a, axis=1, keepdims=True), (R3,), (ANY,))
_row("nanmean_dims01", lambda x: lucid.nanmean(x, (0, 1)), lambda a: np.nanmean(a, axis=(0, 1)),
     (R3,), (ANY,))
_row("nanmean_method_all", lambda x: x.nanmean(), np.nanmean, _shapes((5,), (3, 4)), (ANY,))
# cdist: batched, the batch dims broadcast; p = 0, 1, 2, 3 and inf; x1 and x2 share a dtype (it
# raises otherwise, as PyTorch does)
_CDIST_SHAPES = (((4, 3), (5, 3)), ((2, 4, 3), (2, 5, 3)), ((4, 2), (3, 2, 2)))
_row("cdist_p2", lambda x, y: lucid.cdist(x, y), lambda a, b: _cdist(a, b, 2), _CDIST_SHAPES,
     (ANY, ANY), same_dtype=True)
for _p, _id in ((0.0, "p0"), (1.0, "p1"), (3.0, "p3"), (float("inf"), "pinf")):
    _row(f"cdist_{_id}", (lambda p: lambda x, y: lucid.cdist(x, y, p=p))(_p),
         (lambda p: lambda a, b: _cdist(a, b, p))(_p), _CDIST_SHAPES[:2], (ANY, ANY),
         same_dtype=True, fresh_inputs=_p == float("inf"))
