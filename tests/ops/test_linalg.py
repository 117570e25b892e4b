"""lucid.linalg and mm/bmm/dot/outer beyond their table rows (tests/support/op_rows_linalg.py; values
in float64 and float32, gradcheck, gradgradcheck, tangents and non-contiguous inputs of every row
are checked by the table's loops: tests/ops/test_gradcheck.py, tests/forward/test_forward_ad.py): the
error paths (singular and non-positive-definite inputs with their batch index, shape mismatches),
the special semantics (degenerate eigenvalues, zero norms, the sign of slogdet), tangents
differentiated in reverse, and a Gaussian log-likelihood through cholesky + solve_triangular +
the diagonal against its closed form."""
import math

import numpy as np
import pytest

import lucid
import lucid.autograd.forward_ad as fwAD
from lucid.autograd import gradcheck, gradgradcheck
from support.checks import assert_close, assert_mentions_shapes, to_numpy
from support.op_rows_linalg import sym
from support.op_spec import sample

L = lucid.linalg


# -- reverse over forward: tangents are differentiable in the primal -------------------------

@pytest.mark.parametrize("name,fn,domain", [
    ("inv", lambda a: L.inv(a), "well_conditioned"),
    ("solve", lambda a: L.solve(a, lucid.tensor([[1.0], [2.0], [-1.0]], dtype=lucid.float64)),
     "well_conditioned"),
    ("det", lambda a: L.det(a), "well_conditioned"),
    ("cholesky", lambda a: L.cholesky(sym(a)), "spd"),
    ("eigh", lambda a: L.eigh(sym(a)).eigenvalues, "spd"),
    ("qr", lambda a: L.qr(a).R, "well_conditioned"),
])
def test_tangent_is_differentiable_in_the_primal(name, fn, domain, rng):
    direction = lucid.tensor(rng.standard_normal((3, 3)), dtype=lucid.float64)

    def tangent(a):
        with fwAD.dual_level():
            return fwAD.unpack_dual(fn(fwAD.make_dual(a, direction))).tangent

    a = lucid.tensor(sample(rng, (3, 3), domain), dtype=lucid.float64, requires_grad=True)
    assert gradcheck(tangent, (a,), atol=1e-6, rtol=1e-4)


# -- non-contiguous and broadcast inputs ------------------------------------------------------

def test_noncontiguous_inputs(rng):
    a = sample(rng, (3, 3), "well_conditioned")
    b = rng.standard_normal((2, 3))
    at = lucid.tensor(a, dtype=lucid.float64).transpose(0, 1)       # a strided view
    bt = lucid.tensor(b, dtype=lucid.float64).transpose(0, 1)
    assert_close(L.solve(at, bt), np.linalg.solve(a.T, b.T), rtol=1e-12, atol=1e-12)
    assert_close(L.inv(at), np.linalg.inv(a.T), rtol=1e-12, atol=1e-12)
    assert_close(L.det(at), np.linalg.det(a.T), rtol=1e-12, atol=1e-12)
    assert_close(L.solve_triangular(at, bt, upper=True), np.linalg.solve(np.triu(a.T), b.T),
                 rtol=1e-12, atol=1e-12)


def test_solve_broadcasts_batches_and_reduces_gradients(rng):
    a = lucid.tensor(sample(rng, (3, 3), "well_conditioned"), dtype=lucid.float64,
                     requires_grad=True)
    b = lucid.tensor(rng.standard_normal((4, 3, 2)), dtype=lucid.float64, requires_grad=True)
    x = L.solve(a, b)
    assert x.shape == (4, 3, 2)
    x.sum().backward()
    g = np.linalg.solve(to_numpy(a).T, np.ones((4, 3, 2)))
    assert_close(b.grad, g, rtol=1e-12, atol=1e-12)
    assert_close(a.grad, -(g @ np.swapaxes(to_numpy(x), -1, -2)).sum(0), rtol=1e-10, atol=1e-12)


