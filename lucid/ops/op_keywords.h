/* PyTorch's keyword spellings of a registered op: `axis=` for `dim=`, `keepdims=` for `keepdim=`,
 * and `out=` refused with a TypeError naming the op (Note [Op keywords], ops/registry.pxi).
 *
 * The registration swaps the op's vectorcall entry (PEP 590: the function pointer every call of
 * the object goes through, methods of Tensor included) for one of the forwarders below, which
 * passes a call without keywords, or with none of the three, straight on to the original entry:
 * a plain call pays one test and one jump (and one load: while vmap is active the forwarder first
 * offers the call to the batching rules, Note [Batch dispatch]; once a complex value exists, it
 * refuses complex arguments of an op that does not take them, Note [Complex guard]).
 * Only a call naming `axis`,
 * `keepdims` or `out` takes the slow path, which reads the op's record (its public name, whether
 * its signature has `dim`, `keepdim`, `out`) from a dict and renames or refuses. A function taking *args has no entry
 * to forward (Cython gives it none): its calls are left as they are. */
#ifndef LUCID_OP_KEYWORDS_H
#define LUCID_OP_KEYWORDS_H

#include <Python.h>
#include "../base/batch_dispatch.h"
#include "../base/complex_guard.h"

#define LUCID_KW_SLOTS 8                 /* distinct original entries (Cython has a few kinds) */

static vectorcallfunc lucid_kw_original[LUCID_KW_SLOTS];
static PyObject* lucid_kw_records = NULL;    /* function -> (name, has_dim, has_keepdim, has_out) */
static PyObject* lucid_kw_axis = NULL;
static PyObject* lucid_kw_keepdims = NULL;
static PyObject* lucid_kw_out = NULL;
static PyObject* lucid_kw_dim = NULL;
static PyObject* lucid_kw_keepdim = NULL;

static int lucid_kw_is(PyObject* name, PyObject* word) {
    /* keyword names are interned at call sites: identity first, the text only when not interned */
    if (name == word)
        return 1;
    if (!PyUnicode_Check(name) || PyUnicode_CHECK_INTERNED(name))
        return 0;
    return PyUnicode_Compare(name, word) == 0;
}

static int lucid_kw_suspect(PyObject* kwnames) {
    /* does the call name axis, keepdims or out? */
    Py_ssize_t i, n = PyTuple_GET_SIZE(kwnames);
    for (i = 0; i < n; i++) {
        PyObject* k = PyTuple_GET_ITEM(kwnames, i);
        if (lucid_kw_is(k, lucid_kw_axis) || lucid_kw_is(k, lucid_kw_keepdims) ||
                lucid_kw_is(k, lucid_kw_out))
            return 1;
    }
    return 0;
}

static int lucid_kw_has(PyObject* kwnames, PyObject* word) {
    Py_ssize_t i, n = PyTuple_GET_SIZE(kwnames);
    for (i = 0; i < n; i++)
        if (lucid_kw_is(PyTuple_GET_ITEM(kwnames, i), word))
            return 1;
    return 0;
}

static PyObject* lucid_kw_slow(PyObject* f, PyObject* const* args, size_t nargsf,
                               PyObject* kwnames, vectorcallfunc original) {
    /* rename axis -> dim and keepdims -> keepdim where the op has them, refuse out= */
    PyObject* record = PyDict_GetItemWithError(lucid_kw_records, f);   /* borrowed */
    PyObject *renamed, *result, *name;
    Py_ssize_t i, n = PyTuple_GET_SIZE(kwnames);
    if (record == NULL) {
        if (PyErr_Occurred())
            return NULL;
        return original(f, args, nargsf, kwnames);
    }
    name = PyTuple_GET_ITEM(record, 0);
    renamed = PyTuple_New(n);
    if (renamed == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        PyObject* k = PyTuple_GET_ITEM(kwnames, i);
        if (lucid_kw_is(k, lucid_kw_out) && !PyObject_IsTrue(PyTuple_GET_ITEM(record, 3))) {
            Py_DECREF(renamed);
            PyErr_Format(PyExc_TypeError,
                         "lucid.%U: out= is not supported; use the result (y = lucid.%U(...)), "
                         "or an in-place method where there is one (x.add_(y), x.exp_())",
                         name, name);
            return NULL;
        }
        if (lucid_kw_is(k, lucid_kw_axis) && PyObject_IsTrue(PyTuple_GET_ITEM(record, 1))) {
            if (lucid_kw_has(kwnames, lucid_kw_dim)) {
                Py_DECREF(renamed);
                PyErr_Format(PyExc_TypeError,
                             "lucid.%U: got both dim= and axis=, two spellings of one argument",
                             name);
                return NULL;
            }
            k = lucid_kw_dim;
        } else if (lucid_kw_is(k, lucid_kw_keepdims) &&
                   PyObject_IsTrue(PyTuple_GET_ITEM(record, 2))) {
            if (lucid_kw_has(kwnames, lucid_kw_keepdim)) {
                Py_DECREF(renamed);
                PyErr_Format(PyExc_TypeError,
                             "lucid.%U: got both keepdim= and keepdims=, two spellings of one "
                             "argument", name);
                return NULL;
            }
            k = lucid_kw_keepdim;
        }
        Py_INCREF(k);
        PyTuple_SET_ITEM(renamed, i, k);
    }
    result = original(f, args, nargsf, renamed);
    Py_DECREF(renamed);
    return result;
}

