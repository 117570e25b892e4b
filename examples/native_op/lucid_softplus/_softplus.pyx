"""softplus(x) = log(1 + exp(x)): a native forward kernel and a native backward node.

Everything lucid-specific comes from `lucid._core`'s C-level API: the Node base to subclass,
Tensor and its `data` array, `wrap` (ndarray -> tensor), `record` (sequence number + edges),
`attach_output` (tensor.grad_fn = node), `save_tensor` / `SavedTensor.unpack` (saved with the
version check), `grad_enabled()`, and the built-in ops `mul` / `sigmoid` for the recorded path.
"""
cimport numpy as cnp

import numpy as np

from lucid._core cimport (Node, Tensor, SavedTensor, save_tensor, wrap, record, attach_output,
                          grad_enabled, mul, sigmoid, check_abi, ABI_VERSION, fw_enabled,
                          fw_tangent, fw_set_tangent, fw_suspend, fw_resume)

# The loops themselves are C (softplus_kernels.h explains why): branch-free, so gcc vectorises them.
cdef extern from "softplus_kernels.h" nogil:
    void softplus_forward_f32(const float *x, float *y, Py_ssize_t n)
    void softplus_forward_f64(const double *x, double *y, Py_ssize_t n)
    void softplus_backward_f32(const float *g, Py_ssize_t g_step, const float *x, float *gx,
                               Py_ssize_t n)
    void softplus_backward_f64(const double *g, Py_ssize_t g_step, const double *x, double *gx,
                               Py_ssize_t n)

cnp.import_array()

# Fail at import, with an ImportError naming both versions, if the installed lucid's C layout is
# not the one this module was compiled against (rebuild it then).
check_abi(ABI_VERSION)


cdef cnp.ndarray float_array(object a, str what):
    """a as a contiguous 1-d float32/float64 array (copied only when a is strided)."""
    if a.dtype != np.float32 and a.dtype != np.float64:
        raise TypeError(f"softplus: {what} must be float32 or float64, got {a.dtype}")
    return np.ascontiguousarray(a).reshape(-1)


cdef bint is_one_value(cnp.ndarray a):
    """Every element of a is the same memory (a broadcast scalar, e.g. the gradient of sum())."""
    cdef int d
    for d in range(a.ndim):
        if a.strides[d] != 0 and a.shape[d] != 1:
            return False
    return a.size > 0


cdef object softplus_gradient(cnp.ndarray g, object x):
    """g * sigmoid(x) in one native pass; g already has x's dtype and shape."""
    cdef cnp.ndarray xf = float_array(x, "x")
    cdef cnp.ndarray gf
    cdef Py_ssize_t g_step = 0
    if is_one_value(g):
        gf = g
    else:
        gf = float_array(g, "the gradient")
        g_step = 1
    cdef cnp.ndarray out = np.empty_like(xf)
    cdef Py_ssize_t n = xf.shape[0]
    if xf.dtype == np.float64:
        softplus_backward_f64(<double *>cnp.PyArray_DATA(gf), g_step,
                              <double *>cnp.PyArray_DATA(xf), <double *>cnp.PyArray_DATA(out), n)
    else:
        softplus_backward_f32(<float *>cnp.PyArray_DATA(gf), g_step,
                              <float *>cnp.PyArray_DATA(xf), <float *>cnp.PyArray_DATA(out), n)
    return out.reshape(x.shape)


cdef class SoftplusBackward(Node):
    """y = softplus(x)  ->  gx = g*sigmoid(x)"""
    cdef SavedTensor x

    cdef void release_saved(self):
        self.x = None

    cdef tuple apply(self, tuple grads):
        cdef Tensor g = grads[0]
        cdef Tensor x = self.x.unpack(self)        # raises if x was changed in place since
        if grad_enabled():
            # create_graph: the same formula through lucid's ops, so it is recorded
            return (mul(g, sigmoid(x)),)
        return (wrap(softplus_gradient(g.data.astype(x.data.dtype, copy=False), x.data)),)


cdef Tensor softplus_jvp(Tensor x):
    """dy = tx * sigmoid(x): the same derivative as the backward, on x's tangent (None if none).
    Computed with lucid's ops, with forward mode suspended, so reverse mode can differentiate it."""
    cdef Tensor tx = fw_tangent(x)
    if tx is None:
        return None
    cdef long level = fw_suspend()
    try:
        return mul(tx, sigmoid(x))
    finally:
        fw_resume(level)


def softplus(Tensor x):
    """log(1 + exp(x)), computed stably in one pass."""
    cdef cnp.ndarray xd = float_array(x.data, "x")
    cdef cnp.ndarray out = np.empty_like(xd)
    if xd.dtype == np.float64:
        softplus_forward_f64(<double *>cnp.PyArray_DATA(xd), <double *>cnp.PyArray_DATA(out),
                             xd.shape[0])
    else:
        softplus_forward_f32(<float *>cnp.PyArray_DATA(xd), <float *>cnp.PyArray_DATA(out),
                             xd.shape[0])
    cdef Tensor y = wrap(out.reshape(x.data.shape))
    cdef SoftplusBackward node
    if fw_enabled():                               # forward mode: only inside a dual level
        fw_set_tangent(y, softplus_jvp(x))         # before saving anything (Note [Forward mode])
    if grad_enabled() and x.requires_grad_c():
        node = SoftplusBackward.__new__(SoftplusBackward)
        record(node, x, None)                      # sequence number, edge to x's producer
        node.x = save_tensor(x, node, False)       # an input: kept with its version
        attach_output(y, node, 0)
    return y
