"""scatter, index_add (ops/shape/gather.pxi) and the integer refusal of logaddexp / logaddexp2
(ops/elementwise/binary_functions.pxi) beyond their table rows (tests/support/op_rows_indexing.py,
op_rows_inplace.py: values, gradcheck, gradgradcheck and tangents in float64): values and
gradients against PyTorch where it is installed, scatter's reduce=, repeated indices, dtypes,
the in-place forms, and every error path (nothing modified).

scatter's gradients are compared on unique indices only: a position written twice keeps one of
its values, which PyTorch leaves unspecified; its gradient formula (g.gather(dim, index) for src,
every repeat getting g) is compared on repeats separately, since that is deterministic in both.
"""
import warnings

import numpy as np
import pytest

import lucid
import lucid.autograd.forward_ad as fwAD
from lucid.autograd import gradcheck, gradgradcheck
from support.checks import assert_close

try:
    import torch
except ImportError:          # the PyTorch comparisons say why they did not run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed; "
                                 "pip install torch==2.13.0 to compare with PyTorch")

RNG = np.random.default_rng(26)
X = RNG.standard_normal((3, 4))
UNIQUE = np.array([[0, 2, 1, 2], [1, 0, 2, 0]])           # no position of (3, 4) written twice
REPEAT = np.array([[0, 0, 1, 2], [0, 1, 1, 2]])           # (0, 0), (1, 2), (2, 3) written twice
SRC = RNG.standard_normal((2, 4))
SEL = np.array([2, 0, 2])                                 # index_add: row 2 twice


def _l(a, grad=False):
    return lucid.tensor(np.array(a), requires_grad=grad)


def _t(a, grad=False):
    t = torch.tensor(np.array(a))
    return t.requires_grad_() if grad else t


def _both_grads(lucid_fn, torch_fn, inputs, upstream):
    """(lucid's, torch's) outputs and input gradients of fn at inputs for upstream."""
    lx = [_l(a, True) for a in inputs]
    tx = [_t(a, True) for a in inputs]
    ly, ty = lucid_fn(*lx), torch_fn(*tx)
    ly.backward(_l(upstream))
    ty.backward(_t(upstream))
    return ly, ty, [x.grad for x in lx], [x.grad.numpy() for x in tx]


# -- values and gradients against PyTorch ---------------------------------------------------------

SCATTERS = [   # (id, lucid call, torch call, inputs)
    ("src_dim0", lambda x, s: lucid.scatter(x, 0, _l(UNIQUE), s),
     lambda x, s: torch.scatter(x, 0, _t(UNIQUE), s), (X, SRC)),
    # src as large as index: PyTorch's backward refuses a larger src (its gradient is index's
    # shape); lucid pads it with zeros, checked by gradcheck in the table row
    # (op_rows_indexing.py: lucid.scatter_larger_src)
    ("method_dim1_smaller_index", lambda x, s: x.scatter(1, _l(UNIQUE[:, :2]), s),
     lambda x, s: x.scatter(1, _t(UNIQUE[:, :2]), s), (X, RNG.standard_normal((2, 2)))),
    ("value", lambda x: x.scatter(0, _l(UNIQUE), -2.5),
     lambda x: x.scatter(0, _t(UNIQUE), -2.5), (X,)),
    ("value_keyword", lambda x: lucid.scatter(x, -1, _l(UNIQUE[:, :3]), value=7),
     lambda x: torch.scatter(x, -1, _t(UNIQUE[:, :3]), value=7), (X,)),
    ("src_keyword", lambda x, s: lucid.scatter(x, 0, _l(UNIQUE), src=s),
     lambda x, s: torch.scatter(x, 0, _t(UNIQUE), src=s), (X, SRC)),
]
INDEX_ADDS = [
    ("dim0", lambda x, s: lucid.index_add(x, 0, _l(SEL), s),
     lambda x, s: torch.index_add(x, 0, _t(SEL), s), (X, RNG.standard_normal((3, 4)))),
    ("method_dim1_alpha", lambda x, s: x.index_add(1, _l(SEL), s, alpha=-1.5),
     lambda x, s: x.index_add(1, _t(SEL), s, alpha=-1.5), (X, RNG.standard_normal((3, 3)))),
    ("int32_index_0d", lambda x, s: x.index_add(-1, _l(np.int32(3)), s, alpha=2),
     lambda x, s: x.index_add(-1, _t(np.int32(3)), s, alpha=2), (X, RNG.standard_normal((3, 1)))),
    ("0d_input", lambda x, s: x.index_add(0, _l([0]), s),
     lambda x, s: x.index_add(0, _t([0]), s), (np.array(1.5), np.array(0.25))),
    ("empty_index", lambda x, s: x.index_add(0, _l(np.zeros(0, np.int64)), s),
     lambda x, s: x.index_add(0, _t(np.zeros(0, np.int64)), s), (X, np.zeros((0, 4)))),
]
CASES = SCATTERS + INDEX_ADDS


