"""The table of the remaining differentiable ops of API.md section 2 (those not in op_table.py).

Same layout as op_table.py: each entry is an ``OpSpec`` (name, lucid callable, NumPy reference,
input-shape tuples, one domain per input). Every input is a differentiable float64 tensor;
non-differentiable operands (conditions, index arrays, masks, bounds) are baked into the callables.

Extra domains (on top of op_table's "any" / "positive" / "nonzero"):
  * ``DISTINCT``: entries pairwise at least ~0.2 apart (no ties for max/min/amax/amin);
  * ``CLAMP``: entries at least 0.1 away from the clamp bounds ``LO``/``HI`` used below.
"""
import numpy as np

import lucid
from op_table import ANY, NONZERO, POS, BINARY_SHAPES, UNARY_SHAPES, OpSpec, _shape_id
from op_table import sample as _base_sample

DISTINCT, CLAMP = "distinct", "clamp"
LO, HI = -0.5, 0.5


def sample(rng, shape, domain):
    if domain == DISTINCT:
        n = int(np.prod(shape, dtype=np.int64))
        vals = rng.permutation(n) * 0.3 - 0.15 * n + rng.uniform(-0.05, 0.05, size=n)
        return vals.reshape(shape)
    if domain == CLAMP:
        band = rng.integers(0, 3, size=shape)
        low = rng.uniform(-1.5, LO - 0.1, size=shape)
        mid = rng.uniform(LO + 0.1, HI - 0.1, size=shape)
        high = rng.uniform(HI + 0.1, 1.5, size=shape)
        return np.where(band == 0, low, np.where(band == 1, mid, high))
    return _base_sample(rng, shape, domain)


OPS = []


def op(name, fn, ref, shapes, domains):
    OPS.append(OpSpec(name, fn, ref, tuple(shapes), tuple(domains)))


def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


# --- elementwise unary (functions and methods) ---------------------------------------------
op("lucid.sqrt", lambda x: lucid.sqrt(x), np.sqrt, UNARY_SHAPES, (POS,))
op("sqrt_method", lambda x: x.sqrt(), np.sqrt, UNARY_SHAPES, (POS,))
op("lucid.abs", lambda x: lucid.abs(x), np.abs, UNARY_SHAPES, (NONZERO,))
op("abs_method", lambda x: x.abs(), np.abs, UNARY_SHAPES, (NONZERO,))
op("lucid.sin", lambda x: lucid.sin(x), np.sin, UNARY_SHAPES, (ANY,))
op("sin_method", lambda x: x.sin(), np.sin, UNARY_SHAPES, (ANY,))
op("lucid.cos", lambda x: lucid.cos(x), np.cos, UNARY_SHAPES, (ANY,))
op("cos_method", lambda x: x.cos(), np.cos, UNARY_SHAPES, (ANY,))
op("lucid.sigmoid", lambda x: lucid.sigmoid(x), _sigmoid, UNARY_SHAPES, (ANY,))
op("sigmoid_method", lambda x: x.sigmoid(), _sigmoid, UNARY_SHAPES, (ANY,))
op("lucid.clamp_both", lambda x: lucid.clamp(x, min=LO, max=HI), lambda a: np.clip(a, LO, HI),
   UNARY_SHAPES + (((4, 5),),), (CLAMP,))
op("lucid.clamp_min", lambda x: lucid.clamp(x, min=LO), lambda a: np.maximum(a, LO),
   UNARY_SHAPES, (CLAMP,))
op("lucid.clamp_max", lambda x: lucid.clamp(x, max=HI), lambda a: np.minimum(a, HI),
   UNARY_SHAPES, (CLAMP,))
op("clamp_method", lambda x: x.clamp(min=LO, max=HI), lambda a: np.clip(a, LO, HI),
   UNARY_SHAPES, (CLAMP,))
op("clamp_method_min_only", lambda x: x.clamp(min=LO), lambda a: np.maximum(a, LO),
   UNARY_SHAPES, (CLAMP,))
op("clamp_method_max_only", lambda x: x.clamp(max=HI), lambda a: np.minimum(a, HI),
   UNARY_SHAPES, (CLAMP,))
op("sin_cos_sigmoid_chain", lambda x: (x.sin() * x.cos()).sigmoid() + x.abs().sqrt(),
   lambda a: _sigmoid(np.sin(a) * np.cos(a)) + np.sqrt(np.abs(a)), UNARY_SHAPES, (NONZERO,))

# --- maximum / minimum / where -----------------------------------------------------------------
op("lucid.maximum", lambda x, y: lucid.maximum(x, y), np.maximum, BINARY_SHAPES, (ANY, ANY))
op("maximum_method", lambda x, y: x.maximum(y), np.maximum, BINARY_SHAPES[:4], (ANY, ANY))
op("lucid.minimum", lambda x, y: lucid.minimum(x, y), np.minimum, BINARY_SHAPES, (ANY, ANY))
op("minimum_method", lambda x, y: x.minimum(y), np.minimum, BINARY_SHAPES[:4], (ANY, ANY))

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
op("lucid.where_0d", lambda x, y: lucid.where(_cond_0d_t, x, y),
   lambda a, b: np.where(False, a, b), (((), ()), ((2,), ())), (ANY, ANY))
