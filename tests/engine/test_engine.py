"""The backward engine (API.md section 3): graph shapes, retain_graph and the freed graph,
lucid.autograd.grad, misuse of backward, the dtypes and shapes of gradients, roots, the reused
gradient tuple. (Hooks, retain_grad and nodes are in tests/graph/, grad mode in test_grad_mode.py,
threads in test_threads.py.)"""
import numpy as np
import pytest

import lucid
from support.checks import assert_close, f64, numerical_vjp, to_numpy


# ---------------------------------------------------------------------------------------------
# graph shapes
# ---------------------------------------------------------------------------------------------

def test_diamond_graph():
    xv = np.array([0.5, -1.0, 2.0])
    x = f64(xv, requires_grad=True)
    a = x * 2.0
    b = x * 3.0
    c = a * b                     # 6 x^2
    c.sum().backward()
    assert_close(x.grad, 12.0 * xv)


def test_diamond_with_nonlinear_branches(rng):
    xv = rng.standard_normal((2, 3))
    x = f64(xv, requires_grad=True)
    top = x.tanh()
    left = top.exp()
    right = top * x
    out = (left + right).sum(dim=1)
    w = rng.standard_normal(2)
    out.backward(gradient=f64(w))

    def ref(a):
        t = np.tanh(a)
        return (np.exp(t) + t * a).sum(axis=1)

    (num,) = numerical_vjp(ref, [xv], w)
    assert_close(x.grad, num, rtol=1e-5, atol=1e-7)


def test_shared_leaf_used_twice():
    xv = np.array([1.5, -2.0])
    x = f64(xv, requires_grad=True)
    y = (x * x + x).sum()
    y.backward()
    assert_close(x.grad, 2 * xv + 1)


def test_same_tensor_both_operands_and_next_functions_share_accumulate_grad():
    x = f64([1.0, 2.0], requires_grad=True)
    y = x * x
    (n0, i0), (n1, i1) = y.grad_fn.next_functions
    assert n0 is n1, "a leaf must have one AccumulateGrad node, reused"
    assert n0.variable is x


def test_multiple_roots_with_grad_tensors():
    xv = np.array([1.0, 2.0, 3.0])
    x = f64(xv, requires_grad=True)
    a = x * 2.0                   # vector root
    b = x * x                     # vector root
    ga = np.array([1.0, 0.5, -1.0])
    gb = np.array([2.0, 0.0, 1.0])
    lucid.autograd.backward([a, b], [f64(ga), f64(gb)])
    assert_close(x.grad, 2.0 * ga + 2 * xv * gb)


def test_multiple_scalar_roots_without_grad_tensors():
    xv = np.array([1.0, 2.0])
    x = f64(xv, requires_grad=True)
    lucid.autograd.backward([(x * 3.0).sum(), (x * x).sum()])
    assert_close(x.grad, 3.0 + 2 * xv)