def test_only_the_input_that_requires_grad_gets_one(rng):
    a = lucid.tensor(sample(rng, (3, 3), "well_conditioned"), dtype=lucid.float64)
    b = lucid.tensor(rng.standard_normal((3, 2)), dtype=lucid.float64, requires_grad=True)
    L.solve(a, b).sum().backward()
    assert a.grad is None and b.grad is not None
    a.requires_grad_(True)
    b2 = lucid.tensor(rng.standard_normal((3, 2)), dtype=lucid.float64)
    L.solve_triangular(a, b2, upper=False).sum().backward()
    assert b2.grad is None
    assert np.all(np.triu(to_numpy(a.grad), 1) == 0)          # only the triangle read


def test_mixed_float_dtypes_promote_and_grads_keep_each_dtype(rng):
    a = lucid.tensor(sample(rng, (3, 3), "well_conditioned"), dtype=lucid.float32,
                     requires_grad=True)
    b = lucid.tensor(rng.standard_normal((3,)), dtype=lucid.float64, requires_grad=True)
    x = L.solve(a, b)
    assert x.dtype == lucid.float64
    x.sum().backward()
    assert a.grad.dtype == lucid.float32 and b.grad.dtype == lucid.float64


# -- errors: singular, not positive-definite, shapes, dtypes ----------------------------------

def _singular_batch():
    a = np.stack([np.eye(3), np.eye(3)]).reshape(2, 1, 3, 3).repeat(2, axis=1)
    a[1, 0] = [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 0.0, 1.0]]     # rank 2
    return a


@pytest.mark.parametrize("call", [
    lambda a: L.inv(a),
    lambda a: L.solve(a, lucid.ones(3, 1, dtype=lucid.float64)),
])
def test_singular_matrix_names_op_and_batch_index(call):
    arr = _singular_batch()
    a = lucid.tensor(arr, dtype=lucid.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"linalg\.(inv|solve).*batch index \(1, 0\).*singular"):
        call(a)
    assert_close(a, arr, rtol=0, atol=0)
    assert a.grad is None


def test_singular_unbatched_matrix_has_no_batch_index():
    a = lucid.zeros(2, 2, dtype=lucid.float64)
    with pytest.raises(RuntimeError, match=r"linalg\.inv: the matrix A is singular"):
        L.inv(a)


def test_solve_triangular_with_zero_diagonal_is_singular():
    a = lucid.tensor(np.stack([np.eye(2), np.diag([1.0, 0.0])]), dtype=lucid.float64)
    with pytest.raises(RuntimeError, match=r"solve_triangular.*batch index \(1,\).*singular"):
        L.solve_triangular(a, lucid.ones(2, 2, 1, dtype=lucid.float64), upper=True)


def test_cholesky_not_positive_definite_names_batch_index():
    arr = np.stack([np.eye(3), np.diag([1.0, -1.0, 1.0]), np.eye(3)])
    a = lucid.tensor(arr, dtype=lucid.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"linalg\.cholesky.*batch index \(1,\).*not "
                                           r"positive-definite"):
        L.cholesky(a)
    assert_close(a, arr, rtol=0, atol=0)


@pytest.mark.parametrize("call,shapes", [
    (lambda: L.solve(lucid.ones(3, 3), lucid.ones(4, 2)), ((3, 3), (4, 2))),
    (lambda: L.solve(lucid.ones(3, 3), lucid.ones(4)), ((3, 3), (4,))),
    (lambda: L.solve(lucid.ones(2, 3, 3), lucid.ones(4, 3, 1)), ((2, 3, 3), (4, 3, 1))),
    (lambda: L.solve_triangular(lucid.ones(3, 3), lucid.ones(2, 3), upper=True),
     ((3, 3), (2, 3))),
    (lambda: L.solve_triangular(lucid.ones(3, 3), lucid.ones(3, 2), upper=True, left=False),
     ((3, 3), (3, 2))),
    (lambda: lucid.mm(lucid.ones(2, 3), lucid.ones(4, 2)), ((2, 3), (4, 2))),
    (lambda: lucid.bmm(lucid.ones(2, 2, 3), lucid.ones(3, 3, 2)), ((2, 2, 3), (3, 3, 2))),
    (lambda: lucid.dot(lucid.ones(3), lucid.ones(4)), ((3,), (4,))),
])
def test_shape_mismatch_names_both_shapes(call, shapes):
    with pytest.raises(RuntimeError) as info:
        call()
    assert_mentions_shapes(str(info.value), *shapes)


