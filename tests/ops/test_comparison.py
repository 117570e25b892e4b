"""Comparison and logic ops of API.md section 8: bool results, no gradient, broadcasting, the
NaN/inf predicates, isclose/allclose as in PyTorch."""
import numpy as np
import pytest

import lucid
from lucid.autograd import forward_ad as fwAD
from support.checks import f64, to_numpy

COMPARE = [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
           ("gt", np.greater), ("ge", np.greater_equal)]


@pytest.mark.parametrize("name,ref", COMPARE, ids=[c[0] for c in COMPARE])
def test_comparisons_broadcast_give_bool_and_stay_out_of_the_graph(name, ref, rng):
    a = rng.integers(-2, 3, size=(3, 1)).astype(np.float64)
    b = rng.integers(-2, 3, size=(4,)).astype(np.float64)
    x = f64(a, requires_grad=True)
    for out in (getattr(lucid, name)(x, f64(b)), getattr(x, name)(f64(b))):
        assert out.dtype == lucid.bool and out.shape == (3, 4)
        assert not out.requires_grad and out.grad_fn is None
        assert np.array_equal(to_numpy(out), ref(a, b))
    assert np.array_equal(to_numpy(getattr(lucid, name)(x, 0.0)), ref(a, 0.0))
    assert np.array_equal(to_numpy(getattr(lucid, name)(lucid.tensor([1, 2]), 1.5)),
                          ref(np.array([1, 2]), 1.5))
    with fwAD.dual_level():
        d = fwAD.make_dual(f64(a), f64(np.ones((3, 1))))
        assert fwAD.unpack_dual(getattr(lucid, name)(d, 0.0)).tangent is None
    with pytest.raises(RuntimeError, match=rf"{name}: shapes \(3, 1\) and \(2, 4\)"):
        getattr(lucid, name)(x, f64(np.ones((2, 4))))


def test_nan_inf_predicates_and_logic():
    v = np.array([1.0, np.nan, np.inf, -np.inf, -0.0])
    for name, ref in (("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite)):
        for out in (getattr(lucid, name)(f64(v)), getattr(f64(v), name)()):
            assert out.dtype == lucid.bool and np.array_equal(to_numpy(out), ref(v))
        ints = getattr(lucid, name)(lucid.tensor([1, 2]))
        assert ints.dtype == lucid.bool and np.array_equal(to_numpy(ints), ref(np.array([1, 2])))
    p = lucid.tensor([[True], [False]])
    q = lucid.tensor([0.0, 2.0, -1.0])             # nonzero is true, any dtype
    assert lucid.logical_and(p, q).tolist() == [[False, True, True], [False, False, False]]
    assert p.logical_or(q).tolist() == [[True, True, True], [False, True, True]]
    assert lucid.logical_xor(p, q).tolist() == [[True, False, False], [False, True, True]]
    assert lucid.logical_not(q).tolist() == [True, False, False] == q.logical_not().tolist()
    with pytest.raises(RuntimeError, match=r"logical_and: shapes \(2, 1\) and \(3, 2\)"):
        lucid.logical_and(p, lucid.ones(3, 2))


def test_isclose_allclose_follow_torch():
    a = f64([1.0, 1.0, np.nan, np.inf, -np.inf, 100.0])
    b = f64([1.0 + 1e-9, 1.1, np.nan, np.inf, np.inf, 100.0009])
    assert lucid.isclose(a, b).tolist() == [True, False, False, True, False, True]
    assert lucid.isclose(a, b, equal_nan=True).tolist()[2] is True
    assert a.isclose(b, rtol=0, atol=0).tolist() == [False, False, False, True, False, False]
    assert lucid.allclose(f64([1.0, 2.0]), f64([1.0, 2.0 + 1e-7])) is True
    assert lucid.allclose(f64([1.0, np.nan]), f64([1.0, np.nan])) is False
    assert f64([1.0, np.nan]).allclose(f64([1.0, np.nan]), equal_nan=True) is True
    assert lucid.allclose(f64([[1.0], [1.0]]), f64([1.0, 1.0, 1.0])) is True     # broadcasting
    assert lucid.isclose(lucid.tensor([1, 2]), lucid.tensor([1, 3])).tolist() == [True, False]
    with pytest.raises(RuntimeError, match="float32.*float64|same dtype"):
        lucid.allclose(lucid.tensor([1.0]), f64([1.0]))
    with pytest.raises(ValueError, match="rtol"):
        lucid.isclose(a, b, rtol=-1.0)
    with pytest.raises(RuntimeError, match=r"allclose: shapes \(6,\) and \(2,\)"):
        lucid.allclose(a, f64([1.0, 2.0]))
