"""lucid.linalg's svd, lstsq, pinv, matrix_exp, matrix_power, lu_factor, lu_solve, norms, cross,
multi_dot, cond, matrix_rank, eig: what the op table (tests/support/op_rows_linalg2.py) cannot
see. PyTorch's behaviour at repeated singular values, singular matrices and the result shapes of
each lstsq driver, the errors (type, message naming op and argument, nothing modified), dtypes.
torch is a test-only oracle."""
import numpy as np
import pytest
import scipy.linalg
try:
    import torch
except ImportError:          # the PyTorch comparisons say why they did not run
    torch = None

import lucid

L = lucid.linalg

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed; "
                                 "pip install torch==2.13.0 to compare with PyTorch")


def t64(a, grad=False):
    return lucid.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def unchanged(t, before):
    return np.array_equal(t.detach().numpy(), before)


@pytest.fixture
def rng():
    return np.random.default_rng(7)


# -- svd -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
@pytest.mark.parametrize("full", [True, False])
@needs_torch
def test_svd_reconstructs_and_has_torchs_shapes(rng, shape, full):
    a = rng.standard_normal(shape)
    u, s, vh = L.svd(t64(a), full_matrices=full)
    tu, ts, tvh = torch.linalg.svd(torch.tensor(a), full_matrices=full)
    assert (u.shape, s.shape, vh.shape) == (tuple(tu.shape), tuple(ts.shape), tuple(tvh.shape))
    k = min(shape[-2:])
    rebuilt = (u.numpy()[..., :, :k] * s.numpy()[..., None, :]) @ vh.numpy()[..., :k, :]
    np.testing.assert_allclose(rebuilt, a, atol=1e-12)
    np.testing.assert_allclose(s.numpy(), ts.numpy(), atol=1e-12)


@needs_torch
def test_svd_gradient_of_u_is_nonfinite_at_repeated_singular_values_as_in_torch():
    a = t64(np.eye(3), grad=True)
    u, s, vh = L.svd(a)
    (g,) = lucid.autograd.grad((u.sum() + vh.sum()), a)
    ta = torch.eye(3, dtype=torch.float64, requires_grad=True)
    tu, ts, tvh = torch.linalg.svd(ta)
    (tg,) = torch.autograd.grad(tu.sum() + tvh.sum(), ta)
    assert not np.isfinite(tg.numpy()).all()
    assert not np.isfinite(g.numpy()).all()


def test_svdvals_gradient_is_finite_at_repeated_singular_values():
    a = t64(np.eye(3), grad=True)
    (g,) = lucid.autograd.grad(L.svdvals(a).sum(), a)
    np.testing.assert_allclose(g.numpy(), np.eye(3), atol=1e-15)      # U Vh = I


def test_svd_and_svdvals_refuse_vectors_and_integers():
    with pytest.raises(RuntimeError, match=r"linalg\.svd: A must be a matrix"):
        L.svd(t64([1.0, 2.0]))
    with pytest.raises(RuntimeError, match=r"linalg\.svdvals: expected a floating point"):
        L.svdvals(lucid.tensor([[1, 2], [3, 4]]))


def test_svd_of_a_nan_matrix_is_nan():
    s = L.svdvals(t64([[np.nan, 1.0], [0.0, 1.0]]))
    assert np.isnan(s.numpy()).all()


# -- eig, eigvals --------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn,name", [(L.eig, "linalg.eig"), (L.eigvals, "linalg.eigvals")])
def test_eig_and_eigvals_say_complex_is_not_supported_yet(fn, name):
    with pytest.raises(NotImplementedError, match=rf"^{name}: complex dtypes are not supported yet"):
        fn(t64([[1.0, 2.0], [3.0, 4.0]]))
    with pytest.raises(RuntimeError, match=rf"{name}: A must be a square matrix"):
        fn(t64(np.ones((2, 3))))


# -- non-square, singular and bad arguments ------------------------------------------------------------

@pytest.mark.parametrize("call,name", [
    (lambda a: L.matrix_exp(a), "linalg.matrix_exp"),
    (lambda a: L.matrix_power(a, 2), "linalg.matrix_power"),
    (lambda a: L.lu_solve(a, lucid.tensor(np.array([1, 2], dtype=np.int32)), a), "linalg.lu_solve"),
])
def test_a_non_square_matrix_is_refused_naming_op_and_shape(call, name):
    a = t64(np.arange(6.0).reshape(2, 3), grad=True)
    before = a.detach().numpy().copy()
    with pytest.raises(RuntimeError, match=rf"{name}: A must be a square matrix.*\(2, 3\)"):
        call(a)
    assert unchanged(a, before) and a.grad is None