@pytest.mark.parametrize("call,pattern", [
    (lambda: L.inv(lucid.ones(2, 3)), r"linalg\.inv: A must be a square matrix.*\(2, 3\)"),
    (lambda: L.det(lucid.ones(3)), r"linalg\.det: A must be a square matrix.*\(3,\)"),
    (lambda: L.cholesky(lucid.ones(2, 2, dtype=lucid.int64)), r"linalg\.cholesky.*floating"),
    (lambda: L.solve(lucid.ones(2, 2), lucid.ones(2, dtype=lucid.int64)), r"linalg\.solve.*B"),
    (lambda: L.qr(lucid.ones(3)), r"linalg\.qr: A must be a matrix"),
    (lambda: lucid.mm(lucid.ones(3), lucid.ones(3, 2)), r"mm: input must be a matrix"),
    (lambda: lucid.bmm(lucid.ones(2, 3), lucid.ones(3, 2)), r"bmm: input must be a batch"),
    (lambda: lucid.dot(lucid.ones(2, 2), lucid.ones(2)), r"dot: input must be a vector"),
    (lambda: lucid.outer(lucid.ones(2), lucid.ones(2, 1)), r"outer: vec2 must be a vector"),
    (lambda: L.norm(lucid.ones(2, 2, 2), 2), r"linalg\.norm.*1-D or 2-D"),
    (lambda: L.norm(lucid.ones(3), "fro"), r"linalg\.norm.*matrix norm"),
])
def test_bad_arguments_raise_runtime_error(call, pattern):
    with pytest.raises(RuntimeError, match=pattern):
        call()


