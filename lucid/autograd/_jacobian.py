"""Jacobians by rows (one backward pass per output element) or by columns (one forward-mode pass
per input element), and their assembly into out.shape + in.shape blocks.

autograd.functional's `vectorize=True` runs the same loop (lucid.func.jacrev/jacfwd use vmap). Blocks are assembled with NumPy when
nothing needs to be differentiated through them, and with lucid.stack / reshape (recorded, and
carrying tangents) when they must stay differentiable (create_graph, or inside a transform).
"""
import numpy as np

from .. import _core
from . import forward_ad
from ._aliases import tangent_of
from ._structures import zeros_like


def one_hot(like, k):
    """A tensor shaped like `like` (and of its dtype) with a 1 at flat position k."""
    e = np.zeros(like.shape, dtype=np.dtype(like.dtype))
    e.reshape(-1)[k] = 1
    return _core._from_array(e)


def reverse_rows(outputs, inputs, create_graph):
    """rows[i][k]: the gradients of element k of output i with respect to each input (None
    where it does not depend on that input); one backward pass per output element."""
    rows = []
    for out in outputs:
        if not out.requires_grad:
            rows.append([(None,) * len(inputs)] * out.numel())
            continue
        rows.append([_core.grad(out, inputs, grad_outputs=one_hot(out, k), retain_graph=True,
                                create_graph=create_graph, allow_unused=True)
                     for k in range(out.numel())])
    return rows


def forward_columns(call, inputs):
    """Run call(args) -> (tuple of outputs, extra) once per element of each input, that element's
    tangent set to 1 (one dual level for all runs). Returns (outputs, extra, cols) where cols[j][k]
    holds the tangents (None: independent) of every output for element k of input j; outputs and
    extra come from the first run."""
    cols = []
    first = None
    with forward_ad.dual_level():
        for j, x in enumerate(inputs):
            cols_j = []
            for k in range(x.numel()):
                args = list(inputs)
                args[j] = forward_ad.make_dual(x, one_hot(x, k))
                outs, extra = call(args)
                if first is None:
                    first = (tuple(forward_ad.unpack_dual(o).primal for o in outs), extra)
                cols_j.append(tuple(tangent_of(o) for o in outs))
            cols.append(cols_j)
    if first is None:                      # every input is empty: one plain run for the outputs
        first = call(list(inputs))
    return first[0], first[1], cols


def _differentiable(pieces):
    return any(p is not None and (p.requires_grad or tangent_of(p) is not None) for p in pieces)


def assemble(pieces, piece_like, target_shape, axis):
    """One Jacobian block of target_shape from equal-shaped pieces (None: zeros shaped like
    piece_like) stacked along axis: rows along 0, columns along piece_like.ndim."""
    target_shape = tuple(target_shape)
    if len(pieces) == 0:
        return _core._from_array(np.zeros(target_shape, dtype=np.dtype(piece_like.dtype)))
    if len(pieces) == 1 and pieces[0] is not None:
        p = pieces[0]
        return p if tuple(p.shape) == target_shape else p.reshape(target_shape)
    if _differentiable(pieces):
        filled = [zeros_like(piece_like) if p is None else p for p in pieces]
        return _core.stack(filled, axis).reshape(target_shape)
    zero = np.zeros(piece_like.shape, dtype=np.dtype(piece_like.dtype))
    arrays = [zero if p is None else p.detach().numpy() for p in pieces]
    return _core._from_array(np.stack(arrays, axis).reshape(target_shape))