@pytest.mark.parametrize("shape", [(4, 3), (3, 4)])
@needs_torch
def test_lu_factor_of_a_rectangular_matrix_is_torchs_and_its_gradient_is_refused(rng, shape):
    a = rng.standard_normal(shape)
    lu, piv = L.lu_factor(t64(a))
    tlu, tpiv = torch.linalg.lu_factor(torch.tensor(a))
    np.testing.assert_allclose(lu.numpy(), tlu.numpy(), atol=1e-12)
    np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())
    x = t64(a, grad=True)
    with pytest.raises(RuntimeError, match=r"linalg\.lu_factor: the derivative is implemented "
                                           r"for square matrices"):
        L.lu_factor(x).LU.sum().backward()


@needs_torch
def test_lu_factor_pivots_are_torchs_1_based_int32_without_gradient(rng):
    a = rng.standard_normal((2, 4, 4))
    lu, piv = L.lu_factor(t64(a, grad=True))
    tlu, tpiv = torch.linalg.lu_factor(torch.tensor(a))
    assert piv.dtype == lucid.int32 and not piv.requires_grad and piv.grad_fn is None
    np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())
    np.testing.assert_allclose(lu.detach().numpy(), tlu.numpy(), atol=1e-12)
    np.testing.assert_allclose(lu.detach().numpy()[1], scipy.linalg.lu_factor(a[1])[0], atol=1e-12)


@needs_torch
def test_lu_factor_of_a_singular_matrix_raises_like_torch_and_lu_solve_does_not_check():
    a = t64(np.stack([np.eye(2), [[1.0, 2.0], [2.0, 4.0]]]))
    with pytest.raises(RuntimeError, match=r"linalg\.lu_factor: U\[2,2\] of the matrix A at batch "
                                           r"index \(1,\) is zero"):
        L.lu_factor(a)
    with pytest.raises(RuntimeError):       # torch refuses it too
        torch.linalg.lu_factor(torch.tensor(a.numpy()))
    lu = t64([[2.0, 1.0], [0.5, 0.0]])     # U[2,2] = 0: lu_solve divides by zero, as torch does
    piv = lucid.tensor(np.array([1, 2], dtype=np.int32))
    x = L.lu_solve(lu, piv, t64([[1.0], [1.0]]))
    tx = torch.linalg.lu_solve(torch.tensor(lu.numpy()), torch.tensor(piv.numpy()),
                               torch.tensor([[1.0], [1.0]], dtype=torch.float64))
    assert not np.isfinite(x.numpy()).all() and not np.isfinite(tx.numpy()).all()


def test_lu_solve_refuses_bad_pivots_and_shapes():
    lu = t64(np.eye(3))
    b = t64(np.ones((3, 2)))
    with pytest.raises(RuntimeError, match=r"linalg\.lu_solve: pivots must be an int32 tensor"):
        L.lu_solve(lu, lucid.tensor([1, 2, 3]), b)
    with pytest.raises(RuntimeError, match=r"linalg\.lu_solve: pivots must be in \[1, 3\]"):
        L.lu_solve(lu, lucid.tensor(np.array([0, 2, 3], dtype=np.int32)), b)
    with pytest.raises(RuntimeError, match=r"linalg\.lu_solve: LU of shape \(3, 3\) and B of shape"):
        L.lu_solve(lu, lucid.tensor(np.array([1, 2, 3], dtype=np.int32)), t64(np.ones((2, 2))))
    with pytest.raises(RuntimeError, match=r"linalg\.lu_factor: LU without pivoting"):
        L.lu_factor(lu, pivot=False)


# -- matrix_exp, matrix_power --------------------------------------------------------------------------

def test_matrix_exp_matches_scipy_at_large_norm_and_gives_nan_for_nan(rng):
    a = 20 * rng.standard_normal((3, 3))
    np.testing.assert_allclose(L.matrix_exp(t64(a)).numpy(), scipy.linalg.expm(a), rtol=1e-9)
    out = L.matrix_exp(t64([[[np.nan, 0.0], [0.0, 1.0]], [[0.0, 0.0], [0.0, 0.0]]])).numpy()
    assert np.isnan(out[0]).all()
    np.testing.assert_array_equal(out[1], np.eye(2))


@needs_torch
def test_matrix_exp_gradient_is_exact_against_torch(rng):
    a, g = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    x = t64(a, grad=True)
    (lg,) = lucid.autograd.grad(L.matrix_exp(x), x, t64(g))
    tx = torch.tensor(a, requires_grad=True)
    (tg,) = torch.autograd.grad(torch.linalg.matrix_exp(tx), tx, torch.tensor(g))
    np.testing.assert_allclose(lg.numpy(), tg.numpy(), rtol=1e-12, atol=1e-12)


def test_matrix_power_zero_is_the_identity_with_a_zero_gradient():
    x = t64(np.full((2, 2), np.inf), grad=True)
    out = L.matrix_power(x, 0)
    np.testing.assert_array_equal(out.detach().numpy(), np.eye(2))
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 2)))


