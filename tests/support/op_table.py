"""The one table of differentiable ops: one row per op drives every table-driven check.

``OPS`` is every row: the rows written below (arithmetic, matmul, sum/mean, amax/max, views and
shapes, cat/stack, indexing) followed by the rows of the family modules, each a ``Rows`` list:
tests/support/op_rows_elementwise.py (API.md section 8's elementwise ops), op_rows_statistics.py (prod,
var/std, norm, logsumexp, softmax, cumsum/cumprod), op_rows_indexing.py (gather/scatter, masks,
split/chunk/unbind, diagonal, flip/roll/repeat, tril/triu, einsum), op_rows_linalg.py
(lucid.linalg, mm/bmm/dot/outer), op_rows_linalg2.py (svd, lstsq, pinv, matrix_exp, lu, the norms,
cross, multi_dot), op_rows_special.py (log2 ... remainder, lgamma digamma polygamma erfinv, ...),
op_rows_complex.py (a complex number's parts, complex * and /, through real inputs and outputs),
op_rows_shape2.py (select, t, swapaxes, broadcast_to,
meshgrid, unflatten, as_strided, ...), op_rows_order.py (sort/topk/median/quantile, cummax/logcumsumexp, var_mean/aminmax/nansum,
cdist) and op_rows_inplace.py (the in-place ops, each writing into a
copy of its first input). What a row is, its traits, the input domains and the builders
are in tests/support/op_spec.py (re-exported here).

Each row names the lucid callable and its NumPy reference (float64), the input-shape tuples to
try and a domain per input. From it:
  * tests/ops/test_gradcheck.py checks every (row, shapes) case: the forward against the
    reference in float64 (``tol64``) and float32 (``tol32``), gradcheck, backward against finite
    differences of the reference (float64 and float32), gradgradcheck (rows
    with ``gradgrad``), and transposed / strided (non-contiguous) inputs, whose tangents must
    also match a contiguous copy's;
  * tests/forward/test_forward_ad.py checks the tangents of the rows with ``forward_ad`` against finite
    differences (gradcheck with check_forward_ad);
  * tests/reliability/test_property.py builds random programs out of the rows with ``property`` set (every
    row anchors at least one program per run);
  * the family test files (tests/ops/test_<family>.py) keep only what a Jacobian check cannot
    see (special values, ties, views vs copies, dtypes) and the error paths.
Adding an op is one definition plus one row.

The rows with complex inputs and outputs are a table of their own
(tests/support/op_rows_complex_values.py, with the complex domains of op_spec): the checks
above assume real values; theirs are gradcheck and gradgradcheck, which take complex values
apart (tests/ops/test_gradcheck_complex_rows.py), and the random complex programs.

Every input of every row here is a differentiable float tensor; Python-scalar operands, conditions,
index arrays, masks and bounds are baked into the callables (reflected forms included). A row's
fn is a lambda (or a one-expression def, or a lucid function) so that a random program using it
prints as a script (tests/support/row_source.py).
"""
import numpy as np

import lucid
from . import op_rows_complex
from . import op_rows_elementwise
from . import op_rows_indexing
from . import op_rows_inplace
from . import op_rows_linalg
from . import op_rows_linalg2
from . import op_rows_special
from . import op_rows_order
from . import op_rows_shape2
from . import op_rows_statistics
from .op_spec import (ANY, BINARY_SHAPES, CLAMP, DISTINCT, ELEMENTWISE, FIXED, HI, LEAF_DOMAINS,  # noqa: F401
                     LO, M23, M34, NONZERO, POS, R3, REDUCTION, SMALL, SPD, UNARY_SHAPES, WELL,
                     C_ANY, C_NONZERO, C_RIGHT, C_SMALL, COMPLEX_DOMAINS,
                     OpSpec, Rows, joined, joined_code, outputs, sample)

# What the random programs keep away from, and why:
#  * values stay finite (inf/NaN upstream gradients are pinned by
#    tests/reliability/test_ieee_edge_values.py);
#  * pow's base stays positive (pow at 0 is pinned there too);
#  * amax / amin / max / min get no 0-size input: reducing over an empty dimension has no
#    identity, so it raises (IndexError, as in PyTorch) instead of giving a value to compare.
ZERO_SIZE_BUG = "amax/amin/max/min over an empty dimension raise, as in PyTorch (no identity)"

CORE = Rows()
op, elementwise, reduction = CORE.op, CORE.elementwise, CORE.reduction


def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def _np_reduce(f, d, k):
    return lambda a: f(a, axis=d, keepdims=k)

