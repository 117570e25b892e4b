# Products of several operands composed from lucid ops: cross (of 3-vectors) and multi_dot (a
# chain of matrix products in the cheapest order). Their derivatives are those of the ops.


def cross(input, other, dim=-1):
    """a x b along dim (of size 3), broadcast: (a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0)."""
    cdef str op = "linalg.cross"
    cdef Tensor a = operand(input, op), b = operand(other, op)
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{op}: dim must be an int, got {type(dim).__name__}")
    cdef Py_ssize_t na = ndim_of(a.data), nb = ndim_of(b.data)
    if na != nb:
        raise RuntimeError(f"{op}: input and other must have the same number of dims, got "
                           f"shapes {a.data.shape} and {b.data.shape}")
    cdef tuple shape
    try:
        shape = np.broadcast_shapes(a.data.shape, b.data.shape)
    except ValueError:
        raise RuntimeError(f"{op}: input of shape {a.data.shape} and other of shape "
                           f"{b.data.shape} cannot be broadcast together") from None
    cdef Py_ssize_t n = len(shape), d
    if dim < -n or dim >= n:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of [{-n}, "
                         f"{n - 1}], but got {dim})")
    d = dim
    if d < 0:
        d += n
    if a.data.shape[d] != 3 or b.data.shape[d] != 3:
        raise RuntimeError(f"{op}: input and other must have size 3 at dim {dim}, got shapes "
                           f"{a.data.shape} and {b.data.shape}")
    a, b = expand(a, shape), expand(b, shape)
    cdef list pa = [narrow(a, d, i, 1) for i in range(3)]
    cdef list pb = [narrow(b, d, i, 1) for i in range(3)]
    return lucid_cat([sub(mul(pa[1], pb[2]), mul(pa[2], pb[1])),
                      sub(mul(pa[2], pb[0]), mul(pa[0], pb[2])),
                      sub(mul(pa[0], pb[1]), mul(pa[1], pb[0]))], d)
define_op(cross, DIMS, NUMERIC, method="none", name="linalg.cross")


cdef list chain_order(list dims):
    """split[i][j]: where the cheapest product of matrices i..j splits (dims: p0, p1, ..., pn
    for n matrices of shapes (p_i, p_i+1)), by the classic O(n^3) dynamic program."""
    cdef Py_ssize_t n = len(dims) - 1, length, i, j, k
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


cdef Tensor chain_product(list ts, list split, Py_ssize_t i, Py_ssize_t j):
    if i == j:
        return ts[i]
    cdef Py_ssize_t k = split[i][j]
    return matmul(chain_product(ts, split, i, k), chain_product(ts, split, k + 1, j))


def multi_dot(tensors):
    """The product of two or more matrices in the cheapest order; the first may be a 1-D row
    vector and the last a 1-D column vector (the result then drops that dim)."""
    cdef str op = "linalg.multi_dot"
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}: tensors must be a list or tuple of tensors, got "
                        f"{type(tensors).__name__}")
    cdef list ts = [operand(t, op) for t in tensors]
    cdef Py_ssize_t n = len(ts), i
    if n < 2:
        raise RuntimeError(f"{op}: expected at least 2 tensors, got {n}")
    cdef bint first_vector = ndim_of((<Tensor>ts[0]).data) == 1
    cdef bint last_vector = ndim_of((<Tensor>ts[n - 1]).data) == 1
    for i in range(n):
        nd = ndim_of((<Tensor>ts[i]).data)
        if not (nd == 2 or (nd == 1 and (i == 0 or i == n - 1))):
            raise RuntimeError(f"{op}: tensor {i} must be 2-D (the first and last may be 1-D), "
                               f"got shape {(<Tensor>ts[i]).data.shape}")
    if first_vector:
        ts[0] = reshape(<Tensor>ts[0], (1, (<Tensor>ts[0]).data.shape[0]))
    if last_vector:
        ts[n - 1] = reshape(<Tensor>ts[n - 1], ((<Tensor>ts[n - 1]).data.shape[0], 1))
    for i in range(n - 1):
        if (<Tensor>ts[i]).data.shape[1] != (<Tensor>ts[i + 1]).data.shape[0]:
            raise RuntimeError(f"{op}: tensors {i} and {i + 1} cannot be multiplied (shapes "
                               f"{(<Tensor>ts[i]).data.shape} and "
                               f"{(<Tensor>ts[i + 1]).data.shape})")
    cdef list dims = [(<Tensor>ts[0]).data.shape[0]] + [(<Tensor>t).data.shape[1] for t in ts]
    cdef Tensor out = chain_product(ts, chain_order(dims), 0, n - 1)
    cdef tuple s = out.data.shape
    if first_vector and last_vector:
        return reshape(out, ())
    if first_vector:
        return reshape(out, (s[1],))
    if last_vector:
        return reshape(out, (s[0],))
    return out
define_op(multi_dot, TENSORS, NUMERIC, method="none", name="linalg.multi_dot")
