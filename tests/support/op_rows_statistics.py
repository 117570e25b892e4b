"""Rows of the op table for the statistical reductions, softmax and the cumulative ops.

Each row is an ``op_spec.OpSpec`` (name, lucid callable, NumPy float64 reference, input-shape
tuples, one domain per input) made by ``Rows.op``. Non-tensor arguments (dim, keepdim, p,
correction) are baked into the callables; every input is a differentiable float tensor.
The inf / -inf norms take fresh leaves in a random program (``fresh_inputs``): an intermediate
value may hold ties in |x| (an expanded value), where max |x| has a kink.
"""
import numpy as np

import lucid
from .op_spec import ANY, NONZERO, POS, Rows

R3 = ((2, 3, 4),)
MATRIX = ((3, 4),)


def _shapes(*shapes):
    return tuple((s,) for s in shapes)


def _np_var(a, axis=None, correction=1, keepdims=False):
    n = a.size if axis is None else int(np.prod([a.shape[d] for d in np.atleast_1d(axis)]))
    dev = a - np.mean(a, axis=axis, keepdims=True)
    return np.sum(dev * dev, axis=axis, keepdims=keepdims) / (n - correction)


def _np_norm(a, p, axis=None, keepdims=False):
    ax = np.abs(a)
    if p == np.inf:
        return np.max(ax, axis=axis, keepdims=keepdims)
    if p == -np.inf:
        return np.min(ax, axis=axis, keepdims=keepdims)
    if p == 0:
        return np.sum(a != 0, axis=axis, keepdims=keepdims).astype(a.dtype)
    return np.sum(ax ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)


def _np_logsumexp(a, axis, keepdims=False):
    top = np.max(a, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(a - top), axis=axis, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis=axis)


