"""Rows of the op table (tests/support/op_table.py) for lucid.linalg and mm/bmm/dot/outer.

Each row is an ``op_spec.OpSpec`` made by ``Rows.op``. Square inputs come from the ``WELL``
(well-conditioned) and ``SPD`` (symmetric positive-definite) domains of op_spec: a random program
feeds them fresh leaves only (``LEAF_DOMAINS``), since no intermediate value is known to be
either. eigh and qr return a tuple (``multi_output``); the reference returns the matching tuple.

cholesky and eigh read A as symmetric, so their rows feed them ``sym(X) = (X + X^T) / 2`` and
their references do the same: a finite difference that moves one entry of X stays on symmetric
matrices. Eigenvectors are compared as ``V * V`` (their signs are arbitrary). The matrix 2-norm,
nuclear norm and inf-norm are smooth only at generic points (distinct singular values, no ties
between row sums): they take fresh leaves (``fresh_inputs``). Values are held to 1e-10 in
float64 and 2e-4 in float32 (LAPACK's order of operations is not NumPy's).
"""
import numpy as np

import lucid
from .op_spec import ANY, SPD, WELL, Rows


def sym(x):
    """(X + X^T) / 2 over the last two dims."""
    return (x + x.transpose(-1, -2)) * 0.5


def sym_np(a):
    return (a + np.swapaxes(a, -1, -2)) * 0.5


def _tri_np(a, upper, unit):
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        idx = np.arange(a.shape[-1])
        t[..., idx, idx] = 1.0
    return t


