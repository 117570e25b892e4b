"""Rows whose inputs and outputs are complex values (API.md section 15): the complex-capable ops
on inputs of the complex domains (op_spec's ``C_ANY``, ``C_NONZERO``, ``C_RIGHT``, ``C_SMALL``).

These rows are not in ``op_table.OPS``, whose checks (float32 runs, finite differences of a real
reference) assume real values: tests/ops/test_gradcheck_complex_rows.py checks each against
NumPy in complex128 and complex64, with gradcheck (forward mode too) and gradgradcheck, which
take complex inputs and outputs apart into real and imaginary parts (both Wirtinger
derivatives); tests/reliability/test_property.py builds random complex programs from them, in
which real values (from abs, real, var, ...) and complex ones meet. The real-input rows
(lucid.complex, polar) bring real leaves into those programs. Each domain keeps its inputs off
the branch cuts and poles of the row's op, so that finite differences see one branch.
"""
import numpy as np

import lucid
from .op_spec import (ANY, BINARY_SHAPES, C_ANY, C_NONZERO, C_RIGHT, C_SMALL, POS, UNARY_SHAPES,
                      Rows)

ROWS = Rows()
_row = ROWS.elementwise
_op = ROWS.op
_reduction = ROWS.reduction
R3 = (((2, 3, 4),), ((3, 4),), ((4,),))
MATMUL = (((2, 2), (2,)), ((2,), (2, 3)), ((1, 2, 2), (2, 2)))   # few leaf elements (gradcheck)


def _np_logsumexp(a, axis):
    top = np.max(a.real, axis=axis, keepdims=True)
    return np.log(np.sum(np.exp(a - top), axis=axis)) + np.squeeze(top, axis)


def _np_var(a, axis):
    dev = a - np.mean(a, axis=axis, keepdims=True)
    return np.sum((dev * np.conj(dev)).real, axis=axis) / (a.shape[axis] - 1)


# -- arithmetic --------------------------------------------------------------------------------
_row("complex add", lambda x, y: x + y, np.add, BINARY_SHAPES, (C_ANY, C_ANY))
_row("complex sub", lambda x, y: x - y, np.subtract, BINARY_SHAPES, (C_ANY, C_ANY))
_row("complex mul", lambda x, y: x * y, np.multiply, BINARY_SHAPES, (C_ANY, C_ANY))
_row("complex div", lambda x, y: x / y, np.divide, BINARY_SHAPES, (C_ANY, C_NONZERO))
_row("complex pow", lambda x, y: x ** y, np.power, BINARY_SHAPES, (C_RIGHT, C_SMALL))
_row("complex square by pow", lambda x: x ** 2, lambda a: a ** 2, UNARY_SHAPES, (C_ANY,))
_row("complex times a complex number", lambda x: (0.5 - 1.5j) * x + 2j,
     lambda a: (0.5 - 1.5j) * a + 2j, UNARY_SHAPES, (C_ANY,))
_row("complex mul_", lambda x, y: (x * 1j).mul_(y), lambda a, b: a * 1j * b,
     (((3, 4), (3, 4)), ((2, 3), (3,)), ((2, 3), ()), ((), ())), (C_ANY, C_ANY), inplace=True)              # x * 1j: complex memory even for a real x
_row("complex neg", lambda x: -x, np.negative, UNARY_SHAPES, (C_ANY,))

# -- holomorphic functions (each off its cuts and poles) -----------------------------------------
for _name, _domain, _ref in (
        ("exp", C_ANY, np.exp), ("log", C_RIGHT, np.log), ("log1p", C_RIGHT, np.log1p),
        ("expm1", C_ANY, np.expm1), ("sqrt", C_RIGHT, np.sqrt),
        ("rsqrt", C_RIGHT, lambda a: 1 / np.sqrt(a)), ("reciprocal", C_NONZERO, np.reciprocal),
        ("square", C_ANY, np.square), ("sin", C_ANY, np.sin), ("cos", C_ANY, np.cos),
        ("tan", C_SMALL, np.tan), ("sinh", C_ANY, np.sinh), ("cosh", C_ANY, np.cosh),
        ("tanh", C_SMALL, np.tanh), ("asin", C_SMALL, np.arcsin), ("acos", C_SMALL, np.arccos),
        ("atan", C_SMALL, np.arctan), ("sigmoid", C_SMALL, lambda a: 1 / (1 + np.exp(-a)))):
    _row(f"complex {_name}", getattr(lucid, _name), _ref, UNARY_SHAPES, (_domain,))

