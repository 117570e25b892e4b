"""The backward engine and everything around it (API.md section 3, grad mode of section 2)."""
import re
import threading

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
# saved tensor modified in place
# ---------------------------------------------------------------------------------------------

def _int_in(msg, n):
    return re.search(rf"(?<![\d.]){n}(?!\d|\.\d)", msg) is not None


def test_saved_input_modified_in_place_raises():
    x = f64([1.0, 2.0], requires_grad=True)
    a = x * 2.0
    y = a * a                     # MulBackward saves a
    saved_version = a._version
    with lucid.no_grad():
        a.add_(1.0)
        a.add_(1.0)
        a.add_(1.0)
    current = a._version
    assert current > saved_version
    with pytest.raises(RuntimeError) as ei:
        y.sum().backward()
    msg = str(ei.value)
    assert "MulBackward" in msg, msg
    assert _int_in(msg, saved_version) and _int_in(msg, current), \
        f"message should name versions {saved_version} and {current}: {msg!r}"
    assert x.grad is None


def test_saved_output_modified_in_place_raises():
    x = f64([0.1, 0.2], requires_grad=True)
    y = x.tanh()                  # TanhBackward saves its output
    z = y.sum()
    saved_version = y._version
    with lucid.no_grad():
        y.mul_(2.0)
        y.mul_(2.0)
    with pytest.raises(RuntimeError) as ei:
        z.backward()
    msg = str(ei.value)
    assert "TanhBackward" in msg, msg
    assert _int_in(msg, saved_version) and _int_in(msg, y._version), msg
    assert x.grad is None


def test_saved_tensor_modified_through_detached_alias_raises():
    # detach() shares memory and therefore the version counter: only raw NumPy writes bypass it
    x = f64([1.0, 2.0], requires_grad=True)
    a = x * 2.0
    y = (a * a).sum()
    a.detach().add_(1.0)
    with pytest.raises(RuntimeError):
        y.backward()


def test_modifying_unsaved_tensor_is_fine():
    x = f64([1.0, 2.0], requires_grad=True)
    a = x * 2.0
    y = (a + 1.0).sum()           # add saves no tensor
    with lucid.no_grad():
        a.add_(5.0)
    y.backward()
    assert_close(x.grad, [2.0, 2.0])


# ---------------------------------------------------------------------------------------------
# hooks
# ---------------------------------------------------------------------------------------------

def test_leaf_hook_replaces_gradient_before_accumulation():
    x = f64([1.0, 2.0], requires_grad=True)
    seen = []

    def hook(g):
        seen.append(to_numpy(g))
        return g * 2.0

    x.register_hook(hook)
    (x * 3.0).sum().backward()
    assert len(seen) == 1
    assert_close(seen[0], [3.0, 3.0])
    assert_close(x.grad, [6.0, 6.0])


