"""Anomaly mode (lucid.autograd.detect_anomaly): an error in backward gets a note with the
forward traceback of the node that failed, a NaN produced by a backward raises naming the node,
and the mode is restored on exit, however the block ends. Outside the mode neither happens.

Every test checks the exception type and that the leaves' .grad (and data) were not modified."""
import os
import re

import numpy as np
import pytest

import lucid
from lucid.autograd import Function
from support.checks import assert_close, assert_unchanged, f64, leaf_with_grad, to_numpy
from support.shared_functions import Square

THIS_FILE = os.path.basename(__file__)           # anomaly mode's forward tracebacks name it
V = [1.0, 2.0, 3.0]

# NaN/inf are produced on purpose here
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


class MyError(Exception):
    """What Boom's backward raises."""


class Boom(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        raise MyError("boom in backward")


def _all_notes(e):
    return "\n".join(getattr(e, "__notes__", []))


def test_anomaly_exception_note_has_forward_traceback():
    x = leaf_with_grad(V)
    with lucid.autograd.detect_anomaly():
        assert lucid.autograd.is_anomaly_enabled()
        y = Boom.apply(x)  # APPLY-LINE-MARKER
        with pytest.raises(MyError, match="boom in backward") as info:
            y.sum().backward()
    assert not lucid.autograd.is_anomaly_enabled()
    notes = _all_notes(info.value)
    assert THIS_FILE in notes, notes
    assert "test_anomaly_exception_note_has_forward_traceback" in notes, notes
    assert "Boom.apply(x)" in notes, notes            # the source line of the forward call
    assert "Boom" in notes
    assert_unchanged(x, V)


def test_no_forward_traceback_outside_anomaly_mode():
    x = leaf_with_grad(V)
    y = Boom.apply(x)
    with pytest.raises(MyError) as info:
        y.sum().backward()
    assert "Boom.apply(x)" not in _all_notes(info.value)
    assert_unchanged(x, V)


def _sqrt_nan_graph(x):
    # d/dx sqrt(x) at 0 is inf; multiplied by an upstream gradient of 0 it gives NaN
    return (lucid.sqrt(x) * 0.0).sum()


def test_anomaly_nan_from_builtin_op_raises_naming_node():
    x = f64([0.0, 4.0], requires_grad=True)
    x.grad = f64([1.0, 2.0])
    with lucid.autograd.detect_anomaly():
        loss = _sqrt_nan_graph(x)
        with pytest.raises(RuntimeError) as info:
            loss.backward()
    msg = str(info.value)
    assert "SqrtBackward" in msg, msg
    assert re.search(r"nan", msg, re.I), msg
    notes = _all_notes(info.value)
    assert "_sqrt_nan_graph" in notes and THIS_FILE in notes, notes
    assert_close(x.grad, [1.0, 2.0], rtol=0, atol=0)


def test_anomaly_nan_from_log_backward():
    x = f64([0.0, 1.0], requires_grad=True)
    with lucid.autograd.detect_anomaly():
        loss = (lucid.log(x) * 0.0).sum()       # 0 * (1/0) = NaN in LogBackward
        with pytest.raises(RuntimeError, match="LogBackward"):
            loss.backward()
    assert x.grad is None


def test_nan_outside_anomaly_mode_is_not_an_error():
    x = f64([0.0, 4.0], requires_grad=True)
    _sqrt_nan_graph(x).backward()
    g = to_numpy(x.grad)
    assert np.isnan(g[0])                        # 0 * inf
    assert g[1] == 0.0


class NanBackward(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * (x - x) / (x - x)              # 0/0 = NaN


def test_anomaly_nan_from_function_backward_names_its_node():
    x = leaf_with_grad(V)
    with lucid.autograd.detect_anomaly():
        y = NanBackward.apply(x)
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
    assert "NanBackwardBackward" in str(info.value), str(info.value)
    assert "test_anomaly_nan_from_function_backward_names_its_node" in _all_notes(info.value)
    assert_unchanged(x, V)


def test_anomaly_as_decorator():
    seen = {}

    @lucid.autograd.detect_anomaly()
    def run(x):
        seen["enabled"] = lucid.autograd.is_anomaly_enabled()
        _sqrt_nan_graph(x).backward()

    x = f64([0.0, 1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="SqrtBackward"):
        run(x)
    assert seen["enabled"] is True
    assert not lucid.autograd.is_anomaly_enabled()
    assert x.grad is None
    run_ok = lucid.autograd.detect_anomaly()(lambda t: (lucid.sqrt(t) * 2.0).sum().backward())
    y = f64([4.0], requires_grad=True)
    run_ok(y)
    assert_close(y.grad, [0.5])


def test_anomaly_mode_restored_after_exception():
    assert not lucid.autograd.is_anomaly_enabled()
    with pytest.raises(MyError):
        with lucid.autograd.detect_anomaly():
            raise MyError("inside")
    assert not lucid.autograd.is_anomaly_enabled()


def test_anomaly_mode_without_errors_gives_correct_gradients():
    xv = np.array([0.5, 1.5])
    x = f64(xv, requires_grad=True)
    with lucid.autograd.detect_anomaly():
        (Square.apply(x) * lucid.sqrt(x)).sum().backward()
    assert_close(x.grad, 2.5 * xv ** 1.5)
