"""lucid.utils.checkpoint: the same gradients as without it, no activation kept, nothing leaked
however far backward gets; and the recomputation must reproduce the forward pass, or say why it
can't.

Backward re-runs the checkpointed function from its inputs. An input changed in place since
checkpoint was called would make it differentiate at the new values: backward raises PyTorch's
in-place-modification RuntimeError, naming the input (both use_reentrant modes). A re-run that
produces tensors of other shapes or dtypes than the forward pass raises a RuntimeError saying so
(not an error about saved-tensor hooks the user never wrote).
"""
import math
import weakref

import numpy as np
import pytest

import lucid
from lucid.autograd import gradcheck
from lucid.utils.checkpoint import checkpoint, checkpoint_sequential
from support.checks import assert_close, f64, random_leaf

MODES = [False, True]
DTYPES = [lucid.float32, lucid.float64]
SHAPES = [(), (3,), (2, 3), (0, 2)]


def leaf(shape, dtype=lucid.float64, seed=0):
    values = np.random.default_rng(seed).uniform(-1.0, 1.0, shape)
    return lucid.tensor(values, dtype=dtype, requires_grad=True)


# Functions whose backward reads the input only through what they save internally: a stale
# input would silently change the gradient (exp().exp() saves only its outputs).
FUNCTIONS = {
    "exp_exp": lambda a: a.exp().exp(),
    "tanh_times_sin": lambda a: a.tanh() * a.sin(),
    "square_sum": lambda a: (a * a).sum(),
}


def inplace_error(reentrant, fn, *args, **kwargs):
    """Run checkpoint(fn, *args), change args[0] in place, backward: the RuntimeError."""
    y = checkpoint(fn, *args, use_reentrant=reentrant, **kwargs)
    with lucid.no_grad():
        args[0].mul_(2.0)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    return str(info.value)


def assert_inplace_message(message, which):
    assert "modified by an inplace operation" in message
    assert message.startswith("checkpoint:")
    assert which in message and "recompute" in message


