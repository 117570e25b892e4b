"""Custom Functions, error paths (API.md section 4 and 3): bad backward results, saved tensors
changed in place, exceptions raised by backward, a missing backward (anomaly mode's notes are in
tests/diagnostics/test_anomaly.py).

Every test checks the exception type and that the leaves' .grad (and data) were not modified."""
import re
import sys
import traceback

import numpy as np
import pytest

import lucid
from lucid.autograd import Function
from support.checks import (assert_close, assert_mentions_shapes, assert_unchanged, f64,
                            leaf_with_grad)
from support.shared_functions import Square


def _returning(result_fn, n_inputs=1, name="Returner"):
    """A Function of n_inputs tensors (sum of them) whose backward returns result_fn(g, *inputs)."""

    def forward(ctx, *args):
        ctx.save_for_backward(*[a for a in args if isinstance(a, lucid.Tensor)])
        out = None
        for a in args:
            if isinstance(a, lucid.Tensor):
                out = a * 1.0 if out is None else out + a
        return out

    def backward(ctx, g):
        return result_fn(g, *ctx.saved_tensors)

    return type(name, (Function,), {"forward": staticmethod(forward),
                                    "backward": staticmethod(backward)})


def _run_and_expect(F, args, x, values, match_all, loss_extra=True):
    """Backward through F.apply(*args) (plus another path to x) must raise RuntimeError naming
    all of match_all; x.grad must be untouched."""
    y = F.apply(*args)
    loss = y.sum()
    if loss_extra:
        loss = loss + (x * 2.0).sum()      # a second path into x: must not be accumulated either
    with pytest.raises(RuntimeError) as info:
        loss.backward()
    msg = str(info.value)
    for pattern in match_all:
        assert re.search(pattern, msg), f"{pattern!r} not in message: {msg!r}"
    assert_unchanged(x, values)
    return msg


# ---------------------------------------------------------------------------------------------
# 4. invalid backward results
# ---------------------------------------------------------------------------------------------

V = [1.0, 2.0, 3.0]


def test_too_few_gradients():
    x, w = leaf_with_grad(V), f64([1.0, 1.0, 1.0], requires_grad=True)
    F = _returning(lambda g, a, b: (g,), n_inputs=2, name="TooFew")
    msg = _run_and_expect(F, (x, w), x, V, [r"TooFew", r"\b2\b", r"\b1\b"])
    assert w.grad is None


def test_extra_non_none_gradient():
    x = leaf_with_grad(V)
    F = _returning(lambda g, a: (g, g), name="TooMany")
    _run_and_expect(F, (x,), x, V, [r"TooMany", r"\b2\b", r"\b1\b"])


def test_extra_non_none_after_trailing_none():
    x = leaf_with_grad(V)
    F = _returning(lambda g, a: (g, None, g), name="TooManyLate")
    _run_and_expect(F, (x,), x, V, [r"TooManyLate"])


@pytest.mark.parametrize("bad_shape", [(2,), (3, 1), (1, 3), ()])
def test_wrong_shape(bad_shape):
    x, w = leaf_with_grad(V), f64([4.0, 5.0, 6.0], requires_grad=True)
    F = _returning(lambda g, a, b: (g, lucid.zeros(*bad_shape, dtype=lucid.float64)
                                    if bad_shape else lucid.tensor(1.0, dtype=lucid.float64)),
                   n_inputs=2, name="BadShape")
    msg = _run_and_expect(F, (x, w), x, V, [r"BadShape", r"input\s*1|index\s*1|\[1\]"])
    assert_mentions_shapes(msg, (3,), bad_shape)
    assert w.grad is None


@pytest.mark.parametrize("bad,type_name", [
    (lambda g: 1.5, "float"),
    (lambda g: np.ones(3), "ndarray"),
    (lambda g: [1.0, 1.0, 1.0], "list"),
    (lambda g: "grad", "str"),
], ids=["float", "ndarray", "list", "str"])
def test_wrong_type_for_tensor_input(bad, type_name):
    x, w = leaf_with_grad(V), f64([4.0, 5.0, 6.0], requires_grad=True)
    F = _returning(lambda g, a, b: (g, bad(g)), n_inputs=2, name="BadType")
    _run_and_expect(F, (x, w), x, V,
                    [r"BadType", r"input\s*1|index\s*1", type_name, r"Tensor"])
    assert w.grad is None


def test_wrong_type_as_whole_result():
    x = leaf_with_grad(V)
    F = _returning(lambda g, a: 3.0, name="ScalarResult")
    _run_and_expect(F, (x,), x, V, [r"ScalarResult", r"float"])