def _solve_triangular_np(a, b, upper, left, unit):
    t = _tri_np(a, upper, unit)
    if left:
        return np.linalg.solve(t, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


def _solve_np(a, b):
    """NumPy's solve with PyTorch's reading of a vector right-hand side."""
    if b.ndim == 1 or b.shape == a.shape[:-1]:
        return np.linalg.solve(a, b[..., None])[..., 0]
    return np.linalg.solve(a, b)


def _singular_values_np(a):
    return np.linalg.svd(a, compute_uv=False)


L = lucid.linalg
SQ = (((3, 3),), ((2, 3, 3),))
ROWS = Rows(tol64=1e-10, tol32=2e-4)
row = ROWS.op
GENERIC_POINT = dict(fresh_inputs=True)


# --- solve, solve_triangular ---------------------------------------------------------------------
row("linalg.solve", lambda a, b: L.solve(a, b), _solve_np,
    (((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 2)), ((2, 3, 3), (3, 2)), ((3, 3), (2, 3, 1)),
     ((3, 3), (3,)), ((2, 3, 3), (2, 3)), ((2, 3, 3), (3,))), (WELL, ANY))
for _upper in (True, False):
    for _left in (True, False):
        for _unit in (False, True):
            _name = f"linalg.solve_triangular[upper={_upper},left={_left},unit={_unit}]"
            row(_name,
                (lambda u, l, d: lambda a, b: L.solve_triangular(
                    a, b, upper=u, left=l, unitriangular=d))(_upper, _left, _unit),
                (lambda u, l, d: lambda a, b: _solve_triangular_np(a, b, u, l, d))(
                    _upper, _left, _unit),
                (((3, 3), (3, 2) if _left else (2, 3)),
                 ((2, 3, 3), (2, 3, 2) if _left else (2, 2, 3)),
                 ((2, 3, 3), (3, 1) if _left else (1, 3))), (WELL, ANY))

# --- inv, det, slogdet ----------------------------------------------------------------------------
row("linalg.inv", lambda a: L.inv(a), np.linalg.inv, SQ + (((1, 1),),), (WELL,))
row("inverse_method", lambda a: a.inverse(), np.linalg.inv, SQ, (WELL,))
row("linalg.det", lambda a: L.det(a), np.linalg.det, SQ + (((2, 2, 2, 2),),), (WELL,))
row("det_method", lambda a: a.det(), np.linalg.det, SQ, (WELL,))
row("linalg.slogdet", lambda a: L.slogdet(a).logabsdet, lambda a: np.linalg.slogdet(a)[1], SQ,
    (WELL,))
row("slogdet_negative_det", lambda a: L.slogdet(-a).logabsdet,
    lambda a: np.linalg.slogdet(-a)[1], (((3, 3),),), (WELL,))
row("slogdet_method", lambda a: a.slogdet()[1], lambda a: np.linalg.slogdet(a)[1], SQ, (WELL,))

# --- cholesky, eigh, qr ---------------------------------------------------------------------------
row("linalg.cholesky", lambda a: L.cholesky(sym(a)), lambda a: np.linalg.cholesky(sym_np(a)),
    SQ, (SPD,))
row("linalg.cholesky_upper", lambda a: L.cholesky(sym(a), upper=True),
    lambda a: np.swapaxes(np.linalg.cholesky(sym_np(a)), -1, -2), SQ, (SPD,))
row("linalg.eigh", lambda a: (lambda r: (r.eigenvalues, r.eigenvectors * r.eigenvectors))(
        L.eigh(sym(a))),
    lambda a: (lambda w, v: (w, v * v))(*np.linalg.eigh(sym_np(a))), SQ, (SPD,), multi_output=True)
row("linalg.eigh_upper", lambda a: L.eigh(sym(a), UPLO="U").eigenvalues,
    lambda a: np.linalg.eigh(sym_np(a), "U")[0], SQ, (SPD,))
row("linalg.qr", lambda a: tuple(L.qr(a)), lambda a: tuple(np.linalg.qr(a)),
    SQ + (((4, 3),), ((2, 5, 3),)), (WELL,), multi_output=True)
row("linalg.qr_complete_square", lambda a: tuple(L.qr(a, mode="complete")),
    lambda a: tuple(np.linalg.qr(a, mode="complete")), (((3, 3),),), (WELL,), multi_output=True)

# --- norm ---------------------------------------------------------------------------------------
row("linalg.norm", lambda a: L.norm(a), lambda a: np.linalg.norm(a.reshape(-1)),
    (((5,),), ((3, 4),), ((2, 3, 4),)), (ANY,))
row("linalg.norm_dim", lambda a: L.norm(a, dim=1, keepdim=True),
    lambda a: np.linalg.norm(a, axis=1, keepdims=True), (((3, 4),), ((2, 3, 4),)), (ANY,))
row("linalg.norm_fro", lambda a: L.norm(a, "fro"), lambda a: np.linalg.norm(a, "fro"),
    (((3, 4),),), (ANY,))
row("linalg.norm_fro_dims", lambda a: L.norm(a, "fro", dim=(0, 2)),
    lambda a: np.linalg.norm(a, "fro", axis=(0, 2)), (((3, 2, 4),),), (ANY,))
row("linalg.norm_ord1_vector", lambda a: L.norm(a, 1), lambda a: np.linalg.norm(a, 1),
    (((5,),),), (ANY,))
row("linalg.norm_ord3_vector", lambda a: L.norm(a, 3), lambda a: np.linalg.norm(a, 3),
    (((5,),),), (ANY,))
# WELL, not ANY: the singular values come from eigh(A^T A), so in float32 a small one (a nearly
# singular matrix: a random program found s_min = 2.4e-3) loses most of its digits, and with it
# the gradient (a known limitation until singular values come from an SVD)
row("linalg.norm_nuc", lambda a: L.norm(a, "nuc"), lambda a: np.linalg.norm(a, "nuc"),
    (((3, 4),), ((4, 3),), ((3, 3),)), (WELL,), **GENERIC_POINT)
row("linalg.norm_2_matrix", lambda a: L.norm(a, 2, dim=(0, 2), keepdim=True),
    lambda a: np.linalg.norm(a, 2, axis=(0, 2), keepdims=True), (((3, 2, 4),),), (ANY,),
    **GENERIC_POINT)
row("linalg.norm_inf_matrix", lambda a: L.norm(a, np.inf), lambda a: np.linalg.norm(a, np.inf),
    (((3, 4),),), (ANY,), **GENERIC_POINT)

# --- mm, bmm, dot, outer ------------------------------------------------------------------------
row("lucid.mm", lambda a, b: lucid.mm(a, b), np.matmul, (((2, 3), (3, 4)),), (ANY, ANY))
row("mm_method", lambda a, b: a.mm(b), np.matmul, (((2, 3), (3, 4)),), (ANY, ANY))
row("lucid.bmm", lambda a, b: lucid.bmm(a, b), np.matmul, (((2, 2, 3), (2, 3, 4)),), (ANY, ANY))
row("bmm_method", lambda a, b: a.bmm(b), np.matmul, (((2, 2, 3), (2, 3, 4)),), (ANY, ANY))
row("lucid.dot", lambda a, b: lucid.dot(a, b), np.dot, (((4,), (4,)),), (ANY, ANY))
row("dot_method", lambda a, b: a.dot(b), np.dot, (((4,), (4,)),), (ANY, ANY))
row("lucid.outer", lambda a, b: lucid.outer(a, b), np.outer, (((3,), (4,)),), (ANY, ANY))
row("outer_method", lambda a, b: a.outer(b), np.outer, (((3,), (4,)),), (ANY, ANY))