def test_tensor_backward_with_gradient():
    x = f64([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    y.backward(gradient=f64([1.0, 0.0, 2.0]))
    assert_close(x.grad, [2.0, 0.0, 12.0])


def test_inputs_restricts_which_leaves_get_grad():
    x = f64([1.0, 2.0], requires_grad=True)
    y = f64([3.0, 4.0], requires_grad=True)
    (x * y).sum().backward(inputs=[x])
    assert_close(x.grad, [3.0, 4.0])
    assert y.grad is None


def test_inputs_in_functional_backward():
    x = f64([1.0, 2.0], requires_grad=True)
    y = f64([3.0, 4.0], requires_grad=True)
    lucid.autograd.backward([(x * y).sum()], inputs=[y])
    assert x.grad is None
    assert_close(y.grad, [1.0, 2.0])


def test_inputs_can_name_a_non_leaf():
    x = f64([1.0, 2.0], requires_grad=True)
    h = x * 2.0
    (h * h).sum().backward(inputs=[h])
    assert x.grad is None
    assert_close(h.grad, [4.0, 8.0])


def test_accumulation_across_backward_calls():
    xv = np.array([1.0, -2.0])
    x = f64(xv, requires_grad=True)
    (x * x).sum().backward()
    g_first = x.grad
    assert_close(g_first, 2 * xv)
    (x * 3.0).sum().backward()
    assert_close(x.grad, 2 * xv + 3.0)
    # accumulated in place (create_graph=False): the first .grad tensor sees the sum
    assert_close(g_first, 2 * xv + 3.0)


def test_user_gradient_is_not_mutated_by_accumulation():
    x = f64([1.0, 2.0], requires_grad=True)
    g = f64([1.0, 1.0])
    x.clone().backward(gradient=g)          # a pass-through op could hand g to x.grad
    x.clone().backward(gradient=f64([5.0, 5.0]))
    assert_close(x.grad, [6.0, 6.0])
    assert_close(g, [1.0, 1.0]), "the user's gradient tensor was modified"


def test_retained_non_leaf_grad_is_not_aliased_with_leaf_grad():
    x = f64([1.0, 2.0], requires_grad=True)
    y = x.clone()
    y.retain_grad()
    y.sum().backward()
    assert_close(y.grad, [1.0, 1.0])
    (x * 4.0).sum().backward()
    assert_close(x.grad, [5.0, 5.0])
    assert_close(y.grad, [1.0, 1.0])


def test_hook_argument_is_not_mutated_later():
    x = f64([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g))
    (x * 2.0).sum().backward()
    (x * 3.0).sum().backward()
    assert len(seen) == 2
    assert_close(seen[0], [2.0, 2.0])
    assert_close(seen[1], [3.0, 3.0])
    assert_close(x.grad, [5.0, 5.0])


# ---------------------------------------------------------------------------------------------
# retain_graph and the freed graph
# ---------------------------------------------------------------------------------------------

def test_retain_graph_allows_second_backward():
    xv = np.array([1.0, 3.0])
    x = f64(xv, requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert_close(x.grad, 4 * xv)


@pytest.mark.parametrize("build", [
    lambda x: (x * x).sum(),
    lambda x: (x + 1.0).sum(),          # nothing tensor-valued saved: still refused (API.md)
    lambda x: x.tanh().mean(),
], ids=["mul_saves_inputs", "add_saves_nothing", "tanh_saves_output"])
def test_second_backward_without_retain_graph_raises(build):
    x = f64([1.0, 2.0], requires_grad=True)
    y = build(x)
    y.backward()
    g = to_numpy(x.grad)
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()
    assert_close(x.grad, g)      # untouched by the failed call


def test_freed_shared_subgraph_raises():
    x = f64([1.0, 2.0], requires_grad=True)
    h = x * 2.0
    z1 = h.sum()
    z2 = (h * 3.0).sum()
    z1.backward()                 # releases h's MulBackward
    with pytest.raises(RuntimeError, match="retain_graph"):
        z2.backward()


def test_retain_then_release():
    x = f64([1.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(RuntimeError):
        y.backward()
    assert_close(x.grad, [6.0])


# ---------------------------------------------------------------------------------------------
# lucid.autograd.grad
# ---------------------------------------------------------------------------------------------

def test_grad_returns_tuple_and_writes_no_grad():
    xv = np.array([1.0, 2.0])
    x = f64(xv, requires_grad=True)
    w = f64([3.0, -1.0], requires_grad=True)
    h = x * w
    out = (h * h).sum()
    res = lucid.autograd.grad(out, [x])
    assert isinstance(res, tuple) and len(res) == 1
    assert_close(res[0], 2 * (xv * np.array([3.0, -1.0])) * np.array([3.0, -1.0]))
    assert x.grad is None and w.grad is None


def test_grad_does_not_write_retained_non_leaf_grad():
    # API.md: grad() "writes no .grad anywhere" (PyTorch would fill a retain_grad() tensor;
    # the contract is explicit here, so it wins)
    x = f64([1.0, 2.0], requires_grad=True)
    h = x * 3.0
    h.retain_grad()
    lucid.autograd.grad((h * h).sum(), [x])
    assert h.grad is None
    assert x.grad is None


def test_grad_multiple_inputs_and_grad_outputs():
    xv, yv = np.array([1.0, 2.0]), np.array([0.5, -1.5])
    x, y = f64(xv, requires_grad=True), f64(yv, requires_grad=True)
    out = x * y
    go = np.array([2.0, 3.0])
    gx, gy = lucid.autograd.grad([out], [x, y], grad_outputs=[f64(go)])
    assert_close(gx, yv * go)
    assert_close(gy, xv * go)
    assert x.grad is None and y.grad is None


def test_grad_with_respect_to_non_leaf():
    x = f64([1.0, 2.0], requires_grad=True)
    h = x * 3.0
    (gh,) = lucid.autograd.grad((h * h).sum(), [h])
    assert_close(gh, [6.0, 12.0])
    assert x.grad is None


def test_grad_unused_input_raises_without_allow_unused():
    x = f64([1.0], requires_grad=True)
    u = f64([2.0, 3.0], requires_grad=True)
    out = (x * 2.0).sum()
    with pytest.raises(RuntimeError):
        lucid.autograd.grad(out, [x, u])
    assert x.grad is None and u.grad is None


def test_grad_allow_unused_gives_none():
    x = f64([1.0], requires_grad=True)
    u = f64([2.0, 3.0], requires_grad=True)
    gx, gu = lucid.autograd.grad((x * 2.0).sum(), [x, u], allow_unused=True)
    assert_close(gx, [2.0])
    assert gu is None


def test_grad_materialize_grads_gives_zeros():
    x = f64([1.0], requires_grad=True)
    u = f64([[2.0, 3.0]], requires_grad=True)
    gx, gu = lucid.autograd.grad((x * 2.0).sum(), [x, u], allow_unused=True, materialize_grads=True)
    assert_close(gx, [2.0])
    assert isinstance(gu, lucid.Tensor)
    assert gu.shape == (1, 2) and gu.dtype == lucid.float64
    assert_close(gu, np.zeros((1, 2)))


def test_grad_frees_graph_unless_retained():
    x = f64([1.0, 2.0], requires_grad=True)
    out = (x * x).sum()
    lucid.autograd.grad(out, [x], retain_graph=True)
    (g,) = lucid.autograd.grad(out, [x])
    assert_close(g, [2.0, 4.0])
    with pytest.raises(RuntimeError, match="retain_graph"):
        lucid.autograd.grad(out, [x])


# ---------------------------------------------------------------------------------------------
# misuse of backward
# ---------------------------------------------------------------------------------------------

def test_non_scalar_root_without_gradient_raises():
    x = f64([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    with pytest.raises(RuntimeError):
        y.backward()
    assert x.grad is None
    with pytest.raises(RuntimeError):
        lucid.autograd.backward([y])
    with pytest.raises(RuntimeError):
        lucid.autograd.grad(y, [x])
    # the graph was not consumed by the failed calls
    y.backward(gradient=f64([1.0, 1.0]))
    assert_close(x.grad, [2.0, 2.0])


def test_backward_on_tensor_not_requiring_grad_raises():
    t = f64([1.0, 2.0]).sum()
    with pytest.raises(RuntimeError):
        t.backward()
    x = f64([1.0], requires_grad=True)
    with lucid.no_grad():
        y = (x * 2.0).sum()
    with pytest.raises(RuntimeError):
        y.backward()
    assert x.grad is None


def test_backward_gradient_of_wrong_shape_raises():
    x = f64([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2.0
    with pytest.raises(RuntimeError):
        y.backward(gradient=f64([1.0, 1.0, 1.0, 1.0]))
    assert x.grad is None


def test_grad_of_input_not_requiring_grad_raises():
    x = f64([1.0], requires_grad=True)
    c = f64([1.0])
    with pytest.raises(RuntimeError):
        lucid.autograd.grad((x * c).sum(), [c])


# ---------------------------------------------------------------------------------------------
# dtypes and shapes of gradients
# ---------------------------------------------------------------------------------------------

def test_grad_dtype_is_leaf_dtype_under_promotion():
    x = lucid.tensor([1.0, 2.0, 3.0], dtype=lucid.float32, requires_grad=True)
    c = lucid.tensor(np.array([0.5, 0.25, 2.0]), dtype=lucid.float64, requires_grad=True)
    y = x * c
    assert y.dtype == lucid.float64
    y.sum().backward()
    assert x.grad.dtype == lucid.float32
    assert c.grad.dtype == lucid.float64
    assert_close(x.grad, np.array([0.5, 0.25, 2.0], dtype=np.float32))
    assert_close(c.grad, np.array([1.0, 2.0, 3.0]))


def test_grad_dtype_with_promoting_matmul():
    a = lucid.tensor(np.ones((2, 3)), dtype=lucid.float32, requires_grad=True)
    b = lucid.tensor(np.full((3, 2), 0.5), dtype=lucid.float64, requires_grad=True)
    (a @ b).sum().backward()
    assert a.grad.dtype == lucid.float32 and a.grad.shape == (2, 3)
    assert b.grad.dtype == lucid.float64 and b.grad.shape == (3, 2)
    assert_close(a.grad, np.ones((2, 3), dtype=np.float32))
    assert_close(b.grad, np.full((3, 2), 2.0))


def test_broadcast_gradients_reduce_to_leaf_shapes(rng):
    shapes = [(3, 1), (1, 4), (4,), ()]
    arrays = [rng.standard_normal(s) for s in shapes]
    ts = [f64(a, requires_grad=True) for a in arrays]
    x, y, z, s = ts
    out = x * y + z * s - x / (y * y + 1.0)
    assert out.shape == (3, 4)
    w = rng.standard_normal((3, 4))
    out.backward(gradient=f64(w))

    def ref(a, b, c, d):
        return a * b + c * d - a / (b * b + 1.0)

    for t, num in zip(ts, numerical_vjp(ref, arrays, w)):
        assert t.grad.shape == t.shape
        assert_close(t.grad, num, rtol=1e-5, atol=1e-7)


def test_scalar_python_operands_get_no_grad_and_int_tensor_inputs_ok():
    x = f64([1.0, 2.0], requires_grad=True)
    i = lucid.tensor([3, 4])
    y = (x * i).sum()
    assert y.dtype == lucid.float64
    y.backward()
    assert_close(x.grad, [3.0, 4.0])
    assert i.grad is None


def test_root_gradient_of_other_float_dtype_is_cast():
    # PyTorch semantics: the gradient is validated by shape and cast to the output's dtype
    x = f64([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    y.backward(gradient=lucid.tensor(np.array([1.0, 2.0], dtype=np.float32)))
    assert x.grad.dtype == lucid.float64
    assert_close(x.grad, [3.0, 6.0])


# ---------------------------------------------------------------------------------------------
# roots: a leaf as root, the same root twice, a root that feeds another root
# ---------------------------------------------------------------------------------------------

def test_backward_on_leaf_itself_copies_user_gradient():
    x = f64([1.0, 2.0], requires_grad=True)
    g = f64([0.5, -1.0])
    x.backward(gradient=g)
    assert_close(x.grad, [0.5, -1.0])
    x.backward(gradient=f64([1.0, 1.0]))
    assert_close(x.grad, [1.5, 0.0])
    assert_close(g, [0.5, -1.0]), "the user's gradient was used as x.grad and then mutated"


def test_same_root_twice_sums_gradients():
    x = f64([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    lucid.autograd.backward([y, y], [f64([1.0, 0.0]), f64([0.5, 3.0])])
    assert_close(x.grad, 2.0 * np.array([1.5, 3.0]))


def test_root_that_feeds_another_root():
    xv = np.array([1.0, -2.0])
    x = f64(xv, requires_grad=True)
    a = x * 2.0
    b = a * 3.0
    ga, gb = np.array([1.0, 2.0]), np.array([-1.0, 0.5])
    lucid.autograd.backward([a, b], [f64(ga), f64(gb)])
    assert_close(x.grad, 2.0 * (ga + 3.0 * gb))
    x.grad = None
    # and in the other order
    a = x * 2.0
    b = a * 3.0
    lucid.autograd.backward([b, a], [f64(gb), f64(ga)])
    assert_close(x.grad, 2.0 * (ga + 3.0 * gb))


def test_grad_of_several_outputs_sharing_subgraph():
    xv = np.array([0.3, -0.7])
    x = f64(xv, requires_grad=True)
    h = x.tanh()
    o1 = (h * h).sum()
    o2 = (h * x).sum()
    (g,) = lucid.autograd.grad([o1, o2], [x])
    t = np.tanh(xv)
    assert_close(g, 2 * t * (1 - t * t) + (1 - t * t) * xv + t, rtol=1e-12, atol=1e-12)


def test_call_forms_positional_and_single_tensor():
    x = f64([1.0, 2.0], requires_grad=True)
    (x * 3.0).backward(f64([1.0, 1.0]))                 # gradient positional
    assert_close(x.grad, [3.0, 3.0])
    res = lucid.autograd.grad((x * x).sum(), x)          # a single tensor as inputs
    assert isinstance(res, tuple) and len(res) == 1
    assert_close(res[0], [2.0, 4.0])
    lucid.autograd.backward((x * 1.0).sum())             # a single tensor as tensors
    assert_close(x.grad, [4.0, 4.0])


def test_retained_grad_of_root_is_not_the_users_gradient_tensor():
    x = f64([1.0, 2.0], requires_grad=True)
    y = x * 2.0
    y.retain_grad()
    ug = f64([1.0, 1.0])
    y.backward(gradient=ug)
    ug.fill_(5.0)                       # the user's tensor is theirs to change afterwards
    assert_close(y.grad, [1.0, 1.0])
    assert_close(x.grad, [2.0, 2.0])


def test_leaf_grad_keeps_dtype_when_a_hook_returns_another_dtype():
    # "Gradients keep each leaf's own dtype": a hook returning float64 for a float32 leaf is
    # either cast back or refused (PyTorch refuses), never stored as float64
    x = lucid.tensor(np.array([1.0, 2.0], dtype=np.float32), requires_grad=True)
    x.register_hook(lambda g: g * lucid.ones(g.shape, dtype=lucid.float64))
    try:
        (x * 3.0).sum().backward()
    except RuntimeError:
        assert x.grad is None
        return
    assert x.grad.dtype == lucid.float32
    assert_close(x.grad, np.array([3.0, 3.0], dtype=np.float32))


def test_inputs_leaf_grad_accumulates_in_place():
    # with inputs= the named leaves accumulate exactly as in a plain backward: in place
    x = f64([1.0, 2.0], requires_grad=True)
    y = f64([3.0, 4.0], requires_grad=True)
    (x * y).sum().backward(inputs=[x])
    g_first = x.grad
    (x * y).sum().backward(inputs=[x])
    assert_close(x.grad, [6.0, 8.0])
    assert_close(g_first, [6.0, 8.0])
    assert y.grad is None


def test_reading_grad_warns_only_on_a_non_leaf_that_does_not_retain_it():
    """PyTorch's rule: a leaf's .grad and a retained non-leaf's .grad read silently."""
    import warnings
    x = f64([1.0, 2.0], requires_grad=True)
    kept, dropped = x * 2.0, x * 3.0
    kept.retain_grad()
    (kept * dropped).sum().backward()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert x.grad is not None and kept.grad is not None
        assert f64([1.0]).grad is None                 # a leaf that never required grad
    assert seen == []
    with pytest.warns(UserWarning, match="retain_grad"):
        assert dropped.grad is None


# ---------------------------------------------------------------------------------------------
# the reused gradient tuple (Note [Gradient tuple])
# ---------------------------------------------------------------------------------------------

def _chain_with_kept_tuples():
    """A chain of one-output nodes, each with a post-hook that keeps the grad_outputs tuple it
    is given, with a copy of the gradient in it: [(tensor, tuple, values)]."""
    x = f64(np.array([1.0, -2.0, 3.0]), requires_grad=True)
    kept, ys = [], []
    y = x
    for k in range(6):
        y = y * float(k + 2)
        ys.append(y)
    for y in ys:
        y.grad_fn.register_hook(
            lambda gi, go, y=y: kept.append((y, go, to_numpy(go[0]).copy())))
    ys[-1].sum().backward()
    return kept


def test_a_kept_grad_outputs_tuple_keeps_its_gradient():
    kept = _chain_with_kept_tuples()
    assert len(kept) == 6
    tuples = [go for _, go, _ in kept]
    assert len({id(t) for t in tuples}) == 6                 # every node gave its own tuple
    for _, go, values in kept:
        assert len(go) == 1
        np.testing.assert_array_equal(to_numpy(go[0]), values)   # unchanged since the hook ran
