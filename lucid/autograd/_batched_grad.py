"""autograd.grad with is_grads_batched: the first dim of every grad_output is a batch dim, and
the result is the stack of the vjps, one per batch element (as torch.autograd.grad).

The engine runs on plain tensors only (its nodes are not callable from Python, and it takes no
BatchedTensor), so vmap cannot carry a batched cotangent through a graph recorded outside it:
the batched call runs the engine once per batch element, keeping the graph until the last one
(which honours retain_graph), and stacks the results. Unused inputs are materialized after the
stacking, unbatched, as torch does. Under lucid.func.vmap, grad_outputs batched at the active
levels (a graph recorded outside vmap, as vmap(lambda v: grad(y, x, v))) take the same batched
path over their physical batch: that is the engine call's batching rule. lucid.autograd.grad
is the engine's entry (lucid/engine/entry_points.pxi), which sends only these calls here: a
plain call pays nothing, and no Python frame of lucid's stands between the user and the
creation sites of the nodes a create_graph backward makes.
"""
import numpy as np

from .. import _core
from .._batching import transforms as _batching
from .._core import stack

_ENGINE_GRAD = _core._engine_grad


def batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                 is_grads_batched, materialize_grads):
    """autograd.grad's calls with is_grads_batched set or grad_outputs batched under vmap
    (lucid/engine/entry_points.pxi sends them here)."""
    if not isinstance(is_grads_batched, (bool, np.bool_)):
        raise TypeError(f"grad: is_grads_batched must be a bool, not "
                        f"{type(is_grads_batched).__name__}")
    if _batching.active() and _batching.any_batched(grad_outputs):
        return _under_vmap(outputs, inputs, grad_outputs, retain_graph, create_graph,
                           allow_unused, bool(is_grads_batched), materialize_grads)
    if not is_grads_batched:
        return _ENGINE_GRAD(outputs, inputs, grad_outputs, retain_graph, create_graph,
                            allow_unused, materialize_grads)
    return _stacked_vjps(outputs, inputs, grad_outputs, retain_graph, create_graph,
                         allow_unused, materialize_grads)


def _stacked_vjps(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                  materialize_grads):
    """The stack of the vjps of grad_outputs' slices along their first dim."""
    allow_unused = _allow_unused(allow_unused, materialize_grads)
    if retain_graph is None:
        retain_graph = create_graph
    outs = _listed(outputs)
    cotangents = _batched_cotangents(outs, grad_outputs)
    size = cotangents[0].shape[0]
    per_element = []
    for b in range(max(size, 1)):
        if size:
            seeds = tuple(c[b] for c in cotangents)
        else:               # no element: one pass of zeros checks the call, results are empty
            seeds = tuple(_core._from_array(np.zeros(tuple(c.shape[1:]),
                                                     dtype=np.dtype(c.dtype))) for c in cotangents)
        per_element.append(_ENGINE_GRAD(outs, inputs, seeds,
                                        retain_graph if b == max(size, 1) - 1 else True,
                                        create_graph, allow_unused, False))
    wanted = _listed(inputs)
    result = []
    for k, column in enumerate(zip(*per_element)):
        if column[0] is None:
            result.append(_materialized(wanted[k], k, create_graph) if materialize_grads
                          else None)
        elif size:
            result.append(stack(list(column), 0))
        else:
            result.append(column[0].unsqueeze(0)[:0])
    return tuple(result)


def _under_vmap(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                is_grads_batched, materialize_grads):
    """grad with grad_outputs batched at vmap levels: their physical batch dims (and, with
    is_grads_batched, the logical first dim) flattened into one batch of the batched path; the
    results batched at every active level (materialized zeros stay unbatched)."""
    allow_unused = _allow_unused(allow_unused, materialize_grads)
    levels, sizes = _batching.active_levels()
    lead = tuple(sizes[level] for level in levels)
    given = list(grad_outputs) if isinstance(grad_outputs, (tuple, list)) else [grad_outputs]
    outs = _listed(outputs)
    inner = ()
    flat = []
    for g, o in zip(given, outs):
        if g is None and _shape_of(o) is not None and int(np.prod(_shape_of(o))) == 1:
            g = _core._from_array(np.ones(_shape_of(o), dtype=np.dtype(o.dtype)))
        if not _batching.tensor_or_batched(g):
            flat.append(g)        # the batched path names the bad value
            continue
        physical = _batching.to_physical(g, levels, sizes)
        if is_grads_batched and physical.ndim > len(lead):
            inner = (physical.shape[len(lead)],)
        kept = len(lead) + (1 if is_grads_batched else 0)
        flat.append(physical.reshape((-1,) + tuple(physical.shape[kept:])))
    if len(given) != len(outs):
        flat = given              # the batched path raises on the count
    grads = _stacked_vjps(outputs, inputs, flat, retain_graph, create_graph, allow_unused, False)
    out = []
    for k, (g, w) in enumerate(zip(grads, _listed(inputs))):
        if g is None:
            out.append(_materialized(w, k, create_graph) if materialize_grads else None)
        else:
            shape = lead + inner + tuple(g.shape[1:])
            out.append(_batching.to_logical(g.reshape(shape), levels))
    return tuple(out)


