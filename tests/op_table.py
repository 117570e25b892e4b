"""The table of differentiable ops in scope of the foundation issue.

Each entry: a readable name, the lucid callable, the NumPy reference (float64), the list of
input-shape tuples to try, and a domain per input ("any", "positive", "nonzero").
Every input of every entry is a differentiable float64 tensor; Python-scalar operands are
baked into the callables (reflected forms included).
"""
from dataclasses import dataclass
from typing import Callable

import numpy as np

import lucid

ANY, POS, NONZERO = "any", "positive", "nonzero"


@dataclass(frozen=True)
class OpSpec:
    name: str
    fn: Callable
    ref: Callable
    shapes: tuple          # tuple of shape-tuples, one tuple per case
    domains: tuple         # one per input


def sample(rng, shape, domain):
    if domain == ANY:
        return rng.standard_normal(shape)
    mag = rng.uniform(0.5, 2.0, size=shape)
    if domain == POS:
        return mag
    if domain == NONZERO:
        return np.where(rng.random(shape) < 0.5, -mag, mag)
    raise ValueError(domain)


BINARY_SHAPES = (
    ((3, 4), (3, 4)),
    ((3, 1), (1, 4)),
    ((2, 3), ()),
    ((), (2, 3)),
    ((4,), (3, 4)),
    ((2, 1, 3), (4, 1)),
    ((), ()),
)
UNARY_SHAPES = (((),), ((5,),), ((2, 3),))

OPS = []


def op(name, fn, ref, shapes, domains):
    OPS.append(OpSpec(name, fn, ref, tuple(shapes), tuple(domains)))


# --- binary arithmetic, operators and functions -------------------------------------------
op("add", lambda x, y: x + y, np.add, BINARY_SHAPES, (ANY, ANY))
op("lucid.add", lambda x, y: lucid.add(x, y), np.add, BINARY_SHAPES[:3], (ANY, ANY))
op("sub", lambda x, y: x - y, np.subtract, BINARY_SHAPES, (ANY, ANY))
op("lucid.sub", lambda x, y: lucid.sub(x, y), np.subtract, BINARY_SHAPES[:3], (ANY, ANY))
op("mul", lambda x, y: x * y, np.multiply, BINARY_SHAPES, (ANY, ANY))
op("lucid.mul", lambda x, y: lucid.mul(x, y), np.multiply, BINARY_SHAPES[:3], (ANY, ANY))
op("mul_same_tensor", lambda x: x * x, lambda a: a * a, UNARY_SHAPES, (ANY,))
# one gradient sent down two edges into the same node: must not be aliased / double-counted
op("add_same_tensor", lambda x: x + x, lambda a: a + a, UNARY_SHAPES, (ANY,))
op("sub_same_tensor", lambda x: x - x, lambda a: a - a, UNARY_SHAPES, (ANY,))
op("div_same_tensor", lambda x: x / x, lambda a: a / a, UNARY_SHAPES, (NONZERO,))
op("add_twice_then_mul", lambda x: ((x + x) + x) * x, lambda a: ((a + a) + a) * a, UNARY_SHAPES, (ANY,))
op("clone_plus_self", lambda x: x.clone() + x.clone() * 2.0, lambda a: a + a * 2.0, UNARY_SHAPES, (ANY,))
op("reshape_paths_rejoin", lambda x: x.reshape(3, 2).transpose(0, 1) * x + x,
   lambda a: a.reshape(3, 2).T * a + a, (((2, 3),),), (ANY,))
op("div", lambda x, y: x / y, np.divide, BINARY_SHAPES, (ANY, NONZERO))
op("lucid.div", lambda x, y: lucid.div(x, y), np.divide, BINARY_SHAPES[:3], (ANY, NONZERO))
op("pow_tt", lambda x, y: x ** y, np.power, BINARY_SHAPES, (POS, ANY))
op("lucid.pow_tt", lambda x, y: lucid.pow(x, y), np.power, BINARY_SHAPES[:3], (POS, ANY))

