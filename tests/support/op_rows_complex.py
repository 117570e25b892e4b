"""Rows of the op table (tests/support/op_table.py) for the complex ops of API.md section 15 that
take or give real values: a complex number's parts (real imag conj conj_physical angle abs),
the ops that build complex values (complex polar view_as_complex) or take them apart
(view_as_real), and complex * and /.

Every row's inputs and output are real (the table's rule), so each row goes through complex
values in between: its real inputs become complex numbers (lucid.complex, polar,
view_as_complex), the op under test works on them, and a real part, |z| or view_as_real brings
the result back. A Jacobian of such a row by finite differences checks PyTorch's convention for
every complex gradient on the way (Note [Complex gradients]): a conjugation or a factor of 2
wrong in any of them changes the real Jacobian. tests/ops/test_complex_parts.py compares each op
with PyTorch directly.
"""
import numpy as np

import lucid
from .op_spec import ANY, BINARY_SHAPES, NONZERO, POS, UNARY_SHAPES, Rows

ROWS = Rows(same_dtype=True)              # lucid.complex and polar take parts of one dtype
_row = ROWS.elementwise
_op = ROWS.op

PAIRS = (((3, 2),), ((2, 3, 2),), ((2,),))       # a last dim of 2: (real, imaginary)


def c(x, y):
    """x + iy (lucid)."""
    return lucid.complex(x, y)


def pairs(a):
    """NumPy's view of the real and imaginary parts on a last dim."""
    return np.stack([a.real, a.imag], -1)


_op("complex_parts", lambda x, y: lucid.view_as_real(c(x, y) * c(y, x)),
    lambda a, b: pairs((a + 1j * b) * (b + 1j * a)), BINARY_SHAPES, (ANY, ANY))
_op("polar_parts", lambda r, t: lucid.view_as_real(lucid.polar(r, t)),
    lambda r, t: pairs(r * np.exp(1j * t)), BINARY_SHAPES, (POS, ANY))
_op("view_as_real_of_product", lambda x, y: lucid.view_as_real(c(x, y) * c(x * 0.5, y - x)),
    lambda a, b: pairs((a + 1j * b) * (0.5 * a + 1j * (b - a))), BINARY_SHAPES, (ANY, ANY))
# view_as_complex needs its pairs adjacent in memory (tests/ops/test_complex_parts.py checks the
# refusals): the row makes them so, and keeps out of random programs, whose values have no last
# dim of 2
_op("view_as_complex_abs", lambda v: lucid.abs(lucid.view_as_complex(v.contiguous()) * (1 - 2j)),
    lambda v: np.abs((v[..., 0] + 1j * v[..., 1]) * (1 - 2j)), PAIRS, (ANY,), property=False,
    reason="view_as_complex needs a last dim of 2, which random programs' values do not have")
_row("real_of_square", lambda x, y: lucid.real(c(x, y) * c(x, y)),
     lambda a, b: ((a + 1j * b) ** 2).real, BINARY_SHAPES, (ANY, ANY))
_row("real_property", lambda x, y: (c(x, y) / c(y, 1.0 + x * x)).real,
     lambda a, b: ((a + 1j * b) / (b + 1j * (1 + a * a))).real, BINARY_SHAPES, (ANY, NONZERO))
_row("imag_of_square", lambda x, y: lucid.imag(c(x, y) * c(x, y)),
     lambda a, b: ((a + 1j * b) ** 2).imag, BINARY_SHAPES, (ANY, ANY))
_row("imag_property", lambda x, y: (c(x, y) * 3j + c(y, y)).imag,
     lambda a, b: ((a + 1j * b) * 3j + (b + 1j * b)).imag, BINARY_SHAPES, (ANY, ANY))
_row("conj_product", lambda x, y: lucid.real(lucid.conj(c(x, y)) * c(y, x * y)),
     lambda a, b: (np.conj(a + 1j * b) * (b + 1j * a * b)).real, BINARY_SHAPES, (ANY, ANY))
_row("conj_method", lambda x, y: lucid.imag(c(x, y).conj() * c(x, y * y)),
     lambda a, b: (np.conj(a + 1j * b) * (a + 1j * b * b)).imag, BINARY_SHAPES, (ANY, ANY))
_row("conj_physical_product", lambda x, y: lucid.imag(lucid.conj_physical(c(x, y)) * c(y, x)),
     lambda a, b: (np.conj(a + 1j * b) * (b + 1j * a)).imag, BINARY_SHAPES, (ANY, ANY))
