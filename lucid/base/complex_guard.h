/* The complex guard of the registered ops (Note [Complex guard], base/complex_guard.pxi).
 *
 * lucid_complex_any turns 1 the first time a complex tensor or number enters lucid (a sticky
 * process-wide flag: one load, tested with vmap's in the ops' forwarders, ops/op_keywords.h).
 * Until then no op can meet a complex operand and nothing is checked; after it, a call of an op
 * that does not take complex scans its arguments with lucid_complex_in. */
#ifndef LUCID_COMPLEX_GUARD_H
#define LUCID_COMPLEX_GUARD_H

#include <Python.h>

static int lucid_complex_any = 0;            /* has a complex value entered lucid? */
static int (*lucid_complex_value)(PyObject* o) = NULL;   /* is o a complex tensor or number? */

static int lucid_complex_in(PyObject* o) {
    /* o complex, or a list or tuple holding a complex value (cat's and einsum's operands) */
    Py_ssize_t i, n;
    PyObject** items;
    if (lucid_complex_value == NULL)
        return 0;
    if (lucid_complex_value(o))
        return 1;
    if (!PyList_Check(o) && !PyTuple_Check(o))
        return 0;
    n = PySequence_Fast_GET_SIZE(o);
    items = PySequence_Fast_ITEMS(o);
    for (i = 0; i < n; i++)
        if (lucid_complex_value(items[i]))
            return 1;
    return 0;
}

#endif
