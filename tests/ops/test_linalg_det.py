"""linalg.det's derivatives at every matrix, singular ones included (Note [Cofactors] in
lucid/ops/linalg/det.pxi): the gradient is the cofactor matrix, checked against cofactors built
from minors and against finite differences; the second derivative (create_graph, forward over
reverse, reverse over forward) at singular matrices of rank n-1 and n-2; the third derivative
where it is computed (invertible matrices, and n <= 2) and the clear error where it is not;
slogdet's errors at singular matrices name slogdet."""
import numpy as np
import pytest

import lucid
import lucid.autograd.forward_ad as fwAD
from lucid.autograd import gradcheck, gradgradcheck
from support.checks import assert_close, to_numpy

L = lucid.linalg
DTYPES = {np.float64: lucid.float64, np.float32: lucid.float32}
TOL = {np.float64: dict(rtol=1e-9, atol=1e-10), np.float32: dict(rtol=2e-4, atol=2e-4)}


def cofactors_np(a):
    """C_ij = (-1)^(i+j) det(a without row i and column j), per matrix, from minors."""
    a = np.asarray(a, dtype=np.float64)
    n = a.shape[-1]
    out = np.empty_like(a)
    for idx in np.ndindex(*a.shape[:-2]):
        for i in range(n):
            for j in range(n):
                minor = np.delete(np.delete(a[idx], i, 0), j, 1)
                out[idx + (i, j)] = (-1) ** (i + j) * np.linalg.det(minor)
    return out


def of_rank(rng, n, r, batch=()):
    """Random n x n matrices of rank exactly r, singular in floating point too (LU meets an
    exact zero pivot): n - r zero columns, then rows and columns shuffled and mixed by
    permutations only."""
    a = rng.standard_normal(batch + (n, n))
    a[..., r:] = 0
    return a[..., rng.permutation(n), :][..., rng.permutation(n)]


def near_rank(rng, n, r, batch=()):
    """Random n x n matrices of rank r up to rounding (a product of n x r and r x n factors)."""
    return rng.standard_normal(batch + (n, r)) @ rng.standard_normal(batch + (r, n))


def tensor(a, dtype=np.float64, requires_grad=True):
    return lucid.tensor(np.asarray(a, dtype=dtype), dtype=DTYPES[dtype],
                        requires_grad=requires_grad)


# (n, rank): full rank, rank n-1, rank n-2, the zero matrix
RANKS = [(1, 1), (1, 0), (2, 2), (2, 1), (2, 0), (3, 3), (3, 2), (3, 1), (3, 0), (4, 3), (4, 2)]


# -- the gradient is the cofactor matrix -------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("n,rank", RANKS, ids=[f"n{n}-rank{r}" for n, r in RANKS])
def test_gradient_is_the_cofactor_matrix(n, rank, dtype, rng):
    arr = of_rank(rng, n, rank).astype(dtype)
    a = tensor(arr, dtype)
    (g,) = lucid.autograd.grad(L.det(a), a)
    assert g.dtype == DTYPES[dtype]
    assert_close(g, cofactors_np(arr), **TOL[dtype])


def test_the_reproducer_rank_two_matrix():
    arr = np.array([[1., 2., 0.], [3., 4., 0.], [5., 6., 0.]])
    a = tensor(arr)
    L.det(a).backward()
    assert_close(a.grad, [[0, 0, -2], [0, 0, 4], [0, 0, -2]], rtol=0, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_batched_mixed_ranks_and_strided_input(dtype, rng):
    arr = np.stack([of_rank(rng, 3, r) for r in (3, 2, 1, 0)] +
                   [near_rank(rng, 3, r) for r in (2, 1)]).reshape(2, 3, 3, 3)
    weights = rng.standard_normal((2, 3))
    base = tensor(np.swapaxes(arr, -1, -2).copy(), dtype)
    a = base.transpose(-1, -2)                         # a strided view holding arr
    (L.det(a) * tensor(weights, dtype, False)).sum().backward()
    expected = np.swapaxes(weights[..., None, None] * cofactors_np(arr), -1, -2)
    assert_close(base.grad, expected, **TOL[dtype])


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3)])
def test_empty_matrices_and_batches(shape):
    a = lucid.zeros(*shape, dtype=lucid.float64, requires_grad=True)
    d = L.det(a)
    assert_close(d, np.linalg.det(np.zeros(shape)), rtol=0, atol=0)
    d.sum().backward()
    assert a.grad.shape == shape


def test_a_non_finite_matrix_gets_nan_derivatives_and_the_others_their_cofactors(rng):
    arr = np.stack([of_rank(rng, 3, 2), np.full((3, 3), np.nan), of_rank(rng, 3, 3)])
    arr[1, 0, 0] = np.inf
    a = tensor(arr)
    L.det(a).sum().backward()
    g = to_numpy(a.grad)
    assert np.isnan(g[1]).all()
    assert_close(g[[0, 2]], cofactors_np(arr[[0, 2]]), rtol=1e-9, atol=1e-10)


# -- finite differences at rank-deficient matrices, both modes ----------------------------------