_row("abs_of_complex", lambda x, y: lucid.abs(c(x, y) * c(y, x + 1.0)),
     lambda a, b: np.abs((a + 1j * b) * (b + 1j * (a + 1))), BINARY_SHAPES, (NONZERO, NONZERO))
_row("angle_of_complex", lambda x, y: lucid.angle(c(x, y)), lambda a, b: np.arctan2(b, a),
     BINARY_SHAPES, (POS, ANY), fresh_inputs=True)
_row("angle_of_real", lambda x: lucid.angle(x) * x, lambda a: np.where(a < 0, np.pi, 0.0) * a,
     UNARY_SHAPES, (NONZERO,), fresh_inputs=True)
_row("mul_complex", lambda x, y: lucid.real(c(x, y) * c(y, x) * x),
     lambda a, b: ((a + 1j * b) * (b + 1j * a) * a).real, BINARY_SHAPES, (ANY, ANY))
_row("div_complex", lambda x, y: lucid.imag(c(x, y) / c(y, x) + 2.0 / c(x, lucid.ones_like(x))),
     lambda a, b: ((a + 1j * b) / (b + 1j * a) + 2.0 / (a + 1j)).imag, BINARY_SHAPES,
     (NONZERO, NONZERO))


# the holomorphic functions, each through a complex number built from two real inputs (log and
# sqrt keep x > 0, away from their branch cut on the negative real axis)
_op("exp_complex", lambda x, y: lucid.view_as_real(lucid.exp(c(x, y))),
    lambda a, b: pairs(np.exp(a + 1j * b)), BINARY_SHAPES, (ANY, ANY))
_op("log_complex", lambda x, y: lucid.view_as_real(lucid.log(c(x, y))),
    lambda a, b: pairs(np.log(a + 1j * b)), BINARY_SHAPES, (POS, ANY), fresh_inputs=True)
_op("sqrt_complex", lambda x, y: lucid.view_as_real(lucid.sqrt(c(x, y))),
    lambda a, b: pairs(np.sqrt(a + 1j * b)), BINARY_SHAPES, (POS, ANY), fresh_inputs=True)
_op("sin_complex", lambda x, y: lucid.view_as_real(lucid.sin(c(x, y)) * lucid.cos(c(y, x))),
    lambda a, b: pairs(np.sin(a + 1j * b) * np.cos(b + 1j * a)), BINARY_SHAPES, (ANY, ANY))
_op("tanh_complex", lambda x, y: lucid.view_as_real(lucid.tanh(c(x * 0.5, y * 0.5))),
    lambda a, b: pairs(np.tanh(0.5 * a + 0.5j * b)), BINARY_SHAPES, (ANY, ANY))
_op("sigmoid_complex", lambda x, y: lucid.view_as_real(lucid.sigmoid(c(x * 0.5, y * 0.5))),
    lambda a, b: pairs(1 / (1 + np.exp(-(0.5 * a + 0.5j * b)))), BINARY_SHAPES, (ANY, ANY))
_op("reciprocal_complex", lambda x, y: lucid.view_as_real(lucid.reciprocal(c(x, y))),
    lambda a, b: pairs(1 / (a + 1j * b)), BINARY_SHAPES, (NONZERO, NONZERO))
_op("var_complex", lambda x, y: lucid.var(c(x, y), 0),
    lambda a, b: np.var(a + 1j * b, axis=0, ddof=1), (((3, 4), (3, 4)), ((4,), (4,))), (ANY, ANY))
_op("std_complex", lambda x, y: lucid.std(c(x, y * 2.0)),
    lambda a, b: np.std(a + 2j * b, ddof=1), (((3, 4), (3, 4)), ((2, 3), (3,))), (ANY, ANY))
_op("prod_complex", lambda x, y: lucid.view_as_real(lucid.prod(c(x, y), 0)),
    lambda a, b: pairs(np.prod(a + 1j * b, axis=0)), (((3, 4), (3, 4)), ((4,), (4,))),
    (ANY, ANY))
_op("cumprod_complex", lambda x, y: lucid.view_as_real(lucid.cumprod(c(x, y), 0)),
    lambda a, b: pairs(np.cumprod(a + 1j * b, axis=0)), (((3, 4), (3, 4)), ((4,), (4,))),
    (ANY, ANY))
