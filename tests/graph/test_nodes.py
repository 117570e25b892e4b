"""The graph's nodes: grad_fn names, next_functions, and the version check of what a node saved
(a saved tensor changed in place since raises at backward, naming both versions)."""
import re

import pytest

import lucid
from support.checks import assert_close, f64


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
