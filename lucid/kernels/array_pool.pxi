# The array pool: small arrays that died unshared, kept for the next typed loop that needs one.
#
# Note [Array pool]
#   A small op on fast arrays (lucid/kernels/typed_loops.pxi) costs a few tens of nanoseconds of arithmetic
#   and several hundred of NumPy making its output array (PyArray_Empty: the descriptor, the
#   dims, the memory handler read from a context variable, the flags) and later freeing it. A
#   chain of ops makes and drops one such array per op, forward and backward. So a tensor (or a
#   tensor's extra, for its forward-mode tangent) that dies holding an array nothing else can
#   reach puts that array here, and empty_like_fast takes its new arrays from here when one of
#   the right dtype and shape is present.
#   An array is kept only when reusing its memory can be seen by no one:
#     - reference count 1 (the dying owner's): no other tensor, view, buffer or caller has it;
#     - an exact ndarray that owns its data (no base: a view's memory belongs to another array)
#       and has no weak references (a weakref would see it come back with other values);
#     - writeable, C-contiguous float32/float64 (what the typed loops write) and small
#       (at most POOL_BYTES bytes: above that the arithmetic dwarfs making the array).
#   At most POOL_SIZE arrays are kept (under 128 KiB in all); when full, the oldest is dropped.
#   The pool is used only with the GIL held (deallocation and op calls hold it).
#   A reused array holds old values, like np.empty's; the LUCID_DEBUG build fills it with NaN
#   first, so any reader of memory it did not write fails the tests. The sanitizer build
#   (LUCID_SANITIZE=1) keeps nothing: memory that is recycled is memory AddressSanitizer cannot
#   see freed, so a use after free would go unreported.

from cpython.ref cimport Py_REFCNT, Py_INCREF, Py_DECREF
from numpy cimport PyArrayObject
from libc.string cimport memcpy, memmove, memset

cdef extern from "numpy/ndarraytypes.h":
    ctypedef struct PyArrayObject_fields:
        PyObject* base
        PyObject* weakreflist

cdef extern from *:
    """
    #ifdef LUCID_DEBUG
    #define LUCID_POISON_POOLED 1
    #else
    #define LUCID_POISON_POOLED 0
    #endif
    #ifdef LUCID_NO_POOL
    #define LUCID_POOL_ENABLED 0
    #else
    #define LUCID_POOL_ENABLED 1
    #endif
    """
    bint LUCID_POISON_POOLED
    bint LUCID_POOL_ENABLED

cdef enum:
    POOL_SIZE = 8
    POOL_BYTES = 16384

cdef PyObject* array_pool[POOL_SIZE]     # owned references, oldest first; the first pool_count set
cdef int pool_count = 0


cdef inline bint poolable(PyObject* p) noexcept:
    """Can no one but its dying owner see this array (Note [Array pool])?"""
    if p == NULL or Py_REFCNT(<object>p) != 1 or not cnp.PyArray_CheckExact(<object>p):
        return False
    cdef cnp.ndarray a = <cnp.ndarray>p
    cdef PyArrayObject_fields* f = <PyArrayObject_fields*>p
    return f.base == NULL and f.weakreflist == NULL and \
        cnp.PyArray_CHKFLAGS(a, cnp.NPY_ARRAY_OWNDATA | cnp.NPY_ARRAY_WRITEABLE) and \
        cnp.PyArray_NBYTES(a) <= POOL_BYTES and is_fast(a)


cdef void recycle_array(PyObject* p) noexcept:
    """Keep p (borrowed: its dying owner's array) for reuse when no one else can see it."""
    global pool_count
    if not LUCID_POOL_ENABLED or not poolable(p):
        return
    if pool_count == POOL_SIZE:                  # full: the oldest goes
        Py_DECREF(<object>array_pool[0])
        pool_count -= 1
        memmove(&array_pool[0], &array_pool[1], pool_count * sizeof(PyObject*))
    Py_INCREF(<object>p)
    array_pool[pool_count] = p
    pool_count += 1


cdef object pooled_array(int typenum, int nd, cnp.npy_intp* dims):
    """A pooled array of this dtype and shape (the pool's reference passes to the caller), or
    None when there is none."""
    global pool_count
    cdef cnp.ndarray a
    cdef int i, d
    cdef object found
    for i in range(pool_count - 1, -1, -1):
        a = <cnp.ndarray>array_pool[i]
        if cnp.PyArray_TYPE(a) != typenum or cnp.PyArray_NDIM(a) != nd:
            continue
        for d in range(nd):
            if cnp.PyArray_DIMS(a)[d] != dims[d]:
                break
        else:
            found = a
            Py_DECREF(a)                         # found holds the pool's reference now
            pool_count -= 1
            memmove(&array_pool[i], &array_pool[i + 1], (pool_count - i) * sizeof(PyObject*))
            if LUCID_POISON_POOLED:
                memset(cnp.PyArray_DATA(a), 0xFF, cnp.PyArray_NBYTES(a))
            return found
    return None


cdef void empty_array_pool() noexcept:
    """Drop every pooled array."""
    global pool_count
    while pool_count > 0:
        pool_count -= 1
        Py_DECREF(<object>array_pool[pool_count])


def _array_pool_size(bint empty=False):
    """How many arrays the pool holds now (for the tests); empty=True first drops them all."""
    if empty:
        empty_array_pool()
    return pool_count


def _array_pool_enabled():
    """False in the sanitizer build, which keeps no array for reuse (Note [Array pool])."""
    return LUCID_POOL_ENABLED
