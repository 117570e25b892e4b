# vmap's batch levels and the switch that sends ops to their batching rules.
#
# Note [Batch dispatch]
#   lucid.func.vmap (lucid/_batching/) runs a function on BatchedTensors: Python objects that
#   hold a plain tensor (the physical value, whose leading dims are the batch dims, one per vmap
#   level, outermost first) and show the logical tensor without them. Ops meet them in three
#   places, and each sends the call to lucid._batching's dispatcher (base/batch_dispatch.h):
#   - a registered op's vectorcall forwarder (ops/op_keywords.h): lucid.exp(b), b-method calls;
#   - Tensor's operators with a batched operand (x + b, x[b], x == b): they return
#     NotImplemented, so Python asks BatchedTensor's reflected operator;
#   - Function.apply with a batched argument (lucid/_batching/functions.py).
#   The dispatcher applies the op's rule (its batching family, ops/registry.pxi) to the physical
#   values with the switch off, so the op, and the ops it calls, run as plain tensor code and
#   record the plain backward graph: reverse mode needs no batching rules, since the graph is
#   made of the physical ops. A call without a batched argument is answered NotImplemented and
#   goes on to the op. With no batch level active anywhere, an op pays one load and test of
#   lucid_batch_levels_any. A batch level is a level of the thread's transform stack
#   (Note [Transform levels]).

cdef extern from "base/batch_dispatch.h":
    int lucid_batch_levels_any
    int lucid_batch_dispatch_on
    PyObject* lucid_batch_dispatcher
    PyTypeObject* lucid_batched_type
    bint lucid_batch_dispatching() noexcept nogil
    bint lucid_is_batched(object o) noexcept


cdef inline bint batched_operand(object o) noexcept:
    """Is o a BatchedTensor met while this thread dispatches batched calls?"""
    return lucid_batch_levels_any != 0 and lucid_batch_dispatch_on != 0 and lucid_is_batched(o)


def _batch_push(Py_ssize_t size):
    """Enter a batch level of size on this thread's transform stack; returns its id (private:
    lucid._batching.levels)."""
    global lucid_batch_levels_any
    cdef long id = push_level(LEVEL_BATCH, size)
    lucid_batch_levels_any += 1
    return id


def _batch_pop(long id):
    """Exit batch level id (the innermost; private: lucid._batching.levels)."""
    global lucid_batch_levels_any
    exit_level(id, "vmap")
    lucid_batch_levels_any -= 1


def _batch_dispatch(bint on):
    """Turn this thread's batch dispatch on or off; returns the previous setting."""
    global lucid_batch_dispatch_on
    cdef bint previous = lucid_batch_dispatch_on != 0
    lucid_batch_dispatch_on = 1 if on else 0
    return previous


def _batch_install(dispatcher, type batched_type):
    """Install lucid._batching's dispatcher(f, args, kwargs) and its BatchedTensor type (once, at
    its import)."""
    global lucid_batch_dispatcher, lucid_batched_type
    if lucid_batch_dispatcher != NULL:
        raise RuntimeError("_batch_install: the batch dispatcher is installed once")
    Py_INCREF(dispatcher)
    Py_INCREF(batched_type)
    lucid_batch_dispatcher = <PyObject*>dispatcher
    lucid_batched_type = <PyTypeObject*>batched_type


def _batch_dispatch_call(f, *args, **kwargs):
    """f(*args, **kwargs) through the dispatcher, as a registered op's forwarder would send it:
    for the ops with no forwarder (their *args signatures) and Tensor's operators."""
    if lucid_batch_dispatching() and lucid_batch_dispatcher != NULL:
        return (<object>lucid_batch_dispatcher)(f, args, kwargs or None)
    return NotImplemented


cdef object batched_into_plain(str op):
    """The error of an in-place op writing a batched value into a tensor that is not batched."""
    return RuntimeError(
        f"vmap: {op} writes a batched value into a tensor that is not batched at that level "
        "(an in-place op on a tensor from outside vmap, or one with in_dims=None); make the "
        "tensor batched first (x = x.expand(...) or clone the batched value) or use the "
        "out-of-place op")


def _batch_dispatch_on():
    """Does this thread dispatch batched calls now (a batch level active, dispatch not off)?"""
    return lucid_batch_dispatching()
