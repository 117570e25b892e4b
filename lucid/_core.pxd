# lucid/_core.pxd -- the C-level API of lucid's compiled core.
#
# This file is the index of the core and the front door for native custom ops: a separate Cython
# package can `from lucid._core cimport Tensor, Node, ...` (put `lucid.get_include()` on its
# include path). The C layout of these classes (their fields and their cdef methods), and of the
# structs and enums below, is an ABI: any change to it bumps ABI_VERSION below, and a native op
# built against another version fails at import (see check_abi). Rarely used state lives in
# lazily made side objects (NodeExtra, TensorExtra), so new features add fields there, not to
# Node or Tensor. No class here may get smaller from one layout to the next: Cython's import of
# a class smaller than the one a module was compiled against fails with a ValueError ("size
# changed") before the module's check_abi call can run, so a removed field leaves an unused
# pointer-sized pad behind (tests/api/test_abi_guard.py builds a module against the previous
# layout's pxd to check it).

from cpython.ref cimport PyObject
from libc.stdint cimport int64_t, intptr_t, uint64_t

cimport numpy as cnp


# ------------------------------------------------------------------------------------------------
# ABI guard
# ------------------------------------------------------------------------------------------------
cdef enum:
    ABI_VERSION = 5                             # bumped by every change to a field or cdef method

# A native op's module calls check_abi(ABI_VERSION) at import: it raises ImportError naming both
# versions when the lucid it runs against was built with another layout.
cdef int check_abi(int built_against) except -1


# ------------------------------------------------------------------------------------------------
# Grad mode (a C thread-local; one copy, in _core)
# ------------------------------------------------------------------------------------------------
cdef bint grad_enabled() noexcept nogil        # is recording on in this thread?
cdef bint set_grad_enabled_c(bint on) noexcept nogil   # set it; returns the previous value


# ------------------------------------------------------------------------------------------------
# dtype codes: the dtypes lucid's C code tells apart (complex ones reserved: no tensor has them yet)
# ------------------------------------------------------------------------------------------------
cdef enum DtypeCode:
    DTYPE_BOOL = 0
    DTYPE_INT32 = 1
    DTYPE_INT64 = 2
    DTYPE_FLOAT32 = 3
    DTYPE_FLOAT64 = 4
    DTYPE_COMPLEX64 = 5
    DTYPE_COMPLEX128 = 6

cdef int dtype_code(cnp.dtype dt) noexcept     # dt's DtypeCode; -1 for any other (or non-native
                                                # byte order) dtype, and for None


# ------------------------------------------------------------------------------------------------
# Transform levels: one stack per thread, for vmap's batch levels and forward mode's dual levels
# (Note [Transform levels], lucid/base/transform_levels.pxi). Empty, it costs nothing: nothing reads it then.
# ------------------------------------------------------------------------------------------------
cdef enum LevelKind:
    LEVEL_NONE = 0                              # innermost_level() of an empty stack
    LEVEL_BATCH = 1                             # a vmap level: its tensors carry a batch dim
    LEVEL_DUAL = 2                              # a forward-mode dual level: tensors carry tangents

cdef extern from *:
    # the element of the C thread-local stack (a C typedef: Cython cannot declare thread-locals)
    """
    typedef struct { int kind; long id; Py_ssize_t size; } lucid_transform_level;
    #define LUCID_MAX_TRANSFORM_LEVELS 64
    """
    ctypedef struct TransformLevel "lucid_transform_level":
        int kind                                # a LevelKind
        long id                                 # unique in the process, > 0; a dual level's id is
                                                # the one tangents are stamped with (fw_level)
        Py_ssize_t size                         # a batch level's batch size (0 for a dual level)
    enum: MAX_TRANSFORM_LEVELS "LUCID_MAX_TRANSFORM_LEVELS"   # the stack's depth limit

cdef long push_level(int kind, Py_ssize_t size) except -1   # enter a level; returns its id
                                                # (RuntimeError when MAX_TRANSFORM_LEVELS are in)
cdef int pop_level(long id) except -1           # exit level id: RuntimeError unless innermost
                                                # (and for forward mode's active dual level)
cdef int transform_depth() noexcept nogil       # levels on this thread's stack
cdef TransformLevel innermost_level() noexcept nogil   # the innermost level (kind LEVEL_NONE:
                                                # the stack is empty)


# ------------------------------------------------------------------------------------------------
# Storage: the version counter shared by every tensor viewing the same memory
# ------------------------------------------------------------------------------------------------
cdef class Storage:
    cdef int64_t version                        # bumped by every in-place change of the memory
    cdef int64_t graph_version                  # bumped by in-place changes recorded in the graph
    cdef str last_op                            # the lucid op that last changed it in place
    cdef void* _pad_base                        # unused: layout 4's `base` (see the header)