# --- tensor with Python scalar (both sides) ------------------------------------------------
op("add_scalar", lambda x: x + 2.5, lambda a: a + 2.5, UNARY_SHAPES, (ANY,))
op("radd_scalar", lambda x: 2.5 + x, lambda a: 2.5 + a, UNARY_SHAPES, (ANY,))
op("add_int_scalar", lambda x: x + 1, lambda a: a + 1, UNARY_SHAPES, (ANY,))
op("sub_scalar", lambda x: x - 2.0, lambda a: a - 2.0, UNARY_SHAPES, (ANY,))
op("rsub_scalar", lambda x: 2.0 - x, lambda a: 2.0 - a, UNARY_SHAPES, (ANY,))
op("mul_scalar", lambda x: x * -1.5, lambda a: a * -1.5, UNARY_SHAPES, (ANY,))
op("rmul_scalar", lambda x: -1.5 * x, lambda a: -1.5 * a, UNARY_SHAPES, (ANY,))
op("rmul_int_scalar", lambda x: 3 * x, lambda a: 3 * a, UNARY_SHAPES, (ANY,))
op("lucid.mul_scalar", lambda x: lucid.mul(x, 2.0), lambda a: a * 2.0, UNARY_SHAPES, (ANY,))
op("div_scalar", lambda x: x / 4.0, lambda a: a / 4.0, UNARY_SHAPES, (ANY,))
op("rdiv_scalar", lambda x: 3.0 / x, lambda a: 3.0 / a, UNARY_SHAPES, (NONZERO,))
op("pow_scalar_float", lambda x: x ** 2.5, lambda a: a ** 2.5, UNARY_SHAPES, (POS,))
op("pow_scalar_negative", lambda x: x ** -1.5, lambda a: a ** -1.5, UNARY_SHAPES, (POS,))
op("pow_scalar_int", lambda x: x ** 3, lambda a: a ** 3, UNARY_SHAPES, (ANY,))
op("pow_scalar_half", lambda x: x ** 0.5, np.sqrt, UNARY_SHAPES, (POS,))
op("lucid.pow_ts", lambda x: lucid.pow(x, 3.0), lambda a: a ** 3.0, UNARY_SHAPES, (ANY,))
op("rpow_scalar", lambda x: 2.0 ** x, lambda a: 2.0 ** a, UNARY_SHAPES, (ANY,))
op("lucid.pow_st", lambda x: lucid.pow(2.0, x), lambda a: 2.0 ** a, UNARY_SHAPES, (ANY,))

# --- unary -----------------------------------------------------------------------------------
op("neg", lambda x: -x, np.negative, UNARY_SHAPES, (ANY,))
op("lucid.neg", lambda x: lucid.neg(x), np.negative, UNARY_SHAPES, (ANY,))
op("lucid.exp", lambda x: lucid.exp(x), np.exp, UNARY_SHAPES, (ANY,))
op("exp_method", lambda x: x.exp(), np.exp, UNARY_SHAPES, (ANY,))
op("lucid.log", lambda x: lucid.log(x), np.log, UNARY_SHAPES, (POS,))
op("log_method", lambda x: x.log(), np.log, UNARY_SHAPES, (POS,))
op("lucid.tanh", lambda x: lucid.tanh(x), np.tanh, UNARY_SHAPES, (ANY,))
op("tanh_method", lambda x: x.tanh(), np.tanh, UNARY_SHAPES, (ANY,))
op("lucid.relu", lambda x: lucid.relu(x), lambda a: np.maximum(a, 0.0), UNARY_SHAPES, (NONZERO,))
op("relu_method", lambda x: x.relu(), lambda a: np.maximum(a, 0.0), UNARY_SHAPES, (NONZERO,))
op("clone", lambda x: x.clone(), lambda a: a.copy(), UNARY_SHAPES, (ANY,))

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

