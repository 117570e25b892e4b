"""Saved-tensor hooks, checkpointing, ctx.mark_dirty and setup_context-style Functions.

Each section pins the behaviour of API.md section 10 (memory and graph tools): what is packed and
unpacked, that version checks still hold, that checkpointing gives the same gradients and leaks
nothing however far backward gets, and that in-place Functions form no reference cycle.
"""
import gc
import threading
import weakref

import numpy as np
import pytest

import lucid
from lucid.autograd.graph import disable_saved_tensors_hooks, saved_tensors_hooks
from lucid.utils.checkpoint import checkpoint, checkpoint_sequential
from support.checks import assert_close
from support.shared_functions import Cube


def f64(values, requires_grad=False):
    return lucid.tensor(np.asarray(values, dtype=np.float64), requires_grad=requires_grad)


@pytest.fixture
def gc_off():
    gc.collect()
    gc.disable()
    yield
    gc.enable()


# ------------------------------------------------------------------------------------------------
# saved-tensor hooks
# ------------------------------------------------------------------------------------------------

def _program(x, w):
    return ((x * w).exp() / (x * x + 1.0)).tanh().sum() + (x @ w.T).sigmoid().mean()


def _rand(rng, *shape, requires_grad=True):
    return lucid.tensor(rng.standard_normal(shape), dtype=lucid.float64,
                        requires_grad=requires_grad)


def test_hooks_see_every_saved_tensor_and_give_the_same_gradients(rng):
    """Built-in ops save through the hooks: pack sees a tensor for every saved entry and the
    gradients equal those computed without hooks."""
    x, w = _rand(rng, 3, 4), _rand(rng, 3, 4)
    expected = lucid.autograd.grad(_program(x, w), [x, w])
    packed, unpacked = [], []

    def pack(t):
        packed.append((t.shape, t.dtype))
        return np.array(t.numpy(), copy=True)          # the values only: offload-style

    def unpack(a):
        unpacked.append(a.shape)
        return lucid.from_numpy(a)

    with saved_tensors_hooks(pack, unpack):
        loss = _program(x, w)
    assert len(packed) >= 8
    got = lucid.autograd.grad(loss, [x, w])
    assert len(unpacked) == len(packed)
    for a, b in zip(got, expected):
        assert_close(a, b.numpy(), rtol=1e-12, atol=1e-12)


def test_pack_receives_an_alias_without_history(rng):
    x = _rand(rng, 3)
    seen = []

    def pack(t):
        seen.append(t)
        return t

    with saved_tensors_hooks(pack, lambda t: t):
        y = (x * 2.0).exp()
    assert seen and all(not t.requires_grad and t.grad_fn is None for t in seen)
    y.sum().backward()
    assert_close(x.grad, 2.0 * np.exp(2.0 * x.detach().numpy()))


