"""Saved-tensor hooks (API.md section 10): what is packed and unpacked, that version checks
still hold, per-thread pairs, and that the hooks never apply to what they themselves save,
however they nest.
"""
import threading
import weakref

import numpy as np
import pytest

import lucid
from lucid.autograd.graph import disable_saved_tensors_hooks, saved_tensors_hooks
from support.checks import assert_close, f64, leaf, random_leaf
from support.shared_functions import Cube


# ------------------------------------------------------------------------------------------------
# saved-tensor hooks
# ------------------------------------------------------------------------------------------------

def _program(x, w):
    return ((x * w).exp() / (x * x + 1.0)).tanh().sum() + (x @ w.T).sigmoid().mean()


def test_hooks_see_every_saved_tensor_and_give_the_same_gradients(rng):
    """Built-in ops save through the hooks: pack sees a tensor for every saved entry and the
    gradients equal those computed without hooks."""
    x, w = random_leaf(rng, 3, 4), random_leaf(rng, 3, 4)
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
    x = random_leaf(rng, 3)
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
    x = random_leaf(rng, 4)
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
# hooks never apply to what the hooks themselves save, however they nest
# A pack or unpack hook may run ops that save tensors, open (and close) its own
# saved_tensors_hooks block, or raise. The pairs that were active when the hook was called never
# apply inside it; a block the hook opens applies while it is open, to what is saved in it; and
# whatever happens in the hook, the thread's hooks are as they were once it returns or raises.
# ------------------------------------------------------------------------------------------------

DTYPES = [lucid.float32, lucid.float64]


def saving_work(dtype):
    """Ops that save tensors for backward (built-ins, a matmul and a Python Function)."""
    w = leaf([[0.5, -1.0], [2.0, 0.25]], dtype)
    return ((w * w.exp()).tanh() @ w).sum() + Cube.apply(w).sum()


def counting(log, key, value=lambda t: t):
    def hook(t):
        log[key] = log.get(key, 0) + 1
        return value(t)
    return hook


