"""lucid's linear algebra beyond matmul: mm, bmm, dot, outer, cdist, the norms, solve, inv, det,
slogdet, cholesky, eigh, qr, einsum, svd, lstsq, pinv, matrix_exp, matrix_power, lu_factor,
lu_solve, cross, multi_dot.

A cold op family, so an extension module of its own: it builds in parallel with lucid._core and
an edit here recompiles only this module. It reaches the core through lucid/_core.pxd (the
internal part, _core_internal.pxi: one indirect call per core function it uses); matmul, which
the operators and the core's rules call, stays in the core (ops/linalg/matmul.pxi).
"""
cimport numpy as cnp
from lucid._core cimport *

import numpy as np
# Python-level functions of the core the rules call: lucid's sum (not the builtin), amax, amin,
# clamp and dtype names
from lucid._core import amax, amin, clamp, dtype_name, sum
# einsum takes repeated letters' diagonals with lucid.diagonal (a Python call: not a hot path)
from lucid._ops import diagonal
# the words of its ops' registrations (ops/registry.pxi)
from lucid._core import (define_op, ANY, BATCHED_MATRIX, CUSTOM, DIMS, FLOAT_ONLY, NUMERIC,
                         REDUCTION, TENSORS)
# the Python-level ops the compositions use (aliased: some shadow builtins)
from lucid._core import (abs as lucid_abs, amax, amin, cat as lucid_cat, pow as lucid_pow,
                         unsqueeze, where as lucid_where)
from lucid._ops import narrow, ne, norm as lucid_norm

cnp.import_array()

include "ops/linalg/products.pxi"
include "ops/linalg/common.pxi"
include "ops/linalg/solve.pxi"
include "ops/linalg/det.pxi"
include "ops/linalg/decomp.pxi"
include "ops/linalg/einsum.pxi"
include "ops/linalg/svd.pxi"
include "ops/linalg/lu.pxi"
include "ops/linalg/lstsq.pxi"
include "ops/linalg/matrix_functions.pxi"
include "ops/linalg/norms.pxi"
include "ops/linalg/chain.pxi"
include "ops/linalg/cdist.pxi"

# registered ops install their methods (det, slogdet); inverse is named unlike linalg.inv
install_methods(Tensor, {"inverse": inv})
# this module's node classes are lucid's own, trusted like the core's (Note [Native nodes])
register_node_types(__name__)