@pytest.mark.parametrize("reentrant", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_an_input_changed_in_place_after_forward_raises(reentrant, dtype, shape, name):
    x = leaf(shape, dtype)
    message = inplace_error(reentrant, FUNCTIONS[name], x)
    if name == "square_sum" and not reentrant:
        # MulBackward saved x itself: its own version check comes first (as in PyTorch, whose
        # message is then the same generic one)
        assert "modified by an in-place operation" in message and "MulBackward" in message
    else:
        assert_inplace_message(message, "argument 0")
    assert "version 0" in message and "version 1" in message
    assert x.grad is None                           # nothing was written


def test_repro_value_without_the_change_is_the_plain_gradient():
    # the reproducer's numbers: unchanged input, same gradient as without checkpoint
    for reentrant in MODES:
        x = lucid.ones(3, dtype=lucid.float64, requires_grad=True)
        checkpoint(FUNCTIONS["exp_exp"], x, use_reentrant=reentrant).sum().backward()
        assert_close(x.grad, [math.exp(math.exp(1.0)) * math.exp(1.0)] * 3, rtol=1e-12)


@pytest.mark.parametrize("reentrant", MODES)
def test_the_changed_input_is_named_among_several(reentrant):
    x, w = leaf((2, 3)), leaf((3, 3), seed=1)
    b = lucid.zeros(3, dtype=lucid.float64)          # does not require grad: checked too
    fn = lambda a, m, c: (a @ m + c).tanh()          # noqa: E731
    for position, tensor in ((1, w), (2, b)):
        y = checkpoint(fn, x, w, b, use_reentrant=reentrant)
        with lucid.no_grad():
            tensor.add_(0.5)
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
        assert_inplace_message(str(info.value), f"argument {position}")
        assert x.grad is None and w.grad is None


@pytest.mark.parametrize("reentrant", MODES)
def test_a_change_through_a_view_of_the_input_raises(reentrant):
    x = leaf((4,))
    y = checkpoint(FUNCTIONS["exp_exp"], x, use_reentrant=reentrant)
    with lucid.no_grad():
        x[1:3].mul_(3.0)                            # the view shares the version counter
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@pytest.mark.parametrize("reentrant", MODES)
def test_a_non_leaf_input_changed_in_place_raises(reentrant):
    x = leaf((3,))
    h = x * 1.5
    y = checkpoint(FUNCTIONS["tanh_times_sin"], h, use_reentrant=reentrant)
    h.add_(1.0)                                     # recorded in the graph: grad mode on
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    assert_inplace_message(str(info.value), "argument 0")


def test_keyword_and_nested_tensor_arguments_are_checked():
    x, w = leaf((3,)), leaf((3,), seed=1)
    y = checkpoint(lambda a, *, scale: (a * scale).exp(), x, scale=w)
    with lucid.no_grad():
        w.mul_(2.0)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    assert_inplace_message(str(info.value), "keyword argument 'scale'")
    y = checkpoint(lambda pair: (pair[0] * pair[1]).exp(), [x, w])
    with lucid.no_grad():
        w.mul_(2.0)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    assert_inplace_message(str(info.value), "argument 0[1]")


@pytest.mark.parametrize("reentrant", MODES)
def test_a_change_between_two_backwards_raises_at_the_second(reentrant):
    x = leaf((3,))
    y = checkpoint(FUNCTIONS["exp_exp"], x, use_reentrant=reentrant).sum()
    y.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    with lucid.no_grad():
        x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    assert_close(x.grad, first)                     # the second backward added nothing


@pytest.mark.parametrize("reentrant", MODES)
def test_a_function_that_changes_its_own_input_raises(reentrant):
    # the re-run would change it again and see other values than the forward pass did
    x = leaf((3,))
    buffer = lucid.zeros(3, dtype=lucid.float64)

    def fn(a, buf):
        with lucid.no_grad():
            buf.add_(1.0)
        return (a * buf).exp()

    y = checkpoint(fn, x, buffer, use_reentrant=reentrant)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    assert_inplace_message(str(info.value), "argument 1")


@pytest.mark.parametrize("reentrant", MODES)
def test_changes_before_checkpoint_or_after_backward_are_fine(reentrant):
    x = leaf((2, 2))
    with lucid.no_grad():
        x.mul_(0.5)                                 # before: the forward sees it
    y = checkpoint(FUNCTIONS["exp_exp"], x, use_reentrant=reentrant)
    y.sum().backward()
    v = x.detach().numpy()
    assert_close(x.grad, np.exp(np.exp(v)) * np.exp(v), rtol=1e-12)
    with lucid.no_grad():
        x.mul_(2.0)                                 # after: nothing left to recompute


def test_checkpoint_gradients_match_finite_differences():
    # (use_reentrant=True refuses autograd.grad, which gradcheck uses)
    x = leaf((2, 3))
    w = leaf((3, 2), seed=4)
    fn = lambda a, m: (a @ m).tanh().exp()          # noqa: E731
    assert gradcheck(lambda a, m: checkpoint(fn, a, m), [x, w])


# -- a re-run that does not reproduce the forward pass -----------------------------------------

def changing(second, reduce):
    """A function that computes x on its first call and second(x) on the later ones, then exp
    (and sum, when reduce: the re-run's outputs then look like the forward's)."""
    calls = []

    def fn(x):
        calls.append(1)
        y = (x if len(calls) == 1 else second(x)).exp()
        return y.sum() if reduce else y
    return fn


# use_reentrant=True sees only the outputs of the re-run (its forward saves nothing)
VARIANTS = [(False, True), (False, False), (True, False)]


def assert_metadata_message(error, saved, recomputed):
    message = str(error)
    notes = getattr(error, "__notes__", [])
    assert not any("hook" in note for note in notes), notes      # checkpoint's hooks are its own
    assert any("ExpBackward" in note or "_ReentrantCheckpoint" in note
               for note in notes), notes                        # the node that needed them
    assert message.startswith("checkpoint:")
    assert "different metadata than during the forward pass" in message
    assert "recomput" in message.lower() and "unpack hook" not in message
    assert saved in message and recomputed in message


@pytest.mark.parametrize("reentrant, reduce", VARIANTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_re_run_with_other_shapes_says_so(reentrant, reduce, dtype):
    x = leaf((3,), dtype)
    y = checkpoint(changing(lambda t: lucid.cat([t, t]), reduce), x, use_reentrant=reentrant)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    assert_metadata_message(info.value, "(3,)", "(6,)")
    assert x.grad is None


@pytest.mark.parametrize("reentrant, reduce", VARIANTS)
def test_a_re_run_with_another_dtype_says_so(reentrant, reduce):
    x = leaf((2, 2), lucid.float32)
    y = checkpoint(changing(lambda t: t.double(), reduce), x, use_reentrant=reentrant)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    assert_metadata_message(info.value, "float32", "float64")
    assert x.grad is None


def test_a_re_run_with_other_shapes_under_create_graph_says_so():
    x = leaf((2, 3))
    y = checkpoint(changing(lambda t: t.reshape(3, 2), True), x)
    with pytest.raises(RuntimeError) as info:
        lucid.autograd.grad(y, x, create_graph=True)
    assert_metadata_message(info.value, "(2, 3)", "(3, 2)")


# ------------------------------------------------------------------------------------------------
# checkpoint gives the same gradients and leaks nothing
# ------------------------------------------------------------------------------------------------

def _weights(rng, n=3, size=6):
    return [random_leaf(rng, size, size) for _ in range(n)]


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
    ws, x = _weights(rng), random_leaf(rng, 2, 6)
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
    ws, x = _weights(rng, n=1), random_leaf(rng, 2, 6)

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

    x = random_leaf(rng, 100)
    y = checkpoint(fn, x)
    assert seen[0]() is None              # the intermediate is not kept by the graph
    y.sum().backward()
    assert_close(x.grad, (1 - np.tanh(np.exp(x.detach().numpy())) ** 2) *
                 np.exp(x.detach().numpy()))


def test_checkpoint_create_graph(rng):
    ws, x = _weights(rng), random_leaf(rng, 2, 6)
    (g1,) = lucid.autograd.grad(_loss(x, ws, True), [ws[0]], create_graph=True)
    (h1,) = lucid.autograd.grad((g1 * g1).sum(), [ws[1]])
    (g2,) = lucid.autograd.grad(_loss(x, ws, False), [ws[0]], create_graph=True)
    (h2,) = lucid.autograd.grad((g2 * g2).sum(), [ws[1]])
    assert_close(h1, h2.numpy(), rtol=1e-10, atol=1e-12)


def test_checkpoint_tuple_outputs(rng):
    x = random_leaf(rng, 4)

    def fn(t):
        return t.exp(), t.sin() * 2.0

    a, b = checkpoint(fn, x)
    (a.sum() + b.sum()).backward()
    v = x.detach().numpy()
    assert_close(x.grad, np.exp(v) + 2 * np.cos(v))


@pytest.mark.parametrize("stop", ["never", "partial"])
def test_checkpoint_leaks_nothing(gc_off, rng, stop):
    """A checkpointed graph never backwarded, or backwarded only partly, is freed by refcount."""
    x = random_leaf(rng, 3, 6)
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
    x = random_leaf(rng, 4)
    y = checkpoint(lambda t: t.exp(), x, use_reentrant=True).sum()
    with pytest.raises(RuntimeError, match="use_reentrant=False"):
        lucid.autograd.grad(y, [x], retain_graph=True)
    with pytest.raises(RuntimeError, match="use_reentrant=False"):
        y.backward(create_graph=True)
    assert x.grad is None or np.all(np.isfinite(x.grad.numpy()))


def test_checkpoint_sequential(rng):
    x = random_leaf(rng, 5)
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