# --- binary arithmetic, operators and functions -------------------------------------------
elementwise("add", lambda x, y: x + y, np.add, BINARY_SHAPES, (ANY, ANY))
elementwise("lucid.add", lambda x, y: lucid.add(x, y), np.add, BINARY_SHAPES[:3], (ANY, ANY))
elementwise("sub", lambda x, y: x - y, np.subtract, BINARY_SHAPES, (ANY, ANY))
elementwise("lucid.sub", lambda x, y: lucid.sub(x, y), np.subtract, BINARY_SHAPES[:3], (ANY, ANY))
elementwise("mul", lambda x, y: x * y, np.multiply, BINARY_SHAPES, (ANY, ANY))
elementwise("lucid.mul", lambda x, y: lucid.mul(x, y), np.multiply, BINARY_SHAPES[:3], (ANY, ANY))
elementwise("mul_same_tensor", lambda x: x * x, lambda a: a * a, UNARY_SHAPES, (ANY,))
# one gradient sent down two edges into the same node: must not be aliased / double-counted
elementwise("add_same_tensor", lambda x: x + x, lambda a: a + a, UNARY_SHAPES, (ANY,))
elementwise("sub_same_tensor", lambda x: x - x, lambda a: a - a, UNARY_SHAPES, (ANY,))
elementwise("div_same_tensor", lambda x: x / x, lambda a: a / a, UNARY_SHAPES, (NONZERO,))
elementwise("add_twice_then_mul", lambda x: ((x + x) + x) * x, lambda a: ((a + a) + a) * a,
            UNARY_SHAPES, (ANY,))
elementwise("clone_plus_self", lambda x: x.clone() + x.clone() * 2.0, lambda a: a + a * 2.0,
            UNARY_SHAPES, (ANY,))
op("reshape_paths_rejoin", lambda x: x.reshape(3, 2).transpose(0, 1) * x + x,
   lambda a: a.reshape(3, 2).T * a + a, (((2, 3),),), (ANY,))
elementwise("div", lambda x, y: x / y, np.divide, BINARY_SHAPES, (ANY, NONZERO))
elementwise("lucid.div", lambda x, y: lucid.div(x, y), np.divide, BINARY_SHAPES[:3], (ANY, NONZERO))
elementwise("pow_tt", lambda x, y: x ** y, np.power, BINARY_SHAPES, (POS, ANY))
elementwise("lucid.pow_tt", lambda x, y: lucid.pow(x, y), np.power, BINARY_SHAPES[:3], (POS, ANY))

# --- tensor with Python scalar (both sides) ------------------------------------------------
elementwise("add_scalar", lambda x: x + 2.5, lambda a: a + 2.5, UNARY_SHAPES, (ANY,))
elementwise("radd_scalar", lambda x: 2.5 + x, lambda a: 2.5 + a, UNARY_SHAPES, (ANY,))
elementwise("add_int_scalar", lambda x: x + 1, lambda a: a + 1, UNARY_SHAPES, (ANY,))
elementwise("sub_scalar", lambda x: x - 2.0, lambda a: a - 2.0, UNARY_SHAPES, (ANY,))
elementwise("rsub_scalar", lambda x: 2.0 - x, lambda a: 2.0 - a, UNARY_SHAPES, (ANY,))
elementwise("mul_scalar", lambda x: x * -1.5, lambda a: a * -1.5, UNARY_SHAPES, (ANY,))
elementwise("rmul_scalar", lambda x: -1.5 * x, lambda a: -1.5 * a, UNARY_SHAPES, (ANY,))
elementwise("rmul_int_scalar", lambda x: 3 * x, lambda a: 3 * a, UNARY_SHAPES, (ANY,))
elementwise("lucid.mul_scalar", lambda x: lucid.mul(x, 2.0), lambda a: a * 2.0, UNARY_SHAPES, (ANY,))
elementwise("div_scalar", lambda x: x / 4.0, lambda a: a / 4.0, UNARY_SHAPES, (ANY,))
elementwise("rdiv_scalar", lambda x: 3.0 / x, lambda a: 3.0 / a, UNARY_SHAPES, (NONZERO,))
elementwise("pow_scalar_float", lambda x: x ** 2.5, lambda a: a ** 2.5, UNARY_SHAPES, (POS,))
elementwise("pow_scalar_negative", lambda x: x ** -1.5, lambda a: a ** -1.5, UNARY_SHAPES, (POS,))
elementwise("pow_scalar_int", lambda x: x ** 3, lambda a: a ** 3, UNARY_SHAPES, (ANY,))
elementwise("pow_scalar_half", lambda x: x ** 0.5, np.sqrt, UNARY_SHAPES, (POS,))
elementwise("lucid.pow_ts", lambda x: lucid.pow(x, 3.0), lambda a: a ** 3.0, UNARY_SHAPES, (ANY,))
elementwise("rpow_scalar", lambda x: 2.0 ** x, lambda a: 2.0 ** a, UNARY_SHAPES, (ANY,))
elementwise("lucid.pow_st", lambda x: lucid.pow(2.0, x), lambda a: 2.0 ** a, UNARY_SHAPES, (ANY,))