# ------------------------------------------------------------------------------------------------
# Tensor
# ------------------------------------------------------------------------------------------------
cdef class TensorExtra:
    # rarely used per-tensor state, made on first need (tensor_extra), so plain tensors stay small
    cdef object fw_grad                         # forward-mode tangent (forward_ad), or None; at
                                                # the innermost dual level that gave it one
    cdef int fw_level                           # the dual level fw_grad belongs to (0: none)
    cdef bint inference                         # made under inference_mode: never requires grad
    cdef dict hooks                             # leaf hooks {handle id: fn}, or None
    cdef tuple batch_dims                       # a batched tensor's ((level id, batch dim), ...),
                                                # outermost level first, innermost last; None:
                                                # not batched (reserved: vmap will fill it)
    cdef list fw_outer                          # tangents at outer dual levels, [(level id,
                                                # Tensor), ...] outermost first, or None (the
                                                # innermost's is fw_grad; Note [Nested forward
                                                # mode])


cdef class Tensor:
    cdef object data                            # the values (always an ndarray, 0-d included)
    cdef Storage _storage                       # version counter; made on first need (None before)
    cdef Node _grad_fn                          # producer node, None for leaves
    cdef int _output_nr                         # which output of _grad_fn this tensor is
    cdef bint _requires_grad                    # leaves only; non-leaves require grad by grad_fn
    cdef bint _retains_grad                     # non-leaf keeps .grad (retain_grad())
    cdef bint _wrapped_number                   # made from a Python scalar (lowest promotion rank)
    cdef object _grad                           # Tensor or None
    cdef object _grad_accumulator               # weakref to this leaf's AccumulateGrad, or None
    cdef Tensor _view_base                      # the tensor this one is a view of, or None
    cdef int64_t _view_version                  # storage's graph_version when the view was taken;
                                                # -1 - that for a view taken in no_grad mode
                                                # (Note [No-grad views], ops/elementwise/inplace.pxi)
    cdef TensorExtra _extra                     # tangent, inference flag, leaf hooks; or None
    cdef object __weakref__

    cdef Storage storage(self)                  # the storage, made if missing
    cdef int64_t version(self) noexcept         # current version (0 if never written)
    cdef void bump_version(self)                # an in-place write happened
    cdef void bump_version_by(self, str op)     # ... made by the lucid op named op
    cdef inline bint requires_grad_c(self) noexcept:
        return self._requires_grad or self._grad_fn is not None


cdef Tensor wrap(object array)                  # a new tensor over an ndarray (no copy, no grad)
cdef Tensor wrap_like_view(object array, Tensor base)   # a view: shares base's storage/version


# ------------------------------------------------------------------------------------------------
# Edges and nodes
# ------------------------------------------------------------------------------------------------
cdef struct Edge:
    PyObject* node                              # owned reference to the producer Node, or NULL
    int input_nr                                # which output of that node this input was


cdef class SavedTensor:
    cdef Tensor tensor                          # a saved input (strong: inputs form no cycle)
    cdef cnp.ndarray data                       # a saved output's values (its Tensor is not kept)
    cdef Storage out_storage                    # a saved output's storage, for the version check
    cdef int64_t saved_version                  # version when saved
    cdef bint is_output                         # saved tensor was an output of the owning node
    cdef bint out_requires_grad                 # a saved output required grad
    cdef int output_nr                          # a saved output's slot in the owning node
    cdef object guarded_array                   # array made read-only by the saved-tensor guard
    cdef object packed                          # what a saved-tensor pack hook returned, or None
    cdef object unpack_hook                     # the unpack hook that turns packed back, or None
    cdef tuple packed_meta                      # (shape, dtype) the unpacked tensor must have
    cdef Tensor fw_tangent                      # a saved output's tangent (forward mode), or None
    cdef long fw_level                          # the dual level of fw_tangent

    cdef Tensor unpack(self, Node owner)        # check the version, give the tensor back
    cdef void clear(self)                       # drop what it holds


cdef SavedTensor save_tensor(Tensor t, Node owner, bint is_output)


cdef class NodeExtra:
    # rarely used per-node state, made on first need (node.extra), so plain nodes stay small
    cdef dict tensor_pre_hooks                  # {output_nr: {id: fn}} hooks on output tensors
    cdef dict pre_hooks                         # {id: fn} node pre-hooks: fn(grad_outputs)
    cdef dict post_hooks                        # {id: fn} node hooks: fn(grad_inputs, grad_outputs)
    cdef list retain_grad_slots                 # [(output_nr, weakref to tensor)]
    cdef object anomaly_trace                   # forward traceback under detect_anomaly, or None
    cdef dict metadata                          # node.metadata, a free dict for users
    cdef list input_meta                        # a native node's inputs: (shape, dtype) or None
                                                # each, what its gradients must match (Note
                                                # [Native nodes], engine/engine.pxi)
    cdef void* _pad_jvp_fn                      # unused: layout 4's `jvp_fn` (see the header)


