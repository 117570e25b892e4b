# Calling Python functions from the core without building an argument tuple (PEP 590 vectorcall).
# Function.apply calls forward(ctx, *args) and the node calls backward(ctx, *grads) once per call:
# a tuple made and freed per call is a tenth of their cost.

cdef extern from "Python.h":
    object PyObject_Vectorcall(object fn, PyObject** args, size_t nargsf, PyObject* kwnames)
    PyObject* PyTuple_GET_ITEM(object t, Py_ssize_t i)
    Py_ssize_t PyTuple_GET_SIZE(object t)
    object PyMethod_New(object fn, object self)     # fn bound to self, as classmethod binds


cdef enum:
    STACK_ARGS = 8                     # calls with more arguments build a tuple


cdef object call_with_first(object fn, object first, tuple rest):
    """fn(first, *rest), the arguments passed on the C stack (borrowed: rest and first hold them)."""
    cdef PyObject* stack[STACK_ARGS]
    cdef Py_ssize_t n = PyTuple_GET_SIZE(rest), i
    if n >= STACK_ARGS:
        return fn(first, *rest)
    stack[0] = <PyObject*>first
    for i in range(n):
        stack[i + 1] = PyTuple_GET_ITEM(rest, i)
    return PyObject_Vectorcall(fn, stack, <size_t>(n + 1), NULL)
