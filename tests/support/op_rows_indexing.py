"""Op-table rows for the indexing and shape ops (ops/shape/gather.pxi, ops/shape/rearrange.pxi, ops/linalg/einsum.pxi).

Each row is an ``op_spec.OpSpec`` (name, lucid callable, NumPy reference, input-shape tuples,
one domain per input) made by ``Rows.op``. Every input is a differentiable float tensor; index
tensors and masks are constants baked into the callables (several repeat an index, so gradients
must add up). split, chunk and unbind return a tuple of tensors (``multi_output``); their
references return the tuple of arrays. scatter_add's, scatter's and index_add's input and src
must share a dtype (``same_dtype``).
"""
import numpy as np

import lucid
from .op_spec import ANY, Rows

ROWS = Rows()
_row = ROWS.op


def _i(values):
    return lucid.tensor(np.array(values, dtype=np.int64))


def _b(values):
    return lucid.tensor(np.array(values, dtype=bool))


# -- references, written element by element where NumPy has no one-call equivalent ------------

def _gather_ref(a, dim, idx):
    out = np.empty(idx.shape)
    for pos in np.ndindex(*idx.shape):
        src = list(pos)
        src[dim] = idx[pos]
        out[pos] = a[tuple(src)]
    return out


def _scatter_add_ref(a, dim, idx, src):
    out = a.copy()
    for pos in np.ndindex(*idx.shape):
        dst = list(pos)
        dst[dim] = idx[pos]
        out[tuple(dst)] += src[pos]
    return out


def _scatter_ref(a, dim, idx, src):
    out = a.copy()
    for pos in np.ndindex(*idx.shape):
        dst = list(pos)
        dst[dim] = idx[pos]
        out[tuple(dst)] = src[pos] if isinstance(src, np.ndarray) else src
    return out


def _index_add_ref(a, dim, idx, src, alpha=1.0):
    out = np.moveaxis(a.copy(), dim, 0)
    np.add.at(out, idx, alpha * np.moveaxis(src, dim, 0))
    return np.moveaxis(out, 0, dim)


def _split_ref(a, sizes, dim):
    bounds = np.cumsum(sizes)[:-1]
    return tuple(np.split(a, bounds, axis=dim))


def _diag_embed_ref(v, k):
    n = v.shape[0] + abs(k)
    out = np.zeros((n, n))
    for i in range(v.shape[0]):
        out[i + max(-k, 0), i + max(k, 0)] = v[i]
    return out


def _repeat_ref(a, reps):
    return np.tile(a.reshape((1,) * (len(reps) - a.ndim) + a.shape), reps)


G_IDX = np.array([[0, 2, 2, 1], [1, 1, 0, 0]])           # repeats along dim 0 of a (3, 4) input
G_IDX_SMALL = np.array([[3, 3], [0, 2]])                  # dim 1, smaller than (3, 4) elsewhere
G_IDX_3D = np.array([[[1, 0, 2]], [[2, 2, 2]]])           # (2, 1, 3) into (2, 3, 4) along -1
S_IDX = np.array([[0, 0, 2, 1], [2, 0, 2, 2]])            # scatter rows, repeats collide
S_IDX_BIG_SRC = np.array([[4, 4, 0], [1, 0, 1]])          # src (3, 5), index (2, 3), dim 1
SC_IDX = np.array([[0, 2, 1, 2], [1, 0, 2, 0]])          # scatter: no position written twice
SC_IDX_BIG_SRC = np.array([[4, 0, 2], [1, 3, 0]])         # src (3, 4), index (2, 3), dim 1
SEL = np.array([2, 0, 2])
T_FLAT = np.array([[0, 11], [-1, 5], [5, 5]])             # take_along_dim without dim
T_DIM1 = np.array([[3], [0], [3]])
T_BCAST = np.array([[[0, 2], [2, 2], [1, 0], [0, 0]]])    # (1, 4, 2) with input (2, 1, 3), dim 2
MASK_34 = np.array([[True, False, True, False], [False, False, True, True],
                    [True, True, False, False]])
MASK_4 = np.array([False, True, True, False])