def test_matrix_power_keeps_integers_and_refuses_what_torch_refuses():
    m = lucid.tensor([[1, 1], [1, 0]])
    out = L.matrix_power(m, 10)
    assert out.dtype == lucid.int64 and out.numpy()[0, 1] == 55
    assert m.matrix_power(3).numpy().tolist() == [[3, 2], [2, 1]]
    with pytest.raises(RuntimeError, match=r"linalg\.matrix_power: a negative n needs a floating"):
        L.matrix_power(m, -1)
    with pytest.raises(TypeError, match=r"linalg\.matrix_power: n must be an int"):
        L.matrix_power(m, 1.5)
    singular = t64([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(RuntimeError, match=r"linalg\.matrix_power: the matrix A is singular"):
        L.matrix_power(singular, -2)


# -- lstsq, pinv ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("shapes", [((4, 3), (4, 2)), ((2, 3, 5), (2, 3, 2)), ((3, 3), (3, 1)),
                                    ((2, 4, 3), (2, 4))])
@needs_torch
def test_lstsq_results_have_torchs_shapes_dtypes_and_values(rng, driver, shapes):
    a, b = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[1])
    got = L.lstsq(t64(a), t64(b), driver=driver)
    want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    for g, w in zip(got, want):
        assert g.shape == tuple(w.shape)
        np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-10)
    assert got.rank.dtype == lucid.int64


def test_lstsq_of_a_rank_deficient_matrix_is_the_minimum_norm_solution(rng):
    a = rng.standard_normal((5, 2)) @ rng.standard_normal((2, 4))
    b = rng.standard_normal((5, 3))
    got = L.lstsq(t64(a), t64(b), driver="gelsd")
    want = np.linalg.lstsq(a, b, rcond=None)
    np.testing.assert_allclose(got.solution.numpy(), want[0], atol=1e-10)
    assert int(got.rank.numpy()) == want[2] == 2
    assert got.residuals.shape == (0,)          # not full rank: no residuals, as in torch


def test_lstsq_and_pinv_refuse_bad_arguments():
    a = t64(np.ones((3, 2)), grad=True)
    with pytest.raises(RuntimeError, match=r"linalg\.lstsq: driver must be one of"):
        L.lstsq(a, t64(np.ones((3, 1))), driver="gelsx")
    with pytest.raises(RuntimeError, match=r"linalg\.lstsq: A of shape \(3, 2\) and B of shape"):
        L.lstsq(a, t64(np.ones((2, 1))))
    with pytest.raises(RuntimeError, match=r"A of shape \(2, 3, 2\) and B of shape \(3,\)"):
        L.lstsq(t64(np.ones((2, 3, 2))), t64(np.ones(3)))   # 1-D B, two dims fewer than A
    with pytest.raises(RuntimeError, match=r"linalg\.pinv: hermitian=True needs square"):
        L.pinv(a, hermitian=True)
    with pytest.raises(TypeError, match=r"linalg\.pinv: atol must be a number or a tensor"):
        L.pinv(a, atol="small")
    assert a.grad is None


@needs_torch
def test_pinv_tolerances_are_torchs(rng):
    a = np.diag([3.0, 1.0, 1e-3])
    for kw in ({}, {"atol": 0.01}, {"rtol": 0.5}, {"atol": 0.5, "rtol": 0.1}):
        np.testing.assert_allclose(L.pinv(t64(a), **kw).numpy(),
                                   torch.linalg.pinv(torch.tensor(a), **kw).numpy(), atol=1e-12)


# -- matrix_rank, cond ------------------------------------------------------------------------------------

@needs_torch
def test_matrix_rank_is_torchs_int64(rng):
    a = rng.standard_normal((2, 4, 2)) @ rng.standard_normal((2, 2, 5))
    sym = a @ np.swapaxes(a, -1, -2)
    cases = [({}, a), ({"atol": 1.0}, a), ({"rtol": 0.3}, a), ({"hermitian": True}, sym),
             ({"tol": 2.0}, a)]
    for kw, m in cases:
        got = L.matrix_rank(t64(m), **kw)
        assert got.dtype == lucid.int64 and not got.requires_grad
        np.testing.assert_array_equal(got.numpy(), torch.linalg.matrix_rank(torch.tensor(m), **kw).numpy())
    assert int(L.matrix_rank(t64(np.zeros((3, 3)))).numpy()) == 0