SINGULAR = [(2, 1), (2, 0), (3, 2), (3, 1), (4, 3), (4, 2)]


@pytest.mark.parametrize("n,rank", SINGULAR, ids=[f"n{n}-rank{r}" for n, r in SINGULAR])
def test_gradcheck_and_jvp_at_singular_matrices(n, rank, rng):
    a = tensor(of_rank(rng, n, rank, (2,)))
    assert gradcheck(L.det, (a,), atol=1e-6, rtol=1e-5, check_forward_ad=True)


@pytest.mark.parametrize("n,rank", SINGULAR, ids=[f"n{n}-rank{r}" for n, r in SINGULAR])
def test_second_derivative_at_singular_matrices(n, rank, rng):
    a = tensor(of_rank(rng, n, rank, (2,)))
    assert gradgradcheck(L.det, (a,), atol=1e-6, rtol=1e-5)


def fd_cofactor_derivative(arr, direction, eps=1e-5):
    """d cof(A)[direction] by central differences of cofactors_np."""
    return (cofactors_np(arr + eps * direction) - cofactors_np(arr - eps * direction)) / (2 * eps)


@pytest.mark.parametrize("n,rank", [(3, 2), (3, 1), (4, 2)])
def test_forward_over_reverse_and_reverse_over_forward_at_singular_matrices(n, rank, rng):
    arr = of_rank(rng, n, rank)
    direction = rng.standard_normal((n, n))
    expected = fd_cofactor_derivative(arr, direction)
    # forward over reverse: the tangent of the gradient is d cof(A)[direction]
    with fwAD.dual_level():
        a = fwAD.make_dual(tensor(arr), tensor(direction, requires_grad=False))
        (g,) = lucid.autograd.grad(L.det(a), a)
        assert_close(fwAD.unpack_dual(g).tangent, expected, rtol=1e-6, atol=1e-8)
    # reverse over forward: the gradient of the tangent <cof(A), direction> is the same matrix
    a = tensor(arr)
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(L.det(fwAD.make_dual(a, tensor(direction, requires_grad=False)))
                                   ).tangent
    (g,) = lucid.autograd.grad(tangent, a)
    assert_close(g, expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
def test_create_graph_second_derivative_at_a_rank_n_minus_2_matrix(dtype, rng):
    arr = of_rank(rng, 4, 2).astype(dtype)
    weights = rng.standard_normal((4, 4))
    a = tensor(arr, dtype)
    (g,) = lucid.autograd.grad(L.det(a), a, create_graph=True)
    (h,) = lucid.autograd.grad((g * tensor(weights, dtype, False)).sum(), a)
    assert_close(h, fd_cofactor_derivative(arr.astype(np.float64), weights),
                 **(TOL[dtype] if dtype is np.float32 else dict(rtol=1e-6, atol=1e-8)))


# -- the third derivative ------------------------------------------------------------------------

def det_gradient(a):
    (g,) = lucid.autograd.grad(L.det(a).sum(), a, create_graph=True)
    return g


@pytest.mark.parametrize("n,rank", [(2, 2), (2, 1), (1, 0), (3, 3), (4, 4)])
def test_third_derivative_where_it_is_computed(n, rank, rng):
    # invertible matrices, and every matrix of n <= 2 (whose det has degree <= 2)
    a = tensor(of_rank(rng, n, rank, (2,)) + (2 * np.eye(n) if rank == n else 0))
    assert gradgradcheck(det_gradient, (a,), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("make", [of_rank, near_rank], ids=["exactly", "numerically"])
@pytest.mark.parametrize("n,rank", [(3, 2), (4, 2)])
def test_third_derivative_at_a_singular_matrix_is_a_clear_error(n, rank, make, rng):
    arr = np.stack([np.eye(n), make(rng, n, rank)])
    a = tensor(arr)
    g = det_gradient(a)
    (h,) = lucid.autograd.grad(g.sum(), a, create_graph=True)   # the second derivative works
    with pytest.raises(RuntimeError, match=r"linalg\.det: derivatives of order 3 .* matrix A at "
                                           r"batch index \(1,\) is singular"):
        lucid.autograd.grad(h.sum(), a)
    assert_close(a, arr, rtol=0, atol=0)
    assert a.grad is None


# -- slogdet diverges at singular matrices: its errors name it -------------------------------------

def test_slogdet_backward_and_jvp_at_a_singular_matrix_name_slogdet():
    arr = np.stack([np.eye(3), [[1., 2., 3.], [2., 4., 6.], [0., 0., 1.]]])   # exactly rank 2
    a = tensor(arr)
    sign, logabsdet = L.slogdet(a)
    assert to_numpy(sign)[1] == 0 and to_numpy(logabsdet)[1] == -np.inf
    message = r"linalg\.slogdet: the matrix A at batch index \(1,\) is singular.*-inf"
    with pytest.raises(RuntimeError, match=message):
        logabsdet.sum().backward()
    assert a.grad is None
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match=message):
            L.slogdet(fwAD.make_dual(a, tensor(np.ones((2, 3, 3)), requires_grad=False)))
    assert_close(a, arr, rtol=0, atol=0)
