"""softplus(x) = log(1 + exp(x)): a native forward kernel and a native backward node.

Everything lucid-specific comes from `lucid._core`'s C-level API: the Node base to subclass,
Tensor and its `data` array, `wrap` (ndarray -> tensor), `record` (sequence number + edges),
`attach_output` (tensor.grad_fn = node), `save_tensor` / `SavedTensor.unpack` (saved with the
version check), `grad_enabled()`, and the built-in ops `mul` / `sigmoid` for the recorded path.
"""
cimport cython
from libc.math cimport exp, expf, log1p, log1pf, fabs, fabsf

import numpy as np

from lucid._core cimport (Node, Tensor, SavedTensor, save_tensor, wrap, record, attach_output,
                          grad_enabled, mul, sigmoid, check_abi, ABI_VERSION, fw_enabled,
                          fw_tangent, fw_set_tangent, fw_suspend, fw_resume)

# Fail at import, with an ImportError naming both versions, if the installed lucid's C layout is
# not the one this module was compiled against (rebuild it then).
check_abi(ABI_VERSION)

ctypedef fused real:
    float
    double


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void softplus_kernel(const real[::1] x, real[::1] out) noexcept nogil:
    cdef Py_ssize_t i
    cdef real v
    for i in range(x.shape[0]):
        v = x[i]
        if real is float:                      # single-precision libm for float32: 2-3x faster
            out[i] = (v if v > 0 else 0) + log1pf(expf(-fabsf(v)))
        else:
            out[i] = (v if v > 0 else 0) + log1p(exp(-fabs(v)))


@cython.boundscheck(False)
@cython.wraparound(False)
cdef void softplus_grad_kernel(const real[::1] g, const real[::1] x, real[::1] out) noexcept nogil:
    cdef Py_ssize_t i
    cdef real e
    for i in range(x.shape[0]):
        # g * sigmoid(x), with e = exp(-|x|) <= 1 so nothing overflows for either sign
        if real is float:
            e = expf(-fabsf(x[i]))
        else:
            e = exp(-fabs(x[i]))
        out[i] = g[i] / (1 + e) if x[i] >= 0 else g[i] * e / (1 + e)


cdef object float_array(object a, str what):
    if a.dtype != np.float32 and a.dtype != np.float64:
        raise TypeError(f"softplus: {what} must be float32 or float64, got {a.dtype}")
    return np.ascontiguousarray(a).reshape(-1)


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
        gd = float_array(g.data.astype(x.data.dtype, copy=False), "the gradient")
        xd = float_array(x.data, "x")
        out = np.empty_like(xd)
        if xd.dtype == np.float64:
            softplus_grad_kernel[double](gd, xd, out)
        else:
            softplus_grad_kernel[float](gd, xd, out)
        return (wrap(out.reshape(x.data.shape)),)


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
    xd = float_array(x.data, "x")
    out = np.empty_like(xd)
    if xd.dtype == np.float64:
        softplus_kernel[double](xd, out)
    else:
        softplus_kernel[float](xd, out)
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
