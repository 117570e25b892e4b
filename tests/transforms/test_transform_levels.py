"""The per-thread stack of transform levels (Note [Transform levels], lucid/base/transform_levels.pxi): push and
pop in LIFO order, the errors of a wrong pop, an empty pop and an overflow (each leaving the stack
as it was), per-thread stacks with ids unique in the process, and forward mode's dual level as a
level of that stack (one at a time, as before). Reached through the private testing hooks
lucid._core._debug_push_level / _debug_pop_level / _debug_levels."""
import threading

import numpy as np
import pytest

import lucid
import lucid.autograd.forward_ad as fwAD
from lucid import _core

MAX_LEVELS = 64          # MAX_TRANSFORM_LEVELS in lucid/_core.pxd


def levels():
    return _core._debug_levels()


def empty():
    return {"depth": 0, "innermost": None, "stack": ()}


@pytest.fixture(autouse=True)
def clean_stack():
    """Every test starts and ends with this thread's stack empty."""
    assert levels() == empty()
    yield
    assert levels() == empty()


def test_push_and_pop_in_lifo_order():
    batch = _core._debug_push_level("batch", 3)
    assert levels() == {"depth": 1, "innermost": ("batch", batch, 3),
                        "stack": (("batch", batch, 3),)}
    dual = _core._debug_push_level("dual")
    inner = _core._debug_push_level("batch", 0)          # a batch of size 0 is a level too
    assert batch > 0 and batch < dual < inner
    assert levels() == {"depth": 3, "innermost": ("batch", inner, 0),
                        "stack": (("batch", batch, 3), ("dual", dual, 0), ("batch", inner, 0))}
    _core._debug_pop_level(inner)
    assert levels()["innermost"] == ("dual", dual, 0)
    _core._debug_pop_level(dual)
    _core._debug_pop_level(batch)


def test_ids_are_never_reused():
    first = _core._debug_push_level("batch", 2)
    _core._debug_pop_level(first)
    second = _core._debug_push_level("batch", 2)
    _core._debug_pop_level(second)
    assert second > first


def test_pop_of_an_outer_level_raises_and_changes_nothing():
    outer = _core._debug_push_level("batch", 4)
    inner = _core._debug_push_level("dual")
    before = levels()
    with pytest.raises(RuntimeError, match=rf"pop_level: level {outer} is not the innermost "
                                           rf"transform level .*\(dual level {inner} is\).*"
                                           "reverse order"):
        _core._debug_pop_level(outer)
    assert levels() == before
    with pytest.raises(RuntimeError, match=r"pop_level: level 0 is not the innermost"):
        _core._debug_pop_level(0)
    assert levels() == before
    _core._debug_pop_level(inner)
    _core._debug_pop_level(outer)


def test_pop_of_an_empty_stack_raises():
    with pytest.raises(RuntimeError, match="pop_level: no transform level is active in this thread"):
        _core._debug_pop_level(1)
    assert levels() == empty()


def test_overflow_raises_and_keeps_the_stack():
    ids = [_core._debug_push_level("batch" if i % 2 else "dual", i % 2) for i in range(MAX_LEVELS)]
    try:
        before = levels()
        assert before["depth"] == MAX_LEVELS
        for kind, size in (("batch", 5), ("dual", 0)):
            with pytest.raises(RuntimeError, match=rf"push_level: transforms nest at most "
                                                   rf"{MAX_LEVELS} levels deep in a thread"):
                _core._debug_push_level(kind, size)
            assert levels() == before
    finally:
        for level in reversed(ids):
            _core._debug_pop_level(level)


@pytest.mark.parametrize("kind,size,message", [
    ("batch", -1, "push_level: a batch level's size must be >= 0, not -1"),
    ("dual", 2, r"push_level: a dual level has no size \(0\), not 2"),
    ("vmap", 2, "_debug_push_level: kind must be 'batch' or 'dual', not 'vmap'"),
])
def test_bad_levels_are_refused(kind, size, message):
    with pytest.raises(ValueError, match=message):
        _core._debug_push_level(kind, size)
    assert levels() == empty()


def test_each_thread_has_its_own_stack():
    mine = _core._debug_push_level("batch", 7)
    seen = {}

    def other():
        seen["at_start"] = levels()
        theirs = _core._debug_push_level("batch", 2)
        seen["pushed"] = levels()
        try:
            _core._debug_pop_level(mine)             # not on this thread's stack
        except RuntimeError as e:
            seen["error"] = str(e)
        _core._debug_pop_level(theirs)
        seen["at_end"] = levels()

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    try:
        assert seen["at_start"] == empty() and seen["at_end"] == empty()
        (theirs,) = [level[1] for level in seen["pushed"]["stack"]]
        assert theirs != mine
        assert seen["pushed"]["innermost"] == ("batch", theirs, 2)
        assert f"level {mine} is not the innermost" in seen["error"]
        assert levels()["stack"] == (("batch", mine, 7),)
    finally:
        _core._debug_pop_level(mine)