# --- unary -----------------------------------------------------------------------------------
elementwise("neg", lambda x: -x, np.negative, UNARY_SHAPES, (ANY,))
elementwise("lucid.neg", lambda x: lucid.neg(x), np.negative, UNARY_SHAPES, (ANY,))
elementwise("lucid.exp", lambda x: lucid.exp(x), np.exp, UNARY_SHAPES, (ANY,))
elementwise("exp_method", lambda x: x.exp(), np.exp, UNARY_SHAPES, (ANY,))
elementwise("lucid.log", lambda x: lucid.log(x), np.log, UNARY_SHAPES, (POS,))
elementwise("log_method", lambda x: x.log(), np.log, UNARY_SHAPES, (POS,))
elementwise("lucid.tanh", lambda x: lucid.tanh(x), np.tanh, UNARY_SHAPES, (ANY,))
elementwise("tanh_method", lambda x: x.tanh(), np.tanh, UNARY_SHAPES, (ANY,))
elementwise("lucid.relu", lambda x: lucid.relu(x), lambda a: np.maximum(a, 0.0), UNARY_SHAPES, (NONZERO,))
elementwise("relu_method", lambda x: x.relu(), lambda a: np.maximum(a, 0.0), UNARY_SHAPES, (NONZERO,))
elementwise("clone", lambda x: x.clone(), lambda a: a.copy(), UNARY_SHAPES, (ANY,))

# --- matmul ------------------------------------------------------------------------------------
MATMUL_SHAPES = (
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)),
    ((5, 2, 3), (5, 3, 4)),
    ((5, 2, 3), (3,)),
)
op("matmul", lambda x, y: x @ y, np.matmul, MATMUL_SHAPES, (ANY, ANY))
op("lucid.matmul", lambda x, y: lucid.matmul(x, y), np.matmul, MATMUL_SHAPES[:4], (ANY, ANY))

# --- reductions sum / mean -----------------------------------------------------------------------
REDUCE_ARGS = [  # (id, dim, keepdim)
    ("int0", 0, False),
    ("int1_keep", 1, True),
    ("neg1", -1, False),
    ("neg1_keep", -1, True),
    ("tuple02", (0, 2), False),
    ("tuple02_keep", (0, 2), True),
    ("tuple_neg", (0, -1), False),
]
reduction("sum_all_method", lambda x: x.sum(), np.sum, R3 + (((),), ((5,),)), (ANY,), dim=None)
reduction("lucid.sum_all", lambda x: lucid.sum(x), np.sum, R3, (ANY,), dim=None)
reduction("mean_all_method", lambda x: x.mean(), np.mean, R3 + (((5,),),), (ANY,), dim=None)
reduction("lucid.mean_all", lambda x: lucid.mean(x), np.mean, R3, (ANY,), dim=None)
for _id, _dim, _keep in REDUCE_ARGS:
    reduction(f"sum_method[{_id}]", (lambda d, k: lambda x: x.sum(dim=d, keepdim=k))(_dim, _keep),
              _np_reduce(np.sum, _dim, _keep), R3, (ANY,), dim=_dim)
    reduction(f"lucid.sum[{_id}]", (lambda d, k: lambda x: lucid.sum(x, dim=d, keepdim=k))(_dim, _keep),
              _np_reduce(np.sum, _dim, _keep), R3, (ANY,), dim=_dim)
    reduction(f"mean_method[{_id}]", (lambda d, k: lambda x: x.mean(dim=d, keepdim=k))(_dim, _keep),
              _np_reduce(np.mean, _dim, _keep), R3, (ANY,), dim=_dim)
    reduction(f"lucid.mean[{_id}]", (lambda d, k: lambda x: lucid.mean(x, dim=d, keepdim=k))(_dim, _keep),
              _np_reduce(np.mean, _dim, _keep), R3, (ANY,), dim=_dim)
reduction("sum_positional_dim", lambda x: x.sum(1), lambda a: np.sum(a, axis=1), R3, (ANY,), dim=1)