def _np_softmax(a, axis):
    e = np.exp(a - np.max(a, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _np_log_softmax(a, axis):
    return a - _np_logsumexp(a, axis, keepdims=True)


ROWS = Rows()
_row = ROWS.op
# prod (random inputs hold no zeros; the zero cases are in tests/ops/test_statistics.py)
_row("prod_all", lambda x: lucid.prod(x), np.prod, _shapes((), (5,), (2, 3, 4)), (NONZERO,))
_row("prod_method_dim1", lambda x: x.prod(1), lambda a: np.prod(a, axis=1), (R3,), (NONZERO,))
_row("prod_dim_neg_keep", lambda x: lucid.prod(x, -1, keepdim=True),
     lambda a: np.prod(a, axis=-1, keepdims=True), (R3, MATRIX), (NONZERO,))
_row("prod_dims02", lambda x: lucid.prod(x, (0, 2)), lambda a: np.prod(a, axis=(0, 2)),
     (R3,), (NONZERO,))
# var and std
_row("var_all", lambda x: lucid.var(x), lambda a: _np_var(a), _shapes((5,), (2, 3, 4)),
     (ANY,))
_row("var_method_dim1", lambda x: x.var(1), lambda a: _np_var(a, 1), (R3,), (ANY,))
_row("var_dims02_keep_c0", lambda x: lucid.var(x, (0, 2), keepdim=True, correction=0),
     lambda a: _np_var(a, (0, 2), 0, True), (R3,), (ANY,))
_row("var_unbiased_false", lambda x: lucid.var(x, -1, False),
     lambda a: _np_var(a, -1, 0), (R3, MATRIX), (ANY,))
_row("var_correction2", lambda x: x.var(0, correction=2), lambda a: _np_var(a, 0, 2),
     (((4, 3),),), (ANY,))
_row("std_all", lambda x: lucid.std(x), lambda a: np.sqrt(_np_var(a)),
     _shapes((5,), (2, 3, 4)), (ANY,))
_row("std_method_dim_neg_keep", lambda x: x.std(-1, keepdim=True),
     lambda a: np.sqrt(_np_var(a, -1, 1, True)), (R3, MATRIX), (ANY,))
_row("std_dims01_c0", lambda x: lucid.std(x, (0, 1), correction=0),
     lambda a: np.sqrt(_np_var(a, (0, 1), 0)), (R3,), (ANY,))
# norm
_row("norm_default", lambda x: lucid.norm(x), lambda a: _np_norm(a, 2),
     _shapes((), (5,), (2, 3, 4)), (NONZERO,))
_row("norm_method_p2_dim1", lambda x: x.norm(2, dim=1), lambda a: _np_norm(a, 2, 1),
     (R3,), (ANY,))
_row("norm_fro_dims01_keep", lambda x: lucid.norm(x, "fro", (0, 1), keepdim=True),
     lambda a: _np_norm(a, 2, (0, 1), True), (R3,), (ANY,))
_row("norm_p1_dim_neg", lambda x: lucid.norm(x, 1, -1), lambda a: _np_norm(a, 1, -1),
     (R3, MATRIX), (NONZERO,))
_row("norm_inf", lambda x: lucid.norm(x, float("inf")), lambda a: _np_norm(a, np.inf),
     _shapes((5,), (3, 4)), (ANY,), fresh_inputs=True)
_row("norm_neg_inf_dim0", lambda x: x.norm(-float("inf"), 0),
     lambda a: _np_norm(a, -np.inf, 0), (MATRIX,), (ANY,), fresh_inputs=True)
_row("norm_p3_keep", lambda x: lucid.norm(x, 3, 1, True), lambda a: _np_norm(a, 3, 1, True),
     (R3,), (ANY,))
_row("norm_p_half", lambda x: lucid.norm(x, 0.5, -1), lambda a: _np_norm(a, 0.5, -1),
     (MATRIX,), (NONZERO,))
_row("norm_p_neg1", lambda x: lucid.norm(x, -1.0), lambda a: _np_norm(a, -1.0),
     _shapes((5,),), (NONZERO,))
_row("norm_p0", lambda x: lucid.norm(x, 0, 1), lambda a: _np_norm(a, 0, 1), (MATRIX,),
     (NONZERO,))
# logsumexp
_row("logsumexp_dim1", lambda x: lucid.logsumexp(x, 1), lambda a: _np_logsumexp(a, 1),
     (R3, MATRIX), (ANY,))
_row("logsumexp_method_dims02_keep", lambda x: x.logsumexp((0, 2), keepdim=True),
     lambda a: _np_logsumexp(a, (0, 2), True), (R3,), (ANY,))
_row("logsumexp_0d", lambda x: lucid.logsumexp(x, 0), lambda a: a.copy(), _shapes(()),
     (ANY,))
# softmax and log_softmax
_row("softmax_dim_neg", lambda x: lucid.softmax(x, -1), lambda a: _np_softmax(a, -1),
     _shapes((5,), (3, 4), (2, 3, 4)), (ANY,))
_row("softmax_method_dim0", lambda x: x.softmax(0), lambda a: _np_softmax(a, 0),
     (R3, MATRIX), (ANY,))
_row("log_softmax_dim1", lambda x: lucid.log_softmax(x, 1),
     lambda a: _np_log_softmax(a, 1), (R3, MATRIX), (ANY,))
_row("log_softmax_method_neg", lambda x: x.log_softmax(-1),
     lambda a: _np_log_softmax(a, -1), _shapes((5,), (2, 3, 4)), (ANY,))
# cumsum and cumprod
_row("cumsum_dim0", lambda x: lucid.cumsum(x, 0), lambda a: np.cumsum(a, axis=0),
     _shapes((5,), (3, 4), (2, 3, 4)), (ANY,))
_row("cumsum_method_neg", lambda x: x.cumsum(-1), lambda a: np.cumsum(a, axis=-1),
     (R3, MATRIX), (ANY,))
_row("cumprod_dim1", lambda x: lucid.cumprod(x, 1), lambda a: np.cumprod(a, axis=1),
     (R3, MATRIX), (NONZERO,))
_row("cumprod_method_neg", lambda x: x.cumprod(-1), lambda a: np.cumprod(a, axis=-1),
     _shapes((5,), (2, 3, 4)), (POS,))
# compositions: the rules recorded inside other rules
_row("log_softmax_of_std", lambda x: lucid.log_softmax(x.std(0, keepdim=True) * x, 1),
     lambda a: _np_log_softmax(np.sqrt(_np_var(a, 0, 1, True)) * a, 1), (MATRIX,), (ANY,))
_row("logsumexp_of_cumsum", lambda x: lucid.logsumexp(x.cumsum(1), (0, 1)),
     lambda a: _np_logsumexp(np.cumsum(a, axis=1), (0, 1)), (MATRIX,), (ANY,))