# -- a complex number's parts, and complex values made from real ones -----------------------------
_row("complex real", lambda x: lucid.real(x), np.real, UNARY_SHAPES, (C_ANY,))
_row("complex imag", lambda x: lucid.imag(x * (1 + 0j)), np.imag, UNARY_SHAPES, (C_ANY,))
_row("complex .real of a product", lambda x, y: (x * y).real, lambda a, b: (a * b).real,
     BINARY_SHAPES, (C_ANY, C_ANY))
_row("complex conj", lambda x: lucid.conj(x), np.conj, UNARY_SHAPES, (C_ANY,))
_row("complex conj_physical", lambda x: lucid.conj_physical(x), np.conj, UNARY_SHAPES, (C_ANY,))
_row("complex abs", lambda x: lucid.abs(x), np.abs, UNARY_SHAPES, (C_NONZERO,))
_row("complex angle", lambda x: lucid.angle(x), np.angle, UNARY_SHAPES, (C_RIGHT,))
_row("lucid.complex", lambda x, y: lucid.complex(x, y), lambda a, b: a + 1j * b, BINARY_SHAPES,
     (ANY, ANY), same_dtype=True)
_row("lucid.polar", lambda r, t: lucid.polar(r, t), lambda r, t: r * np.exp(1j * t),
     BINARY_SHAPES, (POS, ANY), same_dtype=True)
_op("complex view_as_real", lambda x: lucid.view_as_real(x * (1 + 0j)), lambda a: np.stack(
    [a.real, a.imag + 0.0], -1), (((3,),), ((2, 3),)), (C_ANY,))
_op("complex where", lambda x, y: lucid.where(lucid.tensor([True, False, True]), x, y),
    lambda a, b: np.where([True, False, True], a, b), (((3,), (3,)), ((2, 3), (3,))),
    (C_ANY, C_ANY))

# -- reductions ----------------------------------------------------------------------------------
_reduction("complex sum", lambda x: lucid.sum(x, -1), lambda a: np.sum(a, -1), R3, (C_ANY,), -1)
_reduction("complex mean", lambda x: lucid.mean(x, (0, -1)), lambda a: np.mean(a, (0, -1)), R3[:2],
           (C_ANY,), (0, -1))
_reduction("complex prod", lambda x: lucid.prod(x, -1), lambda a: np.prod(a, -1), R3, (C_ANY,),
           -1)
_reduction("complex cumsum", lambda x: lucid.cumsum(x, 0), lambda a: np.cumsum(a, 0), R3,
           (C_ANY,), 0)
_reduction("complex cumprod", lambda x: lucid.cumprod(x, -1), lambda a: np.cumprod(a, -1), R3,
           (C_ANY,), -1)
_reduction("complex var", lambda x: lucid.var(x, -1), lambda a: _np_var(a, -1), R3, (C_ANY,), -1,
           zero_size=False)
_reduction("complex std", lambda x: lucid.std(x, -1), lambda a: np.sqrt(_np_var(a, -1)), R3,
           (C_ANY,), -1, zero_size=False)
_reduction("complex norm", lambda x: lucid.norm(x, dim=-1), lambda a: np.sqrt(
    np.sum(np.abs(a) ** 2, -1)), R3, (C_NONZERO,), -1)
_reduction("complex 3-norm", lambda x: lucid.norm(x, 3, dim=-1), lambda a: np.sum(
    np.abs(a) ** 3, -1) ** (1 / 3), R3, (C_NONZERO,), -1)
_reduction("complex logsumexp", lambda x: lucid.logsumexp(x, -1),
           lambda a: _np_logsumexp(a, -1), R3, (C_SMALL,), -1, zero_size=False)

# -- products ------------------------------------------------------------------------------------
_op("complex matmul", lambda x, y: x @ y, np.matmul, MATMUL, (C_ANY, C_ANY))
_op("complex einsum", lambda x, y: lucid.einsum("ij,jk->ik", x, y),
    lambda a, b: np.einsum("ij,jk->ik", a, b), (((2, 2), (2, 2)),), (C_ANY, C_ANY))
_op("complex outer", lambda x, y: lucid.outer(x, y), np.outer, (((3,), (2,)),), (C_ANY, C_ANY))
_op("complex dot", lambda x, y: lucid.dot(x, y), np.dot, (((3,), (3,)),), (C_ANY, C_ANY))
_op("complex cat", lambda x, y: lucid.cat([x, y], -1), lambda a, b: np.concatenate([a, b], -1),
    (((2, 3), (2, 1)), ((3,), (2,))), (C_ANY, C_ANY))