# -- forward mode's dual level is a level of the stack -------------------------------------------

def test_dual_level_pushes_and_pops_a_dual_level():
    with fwAD.dual_level() as level:
        assert levels() == {"depth": 1, "innermost": ("dual", level, 0),
                            "stack": (("dual", level, 0),)}
        x = fwAD.make_dual(lucid.tensor([0.5, 2.0], dtype=lucid.float64),
                           lucid.tensor([1.0, -3.0], dtype=lucid.float64))
        primal, tangent = fwAD.unpack_dual(lucid.sin(x) * x)
    x0, t0 = np.array([0.5, 2.0]), np.array([1.0, -3.0])
    np.testing.assert_allclose(tangent.numpy(), (np.cos(x0) * x0 + np.sin(x0)) * t0)
    assert levels() == empty()
    assert _core._current_dual_level() is None


def test_enter_and_exit_dual_level_functions_use_the_stack():
    level = fwAD.enter_dual_level()
    assert levels()["stack"] == (("dual", level, 0),)
    fwAD.exit_dual_level(level=level)
    assert levels() == empty()


def test_dual_level_ids_follow_the_stack_ids():
    batch = _core._debug_push_level("batch", 2)
    _core._debug_pop_level(batch)
    with fwAD.dual_level() as level:
        assert level > batch


def test_nested_dual_levels_are_levels_of_the_stack():
    with fwAD.dual_level() as level:
        with fwAD.dual_level() as inner:
            assert levels()["stack"] == (("dual", level, 0), ("dual", inner, 0))
            assert levels()["innermost"] == ("dual", inner, 0)
            assert _core._current_dual_level() == inner
        assert levels()["stack"] == (("dual", level, 0),)
        assert _core._current_dual_level() == level
    assert levels() == empty()


def test_dual_level_exits_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with fwAD.dual_level():
            1 / 0
    assert levels() == empty()
    assert _core._current_dual_level() is None


def test_exit_of_a_dual_level_with_a_level_inside_raises_and_keeps_it():
    level = fwAD.enter_dual_level()
    inner = _core._debug_push_level("batch", 3)
    try:
        with pytest.raises(RuntimeError, match=rf"exit_dual_level: level {level} is not the "
                                               rf"innermost .*\(batch level {inner} is\)"):
            fwAD.exit_dual_level()
        assert _core._current_dual_level() == level          # still active, tangents too
        x = fwAD.make_dual(lucid.tensor([1.0]), lucid.tensor([2.0]))
        assert fwAD.unpack_dual(x * 3).tangent.tolist() == [6.0]
    finally:
        _core._debug_pop_level(inner)
        fwAD.exit_dual_level()
    assert levels() == empty()


def test_pop_level_refuses_forward_modes_active_dual_level():
    with fwAD.dual_level() as level:
        before = levels()
        with pytest.raises(RuntimeError, match=rf"pop_level: level {level} is one of forward "
                                               "mode's dual levels: leave it with exit_dual_level"):
            _core._debug_pop_level(level)
        assert levels() == before
        assert _core._current_dual_level() == level
    assert levels() == empty()


def test_exit_dual_level_errors_unchanged():
    with pytest.raises(RuntimeError, match="exit_dual_level: no dual level is active in this thread"):
        fwAD.exit_dual_level()
    with fwAD.dual_level() as level:
        with pytest.raises(RuntimeError, match=rf"exit_dual_level: level {level + 1} is not an "
                                               rf"active dual level of this thread \(the "
                                               rf"innermost is {level}\)"):
            fwAD.exit_dual_level(level=level + 1)
        assert levels()["stack"] == (("dual", level, 0),)


def test_a_batch_level_does_not_turn_forward_mode_on():
    """A level of another kind counts as a rare mode, but tangents stay a dual level's."""
    batch = _core._debug_push_level("batch", 2)
    try:
        assert _core._current_dual_level() is None
        x = lucid.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
        assert x.grad.tolist() == [2.0, 4.0]
        with pytest.raises(RuntimeError, match="make_dual needs an active dual level"):
            fwAD.make_dual(x, lucid.ones(2))
    finally:
        _core._debug_pop_level(batch)