op("lucid.where_scalar_other", lambda x: lucid.where(_cond_34_t, x, 0.0),
   lambda a: np.where(_COND_34, a, 0.0), (((3, 4),),), (ANY,))

# --- reductions amax / amin / max / min --------------------------------------------------------
R3 = (((2, 3, 4),),)
REDUCE_ARGS = [  # (id, dim, keepdim)
    ("none", None, False),
    ("none_keep", None, True),
    ("int0", 0, False),
    ("int1_keep", 1, True),
    ("neg1", -1, False),
    ("tuple02", (0, 2), False),
    ("tuple12_keep", (1, 2), True),
    ("tuple_neg", (0, -1), False),
]


def _np_reduce(f, d, k):
    return lambda a: f(a, axis=d, keepdims=k)


for _id, _dim, _keep in REDUCE_ARGS:
    op(f"lucid.amax[{_id}]", (lambda d, k: lambda x: lucid.amax(x, dim=d, keepdim=k))(_dim, _keep),
       _np_reduce(np.amax, _dim, _keep), R3, (DISTINCT,))
    op(f"amax_method[{_id}]", (lambda d, k: lambda x: x.amax(dim=d, keepdim=k))(_dim, _keep),
       _np_reduce(np.amax, _dim, _keep), R3, (DISTINCT,))
    op(f"lucid.amin[{_id}]", (lambda d, k: lambda x: lucid.amin(x, dim=d, keepdim=k))(_dim, _keep),
       _np_reduce(np.amin, _dim, _keep), R3, (DISTINCT,))
    op(f"amin_method[{_id}]", (lambda d, k: lambda x: x.amin(dim=d, keepdim=k))(_dim, _keep),
       _np_reduce(np.amin, _dim, _keep), R3, (DISTINCT,))
op("amax_default", lambda x: x.amax(), np.amax, R3 + (((),), ((5,),)), (DISTINCT,))
op("amin_default", lambda x: lucid.amin(x), np.amin, R3 + (((),), ((5,),)), (DISTINCT,))

op("max_all_method", lambda x: x.max(), np.max, R3 + (((),), ((5,),)), (DISTINCT,))
op("lucid.max_all", lambda x: lucid.max(x), np.max, R3, (DISTINCT,))
op("min_all_method", lambda x: x.min(), np.min, R3 + (((),), ((5,),)), (DISTINCT,))
op("lucid.min_all", lambda x: lucid.min(x), np.min, R3, (DISTINCT,))
for _dim, _keep in ((0, False), (1, True), (-1, False), (2, True)):
    _id = f"{_dim}{'_keep' if _keep else ''}"
    op(f"max_dim_values[{_id}]", (lambda d, k: lambda x: x.max(dim=d, keepdim=k).values)(_dim, _keep),
       _np_reduce(np.max, _dim, _keep), R3, (DISTINCT,))
    op(f"lucid.max_dim_values[{_id}]",
       (lambda d, k: lambda x: lucid.max(x, dim=d, keepdim=k)[0])(_dim, _keep),
       _np_reduce(np.max, _dim, _keep), R3, (DISTINCT,))
    op(f"min_dim_values[{_id}]", (lambda d, k: lambda x: x.min(dim=d, keepdim=k).values)(_dim, _keep),
       _np_reduce(np.min, _dim, _keep), R3, (DISTINCT,))
    op(f"lucid.min_dim_values[{_id}]",
       (lambda d, k: lambda x: lucid.min(x, dim=d, keepdim=k)[0])(_dim, _keep),
       _np_reduce(np.min, _dim, _keep), R3, (DISTINCT,))
op("max_dim_positional", lambda x: x.max(1)[0], lambda a: a.max(axis=1), R3, (DISTINCT,))
op("max_dim_1d", lambda x: x.max(dim=0).values, lambda a: a.max(axis=0), (((5,),),), (DISTINCT,))

# --- shape ops -------------------------------------------------------------------------------
M23 = (((2, 3),),)
op("view_varargs", lambda x: x.view(3, 2), lambda a: a.reshape(3, 2), M23, (ANY,))
op("view_tuple", lambda x: x.view((6,)), lambda a: a.reshape(6), M23, (ANY,))
op("view_minus1", lambda x: x.view(-1, 4), lambda a: a.reshape(-1, 4), R3, (ANY,))
op("lucid.view", lambda x: lucid.view(x, (3, 2)), lambda a: a.reshape(3, 2), M23, (ANY,))
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

M34 = (((3, 4),),)


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


def cases():
    """Flatten the table into (id, OpSpec, shapes) triples."""
    out = []
    for spec in OPS:
        for shapes in spec.shapes:
            assert len(shapes) == len(spec.domains), spec.name
            out.append((f"{spec.name}-{_shape_id(shapes)}", spec, shapes))
    return out
