# Types of lucid's linear-algebra module (lucid/_linalg.pyx), as mypy and IDEs see them.
# Checked against the built module by `python -m mypy.stubtest lucid._linalg`
# (tests/api/test_typing.py). It also gives Tensor det, slogdet and inverse (typed in _core.pyi).
import builtins
from typing import Literal, NamedTuple

from lucid._core import Tensor

class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor

class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor

class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor

def einsum(equation: str, *operands: Tensor) -> Tensor: ...

# -- lucid.linalg wraps these
def linalg_solve(A: Tensor, B: Tensor) -> Tensor: ...
def linalg_solve_triangular(A: Tensor, B: Tensor, *, upper: builtins.bool, left: builtins.bool = True,
                            unitriangular: builtins.bool = False) -> Tensor: ...
def linalg_inv(A: Tensor) -> Tensor: ...
def linalg_det(A: Tensor) -> Tensor: ...
def linalg_slogdet(A: Tensor) -> SlogdetResult: ...
def linalg_cholesky(A: Tensor, upper: builtins.bool = False) -> Tensor: ...
def linalg_eigh(A: Tensor, UPLO: Literal["L", "U"] = "L") -> EighResult: ...
def linalg_qr(A: Tensor, mode: Literal["reduced", "complete", "r"] = "reduced") -> QRResult: ...
