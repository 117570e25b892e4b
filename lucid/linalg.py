"""lucid.linalg: linear algebra through NumPy's LAPACK, batched over leading dims, with
gradients, double backward and forward-mode tangents (see docs/design.md, Note [Linalg rules])."""
from ._core import linalg_norm as norm
from ._linalg import (
    linalg_solve as solve,
    linalg_solve_triangular as solve_triangular,
    linalg_inv as inv,
    linalg_det as det,
    linalg_slogdet as slogdet,
    linalg_cholesky as cholesky,
    linalg_eigh as eigh,
    linalg_qr as qr,
)

__all__ = ["solve", "solve_triangular", "inv", "det", "slogdet", "cholesky", "eigh", "qr", "norm"]
