# What the lucid.linalg ops share: argument checks, LAPACK failures turned into errors that name
# the failing batch index, named results, and the few differentiable matrix helpers (transpose
# of the last two dims, triangle and diagonal selections) their rules are written with.
#
# Note [Linalg rules]
#   Every linalg op is one node computed by numpy.linalg (LAPACK, batched over leading dims like
#   NumPy). Its backward and its jvp are written with lucid ops, the linalg ops included
#   (inv's backward calls inv's own output, solve's calls solve), so create_graph records them
#   and the second derivative runs through the same nodes again. Matrix helpers below mask with
#   select_grad (a selection with constant weights, Note [Mask by selection]), never with a
#   0/1 product. Inputs of cholesky and eigh are read as symmetric: their gradients are
#   symmetric and their jvp rules take the tangent as symmetric, like PyTorch's. A jvp rule that
#   reads the op's output recomputes it with the op when reverse mode records (tracks), so a
#   tangent can itself be differentiated (reverse over forward) without a cycle through out.
#   det and slogdet differentiate through one gradient matrix each (ops/linalg/det.pxi): det's
#   is the cofactor matrix, from an SVD and with its own derivative nodes, so it and its
#   second derivative exist at singular matrices too (Note [Cofactors]).

from collections import namedtuple

SlogdetResult = namedtuple("slogdet", ["sign", "logabsdet"])
EighResult = namedtuple("eigh", ["eigenvalues", "eigenvectors"])
QRResult = namedtuple("qr", ["Q", "R"])


# linalg_float_operand (x as a float tensor) and float_result (a LAPACK result as a tensor) are
# in ops/linalg/products.pxi, shared with linalg.norm; tracks (does reverse mode record through a
# jvp's inputs?) is the core's (_core_internal.pxi).


cdef Tensor square_operand(object x, str op):
    """x as a float tensor holding a matrix or a batch of square matrices (..., n, n)."""
    cdef Tensor t = linalg_float_operand(x, op, "A")
    cdef tuple s = t.data.shape
    cdef Py_ssize_t nd = len(s)
    if nd < 2 or s[nd - 1] != s[nd - 2]:
        raise RuntimeError(f"{op}: A must be a square matrix or a batch of square matrices "
                           f"(shape (*, n, n)), got shape {s}")
    return t


cdef object failing_index(object arr, object factor):
    """The batch index (a tuple) of the first matrix of arr on which factor raises LinAlgError."""
    cdef tuple s = arr.shape
    for idx in np.ndindex(*s[:len(s) - 2]):
        try:
            factor(arr[idx])
        except np.linalg.LinAlgError:
            return idx
    return None


cdef str where_in_batch(object idx):
    """' at batch index (i, j)' for a batched failure, '' for an unbatched matrix."""
    return "" if idx is None or len(idx) == 0 else f" at batch index {tuple(int(i) for i in idx)}"


cdef str NO_UNIQUE_SOLUTION = "so it has no inverse; the system has no unique solution"


cdef object singular_error(str op, object a_arr, str why):
    """RuntimeError naming the first singular matrix of a_arr, and why that is an error."""
    idx = failing_index(a_arr, np.linalg.inv)
    return RuntimeError(f"{op}: the matrix A{where_in_batch(idx)} is singular (its LU "
                        f"factorization has a zero pivot), {why}")


# -- differentiable matrix helpers (selections with constant masks, transposes) ---------------

cdef Tensor mT(Tensor x):
    """x with its last two dims swapped (a view)."""
    return transpose(x, -1, -2)


cdef Tensor mH(Tensor x):
    """The conjugate transpose of x's matrices (mT(x) itself for a real x)."""
    if descr(x.data).kind == b'c':
        return conj(transpose(x, -1, -2))
    return transpose(x, -1, -2)


cdef object triangle_mask(Py_ssize_t n, bint upper, bint strict, object dtype):
    """1 on the (strict) upper or lower triangle of an n x n matrix, 0 elsewhere."""
    cdef object ones = np.ones((n, n), dtype=dtype)
    if upper:
        return np.triu(ones, 1 if strict else 0)
    return np.tril(ones, -1 if strict else 0)


cdef Py_ssize_t last_dim(Tensor x):
    cdef tuple s = x.data.shape
    return s[len(s) - 1]


cdef Tensor linalg_triangle(Tensor x, bint upper, bint strict):
    """The (strict) upper or lower triangle of x's matrices, zeros elsewhere."""
    return select_grad(x, triangle_mask(last_dim(x), upper, strict, x.data.dtype))


cdef Tensor lower_half_diagonal(Tensor x):
    """Phi(x): the strict lower triangle of x's matrices plus half their diagonal."""
    cdef Py_ssize_t n = last_dim(x)
    cdef object w = triangle_mask(n, False, True, x.data.dtype) + 0.5 * np.eye(n, dtype=x.data.dtype)
    return select_grad(x, w)


cdef Tensor linalg_diagonal_of(Tensor x):
    """The diagonals of x's matrices, shape (..., n)."""
    cdef object idx = np.arange(last_dim(x))
    return getitem(x, (Ellipsis, idx, idx))


cdef Tensor diag_embed_of(Tensor v):
    """Diagonal matrices (..., n, n) with v (..., n) on their diagonals."""
    cdef Py_ssize_t n = last_dim(v)
    cdef tuple s = v.data.shape
    cdef Tensor column = reshape(v, s + (1,))
    return select_grad(expand(column, s + (n,)), np.eye(n, dtype=v.data.dtype))


cdef Tensor as_matrix_scale(Tensor s):
    """s (...) reshaped to (..., 1, 1), to scale a batch of matrices."""
    return reshape(s, s.data.shape + (1, 1))


cdef Tensor symmetric_part(Tensor x):
    """(x + x^T) / 2 for each matrix."""
    return mul(add(x, mT(x)), 0.5)
