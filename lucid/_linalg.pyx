"""lucid's linear algebra beyond matmul: solve, inv, det, slogdet, cholesky, eigh, qr, einsum,
svd, lstsq, pinv, matrix_exp, matrix_power, lu_factor, lu_solve, the norms, cross, multi_dot.

A cold op family, so an extension module of its own: it builds in parallel with lucid._core and
an edit here recompiles only this module. It reaches the core through lucid/_core.pxd (the
internal part, _core_internal.pxi: one indirect call per core function it uses); matmul and the
products (mm, dot, linalg.norm, ...) stay in the core, whose hot paths call them directly.
"""
cimport numpy as cnp
from lucid._core cimport *

import numpy as np
# Python-level functions of the core the rules call: lucid's sum (not the builtin) and dtype names
from lucid._core import dtype_name, sum
# the words of its ops' registrations (ops/registry.pxi)
from lucid._core import define_op, BATCHED_MATRIX, CUSTOM, DIMS, FLOAT_ONLY, NUMERIC, REDUCTION
from lucid._core import TENSORS
# the core's Python-level ops the compositions use (aliased: some shadow builtins)
from lucid._core import (abs as lucid_abs, amax, amin, cat as lucid_cat, linalg_norm, narrow, ne,
                         pow as lucid_pow, where as lucid_where)

cnp.import_array()

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

# registered ops install their methods (det, slogdet); inverse is named unlike linalg.inv
install_methods(Tensor, {"inverse": linalg_inv})
# this module's node classes are lucid's own, trusted like the core's (Note [Native nodes])
register_node_types(__name__)