@needs_torch
def test_cond_at_singular_and_zero_matrices_is_torchs():
    zero, singular = np.zeros((2, 2)), np.array([[1.0, 2.0], [2.0, 4.0]])
    for p in (None, "fro", 1, np.inf):
        for m in (zero, singular):
            got = L.cond(t64(m), p).numpy()
            want = torch.linalg.cond(torch.tensor(m), p).numpy()
            np.testing.assert_equal(np.isnan(got), np.isnan(want))
            if not np.isnan(want):
                assert got == pytest.approx(want, rel=1e-6) or (np.isinf(got) and np.isinf(want))
    with pytest.raises(RuntimeError, match=r"linalg\.cond\(p='fro'\): A must be a square"):
        L.cond(t64(np.ones((2, 3))), "fro")
    with pytest.raises(RuntimeError, match=r"linalg\.cond: p must be"):
        L.cond(t64(np.eye(2)), 3)


# -- norms, cross, multi_dot ------------------------------------------------------------------------------

@needs_torch
def test_vector_norm_orders_and_shapes_are_torchs(rng):
    x = rng.standard_normal((2, 3, 4))
    x[0, 0, 0] = 0.0
    for ord in (2, 1, 0, 3.5, -1, np.inf, -np.inf):
        for dim, keepdim in ((None, False), (None, True), (1, False), ((0, 2), True)):
            with np.errstate(divide="ignore"):     # lucid's pow warns at 0 ** -1, as NumPy
                got = L.vector_norm(t64(x), ord, dim, keepdim)
            want = torch.linalg.vector_norm(torch.tensor(x), ord, dim, keepdim)
            assert got.shape == tuple(want.shape)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    assert L.vector_norm(t64(x), dtype=lucid.float32).dtype == lucid.float32


def test_vector_and_matrix_norm_refuse_bad_arguments():
    with pytest.raises(RuntimeError, match=r"linalg\.vector_norm: expected a floating point"):
        L.vector_norm(lucid.tensor([1, 2]))
    with pytest.raises(RuntimeError, match=r"linalg\.vector_norm: ord must be a number"):
        L.vector_norm(t64([1.0]), "fro")
    with pytest.raises(RuntimeError, match=r"linalg\.matrix_norm: A must have at least 2 dims"):
        L.matrix_norm(t64([1.0, 2.0]))
    with pytest.raises(RuntimeError, match=r"linalg\.matrix_norm: dim must be a pair"):
        L.matrix_norm(t64(np.ones((2, 2, 2))), dim=(0, 1, 2))
    with pytest.raises(RuntimeError, match=r"linalg\.matrix_norm: ord must be"):
        L.matrix_norm(t64(np.ones((2, 2))), "spectral")
    with pytest.raises(RuntimeError, match=r"linalg\.matrix_norm: ord must be"):
        L.matrix_norm(t64(np.ones((2, 2))), 1.5)
    with pytest.raises(IndexError, match=r"linalg\.vector_norm: Dimension out of range"):
        L.vector_norm(t64(np.ones((2, 2))), dim=2)


@needs_torch
def test_matrix_norm_matches_torch(rng):
    a = rng.standard_normal((2, 3, 4))
    for ord in ("fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf):
        np.testing.assert_allclose(L.matrix_norm(t64(a), ord).numpy(),
                                   torch.linalg.matrix_norm(torch.tensor(a), ord).numpy(), rtol=1e-10)


def test_cross_refuses_what_torch_refuses():
    a = t64(np.ones((2, 3)), grad=True)
    with pytest.raises(RuntimeError, match=r"linalg\.cross: input and other must have size 3"):
        L.cross(a, a, dim=0)
    with pytest.raises(IndexError, match=r"linalg\.cross: Dimension out of range"):
        L.cross(a, a, dim=2)
    with pytest.raises(RuntimeError, match=r"linalg\.cross: input and other must have the same "
                                           r"number of dims"):
        L.cross(a, t64([1.0, 2.0, 3.0]))
    assert a.grad is None


def test_multi_dot_refuses_what_torch_refuses_and_keeps_the_value(rng):
    a, b, c = rng.standard_normal((10, 2)), rng.standard_normal((2, 10)), rng.standard_normal((10, 3))
    np.testing.assert_allclose(L.multi_dot([t64(a), t64(b), t64(c)]).numpy(), a @ b @ c, atol=1e-12)
    with pytest.raises(RuntimeError, match=r"linalg\.multi_dot: expected at least 2 tensors"):
        L.multi_dot([t64(a)])
    with pytest.raises(RuntimeError, match=r"linalg\.multi_dot: tensor 1 must be 2-D"):
        L.multi_dot([t64(a), t64(np.ones((2, 2, 2))), t64(c)])
    with pytest.raises(RuntimeError, match=r"linalg\.multi_dot: tensors 0 and 1 cannot be multiplied"):
        L.multi_dot([t64(a), t64(c)])
    with pytest.raises(TypeError, match=r"linalg\.multi_dot: tensors must be a list"):
        L.multi_dot(t64(a))