# gather / scatter_add / index_select / take_along_dim
_row("gather_dim0", lambda x: x.gather(0, _i(G_IDX)), lambda a: _gather_ref(a, 0, G_IDX),
     (((3, 4),),), (ANY,))
_row("lucid.gather_smaller_index", lambda x: lucid.gather(x, 1, _i(G_IDX_SMALL)),
     lambda a: _gather_ref(a, 1, G_IDX_SMALL), (((3, 4),),), (ANY,))
_row("gather_3d_neg_dim", lambda x: x.gather(-1, _i(G_IDX_3D)),
     lambda a: _gather_ref(a, 2, G_IDX_3D), (((2, 3, 4),),), (ANY,))
_row("scatter_add", lambda x, s: x.scatter_add(0, _i(S_IDX), s),
     lambda a, s: _scatter_add_ref(a, 0, S_IDX, s), (((3, 4), (2, 4)),), (ANY, ANY), same_dtype=True)
_row("lucid.scatter_add_larger_src", lambda x, s: lucid.scatter_add(x, 1, _i(S_IDX_BIG_SRC), s),
     lambda a, s: _scatter_add_ref(a, 1, S_IDX_BIG_SRC, s), (((2, 5), (3, 5)),), (ANY, ANY), same_dtype=True)
# scatter's gradients are those of unique positions: a position written twice keeps one of its
# values (which one is unspecified, as in PyTorch), so the rows repeat none
_row("scatter", lambda x, s: x.scatter(0, _i(SC_IDX), s),
     lambda a, s: _scatter_ref(a, 0, SC_IDX, s), (((3, 4), (2, 4)),), (ANY, ANY), same_dtype=True)
_row("lucid.scatter_larger_src", lambda x, s: lucid.scatter(x, 1, _i(SC_IDX_BIG_SRC), s),
     lambda a, s: _scatter_ref(a, 1, SC_IDX_BIG_SRC, s), (((2, 5), (3, 4)),), (ANY, ANY),
     same_dtype=True)
_row("scatter_value", lambda x: x.scatter(-1, _i(SC_IDX_BIG_SRC), value=-0.5),
     lambda a: _scatter_ref(a, 1, SC_IDX_BIG_SRC, -0.5), (((2, 5),),), (ANY,))
_row("index_add", lambda x, s: x.index_add(0, _i(SEL), s),
     lambda a, s: _index_add_ref(a, 0, SEL, s), (((3, 4), (3, 4)),), (ANY, ANY), same_dtype=True)
_row("lucid.index_add_alpha_dim1", lambda x, s: lucid.index_add(x, -2, _i(SEL), s, alpha=2.5),
     lambda a, s: _index_add_ref(a, 1, SEL, s, 2.5), (((2, 4, 2), (2, 3, 2)),), (ANY, ANY),
     same_dtype=True)
_row("index_select_dim0", lambda x: x.index_select(0, _i(SEL)), lambda a: a[SEL],
     (((3, 4),),), (ANY,))
_row("lucid.index_select_dim1_3d", lambda x: lucid.index_select(x, 1, _i(SEL)),
     lambda a: a[:, SEL], (((2, 3, 2),),), (ANY,))
_row("take_along_dim_flat", lambda x: x.take_along_dim(_i(T_FLAT)),
     lambda a: a.reshape(-1)[T_FLAT.reshape(-1)], (((3, 4),),), (ANY,))
_row("lucid.take_along_dim_dim1", lambda x: lucid.take_along_dim(x, _i(T_DIM1), dim=1),
     lambda a: np.take_along_axis(a, T_DIM1, 1), (((3, 4),),), (ANY,))
_row("take_along_dim_broadcast", lambda x: x.take_along_dim(_i(T_BCAST), 2),
     lambda a: np.take_along_axis(a, T_BCAST, 2), (((2, 1, 3),),), (ANY,))
# masks
_row("masked_select", lambda x: x.masked_select(_b(MASK_34)), lambda a: a[MASK_34],
     (((3, 4),),), (ANY,))
_row("lucid.masked_select_mask_broadcast", lambda x: lucid.masked_select(x, _b(MASK_4)),
     lambda a: a[np.broadcast_to(MASK_4, a.shape)], (((3, 4),),), (ANY,))
