"""Graph names PyTorch's torch.autograd.graph has: gradient edges, version bumps, hooks on
several tensors, and mutation of saved tensors."""
from typing import NamedTuple

from .. import _core

__all__ = ["GradientEdge", "get_gradient_edge", "increment_version"]


class _EdgeFields(NamedTuple):
    node: object
    output_nr: int


class GradientEdge(_EdgeFields):
    """Where a tensor's gradient flows in: its node (grad_fn, or a leaf's AccumulateGrad) and
    which of the node's outputs the tensor is. backward() and grad() take it wherever they take
    a tensor, as an output (backward starts there) or an input (the gradient flowing into it)."""
    # no __slots__: get_gradient_edge notes the tensor's (shape, dtype) as _meta, which the
    # engine checks root gradients against and casts results to


_core._set_gradient_edge_type(GradientEdge)


def get_gradient_edge(tensor):
    """The GradientEdge of tensor, which must require grad."""
    if not isinstance(tensor, _core.Tensor):
        raise TypeError(f"get_gradient_edge takes a Tensor, not {type(tensor).__name__}")
    if not tensor.requires_grad:
        raise RuntimeError("get_gradient_edge: the tensor does not require grad and does not "
                           "have a grad_fn, so it has no gradient edge")
    if tensor.grad_fn is not None:
        edge = GradientEdge(tensor.grad_fn, tensor.output_nr)
    else:
        # a leaf: its accumulator is the next function of a node over it (kept while the leaf
        # lives)
        edge = GradientEdge(_core._grad_accumulator(tensor), 0)
    edge._meta = (tuple(tensor.shape), tensor.dtype)
    return edge


def increment_version(tensor):
    """Count an in-place change of tensor's memory made behind lucid's back (e.g. through
    NumPy): backward then refuses the values saved before it, as after any in-place op."""
    if not isinstance(tensor, _core.Tensor):
        raise TypeError(f"increment_version takes a Tensor, not {type(tensor).__name__}")
    tensor._increment_version()