def test_ndarray_as_whole_result():
    x = leaf_with_grad(V)
    F = _returning(lambda g, a: np.ones(3), name="ArrayResult")
    _run_and_expect(F, (x,), x, V, [r"ArrayResult", r"ndarray"])


def test_tensor_for_non_tensor_input():
    class ScaleBad(Function):
        @staticmethod
        def forward(ctx, x, s):
            ctx.s = s
            return x * s

        @staticmethod
        def backward(ctx, g):
            return g * ctx.s, g * 0.0         # the float input must get None

    x = leaf_with_grad(V)
    msg = _run_and_expect(ScaleBad, (x, 2.0), x, V, [r"ScaleBad", r"input\s*1|index\s*1",
                                                     r"None"])


def test_wrong_shape_in_first_of_two_outputs_function():
    class TwoOutBad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0, x * 3.0

        @staticmethod
        def backward(ctx, ga, gb):
            return (ga + gb).reshape(3, 1)

    x = leaf_with_grad(V)
    a, b = TwoOutBad.apply(x)
    with pytest.raises(RuntimeError) as info:
        (a * b).sum().backward()
    msg = str(info.value)
    assert "TwoOutBad" in msg and re.search(r"input\s*0|index\s*0", msg), msg
    assert_mentions_shapes(msg, (3,), (3, 1))
    assert_unchanged(x, V)


# ---------------------------------------------------------------------------------------------
# 2. saved tensors changed in place
# ---------------------------------------------------------------------------------------------

class SaveIn(Square):
    """Square under the name the version-counter messages are checked for."""