def _allow_unused(allow_unused, materialize_grads):
    """allow_unused as the engine resolves it: materialize_grads implies it (ValueError when
    it is set False)."""
    if allow_unused is None:
        return materialize_grads
    if materialize_grads and not allow_unused:
        raise ValueError("materialize_grads=True needs allow_unused to be True or left unset")
    return allow_unused


def _is_edge(x):
    from .graph import GradientEdge
    return isinstance(x, GradientEdge)


def _listed(xs):
    """xs as a tuple: a Tensor or GradientEdge alone, or a sequence of them."""
    if isinstance(xs, _core.Tensor) or _is_edge(xs):
        return (xs,)
    return tuple(xs) if isinstance(xs, (tuple, list)) else (xs,)


def _shape_of(output):
    """output's shape (a GradientEdge's when it noted one), or None when unknown."""
    if isinstance(output, _core.Tensor):
        return tuple(output.shape)
    meta = getattr(output, "_meta", None)
    return None if meta is None else tuple(meta[0])


def _batched_cotangents(outs, grad_outputs):
    """grad_outputs as a tuple of tensors, each (batch, *its output's shape), one batch size."""
    if grad_outputs is None:
        given = [None] * len(outs)
    elif isinstance(grad_outputs, _core.Tensor):
        given = [grad_outputs]
    elif isinstance(grad_outputs, (tuple, list)):
        given = list(grad_outputs)
    else:
        raise TypeError(f"grad: grad_outputs must be a Tensor, None or a sequence of them, got "
                        f"{type(grad_outputs).__name__}")
    if len(given) != len(outs):
        raise RuntimeError(f"grad: got {len(given)} gradients for {len(outs)} outputs")
    for k, (g, o) in enumerate(zip(given, outs)):
        shape = _shape_of(o)
        if g is None:
            if shape is not None and int(np.prod(shape)) != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            raise ValueError(f"grad: with is_grads_batched=True every grad_output needs a batch "
                             f"dim, but grad_outputs[{k}] is None (its implicit ones have none); "
                             "pass a tensor of shape (batch, *output.shape)")
        if not isinstance(g, _core.Tensor):
            raise TypeError(f"grad: grad_outputs[{k}] must be a Tensor or None, got "
                            f"{type(g).__name__}")
        if g.ndim == 0 or (shape is not None and tuple(g.shape[1:]) != shape):
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each "
                "grad_output as the batch dimension. The sizes of the remaining dimensions are "
                "expected to match the shape of corresponding output, but a mismatch was "
                f"detected: grad_output[{k}] has a shape of {tuple(g.shape[1:])} and output[{k}] "
                f"has a shape of {shape}. If you only want some tensors in `grad_output` to be "
                "considered batched, consider using vmap.")
    sizes = [g.shape[0] for g in given]
    if len(set(sizes)) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return tuple(given)


def _materialized(wanted, k, create_graph):
    """Zeros shaped like an unused input (differentiable under create_graph), as torch does
    after the batched call; a GradientEdge input has no tensor to shape them."""
    if not isinstance(wanted, _core.Tensor):
        raise RuntimeError(f"grad: materialize_grads cannot be used when the given input is a "
                           f"GradientEdge (input {k} got no gradient)")
    zeros = _core._from_array(np.zeros(tuple(wanted.shape), dtype=np.dtype(wanted.dtype)))
    if create_graph and wanted.is_floating_point():
        zeros.requires_grad_(True)
    return zeros


_core._set_batched_grad(batched_grad)