cdef class Node:
    # graph
    # (the fields are ordered so that the ints pack: a node's size is W10's bytes per node)
    cdef Edge* next_edges                       # one edge per forward input
    cdef int num_inputs                         # number of edges
    cdef int num_outputs                        # number of forward outputs (gradient slots)
    cdef Edge _inline_edges[2]                  # storage for nodes with <= 2 inputs
    # engine bookkeeping (per traversal; saved and restored by re-entrant traversals)
    cdef int dependencies                       # edges from not-yet-run nodes of this traversal
    cdef int exec_state                         # bit flags (engine/engine.pxi): EXEC_RUN, apply it
                                                # (or accumulate into the leaf); EXEC_CAPTURE,
                                                # hand its incoming gradient to grad() or
                                                # backward(inputs=); EXEC_QUEUED, a root already
                                                # on the ready stack. Neither RUN nor CAPTURE: the
                                                # node feeds no target and is not run (pruned)
    cdef uint64_t epoch                         # traversal that last touched this node
    cdef object buffer                          # pending gradient: Tensor (1 output) or list
    cdef uint64_t buffer_owned                  # bit i: slot i's buffer was allocated by the engine
    # identity and diagnostics
    cdef int64_t sequence_nr                    # creation order (newer nodes are larger)
    cdef NodeExtra extra                        # hooks, retain_grad, anomaly trace; None if none
    cdef object creation_code                   # code object of the user frame that made it
    cdef int creation_lasti                     # instruction offset in that frame
    cdef bint released                          # saved state dropped after a backward
    cdef object __weakref__

    cdef tuple apply(self, tuple grads)         # gradients of outputs -> gradients of inputs
    cdef void release_saved(self)               # drop saved state (after running, or on free)
    cpdef str name(self)                        # "MulBackward", "<Function>Backward", ...

    cdef void set_num_inputs(self, Py_ssize_t n) except *   # allocate the edge array (and give
                                                # a node made without record() its identity)
    cdef void set_edge(self, Py_ssize_t i, Tensor t) except *   # edge i from t (if it needs grad)
    cdef NodeExtra get_extra(self)              # node.extra, made (and the node GC-tracked) if missing
    cdef NodeExtra checked_extra(self, object fn)   # get_extra() for a hook fn (checked callable)


cdef class AccumulateGrad(Node):
    cdef Tensor variable                        # the leaf whose .grad this node accumulates


cdef Node gradient_node(Tensor t)               # t's grad_fn or its (lazily made) AccumulateGrad
cdef int64_t next_sequence_nr() noexcept
cdef void attach_output(Tensor out, Node node, int output_nr)   # out.grad_fn = node
cdef Node record(Node node, Tensor a, Tensor b) # fill sequence_nr and edges from inputs a (and b)


# ------------------------------------------------------------------------------------------------
# Forward mode, for native ops that carry tangents (lucid/forward/forward_ad.pxi)
# ------------------------------------------------------------------------------------------------
cdef bint fw_enabled() noexcept nogil            # is a dual level active (not suspended) here?
cdef Tensor fw_tangent(Tensor t)                 # t's tangent at the active level, or None
cdef void fw_set_tangent(Tensor t, Tensor tangent) except *   # give t a tangent (None: nothing)
cdef long fw_suspend() noexcept nogil            # turn forward mode off while a rule runs ...
cdef void fw_resume(long level) noexcept nogil   # ... and back on


# ------------------------------------------------------------------------------------------------
# Built-in ops a native backward may call so that it, too, records under create_graph
# ------------------------------------------------------------------------------------------------
cpdef Tensor add(object x, object y)
cpdef Tensor sub(object x, object y)
cpdef Tensor mul(object x, object y)
cpdef Tensor div(object x, object y)
cpdef Tensor neg(object x)
cpdef Tensor exp(object x)
cpdef Tensor log(object x)
cpdef Tensor tanh(object x)
cpdef Tensor sigmoid(object x)
cpdef Tensor matmul(object x, object y)
cpdef Tensor cast(Tensor a, cnp.dtype dtype)             # a.to(dtype), differentiable
cpdef Tensor reshape(Tensor a, object shape)
cpdef Tensor expand(Tensor a, object shape)
cpdef Tensor sum_to(Tensor a, tuple shape)                # undo broadcasting: sum down to shape


# ------------------------------------------------------------------------------------------------
# Not the native-op ABI: the API of lucid's own extension modules (lucid._linalg, ...), which may
# change without an ABI_VERSION bump (the file's header says why that is safe)
# ------------------------------------------------------------------------------------------------
include "_core_internal.pxi"
