"""The vmap table: sample calls of every registered op (tests/ops/test_vmap_table.py runs them).

``CALLS`` holds the calls that vmap must batch; ``REFUSED`` the ops that cannot run under vmap
(a data-dependent result shape or a Python value, as in PyTorch) with the error expected;
``PYTHON_VALUES`` the ops that answer with a Python value the batch does not change.
"""
import math

import lucid
from .vmap_samples import NZ, P, Q, U, Z, Call, Distinct, Idx, Mask, Spd, T, Upper, Well

CALLS = []


def add(name, *calls_args, **common):
    """A Call of name per entry of calls_args ((args tuple, kwargs dict) or an args tuple)."""
    for entry in calls_args:
        args, kwargs = entry if isinstance(entry, list) else (entry, {})
        CALLS.append(Call(name, *args, **{**common, **kwargs}))


def kw(*args, **kwargs):
    return [args, kwargs]


# -- pointwise ----------------------------------------------------------------------------------
_UNARY = {
    T: ("neg exp tanh relu abs sin cos sigmoid clone expm1 square tan atan sinh cosh erf sign "
        "floor ceil trunc round silu gelu softplus leaky_relu elu exp2 sinc frac erfc nan_to_num "
        "isnan isinf isfinite logical_not"),
    P: "log sqrt rsqrt log1p log2 log10 lgamma digamma",
    NZ: "reciprocal",
    U: "asin acos erfinv",
}
for leaf, names in _UNARY.items():
    for name in names.split():
        add(name, (leaf(),), (leaf(2, 3),))
add("round", kw(T(2, 3), decimals=1))
add("gelu", kw(T(2, 3), approximate="tanh"))
add("softplus", kw(T(2, 3), beta=2, threshold=1))
add("leaky_relu", kw(T(2, 3), negative_slope=0.2))
add("elu", kw(T(2, 3), alpha=0.5))
add("nan_to_num", kw(T(2, 3), nan=1.0, posinf=2.0, neginf=-2.0))
add("clamp", kw(T(2, 3), min=-0.5, max=0.5), kw(T(), -0.2), kw(T(2, 3), max=0.1))
add("clamp_min", (T(2, 3), -0.2), (T(2, 3), T(3)))
add("clamp_max", (T(2, 3), 0.3), (T(), T(2)))
add("polygamma", (1, P(2, 3)), (2, P()))

_BINARY = {
    (T, T): ("add sub mul maximum minimum atan2 logaddexp logaddexp2 hypot copysign lt le eq ne "
             "gt ge logical_and logical_or logical_xor isclose"),
    (T, NZ): "div fmod remainder",
    (P, T): "pow",
    (T, P): "xlogy",
}
for (left, right), names in _BINARY.items():
    for name in names.split():
        add(name, (left(2, 3), right(3)), (left(), right(2)), (left(3, 1), right(2, 1, 4)))
    for name in names.split()[:3]:
        add(name, (left(2, 3), 2.0))
add("add", kw(T(2, 3), T(2, 3), alpha=2))
add("sub", kw(T(3), T(2, 3), alpha=0.5))
add("where", (Mask(2, 3), T(2, 3), T(3)), (Mask(3), T(), T(2, 1)), (Mask(2, 3), T(2, 3), 0.5))
add("masked_fill", (T(2, 3), Mask(2, 3), 0.5), (T(2, 3), Mask(3), -1.0), (T(), Mask(), 2.0),
    (T(2, 3), Mask(2, 3), T()))
add("isclose", kw(T(2, 3), T(2, 3), rtol=0.5, atol=0.5))

# -- complex numbers' parts, and complex arithmetic ----------------------------------------------
for name in "conj conj_physical real imag angle abs view_as_real".split():
    add(name, (Z(),), (Z(2, 3),))
for name in "conj conj_physical real angle".split():
    add(name, (T(2, 3),))
add("view_as_complex", (T(2),), (T(3, 2),))
add("complex", (T(2, 3), T(3)), (T(), T(2)))
add("polar", (P(2, 3), T(3)), (P(), T(2)))
for name in ("mul", "div"):
    add(name, (Z(2, 3), Z(3)), (T(2, 3), Z(3)), (Z(), 2.0), (Z(2), 1j))