_row("masked_select_input_broadcast", lambda x: x.masked_select(_b(MASK_34)),
     lambda a: np.broadcast_to(a, (3, 4))[MASK_34], (((1, 4),), ((3, 1),)), (ANY,))
_row("masked_fill_number", lambda x: x.masked_fill(_b(MASK_34), -2.5),
     lambda a: np.where(MASK_34, -2.5, a), (((3, 4),),), (ANY,))
_row("lucid.masked_fill_tensor_value", lambda x, v: lucid.masked_fill(x, _b(MASK_4), v),
     lambda a, v: np.where(MASK_4, v, a), (((3, 4), ()), ((4,), ())), (ANY, ANY))
_row("masked_fill_0d", lambda x: x.masked_fill(_b(True), 1.0),
     lambda a: np.ones(()), (((),),), (ANY,))
# views
_row("narrow", lambda x: x.narrow(1, -3, 2), lambda a: a[:, 1:3], (((3, 4),),), (ANY,))
_row("split_size", lambda x: x.split(2, dim=1), lambda a: _split_ref(a, [2, 2, 1], 1),
     (((3, 5),),), (ANY,), multi_output=True)
_row("lucid.split_sections", lambda x: lucid.split(x, [1, 2]),
     lambda a: _split_ref(a, [1, 2], 0), (((3, 4),),), (ANY,), multi_output=True)
_row("chunk", lambda x: x.chunk(3, -1), lambda a: _split_ref(a, [2, 2, 1], 1),
     (((2, 5),),), (ANY,), multi_output=True)
_row("lucid.chunk_fewer", lambda x: lucid.chunk(x, 4), lambda a: _split_ref(a, [2, 2, 2], 0),
     (((6, 2),),), (ANY,), multi_output=True)
_row("unbind", lambda x: x.unbind(), lambda a: tuple(a), (((3, 4),),), (ANY,), multi_output=True)
_row("lucid.unbind_dim1", lambda x: lucid.unbind(x, 1), lambda a: tuple(np.moveaxis(a, 1, 0)),
     (((2, 3, 2),),), (ANY,), multi_output=True)
_row("diagonal", lambda x: x.diagonal(), lambda a: np.diagonal(a).copy(), (((3, 4),),), (ANY,))
_row("lucid.diagonal_offset_3d", lambda x: lucid.diagonal(x, 1, 2, 0),
     lambda a: np.diagonal(a, 1, 2, 0).copy(), (((3, 2, 4),),), (ANY,))
_row("diagonal_below", lambda x: x.diagonal(offset=-1), lambda a: np.diagonal(a, -1).copy(),
     (((4, 3),),), (ANY,))
_row("movedim", lambda x: x.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1),
     (((2, 3, 4),),), (ANY,))
_row("lucid.movedim_tuple", lambda x: lucid.movedim(x, (0, 1), (2, 0)),
     lambda a: np.moveaxis(a, (0, 1), (2, 0)), (((2, 3, 4),),), (ANY,))
_row("mT", lambda x: x.mT, lambda a: np.swapaxes(a, -1, -2), (((3, 4),), ((2, 3, 4),)),
     (ANY,))
_row("expand_as", lambda x, y: x.expand_as(y), lambda a, b: np.broadcast_to(a, b.shape),
     (((3, 1), (2, 3, 4)), ((), (2, 3))), (ANY, ANY))
_row("contiguous_of_transpose", lambda x: x.T.contiguous(), lambda a: a.T.copy(),
     (((3, 4),),), (ANY,))
# copies
_row("flip", lambda x: x.flip(0, 2), lambda a: np.flip(a, (0, 2)), (((2, 3, 4),),), (ANY,))
_row("lucid.flip", lambda x: lucid.flip(x, (-1,)), lambda a: np.flip(a, -1),
     (((3, 4),), ((5,),)), (ANY,))
_row("roll_flat", lambda x: x.roll(5), lambda a: np.roll(a, 5), (((3, 4),), ((),)), (ANY,))
_row("lucid.roll_dims", lambda x: lucid.roll(x, (1, -3), (0, 2)),
     lambda a: np.roll(a, (1, -3), (0, 2)), (((2, 3, 4),),), (ANY,))
