"""Tensor methods that are lucid functions (tensor/methods.pxi): t.name(*args) is
lucid.name(t, *args) -- same values, same errors, same signature and docstring -- and the
descriptor behind them behaves like a method everywhere Python looks at one."""
import copy
import inspect
import pickle

import numpy as np
import pytest

import lucid
import lucid._core as core


def function_methods():
    """{name: descriptor} of the Tensor methods installed from functions."""
    return {name: raw for name, raw in vars(lucid.Tensor).items()
            if type(raw).__name__ == "function_method"}


def test_the_installed_methods_include_the_function_families():
    names = function_methods()
    for name in ("exp", "sum", "mean", "max", "min", "gather", "mm", "det", "softmax", "eq"):
        assert name in names, name
    assert len(names) >= 90


@pytest.mark.parametrize("name", sorted(function_methods()))
def test_reading_the_method_from_the_class_gives_the_function(name):
    raw = function_methods()[name]
    assert getattr(lucid.Tensor, name) is raw.__func__
    assert raw.__doc__ == raw.__func__.__doc__ and raw.__doc__
    assert raw.__name__ == raw.__func__.__name__


UNARY = ["exp", "log", "tanh", "sqrt", "abs", "sin", "cos", "sigmoid", "log1p", "expm1",
         "square", "rsqrt", "reciprocal", "tan", "atan", "sinh", "cosh", "erf", "sign", "floor",
         "ceil", "round", "trunc", "silu", "gelu", "softplus", "leaky_relu", "elu", "relu",
         "isnan", "isinf", "isfinite", "logical_not", "clone", "sum", "mean", "amax", "amin",
         "prod", "var", "std", "norm", "argmax", "argmin", "max", "min", "all", "any", "trace",
         "flatten", "squeeze", "tril", "triu", "diagonal"]


@pytest.mark.parametrize("name", UNARY)
def test_a_method_call_equals_the_function_call(name):
    x = lucid.tensor(np.linspace(0.2, 0.9, 6).reshape(2, 3), dtype=lucid.float64)
    fn = getattr(lucid.Tensor, name)
    got, want = getattr(x, name)(), fn(x)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_arguments_and_keywords_pass_through():
    x = lucid.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    assert x.sum(dim=0, keepdim=True).shape == (1, 2)
    assert x.sum(1).tolist() == [3.0, 7.0]
    assert x.softmax(-1).shape == (2, 2)
    values, indices = x.max(1)
    assert values.tolist() == [2.0, 4.0] and indices.tolist() == [1, 1]
    assert x.gather(1, lucid.tensor([[0], [1]])).tolist() == [[1.0], [4.0]]


def test_gradients_flow_through_a_method_as_through_the_function():
    x = lucid.tensor([0.5, -1.0, 2.0], dtype=lucid.float64, requires_grad=True)
    (x.tanh() * x.exp()).sum().backward()
    v = x.detach().numpy()
    want = (1 - np.tanh(v) ** 2) * np.exp(v) + np.tanh(v) * np.exp(v)
    np.testing.assert_allclose(x.grad.numpy(), want)
    assert lucid.autograd.gradcheck(lambda t: t.softplus().logsumexp(0), (x,))


def test_a_bound_method_read_without_a_call_works_later():
    x = lucid.tensor([1.0, 4.0])
    bound = x.sqrt
    assert bound.__self__ is x
    assert bound().tolist() == [1.0, 2.0]
    assert inspect.signature(x.sum) == inspect.signature(
        lucid.sum).replace(parameters=list(inspect.signature(lucid.sum).parameters.values())[1:])


def test_errors_are_the_functions_errors_and_name_the_op():
    x = lucid.tensor([1.0, 2.0])
    with pytest.raises(TypeError) as method_error:
        x.gather("a", "b")
    with pytest.raises(TypeError) as function_error:
        lucid.gather(x, "a", "b")
    assert str(method_error.value) == str(function_error.value)
    with pytest.raises(TypeError, match="exp"):
        lucid.Tensor.exp(None)
    with pytest.raises(TypeError):
        x.exp(1)                                  # too many arguments
    assert x.tolist() == [1.0, 2.0]


def test_the_descriptor_cannot_be_made_copied_or_pickled_into_a_broken_state():
    raw = function_methods()["exp"]
    with pytest.raises(TypeError):
        type(raw)()
    with pytest.raises(TypeError):
        type(raw).__new__(type(raw))
    assert copy.copy(raw) is raw or copy.copy(raw).__func__ is raw.__func__
    with pytest.raises((TypeError, pickle.PicklingError)):
        pickle.dumps(raw)
    with pytest.raises(AttributeError):
        raw.__func__ = abs


def test_the_class_still_refuses_new_attributes_from_python():
    with pytest.raises(TypeError):
        lucid.Tensor.exp = None
    assert lucid.Tensor.exp is core.exp