for name in ("exp log log1p expm1 sqrt rsqrt reciprocal square sin cos tan sinh cosh tanh asin "
             "acos atan sigmoid").split():
    add(name, (Z(2, 3),))
add("pow", (Z(2, 3), Z(3)), (Z(2, 3), 2.0), (P(3), Z(2, 3)))
add("where", (Mask(2, 3), Z(2, 3), T(3)))
for name in ("isnan", "isinf", "isfinite"):
    add(name, (Z(2, 3),))
add("isclose", (Z(2, 3), Z(3)))
for name in ("var", "std", "var_mean", "std_mean"):
    add(name, (Z(2, 3),), kw(Z(2, 3), dim=1, correction=0))
add("prod", (Z(2, 3),), kw(Z(2, 3), dim=1))
add("cumprod", (Z(2, 3), 1))
add("sum", (Z(2, 3),), kw(Z(2, 3), dim=1))
add("mean", kw(Z(2, 3), dim=0, keepdim=True))
add("cumsum", (Z(2, 3), 1))
add("matmul", (Z(2, 3), Z(3, 2)), (T(2, 3), Z(3)))
add("einsum", ("ij,jk->ik", Z(2, 3), Z(3, 2)))

# -- reductions ---------------------------------------------------------------------------------
_TUPLE_DIMS = "sum mean amax amin prod nansum nanmean logsumexp var std norm"
for name in ("sum mean amax amin prod nansum nanmean var std argmax argmin all any median "
             "nanmedian max min").split():
    add(name, (T(2, 3, 4),), (T(),), kw(T(2, 3, 4), dim=1), kw(T(2, 3, 4), -1, keepdim=True),
        kw(T(), dim=0), kw(T(), dim=-1, keepdim=True), kw(T(4), 0))
for name in _TUPLE_DIMS.split():
    if name != "norm":
        add(name, kw(T(2, 3, 4), dim=(0, 2)), kw(T(2, 3, 4), dim=(-1, 1), keepdim=True))
add("logsumexp", (T(2, 3), 1), kw(T(2, 3), -1, keepdim=True), (T(), 0))
for name in ("var", "std", "var_mean", "std_mean"):
    add(name, kw(T(2, 3, 4), 1, correction=0), kw(T(2, 3, 4), (0, 2), unbiased=False),
        kw(T(2, 3, 4), keepdim=True, dim=-1, correction=2))
for name in ("var_mean", "std_mean"):
    add(name, (T(2, 3),), kw(T(2, 3), dim=(0, 1), keepdim=True), kw(T(), dim=0))
add("aminmax", (T(2, 3),), (T(),), kw(T(2, 3), dim=1), kw(T(2, 3, 4), dim=-1, keepdim=True),
    kw(T(), dim=0))
add("prod", kw(T(2, 3), 1, dtype=lucid.float64))
add("norm", (T(2, 3),), (T(),), kw(T(2, 3, 4), 1, dim=1), kw(T(2, 3), math.inf, -1, True),
    kw(T(2, 3, 4), 3, dim=(0, 2)), kw(T(2, 3), "fro", dim=(0, 1), keepdim=True),
    kw(T(2, 3), p=0.5))
for name in ("quantile", "nanquantile"):
    add(name, (T(2, 3), 0.3), kw(T(2, 3), 0.7, dim=1, keepdim=True), kw(T(2, 3, 4), Q(2), dim=-1),
        kw(T(2, 3), Q(3), dim=0, keepdim=True), kw(T(2, 3), Q(2), keepdim=True),
        kw(T(5), 0.4, interpolation="nearest"), kw(T(2, 3), 0.5, -1, interpolation="midpoint"),
        (T(), 0.5), kw(T(), 0.2, dim=0, keepdim=True))
add("linalg.vector_norm", (T(2, 3),), (T(),), kw(T(2, 3, 4), 3, dim=1),
    kw(T(2, 3), math.inf, -1, keepdim=True), kw(T(2, 3, 4), 0.5, dim=(0, 2)),
    kw(T(2, 3), ord=1), kw(T(2, 3), -math.inf, dim=0), kw(T(), 2, dim=0))
