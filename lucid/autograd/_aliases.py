"""The tensors a transform differentiates with respect to, and whether its results need a graph.

Note [Transform aliases]
    A transform never differentiates with respect to the caller's tensor itself: the same tensor
    may also reach the function another way (a closure, an outer transform's variable), and a
    gradient with respect to it would mix those paths (perturbation confusion:
    `grad(lambda x: grad(lambda y: x * y)(x))(x)` must be 1, not 2). Each call makes its own
    alias instead and asks the engine only for the gradient that flows through that alias:
    - the input requires grad (the caller's graph, an outer transform's alias): an identity
      view of it, so gradients through the alias flow on to the caller's graph;
    - it does not: a fresh leaf over the same memory (nothing to connect to).
    A tangent the input carries at the active dual level is kept on the alias, so a reverse
    transform inside a forward one sees the perturbation (forward-over-reverse).
    The caller's tensors are never changed: not their requires_grad, .grad, history or tangent.
"""
import threading
import weakref

from .. import _core
from . import forward_ad

_state = threading.local()


def tangent_of(t):
    """t's tangent at the active dual level, or None."""
    if _core._current_dual_level() is None:
        return None
    return _core._unpack_dual(t)[1]


_private_leaves = {}          # id -> weakref of the fresh leaves transforms made


def _forget(key):
    return lambda ref: _private_leaves.pop(key, None)


def _is_private_leaf(t):
    ref = _private_leaves.get(id(t))
    return ref is not None and ref() is t


def differentiable_alias(x, connect=True):
    """A new tensor equal to x that requires grad; when x requires grad and connect is True,
    gradients through it flow on to x (Note [Transform aliases])."""
    if connect and x.requires_grad:
        alias = x.view(x.shape)
    else:
        alias = x.detach().requires_grad_(True)
        _private_leaves[id(alias)] = weakref.ref(alias, _forget(id(alias)))
    return with_tangents(alias, x)


def with_tangents(out, src):
    """out, made a dual (of a dual ...) with src's tangents at each dual level where out has
    none (the levels nest: section 7 of the API)."""
    if _core._current_dual_level() is None:
        return out
    for level, tangent in _core._tangents(src):
        if _core._unpack_dual(out, level)[1] is None:
            out = forward_ad.make_dual(out, tangent, level=level)
    return out


def detached(t):
    """t without history, keeping its tangents at the entered dual levels (if any)."""
    return with_tangents(t.detach(), t)


def transform_depth():
    """How many lucid.func transforms are running in this thread."""
    return getattr(_state, "depth", 0)


class inside_transform:
    """Counts a running transform, so inner transforms keep what they return differentiable."""

    def __enter__(self):
        _state.depth = transform_depth() + 1

    def __exit__(self, *exc):
        _state.depth -= 1
        return False


def graph_nodes(outputs):
    """Each node of the backward graph of outputs once, without running it (a leaf's
    AccumulateGrad is yielded, not passed through)."""
    pending = [out.grad_fn for out in outputs if out.grad_fn is not None]
    seen = set()
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        if not isinstance(node, _core.AccumulateGrad):
            pending.extend(nxt for nxt, _ in node.next_functions if nxt is not None)


def reaches_outside_leaves(outputs):
    """Does the graph of outputs reach a leaf requiring grad that no transform made (a closure
    over the caller's parameters)? Walks the nodes once, stopping at the first."""
    for out in outputs:
        if out.grad_fn is None and out.requires_grad and not _is_private_leaf(out):
            return True
    for node in graph_nodes(outputs):
        if isinstance(node, _core.AccumulateGrad) and not _is_private_leaf(node.variable):
            return True
    return False


def needs_graph(grad_was_enabled, primals, outputs):
    """Should a transform's results be differentiable (create_graph)? Yes when grad mode was on
    at the call and something outside the transform can differentiate them: an enclosing
    transform, a dual level, a primal requiring grad, or a closure over tensors requiring grad.
    Called inside the transform (its own count included)."""
    if not grad_was_enabled:
        return False
    if transform_depth() > 1 or _core._current_dual_level() is not None:
        return True
    if any(p.requires_grad for p in primals):
        return True
    return reaches_outside_leaves(outputs)
