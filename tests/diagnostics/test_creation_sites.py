"""Diagnostics (issue 8): creation sites, errors during backward that point at the user's line,
the in-place op named in the saved-tensor error, the opt-in saved-tensor guard, and the engine
counters of lucid.autograd.profile().

Expected lines come from the test itself (`_here()` on the same line as the op); expected paths
are this file's `__file__`. Error tests check the exception type and that `.grad` / data were
not modified."""
import inspect
import os
import re
import time

import numpy as np
import pytest

import lucid
from lucid.autograd import Function
from support.checks import assert_close, f64, to_numpy

LUCID_DIR = os.path.dirname(os.path.realpath(lucid.__file__))
THIS_FILE = os.path.realpath(__file__)


def _here():
    """The line number of the caller (call it on the same line as the op)."""
    return inspect.currentframe().f_back.f_lineno


def _split_site(site):
    assert isinstance(site, str), f"creation_site should be a 'path:line' string, got {site!r}"
    path, sep, line = site.rpartition(":")
    assert sep and line.isdigit(), f"creation_site is not 'path:line': {site!r}"
    return path, int(line)


def _assert_site(site, line):
    """site is 'this file:line'."""
    path, got = _split_site(site)
    assert os.path.realpath(path) == THIS_FILE, f"site {site!r} is not in {THIS_FILE}"
    assert got == line, f"site {site!r}: expected line {line}"


def _site_pattern(line):
    paths = {__file__, THIS_FILE}
    return "(" + "|".join(re.escape(p) for p in paths) + f"):{line}(?!\\d)"


def _has_site(text, line):
    return re.search(_site_pattern(line), text) is not None


def _notes(e):
    return list(getattr(e, "__notes__", []) or [])


def _notes_with_site(e, line):
    return [n for n in _notes(e) if _has_site(n, line)]


def _leaf(values=(0.5, -1.0, 2.0)):
    """A float64 leaf with a known, non-trivial .grad already set."""
    x = f64(list(values), requires_grad=True)
    x.grad = f64(np.arange(len(values), dtype=np.float64) + 10.0)
    return x


def _assert_unchanged(x, values=(0.5, -1.0, 2.0)):
    assert x.grad is not None
    assert_close(x.grad, np.arange(len(values), dtype=np.float64) + 10.0, rtol=0, atol=0)
    assert_close(x, np.array(values, dtype=np.float64), rtol=0, atol=0)


@pytest.fixture(autouse=True)
def _restore_settings():
    """Every test starts with creation sites on and the guard off, and leaves them so."""
    previous_sites = lucid.autograd.set_creation_sites(True)
    previous_guard = lucid.autograd.set_saved_tensor_guard(False)
    yield
    lucid.autograd.set_creation_sites(previous_sites)
    lucid.autograd.set_saved_tensor_guard(previous_guard)


# -- custom Functions used below ------------------------------------------------------------------

