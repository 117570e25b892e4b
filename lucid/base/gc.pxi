# Which lucid objects the cyclic garbage collector watches.
#
# Note [GC tracking]: a graph of plain tensors and nodes cannot hold a reference cycle (edges go
# from newer nodes to older ones, saved outputs are kept without their tensor), so tensors,
# nodes, saved tensors and storages are taken out of the cyclic garbage collector when lucid
# makes them: a full collection then never walks a million-node graph. An object is put back
# under the collector as soon as it holds something that can close a cycle: a hook (the tensor
# and its node), a node's extra state (node hooks, metadata), a Function's ctx and its outputs.

cdef extern from *:   # reference counts, for the ownership rules of the engine and ctx
    """
    #define lucid_refcount(o) Py_REFCNT(o)
    """
    Py_ssize_t lucid_refcount(PyObject* o)


cdef extern from "Python.h":
    void PyObject_GC_Track(void* op)
    void PyObject_GC_UnTrack(void* op)
    int PyObject_GC_IsTracked(object op)


cdef inline void gc_untrack(object o) noexcept:
    """Note [GC tracking]: take o out of the cyclic collector."""
    if PyObject_GC_IsTracked(o):
        PyObject_GC_UnTrack(<void*><PyObject*>o)


cdef inline void gc_track(object o) noexcept:
    """Note [GC tracking]: o may now be part of a cycle: put it back under the collector."""
    if not PyObject_GC_IsTracked(o):
        PyObject_GC_Track(<void*><PyObject*>o)
