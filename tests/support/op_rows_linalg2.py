"""Rows of the op table (tests/support/op_table.py) for the second half of lucid.linalg: svd,
svdvals, pinv, lstsq, matrix_exp, matrix_power, lu_factor, lu_solve, vector_norm, matrix_norm,
cross, multi_dot, cond.

SciPy and NumPy are the oracles. Singular vectors are compared as ``U * U`` and ``Vh * Vh``
(their signs are arbitrary); full_matrices rows keep U's first k columns (the others are not
determined by A). SVD-based rows are smooth only where the singular values are distinct and the
rank is full, LU rows only where the pivot order does not change: they take fresh leaves
(``fresh_inputs``) from ``WELL`` (Gaussian plus 4 on the diagonal) or ``ANY``. lu_solve is
checked twice: through lu_factor (the gradient reaches A through both), and on a leaf LU with
the identity pivots. Values are held to 1e-10 in float64 and 2e-4 in float32.
"""
import numpy as np
import scipy.linalg

import lucid
from .op_rows_linalg import sym, sym_np
from .op_spec import ANY, POS, SPD, WELL, Rows

L = lucid.linalg
ROWS = Rows(tol64=1e-10, tol32=2e-4, fresh_inputs=True)
row = ROWS.op


def per_matrix(f, *arrays):
    """f applied to each matrix of a batch (the arrays share their batch shape)."""
    batch = arrays[0].shape[:-2]
    if not batch:
        return f(*arrays)
    out = [f(*(a[i] for a in arrays)) for i in np.ndindex(*batch)]
    return np.stack(out).reshape(batch + out[0].shape)


def squared_factors(r):
    """(U * U, S, Vh * Vh) of an SVD r, over U's first k columns and Vh's first k rows (free of
    the singular vectors' signs)."""
    return (r[0][..., :, :r[1].shape[-1]] ** 2, r[1], r[2][..., :r[1].shape[-1], :] ** 2)


def _svd_np(a, full):
    return squared_factors(np.linalg.svd(a, full_matrices=full))


def _lu_np(a):
    return per_matrix(lambda m: scipy.linalg.lu_factor(m)[0], a)


def _unit_lower_upper(lu):
    n = lu.shape[-1]
    return np.tril(lu, -1) + np.eye(n), np.triu(lu)


def _lu_leaf_np(lu, b, adjoint):
    low, up = _unit_lower_upper(lu)
    a = low @ up
    return np.linalg.solve(np.swapaxes(a, -1, -2) if adjoint else a, b)


def _lstsq_np(a, b):
    vector = b.ndim == a.ndim - 1
    x = np.linalg.pinv(a) @ (b[..., None] if vector else b)
    return x[..., 0] if vector else x


def _multi_dot_np(*ts):
    return np.linalg.multi_dot(list(ts))


def _identity_pivots(n):
    return lucid.tensor(np.arange(1, n + 1, dtype=np.int32))


TALL_WIDE_SQUARE = (((4, 3),), ((3, 4),), ((2, 3, 3),))

# --- svd, svdvals ------------------------------------------------------------------------------
row("linalg.svd", lambda a: squared_factors(L.svd(a, full_matrices=False)),
    lambda a: _svd_np(a, False), TALL_WIDE_SQUARE + (((2, 2, 4),),), (WELL,), multi_output=True)
row("linalg.svd_full", lambda a: squared_factors(L.svd(a)), lambda a: _svd_np(a, True),
    TALL_WIDE_SQUARE, (WELL,), multi_output=True)
row("linalg.svdvals", lambda a: L.svdvals(a), lambda a: np.linalg.svd(a, compute_uv=False),
    TALL_WIDE_SQUARE, (ANY,))

# --- pinv, lstsq --------------------------------------------------------------------------------
row("linalg.pinv", lambda a: L.pinv(a), np.linalg.pinv, TALL_WIDE_SQUARE + (((2, 2, 3),),),
    (WELL,))
row("linalg.pinv_hermitian", lambda a: L.pinv(sym(a), hermitian=True),
    lambda a: np.linalg.pinv(sym_np(a), hermitian=True), (((3, 3),), ((2, 3, 3),)), (SPD,))
row("linalg.lstsq", lambda a, b: L.lstsq(a, b).solution, _lstsq_np,
    (((4, 3), (4, 2)), ((3, 4), (3, 2)), ((2, 4, 3), (2, 4, 2)), ((2, 4, 3), (1, 4, 1)),
     ((4, 3), (4,)), ((2, 4, 3), (2, 4))), (WELL, ANY))
row("linalg.lstsq_residuals", lambda a, b: L.lstsq(a, b, driver="gelsd").residuals,
    lambda a, b: np.sum((a @ _lstsq_np(a, b) - b) ** 2, axis=-2),
    (((4, 3), (4, 2)), ((2, 5, 3), (2, 5, 1))), (WELL, ANY))

# --- matrix_exp, matrix_power -----------------------------------------------------------------------
row("linalg.matrix_exp", lambda a: L.matrix_exp(a), scipy.linalg.expm,
    (((3, 3),), ((2, 3, 3),), ((1, 1),)), (ANY,))
