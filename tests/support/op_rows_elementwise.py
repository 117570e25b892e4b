"""Rows of the op table (tests/support/op_table.py) for the elementwise ops of API.md section 8.

Inputs are float64 tensors drawn from op_spec's domains; an op defined on part of the line
takes a scaled input of the ``SMALL`` domain (asin(0.4*x) with |x| <= 2: |0.4*x| <= 0.8), with
the same scaling in its reference, so a random program may feed it any value inside [-2, 2].
Float32 values are held to 2e-6 (``tol32``).
Step functions (sign floor ceil round trunc) are not rows: their gradient is zero, which a
finite difference cannot check; tests/ops/test_elementwise.py checks them directly.
"""
import math

import numpy as np

import lucid
from .op_spec import ANY, BINARY_SHAPES, NONZERO, POS, SMALL, UNARY_SHAPES, Rows

_erf = np.frompyfunc(math.erf, 1, 1)          # the reference only: lucid's erf is its own


def np_erf(a):
    return np.asarray(_erf(a), dtype=np.float64)


def np_sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def np_gelu_tanh(a):
    return 0.5 * a * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (a + 0.044715 * a ** 3)))


def np_softplus(a, beta=1.0, threshold=20.0):
    return np.where(a * beta > threshold, a, np.logaddexp(0.0, a * beta) / beta)


def np_elu(a, alpha=1.0):
    return np.where(a > 0, a, alpha * np.expm1(np.minimum(a, 0.0)))


ROWS = Rows(tol32=2e-6)
_row = ROWS.elementwise
_row("log1p", lucid.log1p, np.log1p, UNARY_SHAPES, (POS,))
_row("log1p_method", lambda x: (x * 0.4).log1p(), lambda a: np.log1p(a * 0.4), UNARY_SHAPES,
     (SMALL,))
_row("expm1", lucid.expm1, np.expm1, UNARY_SHAPES, (ANY,))
_row("expm1_method", lambda x: x.expm1(), np.expm1, UNARY_SHAPES, (ANY,))
_row("square", lucid.square, np.square, UNARY_SHAPES, (ANY,))
_row("square_method", lambda x: x.square(), np.square, UNARY_SHAPES, (ANY,))
_row("rsqrt", lucid.rsqrt, lambda a: 1.0 / np.sqrt(a), UNARY_SHAPES, (POS,))
_row("reciprocal", lucid.reciprocal, lambda a: 1.0 / a, UNARY_SHAPES, (NONZERO,))
_row("reciprocal_method", lambda x: x.reciprocal(), lambda a: 1.0 / a, UNARY_SHAPES, (NONZERO,))
_row("tan", lambda x: lucid.tan(x * 0.5), lambda a: np.tan(a * 0.5), UNARY_SHAPES, (SMALL,))
_row("asin", lambda x: lucid.asin(x * 0.4), lambda a: np.arcsin(a * 0.4), UNARY_SHAPES, (SMALL,))
_row("acos", lambda x: (x * 0.4).acos(), lambda a: np.arccos(a * 0.4), UNARY_SHAPES, (SMALL,))
_row("atan", lucid.atan, np.arctan, UNARY_SHAPES, (ANY,))
_row("sinh", lucid.sinh, np.sinh, UNARY_SHAPES, (ANY,))
_row("cosh", lambda x: x.cosh(), np.cosh, UNARY_SHAPES, (ANY,))
_row("erf", lucid.erf, np_erf, UNARY_SHAPES, (ANY,))
_row("erf_method", lambda x: x.erf(), np_erf, UNARY_SHAPES, (ANY,))
# atan2(y, x): y kept off 0, where x < 0 is its branch cut (pi to -pi: an even op after it, such as
# square, turns the jump into a kink no finite difference flags); the method row covers x = 0
_row("atan2", lucid.atan2, np.arctan2, BINARY_SHAPES, (NONZERO, NONZERO))
_row("logaddexp", lucid.logaddexp, np.logaddexp, BINARY_SHAPES, (ANY, ANY))
_row("atan2_method", lambda x, y: x.atan2(y), np.arctan2, BINARY_SHAPES[:3], (NONZERO, ANY))
_row("pow_method_tensor", lambda x, y: x.pow(y), np.power, BINARY_SHAPES, (POS, ANY))
_row("pow_method_scalar", lambda x: x.pow(2), np.square, UNARY_SHAPES, (ANY,))
_row("silu", lucid.silu, lambda a: a * np_sigmoid(a), UNARY_SHAPES, (ANY,))
_row("gelu", lucid.gelu, lambda a: 0.5 * a * (1.0 + np_erf(a / math.sqrt(2.0))), UNARY_SHAPES,
     (ANY,))
_row("gelu_tanh", lambda x: lucid.gelu(x, approximate="tanh"), np_gelu_tanh, UNARY_SHAPES,
     (ANY,))
_row("softplus", lucid.softplus, np_softplus, UNARY_SHAPES, (ANY,))
_row("softplus_beta", lambda x: lucid.softplus(x * 3.0, beta=2, threshold=5),
     lambda a: np_softplus(a * 3.0, 2.0, 5.0), (((4, 5),),), (ANY,))
_row("leaky_relu", lucid.leaky_relu, lambda a: np.where(a > 0, a, 0.01 * a), UNARY_SHAPES,
     (NONZERO,))
_row("leaky_relu_slope", lambda x: lucid.leaky_relu(x, negative_slope=0.2),
     lambda a: np.where(a > 0, a, 0.2 * a), UNARY_SHAPES, (NONZERO,))
_row("elu", lucid.elu, np_elu, UNARY_SHAPES, (NONZERO,))
_row("elu_alpha", lambda x: x.elu(alpha=1.5), lambda a: np_elu(a, 1.5), UNARY_SHAPES, (NONZERO,))