class SaveOut(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


def _check_version_message(msg, name, saved, current):
    assert name in msg, msg
    assert re.search(rf"\b{saved}\b", msg) and re.search(rf"\b{current}\b", msg), msg


def test_saved_input_modified_in_place_raises():
    x = f64([1.0, 2.0], requires_grad=True)
    w = f64([0.5, 0.5], requires_grad=True)
    h = x * w                                  # a non-leaf so it can be changed under no_grad
    saved_version = h._version
    y = SaveIn.apply(h)
    with lucid.no_grad():
        h.add_(1.0)
        h.mul_(3.0)
    current = h._version
    assert current != saved_version
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    _check_version_message(str(info.value), "SaveIn", saved_version, current)
    assert x.grad is None and w.grad is None


def test_saved_leaf_modified_in_place_raises_and_grad_unchanged():
    x = leaf_with_grad(V)
    saved_version = x._version
    y = SaveIn.apply(x)
    with lucid.no_grad():
        x.add_(0.0)                            # values unchanged, version bumped
    current = x._version
    assert current > saved_version
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    _check_version_message(str(info.value), "SaveIn", saved_version, current)
    assert_unchanged(x, V)


def test_saved_output_modified_in_place_raises():
    x = leaf_with_grad(V)
    y = SaveOut.apply(x)
    saved_version = y._version
    z = y * 1.0
    with lucid.no_grad():
        y.mul_(2.0)
    current = y._version
    assert current > saved_version
    with pytest.raises(RuntimeError) as info:
        z.sum().backward()
    _check_version_message(str(info.value), "SaveOut", saved_version, current)
    assert_unchanged(x, V)


def test_saved_tensors_access_raises_inside_backward_too():
    """The version error also reaches a backward that reads ctx.saved_tensors itself."""
    got = {}

    class Reads(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            try:
                ctx.saved_tensors
            except RuntimeError as e:
                got["error"] = e
                raise
            return 2.0 * g

    x = leaf_with_grad(V)
    y = Reads.apply(x)
    with lucid.no_grad():
        x.mul_(1.0)
    with pytest.raises(RuntimeError):
        y.sum().backward()
    assert isinstance(got.get("error"), RuntimeError)
    assert_unchanged(x, V)


# ---------------------------------------------------------------------------------------------
# 6. exceptions raised by backward; missing backward
# ---------------------------------------------------------------------------------------------

class MyError(Exception):
    pass


def _raiser(exc):
    class Raiser(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            raise exc

    return Raiser


@pytest.mark.parametrize("exc_type,message", [
    (MyError, "custom failure 42"),
    (KeyError, "missing-key-7"),
    (ValueError, "bad value 3.5"),
    (ZeroDivisionError, "no division today"),
])
def test_exception_from_backward_keeps_type_message_and_gets_note(exc_type, message):
    F = _raiser(exc_type(message))
    x = leaf_with_grad(V)
    y = F.apply(x)
    with pytest.raises(exc_type) as info:
        (y.sum() + (x * 3.0).sum()).backward()
    e = info.value
    assert type(e) is exc_type
    assert message in str(e)
    notes = getattr(e, "__notes__", [])
    assert any("Raiser" in n for n in notes), notes
    # the traceback reaches into the backward that raised
    frames = [f.name for f in traceback.extract_tb(e.__traceback__)]
    assert "backward" in frames, frames
    assert_unchanged(x, V)


def test_exception_from_backward_of_named_function_note():
    class VerySpecificName(Function):
        @staticmethod
        def forward(ctx, x):
            return x + 1.0

        @staticmethod
        def backward(ctx, g):
            raise MyError("boom")

    x = leaf_with_grad(V)
    y = VerySpecificName.apply(x)
    with pytest.raises(MyError) as info:
        lucid.autograd.grad(y.sum(), x)
    assert any("VerySpecificName" in n for n in info.value.__notes__)
    assert_unchanged(x, V)


def test_exception_from_backward_deep_in_graph():
    F = _raiser(MyError("deep"))
    x = leaf_with_grad(V)
    h = F.apply(x.tanh() * 2.0)
    for _ in range(5):
        h = h.exp() * 0.1
    with pytest.raises(MyError, match="deep"):
        h.sum().backward()
    assert_unchanged(x, V)


def test_missing_backward_is_not_implemented_error_at_backward_time():
    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

    x = leaf_with_grad(V)
    y = NoBackward.apply(x)                  # applying is fine
    assert y.grad_fn.name() == "NoBackwardBackward"
    with pytest.raises(NotImplementedError) as info:
        y.sum().backward()
    text = str(info.value) + " ".join(getattr(info.value, "__notes__", []))
    assert "NoBackward" in text
    assert_unchanged(x, V)


def test_missing_forward_is_not_implemented_error():
    class NoForward(Function):
        @staticmethod
        def backward(ctx, g):
            return g

    x = leaf_with_grad(V)
    with pytest.raises(NotImplementedError, match="NoForward"):
        NoForward.apply(x)


def test_backward_raising_once_graph_still_usable_after_fix():
    """An exception during backward leaves the leaves untouched; a fresh graph works."""
    calls = {"fail": True}

    class Flaky(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, g):
            if calls["fail"]:
                raise MyError("flaky")
            return 2.0 * g

    x = leaf_with_grad(V)
    with pytest.raises(MyError):
        Flaky.apply(x).sum().backward()
    assert_unchanged(x, V)
    calls["fail"] = False
    Flaky.apply(x).sum().backward()
    assert_close(x.grad, np.arange(3) + 10.0 + 2.0)


def test_exception_from_jvp_names_the_function_and_the_forward_call():
    class JvpRaiser(Square):
        @staticmethod
        def jvp(ctx, t):
            raise MyError("jvp boom")

    x = lucid.tensor(V)
    with lucid.autograd.forward_ad.dual_level():
        dual = lucid.autograd.forward_ad.make_dual(x, lucid.ones_like(x))
        line = sys._getframe().f_lineno + 2
        with pytest.raises(MyError) as info:
            JvpRaiser.apply(dual)
    notes = " ".join(getattr(info.value, "__notes__", []))
    assert "jvp of Function JvpRaiser" in notes, notes
    assert f"(called at {__file__}:{line})" in notes, notes
    np.testing.assert_array_equal(x.numpy(), V)


def _compiled_entries(error):
    return [f for f in traceback.extract_tb(error.__traceback__)
            if f.filename.startswith("lucid/") and f.filename.endswith((".pxi", ".pyx"))]


def test_a_backward_error_s_traceback_skips_the_engine_s_compiled_entries():
    """Note [Short tracebacks]: between the backward() call and the raising code only the entry
    points remain; _set_full_tracebacks(True) keeps every entry."""
    def run():
        x = leaf_with_grad(V)
        with pytest.raises(MyError) as info:                  # a new error each run
            _raiser(MyError("short")).apply(x).sum().backward()
        return info.value

    short = run()
    assert [f.name for f in traceback.extract_tb(short.__traceback__)][-1] == "backward"
    assert len(_compiled_entries(short)) <= 3, _compiled_entries(short)
    previous = lucid._core._set_full_tracebacks(True)
    try:
        full = run()
    finally:
        lucid._core._set_full_tracebacks(previous)
    assert len(_compiled_entries(full)) > len(_compiled_entries(short)) + 3
    assert any("lucid: raised in Function Raiser" in n for n in short.__notes__), short.__notes__