static int lucid_kw_refuse_complex(PyObject* f, PyObject* const* args, size_t nargsf,
                                   PyObject* kwnames) {
    /* -1 with the op's refusal set when an argument is complex and the op's record (item 4:
       None, or (exception type, message)) says it does not take complex; else 0 */
    PyObject* record = PyDict_GetItemWithError(lucid_kw_records, f);   /* borrowed */
    PyObject* refusal;
    Py_ssize_t i, n = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL)
        n += PyTuple_GET_SIZE(kwnames);
    if (record == NULL)
        return PyErr_Occurred() ? -1 : 0;
    refusal = PyTuple_GET_ITEM(record, 4);
    if (refusal == Py_None)
        return 0;
    for (i = 0; i < n; i++) {
        if (lucid_complex_in(args[i])) {
            PyErr_SetObject(PyTuple_GET_ITEM(refusal, 0), PyTuple_GET_ITEM(refusal, 1));
            return -1;
        }
    }
    return 0;
}

#define LUCID_KW_FORWARDER(i)                                                                   \
    static PyObject* lucid_kw_forward_##i(PyObject* f, PyObject* const* args, size_t nargsf,     \
                                          PyObject* kwnames) {                                  \
        if (lucid_batch_levels_any | lucid_complex_any) {  /* one test while neither is on */  \
            if (lucid_batch_dispatching()) {                                                    \
                PyObject* batched = lucid_batch_dispatch_call(f, args, nargsf, kwnames);        \
                if (batched != Py_NotImplemented)                                               \
                    return batched;                                                             \
                Py_DECREF(batched);                                                             \
            }                                                                                   \
            if (lucid_complex_any && lucid_kw_refuse_complex(f, args, nargsf, kwnames) < 0)     \
                return NULL;                                                                    \
        }                                                                                       \
        if (kwnames == NULL || !lucid_kw_suspect(kwnames))                                      \
            return lucid_kw_original[i](f, args, nargsf, kwnames);                              \
        return lucid_kw_slow(f, args, nargsf, kwnames, lucid_kw_original[i]);                   \
    }
LUCID_KW_FORWARDER(0) LUCID_KW_FORWARDER(1) LUCID_KW_FORWARDER(2) LUCID_KW_FORWARDER(3)
LUCID_KW_FORWARDER(4) LUCID_KW_FORWARDER(5) LUCID_KW_FORWARDER(6) LUCID_KW_FORWARDER(7)

static vectorcallfunc lucid_kw_forwarders[LUCID_KW_SLOTS] = {
    lucid_kw_forward_0, lucid_kw_forward_1, lucid_kw_forward_2, lucid_kw_forward_3,
    lucid_kw_forward_4, lucid_kw_forward_5, lucid_kw_forward_6, lucid_kw_forward_7,
};

/* A builtin function's type for the registered ops: PyCFunction's own, under another name. The
 * interpreter's specialized call paths for builtins (PRECALL_BUILTIN_FAST_WITH_KEYWORDS, ...)
 * test for PyCFunction_Type exactly and then call the C function directly, past the vectorcall
 * entry: a registered op is given this subtype (same layout, same slots), so every call of it
 * goes through its entry. It is still a builtin function (isinstance, inspect.signature). */
static PyTypeObject lucid_OpFunctionType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "builtin_function_or_method",
};

static PyObject* lucid_type_dict(PyTypeObject* type) {
    /* a new reference to type's dict (3.12 keeps static builtin types' dicts per interpreter:
       their tp_dict field is not to be read) */
#if PY_VERSION_HEX >= 0x030C0000
    return PyType_GetDict(type);
#else
    Py_XINCREF(type->tp_dict);
    return type->tp_dict;
#endif
}

