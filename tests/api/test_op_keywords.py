"""PyTorch's keyword spellings of the registered ops (Note [Op keywords], lucid/ops/registry.pxi):
`axis=` for `dim=`, `keepdims=` for `keepdim=` (both spellings at once: TypeError), and `out=`
refused with a TypeError naming the op; for functions and their Tensor methods alike."""
import numpy as np
import pytest

import lucid
import lucid._core as core

OPS = core.registered_ops()
X = np.arange(6.0).reshape(2, 3) - 2.5


def fresh():
    return lucid.tensor(X.copy())


def same(a, b):
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    assert len(a) == len(b)
    for p, q in zip(a, b):
        np.testing.assert_array_equal(p.numpy(), q.numpy())


def test_every_registered_op_has_the_spellings():
    # functions taking *tensors have no vectorcall entry to forward (PyTorch's have no out= either)
    assert sorted(op.name for op in OPS if not op.keywords) == ["broadcast_tensors", "meshgrid"]


def test_a_call_site_the_interpreter_specialized_still_renames():
    # CPython specializes a call site after a few calls; the ops' type keeps it off their entry
    for _ in range(50):
        same(lucid.sum(fresh(), axis=0), lucid.sum(fresh(), dim=0))
    assert isinstance(lucid.sum, type(len))


# ops whose `dim` (and `keepdim`) PyTorch also takes as `axis` (`keepdims`)
REDUCTIONS = ["sum", "mean", "amax", "amin", "prod", "std", "var", "logsumexp", "argmax",
              "argmin", "all", "any", "norm"]


@pytest.mark.parametrize("name", REDUCTIONS + ["max", "min"])
def test_axis_and_keepdims_are_dim_and_keepdim(name):
    fn = getattr(lucid, name)
    same(fn(fresh(), axis=1, keepdims=True), fn(fresh(), dim=1, keepdim=True))
    same(fn(fresh(), axis=0), fn(fresh(), dim=0))
    same(getattr(fresh(), name)(axis=-1, keepdims=True), fn(fresh(), dim=-1, keepdim=True))


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "softmax", "log_softmax", "unsqueeze",
                                  "squeeze", "unbind", "select"])
def test_axis_is_dim_along_a_dim(name):
    fn = getattr(lucid, name)
    extra = {"select": {"index": 1}}.get(name, {})
    same(fn(fresh(), axis=0, **extra), fn(fresh(), dim=0, **extra))


def test_axis_of_the_joins():
    same(lucid.cat([fresh(), fresh()], axis=1), lucid.cat([fresh(), fresh()], dim=1))
    same(lucid.stack([fresh(), fresh()], axis=1), lucid.stack([fresh(), fresh()], 1))


def test_both_spellings_raise_type_error_naming_the_op():
    with pytest.raises(TypeError, match=r"lucid\.sum: got both dim= and axis="):
        lucid.sum(fresh(), dim=0, axis=0)
    with pytest.raises(TypeError, match=r"lucid\.max: got both keepdim= and keepdims="):
        fresh().max(0, keepdim=True, keepdims=True)
    with pytest.raises(TypeError):                      # positional dim and axis=: Python's error
        lucid.mean(fresh(), 0, axis=0)


def test_an_op_without_dim_keeps_refusing_axis():
    with pytest.raises(TypeError, match="axis"):
        lucid.exp(fresh(), axis=0)
    with pytest.raises(TypeError, match="keepdims"):
        lucid.cumsum(fresh(), 0, keepdims=True)         # cumsum has no keepdim (nor in PyTorch)


def test_a_keyword_spelled_by_a_dict_is_renamed_too():
    key = "".join(["ax", "is"])                         # not an interned string
    same(lucid.sum(fresh(), **{key: 0}), lucid.sum(fresh(), dim=0))
    same(lucid.amax(fresh(), **{"dim": 1, "keep" + "dims": True}), lucid.amax(fresh(), 1, True))


@pytest.mark.parametrize("name", sorted(op.name for op in OPS if op.keywords))
def test_out_is_refused_naming_the_op(name):
    op = next(op for op in OPS if op.name == name)
    x = fresh()
    with pytest.raises(TypeError, match=rf"lucid\.{name}: out= is not supported"):
        op.function(x, out=x)
    np.testing.assert_array_equal(x.numpy(), X)
    assert x._version == 0


def test_out_is_refused_on_a_method():
    x = fresh()
    with pytest.raises(TypeError, match=r"lucid\.exp: out= is not supported"):
        x.exp(out=x)
    with pytest.raises(TypeError, match=r"lucid\.sum: out= is not supported"):
        x.sum(0, out=None)


def test_plain_keywords_pass_through():
    same(lucid.sum(fresh(), dim=(0, 1), keepdim=True), lucid.sum(fresh(), (0, 1), True))
    same(lucid.clamp(fresh(), min=-1.0, max=1.0), lucid.clamp(fresh(), -1.0, 1.0))
    same(lucid.add(fresh(), fresh(), alpha=2), fresh() + 2 * fresh())
