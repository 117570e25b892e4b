"""Creation sites: every node knows the user's line that made it, and errors during backward
point at it (the node, the user's line, and the in-place op named in the saved-tensor error).

Expected lines come from the test itself (`_here()` on the same line as the op); expected paths
are this file's `__file__`. Error tests check the exception type and that `.grad` / data were
not modified."""
import inspect
import os
import re

import pytest

import lucid
from lucid.autograd import Function
from support.checks import assert_close, assert_unchanged, f64, leaf_with_grad

from .common import Boom, Double, SinFn

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
    x = leaf_with_grad()
    y = Boom.apply(x); line = _here()
    with pytest.raises(KeyError, match="boom from backward") as info:
        y.sum().backward()
    assert any("Boom" in n for n in _notes(info.value))
    assert not _notes_with_site(info.value, line)
    assert_unchanged(x)

    c = (x * 3.0).sum()
    c.backward()
    x.grad = f64([10.0, 11.0, 12.0])
    with pytest.raises(RuntimeError, match="retain_graph") as info2:
        c.backward()
    assert __file__ not in str(info2.value) and THIS_FILE not in str(info2.value)
    assert_unchanged(x)


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
    x = leaf_with_grad()
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
    assert_unchanged(x)


@pytest.mark.parametrize("kind", ["shape", "count", "type"])
def test_wrong_gradients_from_backward_note_the_apply_line(kind):
    results = {
        "shape": lambda g: lucid.ones(5, dtype=lucid.float64),
        "count": lambda g: (g, g),
        "type": lambda g: "not a gradient",
    }
    Bad = _returning(results[kind], f"Bad_{kind}")
    x = leaf_with_grad()
    y = Bad.apply(x); line = _here()
    with pytest.raises(RuntimeError, match=f"Bad_{kind}") as info:
        y.sum().backward()
    noted = _notes_with_site(info.value, line)
    assert noted, f"no note with {__file__}:{line}: {_notes(info.value)}"
    assert any(f"Bad_{kind}" in n for n in noted)
    assert_unchanged(x)


def test_saved_tensor_modified_builtin_names_versions_op_and_line():
    x = leaf_with_grad()
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
    assert_unchanged(x)


def test_saved_tensor_modified_in_function_names_op_and_apply_line():
    x = leaf_with_grad()
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
    assert_unchanged(x)


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
    x = leaf_with_grad()
    a = x * 2.0
    b = a.exp() * a; line = _here()        # MulBackward saves a
    with lucid.set_grad_enabled(grad_mode):
        _OPS[op](a)
    with pytest.raises(RuntimeError) as info:
        b.sum().backward()
    msg = str(info.value)
    assert re.search(rf"(?<![\w]){re.escape(op)}(?![\w])", msg), msg
    assert _has_site(msg + "\n".join(_notes(info.value)), line)
    assert_unchanged(x)


def test_augmented_assignment_named_in_saved_tensor_error():
    x = leaf_with_grad()
    a = x * 2.0
    b = a.cos()
    a += 1.0
    with pytest.raises(RuntimeError) as info:
        b.sum().backward()
    assert re.search(r"add_|\+=|iadd", str(info.value)), str(info.value)
    assert_unchanged(x)


def test_freed_graph_error_names_node_and_line_in_message():
    x = leaf_with_grad()
    y = x.sin()
    c = y.sum(); line = _here()
    c.backward()
    x.grad = f64([10.0, 11.0, 12.0])
    with pytest.raises(RuntimeError, match="retain_graph") as info:
        c.backward()
    msg = str(info.value)
    assert "SumBackward" in msg
    assert _has_site(msg, line), msg
    assert_unchanged(x)


def test_freed_graph_error_for_function_node_names_apply_line():
    x = leaf_with_grad()
    y = SinFn.apply(x); line = _here()
    c = y * 1.0
    c.sum().backward(retain_graph=False)
    x.grad = f64([10.0, 11.0, 12.0])
    with pytest.raises(RuntimeError, match="retain_graph") as info:
        # a new root over the freed SinFn node: its own node runs, SinFn's is freed
        (y * 3.0).sum().backward()
    msg = str(info.value)
    assert "SinFn" in msg and _has_site(msg, line), msg
    assert_unchanged(x)


def test_hook_exception_on_nonleaf_keeps_type_and_notes_node_and_line():
    x = leaf_with_grad()
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
    assert_unchanged(x)


def test_hook_exception_on_function_output_notes_apply_line():
    x = leaf_with_grad()
    y = Double.apply(x); line = _here()
    y.register_hook(lambda g: 1 / 0)
    with pytest.raises(ZeroDivisionError) as info:
        y.sum().backward()
    noted = _notes_with_site(info.value, line)
    assert noted and "DoubleBackward" in noted[0], _notes(info.value)
    assert_unchanged(x)


def test_hook_exception_on_leaf_keeps_type_and_names_the_leaf():
    x = leaf_with_grad()
    x.register_hook(lambda g: (_ for _ in ()).throw(ArithmeticError("leaf hook")))
    y = x.sin()
    with pytest.raises(ArithmeticError, match="leaf hook") as info:
        y.sum().backward()
    assert any("leaf" in n or "AccumulateGrad" in n for n in _notes(info.value)), \
        _notes(info.value)
    assert_unchanged(x)


def test_error_in_inner_node_names_that_node_not_the_root():
    x = leaf_with_grad()
    y = Boom.apply(x); line_boom = _here()
    z = y.exp(); line_exp = _here()
    with pytest.raises(KeyError) as info:
        z.sum().backward()
    assert _notes_with_site(info.value, line_boom)
    assert not _notes_with_site(info.value, line_exp)
    assert_unchanged(x)
