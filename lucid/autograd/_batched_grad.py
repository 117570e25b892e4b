"""autograd.grad with is_grads_batched: the first dim of every grad_output is a batch dim, and
the result is the stack of the vjps, one per batch element (as torch.autograd.grad).

The engine runs on plain tensors only (its nodes are not callable from Python, and it takes no
BatchedTensor), so vmap cannot carry a batched cotangent through a graph recorded outside it:
the batched call runs the engine once per batch element, keeping the graph until the last one
(which honours retain_graph), and stacks the results. Unused inputs are materialized after the
stacking, unbatched, as torch does.
"""
import numpy as np

from .. import _core
from .._core import stack

_ENGINE_GRAD = _core.grad


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of outputs with respect to inputs, as a tuple; writes no .grad;
    is_grads_batched: every grad_output has a leading batch dim, each result one too."""
    if not isinstance(is_grads_batched, (bool, np.bool_)):
        raise TypeError(f"grad: is_grads_batched must be a bool, not "
                        f"{type(is_grads_batched).__name__}")
    if not is_grads_batched:
        return _ENGINE_GRAD(outputs, inputs, grad_outputs, retain_graph, create_graph,
                            allow_unused, materialize_grads)
    if allow_unused is None:
        allow_unused = materialize_grads
    elif materialize_grads and not allow_unused:
        raise ValueError("materialize_grads=True needs allow_unused to be True or left unset")
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
