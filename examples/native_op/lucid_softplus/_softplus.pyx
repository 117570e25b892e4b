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

# The loops themselves are C (softplus_kernels.h explains them): branch-free, so gcc vectorises them.
cdef extern from "softplus_kernels.h" nogil:
    const int SOFTPLUS_VECTOR_MATH
    void softplus_forward_f32(const float *x, float *y, Py_ssize_t n)
    void softplus_forward_f64(const double *x, double *y, Py_ssize_t n)
    void softplus_backward_f32(const float *g, Py_ssize_t g_step, const float *x, float *gx,
                               Py_ssize_t n)
    void softplus_backward_f64(const double *g, Py_ssize_t g_step, const double *x, double *gx,
                               Py_ssize_t n)
    void neg_abs_f32(const float *x, float *a, Py_ssize_t n)
    void neg_abs_f64(const double *x, double *a, Py_ssize_t n)
    void softplus_forward_part_f32(const float *x, float *a, float *y, Py_ssize_t n)
    void softplus_forward_part_f64(const double *x, double *a, double *y, Py_ssize_t n)
    void softplus_backward_from_exp_f32(const float *g, Py_ssize_t g_step, const float *x,
                                        const float *e, float *gx, Py_ssize_t n)
    void softplus_backward_from_exp_f64(const double *g, Py_ssize_t g_step, const double *x,
                                        const double *e, double *gx, Py_ssize_t n)

cnp.import_array()

# Fail at import, with an ImportError naming both versions, if the installed lucid's C layout is
# not the one this module was compiled against (rebuild it then).
check_abi(ABI_VERSION)

# "single-pass": one vectorised loop each way (gcc + glibc's libmvec); "numpy": C loops around
# NumPy's SIMD exp and log, on builds without vector math. Fixed by the build, not by timing.
KERNELS = ("single-pass", "numpy") if SOFTPLUS_VECTOR_MATH else ("numpy",)
cdef bint single_pass = SOFTPLUS_VECTOR_MATH


def kernel():
    """The name of the kernel in use: "single-pass" or "numpy"."""
    return "single-pass" if single_pass else "numpy"


def _use_kernel(str name):
    """Switch kernels (for tests that compare them); name must be one of KERNELS."""
    global single_pass
    if name not in KERNELS:
        raise ValueError(f"softplus: kernel must be one of {KERNELS}, got {name!r}")
    single_pass = name == "single-pass"


cdef inline void* data(cnp.ndarray a):
    return cnp.PyArray_DATA(a)


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


cdef cnp.ndarray exp_neg_abs(cnp.ndarray x):
    """exp(-|x|) through NumPy's exp (its SIMD loop), into a new array."""
    cdef cnp.ndarray a = np.empty_like(x)
    if x.dtype == np.float64:
        neg_abs_f64(<double *>data(x), <double *>data(a), x.shape[0])
    else:
        neg_abs_f32(<float *>data(x), <float *>data(a), x.shape[0])
    return np.exp(a, out=a)


cdef cnp.ndarray softplus_values(cnp.ndarray x):
    """softplus(x) for a contiguous 1-d float array, into a new array."""
    cdef cnp.ndarray y = np.empty_like(x)
    cdef cnp.ndarray a
    cdef bint f64 = x.dtype == np.float64
    if single_pass:
        if f64:
            softplus_forward_f64(<double *>data(x), <double *>data(y), x.shape[0])
        else:
            softplus_forward_f32(<float *>data(x), <float *>data(y), x.shape[0])
        return y
    a = exp_neg_abs(x)
    if f64:
        softplus_forward_part_f64(<double *>data(x), <double *>data(a), <double *>data(y),
                                  x.shape[0])
    else:
        softplus_forward_part_f32(<float *>data(x), <float *>data(a), <float *>data(y), x.shape[0])
    np.log(a, out=a)
    return np.add(y, a, out=y)


cdef object softplus_gradient(cnp.ndarray g, object x):
    """g * sigmoid(x) natively; g already has x's dtype and shape."""
    cdef cnp.ndarray xf = float_array(x, "x")
    cdef cnp.ndarray gf
    cdef Py_ssize_t g_step = 0
    if is_one_value(g):
        gf = g
    else:
        gf = float_array(g, "the gradient")
        g_step = 1
    cdef cnp.ndarray out = np.empty_like(xf)
    cdef cnp.ndarray e
    cdef Py_ssize_t n = xf.shape[0]
    cdef bint f64 = xf.dtype == np.float64
    if single_pass:
        if f64:
            softplus_backward_f64(<double *>data(gf), g_step, <double *>data(xf),
                                  <double *>data(out), n)
        else:
            softplus_backward_f32(<float *>data(gf), g_step, <float *>data(xf),
                                  <float *>data(out), n)
    else:
        e = exp_neg_abs(xf)
        if f64:
            softplus_backward_from_exp_f64(<double *>data(gf), g_step, <double *>data(xf),
                                           <double *>data(e), <double *>data(out), n)
        else:
            softplus_backward_from_exp_f32(<float *>data(gf), g_step, <float *>data(xf),
                                           <float *>data(e), <float *>data(out), n)
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
    """log(1 + exp(x)), computed stably by a native kernel (see kernel())."""
    cdef cnp.ndarray y_data = softplus_values(float_array(x.data, "x"))
    cdef Tensor y = wrap(y_data.reshape(x.data.shape))
    cdef SoftplusBackward node
    if fw_enabled():                               # forward mode: only inside a dual level
        fw_set_tangent(y, softplus_jvp(x))         # before saving anything (Note [Forward mode])
    if grad_enabled() and x.requires_grad_c():
        node = SoftplusBackward.__new__(SoftplusBackward)
        record(node, x, None)                      # sequence number, edge to x's producer
        node.x = save_tensor(x, node, False)       # an input: kept with its version
        attach_output(y, node, 0)
    return y