@needs_torch
@pytest.mark.parametrize("name,lucid_fn,torch_fn,inputs", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_pytorch(name, lucid_fn, torch_fn, inputs):
    upstream = RNG.standard_normal(torch_fn(*[_t(a) for a in inputs]).shape)
    ly, ty, lg, tg = _both_grads(lucid_fn, torch_fn, inputs, upstream)
    assert ly.dtype == lucid.float64 and tuple(ly.shape) == tuple(ty.shape)
    assert_close(ly, ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    for got, want in zip(lg, tg):
        assert_close(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,lucid_fn,torch_fn,inputs", CASES, ids=[c[0] for c in CASES])
def test_gradcheck_gradgradcheck_and_tangents(name, lucid_fn, torch_fn, inputs):
    xs = tuple(_l(a, True) for a in inputs)
    assert gradcheck(lucid_fn, xs)
    assert gradgradcheck(lucid_fn, xs)
    tangents = [RNG.standard_normal(np.shape(a)) for a in inputs]
    with fwAD.dual_level():
        out = lucid_fn(*[fwAD.make_dual(_l(a), _l(t)) for a, t in zip(inputs, tangents)])
        got = fwAD.unpack_dual(out).tangent
    # the op is linear in its tensors: its tangent is the op on the tangents (input's for a value)
    want = lucid_fn(*[_l(t) for t in tangents]) if len(inputs) == 2 else \
        lucid_fn(_l(tangents[0])) - lucid_fn(_l(np.zeros(np.shape(inputs[0]))))
    assert_close(got, want.numpy(), rtol=1e-12, atol=1e-12)


@needs_torch
def test_scatter_gradient_with_repeated_indices_matches_pytorch():
    # the values at a position written twice are unspecified; the gradients are not: input's is
    # 0 there and every repeat of src gets that position's g (torch: grad.gather(dim, index))
    up = RNG.standard_normal((3, 4))
    _, _, lg, tg = _both_grads(lambda x, s: x.scatter(0, _l(REPEAT), s),
                               lambda x, s: x.scatter(0, _t(REPEAT), s), (X, SRC), up)
    for got, want in zip(lg, tg):
        assert_close(got, want, rtol=0, atol=0)


@needs_torch
@pytest.mark.parametrize("reduce", ["add", "multiply"])
@pytest.mark.parametrize("with_src", [True, False], ids=["src", "value"])
def test_scatter_reduce_matches_pytorch_and_repeats_accumulate(reduce, with_src):
    src = (_l(SRC), _t(SRC)) if with_src else (1.5, 1.5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = lucid.scatter(_l(X), 0, _l(REPEAT), src[0], reduce=reduce)
        inplace = _l(X)
        inplace.scatter_(0, _l(REPEAT), src[0], reduce=reduce)
        want = torch.scatter(_t(X), 0, _t(REPEAT), src[1], reduce=reduce).numpy()
    assert_close(got, want, rtol=1e-12, atol=1e-12)
    assert_close(inplace, want, rtol=1e-12, atol=1e-12)
    # PyTorch deprecates reduce= with a tensor src (a UserWarning), not with a value
    ours = [w for w in caught if "scatter" in str(w.message) and "lucid" not in str(w.filename)]
    assert any("deprecated" in str(w.message) and issubclass(w.category, UserWarning)
               for w in ours) == with_src


def test_scatter_reduce_refuses_a_gradient_as_pytorch_has_none():
    x = _l(X, True)
    with pytest.raises(RuntimeError, match="scatter: the derivative of scatter with reduce="):
        lucid.scatter(x, 0, _l(UNIQUE), 2.0, reduce="add")
    with lucid.no_grad():
        assert lucid.scatter(x, 0, _l(UNIQUE), 2.0, reduce="add").grad_fn is None
    with fwAD.dual_level():
        dual = fwAD.make_dual(_l(X), _l(X))
        with pytest.raises(RuntimeError, match="scatter: the derivative"):
            lucid.scatter(dual, 0, _l(UNIQUE), 2.0, reduce="multiply")


@needs_torch
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_integer_and_bool_dtypes_match_pytorch(dtype):
    x = (RNG.integers(0, 5, (3, 4))).astype(dtype)
    s = (RNG.integers(0, 5, (2, 4))).astype(dtype)
    got = lucid.scatter(_l(x), 0, _l(UNIQUE), _l(s))
    want = torch.scatter(_t(x), 0, _t(UNIQUE), _t(s))
    assert got.dtype == lucid.tensor(x).dtype
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    for value in (2.5, 1, True):                 # a number is cast to input's dtype
        got = lucid.scatter(_l(x), 0, _l(UNIQUE), value)
        want = torch.scatter(_t(x), 0, _t(UNIQUE), value)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    s3 = (RNG.integers(0, 5, (3, 4))).astype(dtype)
    alpha = True if dtype == np.bool_ else 3
    got = lucid.index_add(_l(x), 0, _l(SEL), _l(s3), alpha=alpha)
    want = torch.index_add(_t(x), 0, _t(SEL), _t(s3), alpha=alpha)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_the_in_place_forms_write_into_the_tensor_and_differentiate():
    leaf = _l(X, True)
    src = _l(SRC, True)
    y = leaf * 1.0
    out = y.scatter_(0, _l(UNIQUE), src)
    assert out is y and y._version == 1
    y.index_add_(1, _l(SEL), src[:, :3].repeat(2, 1)[:3], alpha=0.5)
    y.sum().backward()
    expected = lucid.scatter(_l(X), 0, _l(UNIQUE), _l(SRC)).numpy()
    np.add.at(expected, (slice(None), SEL), 0.5 * np.tile(SRC[:, :3], (2, 1))[:3])
    assert_close(y, expected, rtol=1e-12, atol=1e-12)
    mask = np.zeros((3, 4), bool)
    mask[UNIQUE, np.arange(4)] = True
    assert_close(leaf.grad, np.where(mask, 0.0, 1.0), rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="scatter_.*leaf"):
        leaf.scatter_(0, _l(UNIQUE), src)


# -- logaddexp / logaddexp2 refuse integer and bool tensors, as PyTorch does ---------------------

INT_OPERANDS = [
    ("int64", lambda: (lucid.tensor([1, 2]), lucid.tensor([2, 0]))),
    ("int32", lambda: (lucid.tensor(np.array([1, 2], np.int32)), lucid.tensor([3, 1]))),
    ("bool", lambda: (lucid.tensor([True, False]), lucid.tensor([True, True]))),
    ("int_and_number", lambda: (lucid.tensor([1, 2]), 2)),
]


@pytest.mark.parametrize("op", ["logaddexp", "logaddexp2"])
@pytest.mark.parametrize("name,operands", INT_OPERANDS, ids=[c[0] for c in INT_OPERANDS])
def test_logaddexp_refuses_integer_and_bool_tensors(op, name, operands):
    a, b = operands()
    before = a.numpy().copy()
    for call in (lambda: getattr(lucid, op)(a, b), lambda: getattr(a, op)(b)):
        with pytest.raises(NotImplementedError, match=rf"^{op}: not implemented for "
                           r"lucid\.(int64|int32|bool) inputs"):
            call()
    np.testing.assert_array_equal(a.numpy(), before)


@needs_torch
@pytest.mark.parametrize("op", ["logaddexp", "logaddexp2"])
def test_logaddexp_dtypes_follow_pytorch(op):
    cases = [(np.array([1, 2]), np.array([2, 0])), (np.array([True]), np.array([False])),
             (np.array([1, 2]), np.array([0.5, 1.5])), (np.array([1.5, 2.0]), np.array(3))]
    for a, b in cases:
        try:
            want = getattr(torch, op)(_t(a), _t(b))
        except NotImplementedError:
            with pytest.raises(NotImplementedError, match=op):
                getattr(lucid, op)(_l(a), _l(b))
            continue
        got = getattr(lucid, op)(_l(a), _l(b))
        assert str(got.dtype).rpartition(".")[2] == str(want.dtype).rpartition(".")[2]
        assert_close(got, want.numpy(), rtol=1e-6, atol=1e-6)


# -- errors: PyTorch's exception type, a message naming the op and argument, nothing modified -----

def _x():
    return lucid.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)


def _i(values, dtype=np.int64):
    return lucid.tensor(np.array(values, dtype=dtype))


ERRORS = [
    ("index_add_float_index", lambda x: x.index_add(0, lucid.zeros(1), x[:1].detach()),
     TypeError, r"index_add: index must be an int64 \(or int32\) tensor, not lucid\.float32"),
    ("index_add_2d_index", lambda x: x.index_add(0, _i([[0]]), x[:1].detach()), IndexError,
     r"index_add: index must be 1-d \(or 0-d\), got shape \(1, 1\)"),
    ("index_add_count", lambda x: x.index_add(0, _i([0, 1]), x[:1].detach()), RuntimeError,
     r"index_add: source has shape \(1, 4\) but must have shape \(2, 4\)"),
    ("index_add_other_dims", lambda x: x.index_add(0, _i([0]), lucid.ones(1, 5, dtype=x.dtype)),
     RuntimeError, r"index_add: source has shape \(1, 5\)"),
    ("index_add_source_ndim", lambda x: x.index_add(0, _i([0]), lucid.ones(4, dtype=x.dtype)),
     RuntimeError, r"index_add: source has shape \(4,\)"),
    ("index_add_dim", lambda x: x.index_add(2, _i([0]), x[:1].detach()), IndexError,
     r"index_add: Dimension out of range"),
    ("index_add_range", lambda x: x.index_add(0, _i([3]), x[:1].detach()), IndexError,
     r"index_add: index 3 is out of range for dim 0 of size 3"),
    ("index_add_negative", lambda x: x.index_add(0, _i([-1]), x[:1].detach()), IndexError,
     r"index_add: index -1"),
    ("index_add_dtype", lambda x: x.index_add(0, _i([0]), lucid.ones(1, 4)), RuntimeError,
     r"index_add: source has dtype lucid\.float32 but input has lucid\.float64"),
    ("index_add_alpha", lambda x: x.index_add(0, _i([0]), x[:1].detach(), alpha="2"), TypeError,
     r"index_add: alpha must be a number, not str"),
    ("index_add_source_not_tensor", lambda x: x.index_add(0, _i([0]), [[1.0] * 4]), TypeError,
     r"index_add.*source"),
    ("index_add__leaf", lambda x: x.index_add_(0, _i([0]), x[:1].detach()), RuntimeError,
     r"index_add_.*leaf"),
    ("scatter_float_index", lambda x: x.scatter(0, lucid.zeros(1, 1), 1.0), TypeError,
     r"scatter: index must be an int64"),
    ("scatter_dtype", lambda x: x.scatter(0, _i([[0]]), lucid.ones(1, 1)), RuntimeError,
     r"scatter: src has dtype lucid\.float32 but input has lucid\.float64"),
    ("scatter_ndim", lambda x: x.scatter(0, _i([0]), x.detach()), RuntimeError,
     r"scatter: index has 1 dims"),
    ("scatter_index_larger_than_src", lambda x: x.scatter(0, _i([[0, 1]]), x[:1, :1].detach()),
     RuntimeError, r"scatter: index shape \(1, 2\) is larger than src"),
    ("scatter_index_larger_than_input", lambda x: x.scatter(0, _i(np.zeros((1, 5), int)), 1.0),
     RuntimeError, r"scatter: index shape \(1, 5\) is larger than input"),
    ("scatter_range", lambda x: x.scatter(0, _i([[3]]), 1.0), IndexError,
     r"scatter: index 3 is out of range for dim 0 of size 3"),
    ("scatter_dim", lambda x: x.scatter(3, _i([[0]]), 1.0), IndexError,
     r"scatter: Dimension out of range"),
    ("scatter_value_str", lambda x: x.scatter(0, _i([[0]]), "a"), TypeError,
     r"scatter: value must be a number, not str"),
    ("scatter_both", lambda x: lucid.scatter(x, 0, _i([[0]]), 1.0, value=2.0), TypeError,
     r"scatter: give src .* not both"),
    ("scatter_neither", lambda x: lucid.scatter(x, 0, _i([[0]])), TypeError,
     r"scatter: give exactly one of src"),
    ("scatter_reduce_word", lambda x: x.detach().scatter(0, _i([[0]]), 1.0, reduce="sum"),
     RuntimeError, r"scatter: reduce must be 'add' or 'multiply', not 'sum'"),
    ("scatter_reduce_type", lambda x: x.detach().scatter(0, _i([[0]]), 1.0, reduce=1),
     TypeError, r"scatter: reduce must be a str"),
    ("scatter_int_value_range", lambda x: _i([[1]]).scatter(0, _i([[0]]), 2 ** 70),
     RuntimeError, r"scatter"),
    ("scatter_0d", lambda x: lucid.tensor(1.0).scatter(0, _i(0), 1.0), RuntimeError,
     r"scatter.*0-d"),
    ("scatter__leaf", lambda x: x.scatter_(0, _i([[0]]), 1.0), RuntimeError, r"scatter_.*leaf"),
]


@pytest.mark.parametrize("name,call,exc,pattern", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, call, exc, pattern):
    x = _x()
    with pytest.raises(exc, match=pattern):
        call(x)
    assert_close(x, np.arange(12.0).reshape(3, 4), rtol=0, atol=0)
    assert x._version == 0 and x.grad is None


def test_an_in_place_form_that_fails_modifies_nothing():
    y = lucid.tensor(np.arange(12.0).reshape(3, 4))
    for call in (lambda: y.index_add_(0, _i([5]), y[:1].clone()),
                 lambda: y.scatter_(0, _i([[0]]), lucid.ones(1, 1)),
                 lambda: y.scatter_(0, _i([[0]]), 1.0, reduce="mean")):
        with pytest.raises((IndexError, RuntimeError)):
            call()
    np.testing.assert_array_equal(y.numpy(), np.arange(12.0).reshape(3, 4))
    assert y._version == 0
