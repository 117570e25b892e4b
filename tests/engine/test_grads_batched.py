"""autograd.grad(..., is_grads_batched=True): the stack of the vjps of each grad_output's slices,
against a Python loop of autograd.grad and torch.autograd.grad(is_grads_batched=True); graph
retention, create_graph, allow_unused / materialize_grads, GradientEdge inputs and the errors."""
import numpy as np
import pytest

import lucid
from lucid.autograd import grad
from lucid.autograd.graph import get_gradient_edge

try:
    import torch
except ImportError:          # the PyTorch comparisons say why they did not run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed; "
                                 "pip install torch==2.13.0 to compare with PyTorch")

RNG = np.random.default_rng(7)
XN = RNG.standard_normal((3, 4))
WN = RNG.standard_normal((4,))
VN = RNG.standard_normal((5, 3))
UN = RNG.standard_normal((5, 4))


def graph(lib):
    """(x, w, z, outputs) of the same function in lucid or torch: z is unused."""
    x = lib.tensor(XN, requires_grad=True)
    w = lib.tensor(WN, requires_grad=True)
    z = lib.tensor(np.ones(2), requires_grad=True)
    return x, w, z, ((x.sin() * w).sum(1), (x * x).sum(0) + w)


def looped(outputs, inputs, cotangents, **kw):
    """The stack of autograd.grad over the batch (the graph kept for every pass)."""
    per = [grad(outputs, inputs, tuple(c[b] for c in cotangents), retain_graph=True, **kw)
           for b in range(cotangents[0].shape[0])]
    return [None if col[0] is None else np.stack([g.detach().numpy() for g in col])
            for col in zip(*per)]


def test_equals_a_loop():
    x, w, _, outs = graph(lucid)
    cts = (lucid.tensor(VN), lucid.tensor(UN))
    got = grad(outs, (x, w), cts, retain_graph=True, is_grads_batched=True)
    for g, l in zip(got, looped(outs, (x, w), cts)):
        np.testing.assert_allclose(g.numpy(), l, rtol=1e-12)


@needs_torch
def test_equals_a_loop_and_torch():
    x, w, _, outs = graph(lucid)
    cts = (lucid.tensor(VN), lucid.tensor(UN))
    got = grad(outs, (x, w), cts, retain_graph=True, is_grads_batched=True)
    want = looped(outs, (x, w), cts)
    tx, tw, _, touts = graph(torch)
    ref = torch.autograd.grad(touts, (tx, tw), (torch.tensor(VN), torch.tensor(UN)),
                              is_grads_batched=True)
    for g, l, t in zip(got, want, ref):
        assert g.shape == (5,) + tuple(t.shape[1:])
        np.testing.assert_allclose(g.numpy(), l, rtol=1e-12)
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-12)


def test_single_tensor_arguments_and_a_scalar_output():
    x = lucid.tensor(XN, requires_grad=True)
    s = (x * x).sum()
    (g,) = grad(s, x, lucid.tensor([1.0, -2.0, 0.5], dtype=lucid.float64), is_grads_batched=True)
    np.testing.assert_allclose(g.numpy(), np.array([1.0, -2.0, 0.5])[:, None, None] * 2 * XN)


def test_without_retain_graph_the_graph_is_freed_after_the_call_with_it_it_survives():
    x, w, _, outs = graph(lucid)
    cts = (lucid.tensor(VN), lucid.tensor(UN))
    first = grad(outs, (x, w), cts, retain_graph=True, is_grads_batched=True)
    again = grad(outs, (x, w), cts, is_grads_batched=True)      # the graph survived the first
    for f, a in zip(first, again):
        np.testing.assert_array_equal(f.numpy(), a.numpy())
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        grad(outs, (x, w), cts, is_grads_batched=True)


@needs_torch
def test_create_graph_gives_differentiable_results_equal_to_torch():
    x, w, _, outs = graph(lucid)
    (g,) = grad(outs[0], x, lucid.tensor(VN), create_graph=True, is_grads_batched=True)
    assert g.requires_grad
    (h,) = grad((g * g).sum(), x)
    tx, tw, _, touts = graph(torch)
    (tg,) = torch.autograd.grad(touts[0], tx, torch.tensor(VN), create_graph=True,
                                is_grads_batched=True)
    (th,) = torch.autograd.grad((tg * tg).sum(), tx)
    np.testing.assert_allclose(h.numpy(), th.numpy(), rtol=1e-10)