_row("repeat", lambda x: x.repeat(2, 1, 3), lambda a: _repeat_ref(a, (2, 1, 3)),
     (((3, 2),), ((),)), (ANY,))
_row("tile", lambda x: x.tile((2,)), lambda a: np.tile(a, (2,)), (((3, 2),),), (ANY,))
_row("lucid.tile", lambda x: lucid.tile(x, (2, 1, 2)), lambda a: np.tile(a, (2, 1, 2)),
     (((3, 2),),), (ANY,))
_row("tril", lambda x: x.tril(), np.tril, (((4, 3),),), (ANY,))
_row("lucid.tril_batched", lambda x: lucid.tril(x, -1), lambda a: np.tril(a, -1),
     (((2, 3, 4),),), (ANY,))
_row("triu", lambda x: x.triu(1), lambda a: np.triu(a, 1), (((3, 4),),), (ANY,))
_row("lucid.triu_negative", lambda x: lucid.triu(x, diagonal=-1), lambda a: np.triu(a, -1),
     (((2, 4, 3),),), (ANY,))
_row("diag_of_vector", lambda x: x.diag(), np.diag, (((4,),),), (ANY,))
_row("lucid.diag_of_vector_offset", lambda x: lucid.diag(x, -2),
     lambda a: _diag_embed_ref(a, -2), (((3,),),), (ANY,))
_row("diag_of_matrix", lambda x: x.diag(1), lambda a: np.diag(a, 1), (((3, 4),),), (ANY,))
_row("trace", lambda x: x.trace(), np.trace, (((3, 4),), ((4, 2),)), (ANY,))
_row("lucid.trace", lambda x: lucid.trace(x), np.trace, (((3, 3),),), (ANY,))
# einsum
_row("einsum_matmul", lambda x, y: lucid.einsum("ij,jk->ik", x, y),
     lambda a, b: a @ b, (((2, 3), (3, 4)),), (ANY, ANY))
_row("einsum_batched_list", lambda x, y: lucid.einsum("bij,bkj->bik", [x, y]),
     lambda a, b: a @ np.swapaxes(b, 1, 2), (((2, 3, 4), (2, 5, 4)),), (ANY, ANY))
_row("einsum_outer", lambda x, y: lucid.einsum("i,j->ij", x, y), np.outer,
     (((3,), (4,)),), (ANY, ANY))
_row("einsum_only_one_operand_has_letter", lambda x, y: lucid.einsum("ij,k->ik", x, y),
     lambda a, b: np.outer(a.sum(1), b), (((2, 3), (4,)),), (ANY, ANY))
_row("einsum_sum_all", lambda x: lucid.einsum("ijk->", x), np.sum, (((2, 3, 4),),), (ANY,))
_row("einsum_transpose", lambda x: lucid.einsum("ijk->kij", x),
     lambda a: np.transpose(a, (2, 0, 1)), (((2, 3, 4),),), (ANY,))
_row("einsum_implicit", lambda x, y: lucid.einsum("jk,ij", x, y), lambda a, b: b @ a,
     (((3, 4), (2, 3)),), (ANY, ANY))
_row("einsum_three", lambda x, y, z: lucid.einsum("ij,jk,kl->il", x, y, z),
     lambda a, b, c: a @ b @ c, (((2, 3), (3, 4), (4, 2)),), (ANY, ANY, ANY))
_row("einsum_same_operand_twice", lambda x: lucid.einsum("ij,ij->i", x, x),
     lambda a: (a * a).sum(1), (((3, 4),),), (ANY,))
_row("einsum_diagonal", lambda x: lucid.einsum("ii->i", x), np.diagonal, (((3, 3),),), (ANY,))
_row("einsum_trace", lambda x: lucid.einsum("ii", x), np.trace, (((3, 3),),), (ANY,))
_row("einsum_repeated_with_other", lambda x, y: lucid.einsum("iji,j->ij", x, y),
     lambda a, b: np.einsum("iji,j->ij", a, b), (((3, 2, 3), (2,)),), (ANY, ANY))
_row("einsum_0d_operand", lambda x, y: lucid.einsum("i,->i", x, y), lambda a, b: a * b,
     (((4,), ()),), (ANY, ANY))

