"""Rows of the op table for lucid.linalg and mm/bmm/dot/outer (folded into op_table at merge).

Same layout as op_table.py (``OpSpec``: name, lucid callable, NumPy reference, input-shape
tuples, one domain per input). A callable may return a tuple (eigh, qr); the reference then
returns the matching tuple.

Extra domains (on top of op_table's "any" / "positive" / "nonzero"):
  * ``WELL``: a well-conditioned square matrix (or batch): Gaussian entries plus 4 I (4 on the
    main diagonal of a non-square one);
  * ``SPD``: a symmetric positive-definite matrix X X^T + n I, with distinct eigenvalues.

cholesky and eigh read A as symmetric, so their rows feed them ``sym(X) = (X + X^T) / 2``
(``Symmetrize``, a Function with a jvp, so the forward-mode check needs no other op's jvp) and
their references do the same; eigenvectors are compared as ``V * V`` (their signs are arbitrary).
Rows marked in ``FORWARD_AD_NEEDS`` compose other ops (matmul, permute, ...): their forward-mode
check needs those ops' jvp rules.
"""
import numpy as np

import lucid
from op_table import ANY, OpSpec
from op_table import sample as _base_sample

WELL, SPD = "well_conditioned", "spd"


def sample(rng, shape, domain):
    if domain == WELL:
        return rng.standard_normal(shape) + 4.0 * np.eye(shape[-2], shape[-1])
    if domain == SPD:
        x = rng.standard_normal(shape)
        return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])
    return _base_sample(rng, shape, domain)


class Symmetrize(lucid.autograd.Function):
    """(X + X^T) / 2 over the last two dims: backward and jvp are the same map."""

    @staticmethod
    def forward(ctx, x):
        return lucid.tensor(sym_np(x.detach().numpy()), dtype=x.dtype)

    @staticmethod
    def backward(ctx, g):
        return (g + g.transpose(-1, -2)) * 0.5

    @staticmethod
    def jvp(ctx, t):
        return (t + t.transpose(-1, -2)) * 0.5


def sym(x):
    return Symmetrize.apply(x)


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
ROWS = []
FORWARD_AD_NEEDS = {}     # row name -> the lucid ops whose jvp its forward-mode check relies on


def row(name, fn, ref, shapes, domains, fw_needs=()):
    ROWS.append(OpSpec(name, fn, ref, tuple(shapes), tuple(domains)))
    if fw_needs:
        FORWARD_AD_NEEDS[name] = tuple(fw_needs)


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
    lambda a: (lambda w, v: (w, v * v))(*np.linalg.eigh(sym_np(a))), SQ, (SPD,))
row("linalg.eigh_upper", lambda a: L.eigh(sym(a), UPLO="U").eigenvalues,
    lambda a: np.linalg.eigh(sym_np(a), "U")[0], SQ, (SPD,))
row("linalg.qr", lambda a: tuple(L.qr(a)), lambda a: tuple(np.linalg.qr(a)),
    SQ + (((4, 3),), ((2, 5, 3),)), (WELL,))
row("linalg.qr_complete_square", lambda a: tuple(L.qr(a, mode="complete")),
    lambda a: tuple(np.linalg.qr(a, mode="complete")), (((3, 3),),), (WELL,))

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
    (((5,),),), (ANY,), ("sum",))
row("linalg.norm_ord3_vector", lambda a: L.norm(a, 3), lambda a: np.linalg.norm(a, 3),
    (((5,),),), (ANY,), ("sum",))
row("linalg.norm_nuc", lambda a: L.norm(a, "nuc"), lambda a: np.linalg.norm(a, "nuc"),
    (((3, 4),), ((4, 3),), ((3, 3),)), (ANY,), ("matmul", "transpose", "permute", "sum", "sqrt",
                                                 "clamp"))
row("linalg.norm_2_matrix", lambda a: L.norm(a, 2, dim=(0, 2), keepdim=True),
    lambda a: np.linalg.norm(a, 2, axis=(0, 2), keepdims=True), (((3, 2, 4),),), (ANY,),
    ("matmul", "transpose", "permute", "getitem", "reshape", "sqrt", "clamp"))
row("linalg.norm_inf_matrix", lambda a: L.norm(a, np.inf), lambda a: np.linalg.norm(a, np.inf),
    (((3, 4),),), (ANY,), ("permute", "sum", "amax"))

# --- mm, bmm, dot, outer ------------------------------------------------------------------------
row("lucid.mm", lambda a, b: lucid.mm(a, b), np.matmul, (((2, 3), (3, 4)),), (ANY, ANY),
    ("matmul",))
row("mm_method", lambda a, b: a.mm(b), np.matmul, (((2, 3), (3, 4)),), (ANY, ANY), ("matmul",))
row("lucid.bmm", lambda a, b: lucid.bmm(a, b), np.matmul, (((2, 2, 3), (2, 3, 4)),), (ANY, ANY),
    ("matmul",))
row("bmm_method", lambda a, b: a.bmm(b), np.matmul, (((2, 2, 3), (2, 3, 4)),), (ANY, ANY),
    ("matmul",))
row("lucid.dot", lambda a, b: lucid.dot(a, b), np.dot, (((4,), (4,)),), (ANY, ANY), ("matmul",))
row("dot_method", lambda a, b: a.dot(b), np.dot, (((4,), (4,)),), (ANY, ANY), ("matmul",))
row("lucid.outer", lambda a, b: lucid.outer(a, b), np.outer, (((3,), (4,)),), (ANY, ANY),
    ("reshape",))
row("outer_method", lambda a, b: a.outer(b), np.outer, (((3,), (4,)),), (ANY, ANY), ("reshape",))