# --- shape ---------------------------------------------------------------------------------------
op("reshape_varargs", lambda x: x.reshape(3, 2), lambda a: a.reshape(3, 2), (((2, 3),),), (ANY,))
op("reshape_tuple", lambda x: x.reshape((3, 2)), lambda a: a.reshape(3, 2), (((2, 3),),), (ANY,))
op("lucid.reshape", lambda x: lucid.reshape(x, (6,)), lambda a: a.reshape(6), (((2, 3),),), (ANY,))
op("reshape_minus1", lambda x: x.reshape(4, -1), lambda a: a.reshape(4, -1), R3, (ANY,))
op("reshape_to_3d", lambda x: x.reshape(2, 1, 3), lambda a: a.reshape(2, 1, 3), (((6,),),), (ANY,))
op("transpose_method", lambda x: x.transpose(0, 1), lambda a: np.swapaxes(a, 0, 1), (((2, 3),),), (ANY,))
op("lucid.transpose", lambda x: lucid.transpose(x, 0, 1), lambda a: np.swapaxes(a, 0, 1),
   (((2, 3),),), (ANY,))
op("transpose_3d_02", lambda x: x.transpose(0, 2), lambda a: np.swapaxes(a, 0, 2), R3, (ANY,))
op("transpose_negative", lambda x: x.transpose(-1, -2), lambda a: np.swapaxes(a, -1, -2), R3, (ANY,))
op("transpose_then_reshape", lambda x: x.transpose(0, 1).reshape(6),
   lambda a: np.swapaxes(a, 0, 1).reshape(6), (((2, 3),),), (ANY,))

# --- a composite, exercising many nodes at once -----------------------------------------------
op("composite",
   lambda x, y: ((x @ y).tanh() * 2.0 - (x.sum(dim=1, keepdim=True) / 3.0).exp()).relu().mean(dim=0),
   lambda a, b: np.maximum(np.tanh(a @ b) * 2.0 - np.exp(a.sum(axis=1, keepdims=True) / 3.0), 0).mean(axis=0),
   (((3, 2), (2, 4)),), (ANY, ANY))


# --- elementwise unary (functions and methods) ---------------------------------------------
elementwise("lucid.sqrt", lambda x: lucid.sqrt(x), np.sqrt, UNARY_SHAPES, (POS,))
elementwise("sqrt_method", lambda x: x.sqrt(), np.sqrt, UNARY_SHAPES, (POS,))
elementwise("lucid.abs", lambda x: lucid.abs(x), np.abs, UNARY_SHAPES, (NONZERO,))
elementwise("abs_method", lambda x: x.abs(), np.abs, UNARY_SHAPES, (NONZERO,))
elementwise("lucid.sin", lambda x: lucid.sin(x), np.sin, UNARY_SHAPES, (ANY,))
elementwise("sin_method", lambda x: x.sin(), np.sin, UNARY_SHAPES, (ANY,))
elementwise("lucid.cos", lambda x: lucid.cos(x), np.cos, UNARY_SHAPES, (ANY,))
elementwise("cos_method", lambda x: x.cos(), np.cos, UNARY_SHAPES, (ANY,))
elementwise("lucid.sigmoid", lambda x: lucid.sigmoid(x), _sigmoid, UNARY_SHAPES, (ANY,))
elementwise("sigmoid_method", lambda x: x.sigmoid(), _sigmoid, UNARY_SHAPES, (ANY,))
elementwise("lucid.clamp_both", lambda x: lucid.clamp(x, min=LO, max=HI), lambda a: np.clip(a, LO, HI),
   UNARY_SHAPES + (((4, 5),),), (CLAMP,))
elementwise("lucid.clamp_min", lambda x: lucid.clamp(x, min=LO), lambda a: np.maximum(a, LO),
   UNARY_SHAPES, (CLAMP,))
elementwise("lucid.clamp_max", lambda x: lucid.clamp(x, max=HI), lambda a: np.minimum(a, HI),
   UNARY_SHAPES, (CLAMP,))
elementwise("clamp_method", lambda x: x.clamp(min=LO, max=HI), lambda a: np.clip(a, LO, HI),
   UNARY_SHAPES, (CLAMP,))
elementwise("clamp_method_min_only", lambda x: x.clamp(min=LO), lambda a: np.maximum(a, LO),
   UNARY_SHAPES, (CLAMP,))
elementwise("clamp_method_max_only", lambda x: x.clamp(max=HI), lambda a: np.minimum(a, HI),
   UNARY_SHAPES, (CLAMP,))
elementwise("sin_cos_sigmoid_chain", lambda x: (x.sin() * x.cos()).sigmoid() + x.abs().sqrt(),
   lambda a: _sigmoid(np.sin(a) * np.cos(a)) + np.sqrt(np.abs(a)), UNARY_SHAPES, (NONZERO,))

