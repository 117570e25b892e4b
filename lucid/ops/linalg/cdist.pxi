# cdist: the p-norm distance between each row of x1 and each row of x2, batched (PyTorch's
# signature). It is norm(x1[..., :, None, :] - x2[..., None, :, :], p, -1), so its gradient,
# double backward and tangent are those of sub and norm: 0 where a p=2 (or p < 1, or p=0)
# distance is 0, sign(x1 - x2) for p=1, and for p=inf shared among the coordinates at the
# largest |x1 - x2| (norm's rule; PyTorch gives each of them the whole gradient).

CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
               "donot_use_mm_for_euclid_dist")


cdef void check_cdist_operand(Tensor t, str arg) except *:
    """RuntimeError unless t is a floating point tensor of at least 2 dims."""
    if not is_float_dtype(descr(t.data)):
        raise RuntimeError(f"cdist only supports floating-point dtypes, {arg} got: "
                           f"{dtype_name(t.data.dtype)}")
    if ndim_of(t.data) < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, {arg} got: "
                           f"{ndim_of(t.data)}D")


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """out[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p (p >= 0, inf included), the batch
    dims broadcast."""
    cdef Tensor a = tensor_arg(x1, "cdist", "x1"), b = tensor_arg(x2, "cdist", "x2")
    cdef double q = float_arg(p, "cdist", "p")
    if not q >= 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got p={p}")
    if not isinstance(compute_mode, str) or compute_mode not in CDIST_MODES:
        raise ValueError(f"cdist: {compute_mode!r} is not a valid value for compute_mode; use "
                         f"one of {', '.join(CDIST_MODES)}")
    check_cdist_operand(a, "X1")
    check_cdist_operand(b, "X2")
    if a.data.dtype != b.data.dtype:
        raise RuntimeError(f"cdist: X1 ({dtype_name(a.data.dtype)}) and X2 "
                           f"({dtype_name(b.data.dtype)}) must have the same dtype")
    cdef tuple sa = a.data.shape, sb = b.data.shape      # (no negative indices: wraparound is off)
    cdef Py_ssize_t na = len(sa), nb = len(sb)
    if sa[na - 1] != sb[nb - 1]:
        raise RuntimeError(f"cdist: X1 and X2 must have the same number of columns. X1: "
                           f"{sa[na - 1]} X2: {sb[nb - 1]}")
    try:
        np.broadcast_shapes(sa[:na - 2], sb[:nb - 2])
    except ValueError:
        raise RuntimeError(f"cdist: the batch dims of X1 (shape {sa}) and X2 (shape {sb}) "
                           "cannot be broadcast together") from None
    cdef Tensor diff = sub(unsqueeze(a, -2), unsqueeze(b, -3))
    cdef Py_ssize_t last = ndim_of(diff.data) - 1
    if sa[na - 1] == 0:                  # no coordinates: every distance is 0
        return reduce_op(diff, (last,), False, False)
    return lucid_norm(diff, q, last)
define_op(cdist, BATCHED_MATRIX, FLOAT_ONLY, method="none")