# --- reductions --------------------------------------------------------------------------------
R3 = (((2, 3, 4),),)
REDUCE_ARGS = [  # (id, dim, keepdim)
    ("int0", 0, False),
    ("int1_keep", 1, True),
    ("neg1", -1, False),
    ("neg1_keep", -1, True),
    ("tuple02", (0, 2), False),
    ("tuple02_keep", (0, 2), True),
    ("tuple_neg", (0, -1), False),
]
op("sum_all_method", lambda x: x.sum(), np.sum, R3 + (((),), ((5,),)), (ANY,))
op("lucid.sum_all", lambda x: lucid.sum(x), np.sum, R3, (ANY,))
op("mean_all_method", lambda x: x.mean(), np.mean, R3 + (((5,),),), (ANY,))
op("lucid.mean_all", lambda x: lucid.mean(x), np.mean, R3, (ANY,))
for _id, _dim, _keep in REDUCE_ARGS:
    op(f"sum_method[{_id}]",
       (lambda d, k: lambda x: x.sum(dim=d, keepdim=k))(_dim, _keep),
       (lambda d, k: lambda a: np.sum(a, axis=d, keepdims=k))(_dim, _keep), R3, (ANY,))
    op(f"lucid.sum[{_id}]",
       (lambda d, k: lambda x: lucid.sum(x, dim=d, keepdim=k))(_dim, _keep),
       (lambda d, k: lambda a: np.sum(a, axis=d, keepdims=k))(_dim, _keep), R3, (ANY,))
    op(f"mean_method[{_id}]",
       (lambda d, k: lambda x: x.mean(dim=d, keepdim=k))(_dim, _keep),
       (lambda d, k: lambda a: np.mean(a, axis=d, keepdims=k))(_dim, _keep), R3, (ANY,))
    op(f"lucid.mean[{_id}]",
       (lambda d, k: lambda x: lucid.mean(x, dim=d, keepdim=k))(_dim, _keep),
       (lambda d, k: lambda a: np.mean(a, axis=d, keepdims=k))(_dim, _keep), R3, (ANY,))
op("sum_positional_dim", lambda x: x.sum(1), lambda a: np.sum(a, axis=1), R3, (ANY,))

# --- shape ---------------------------------------------------------------------------------------
op("reshape_varargs", lambda x: x.reshape(3, 2), lambda a: a.reshape(3, 2), (((2, 3),),), (ANY,))
op("reshape_tuple", lambda x: x.reshape((3, 2)), lambda a: a.reshape(3, 2), (((2, 3),),), (ANY,))
op("lucid.reshape", lambda x: lucid.reshape(x, (6,)), lambda a: a.reshape(6), (((2, 3),),), (ANY,))
op("reshape_minus1", lambda x: x.reshape(4, -1), lambda a: a.reshape(4, -1), R3, (ANY,))
op("reshape_to_3d", lambda x: x.reshape(2, 1, 3), lambda a: a.reshape(2, 1, 3), (((6,),),), (ANY,))
op("transpose_method", lambda x: x.transpose(0, 1), lambda a: np.swapaxes(a, 0, 1), (((2, 3),),), (ANY,))
op("lucid.transpose", lambda x: lucid.transpose(x, 0, 1), lambda a: np.swapaxes(a, 0, 1), (((2, 3),),), (ANY,))
op("transpose_3d_02", lambda x: x.transpose(0, 2), lambda a: np.swapaxes(a, 0, 2), R3, (ANY,))
op("transpose_negative", lambda x: x.transpose(-1, -2), lambda a: np.swapaxes(a, -1, -2), R3, (ANY,))
op("transpose_then_reshape", lambda x: x.transpose(0, 1).reshape(6),
   lambda a: np.swapaxes(a, 0, 1).reshape(6), (((2, 3),),), (ANY,))

# --- a composite, exercising many nodes at once -----------------------------------------------
op("composite",
   lambda x, y: ((x @ y).tanh() * 2.0 - (x.sum(dim=1, keepdim=True) / 3.0).exp()).relu().mean(dim=0),
   lambda a, b: np.maximum(np.tanh(a @ b) * 2.0 - np.exp(a.sum(axis=1, keepdims=True) / 3.0), 0).mean(axis=0),
   (((3, 2), (2, 4)),), (ANY, ANY))


def _shape_id(shapes):
    return "_".join("x".join(map(str, s)) if s else "scalar" for s in shapes)


def cases():
    """Flatten the table into (id, OpSpec, shapes) triples."""
    out = []
    for spec in OPS:
        for shapes in spec.shapes:
            assert len(shapes) == len(spec.domains), spec.name
            out.append((f"{spec.name}-{_shape_id(shapes)}", spec, shapes))
    return out