row("matrix_exp_method", lambda a: a.matrix_exp(), scipy.linalg.expm, (((3, 3),),), (ANY,))
for _n in (0, 1, 3, -2):
    row(f"linalg.matrix_power[n={_n}]", (lambda n: lambda a: L.matrix_power(a, n))(_n),
        (lambda n: lambda a: np.linalg.matrix_power(a, n))(_n), (((3, 3),), ((2, 3, 3),)), (WELL,))
row("matrix_power_method", lambda a: a.matrix_power(2), lambda a: np.linalg.matrix_power(a, 2),
    (((3, 3),),), (WELL,))

# --- lu_factor, lu_solve --------------------------------------------------------------------------
row("linalg.lu_factor", lambda a: L.lu_factor(a).LU, _lu_np, (((3, 3),), ((2, 3, 3),)), (WELL,))
for _left in (True, False):
    for _adj in (False, True):
        _bshape = (3, 2) if _left else (2, 3)
        row(f"linalg.lu_solve[left={_left},adjoint={_adj}]",
            (lambda l, d: lambda a, b: L.lu_solve(*L.lu_factor(a), b, left=l, adjoint=d))(
                _left, _adj),
            (lambda l, d: lambda a, b: (lambda m: np.linalg.solve(m, b) if l else np.swapaxes(
                np.linalg.solve(np.swapaxes(m, -1, -2), np.swapaxes(b, -1, -2)), -1, -2))(
                np.swapaxes(a, -1, -2) if d else a))(_left, _adj),
            (((3, 3), _bshape), ((2, 3, 3), (2,) + _bshape), ((2, 3, 3), _bshape)), (WELL, ANY))
for _adj in (False, True):
    row(f"linalg.lu_solve_leaf_lu[adjoint={_adj}]",
        (lambda d: lambda lu, b: L.lu_solve(lu, _identity_pivots(lu.shape[-1]), b, adjoint=d))(
            _adj),
        (lambda d: lambda lu, b: _lu_leaf_np(lu, b, d))(_adj), (((3, 3), (3, 2)),), (WELL, ANY))

# --- vector_norm, matrix_norm, cond ------------------------------------------------------------------
row("linalg.vector_norm", lambda a: L.vector_norm(a), lambda a: np.linalg.norm(a.reshape(-1)),
    (((5,),), ((2, 3, 4),)), (ANY,))
row("linalg.vector_norm_ord3_dim", lambda a: L.vector_norm(a, 3, dim=1, keepdim=True),
    lambda a: np.sum(np.abs(a) ** 3, axis=1, keepdims=True) ** (1 / 3), (((3, 4),),), (ANY,))
row("linalg.vector_norm_inf_dims", lambda a: L.vector_norm(a, np.inf, dim=(0, 2)),
    lambda a: np.max(np.abs(a), axis=(0, 2)), (((3, 2, 4),),), (ANY,))
row("linalg.vector_norm_negative_ord", lambda a: L.vector_norm(a, -1.5, dim=-1),
    lambda a: np.sum(np.abs(a) ** -1.5, axis=-1) ** (-1 / 1.5), (((3, 4),),), (POS,))
row("linalg.matrix_norm", lambda a: L.matrix_norm(a), lambda a: np.linalg.norm(a, "fro", (-2, -1)),
    (((3, 4),), ((2, 3, 4),)), (ANY,))
row("linalg.matrix_norm_nuc", lambda a: L.matrix_norm(a, "nuc"),
    lambda a: np.linalg.norm(a, "nuc", (-2, -1)), (((3, 4),), ((2, 4, 3),)), (ANY,))
row("linalg.matrix_norm_ord1_dims", lambda a: L.matrix_norm(a, 1, dim=(0, 2), keepdim=True),
    lambda a: np.linalg.norm(a, 1, (0, 2), keepdims=True), (((3, 2, 4),),), (ANY,))
row("linalg.cond", lambda a: L.cond(a), lambda a: np.linalg.cond(a),
    (((3, 3),), ((4, 3),), ((2, 3, 4),)), (WELL,))
row("linalg.cond_fro", lambda a: L.cond(a, "fro"), lambda a: np.linalg.cond(a, "fro"),
    (((3, 3),), ((2, 3, 3),)), (WELL,))

# --- cross, multi_dot --------------------------------------------------------------------------------
row("linalg.cross", lambda a, b: L.cross(a, b),
    lambda a, b: np.cross(*np.broadcast_arrays(a, b)), (((4, 3), (4, 3)), ((2, 3), (1, 3)), ((3,), (3,))),
    (ANY, ANY))
row("linalg.cross_dim0", lambda a, b: L.cross(a, b, dim=0),
    lambda a, b: np.cross(a, b, axis=0), (((3, 2), (3, 2)),), (ANY, ANY))
row("linalg.multi_dot", lambda a, b, c: L.multi_dot([a, b, c]), _multi_dot_np,
    (((5,), (5, 2), (2, 6)), ((3, 5), (5, 2), (2,)), ((2, 3), (3, 4), (4, 2))), (ANY, ANY, ANY))
row("linalg.multi_dot_four", lambda a, b, c, d: L.multi_dot([a, b, c, d]), _multi_dot_np,
    (((5,), (5, 2), (2, 6), (6,)),), (ANY, ANY, ANY, ANY))