@pytest.mark.parametrize("call,pattern", [
    (lambda: L.eigh(lucid.ones(2, 2), UPLO="X"),
     r"UPLO must be 'L' or 'U'"),
    (lambda: L.qr(lucid.ones(2, 2), mode="economic"), r"mode must be"),
    (lambda: L.norm(lucid.ones(2, 2), "spectral"), r"unsupported matrix norm"),
    (lambda: L.norm(lucid.ones(3), -1.5), r"unsupported vector norm"),
])
def test_bad_options_raise_value_error(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


@pytest.mark.parametrize("shape,mode", [((2, 4), "reduced"), ((4, 2), "complete"), ((3, 3), "r")])
def test_qr_gradient_outside_its_domain_is_a_clear_error(shape, mode, rng):
    a = lucid.tensor(rng.standard_normal(shape), dtype=lucid.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"linalg\.qr: the derivative"):
        L.qr(a, mode=mode).R.sum().backward()
    assert a.grad is None


# -- special semantics --------------------------------------------------------------------------

def test_slogdet_sign_and_det_of_negative_determinant(rng):
    arr = np.diag([2.0, -3.0, 0.5])
    a = lucid.tensor(arr, dtype=lucid.float64, requires_grad=True)
    sign, logabsdet = L.slogdet(a)
    assert sign.item() == -1.0 and sign.grad_fn is None
    assert logabsdet.item() == pytest.approx(math.log(3.0))
    assert L.slogdet(a).logabsdet is not None and L.det(a).item() == pytest.approx(-3.0)
    L.det(a).backward()
    assert_close(a.grad, -3.0 * np.linalg.inv(arr).T, rtol=1e-12, atol=1e-12)


def test_eigh_values_ascend_and_degenerate_eigenvalue_gradient_is_exact():
    a = lucid.tensor(np.diag([2.0, 1.0, 1.0]), dtype=lucid.float64, requires_grad=True)
    w, v = L.eigh(a)
    assert_close(w, [1.0, 1.0, 2.0], rtol=0, atol=1e-12)
    (w * lucid.tensor([1.0, 1.0, 3.0], dtype=lucid.float64)).sum().backward()
    # only the eigenvalues are used: no eigengap is divided by, the repeated pair is fine
    assert_close(a.grad, np.diag([3.0, 1.0, 1.0]), rtol=0, atol=1e-12)


def test_eigh_eigenvector_gradient_at_repeated_eigenvalues_is_not_finite():
    """Documented degenerate case: eigenvectors of a repeated eigenvalue are not unique, so
    their gradient divides by a zero eigengap (as in PyTorch)."""
    a = lucid.tensor(np.diag([2.0, 1.0, 1.0]), dtype=lucid.float64, requires_grad=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        (L.eigh(a).eigenvectors * lucid.tensor(np.arange(9.0).reshape(3, 3),
                                               dtype=lucid.float64)).sum().backward()
    assert not np.all(np.isfinite(to_numpy(a.grad)))


def test_gradients_of_cholesky_and_eigh_are_symmetric(rng):
    a = lucid.tensor(sample(rng, (2, 3, 3), "spd"), dtype=lucid.float64, requires_grad=True)
    weights = lucid.tensor(rng.standard_normal((2, 3, 3)), dtype=lucid.float64)
    (L.cholesky(a) * weights).sum().backward()
    g = to_numpy(a.grad)
    assert_close(g, np.swapaxes(g, -1, -2), rtol=1e-12, atol=1e-12)


def test_vector_norm_of_zero_has_zero_gradient():
    x = lucid.zeros(2, 3, dtype=lucid.float64, requires_grad=True)
    n = L.norm(x, dim=1)
    assert_close(n, [0.0, 0.0], rtol=0, atol=0)
    n.sum().backward()
    assert_close(x.grad, np.zeros((2, 3)), rtol=0, atol=0)


def test_gaussian_log_likelihood_matches_closed_form(rng):
    n = 4
    cov = sample(rng, (n, n), "spd")
    mean = rng.standard_normal(n)
    point = rng.standard_normal(n)
    sigma = lucid.tensor(cov, dtype=lucid.float64, requires_grad=True)
    mu = lucid.tensor(mean, dtype=lucid.float64, requires_grad=True)
    x = lucid.tensor(point, dtype=lucid.float64)

    chol = L.cholesky(sym(sigma))
    z = L.solve_triangular(chol, (x - mu).reshape(n, 1), upper=False)
    diag = chol[..., np.arange(n), np.arange(n)]
    loglik = -0.5 * (z * z).sum() - lucid.log(diag).sum() - 0.5 * n * math.log(2 * math.pi)
    loglik.backward()

    r = point - mean
    inv = np.linalg.inv(cov)
    expected = -0.5 * r @ inv @ r - 0.5 * np.linalg.slogdet(cov)[1] - 0.5 * n * math.log(2 * math.pi)
    assert loglik.item() == pytest.approx(expected, rel=1e-12)
    assert_close(mu.grad, inv @ r, rtol=1e-10, atol=1e-12)
    grad_sigma = 0.5 * (inv @ np.outer(r, r) @ inv - inv)          # symmetric closed form
    assert_close(sigma.grad, grad_sigma, rtol=1e-10, atol=1e-12)

    def loglik_of(s):
        c = L.cholesky(sym(s))
        w = L.solve_triangular(c, lucid.tensor(r.reshape(n, 1), dtype=lucid.float64), upper=False)
        return -0.5 * (w * w).sum() - lucid.log(c[..., np.arange(n), np.arange(n)]).sum()

    assert gradgradcheck(loglik_of, (lucid.tensor(cov, dtype=lucid.float64, requires_grad=True),))


# -- matmul's gradients laid out like transposed operands --------------------------------------

@pytest.mark.parametrize("transposed", ["left", "right", "both"])
def test_matmul_gradient_of_a_transposed_operand(transposed, rng):
    """x @ w.T (and w.T @ x): the gradient reaching w through the transpose is row-major, its
    values x^T g's; the second derivatives (gradgradcheck) and the gradient's own values
    (gradcheck) are those of the plain formula."""
    x0, w0 = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    x = lucid.tensor(x0, requires_grad=True)
    w = lucid.tensor(w0, requires_grad=True)

    def f(x, w):
        if transposed == "left":
            return w.transpose(0, 1).transpose(0, 1) @ x.transpose(0, 1)   # (4,3) @ (3,5)
        if transposed == "right":
            return x @ w.transpose(0, 1)                                   # (5,3) @ (3,4)
        return w.transpose(0, 1).transpose(0, 1) @ (x.transpose(0, 1) @ x) @ w.transpose(0, 1)

    g0 = rng.standard_normal(f(x, w).shape)
    (f(x, w) * lucid.tensor(g0)).sum().backward()
    if transposed == "right":
        np.testing.assert_allclose(w.grad.numpy(), g0.T @ x0, rtol=1e-12)
        np.testing.assert_allclose(x.grad.numpy(), g0 @ w0, rtol=1e-12)
    if transposed == "left":
        np.testing.assert_allclose(x.grad.numpy(), (w0.T @ g0).T, rtol=1e-12)
    for leaf in (x, w):
        assert leaf.grad.numpy().flags["C_CONTIGUOUS"]
    (gw,) = lucid.autograd.grad((f(x, w) ** 2).sum(), [w], create_graph=True)
    assert gw.detach().numpy().flags["C_CONTIGUOUS"]
    assert gradcheck(f, (x, w)) and gradgradcheck(f, (x, w))


# -- matmul's kernel choice (Note [Matmul kernels]): the same values and dtype as np.matmul --------

_W = np.arange(20.0).reshape(5, 4) / 7.0


@pytest.mark.parametrize("left,right", [
    ((3, 2, 5), (5, 4)),                                        # a stack against one matrix
    ((3, 2, 5), "broadcast"),                                   # stride-0 batch (vmap's copy of W)
    ((3, 2, 5), (1, 5, 4)),                                     # size-1 batch
    ((2, 3, 2, 5), (3, 5, 4)),                                  # a real batch: the plain kernel
    ((2, 3, 2, 5), (1, 1, 5, 4)),
    ((64, 128, 1), (64, 1, 128)),                               # outer products, einsum's size
    ((4, 8, 1), (4, 1, 8)),                                     # below it: matmul
    ((64, 128, 1), (1, 128)),
    ((0, 2, 5), (5, 4)), ((3, 0, 5), (5, 4)), ((3, 2, 0), (0, 4)),    # 0-size
    ((5,), (3, 5, 4)), ((3, 2, 5), (5,)),                       # vectors
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.bool_])
def test_matmul_values_and_dtype_equal_numpys(left, right, dtype, rng):
    a = (rng.standard_normal(left) * 3).astype(dtype)
    b = (np.broadcast_to(_W * 3, (3, 5, 4)) if right == "broadcast"
         else rng.standard_normal(right) * 3).astype(dtype)
    got = lucid.matmul(lucid.tensor(a), lucid.tensor(b)).numpy()
    expected = np.matmul(a, b)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_matmul_of_mixed_dtypes_promotes_like_the_other_ops(rng):
    """float32 with float64 computes in float64; float32 with an integer tensor stays float32
    (PyTorch's promotion, as a * b)."""
    a = rng.standard_normal((64, 128, 1)).astype(np.float32)
    for b in (rng.standard_normal((64, 1, 128)), np.ones((5, 1, 1), dtype=np.int64)[:1],
              rng.standard_normal((1, 4)), np.ones((1, 128), dtype=np.int32)):
        ta, tb = lucid.tensor(a), lucid.tensor(b)
        got = lucid.matmul(ta, tb).numpy()
        dt = np.dtype((ta[..., :1] * tb[..., :1, :1]).dtype.name)
        assert got.dtype == dt
        np.testing.assert_allclose(got, np.matmul(a.astype(dt), b.astype(dt)), rtol=1e-6)


@pytest.mark.parametrize("left,right", [((3, 2, 5), (4, 4)), ((3, 2, 1), (2, 4)),
                                        ((3, 2, 5), (2, 5, 4)), ((64, 128, 1), (3, 1, 128))])
def test_matmul_of_mismatched_shapes_raises_naming_both(left, right):
    a, b = lucid.ones(left, requires_grad=True), lucid.ones(right)
    with pytest.raises(RuntimeError) as info:
        lucid.matmul(a, b)
    assert_mentions_shapes(str(info.value), left, right)
    assert a.grad is None and a.grad_fn is None


def test_matmul_gradient_through_each_kernel(rng):
    """gradcheck over a stack against a broadcast weight and over outer products large enough to
    take einsum's kernel in the backward (x^T g of row vectors)."""
    w = lucid.tensor(rng.standard_normal((5, 4)), requires_grad=True)
    x = lucid.tensor(rng.standard_normal((3, 2, 5)), requires_grad=True)
    assert gradcheck(lambda x, w: x @ w.expand(3, 5, 4), (x, w))
    u = lucid.tensor(rng.standard_normal((2, 70, 1)), requires_grad=True)
    v = lucid.tensor(rng.standard_normal((2, 1, 70)), requires_grad=True)
    assert gradcheck(lambda u, v: u @ v, (u, v))
