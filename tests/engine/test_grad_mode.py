"""Grad mode (API.md section 2): no_grad, enable_grad and set_grad_enabled as blocks and
decorators (bare ones included), restored after exceptions and per thread; inference_mode."""
import re
import threading

import numpy as np
import pytest

import lucid
from support.checks import assert_close, f64


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
# bare decorators and inference_mode
# ---------------------------------------------------------------------------------------------

def test_no_grad_and_enable_grad_as_bare_decorators():
    x = f64([1.0], requires_grad=True)

    @lucid.no_grad
    def doubled(t):
        """doc kept"""
        return t * 2

    assert not doubled(x).requires_grad and doubled.__doc__ == "doc kept"
    assert lucid.is_grad_enabled()

    @lucid.no_grad()
    def also(t):
        return t * 2

    assert not also(x).requires_grad

    with lucid.no_grad():
        @lucid.enable_grad
        def recorded(t):
            return t * 2
        assert recorded(x).requires_grad
        assert not (x * 2).requires_grad
    with pytest.raises(TypeError, match="no_grad"):
        lucid.no_grad(3)


def test_inference_mode():
    x = f64([1.0, 2.0], requires_grad=True)
    with lucid.inference_mode():
        assert lucid.is_inference_mode_enabled() and not lucid.is_grad_enabled()
        y = x * 2
        z = lucid.zeros(2)
        v = z[0:1]                                     # a view made inside
        w = lucid.ones(2, requires_grad=True)          # accepted, without effect
        assert not w.requires_grad and not (w * 2).requires_grad
    assert lucid.is_grad_enabled() and not lucid.is_inference_mode_enabled()
    assert not y.requires_grad and y.grad_fn is None
    for t in (y, z, v, w, y.detach()):
        assert t.is_inference()
        with pytest.raises(RuntimeError, match="inference_mode"):
            t.requires_grad_(True)
        with pytest.raises(RuntimeError, match="inference_mode"):
            t.requires_grad = True
        assert not t.requires_grad
    assert not (y * x).is_inference() and (y * x).requires_grad    # usable as a constant
    assert not x.is_inference() and not lucid.zeros(1).is_inference()
    with lucid.inference_mode(False):                 # a no-op
        assert lucid.is_grad_enabled() and (x * 2).requires_grad
        assert not lucid.zeros(1).is_inference()

    @lucid.inference_mode
    def bare(t):
        return t * 2

    @lucid.inference_mode()
    def called(t):
        return t * 2

    assert bare(x).is_inference() and called(x).is_inference() and lucid.is_grad_enabled()


def test_inference_mode_is_per_thread():
    seen = {}

    def other():
        seen["inference"] = lucid.is_inference_mode_enabled()
        seen["tensor"] = lucid.zeros(1).is_inference()

    with lucid.inference_mode():
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen == {"inference": False, "tensor": False}
