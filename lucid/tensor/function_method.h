/* A function used as a method: the descriptor behind `t.exp()` being `lucid.exp(t)`.
 *
 * Put in a type's dict, `lucid_function_method(fn)` makes `obj.name(*args)` call `fn(obj, *args)`.
 * It is a method descriptor (Py_TPFLAGS_METHOD_DESCRIPTOR), so the interpreter calls it with the
 * object as the first argument without making a bound method, and its vectorcall passes the
 * arguments on to fn's untouched: the call costs what calling fn costs. Read from the class
 * (`Tensor.exp`) it is fn itself; read from an instance without a call, a bound method. */
#ifndef LUCID_FUNCTION_METHOD_H
#define LUCID_FUNCTION_METHOD_H

#include <Python.h>

typedef struct {
    PyObject_HEAD
    PyObject* func;                   /* the function the method is (a strong reference) */
    vectorcallfunc vectorcall;
} lucid_FunctionMethod;

static PyObject* lucid_function_method_call(PyObject* self, PyObject* const* args, size_t nargsf,
                                            PyObject* kwnames) {
    return PyObject_Vectorcall(((lucid_FunctionMethod*)self)->func, args, nargsf, kwnames);
}

static PyObject* lucid_function_method_get(PyObject* self, PyObject* obj, PyObject* type) {
    PyObject* func = ((lucid_FunctionMethod*)self)->func;
    (void)type;
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(func);
        return func;
    }
    return PyMethod_New(func, obj);
}

static void lucid_function_method_dealloc(PyObject* self) {
    Py_XDECREF(((lucid_FunctionMethod*)self)->func);
    Py_TYPE(self)->tp_free(self);
}

static PyObject* lucid_function_method_getattro(PyObject* self, PyObject* name) {
    /* the function's own attributes (__doc__, __name__, __text_signature__, ...) are the
       method's; __func__ is the function, and the rest are the descriptor's */
    PyObject* func = ((lucid_FunctionMethod*)self)->func;
    PyObject* found;
    if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "__func__") != 0 &&
            PyUnicode_CompareWithASCIIString(name, "__class__") != 0) {
        found = PyObject_GetAttr(func, name);
        if (found != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError))
            return found;
        PyErr_Clear();
    }
    return PyObject_GenericGetAttr(self, name);
}

static PyObject* lucid_function_method_func(PyObject* self, void* closure) {
    PyObject* func = ((lucid_FunctionMethod*)self)->func;
    (void)closure;
    Py_INCREF(func);
    return func;
}

static PyGetSetDef lucid_function_method_getset[] = {
    {"__func__", lucid_function_method_func, NULL, "the function this method is", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject lucid_FunctionMethodType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lucid.function_method",
    .tp_doc = "A lucid function used as a Tensor method: t.name(*args) is name(t, *args).",
    .tp_basicsize = sizeof(lucid_FunctionMethod),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_METHOD_DESCRIPTOR | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(lucid_FunctionMethod, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = lucid_function_method_get,
    .tp_getattro = lucid_function_method_getattro,
    .tp_getset = lucid_function_method_getset,
    .tp_dealloc = lucid_function_method_dealloc,
};

/* A new function method for func, or NULL with an exception set. */
static PyObject* lucid_function_method(PyObject* func) {
    lucid_FunctionMethod* m;
    if (PyType_Ready(&lucid_FunctionMethodType) < 0)
        return NULL;
    m = PyObject_New(lucid_FunctionMethod, &lucid_FunctionMethodType);
    if (m == NULL)
        return NULL;
    Py_INCREF(func);
    m->func = func;
    m->vectorcall = lucid_function_method_call;
    return (PyObject*)m;
}

#endif