# --- maximum / minimum / where -----------------------------------------------------------------
elementwise("lucid.maximum", lambda x, y: lucid.maximum(x, y), np.maximum, BINARY_SHAPES, (ANY, ANY),
            apart=True)
elementwise("maximum_method", lambda x, y: x.maximum(y), np.maximum, BINARY_SHAPES[:4], (ANY, ANY),
            apart=True)
elementwise("lucid.minimum", lambda x, y: lucid.minimum(x, y), np.minimum, BINARY_SHAPES, (ANY, ANY),
            apart=True)
elementwise("minimum_method", lambda x, y: x.minimum(y), np.minimum, BINARY_SHAPES[:4], (ANY, ANY),
            apart=True)

_COND_34 = np.array([[True, False, True, False],
                     [False, False, True, True],
                     [True, True, False, False]])
_COND_4 = np.array([True, False, False, True])
_COND_31 = np.array([[True], [False], [True]])
_cond_34_t = lucid.tensor(_COND_34)
_cond_4_t = lucid.tensor(_COND_4)
_cond_31_t = lucid.tensor(_COND_31)

op("lucid.where_same_shape", lambda x, y: lucid.where(_cond_34_t, x, y),
   lambda a, b: np.where(_COND_34, a, b), (((3, 4), (3, 4)),), (ANY, ANY))
op("lucid.where_broadcast_xy", lambda x, y: lucid.where(_cond_34_t, x, y),
   lambda a, b: np.where(_COND_34, a, b), (((3, 1), (4,)), ((), (3, 4)), ((1, 4), ())), (ANY, ANY))
op("lucid.where_broadcast_cond", lambda x, y: lucid.where(_cond_4_t, x, y),
   lambda a, b: np.where(_COND_4, a, b), (((3, 4), (3, 4)), ((3, 1), (2, 3, 4))), (ANY, ANY))
op("lucid.where_cond_column", lambda x, y: lucid.where(_cond_31_t, x, y),
   lambda a, b: np.where(_COND_31, a, b), (((3, 4), (4,)),), (ANY, ANY))
_cond_0d_t = lucid.tensor(False)
elementwise("lucid.where_0d", lambda x, y: lucid.where(_cond_0d_t, x, y),
   lambda a, b: np.where(False, a, b), (((), ()), ((2,), ())), (ANY, ANY))
op("lucid.where_scalar_other", lambda x: lucid.where(_cond_34_t, x, 0.0),
   lambda a: np.where(_COND_34, a, 0.0), (((3, 4),),), (ANY,))

# --- reductions amax / amin / max / min (no zero-size input: see ZERO_SIZE_BUG) ----------------
MINMAX_ARGS = [  # (id, dim, keepdim)
    ("none", None, False),
    ("none_keep", None, True),
    ("int0", 0, False),
    ("int1_keep", 1, True),
    ("neg1", -1, False),
    ("tuple02", (0, 2), False),
    ("tuple12_keep", (1, 2), True),
    ("tuple_neg", (0, -1), False),
]
NO_EMPTY = dict(zero_size=False, reason=ZERO_SIZE_BUG)

for _id, _dim, _keep in MINMAX_ARGS:
    reduction(f"lucid.amax[{_id}]", (lambda d, k: lambda x: lucid.amax(x, dim=d, keepdim=k))(_dim, _keep),
              _np_reduce(np.amax, _dim, _keep), R3, (DISTINCT,), dim=_dim, **NO_EMPTY)
    reduction(f"amax_method[{_id}]", (lambda d, k: lambda x: x.amax(dim=d, keepdim=k))(_dim, _keep),
              _np_reduce(np.amax, _dim, _keep), R3, (DISTINCT,), dim=_dim, **NO_EMPTY)
    reduction(f"lucid.amin[{_id}]", (lambda d, k: lambda x: lucid.amin(x, dim=d, keepdim=k))(_dim, _keep),
              _np_reduce(np.amin, _dim, _keep), R3, (DISTINCT,), dim=_dim, **NO_EMPTY)
    reduction(f"amin_method[{_id}]", (lambda d, k: lambda x: x.amin(dim=d, keepdim=k))(_dim, _keep),
              _np_reduce(np.amin, _dim, _keep), R3, (DISTINCT,), dim=_dim, **NO_EMPTY)
reduction("amax_default", lambda x: x.amax(), np.amax, R3 + (((),), ((5,),)), (DISTINCT,), dim=None,
          **NO_EMPTY)
reduction("amin_default", lambda x: lucid.amin(x), np.amin, R3 + (((),), ((5,),)), (DISTINCT,),
          dim=None, **NO_EMPTY)