def test_leaf_hook_runs_once_on_summed_gradient():
    x = f64([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(to_numpy(g)))
    (x * 2.0 + x * 5.0).sum().backward()
    assert len(seen) == 1
    assert_close(seen[0], [7.0, 7.0])
    assert_close(x.grad, [7.0, 7.0])


def test_hook_returning_none_keeps_gradient():
    x = f64([1.0, 2.0], requires_grad=True)
    calls = []
    x.register_hook(lambda g: calls.append(1))
    (x * 4.0).sum().backward()
    assert calls == [1]
    assert_close(x.grad, [4.0, 4.0])


def test_hook_remove():
    x = f64([1.0, 2.0], requires_grad=True)
    calls = []

    def hook(g):
        calls.append(1)
        return g * 10.0

    handle = x.register_hook(hook)
    handle.remove()
    (x * 4.0).sum().backward()
    assert calls == []
    assert_close(x.grad, [4.0, 4.0])


def test_non_leaf_hook_replaces_gradient_flowing_on():
    x = f64([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    seen = []

    def hook(g):
        seen.append(to_numpy(g))
        return g * 10.0

    y.register_hook(hook)
    (y * y).sum().backward()
    assert len(seen) == 1
    assert_close(seen[0], [6.0, 12.0])
    assert_close(x.grad, [180.0, 360.0])
    with pytest.warns(UserWarning, match="not a leaf"):
        assert y.grad is None


def test_non_leaf_hook_remove_and_none():
    x = f64([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    h = y.register_hook(lambda g: g * 0.0)
    calls = []
    y.register_hook(lambda g: calls.append(1))
    h.remove()
    y.sum().backward()
    assert calls == [1]
    assert_close(x.grad, [3.0, 3.0])


def test_hooks_chain_in_registration_order():
    x = f64([1.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: g * 2.0)
    x.register_hook(lambda g: seen.append(to_numpy(g)))
    x.register_hook(lambda g: g + 1.0)
    (x * 5.0).sum().backward()
    assert_close(seen[0], [10.0])
    assert_close(x.grad, [11.0])


# ---------------------------------------------------------------------------------------------
# retain_grad
# ---------------------------------------------------------------------------------------------

def test_retain_grad_on_non_leaf():
    xv = np.array([1.0, -1.0])
    x = f64(xv, requires_grad=True)
    y = x * 2.0
    y.retain_grad()
    assert y.retains_grad
    (y * y).sum().backward()
    assert_close(y.grad, 2 * (2 * xv))
    assert_close(x.grad, 8 * xv)


def test_non_leaf_grad_is_none_without_retain_grad():
    x = f64([1.0, -1.0], requires_grad=True)
    y = x * 2.0
    (y * y).sum().backward()
    with pytest.warns(UserWarning, match="not a leaf.*retain_grad"):   # as PyTorch warns
        assert y.grad is None
    assert not y.retains_grad


def test_retain_grad_accumulates_like_leaf():
    x = f64([1.0], requires_grad=True)
    y = x * 2.0
    y.retain_grad()
    z = (y * 3.0).sum()
    z.backward(retain_graph=True)
    z.backward()
    assert_close(y.grad, [6.0])
    assert_close(x.grad, [12.0])


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


# ---------------------------------------------------------------------------------------------
# graph inspection
# ---------------------------------------------------------------------------------------------

def test_grad_fn_names():
    x = f64([1.0, 2.0], requires_grad=True)
    y = f64([3.0, 4.0], requires_grad=True)
    assert (x * y).grad_fn.name() == "MulBackward"
    assert (x + y).grad_fn.name() == "AddBackward"
    assert x.sum().grad_fn.name() == "SumBackward"


def test_grad_fn_name_with_python_scalar_operand():
    # API.md names the node of `*` "MulBackward"; PyTorch (the tie-breaker) gives the same
    # node name whether the other operand is a tensor or a Python scalar
    x = f64([1.0, 2.0], requires_grad=True)
    assert (x * 2.0).grad_fn.name() == "MulBackward"
    assert (2.0 * x).grad_fn.name() == "MulBackward"
    assert (x + 1.0).grad_fn.name() == "AddBackward"


def test_next_functions_structure():
    x = f64([1.0, 2.0], requires_grad=True)
    y = f64([3.0, 4.0], requires_grad=True)
    c = f64([1.0, 1.0])
    p = x * y
    s = (p + c).sum()
    nf = s.grad_fn.next_functions
    assert isinstance(nf, tuple)
    for entry in nf:
        assert isinstance(entry, tuple) and len(entry) == 2
        assert isinstance(entry[1], int)
    add_node = nf[0][0]
    assert add_node.name() == "AddBackward"
    add_next = [n for n, _ in add_node.next_functions if n is not None]
    assert len(add_next) == 1, "c does not require grad: no edge to it"
    assert add_next[0] is p.grad_fn
    mul_next = p.grad_fn.next_functions
    assert len(mul_next) == 2
    acc_x, acc_y = mul_next[0][0], mul_next[1][0]
    for acc, leaf in ((acc_x, x), (acc_y, y)):
        assert "AccumulateGrad" in (type(acc).__name__ + " " + acc.name())
        assert acc.variable is leaf
        assert acc.next_functions == ()
    assert mul_next[0][1] == 0 and mul_next[1][1] == 0


def test_next_functions_of_op_with_non_grad_input_has_none():
    x = f64([1.0, 2.0], requires_grad=True)
    c = f64([3.0, 4.0])
    nf = (c * x).grad_fn.next_functions
    nodes = [n for n, _ in nf]
    assert len(nodes) == 2
    assert nodes[0] is None
    assert nodes[1] is not None and nodes[1].variable is x


# ---------------------------------------------------------------------------------------------
# grad mode
# ---------------------------------------------------------------------------------------------

def test_no_grad_context():
    x = f64([1.0], requires_grad=True)
    assert lucid.is_grad_enabled()
    with lucid.no_grad():
        assert not lucid.is_grad_enabled()
        y = x * 2.0
    assert lucid.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    assert (x * 2.0).requires_grad


def test_no_grad_decorator():
    x = f64([1.0], requires_grad=True)

    @lucid.no_grad()
    def f(t):
        assert not lucid.is_grad_enabled()
        return t * 2.0

    y = f(x)
    assert not y.requires_grad
    assert lucid.is_grad_enabled()
    assert_close(y, [2.0])


def test_enable_grad_inside_no_grad_and_as_decorator():
    x = f64([1.0], requires_grad=True)

    @lucid.enable_grad()
    def g(t):
        return t * 3.0

    with lucid.no_grad():
        with lucid.enable_grad():
            assert lucid.is_grad_enabled()
            y = x * 2.0
        assert not lucid.is_grad_enabled()
        z = g(x)
        assert not lucid.is_grad_enabled()
    assert y.requires_grad and y.grad_fn is not None
    assert z.requires_grad and z.grad_fn is not None


def test_set_grad_enabled_context_and_decorator():
    x = f64([1.0], requires_grad=True)
    with lucid.set_grad_enabled(False):
        assert not lucid.is_grad_enabled()
        with lucid.set_grad_enabled(True):
            assert lucid.is_grad_enabled()
            assert (x * 2.0).requires_grad
        assert not (x * 2.0).requires_grad
    assert lucid.is_grad_enabled()

    @lucid.set_grad_enabled(False)
    def f(t):
        return t * 2.0

    assert lucid.is_grad_enabled(), "decorating with set_grad_enabled(False) changed the mode"
    assert not f(x).requires_grad
    assert lucid.is_grad_enabled()


@pytest.mark.parametrize("mode,named", [("yes", "str"), (1, "int"), (0, "int"), (None, "NoneType"),
                                        (np.bool_(True), "numpy.bool"),
                                        (lucid.tensor(True), "lucid._core.Tensor")])
@pytest.mark.parametrize("initially", [True, False], ids=["on", "off"])
def test_set_grad_enabled_takes_a_bool_only(mode, named, initially):
    # PyTorch's rule: a bool and nothing else, as a call, a context manager or a decorator
    lucid.set_grad_enabled(initially)
    message = rf"set_grad_enabled\(\): argument 'mode' must be bool, not {re.escape(named)}$"
    with pytest.raises(TypeError, match=message):
        lucid.set_grad_enabled(mode)
    with pytest.raises(TypeError, match=message):
        with lucid.set_grad_enabled(mode):
            pass
    with pytest.raises(TypeError, match=message):
        @lucid.set_grad_enabled(mode)
        def f():
            pass
    assert lucid.is_grad_enabled() is initially
    lucid.set_grad_enabled(True)


def test_set_grad_enabled_as_plain_call():
    # PyTorch semantics (the tie-breaker): calling it without `with` sets the mode
    try:
        lucid.set_grad_enabled(False)
        assert not lucid.is_grad_enabled()
        lucid.set_grad_enabled(True)
        assert lucid.is_grad_enabled()
    finally:
        if not lucid.is_grad_enabled():  # restore for the other tests
            lucid.set_grad_enabled(True)


def test_grad_mode_restored_after_exception():
    with pytest.raises(ValueError):
        with lucid.no_grad():
            raise ValueError("boom")
    assert lucid.is_grad_enabled()

    @lucid.no_grad()
    def f():
        raise KeyError("x")

    with pytest.raises(KeyError):
        f()
    assert lucid.is_grad_enabled()


def test_grad_mode_is_thread_local():
    x = f64([1.0], requires_grad=True)
    result = {}

    def worker():
        result["enabled"] = lucid.is_grad_enabled()
        result["requires_grad"] = (x * 2.0).requires_grad
        with lucid.no_grad():
            result["inner"] = lucid.is_grad_enabled()
            ev_set.set()
            ev_main.wait(10)

    ev_set, ev_main = threading.Event(), threading.Event()
    with lucid.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        assert ev_set.wait(10)
        assert not lucid.is_grad_enabled()
        ev_main.set()
        t.join(10)
    assert result == {"enabled": True, "requires_grad": True, "inner": False}
    assert lucid.is_grad_enabled()

    # the thread's no_grad did not leak into the main thread
    ev_set.clear()
    ev_main.clear()
    t = threading.Thread(target=worker)
    t.start()
    assert ev_set.wait(10)
    assert lucid.is_grad_enabled(), "another thread's no_grad changed this thread's mode"
    ev_main.set()
    t.join(10)


def test_backward_under_no_grad_still_works():
    x = f64([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    with lucid.no_grad():
        y.backward()
    assert_close(x.grad, [2.0, 4.0])
    assert not x.grad.requires_grad


# ---------------------------------------------------------------------------------------------
# independent graphs from several threads (API.md section 6)
# ---------------------------------------------------------------------------------------------

def test_independent_graphs_backward_from_threads():
    import sys
    errors = []
    n_threads, n_iter = 4, 60
    start = threading.Barrier(n_threads)

    def worker(seed):
        try:
            rng = np.random.default_rng(seed)
            start.wait(10)
            for it in range(n_iter):
                a = rng.standard_normal((4, 3))
                x = f64(a, requires_grad=True)
                h = x * 2.0
                # a Python hook in the middle of the traversal gives other threads a chance to
                # run their own backward while this one is suspended
                h.register_hook(lambda g: g * 1.0)
                y = (h.tanh() * x).sum()
                if it % 2:
                    y.backward()
                    g = to_numpy(x.grad)
                else:
                    (g,) = lucid.autograd.grad(y, [x])
                    g = to_numpy(g)
                t = np.tanh(2 * a)
                np.testing.assert_allclose(g, 2 * (1 - t * t) * a + t, rtol=1e-12, atol=1e-12)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(old)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors[0]


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

