"""lucid.func.linearize against torch.func.linearize: the output, jvp_fn at several tangents,
several primals, pytree primals and outputs, vmap over jvp_fn, gradients through it, and the
tangent checks (structure, shape, dtype) with torch's wording."""
import warnings

import numpy as np
import pytest

import lucid
from lucid.func import jacfwd, jvp, linearize, vmap

try:
    import torch
except ImportError:          # the PyTorch comparisons say why they did not run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed; "
                                 "pip install torch==2.13.0 to compare with PyTorch")

RNG = np.random.default_rng(11)
XN = RNG.standard_normal(3)
YN = RNG.standard_normal((2, 3))


def f(lib):
    """The same pytree-valued function for lucid or torch tensors."""
    return lambda a, b: {"s": (a * b).sum(0), "t": (a.sin(), [b.exp() * a])}


def torch_linearize(func, *primals):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.func.linearize(func, *primals)


def leaves(tree):
    if isinstance(tree, dict):
        return [x for k in tree for x in leaves(tree[k])]
    if isinstance(tree, (tuple, list)):
        return [x for item in tree for x in leaves(item)]
    return [tree]


@needs_torch
def test_output_and_jvps_equal_torch_for_pytree_outputs_and_two_primals():
    x, y = lucid.tensor(XN), lucid.tensor(YN)
    out, jvp_fn = linearize(f(lucid), x, y)
    tout, tjvp_fn = torch_linearize(f(torch), torch.tensor(XN), torch.tensor(YN))
    assert sorted(out) == ["s", "t"]
    assert isinstance(out["t"], tuple) and isinstance(out["t"][1], list)
    for a, b in zip(leaves(out), leaves(tout)):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-12)
    for _ in range(3):                                   # jvp_fn is reusable at new tangents
        un, vn = RNG.standard_normal(3), RNG.standard_normal((2, 3))
        got = jvp_fn(lucid.tensor(un), lucid.tensor(vn))
        want = tjvp_fn(torch.tensor(un), torch.tensor(vn))
        assert isinstance(got, dict) and isinstance(got["t"][1], list)
        for a, b in zip(leaves(got), leaves(want)):
            np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-12)


@needs_torch
def test_pytree_primals_and_one_tensor_output():
    x, y = lucid.tensor(XN), lucid.tensor(YN)
    g = lambda pair: (pair[0] * pair[1]).tanh()
    out, jvp_fn = linearize(g, (x, y))
    tg = lambda pair: (pair[0] * pair[1]).tanh()
    _, tjvp_fn = torch_linearize(tg, (torch.tensor(XN), torch.tensor(YN)))
    un, vn = RNG.standard_normal(3), RNG.standard_normal((2, 3))
    got = jvp_fn((lucid.tensor(un), lucid.tensor(vn)))
    np.testing.assert_allclose(got.numpy(), tjvp_fn((torch.tensor(un), torch.tensor(vn))).numpy(),
                               rtol=1e-12)


def test_jvp_fn_equals_jvp_at_the_primals():
    x, y = lucid.tensor(XN), lucid.tensor(YN)
    out, jvp_fn = linearize(lambda a, b: ((a * b).tanh(), a.exp()), x, y)
    un, vn = lucid.tensor(RNG.standard_normal(3)), lucid.tensor(RNG.standard_normal((2, 3)))
    value, want = jvp(lambda a, b: ((a * b).tanh(), a.exp()), (x, y), (un, vn))
    for a, b in zip(jvp_fn(un, vn), want):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    for a, b in zip(out, value):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(RuntimeError, match="tangent:1 with shape \\(3,\\) in flattened pytree "
                                           "doesn't match the shape \\(2, 3\\)"):
        jvp_fn(un, un)


def test_vmap_over_jvp_fn_is_the_jacobian():
    x = lucid.tensor(XN)
    _, jvp_fn = linearize(lambda a: a.sin() * a, x)
    columns = vmap(jvp_fn)(lucid.eye(3, dtype=lucid.float64))
    np.testing.assert_allclose(columns.numpy().T, jacfwd(lambda a: a.sin() * a)(x).numpy())


def test_results_are_differentiable_when_primals_require_grad():
    x = lucid.tensor(XN, requires_grad=True)
    out, jvp_fn = linearize(lambda a: a.sin(), x)
    assert out.requires_grad
    j = jvp_fn(lucid.ones(3, dtype=lucid.float64))
    (g,) = lucid.autograd.grad(j.sum(), x)
    np.testing.assert_allclose(g.numpy(), -np.sin(XN))
    assert x.grad is None


@needs_torch
def test_tangent_errors_as_torch_and_nothing_modified():
    x, y = lucid.tensor(XN), lucid.tensor(YN)
    _, jvp_fn = linearize(f(lucid), x, y)
    _, tjvp_fn = torch_linearize(f(torch), torch.tensor(XN), torch.tensor(YN))
    ones3, ones23 = lucid.ones(3, dtype=lucid.float64), lucid.ones(2, 3, dtype=lucid.float64)
    t3, t23 = torch.ones(3, dtype=torch.float64), torch.ones(2, 3, dtype=torch.float64)
    cases = [((ones3,), (t3,), "to have the same argspec as the primals"),
             ((lucid.ones(4, dtype=lucid.float64), ones23),
              (torch.ones(4, dtype=torch.float64), t23),
              "tangent:0 with shape .*doesn't match the shape .* of the corresponding primal"),
             ((ones3.float(), ones23), (t3.float(), t23),
              "tangent:0 with dtype .*doesn't match the dtype .* of the corresponding primal"),
             (([ones3, ones23],), ([t3, t23],), "same argspec")]
    for args, targs, words in cases:
        with pytest.raises(RuntimeError, match=words):
            jvp_fn(*args)
        with pytest.raises(RuntimeError, match=words):
            tjvp_fn(*targs)
    with pytest.raises(TypeError, match="tangent:1 .* is a int, not a Tensor"):
        jvp_fn(ones3, 3)
    np.testing.assert_array_equal(ones3.numpy(), 1.0)
    np.testing.assert_array_equal(x.numpy(), XN)


def test_bad_func_or_primals():
    with pytest.raises(TypeError, match="func"):
        linearize(3, lucid.tensor(XN))
    with pytest.raises(TypeError, match="primal:0 .* is a int, not a Tensor"):
        linearize(lambda a: a, 3)
