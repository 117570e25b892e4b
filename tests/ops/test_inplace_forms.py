"""The in-place forms made from out-of-place ops (Note [In-place forms],
lucid/ops/elementwise/inplace_forms.pxi): each registered in-place kind gives Tensor a `name_`
that equals the op written into the tensor (values) or the tensor becoming the op's view (view),
under section 2's in-place rules: the version bumps, views see the change, a leaf that requires
grad is refused with nothing modified, a result that can't be held is refused before writing,
and recorded changes differentiate (the op table's rows in tests/support/op_rows_inplace.py run
the gradient, second-order and forward-mode checks)."""
import numpy as np
import pytest

import lucid
import lucid._core as core
import lucid.autograd.forward_ad as fwAD

try:
    import torch
except ImportError:          # the PyTorch comparison says why it did not run
    torch = None

FORMS = [op for op in core.registered_ops() if op.inplace != "none"]
VALUES = [op for op in FORMS if op.inplace == "values"]
VIEWS = [op for op in FORMS if op.inplace == "view"]
A = np.array([[0.5, 1.5, 0.25], [2.0, 0.75, 1.25]])
MASK = lucid.tensor([[True, False, False], [False, True, True]])
ARGS = {"clamp": (0.6, 1.3), "clamp_min": (0.7,), "clamp_max": (1.1,), "pow": (2.0,),
        "atan2": (lucid.tensor(A[::-1].copy()),), "masked_fill": (MASK, -1.0),
        "scatter_add": (0, lucid.tensor([[1, 0, 1]]), lucid.tensor(A[:1].copy())),
        "scatter": (0, lucid.tensor([[1, 0, 1]]), lucid.tensor(A[:1].copy())),
        "index_add": (0, lucid.tensor([1, 1]), lucid.tensor(A[::-1].copy())),
        **{op: (lucid.tensor(A[::-1].copy()),) for op in ("copysign", "fmod", "remainder",
                                                          "hypot", "xlogy")},
        "as_strided": ((3,), (1,)),
        "transpose": (0, 1), "swapaxes": (1, 0), "swapdims": (0, 1), "unsqueeze": (1,),
        "squeeze": (), "t": ()}


def short(op):
    return op.name.rpartition(".")[2]


def test_the_forms_are_those_the_contract_names():
    names = {short(op) + "_" for op in FORMS}
    assert {"clamp_", "masked_fill_", "scatter_add_", "exp_", "log_", "sqrt_", "tanh_",
            "sigmoid_", "relu_", "neg_", "abs_", "pow_", "t_", "unsqueeze_", "squeeze_",
            "sin_", "cos_"} <= names


@pytest.mark.parametrize("op", FORMS, ids=short)
def test_a_form_is_a_tensor_method_made_from_its_op(op):
    method = vars(lucid.Tensor)[short(op) + "_"]
    assert type(method).__name__ == "function_method"
    assert method.__func__.function is op.function
    assert getattr(lucid.Tensor, short(op) + "_").__doc__.startswith(
        "self becomes" if op.inplace == "view" else "self = ")


@pytest.mark.parametrize("op", VALUES, ids=short)
def test_a_values_form_writes_the_op_into_the_tensor(op):
    base = lucid.tensor(A.copy())
    view = base[1]
    args = ARGS.get(short(op), ())
    expected = op.function(lucid.tensor(A.copy()), *args).numpy()
    out = getattr(base, short(op) + "_")(*args)
    assert out is base
    np.testing.assert_array_equal(base.numpy(), expected)
    np.testing.assert_array_equal(view.numpy(), expected[1])     # views see the new values
    assert base._version == 1


@pytest.mark.parametrize("op", VIEWS, ids=short)
def test_a_view_form_makes_the_tensor_the_view(op):
    x = lucid.tensor(A.copy())
    args = ARGS.get(short(op), ())
    expected = op.function(lucid.tensor(A.copy()), *args)
    ptr = x.data_ptr()
    assert getattr(x, short(op) + "_")(*args) is x
    assert x.shape == expected.shape and x.stride() == expected.stride()
    np.testing.assert_array_equal(x.numpy(), expected.numpy())
    assert x.data_ptr() == ptr and x._version == 1


@pytest.mark.parametrize("op", FORMS, ids=short)
def test_a_leaf_that_requires_grad_is_refused_and_kept(op):
    x = lucid.tensor(A.copy(), requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        getattr(x, short(op) + "_")(*ARGS.get(short(op), ()))
    np.testing.assert_array_equal(x.detach().numpy(), A)
    assert x.shape == A.shape and x._version == 0 and x.grad_fn is None
    with lucid.no_grad():                                    # allowed outside grad mode
        getattr(x, short(op) + "_")(*ARGS.get(short(op), ()))
    assert x._version == 1


def test_a_result_the_tensor_cannot_hold_is_refused_before_writing():
    i = lucid.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="exp_: the result has dtype .*float.*int64"):
        i.exp_()
    x = lucid.ones(3)
    with pytest.raises(RuntimeError, match=r"pow_: the result has shape \(2, 3\)"):
        x.pow_(lucid.ones(2, 3))
    with pytest.raises(RuntimeError, match="read-only"):
        lucid.ones(3).expand(2, 3).exp_()
    np.testing.assert_array_equal(i.numpy(), [1, 2, 3])
    np.testing.assert_array_equal(x.numpy(), np.ones(3))
    assert i._version == 0 and x._version == 0


def test_a_recorded_form_takes_the_ops_gradient():
    a = lucid.tensor(A.copy(), requires_grad=True)
    y = a * 1.0
    y.log_().t_()
    assert y.shape == (3, 2) and not y.is_leaf
    y.mul_(lucid.tensor(A.T.copy())).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.ones_like(A))  # d/da sum(log(a) * A) = A / a


def test_forward_mode_tangents_follow_the_forms():
    with fwAD.dual_level():
        x = fwAD.make_dual(lucid.tensor(A.copy()), lucid.tensor(np.ones_like(A)))
        x[0].exp_()                                          # a view's change reaches x's tangent
        _, tx = fwAD.unpack_dual(x)
        np.testing.assert_allclose(tx.numpy(), [np.exp(A[0]), np.ones(3)])
        x.unsqueeze_(0)
        _, tx = fwAD.unpack_dual(x)
        assert tx.shape == (1, 2, 3)


def _as_torch(a):
    return torch.tensor(a.numpy()) if isinstance(a, lucid.Tensor) else a


@pytest.mark.skipif(torch is None, reason="torch is not installed; pip install torch==2.13.0 to "
                    "compare the forms with PyTorch's")
@pytest.mark.parametrize("op", FORMS, ids=short)
def test_a_form_writes_what_pytorchs_form_writes(op):
    name = short(op) + "_"
    args = ARGS.get(short(op), ())
    x = lucid.tensor(A.copy())
    getattr(x, name)(*args)
    want = torch.tensor(A.copy())
    getattr(want, name)(*[_as_torch(a) for a in args])
    assert x.shape == tuple(want.shape)
    np.testing.assert_allclose(x.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