@needs_torch
def test_a_cotangent_that_requires_grad_is_differentiated_through():
    x, w, _, outs = graph(lucid)
    v = lucid.tensor(VN, requires_grad=True)
    (g,) = grad(outs[0], x, v, create_graph=True, is_grads_batched=True)
    (dv,) = grad(g.sum(), v)
    tx, tw, _, touts = graph(torch)
    tv = torch.tensor(VN, requires_grad=True)
    (tg,) = torch.autograd.grad(touts[0], tx, tv, create_graph=True, is_grads_batched=True)
    np.testing.assert_allclose(dv.numpy(), torch.autograd.grad(tg.sum(), tv)[0].numpy())


@needs_torch
def test_allow_unused_and_materialize_grads_as_torch():
    x, w, z, outs = graph(lucid)
    tx, tw, tz, touts = graph(torch)
    v = lucid.tensor(VN)
    got = grad(outs[0], (x, z), v, retain_graph=True, allow_unused=True, is_grads_batched=True)
    assert got[1] is None
    ref = torch.autograd.grad(touts[0], (tx, tz), torch.tensor(VN), retain_graph=True,
                              materialize_grads=True, is_grads_batched=True)
    mat = grad(outs[0], (x, z), v, retain_graph=True, materialize_grads=True,
               is_grads_batched=True)
    assert mat[1].shape == tuple(ref[1].shape) == (2,)          # unbatched, as torch
    np.testing.assert_array_equal(mat[1].numpy(), 0.0)
    np.testing.assert_allclose(mat[0].numpy(), ref[0].numpy())
    with pytest.raises(RuntimeError, match="input 1"):
        grad(outs[0], (x, z), v, retain_graph=True, is_grads_batched=True)
    with pytest.raises(ValueError, match="materialize_grads"):
        grad(outs[0], (x, z), v, allow_unused=False, materialize_grads=True,
             is_grads_batched=True)


def test_materialized_zeros_can_be_differentiated_under_create_graph():
    x, w, z, outs = graph(lucid)
    g = grad(outs[0], (x, z), lucid.tensor(VN), create_graph=True, materialize_grads=True,
             is_grads_batched=True)
    assert g[1].requires_grad
    (third,) = grad(g[1].sum(), z, allow_unused=True, materialize_grads=True)
    np.testing.assert_array_equal(third.numpy(), 0.0)


def test_gradient_edge_inputs():
    x = lucid.tensor(XN, requires_grad=True)
    h = x.sin()
    y = (h * h).sum(1)
    v = lucid.tensor(VN)
    (g,) = grad(y, get_gradient_edge(h), v, retain_graph=True, is_grads_batched=True)
    (ref,) = grad(y, h, v, retain_graph=True, is_grads_batched=True)
    np.testing.assert_allclose(g.numpy(), ref.numpy())
    np.testing.assert_allclose(ref.numpy(), VN[:, :, None] * 2 * np.sin(XN))
    cts = lucid.tensor(RNG.standard_normal((5, 3, 4)))          # an edge as the output
    (from_edge,) = grad(get_gradient_edge(h), x, cts, retain_graph=True, is_grads_batched=True)
    np.testing.assert_allclose(from_edge.numpy(), cts.numpy() * np.cos(XN))
    with pytest.raises(RuntimeError, match="grad_output\\[0\\] has a shape of \\(4,\\)"):
        grad(get_gradient_edge(h), x, lucid.zeros(5, 4, dtype=lucid.float64),
             is_grads_batched=True)


def test_an_empty_batch_gives_empty_results():
    x, w, _, outs = graph(lucid)
    (g,) = grad(outs[0], x, lucid.zeros(0, 3, dtype=lucid.float64), is_grads_batched=True)
    assert g.shape == (0, 3, 4)