reduction("max_all_method", lambda x: x.max(), np.max, R3 + (((),), ((5,),)), (DISTINCT,), dim=None,
          **NO_EMPTY)
reduction("lucid.max_all", lambda x: lucid.max(x), np.max, R3, (DISTINCT,), dim=None, **NO_EMPTY)
reduction("min_all_method", lambda x: x.min(), np.min, R3 + (((),), ((5,),)), (DISTINCT,), dim=None,
          **NO_EMPTY)
reduction("lucid.min_all", lambda x: lucid.min(x), np.min, R3, (DISTINCT,), dim=None, **NO_EMPTY)
for _dim, _keep in ((0, False), (1, True), (-1, False), (2, True)):
    _id = f"{_dim}{'_keep' if _keep else ''}"
    reduction(f"max_dim_values[{_id}]",
              (lambda d, k: lambda x: x.max(dim=d, keepdim=k).values)(_dim, _keep),
              _np_reduce(np.max, _dim, _keep), R3, (DISTINCT,), dim=_dim, **NO_EMPTY)
    reduction(f"lucid.max_dim_values[{_id}]",
              (lambda d, k: lambda x: lucid.max(x, dim=d, keepdim=k)[0])(_dim, _keep),
              _np_reduce(np.max, _dim, _keep), R3, (DISTINCT,), dim=_dim, **NO_EMPTY)
    reduction(f"min_dim_values[{_id}]",
              (lambda d, k: lambda x: x.min(dim=d, keepdim=k).values)(_dim, _keep),
              _np_reduce(np.min, _dim, _keep), R3, (DISTINCT,), dim=_dim, **NO_EMPTY)
    reduction(f"lucid.min_dim_values[{_id}]",
              (lambda d, k: lambda x: lucid.min(x, dim=d, keepdim=k)[0])(_dim, _keep),
              _np_reduce(np.min, _dim, _keep), R3, (DISTINCT,), dim=_dim, **NO_EMPTY)
reduction("max_dim_positional", lambda x: x.max(1)[0], lambda a: a.max(axis=1), R3, (DISTINCT,), dim=1,
          **NO_EMPTY)
reduction("max_dim_1d", lambda x: x.max(dim=0).values, lambda a: a.max(axis=0), (((5,),),), (DISTINCT,),
          dim=0, **NO_EMPTY)

# --- shape ops -------------------------------------------------------------------------------
op("view_varargs", lambda x: x.view(3, 2), lambda a: a.reshape(3, 2), M23, (ANY,), any_layout=False)
op("view_tuple", lambda x: x.view((6,)), lambda a: a.reshape(6), M23, (ANY,), any_layout=False)
op("view_minus1", lambda x: x.view(-1, 4), lambda a: a.reshape(-1, 4), R3, (ANY,), any_layout=False)
op("lucid.view", lambda x: lucid.view(x, (3, 2)), lambda a: a.reshape(3, 2), M23, (ANY,),
   any_layout=False)