def expect_normal_hooks():
    """The thread's hooks work as usual: a new block packs exactly what is saved inside it,
    and nothing is packed once it is closed."""
    log = {}
    x = leaf([1.0, 2.0])
    with saved_tensors_hooks(counting(log, "pack"), counting(log, "unpack")):
        y = (x * x).sum()
    assert log == {"pack": 2}
    z = (x * x).sum()
    y.backward()
    z.backward()
    assert log == {"pack": 2, "unpack": 2}
    assert_close(x.grad, [4.0, 8.0])


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_pack_hook_that_opens_and_closes_its_own_block(dtype):
    # repro_C: closing the hook's block must not turn the outer pair back on inside the hook
    log = {}

    def pack(t):
        log["pack"] = log.get("pack", 0) + 1
        with saved_tensors_hooks(lambda u: u, lambda u: u):
            pass
        saving_work(dtype)
        return t

    x = leaf([1.0, -2.0, 3.0], dtype)
    with saved_tensors_hooks(pack, lambda p: p):
        y = (x * x).sum()
    y.backward()
    assert log == {"pack": 2}                      # x twice, as PyTorch
    assert_close(x.grad, [2.0, -4.0, 6.0], rtol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_ops_inside_a_pack_hook_are_not_packed(dtype):
    log = {}

    def pack(t):
        log["pack"] = log.get("pack", 0) + 1
        saving_work(dtype)
        return t

    x = leaf([0.5, 1.5], dtype)
    with saved_tensors_hooks(pack, lambda p: p):
        y = (x.exp() * x).sum()                    # Exp saves its output, Mul both operands
    assert log == {"pack": 3}
    y.backward()
    e = np.exp([0.5, 1.5])
    assert_close(x.grad, e * np.array([0.5, 1.5]) + e, rtol=1e-6)


def test_a_block_opened_inside_a_pack_hook_applies_to_what_it_saves():
    log = {}
    inner_pack = counting(log, "inner_pack")

    def pack(t):
        log["pack"] = log.get("pack", 0) + 1
        with saved_tensors_hooks(inner_pack, counting(log, "inner_unpack")):
            w = leaf([1.0, 2.0])
            (w * w).sum().backward()               # two saves, unpacked by this backward
        saving_work(lucid.float64)                 # after the block: nothing applies
        return t

    x = leaf([3.0])
    with saved_tensors_hooks(pack, lambda p: p):
        y = (x * x).sum()
    assert log == {"pack": 2, "inner_pack": 4, "inner_unpack": 4}


def test_the_hooks_of_a_block_inside_a_pack_hook_do_not_apply_to_their_own_saves():
    log = {}

    def inner_pack(t):
        log["inner_pack"] = log.get("inner_pack", 0) + 1
        saving_work(lucid.float64)                 # would recurse if the inner pair applied
        return t

    def pack(t):
        log["pack"] = log.get("pack", 0) + 1
        with saved_tensors_hooks(inner_pack, lambda u: u):
            w = leaf([1.0, 2.0])
            _ = w * w
        return t

    x = leaf([3.0])
    with saved_tensors_hooks(pack, lambda p: p):
        _ = x * x
    assert log == {"pack": 2, "inner_pack": 4}


@pytest.mark.parametrize("dtype", DTYPES)
def test_ops_inside_an_unpack_hook_are_not_packed(dtype):
    log = {}

    def unpack(p):
        log["unpack"] = log.get("unpack", 0) + 1
        with lucid.enable_grad():
            saving_work(dtype)                     # grad mode on inside the hook: they save
        return p

    x = leaf([1.0, 2.0], dtype)
    with saved_tensors_hooks(counting(log, "pack"), unpack):
        y = (x * x.sin()).sum()
        y.backward()                               # backward inside the block
    assert log == {"pack": 3, "unpack": 3}
    v = np.array([1.0, 2.0])
    assert_close(x.grad, np.sin(v) + v * np.cos(v), rtol=1e-6)


def test_create_graph_through_an_unpack_hook_that_runs_ops():
    # the recorded backward saves tensors inside the block (those are packed); what the unpack
    # hook itself saves is not: the count is that of an unpack hook that runs no ops
    def run(unpack_runs_ops):
        log = {}

        def unpack(p):
            if unpack_runs_ops:
                saving_work(lucid.float64)
            return p

        x = leaf([0.5, -1.0])
        with saved_tensors_hooks(counting(log, "pack"), unpack):
            y = (x * x * x).sum()
            (g,) = lucid.autograd.grad(y, x, create_graph=True)
            g.sum().backward()
        return log["pack"], x.grad

    plain_count, plain_grad = run(False)
    count, grad = run(True)
    assert count == plain_count
    assert_close(grad, plain_grad)
    assert_close(grad, 6.0 * np.array([0.5, -1.0]))


def test_a_raising_pack_hook_restores_the_hooks():
    def pack(t):
        raise ValueError("pack failed")

    x = leaf([1.0, 2.0])
    with pytest.raises(ValueError, match="pack failed"):
        with saved_tensors_hooks(pack, lambda p: p):
            x * x
    expect_normal_hooks()


def test_a_pack_hook_raising_inside_its_own_block_restores_the_hooks():
    def pack(t):
        with saved_tensors_hooks(lambda u: u, lambda u: u):
            raise KeyError("inside the hook's block")

    x = leaf([1.0, 2.0])
    log = {}
    with saved_tensors_hooks(counting(log, "outer_pack"), lambda p: p):
        with pytest.raises(KeyError):
            with saved_tensors_hooks(pack, lambda p: p):
                x * x
        _ = x * x                                  # the outer pair is the innermost again
    assert log == {"outer_pack": 2}
    expect_normal_hooks()


def test_a_raising_unpack_hook_restores_the_hooks():
    def unpack(p):
        saving_work(lucid.float64)
        raise RuntimeError("unpack failed")

    x = leaf([1.0, 2.0])
    log = {}
    with saved_tensors_hooks(counting(log, "pack"), unpack):
        y = (x * x).sum()
        with pytest.raises(RuntimeError, match="unpack failed"):
            y.backward()
        _ = x * x                                  # still packed by the block's pair
    assert log == {"pack": 4}
    expect_normal_hooks()


def test_nested_hooks_in_several_threads_stay_apart():
    import threading

    counts = {}
    errors = []

    def work(name):
        try:
            log = {}

            def pack(t):
                log["pack"] = log.get("pack", 0) + 1
                with saved_tensors_hooks(lambda u: u, lambda u: u):
                    pass
                saving_work(lucid.float32)
                return t

            for _ in range(20):
                x = leaf([1.0, 2.0])
                with saved_tensors_hooks(pack, lambda p: p):
                    y = (x * x).sum()
                y.backward()
                assert_close(x.grad, [2.0, 4.0])
            counts[name] = log["pack"]
        except BaseException as e:       # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert counts == {0: 40, 1: 40, 2: 40}
    expect_normal_hooks()