add("linalg.norm", (T(2, 3),), (T(4),), kw(T(2, 3), 2, dim=1), kw(T(2, 3), 1, -1, True),
    kw(T(2, 3), "fro"), kw(T(3, 3), "nuc"), kw(T(2, 3, 4), math.inf, dim=(0, 1)),
    kw(T(4), 3), kw(T(2, 3), -2, dim=(0, 1)), kw(T(2, 3, 4), dim=2, keepdim=True))
add("linalg.matrix_norm", (T(2, 3),), kw(T(3, 3), ord=1), kw(T(2, 3, 4), "nuc"),
    kw(T(2, 3, 4), 2, dim=(0, 2)), kw(T(3, 4), -math.inf, keepdim=True),
    kw(T(2, 3, 4), math.inf, dim=(-1, 0), keepdim=True))

# -- ops along dims -----------------------------------------------------------------------------
add("transpose", (T(2, 3), 0, 1), (T(2, 3, 4), -1, 0), (T(), 0, -1))
add("squeeze", (T(2, 1, 3),), (T(2, 1, 3), 1), (T(2, 1, 1), -2), kw(T(1, 3, 1), dim=(0, 2)),
    (T(),), (T(), 0))
add("unsqueeze", (T(2, 3), 0), (T(2, 3), -1), (T(), 0), (T(), -1), (T(2, 3), 1))
add("flatten", (T(2, 3, 4),), kw(T(2, 3, 4), start_dim=1), kw(T(2, 3, 4), 0, -2), (T(),))
add("narrow", (T(2, 3), 1, 0, 2), (T(2, 3, 4), -1, 1, 2))
add("split", (T(2, 3), 2, 1), kw(T(2, 3), [1, 2], dim=-1), (T(4, 2), 3))
add("chunk", (T(2, 3), 2, 1), kw(T(4, 3), 3), kw(T(2, 5), 2, dim=-1))
add("unbind", (T(2, 3),), (T(2, 3), 1), (T(2, 3, 4), -1))
add("diagonal", (T(3, 3),), kw(T(3, 4), offset=1), kw(T(2, 3, 4), 0, 1, 2),
    kw(T(2, 3, 4), offset=-1, dim1=-1, dim2=0))
add("flip", (T(2, 3), (0,)), (T(2, 3, 4), (1, -1)), (T(2, 3), [0, 1]))
add("roll", (T(2, 3), 1), (T(2, 3), 1, 1), (T(2, 3, 4), (1, 2), (0, -1)), (T(2, 3), -2, -1))
add("movedim", (T(2, 3, 4), 0, -1), (T(2, 3, 4), (0, 1), (2, 0)), (T(2, 3), -1, 0))
add("select", (T(2, 3), 1, 0), (T(2, 3, 4), -1, 2), (T(3), 0, -1))
add("t", (T(2, 3),), (T(3),), (T(),))
add("swapaxes", (T(2, 3), 0, 1), (T(2, 3, 4), -1, 0))
add("swapdims", (T(2, 3), 1, 0), (T(2, 3, 4), 0, -2))
add("unflatten", (T(2, 6), 1, (3, 2)), (T(6), 0, (2, -1)), (T(6, 2), -2, (3, 2)))
add("split_with_sizes", (T(2, 3), [1, 2], 1), kw(T(4, 2), [3, 1]), kw(T(2, 5), [2, 3], dim=-1))
for name in ("cumsum", "cumprod", "softmax", "log_softmax", "cummax", "cummin", "logcumsumexp"):
    add(name, (T(2, 3), 1), (T(2, 3), -1), (T(2, 3, 4), 0), (T(), 0), (T(), -1))
add("cumsum", kw(T(2, 3), 0, dtype=lucid.float64))
add("softmax", kw(T(2, 3), 1, dtype=lucid.float64))
for name in ("sort", "argsort"):
    add(name, (T(2, 3),), kw(T(2, 3), 0, descending=True), kw(T(2, 3, 4), dim=-2, stable=True),
        (T(4),), (T(), 0))
add("topk", (T(2, 3), 2), kw(T(2, 3), 2, dim=0, largest=False), kw(T(4), 3, sorted=True),
    kw(T(2, 3, 4), 1, -2), (T(), 1))
add("kthvalue", (T(2, 3), 2), kw(T(2, 3), 1, dim=0, keepdim=True), (T(4), 3),
    kw(T(2, 3, 4), 2, -2), (T(), 1))