op("view_scalar_to_1", lambda x: x.view(1), lambda a: a.reshape(1), (((),),), (ANY,))
op("reshape_scalar_to_11", lambda x: x.reshape(1, 1), lambda a: a.reshape(1, 1), (((),),), (ANY,))
op("reshape_1_to_scalar", lambda x: x.reshape(()), lambda a: a.reshape(()), (((1,),),), (ANY,))
op("permute_varargs", lambda x: x.permute(2, 0, 1), lambda a: np.transpose(a, (2, 0, 1)), R3, (ANY,))
op("permute_tuple", lambda x: x.permute((1, 2, 0)), lambda a: np.transpose(a, (1, 2, 0)), R3, (ANY,))
op("permute_negative", lambda x: x.permute(-1, 0, 1), lambda a: np.transpose(a, (2, 0, 1)), R3, (ANY,))
op("lucid.permute", lambda x: lucid.permute(x, (1, 0)), lambda a: a.T, M23, (ANY,))
op("T_2d", lambda x: x.T, lambda a: a.T, M23 + (((4, 1),),), (ANY,))
op("T_1d", lambda x: x.T, lambda a: a.T, (((5,),),), (ANY,))
op("T_then_matmul", lambda x: x.T @ x, lambda a: a.T @ a, M23, (ANY,))
op("flatten_all", lambda x: x.flatten(), lambda a: a.reshape(-1), R3 + M23 + (((),),), (ANY,))
op("flatten_start1", lambda x: x.flatten(1), lambda a: a.reshape(a.shape[0], -1), R3, (ANY,))
op("flatten_0_1", lambda x: x.flatten(0, 1), lambda a: a.reshape(-1, a.shape[2]), R3, (ANY,))
op("lucid.flatten", lambda x: lucid.flatten(x), lambda a: a.reshape(-1), R3, (ANY,))
op("flatten_noncontig", lambda x: x.transpose(0, 1).flatten(), lambda a: a.T.reshape(-1), M23, (ANY,))
op("squeeze_all", lambda x: x.squeeze(), np.squeeze, (((1, 3, 1, 2),), ((1,),), ((1, 1),)), (ANY,))
op("squeeze_dim", lambda x: x.squeeze(2), lambda a: np.squeeze(a, 2), (((1, 3, 1, 2),),), (ANY,))
op("squeeze_neg_dim", lambda x: x.squeeze(-4), lambda a: np.squeeze(a, 0), (((1, 3, 1, 2),),), (ANY,))
op("squeeze_dim_not_1_noop", lambda x: x.squeeze(1), lambda a: a.copy(), (((1, 3, 1, 2),),), (ANY,))
op("lucid.squeeze", lambda x: lucid.squeeze(x, 0), lambda a: np.squeeze(a, 0), (((1, 3),),), (ANY,))
op("unsqueeze0", lambda x: x.unsqueeze(0), lambda a: a[None], M23 + (((),),), (ANY,))
op("unsqueeze1", lambda x: x.unsqueeze(1), lambda a: a[:, None], M23, (ANY,))
op("unsqueeze_neg1", lambda x: x.unsqueeze(-1), lambda a: a[..., None], M23 + (((),),), (ANY,))
op("lucid.unsqueeze", lambda x: lucid.unsqueeze(x, 2), lambda a: a[:, :, None], M23, (ANY,))
op("expand_row", lambda x: x.expand(3, 4), lambda a: np.broadcast_to(a, (3, 4)), (((1, 4),), ((4,),)), (ANY,))
op("expand_minus1", lambda x: x.expand(-1, 4), lambda a: np.broadcast_to(a, (3, 4)), (((3, 1),),), (ANY,))
op("expand_new_leading", lambda x: x.expand(2, 3, 4), lambda a: np.broadcast_to(a, (2, 3, 4)),
   (((3, 1),), ((),)), (ANY,))
op("expand_tuple", lambda x: x.expand((2, 3)), lambda a: np.broadcast_to(a, (2, 3)), (((1, 3),),), (ANY,))
op("lucid.expand", lambda x: lucid.expand(x, (2, 3)), lambda a: np.broadcast_to(a, (2, 3)),
   (((3,),),), (ANY,))
# scalar ops on stride-0 / non-contiguous inputs (the backward of mean does exactly this)
op("expand_then_scalar_ops", lambda x: (x.expand(3, 4) / 4.0 + 1.0) * 2.0 - 0.5,
   lambda a: (np.broadcast_to(a, (3, 4)) / 4.0 + 1.0) * 2.0 - 0.5, (((1, 4),), ((),)), (ANY,))
op("transpose_then_scalar_ops", lambda x: 3.0 / (x.T * 2.0 + 5.0),
   lambda a: 3.0 / (a.T * 2.0 + 5.0), (((3, 4),),), (POS,))
op("expand_then_mul", lambda x: x.expand(3, 4) * x.expand(3, 4).T.T,
   lambda a: np.broadcast_to(a, (3, 4)) ** 2, (((1, 4),),), (ANY,))

# --- cat / stack ------------------------------------------------------------------------------------
op("cat_dim0", lambda x, y: lucid.cat([x, y], dim=0), lambda a, b: np.concatenate([a, b], 0),
   (((2, 3), (4, 3)), ((2,), (3,))), (ANY, ANY))
op("cat_dim1", lambda x, y: lucid.cat([x, y], dim=1), lambda a, b: np.concatenate([a, b], 1),
   (((2, 3), (2, 1)),), (ANY, ANY))
op("cat_neg_dim", lambda x, y: lucid.cat((x, y), dim=-1), lambda a, b: np.concatenate([a, b], -1),
   (((2, 3, 2), (2, 3, 4)),), (ANY, ANY))
op("cat_default_dim", lambda x, y: lucid.cat([x, y]), lambda a, b: np.concatenate([a, b], 0),
   (((1, 3), (2, 3)),), (ANY, ANY))
op("cat_three", lambda x, y, z: lucid.cat([x, y, z], dim=1),
   lambda a, b, c: np.concatenate([a, b, c], 1), (((2, 1), (2, 3), (2, 2)),), (ANY, ANY, ANY))
op("cat_same_tensor", lambda x: lucid.cat([x, x * 2.0, x], dim=0),
   lambda a: np.concatenate([a, a * 2.0, a], 0), (((2, 3),),), (ANY,))