static int lucid_copy_doc_descriptor(void) {
    /* the base's __doc__ descriptor into the op function type's dict */
    PyObject* base = lucid_type_dict(&PyCFunction_Type);
    PyObject* own = lucid_type_dict(&lucid_OpFunctionType);
    PyObject* doc = base == NULL ? NULL : PyDict_GetItemString(base, "__doc__");  /* borrowed */
    int status = -1;
    if (doc != NULL && own != NULL)
        status = PyDict_SetItemString(own, "__doc__", doc);
    else if (!PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "builtin functions have no __doc__ descriptor");
    Py_XDECREF(base);
    Py_XDECREF(own);
    return status;
}

static int lucid_kw_retype(PyObject* f) {
    if (!Py_IS_TYPE(f, &PyCFunction_Type))
        return 0;
    if (lucid_OpFunctionType.tp_base == NULL) {
        lucid_OpFunctionType.tp_base = &PyCFunction_Type;
        lucid_OpFunctionType.tp_basicsize = PyCFunction_Type.tp_basicsize;
        lucid_OpFunctionType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
                                        Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_IMMUTABLETYPE;
        lucid_OpFunctionType.tp_call = PyCFunction_Type.tp_call;
        lucid_OpFunctionType.tp_vectorcall_offset = PyCFunction_Type.tp_vectorcall_offset;
        lucid_OpFunctionType.tp_repr = PyCFunction_Type.tp_repr;
        lucid_OpFunctionType.tp_hash = PyCFunction_Type.tp_hash;
        lucid_OpFunctionType.tp_richcompare = PyCFunction_Type.tp_richcompare;
        lucid_OpFunctionType.tp_getattro = PyCFunction_Type.tp_getattro;
        lucid_OpFunctionType.tp_descr_get = PyCFunction_Type.tp_descr_get;
        lucid_OpFunctionType.tp_dealloc = PyCFunction_Type.tp_dealloc;
        lucid_OpFunctionType.tp_traverse = PyCFunction_Type.tp_traverse;
        lucid_OpFunctionType.tp_weaklistoffset = PyCFunction_Type.tp_weaklistoffset;
        if (PyType_Ready(&lucid_OpFunctionType) < 0) {
            lucid_OpFunctionType.tp_base = NULL;
            return -1;
        }
        /* PyType_Ready put a plain __doc__ (None) in the new type's dict, which would hide the
           base's __doc__ descriptor: every op's docstring. Put the descriptor back. */
        if (lucid_copy_doc_descriptor() < 0)
            return -1;
        PyType_Modified(&lucid_OpFunctionType);
    }
    Py_SET_TYPE(f, &lucid_OpFunctionType);
    return 0;
}

/* Give f the keyword spellings of record (name, has_dim, has_keepdim, has_out): 1 when
 * installed, 0 when f has no vectorcall entry to forward (its calls are left as they are), -1
 * with an exception set. */
static int lucid_keywords_install(PyObject* f, PyObject* record) {
    Py_ssize_t offset;
    vectorcallfunc* entry;
    int i;
    if (lucid_kw_records == NULL) {
        lucid_kw_records = PyDict_New();
        lucid_kw_axis = PyUnicode_InternFromString("axis");
        lucid_kw_keepdims = PyUnicode_InternFromString("keepdims");
        lucid_kw_out = PyUnicode_InternFromString("out");
        lucid_kw_dim = PyUnicode_InternFromString("dim");
        lucid_kw_keepdim = PyUnicode_InternFromString("keepdim");
        if (lucid_kw_records == NULL || lucid_kw_axis == NULL || lucid_kw_keepdims == NULL ||
                lucid_kw_out == NULL || lucid_kw_dim == NULL || lucid_kw_keepdim == NULL)
            return -1;
    }
    if (!PyType_HasFeature(Py_TYPE(f), Py_TPFLAGS_HAVE_VECTORCALL))
        return 0;
    offset = Py_TYPE(f)->tp_vectorcall_offset;
    if (offset <= 0)
        return 0;
    entry = (vectorcallfunc*)((char*)f + offset);
    if (*entry == NULL)
        return 0;
    if (PyDict_SetItem(lucid_kw_records, f, record) < 0 || lucid_kw_retype(f) < 0)
        return -1;
    for (i = 0; i < LUCID_KW_SLOTS; i++)
        if (*entry == lucid_kw_forwarders[i])
            return 1;                           /* already forwarded */
    for (i = 0; i < LUCID_KW_SLOTS; i++) {
        if (lucid_kw_original[i] == NULL)
            lucid_kw_original[i] = *entry;
        if (lucid_kw_original[i] == *entry) {
            *entry = lucid_kw_forwarders[i];
            return 1;
        }
    }
    return 0;                                   /* more kinds of entry than slots: left alone */
}

#endif