add("linalg.cross", (T(2, 3), T(2, 3)), kw(T(3, 4), T(3, 4), dim=0), (T(2, 3), T(1, 3)),
    kw(T(3, 2), T(3, 1), dim=-2))

# -- shapes ------------------------------------------------------------------------------------
add("reshape", (T(2, 3), (6,)), (T(2, 3), (3, -1)), (T(), (1,)), (T(1), ()))
add("view", (T(2, 3), (6,)), (T(2, 3), (3, -1)), (T(), (1, 1)))
add("expand", (T(3, 1), (2, 3, 4)), (T(3), (2, -1)), (T(), (2,)))
add("broadcast_to", (T(3, 1), (2, 3, 4)), (T(3), (2, 3)), (T(), (2, 2)))
add("permute", (T(2, 3, 4), (2, 0, 1)), (T(2, 3), (-1, 0)), (T(), ()))
add("tile", (T(2, 3), (2, 1)), (T(3), (2, 2)), (T(2, 3), (2,)), (T(), (3,)))
add("as_strided", (T(3, 4), (2, 2), (1, 2)), (T(3, 4), (2,), (3,), 1), (T(5), (2, 2), (1, 1)))

# -- sequences of tensors -----------------------------------------------------------------------
add("cat", ([T(2, 3), T(1, 3)],), ([T(2, 3), T(2, 2)], -1), kw([T(2), T(3), T(1)], dim=0))
add("stack", ([T(2, 3), T(2, 3)],), ([T(2, 3), T(2, 3)], -1), ([T(), T(), T()],),
    kw([T(3), T(3)], dim=1))
add("broadcast_tensors", (T(2, 3), T(3)), (T(), T(2, 1), T(3)), ([T(2, 3), T(3)],),
    (T(4),))
add("meshgrid", kw(T(3), T(4), indexing="ij"), kw(T(3), T(4), indexing="xy"),
    kw([T(2), T(3), T(2)], indexing="xy"),
    kw([T(3), T(2)], indexing="ij"), kw(T(), T(3), indexing="ij"))
add("linalg.multi_dot", ([T(2, 3), T(3, 4), T(4)],), ([T(3), T(3, 4), T(4, 2)],),
    ([T(2, 3), T(3, 2)],))

# -- matrices -----------------------------------------------------------------------------------
add("matmul", (T(2, 3), T(3, 4)), (T(3), T(3, 4)), (T(2, 3), T(3)), (T(3), T(3)),
    (T(2, 2, 3), T(3, 4)), (T(3), T(2, 3, 2)))
add("mm", (T(2, 3), T(3, 4)))
add("bmm", (T(2, 2, 3), T(2, 3, 4)))
add("dot", (T(3), T(3)))
add("outer", (T(3), T(4)))
for name in ("tril", "triu"):
    add(name, (T(3, 4),), kw(T(3, 4), diagonal=1), (T(2, 3, 3), -1))
add("linalg.solve", (Well(3), T(3, 2)), (Well(3), T(3)), (Well(3, 2), T(2, 3)), (Well(3, 2), T(3)),
    (Well(2, 2), T(2, 2, 1)))
add("linalg.solve_triangular", kw(Upper(3), T(3, 2), upper=True),
    kw(Upper(3), T(2, 3), upper=True, left=False), kw(Upper(3), T(3, 2), upper=True,
                                                       unitriangular=True))
for name in ("linalg.inv", "linalg.det", "linalg.slogdet", "linalg.matrix_exp"):
    add(name, (Well(3),), (Well(2, 2),))
add("linalg.cholesky", (Spd(3),), kw(Spd(3), upper=True))
add("linalg.eigh", (Spd(3),), kw(Spd(3), UPLO="U"))
add("linalg.qr", (T(4, 3),), kw(T(3, 4), mode="complete"), kw(T(4, 3), mode="r"))
add("linalg.svd", (T(3, 4),), kw(T(4, 3), full_matrices=False))
add("linalg.svdvals", (T(3, 4),), (T(2, 2, 3),))
add("linalg.matrix_rank", (T(3, 4),), kw(Spd(3), hermitian=True), kw(T(3, 3), atol=0.5))
add("linalg.cond", (Well(3),), kw(Well(3), p="fro"), kw(Well(3), p=1), (T(3, 4),))
add("linalg.lu_factor", (Well(3),), (Well(2, 2),))
CALLS.append(Call("linalg.lu_solve", Well(3), T(3, 2), label="lu_solve(lu_factor(A), B)",
                  fn=lambda a, b, **k: lucid.linalg.lu_solve(*lucid.linalg.lu_factor(a), b, **k)))