op("stack_dim0", lambda x, y: lucid.stack([x, y], dim=0), lambda a, b: np.stack([a, b], 0),
   (((2, 3), (2, 3)), ((), ()), ((4,), (4,))), (ANY, ANY))
op("stack_dim1", lambda x, y: lucid.stack([x, y], dim=1), lambda a, b: np.stack([a, b], 1),
   (((2, 3), (2, 3)),), (ANY, ANY))
op("stack_neg_dim", lambda x, y: lucid.stack((x, y), dim=-1), lambda a, b: np.stack([a, b], -1),
   (((2, 3), (2, 3)),), (ANY, ANY))
op("stack_default_dim_three", lambda x, y, z: lucid.stack([x, y, z]),
   lambda a, b, c: np.stack([a, b, c], 0), (((3,), (3,), (3,)),), (ANY, ANY, ANY))

# --- indexing -------------------------------------------------------------------------------------------
_IDX_T = lucid.tensor([2, 0, 2], dtype=lucid.int64)
_IDX_2D_T = lucid.tensor([[0, 1], [1, 0]], dtype=lucid.int64)
_MASK_34 = np.array([[True, False, True, False],
                     [False, False, False, True],
                     [True, True, False, False]])
_MASK_34_T = lucid.tensor(_MASK_34)
_MASK_ROWS = np.array([True, False, True])
_MASK_ROWS_T = lucid.tensor(_MASK_ROWS)

def index_op(name, key, shapes=M34, np_key=None):
    np_key = key if np_key is None else np_key
    op(f"index[{name}]", (lambda k: lambda x: x[k])(key), (lambda k: lambda a: a[k])(np_key),
       shapes, (ANY,))


index_op("int", 1)
index_op("neg_int", -1)
index_op("int_int", (2, 3))
index_op("int_neg_int", (-1, -4))
index_op("slice", slice(1, 3))
index_op("slice_step", slice(None, None, 2))
index_op("slice_neg_start", slice(-2, None))
index_op("col", (slice(None), 1))
index_op("row_slice_col_slice", (slice(0, 2), slice(1, None, 2)))
index_op("none", None)
index_op("none_middle", (slice(None), None, 2))
index_op("ellipsis_int", (Ellipsis, 0))
index_op("ellipsis_3d", (0, Ellipsis, slice(1, 3)), shapes=R3)
index_op("ellipsis_only", Ellipsis)
index_op("list", [0, 2])
index_op("list_repeated", [1, 1, 0, 1])
index_op("list_negative", [-1, 0])
index_op("int64_tensor_repeated", _IDX_T, np_key=np.array([2, 0, 2]))
index_op("int64_tensor_2d", _IDX_2D_T, np_key=np.array([[0, 1], [1, 0]]))
index_op("two_lists", ([0, 2, 2], [1, 3, 1]))
index_op("slice_list", (slice(None), [3, 0, 3]))
index_op("int_list", (1, [0, 0, 2]))
index_op("bool_mask_full", _MASK_34_T, np_key=_MASK_34)
index_op("bool_mask_numpy", _MASK_34)
index_op("bool_mask_rows", _MASK_ROWS_T, np_key=_MASK_ROWS)
index_op("bool_mask_rows_then_col", (_MASK_ROWS_T, 2), np_key=(_MASK_ROWS, 2))
index_op("bool_list", [True, False, True], np_key=np.array([True, False, True]))
op("index_chain", lambda x: x[1:][:, [0, 0]][None, ..., 1],
   lambda a: a[1:][:, [0, 0]][None, ..., 1], M34, (ANY,))
op("index_1d_int_to_0d", lambda x: x[3], lambda a: a[3], (((5,),),), (ANY,))



OPS = [*CORE, *op_rows_elementwise.ROWS, *op_rows_statistics.ROWS, *op_rows_indexing.ROWS,
       *op_rows_linalg.ROWS, *op_rows_linalg2.ROWS, *op_rows_inplace.ROWS, *op_rows_special.ROWS,
       *op_rows_order.ROWS, *op_rows_shape2.ROWS, *op_rows_complex.ROWS]


def _shape_id(shapes):
    return "_".join("x".join(map(str, s)) if s else "scalar" for s in shapes)


def cases():
    """Flatten the table into (id, OpSpec, shapes) triples."""
    return [(f"{spec.name}-{_shape_id(shapes)}", spec, shapes)
            for spec in OPS for shapes in spec.shapes]


def _check_unique_names():
    seen = set()
    for spec in OPS:
        assert spec.name not in seen, f"two rows named {spec.name}"
        seen.add(spec.name)


_check_unique_names()
