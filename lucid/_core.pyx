"""lucid's compiled core: storage, tensors, nodes, the engine, and the built-in ops.

The pieces live in one extension so that `Tensor.__mul__` reaches its kernel and node by a direct
C call; each piece is its own include file, one job each (see DESIGN.md).
"""
cimport cython
cimport numpy as cnp
from cpython.ref cimport PyObject, Py_INCREF, Py_XDECREF, Py_REFCNT
from cpython.object cimport PyTypeObject, Py_TYPE, destructor
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.mem cimport PyMem_Malloc, PyMem_Realloc, PyMem_Free
from cpython.number cimport PyIndex_Check
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.weakref cimport PyWeakref_GetObject, PyWeakref_NewRef
from libc.stdint cimport int64_t, uint64_t
from libc.limits cimport INT_MAX

import numpy as np

cnp.import_array()

include "_grad_mode.pxi"
include "_levels.pxi"
include "_gc.pxi"
include "_dtypes.pxi"
include "_storage.pxi"
include "_saved.pxi"
include "_saved_hooks.pxi"
include "_node.pxi"
include "_anomaly.pxi"
include "_creation_site.pxi"
include "_profile.pxi"
include "_tensor.pxi"
include "_forward_ad.pxi"
include "_kernels.pxi"
include "_fast.pxi"
include "_array_pool.pxi"
include "_fast_block.pxi"
include "ops/_reduce_grad.pxi"
include "ops/arith.pxi"
include "ops/unary.pxi"
include "_fused_tangents.pxi"
include "ops/select.pxi"
include "ops/reduce.pxi"
include "ops/shape.pxi"
include "ops/index.pxi"
include "ops/linalg.pxi"
include "ops/join.pxi"
include "ops/inplace.pxi"
include "ops/numpy_interop.pxi"
include "ops/cumulative.pxi"
include "ops/statistics.pxi"
include "ops/softmax.pxi"
include "ops/gather.pxi"
include "ops/rearrange.pxi"
include "ops/einsum.pxi"
include "ops/linalg_common.pxi"
include "ops/linalg_solve.pxi"
include "ops/linalg_det.pxi"
include "ops/linalg_decomp.pxi"
include "ops/linalg_products.pxi"
include "ops/elementwise.pxi"
include "ops/activation.pxi"
include "ops/compare.pxi"
include "ops/convert.pxi"
include "_vectorcall.pxi"
include "_function.pxi"
include "_engine.pxi"

# every node class defined above is the core's own (Note [Native nodes])
register_core_node_types()
