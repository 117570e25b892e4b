"""GradientEdge wherever grad() and backward() take tensors (API.md section 13; PyTorch 2.13's
torch.autograd.graph.get_gradient_edge is the oracle)."""
import numpy as np
import pytest

import lucid
from lucid.autograd import graph

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch (the test oracle) is not installed")

VALUES = np.array([0.5, -1.25, 2.0])


def both(values=VALUES):
    """The same float64 leaf in lucid and in torch."""
    return (lucid.tensor(values.copy(), requires_grad=True),
            torch.tensor(values.copy(), requires_grad=True))


def check(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        if e is None:
            assert g is None
        else:
            assert g.dtype == lucid.float64
            np.testing.assert_allclose(g.numpy(), e.detach().numpy(), rtol=1e-12)


@needs_torch
def test_grad_with_respect_to_a_non_leaf_edge_and_a_leaf_edge():
    results = []
    for lib, x in zip((lucid, torch), both()):
        y = x * 2
        z = (y ** 2).sum()
        edges = [lib.autograd.graph.get_gradient_edge(x), lib.autograd.graph.get_gradient_edge(y)]
        results.append(lib.autograd.grad(z, edges))
    check(*results)


@needs_torch
def test_grad_starting_at_an_edge_with_grad_outputs():
    results = []
    for lib, x in zip((lucid, torch), both()):
        y = x.exp()
        edge = lib.autograd.graph.get_gradient_edge(y)
        seed = lib.tensor(np.array([1.0, 2.0, 3.0]))
        results.append(lib.autograd.grad(edge, [x], grad_outputs=seed))
    check(*results)


@needs_torch
def test_an_edge_stays_valid_for_the_history_before_an_in_place_change():
    results = []
    for lib, a in zip((lucid, torch), both()):
        b = a * 1
        edge = lib.autograd.graph.get_gradient_edge(b)
        b.mul_(3)
        loss = (b * b).sum()
        results.append(lib.autograd.grad(loss, [edge, a]))
    check(*results)


@needs_torch
def test_an_edge_into_the_second_piece_of_a_split():
    results = []
    for lib, u in zip((lucid, torch), both(np.arange(4.0))):
        p, q = u.split(2)
        edge = lib.autograd.graph.get_gradient_edge(q)
        results.append(lib.autograd.grad(p.sum() + 3 * q.sum(), [edge]))
    check(*results)


@needs_torch
def test_backward_inputs_leaf_edge_accumulates_and_non_leaf_edge_keeps_nothing():
    grads = []
    for lib, x in zip((lucid, torch), both()):
        y = x.sin()
        z = (y * y).sum()
        z.backward(inputs=[lib.autograd.graph.get_gradient_edge(y)], retain_graph=True)
        assert x.grad is None
        z.backward(inputs=[lib.autograd.graph.get_gradient_edge(x)])
        grads.append(x.grad)
    check([grads[0]], [grads[1]])


@needs_torch
def test_backward_from_an_edge():
    grads = []
    for lib, x in zip((lucid, torch), both()):
        y = x * x
        lib.autograd.backward(lib.autograd.graph.get_gradient_edge(y),
                              grad_tensors=lib.tensor(np.ones(3)))
        grads.append(x.grad)
    check([grads[0]], [grads[1]])


def test_a_float32_seed_is_cast_to_the_edge_dtype():
    x = lucid.tensor(VALUES.copy(), requires_grad=True)
    edge = graph.get_gradient_edge(x * 2)
    (g,) = lucid.autograd.grad(edge, [x], grad_outputs=lucid.ones(3, dtype=lucid.float32))
    assert g.dtype == lucid.float64
    np.testing.assert_array_equal(g.numpy(), [2.0, 2.0, 2.0])


def test_edge_errors_unused_implicit_seed_shape_and_materialize_grads():
    x = lucid.tensor(VALUES.copy(), requires_grad=True)
    w = lucid.tensor(VALUES.copy(), requires_grad=True)
    y = x * 2
    z = y.sum()
    unused = graph.get_gradient_edge(w)
    with pytest.raises(RuntimeError, match="input 0 .*GradientEdge.*not used.*allow_unused"):
        lucid.autograd.grad(z, [unused], retain_graph=True)
    assert lucid.autograd.grad(z, [unused], retain_graph=True, allow_unused=True) == (None,)
    with pytest.raises(RuntimeError, match="materialize_grads cannot be used .*GradientEdge"):
        lucid.autograd.grad(z, [unused], retain_graph=True, materialize_grads=True)
    edge = graph.get_gradient_edge(y)
    with pytest.raises(RuntimeError, match="implicitly created only for outputs with one element"):
        lucid.autograd.grad(edge, [x], retain_graph=True)
    with pytest.raises(RuntimeError, match=r"gradient 0 has shape \(2,\).*GradientEdge.*\(3,\)"):
        lucid.autograd.grad(edge, [x], grad_outputs=lucid.ones(2), retain_graph=True)
    assert x.grad is None and w.grad is None
    (g,) = lucid.autograd.grad(z, [edge])           # the graph is still whole after the errors
    np.testing.assert_array_equal(g.numpy(), np.ones(3))


def test_a_malformed_edge_is_refused_with_the_argument_named():
    x = lucid.tensor(VALUES.copy(), requires_grad=True)
    z = (x * 2).sum()
    with pytest.raises(TypeError, match="grad: a GradientEdge in inputs must hold a graph node"):
        lucid.autograd.grad(z, [graph.GradientEdge("node", 0)])
    with pytest.raises(RuntimeError, match="names output 3 of MulBackward"):
        lucid.autograd.grad(z, [graph.GradientEdge((x * 2).grad_fn, 3)])
    with pytest.raises(TypeError, match="must be Tensors or GradientEdges, got str"):
        lucid.autograd.grad(z, [x, "x"])
    assert x.grad is None


def test_an_edge_into_output_1_of_a_two_output_function():
    class Two(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            return 2 * ga + 3 * gb

    x = lucid.tensor(VALUES.copy(), requires_grad=True)
    a, b = Two.apply(x)
    edge = graph.get_gradient_edge(b)
    assert edge.node is b.grad_fn and edge.output_nr == 1
    (g,) = lucid.autograd.grad((a * b).sum(), [edge])
    np.testing.assert_allclose(g.numpy(), (2 * VALUES), rtol=1e-12)
    (gx,) = lucid.autograd.grad(edge, [x], grad_outputs=lucid.ones(3, dtype=lucid.float64))
    np.testing.assert_allclose(gx.numpy(), np.full(3, 3.0))
