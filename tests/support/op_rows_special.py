"""Rows of the op table (tests/support/op_table.py) for the float functions and special functions
of API.md section 13: log2 log10 exp2 sinc frac logaddexp2 hypot xlogy copysign fmod remainder
nan_to_num (lucid/ops/elementwise/float_functions.pxi) and erfc lgamma digamma polygamma erfinv
(lucid/ops/elementwise/special.pxi, lucid/kernels/special.h).

SciPy is the reference (test-only). Functions with poles (lgamma, digamma, polygamma) take the
``POS`` domain [0.5, 2]; erfinv and frac take a scaled ``SMALL`` input (|0.4 x| <= 0.8: inside
erfinv's domain, and away from frac's jumps at the nonzero integers); the remainders (fmod,
remainder) and copysign jump where x/y is an integer or y changes sign, so the random programs
feed them fresh leaves only. tests/ops/test_special.py checks what a Jacobian check cannot see:
poles, limits, special values, dtypes and errors.
"""
import numpy as np
import scipy.special as sp

import lucid
from .op_spec import ANY, BINARY_SHAPES, NONZERO, POS, SMALL, UNARY_SHAPES, Rows


def np_remainder(a, b):
    """Python's % as PyTorch and lucid compute it (fmod, plus b where the signs differ), which
    is np.remainder: a - floor(a/b)*b rounds otherwise where a/b is an integer in exact
    arithmetic but not in binary (-1.944 % -0.648: -0.648, not 0)."""
    return np.remainder(a, b)


ROWS = Rows(tol32=2e-6)
_row = ROWS.elementwise
_row("log2", lucid.log2, np.log2, UNARY_SHAPES, (POS,))
_row("log10_method", lambda x: x.log10(), np.log10, UNARY_SHAPES, (POS,))
_row("exp2", lucid.exp2, np.exp2, UNARY_SHAPES, (ANY,))
_row("erfc", lucid.erfc, sp.erfc, UNARY_SHAPES, (ANY,))
_row("erfc_method", lambda x: x.erfc(), sp.erfc, UNARY_SHAPES, (ANY,))
_row("sinc", lucid.sinc, np.sinc, UNARY_SHAPES, (ANY,), property=False,
     reason="sinc is even: after atan2 at its branch cut (x == 0, y < 0: a 3-decimal input "
            "hits it) the jump from pi to -pi becomes a kink no finite difference flags")
_row("sinc_shifted", lambda x: lucid.sinc(x + 0.25), lambda a: np.sinc(a + 0.25), UNARY_SHAPES,
     (ANY,))
_row("frac", lambda x: lucid.frac(x * 0.4), lambda a: a * 0.4, UNARY_SHAPES, (SMALL,))
_row("frac_method", lambda x: (x * 0.2 + 3.5).frac(), lambda a: a * 0.2 + 0.5, UNARY_SHAPES,
     (SMALL,))
_row("lgamma", lucid.lgamma, sp.gammaln, UNARY_SHAPES, (POS,))
_row("digamma", lucid.digamma, sp.digamma, UNARY_SHAPES, (POS,))
_row("digamma_method", lambda x: x.digamma(), sp.digamma, UNARY_SHAPES, (POS,))
_row("polygamma_1", lambda x: lucid.polygamma(1, x), lambda a: sp.polygamma(1, a),
     UNARY_SHAPES, (POS,))
_row("polygamma_method", lambda x: x.polygamma(2), lambda a: sp.polygamma(2, a), UNARY_SHAPES,
     (POS,), tol32=1e-5)
_row("erfinv", lambda x: lucid.erfinv(x * 0.4), lambda a: sp.erfinv(a * 0.4), UNARY_SHAPES,
     (SMALL,))
_row("logaddexp2", lucid.logaddexp2, np.logaddexp2, BINARY_SHAPES, (ANY, ANY))
_row("hypot", lucid.hypot, np.hypot, BINARY_SHAPES, (NONZERO, NONZERO))
_row("hypot_method", lambda x, y: x.hypot(y), np.hypot, BINARY_SHAPES[:3], (NONZERO, ANY))
_row("xlogy", lucid.xlogy, sp.xlogy, BINARY_SHAPES, (ANY, POS))
_row("xlogy_scalar", lambda x: lucid.xlogy(2.5, x), lambda a: sp.xlogy(2.5, a), UNARY_SHAPES,
     (POS,))
_row("copysign", lucid.copysign, np.copysign, BINARY_SHAPES, (NONZERO, NONZERO),
     fresh_inputs=True)
_row("fmod", lucid.fmod, np.fmod, BINARY_SHAPES, (ANY, NONZERO), fresh_inputs=True)
# the Python-number operands keep the jumps (x/y an integer) away from the random programs'
# inputs, which are rounded to 3 decimals: no multiple of 0.6180339887 or divisor of 1.2345678
# in [-2, 2] is within 3e-5 of such a number
_row("fmod_scalar", lambda x: x.fmod(0.6180339887), lambda a: np.fmod(a, 0.6180339887),
     UNARY_SHAPES, (ANY,), fresh_inputs=True)
_row("remainder", lucid.remainder, np_remainder, BINARY_SHAPES, (ANY, NONZERO),
     fresh_inputs=True)
_row("remainder_scalar_first", lambda y: lucid.remainder(1.2345678, y),
     lambda b: np_remainder(1.2345678, b), UNARY_SHAPES, (NONZERO,), fresh_inputs=True)
_row("nan_to_num", lambda x: lucid.nan_to_num(lucid.log(x)), np.log, UNARY_SHAPES, (POS,))