CALLS.append(Call("linalg.lu_solve", Well(3), T(2, 3), label="lu_solve(lu_factor(A), B)",
                  fn=lambda a, b, **k: lucid.linalg.lu_solve(*lucid.linalg.lu_factor(a), b, **k),
                  left=False))
add("linalg.pinv", (T(3, 4),), kw(Spd(3), hermitian=True), kw(T(4, 3), rtol=0.1))
add("linalg.lstsq", (T(4, 3), T(4, 2)), (T(4, 3), T(4)), (Well(3), T(3, 2)))
add("linalg.matrix_power", (Well(3), 2), (Well(3), -1), (Well(3), 0), (Well(2, 2), 3))
add("cdist", (T(3, 2), T(4, 2)), kw(T(3, 2), T(4, 2), p=1.0), (T(2, 3, 2), T(2, 2)))
add("trace", (T(3, 3),), (T(2, 3),))
add("diag", (T(3),), (T(3, 4), 1), (T(3), -1), (T(3, 3), -1))
add("einsum", ("ij,jk->ik", T(2, 3), T(3, 4)), ("ii", T(3, 3)), ("i,i", T(3), T(3)),
    ("bij->bji", T(2, 3, 4)), ("ij,jk", [T(2, 3), T(3, 4)]), ("bij,bjk->bik", T(2, 2, 3),
                                                                   T(2, 3, 2)))

# -- indexing -----------------------------------------------------------------------------------
add("gather", (T(2, 3), 1, Idx((2, 2), 3)), (T(2, 3), 0, Idx((1, 3), 2)),
    (T(2, 3), -1, Idx((2, 4), 3)), (T(4), 0, Idx((2,), 4)))
add("scatter_add", (T(2, 3), 1, Idx((2, 2), 3), T(2, 2)), (T(3, 2), 0, Idx((4, 2), 3), T(4, 2)),
    (T(4), -1, Idx((3,), 4), T(3)))
add("scatter", (T(2, 3), 1, Distinct((2, 2), 3), T(2, 2)), kw(T(2, 3), -1, Distinct((2, 2), 3),
                                                             value=1.5),
    kw(T(2, 3), 1, Idx((2, 2), 3), value=2.0, reduce="multiply"))
add("index_add", (T(3, 4), 0, Idx((2,), 3), T(2, 4)), kw(T(3, 4), -1, Idx((3,), 4), T(3, 3),
                                                          alpha=2.0), (T(4), 0, Idx((2,), 4), T(2)))
add("index_select", (T(3, 4), 0, Idx((2,), 3)), (T(3, 4), -1, Idx((5,), 4)),
    (T(4), 0, Idx((2,), 4)))
add("take_along_dim", kw(T(3, 4), Idx((3, 2), 4), dim=1), (T(3, 4), Idx((5,), 12)),
    kw(T(3, 4), Idx((1, 4), 3), dim=0), kw(T(3, 4), Idx((3, 1), 4), -1))

# -- ops that vmap refuses, and ops answering with a Python value -------------------------------
REFUSED = {   # name -> (sample call, exception, message pattern)
    "masked_select": (Call("masked_select", T(2, 3), Mask(2, 3)), RuntimeError, "data-dependent"),
    "allclose": (Call("allclose", T(2, 3), T(2, 3)), RuntimeError, "data-dependent"),
    "linalg.eig": (Call("linalg.eig", Well(3)), NotImplementedError, "complex"),
    "linalg.eigvals": (Call("linalg.eigvals", Well(3)), NotImplementedError, "complex"),
}
# ops refusing a batch dim that is not outermost in memory (a non-zero in_dim of a fresh input)
MOVED_BATCH_REFUSED = {"as_strided": "batch dims in front"}
PYTHON_VALUES = {name: Call(name, T(2, 3)) for name in
                 ("numel", "is_tensor", "is_floating_point", "is_complex")}