def test_identity_hook_on_a_saved_output_forms_no_cycle(gc_off):
    """exp saves its output; with an identity pack hook the node must still not keep its
    output alive through a cycle (freed by refcount alone)."""
    x = f64([1.0, 2.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        y = x.exp()
    ry, rn = weakref.ref(y), weakref.ref(y.grad_fn)
    del y
    assert ry() is None and rn() is None


def test_function_save_for_backward_goes_through_the_hooks():
    calls = []

    x = f64([1.0, -2.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: calls.append("pack") or t.numpy().copy(),
                             lambda a: calls.append("unpack") or lucid.from_numpy(a)):
        y = Cube.apply(x)
    assert calls == ["pack"]
    y.sum().backward()
    assert calls == ["pack", "unpack"]
    assert_close(x.grad, [3.0, 12.0])


def test_innermost_pair_applies_and_pairs_pop():
    outer, inner = [], []
    x = f64([1.0, 2.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: outer.append(1) or t, lambda t: t):
        with saved_tensors_hooks(lambda t: inner.append(1) or t, lambda t: t):
            (x * x).sum()
        n_inner = len(inner)
        (x * x).sum()
    assert n_inner == 2 and len(inner) == 2 and len(outer) == 2
    (x * x).sum()
    assert len(outer) == 2            # no hooks after the blocks


def test_hooks_are_per_thread():
    seen = []
    x = f64([1.0, 2.0], requires_grad=True)

    def other_thread():
        (x * x).sum()

    with saved_tensors_hooks(lambda t: seen.append(1) or t, lambda t: t):
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
    assert seen == []


def test_create_graph_through_unpacked_tensors(rng):
    """Unpacked tensors get the saved tensor's history back: second derivatives are right."""
    x = _rand(rng, 4)
    f = lambda t: (t.tanh() * t * t).sum()
    (g,) = lucid.autograd.grad(f(x), [x], create_graph=True)
    (h_plain,) = lucid.autograd.grad(g.sum(), [x])
    with saved_tensors_hooks(lambda t: t.numpy().copy(), lambda a: lucid.from_numpy(a)):
        y = f(x)
    (g,) = lucid.autograd.grad(y, [x], create_graph=True)
    (h_hooked,) = lucid.autograd.grad(g.sum(), [x])
    assert_close(h_hooked, h_plain.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("bad, message", [
    (lambda a: None, "must return a Tensor"),
    (lambda a: lucid.zeros(5, dtype=lucid.float64), "shape"),
    (lambda a: lucid.zeros(2, dtype=lucid.float32), "dtype"),
])
def test_unpack_result_is_checked(bad, message):
    x = f64([1.0, 2.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: t.numpy().copy(), bad):
        y = (x * x).sum()
    with pytest.raises(RuntimeError, match=message):
        y.backward()
    assert x.grad is None


def test_version_check_still_holds_with_hooks():
    x = f64([1.0, 2.0], requires_grad=True)
    a = x * 1.0
    with saved_tensors_hooks(lambda t: t.numpy().copy(), lambda v: lucid.from_numpy(v)):
        y = (a * a).sum()
    with lucid.no_grad():
        a.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()


def test_exception_in_pack_hook_propagates_with_a_note():
    x = f64([1.0, 2.0], requires_grad=True)

    def pack(t):
        raise ValueError("pack failed")

    with pytest.raises(ValueError, match="pack failed") as info:
        with saved_tensors_hooks(pack, lambda t: t):
            x * x
    assert any("pack hook" in note for note in info.value.__notes__)
    (x * x).sum().backward()          # hooks are off again
    assert_close(x.grad, [2.0, 4.0])


def test_disable_saved_tensors_hooks():
    with disable_saved_tensors_hooks("hooks are not allowed in this block"):
        with pytest.raises(RuntimeError, match="not allowed in this block"):
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        pass


def test_hooks_take_callables():
    with pytest.raises(TypeError):
        saved_tensors_hooks(1, lambda t: t)


# ------------------------------------------------------------------------------------------------
# checkpoint
# ------------------------------------------------------------------------------------------------

def _weights(rng, n=3, size=6):
    return [_rand(rng, size, size) for _ in range(n)]


def _block(h, w, scale=1.0, *, shift=0.0):
    return (h @ w).tanh() * scale + shift + lucid.randn(1, dtype=lucid.float64) * 0.1


def _loss(x, ws, ck, **options):
    lucid.manual_seed(3)
    h = x
    for w in ws:
        h = checkpoint(_block, h, w, 0.5, shift=0.25, **options) if ck else \
            _block(h, w, 0.5, shift=0.25)
    return (h * h).sum()


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpoint_gives_the_same_gradients(rng, reentrant):
    """kwargs, non-tensor arguments and randn inside the function (RNG state preserved)."""
    ws, x = _weights(rng), _rand(rng, 2, 6)
    expected = lucid.autograd.grad(_loss(x, ws, False), ws + [x])
    loss = _loss(x, ws, True, use_reentrant=reentrant) if not reentrant else None
    if reentrant:
        # the reentrant variant takes no kwargs for fn: wrap them in
        lucid.manual_seed(3)
        h = x
        for w in ws:
            h = checkpoint(lambda a, b: _block(a, b, 0.5, shift=0.25), h, w, use_reentrant=True)
        loss = (h * h).sum()
        loss.backward()
        got = [t.grad for t in ws + [x]]
    else:
        got = lucid.autograd.grad(loss, ws + [x])
    for a, b in zip(got, expected):
        assert_close(a, b.numpy(), rtol=1e-12, atol=1e-12)


def test_checkpoint_recomputes_once_per_backward(rng):
    calls = []
    ws, x = _weights(rng, n=1), _rand(rng, 2, 6)

    def fn(h, w):
        calls.append(1)
        return (h @ w).tanh().exp()

    y = checkpoint(fn, x, ws[0]).sum()
    assert len(calls) == 1
    y.backward(retain_graph=True)
    assert len(calls) == 2
    y.backward()
    assert len(calls) == 3


def test_checkpoint_keeps_no_activation(gc_off, rng):
    seen = []

    def fn(h):
        a = h.exp()
        seen.append(weakref.ref(a))
        return a.tanh()

    x = _rand(rng, 100)
    y = checkpoint(fn, x)
    assert seen[0]() is None              # the intermediate is not kept by the graph
    y.sum().backward()
    assert_close(x.grad, (1 - np.tanh(np.exp(x.detach().numpy())) ** 2) *
                 np.exp(x.detach().numpy()))


def test_checkpoint_create_graph(rng):
    ws, x = _weights(rng), _rand(rng, 2, 6)
    (g1,) = lucid.autograd.grad(_loss(x, ws, True), [ws[0]], create_graph=True)
    (h1,) = lucid.autograd.grad((g1 * g1).sum(), [ws[1]])
    (g2,) = lucid.autograd.grad(_loss(x, ws, False), [ws[0]], create_graph=True)
    (h2,) = lucid.autograd.grad((g2 * g2).sum(), [ws[1]])
    assert_close(h1, h2.numpy(), rtol=1e-10, atol=1e-12)


def test_checkpoint_tuple_outputs(rng):
    x = _rand(rng, 4)

    def fn(t):
        return t.exp(), t.sin() * 2.0

    a, b = checkpoint(fn, x)
    (a.sum() + b.sum()).backward()
    v = x.detach().numpy()
    assert_close(x.grad, np.exp(v) + 2 * np.cos(v))


@pytest.mark.parametrize("stop", ["never", "partial"])
def test_checkpoint_leaks_nothing(gc_off, rng, stop):
    """A checkpointed graph never backwarded, or backwarded only partly, is freed by refcount."""
    x = _rand(rng, 3, 6)
    ws = _weights(rng)
    lucid.manual_seed(0)
    h = x
    refs = []
    for w in ws:
        h = checkpoint(_block, h, w)
        refs.append(weakref.ref(h.grad_fn))
    loss = (h * h).sum()
    if stop == "partial":
        lucid.autograd.grad(loss, [h], retain_graph=True)      # reaches no checkpoint segment
        mid = refs[1]()
        lucid.autograd.grad(loss, [ws[2]], retain_graph=True)  # only the last segment
    del h, loss
    mid = None
    assert all(r() is None for r in refs)


def test_checkpoint_reentrant_refuses_grad_and_create_graph(rng):
    x = _rand(rng, 4)
    y = checkpoint(lambda t: t.exp(), x, use_reentrant=True).sum()
    with pytest.raises(RuntimeError, match="use_reentrant=False"):
        lucid.autograd.grad(y, [x], retain_graph=True)
    with pytest.raises(RuntimeError, match="use_reentrant=False"):
        y.backward(create_graph=True)
    assert x.grad is None or np.all(np.isfinite(x.grad.numpy()))


def test_checkpoint_sequential(rng):
    x = _rand(rng, 5)
    fns = [lambda t: t * 2.0, lambda t: t.exp(), lambda t: t.sin(), lambda t: t * t]
    expected_out = x
    for f in fns:
        expected_out = f(expected_out)
    (expected,) = lucid.autograd.grad(expected_out.sum(), [x])
    out = checkpoint_sequential(fns, 2, x)
    (got,) = lucid.autograd.grad(out.sum(), [x])
    assert_close(got, expected.numpy(), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError):
        checkpoint_sequential(fns, 0, x)


def test_checkpoint_rejects_non_callables():
    with pytest.raises(TypeError):
        checkpoint(3, f64([1.0]))


# ------------------------------------------------------------------------------------------------
# mark_dirty
# ------------------------------------------------------------------------------------------------

class ScaleInPlace(lucid.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        x.mul_(k)
        ctx.mark_dirty(x)
        ctx.k = k
        return x

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None


def test_mark_dirty_returns_the_input_with_new_history():
    a = f64([1.0, 2.0], requires_grad=True)
    b = a * 1.0
    version = b._version
    c = ScaleInPlace.apply(b, 3.0)
    assert c is b
    assert b._version > version
    assert b.grad_fn.name() == "ScaleInPlaceBackward"
    (c * c).sum().backward()
    assert_close(a.grad, 2 * 9.0 * np.array([1.0, 2.0]))


def test_mark_dirty_refuses_a_leaf_requiring_grad():
    a = f64([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        ScaleInPlace.apply(a, 3.0)


def test_mark_dirty_without_grad_just_writes():
    a = f64([1.0, 2.0])
    out = ScaleInPlace.apply(a, 2.0)
    assert out is a and a.grad_fn is None
    assert_close(a, [2.0, 4.0])


def test_mark_dirty_stale_views_and_no_cycle(gc_off):
    a = f64([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 1.0
    view = b[0:2]
    c = ScaleInPlace.apply(b, 2.0)
    with pytest.raises(RuntimeError, match="view"):
        view * 1.0
    node = weakref.ref(c.grad_fn)
    del b, c, view                        # the stale view holds its base, nothing more
    assert node() is None


def test_mark_dirty_must_return_the_tensor():
    class Forgets(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1.0)
            ctx.mark_dirty(x)
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            return g * 2.0

    with pytest.raises(RuntimeError, match="did not return it"):
        Forgets.apply(f64([1.0]) * 1.0)


def test_mark_dirty_of_a_tensor_that_is_not_an_input_warns_like_pytorch():
    class DirtiesAnOther(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            other = x * 1.0                   # not an input of the Function
            ctx.mark_dirty(other)
            return other

        @staticmethod
        def backward(ctx, g):
            return g

    a = f64([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match=r"Function DirtiesAnOther: ctx\.mark_dirty\(\) received "
                                         r"a tensor that was not an input"):
        out = DirtiesAnOther.apply(a)
    out.sum().backward()                      # still a working call, as in PyTorch
    assert_close(a.grad, [1.0, 1.0])
    assert_close(a, [1.0, 2.0], rtol=0, atol=0)


# ------------------------------------------------------------------------------------------------
# setup_context style
# ------------------------------------------------------------------------------------------------

class Scaled(lucid.autograd.Function):
    @staticmethod
    def forward(x, k):
        return x * k, (x * 0).sum()

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, k = inputs
        ctx.k = k
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        ctx.mark_non_differentiable(output[1])
        ctx.set_materialize_grads(True)

    @staticmethod
    def backward(ctx, g, g_unused):
        (x,) = ctx.saved_tensors
        assert ctx.needs_input_grad == (True, False)
        return g * ctx.k + x * 0.0, None

    @staticmethod
    def jvp(ctx, tx, tk):
        return tx * ctx.k, None


def test_setup_context_style_has_every_ctx_feature():
    x = f64([1.0, 2.0], requires_grad=True)
    y, z = Scaled.apply(x, 3.0)
    assert z.grad_fn is None and y.grad_fn.name() == "ScaledBackward"
    y.sum().backward()
    assert_close(x.grad, [3.0, 3.0])
    assert lucid.autograd.gradcheck(lambda t: Scaled.apply(t, 3.0)[0], (f64([0.5, 1.5], True),),
                                    check_forward_ad=True)


def test_classic_and_setup_context_styles_agree():
    class Classic(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    x1, x2 = f64([1.0, -1.0], True), f64([1.0, -1.0], True)
    Classic.apply(x1, 2.5).sum().backward()
    Scaled.apply(x2, 2.5)[0].sum().backward()
    assert_close(x1.grad, x2.grad.numpy())
