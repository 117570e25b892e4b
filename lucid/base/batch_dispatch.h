/* vmap's entry into the ops (Note [Batch dispatch], base/batch_dispatch.pxi).
 *
 * While a batch level is active on a thread, every call of a registered op (its vectorcall
 * forwarder, ops/op_keywords.h) and every Tensor operator meeting a batched tensor goes to one
 * Python function, lucid._batching's dispatcher, which applies the op's batching rule. Two flags
 * keep this free when unused: a process-wide count of active batch levels (a plain global: one
 * load), tested before the per-thread switch (a thread-local, which a shared library reaches
 * through a call). The dispatcher turns the switch off while it runs the op on the physical
 * tensors, so the op's own calls of other ops go straight through. */
#ifndef LUCID_BATCH_DISPATCH_H
#define LUCID_BATCH_DISPATCH_H

#include <Python.h>

static int lucid_batch_levels_any = 0;       /* batch levels active in any thread */
static __thread int lucid_batch_dispatch_on = 0;   /* this thread dispatches to the batching rules */
static PyObject* lucid_batch_dispatcher = NULL;    /* dispatcher(f, args, kwargs) */
static PyTypeObject* lucid_batched_type = NULL;    /* lucid._batching's BatchedTensor */

static inline int lucid_batch_dispatching(void) {
    return lucid_batch_levels_any != 0 && lucid_batch_dispatch_on != 0;
}

static inline int lucid_is_batched(PyObject* o) {
    return lucid_batched_type != NULL && Py_TYPE(o) == lucid_batched_type;
}

/* The dispatcher's answer for a vectorcall of f: a new reference, NULL with an exception, or
 * Py_NotImplemented (a new reference) when no argument is batched (call the op as usual). */
static PyObject* lucid_batch_dispatch_call(PyObject* f, PyObject* const* args, size_t nargsf,
                                           PyObject* kwnames) {
    Py_ssize_t i, nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    PyObject *positional, *keywords = NULL, *result;
    if (lucid_batch_dispatcher == NULL)
        Py_RETURN_NOTIMPLEMENTED;
    positional = PyTuple_New(nargs);
    if (positional == NULL)
        return NULL;
    for (i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(positional, i, args[i]);
    }
    if (nkw > 0) {
        keywords = PyDict_New();
        if (keywords == NULL) {
            Py_DECREF(positional);
            return NULL;
        }
        for (i = 0; i < nkw; i++) {
            if (PyDict_SetItem(keywords, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) {
                Py_DECREF(positional);
                Py_DECREF(keywords);
                return NULL;
            }
        }
    }
    result = PyObject_CallFunctionObjArgs(lucid_batch_dispatcher, f, positional,
                                          keywords == NULL ? Py_None : keywords, NULL);
    Py_DECREF(positional);
    Py_XDECREF(keywords);
    return result;
}

#endif
