# Creation sites: every node remembers where its forward ran (code object + instruction offset,
# resolved to file:line only when an error or a user asks), so backward errors can point at the
# user's line without anomaly mode.

cdef extern from "Python.h":
    ctypedef struct PyFrameObject:
        pass
    ctypedef struct PyCodeObject:
        pass
    PyFrameObject* PyEval_GetFrame()
    # new reference; declared with its own return type, since GCC 14 refuses a PyCodeObject*
    # assigned to a PyObject* (-Wincompatible-pointer-types is an error there)
    PyCodeObject* PyFrame_GetCode(PyFrameObject* frame)
    PyFrameObject* PyFrame_GetBack(PyFrameObject* frame) # new reference
    int PyFrame_GetLasti(PyFrameObject* frame)


cdef bint creation_sites_on = True


def set_creation_sites(bint on):
    """Record where each node's forward ran (on by default); returns the previous setting."""
    global creation_sites_on
    cdef bint previous = creation_sites_on
    creation_sites_on = on
    return previous


cdef inline void site_from_frame(Node node, PyFrameObject* frame) noexcept:
    cdef PyObject* code = <PyObject*>PyFrame_GetCode(frame)
    node.creation_code = <object>code
    Py_XDECREF(code)
    node.creation_lasti = PyFrame_GetLasti(frame)


cdef inline void note_creation_site(Node node) noexcept:
    """Keep the innermost Python frame's code and offset: the caller of the op (compiled code
    makes no frames of its own)."""
    cdef PyFrameObject* frame = PyEval_GetFrame()
    if frame != NULL:
        site_from_frame(node, frame)


cdef void note_caller_site(Node node, int skip):
    """The creation site `skip` Python frames further out: for nodes that lucid's own Python
    code makes on the user's behalf (the once_differentiable wrapper)."""
    cdef PyFrameObject* frame = PyEval_GetFrame()
    cdef PyFrameObject* back
    if frame == NULL:
        return
    Py_INCREF(<object><PyObject*>frame)
    while skip > 0 and frame != NULL:
        back = PyFrame_GetBack(frame)
        Py_XDECREF(<PyObject*>frame)
        frame = back
        skip -= 1
    if frame != NULL:
        site_from_frame(node, frame)
        Py_XDECREF(<PyObject*>frame)


cdef object current_site():
    """'file:line' of the innermost Python frame (the caller of the running op), or None."""
    cdef PyFrameObject* frame = PyEval_GetFrame()
    if frame == NULL:
        return None
    cdef PyObject* code = <PyObject*>PyFrame_GetCode(frame)
    site = site_of_code(<object>code, PyFrame_GetLasti(frame))
    Py_XDECREF(code)
    return site


cdef object creation_site_of(Node node):
    """'file:line' of the forward call that made node, or None."""
    return site_of_code(node.creation_code, node.creation_lasti)


cdef object site_of_code(object code, int lasti):
    """'file:line' of instruction lasti of code, or None."""
    if code is None:
        return None
    line = code.co_firstlineno
    for start, end, number in code.co_lines():
        if start <= lasti < end and number is not None:
            line = number
            break
    return f"{code.co_filename}:{line}"


cdef str describe(Node node):
    """The node's name and, when known, where it was created."""
    site = creation_site_of(node)
    return node.name() if site is None else f"{node.name()} (created at {site})"