def test_errors_as_torch_and_nothing_modified():
    x, w, _, outs = graph(lucid)
    with pytest.raises(RuntimeError, match="implicitly created only for scalar outputs"):
        grad(outs[0], x, None, is_grads_batched=True)
    with pytest.raises(ValueError, match="grad_outputs\\[0\\] is None"):
        grad(outs[0].sum(), x, None, is_grads_batched=True)
    with pytest.raises(ValueError, match="same size in the mapped dimension, got sizes \\[5, 4\\]"):
        grad(outs, x, (lucid.tensor(VN), lucid.tensor(UN[:4])), is_grads_batched=True)
    with pytest.raises(RuntimeError, match="grad_output\\[0\\] has a shape of \\(2,\\) and "
                                           "output\\[0\\] has a shape of \\(3,\\)"):
        grad(outs[0], x, lucid.zeros(4, 2, dtype=lucid.float64), is_grads_batched=True)
    with pytest.raises(RuntimeError, match="interpret the first dimension"):
        grad(outs[0], x, lucid.tensor(VN[0]), is_grads_batched=True)
    with pytest.raises(TypeError, match="is_grads_batched must be a bool"):
        grad(outs[0], x, lucid.tensor(VN), is_grads_batched="yes")
    with pytest.raises(RuntimeError, match="got 1 gradients for 2 outputs"):
        grad(outs, x, lucid.tensor(VN), is_grads_batched=True)
    assert x.grad is None
    np.testing.assert_array_equal(x.detach().numpy(), XN)
    (g,) = grad(outs[0], x, lucid.tensor(VN), is_grads_batched=True)     # the graph is intact
    assert g.shape == (5, 3, 4)


def test_the_plain_call_is_unchanged():
    x, w, _, outs = graph(lucid)
    assert grad(outs[0].sum(), x)[0].shape == (3, 4)


# -- autograd.grad under vmap: a batched cotangent through a graph recorded outside ----------

def torch_vmap(f, **kw):
    import warnings

    def run(*args):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")           # torch's fallback performance notes
            return torch.vmap(f, **kw)(*args)
    return run


@needs_torch
def test_vmap_over_grad_with_batched_cotangents_equals_torch():
    from lucid.func import vmap
    x, w, z, outs = graph(lucid)
    tx, tw, tz, touts = graph(torch)
    v2 = RNG.standard_normal((2, 5, 3))
    f = lambda v: grad(outs[0], x, v, retain_graph=True)[0]                       # noqa: E731
    tf = lambda v: torch.autograd.grad(touts[0], tx, v, retain_graph=True)[0]     # noqa: E731
    np.testing.assert_allclose(vmap(f)(lucid.tensor(VN)).numpy(),
                               torch_vmap(tf)(torch.tensor(VN)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(vmap(vmap(f))(lucid.tensor(v2)).numpy(),
                               torch_vmap(torch_vmap(tf))(torch.tensor(v2)).numpy(), rtol=1e-12)
    fb = lambda v: grad(outs[0], x, v, retain_graph=True, is_grads_batched=True)[0]  # noqa
    tfb = lambda v: torch.autograd.grad(touts[0], tx, v, retain_graph=True,           # noqa
                                        is_grads_batched=True)[0]
    got = vmap(fb, in_dims=1)(lucid.tensor(v2))
    assert got.shape == (5, 2, 3, 4)
    np.testing.assert_allclose(got.numpy(), torch_vmap(tfb, in_dims=1)(torch.tensor(v2)).numpy(),
                               rtol=1e-12)


def test_vmap_over_grad_equals_the_batched_call():
    from lucid.func import vmap
    x, w, _, outs = graph(lucid)
    got = vmap(lambda v: grad(outs[0], x, v, retain_graph=True)[0])(lucid.tensor(VN))
    (want,) = grad(outs[0], x, lucid.tensor(VN), retain_graph=True, is_grads_batched=True)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_vmap_over_grad_with_unused_inputs_and_a_freed_graph():
    from lucid.func import vmap
    x, w, z, outs = graph(lucid)
    g, gz = vmap(lambda v: grad(outs[0], (x, z), v, retain_graph=True,
                                materialize_grads=True))(lucid.tensor(VN))
    assert g.shape == (5, 3, 4) and gz.shape == (5, 2)     # vmap's out_dims expand the zeros
    np.testing.assert_array_equal(gz.numpy(), 0.0)
    seen = []
    vmap(lambda v: seen.append(grad(outs[0], (x, z), v, retain_graph=True,
                                    allow_unused=True)) or v)(lucid.tensor(VN))
    assert seen[0][1] is None and seen[0][0].shape == (3, 4)  # logical, inside vmap
    vmap(lambda v: grad(outs[0], x, v))(lucid.tensor(VN))      # frees the graph at the end
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        grad(outs[0], x, lucid.tensor(VN[0]))
