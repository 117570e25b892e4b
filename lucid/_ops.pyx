"""lucid's cold op families: the math functions (log1p, tan, erf, round, ...) and activations
(silu, gelu, softplus, ...), comparisons and logic, gather/scatter and masks, rearranging views
and copies (narrow, split, diagonal, flip, roll, repeat, tril, ...), statistical reductions (prod,
var, std, norm, logsumexp, argmax, ...), cumulative sums and products, softmax.

Split off the core so that it compiles in less time: this module builds in parallel with
lucid._core, and an edit here recompiles only this module. It reaches the core through
lucid/_core.pxd (the internal part, _core_internal.pxi: one indirect call per core function it
uses); what the core's hot paths call (the arithmetic, unary functions, sum and mean, indexing,
the views Tensor's own methods make) stays in the core.
"""
cimport numpy as cnp
from lucid._core cimport *

import warnings

import numpy as np
# Python-level names of the core the ops use: dtypes, functions defined with def, and getitem,
# which a linear jvp names as the op to apply to the tangent (calls of it stay C calls)
from lucid._core import _batch_dispatch_call
from lucid._core import (_SUPPORTED, bool_, cat, dtype_name, float64, getitem, int32, int64,
                         unsqueeze, ReductionResult)
# the words of its ops' registrations (ops/registry.pxi)
from lucid._core import (define_op, ANY, BATCHED_MATRIX, CUSTOM, DIMS, FLOAT, FLOAT_ONLY,
                         NUMERIC, POINTWISE, REDUCTION, SHAPE, TENSORS, IN_PLACE, IN_PLACE_VIEW)

cnp.import_array()

include "kernels/fn_codes.pxi"           # the one-pass loops' codes (float_binary's fn)
include "kernels/unary_codes.pxi"        # the table ops' codes
include "ops/elementwise/math_functions.pxi"
include "ops/elementwise/activation.pxi"
include "ops/elementwise/float_functions.pxi"
include "ops/elementwise/special.pxi"
include "ops/elementwise/compare.pxi"
include "ops/shape/gather.pxi"
include "ops/shape/rearrange.pxi"
include "ops/shape/views.pxi"
include "ops/reduction/cumulative.pxi"
include "ops/reduction/statistics.pxi"
include "ops/reduction/softmax.pxi"
include "ops/reduction/order.pxi"        # sort, topk, kthvalue, median, quantile
include "ops/reduction/scans.pxi"        # cummax, cummin, logcumsumexp
include "ops/reduction/moments.pxi"      # var_mean, std_mean, aminmax, nansum, nanmean

# this module's node classes are lucid's own, trusted like the core's (Note [Native nodes])
register_node_types(__name__)