class Double(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        return g * 2.0


class SinFn(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()


class Boom(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        raise KeyError("boom from backward")


class NoGrad(Function):
    """Gives its input no gradient."""
    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        return None


def _returning(result_fn, name):
    def forward(ctx, x):
        return x * 1.0

    def backward(ctx, g):
        return result_fn(g)

    return type(name, (Function,), {"forward": staticmethod(forward),
                                    "backward": staticmethod(backward)})


# == 1. creation sites ============================================================================

def test_creation_site_of_builtin_op_is_the_users_line():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = x.sin(); line = _here()
    z = lucid.mul(y, 3.0); line_z = _here()
    w = z + y; line_w = _here()
    _assert_site(y.grad_fn.creation_site, line)
    _assert_site(z.grad_fn.creation_site, line_z)
    _assert_site(w.grad_fn.creation_site, line_w)


def test_creation_site_of_function_node_is_the_apply_line():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = Double.apply(x); line = _here()
    assert y.grad_fn.name() == "DoubleBackward"
    _assert_site(y.grad_fn.creation_site, line)


def _helper_op(t):
    return t.exp(), _here()


def test_creation_site_of_op_in_a_helper_is_the_helpers_line():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y, line = _helper_op(x)
    _assert_site(y.grad_fn.creation_site, line)


def test_creation_site_of_inplace_and_setitem_nodes():
    x = lucid.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1.0
    a.mul_(2.0); line_mul = _here()
    _assert_site(a.grad_fn.creation_site, line_mul)
    a[0] = 5.0; line_set = _here()
    _assert_site(a.grad_fn.creation_site, line_set)


def test_creation_site_of_node_recorded_in_a_function_backward():
    line_holder = {}

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            out = x * g; line_holder["line"] = _here()
            return out * 2.0

    x = f64([1.0, 2.0], requires_grad=True)
    y = Square.apply(x).sum()
    (gx,) = lucid.autograd.grad(y, x, create_graph=True)
    # gx = (x * g) * 2.0: its grad_fn is the "* 2.0" in backward, whose input is x * g
    inner = gx.grad_fn.next_functions[0][0]
    _assert_site(inner.creation_site, line_holder["line"])
    assert_close(gx, [2.0, 4.0])


def test_creation_site_is_none_for_a_leaf_or_without_graph():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    assert x.grad_fn is None
    with lucid.no_grad():
        y = x.sin()
    assert y.grad_fn is None


def test_set_creation_sites_returns_previous_and_off_records_nothing():
    assert lucid.autograd.set_creation_sites(False) is True
    try:
        assert lucid.autograd.set_creation_sites(False) is False
        x = lucid.tensor([1.0, 2.0], requires_grad=True)
        y = x.sin()
        z = Double.apply(y)
        assert y.grad_fn.creation_site is None
        assert z.grad_fn.creation_site is None
    finally:
        assert lucid.autograd.set_creation_sites(True) is False
    # back on: new nodes have a site again
    w = x.cos(); line = _here()
    _assert_site(w.grad_fn.creation_site, line)
    assert y.grad_fn.creation_site is None      # nodes made while off stay without one


def test_errors_still_work_with_creation_sites_off():
    lucid.autograd.set_creation_sites(False)
    x = _leaf()
    y = Boom.apply(x); line = _here()
    with pytest.raises(KeyError, match="boom from backward") as info:
        y.sum().backward()
    assert any("Boom" in n for n in _notes(info.value))
    assert not _notes_with_site(info.value, line)
    _assert_unchanged(x)

    c = (x * 3.0).sum()
    c.backward()
    x.grad = f64([10.0, 11.0, 12.0])
    with pytest.raises(RuntimeError, match="retain_graph") as info2:
        c.backward()
    assert __file__ not in str(info2.value) and THIS_FILE not in str(info2.value)
    _assert_unchanged(x)


def test_creation_site_never_points_inside_lucid_once_differentiable():
    class Once(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @lucid.autograd.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2.0 * x

    x = f64([1.0, 2.0], requires_grad=True)
    y = Once.apply(x).sum()
    (gx,) = lucid.autograd.grad(y, x, create_graph=True); line = _here()
    assert gx.grad_fn is not None
    path, _ = _split_site(gx.grad_fn.creation_site)
    assert not os.path.realpath(path).startswith(LUCID_DIR + os.sep), gx.grad_fn.creation_site
    _assert_site(gx.grad_fn.creation_site, line)


# == 2. errors during backward name the node and the user's line ==================================

def test_function_backward_exception_keeps_type_and_notes_the_apply_line():
    x = _leaf()
    a = x * 1.0
    y = Boom.apply(a); line = _here()
    with pytest.raises(KeyError) as info:
        y.sum().backward()
    e = info.value
    assert type(e) is KeyError and "boom from backward" in str(e)
    noted = _notes_with_site(e, line)
    assert len(noted) == 1, _notes(e)
    assert "Boom" in noted[0]
    # the original traceback is kept: it reaches the raise inside Boom.backward
    frames = [f.name for f in __import__("traceback").extract_tb(e.__traceback__)]
    assert "backward" in frames
    _assert_unchanged(x)


@pytest.mark.parametrize("kind", ["shape", "count", "type"])
def test_wrong_gradients_from_backward_note_the_apply_line(kind):
    results = {
        "shape": lambda g: lucid.ones(5, dtype=lucid.float64),
        "count": lambda g: (g, g),
        "type": lambda g: "not a gradient",
    }
    Bad = _returning(results[kind], f"Bad_{kind}")
    x = _leaf()
    y = Bad.apply(x); line = _here()
    with pytest.raises(RuntimeError, match=f"Bad_{kind}") as info:
        y.sum().backward()
    noted = _notes_with_site(info.value, line)
    assert noted, f"no note with {__file__}:{line}: {_notes(info.value)}"
    assert any(f"Bad_{kind}" in n for n in noted)
    _assert_unchanged(x)


def test_saved_tensor_modified_builtin_names_versions_op_and_line():
    x = _leaf()
    a = x * 2.0
    with lucid.no_grad():
        for _ in range(3):
            a.add_(0.0)
    saved_version = a._version
    b = a.sin(); line = _here()
    a.add_(0.0)
    a.mul_(1.0)
    current = a._version
    assert (saved_version, current) == (3, 5)
    with pytest.raises(RuntimeError) as info:
        b.sum().backward()
    msg = str(info.value)
    assert "SinBackward" in msg
    assert re.search(rf"\b{saved_version}\b", msg) and re.search(rf"\b{current}\b", msg), msg
    assert "mul_" in msg, msg
    assert _has_site(msg + "\n".join(_notes(info.value)), line), (msg, _notes(info.value))
    _assert_unchanged(x)


def test_saved_tensor_modified_in_function_names_op_and_apply_line():
    x = _leaf()
    a = x * 2.0
    y = SinFn.apply(a); line = _here()
    a[1] = 7.0
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    msg = str(info.value)
    assert "setitem" in msg, msg
    assert re.search(r"\b0\b", msg) and re.search(r"\b1\b", msg), msg
    noted = _notes_with_site(info.value, line)
    assert noted and any("SinFn" in n for n in noted), _notes(info.value)
    _assert_unchanged(x)


_OPS = {
    "add_": lambda t: t.add_(1.0),
    "sub_": lambda t: t.sub_(1.0),
    "mul_": lambda t: t.mul_(2.0),
    "div_": lambda t: t.div_(2.0),
    "copy_": lambda t: t.copy_(lucid.ones(3, dtype=lucid.float64)),
    "setitem": lambda t: t.__setitem__(0, 4.0),
    "fill_": lambda t: t.fill_(3.0),
    "zero_": lambda t: t.zero_(),
}


@pytest.mark.parametrize("op", [
    "add_", "sub_", "mul_", "div_", "copy_", "setitem",
    "fill_", "zero_",
])
@pytest.mark.parametrize("grad_mode", [True, False], ids=["recorded", "no_grad"])
def test_saved_tensor_error_names_the_inplace_op(op, grad_mode):
    x = _leaf()
    a = x * 2.0
    b = a.exp() * a; line = _here()        # MulBackward saves a
    with lucid.set_grad_enabled(grad_mode):
        _OPS[op](a)
    with pytest.raises(RuntimeError) as info:
        b.sum().backward()
    msg = str(info.value)
    assert re.search(rf"(?<![\w]){re.escape(op)}(?![\w])", msg), msg
    assert _has_site(msg + "\n".join(_notes(info.value)), line)
    _assert_unchanged(x)


def test_augmented_assignment_named_in_saved_tensor_error():
    x = _leaf()
    a = x * 2.0
    b = a.cos()
    a += 1.0
    with pytest.raises(RuntimeError) as info:
        b.sum().backward()
    assert re.search(r"add_|\+=|iadd", str(info.value)), str(info.value)
    _assert_unchanged(x)


def test_freed_graph_error_names_node_and_line_in_message():
    x = _leaf()
    y = x.sin()
    c = y.sum(); line = _here()
    c.backward()
    x.grad = f64([10.0, 11.0, 12.0])
    with pytest.raises(RuntimeError, match="retain_graph") as info:
        c.backward()
    msg = str(info.value)
    assert "SumBackward" in msg
    assert _has_site(msg, line), msg
    _assert_unchanged(x)


def test_freed_graph_error_for_function_node_names_apply_line():
    x = _leaf()
    y = SinFn.apply(x); line = _here()
    c = y * 1.0
    c.sum().backward(retain_graph=False)
    x.grad = f64([10.0, 11.0, 12.0])
    with pytest.raises(RuntimeError, match="retain_graph") as info:
        # a new root over the freed SinFn node: its own node runs, SinFn's is freed
        (y * 3.0).sum().backward()
    msg = str(info.value)
    assert "SinFn" in msg and _has_site(msg, line), msg
    _assert_unchanged(x)


def test_hook_exception_on_nonleaf_keeps_type_and_notes_node_and_line():
    x = _leaf()
    a = x * 2.0; line = _here()

    def bad_hook(g):
        raise LookupError("hook failed")

    a.register_hook(bad_hook)
    c = a.sin().sum()
    with pytest.raises(LookupError, match="hook failed") as info:
        c.backward()
    assert type(info.value) is LookupError
    noted = _notes_with_site(info.value, line)
    assert len(noted) == 1 and "MulBackward" in noted[0], _notes(info.value)
    _assert_unchanged(x)


def test_hook_exception_on_function_output_notes_apply_line():
    x = _leaf()
    y = Double.apply(x); line = _here()
    y.register_hook(lambda g: 1 / 0)
    with pytest.raises(ZeroDivisionError) as info:
        y.sum().backward()
    noted = _notes_with_site(info.value, line)
    assert noted and "DoubleBackward" in noted[0], _notes(info.value)
    _assert_unchanged(x)


def test_hook_exception_on_leaf_keeps_type_and_names_the_leaf():
    x = _leaf()
    x.register_hook(lambda g: (_ for _ in ()).throw(ArithmeticError("leaf hook")))
    y = x.sin()
    with pytest.raises(ArithmeticError, match="leaf hook") as info:
        y.sum().backward()
    assert any("leaf" in n or "AccumulateGrad" in n for n in _notes(info.value)), \
        _notes(info.value)
    _assert_unchanged(x)


def test_error_in_inner_node_names_that_node_not_the_root():
    x = _leaf()
    y = Boom.apply(x); line_boom = _here()
    z = y.exp(); line_exp = _here()
    with pytest.raises(KeyError) as info:
        z.sum().backward()
    assert _notes_with_site(info.value, line_boom)
    assert not _notes_with_site(info.value, line_exp)
    _assert_unchanged(x)


# == 3. the saved-tensor guard ====================================================================

def test_guard_setting_returns_previous():
    assert lucid.autograd.set_saved_tensor_guard(True) is False
    assert lucid.autograd.set_saved_tensor_guard(True) is True
    assert lucid.autograd.set_saved_tensor_guard(False) is True
    with lucid.autograd.saved_tensor_guard():
        assert lucid.autograd.set_saved_tensor_guard(True) is True
    assert lucid.autograd.set_saved_tensor_guard(False) is False


def test_guard_write_raises_while_alive_and_is_allowed_after_backward():
    x = f64([0.5, 1.0, 2.0], requires_grad=True)
    arr = x.detach().numpy()
    with lucid.autograd.saved_tensor_guard():
        y = x.sin()
        with pytest.raises(ValueError):
            arr[0] = 100.0
    with pytest.raises(ValueError):              # still guarded after the with block
        x.detach().numpy()[1] = 100.0
    assert_close(x, [0.5, 1.0, 2.0], rtol=0, atol=0)
    assert x._version == 0
    y.sum().backward()
    assert_close(x.grad, np.cos([0.5, 1.0, 2.0]))
    arr[0] = 3.0                                  # released: writable again
    assert to_numpy(x)[0] == 3.0


def test_guard_saved_output_is_read_only():
    x = f64([0.5, 1.0], requires_grad=True)
    with lucid.autograd.saved_tensor_guard():
        y = x.exp()                              # saves its output
    with pytest.raises(ValueError):
        y.detach().numpy()[0] = 0.0
    assert_close(y, np.exp([0.5, 1.0]))
    y.sum().backward()
    assert_close(x.grad, np.exp([0.5, 1.0]))
    y.detach().numpy()[0] = 0.0
    assert to_numpy(y)[0] == 0.0


def test_guard_released_when_graph_is_deleted():
    base = np.array([0.5, 1.0, 2.0])
    t = lucid.from_numpy(base)
    x = t.requires_grad_()
    with lucid.autograd.saved_tensor_guard():
        y = x.sin() * 2.0
    with pytest.raises(ValueError):
        base[0] = 9.0
    del y
    base[0] = 9.0
    assert to_numpy(x)[0] == 9.0


def test_guard_retain_graph_keeps_read_only_until_last_backward():
    x = f64([0.5, 1.0], requires_grad=True)
    with lucid.autograd.saved_tensor_guard():
        y = x.cos().sum()
    y.backward(retain_graph=True)
    with pytest.raises(ValueError):
        x.detach().numpy()[0] = 1.0
    y.backward()
    assert_close(x.grad, -2 * np.sin([0.5, 1.0]))
    x.detach().numpy()[0] = 1.0


def test_guard_function_saved_tensor():
    x = f64([0.5, 1.0], requires_grad=True)
    with lucid.autograd.saved_tensor_guard():
        y = SinFn.apply(x)
    with pytest.raises(ValueError):
        x.detach().numpy()[0] = 1.0
    y.sum().backward()
    assert_close(x.grad, np.cos([0.5, 1.0]))
    x.detach().numpy()[0] = 1.0


def test_guard_lucid_inplace_op_on_saved_tensor_raises_runtime_error():
    x = _leaf()
    a = x * 2.0
    with lucid.autograd.saved_tensor_guard():
        b = a.sin()
    before = a._version
    for op in (lambda: a.add_(1.0), lambda: a.mul_(3.0), lambda: a.__setitem__(0, 1.0),
               lambda: a.copy_(lucid.zeros(3, dtype=lucid.float64))):
        with pytest.raises(RuntimeError, match="guard"):
            op()
        with lucid.no_grad():
            with pytest.raises(RuntimeError, match="guard"):
                op()
    assert a._version == before
    assert_close(a, [1.0, -2.0, 4.0], rtol=0, atol=0)
    assert a.grad_fn.name() == "MulBackward"
    b.sum().backward()
    assert_close(x.grad, np.arange(3) + 10.0 + 2 * np.cos([1.0, -2.0, 4.0]))
    a.add_(1.0)                                   # released: allowed again
    assert_close(a, [2.0, -1.0, 5.0])


def test_guard_lucid_inplace_op_on_view_of_saved_tensor_mentions_guard():
    x = _leaf()
    a = x * 2.0
    with lucid.autograd.saved_tensor_guard():
        b = a.sin()
    v = a[0:2]
    before = a._version
    with lucid.no_grad():
        with pytest.raises(RuntimeError, match="guard"):
            v.add_(1.0)
    assert a._version == before
    assert_close(a, [1.0, -2.0, 4.0], rtol=0, atol=0)
    del b


def test_guard_optimizer_update_on_saved_leaf_raises_until_backward():
    w = f64([1.0, 2.0], requires_grad=True)
    with lucid.autograd.saved_tensor_guard():
        loss = (w * w).sum()
    with lucid.no_grad():
        with pytest.raises(RuntimeError, match="guard"):
            w -= 0.5
    assert_close(w, [1.0, 2.0], rtol=0, atol=0)
    loss.backward()
    with lucid.no_grad():
        w -= 0.1 * w.grad
    assert_close(w, [0.8, 1.6])


def test_guard_nested_saves_need_every_node_released():
    x = f64([0.5, 1.0], requires_grad=True)
    with lucid.autograd.saved_tensor_guard():
        y1 = x.sin().sum()
        y2 = x.cos().sum()
    y1.backward()
    with pytest.raises(ValueError):               # y2's node still holds x
        x.detach().numpy()[0] = 5.0
    y2.backward()
    x.detach().numpy()[0] = 5.0
    assert to_numpy(x)[0] == 5.0


def test_guard_nested_saves_released_by_deletion_in_any_order():
    x = f64([0.5, 1.0], requires_grad=True)
    with lucid.autograd.saved_tensor_guard():
        y1 = x.sin()
        y2 = x * x                               # saves x twice in one node
        y3 = Double.apply(x) * x
    arr = x.detach().numpy()
    del y2
    with pytest.raises(ValueError):
        arr[0] = 5.0
    del y1
    with pytest.raises(ValueError):
        arr[0] = 5.0
    del y3
    arr[0] = 5.0
    assert to_numpy(x)[0] == 5.0


def test_guard_restores_a_read_only_array_as_read_only():
    ro = np.array([1.0, 2.0])
    ro.flags.writeable = False
    c = lucid.from_numpy(ro)
    x = f64([0.5, 1.0], requires_grad=True)
    with lucid.autograd.saved_tensor_guard():
        y = (x * c).sum()                        # saves c (and x)
    y.backward()
    assert not ro.flags.writeable                 # it was read-only before: still read-only
    x.detach().numpy()[0] = 4.0                   # x was writable: writable again


def test_guard_off_allows_writes():
    x = f64([0.5, 1.0], requires_grad=True)
    y = x.sin()
    x.detach().numpy()[0] = 2.0                   # default: off, the write goes through
    assert to_numpy(x)[0] == 2.0
    with lucid.autograd.saved_tensor_guard(False):
        y2 = x.cos()
        x.detach().numpy()[1] = 3.0
    assert to_numpy(x)[1] == 3.0
    with lucid.no_grad():
        x.add_(1.0)                               # lucid in-place: allowed, version bumped
    assert x._version == 1
    with pytest.raises(RuntimeError):             # ...and caught by the version check
        y2.sum().backward()
    del y


def test_guard_does_not_change_gradients():
    xs = [0.3, -0.7, 1.1]
    x1 = f64(xs, requires_grad=True)
    x2 = f64(xs, requires_grad=True)
    (x1.exp() * x1.sin() / (x1 * x1 + 1.0)).sum().backward()
    with lucid.autograd.saved_tensor_guard():
        (x2.exp() * x2.sin() / (x2 * x2 + 1.0)).sum().backward()
    assert_close(x2.grad, x1.grad, rtol=0, atol=0)
    x2.detach().numpy()[0] = 0.0


# == 4. engine counters ===========================================================================

def _chain():
    x = f64([0.5, 1.0], requires_grad=True)
    a = x * 2.0
    b = a.exp()
    c = b.sum()
    return x, a, b, c


def test_profile_chain_counts_every_node():
    x, a, b, c = _chain()
    with lucid.autograd.profile() as p:
        c.backward()
    # Sum, Exp, Mul and the leaf's AccumulateGrad
    assert p.backward_calls == 1
    assert p.nodes_run == 4
    assert p.nodes_skipped == 0
    assert p.python_reentries == 0
    assert p.python_seconds == 0
    assert p.engine_seconds >= 0
    assert_close(x.grad, 2 * np.exp([1.0, 2.0]))


def test_profile_grad_wrt_middle_tensor_prunes_below():
    x, a, b, c = _chain()
    with lucid.autograd.profile() as p:
        (ga,) = lucid.autograd.grad(c, a)
    assert p.backward_calls == 1
    assert p.nodes_run == 2                        # Sum and Exp; Mul and the leaf are pruned
    assert p.nodes_skipped == 2
    assert_close(ga, np.exp([1.0, 2.0]))
    assert x.grad is None


def test_profile_backward_inputs_prunes_below():
    x, a, b, c = _chain()
    w = f64([3.0, 4.0], requires_grad=True)
    d = (c * w).sum()                              # Sum, Mul(c, w), then the chain, w's leaf
    with lucid.autograd.profile() as p:
        d.backward(inputs=[w])
    assert p.nodes_run == 3                        # Sum, Mul, w's AccumulateGrad
    assert p.nodes_skipped > 0
    assert x.grad is None and w.grad is not None


def test_profile_node_given_no_gradient_is_skipped():
    x = f64([0.5, 1.0], requires_grad=True)
    a = x * 2.0
    y = NoGrad.apply(a)
    with lucid.autograd.profile() as p:
        y.sum().backward()
    assert p.nodes_run == 2                        # Sum and NoGrad's node
    assert p.nodes_skipped == 2                    # Mul and the leaf got no gradient
    assert p.python_reentries == 1
    assert x.grad is None


def test_profile_function_and_hook_are_python_reentries():
    x = f64([0.5, 1.0], requires_grad=True)
    y = Double.apply(x)
    calls = []

    def hook(g):
        calls.append(1)
        time.sleep(0.005)

    y.register_hook(hook)
    z = y.sum()
    with lucid.autograd.profile() as p:
        z.backward()
    assert calls == [1]
    assert p.python_reentries == 2
    assert p.nodes_run == 3                        # Sum, DoubleBackward, AccumulateGrad
    assert p.python_seconds >= 0.004               # the hook slept 5 ms
    assert p.python_seconds <= p.engine_seconds
    assert_close(x.grad, [2.0, 2.0])


def test_profile_reentrant_backward_is_its_own_call():
    class Checkpoint(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with lucid.enable_grad():
                xd = x.detach().requires_grad_()
                y = xd.sin()
            (gx,) = lucid.autograd.grad(y, xd, g)
            return gx

    x = f64([0.5, 1.0], requires_grad=True)
    out = Checkpoint.apply(x).sum()
    with lucid.autograd.profile() as p:
        out.backward()
    assert p.backward_calls == 2
    assert p.python_reentries == 1
    # outer: Sum, CheckpointBackward, AccumulateGrad; inner grad(): SinBackward (captured leaf)
    assert p.nodes_run == 4
    assert 0 <= p.python_seconds <= p.engine_seconds
    assert_close(x.grad, np.cos([0.5, 1.0]))


def test_profile_counts_only_inside_the_block():
    x, a, b, c = _chain()
    c.backward(retain_graph=True)                  # before: not counted
    with lucid.autograd.profile() as p:
        c.backward(retain_graph=True)
        c.backward(retain_graph=True)
    snapshot = (p.backward_calls, p.nodes_run, p.nodes_skipped, p.python_reentries,
                p.python_seconds, p.engine_seconds)
    assert snapshot[:4] == (2, 8, 0, 0)
    c.backward(retain_graph=True)                  # after: not counted
    Double.apply(x).sum().backward()
    assert (p.backward_calls, p.nodes_run, p.nodes_skipped, p.python_reentries,
            p.python_seconds, p.engine_seconds) == snapshot
    with lucid.autograd.profile() as q:           # a new block starts from zero
        pass
    assert (q.backward_calls, q.nodes_run, q.nodes_skipped, q.python_reentries) == (0, 0, 0, 0)
    assert q.python_seconds == 0 and q.engine_seconds == 0


def test_profile_block_with_an_error_still_reports_and_stops():
    x = f64([0.5, 1.0], requires_grad=True)
    y = Boom.apply(x).sum()
    with pytest.raises(KeyError):
        with lucid.autograd.profile() as p:
            y.backward()
    assert p.backward_calls == 1
    assert p.nodes_run in (1, 2)                   # Sum ran; Boom's node raised (counted or not)
    assert p.python_reentries == 1
    _, _, _, c = _chain()
    c.backward()
    with lucid.autograd.profile() as q:
        pass
    assert q.backward_calls == 0 and q.nodes_run == 0


def test_profile_does_not_change_results():
    xs = [0.3, -0.7]
    x1 = f64(xs, requires_grad=True)
    x2 = f64(xs, requires_grad=True)
    (x1.tanh() * x1).sum().backward()
    with lucid.autograd.profile():
        (x2.tanh() * x2).sum().backward()
    assert_close(x2.grad, x1.grad, rtol=0, atol=0)
