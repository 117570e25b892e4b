"""lucid's compiled core: storage, tensors, nodes, the engine, and the built-in ops.

The pieces live in one extension so that `Tensor.__mul__` reaches its kernel and node by a direct
C call; each piece is its own include file, one job each, in a folder per layer (docs/design.md).
Cold op families are extension modules of their own (lucid/_linalg.pyx, lucid/_ops.pyx), built
in parallel with this one; they reach the core through _core.pxd (its _core_internal.pxi part).
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
from libc.stdint cimport int64_t, uint64_t, intptr_t
from libc.limits cimport INT_MAX

import types

import numpy as np

cnp.import_array()

# The layers, bottom up (docs/design.md has the file map): base, tensor and graph, kernels, ops by
# family, the methods installed from the ops, Function, engine. One module, so a cdef name resolves
# across files; a file reaching down the list (the operators in tensor/tensor.pxi call the ops)
# goes through a name that _core.pxd declares or that the ops layer defines.

# base: grad mode, GC policy, dtypes and promotion, vectorcall helpers, the transform levels
include "base/grad_mode.pxi"
include "base/gc.pxi"
include "base/complex_guard.pxi"
include "base/dtypes.pxi"
include "base/vectorcall.pxi"
include "base/transform_levels.pxi"
include "base/batch_dispatch.pxi"
include "base/abi.pxi"

# tensor and graph: storage, the tensor, saved tensors and their hooks, the node base
include "tensor/storage.pxi"
include "graph/saved.pxi"
include "graph/saved_hooks.pxi"
include "graph/node.pxi"
include "graph/tensor_graph.pxi"
include "diagnostics/anomaly.pxi"
include "diagnostics/creation_site.pxi"
include "diagnostics/profile.pxi"
include "tensor/tensor.pxi"
include "tensor/methods.pxi"
include "tensor/arguments.pxi"
include "tensor/device.pxi"
include "tensor/copying.pxi"
include "forward/forward_ad.pxi"

# kernels: NumPy calls, typed C loops (one element, a block of dims), the small-array pool
include "kernels/numpy_calls.pxi"
include "kernels/unary_codes.pxi"
include "kernels/typed_loops.pxi"
include "kernels/array_pool.pxi"
include "kernels/fn_codes.pxi"
include "kernels/binary_loops.pxi"
include "kernels/block_loops.pxi"

# ops, by family
include "ops/registry.pxi"
include "ops/reduction/reduce_grad.pxi"
include "ops/elementwise/arith.pxi"
include "ops/elementwise/unary.pxi"
include "ops/elementwise/fused_grads.pxi"
include "ops/elementwise/unary_table.pxi"
include "forward/fused_tangents.pxi"
include "ops/elementwise/select.pxi"
include "ops/reduction/reduce.pxi"
include "ops/shape/shape.pxi"
include "ops/shape/index.pxi"
include "ops/linalg/matmul.pxi"
include "ops/shape/join.pxi"
include "ops/elementwise/inplace.pxi"
include "ops/elementwise/inplace_forms.pxi"
include "ops/elementwise/binary_functions.pxi"
include "ops/elementwise/complex_parts.pxi"
# lucid/_ops.pyx: math functions, activations, special functions, comparisons, gather/scatter,
# rearranging and views (narrow, select, as_strided, ...), statistics, order statistics (sort,
# topk, median, quantile), scans, softmax. lucid/_linalg.pyx: mm, bmm, dot, outer, cdist, the
# norms, einsum, solve, det, decompositions.

# the tensor's conversions and NumPy interop (ufuncs meeting a tensor run lucid's ops)
include "tensor/interop.pxi"
include "tensor/convert.pxi"
include "tensor/attributes.pxi"

# custom Functions, then the engine that runs every node
include "graph/saved_attributes.pxi"  # node._saved_<name>: reads the op nodes' fields
include "function/function.pxi"
include "function/apply.pxi"
include "engine/threads.pxi"
include "engine/discovery.pxi"
include "engine/gradients.pxi"
include "engine/engine.pxi"
include "engine/native_nodes.pxi"
include "engine/entry_points.pxi"

# every node class defined above is the core's own (Note [Native nodes])
register_node_types(__name__)
