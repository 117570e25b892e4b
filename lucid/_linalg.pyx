"""lucid's linear algebra beyond matmul: solve, inv, det, slogdet, cholesky, eigh, qr, einsum.

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
from lucid._core import define_op, BATCHED_MATRIX, CUSTOM, FLOAT_ONLY

cnp.import_array()

include "ops/linalg/common.pxi"
include "ops/linalg/solve.pxi"
include "ops/linalg/det.pxi"
include "ops/linalg/decomp.pxi"
include "ops/linalg/einsum.pxi"

# registered ops install their methods (det, slogdet); inverse is named unlike linalg.inv
install_methods(Tensor, {"inverse": linalg_inv})
# this module's node classes are lucid's own, trusted like the core's (Note [Native nodes])
register_node_types(__name__)
