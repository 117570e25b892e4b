"""Comparison and logic ops (bool results, no gradient, broadcasting), the creation functions
and conversions of API.md section 8, no_grad as a bare decorator, and inference_mode."""
import threading

import numpy as np
import pytest

import lucid
from support.checks import assert_close, f64, to_numpy
from lucid.autograd import forward_ad as fwAD

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


def test_creation_functions():
    x = lucid.tensor([[1.0, 2.0]], dtype=lucid.float64)
    e = lucid.empty_like(x)
    assert e.shape == (1, 2) and e.dtype == lucid.float64 and not e.requires_grad
    assert lucid.empty_like(x, dtype=lucid.int32).dtype == lucid.int32
    f = lucid.full_like(x, 7, requires_grad=True)
    assert f.tolist() == [[7.0, 7.0]] and f.dtype == lucid.float64 and f.requires_grad
    assert lucid.eye(3).tolist() == np.eye(3).tolist() and lucid.eye(3).dtype == lucid.float32
    assert lucid.eye(2, 3, dtype=lucid.int64).tolist() == [[1, 0, 0], [0, 1, 0]]
    assert lucid.eye(0).shape == (0, 0)
    ls = lucid.linspace(-1, 1, 5)
    assert ls.dtype == lucid.float32 and ls.tolist() == [-1.0, -0.5, 0.0, 0.5, 1.0]
    assert lucid.linspace(0, 1, 1).tolist() == [0.0] and lucid.linspace(0, 1, 0).shape == (0,)
    assert_close(lucid.logspace(0, 2, 3, dtype=lucid.float64), [1.0, 10.0, 100.0], rtol=1e-15)
    assert_close(lucid.logspace(0, 3, 4, base=2), [1.0, 2.0, 4.0, 8.0], rtol=0)
    for call, exc in ((lambda: lucid.eye(-1), RuntimeError), (lambda: lucid.eye(2.5), TypeError),
                      (lambda: lucid.linspace(0, 1, -2), RuntimeError),
                      (lambda: lucid.logspace(0, 1, "3"), TypeError)):
        with pytest.raises(exc):
            call()


def test_as_tensor_shares_when_it_can():
    arr = np.arange(3.0)
    t = lucid.as_tensor(arr)
    assert t.dtype == lucid.float64
    arr[0] = 5.0
    assert t.tolist()[0] == 5.0                       # shares the array's memory
    c = lucid.as_tensor(arr, dtype=lucid.float32)     # another dtype: a converted copy
    arr[1] = 9.0
    assert c.dtype == lucid.float32 and c.tolist()[1] == 1.0
    x = f64([1.0], requires_grad=True)
    assert lucid.as_tensor(x) is x
    y = lucid.as_tensor(x, dtype=lucid.float32)
    assert y.dtype == lucid.float32 and y.grad_fn is not None      # differentiable cast
    assert lucid.as_tensor([1.5, 2.0]).dtype == lucid.float32
    assert lucid.as_tensor([1, 2]).dtype == lucid.int64


def test_new_constructors_take_self_dtype():
    x = f64([1.0, 2.0], requires_grad=True)
    z = x.new_zeros(2, 3)
    assert z.shape == (2, 3) and z.dtype == lucid.float64 and z.tolist() == [[0.0] * 3] * 2
    assert not z.requires_grad and z.grad_fn is None
    assert x.new_ones((2,)).tolist() == [1.0, 1.0]
    assert x.new_ones(3, dtype=lucid.int32).dtype == lucid.int32
    assert x.new_full((2, 2), 3.5).tolist() == [[3.5, 3.5], [3.5, 3.5]]
    assert x.new_empty(4).shape == (4,)
    n = x.new_tensor([[1, 2]])
    assert n.dtype == lucid.float64 and n.tolist() == [[1.0, 2.0]]
    copied = x.new_tensor(x)
    assert copied.tolist() == [1.0, 2.0] and not copied.requires_grad
    assert x.new_zeros(2, requires_grad=True).requires_grad
    with pytest.raises(TypeError, match="new_zeros"):
        x.new_zeros(2.5)


def test_to_type_cpu():
    x = f64([1.0, 2.0], requires_grad=True)
    assert x.to("cpu") is x and x.cpu() is x and x.to(device="cpu") is x
    for y in (x.to(lucid.float32), x.to("cpu", lucid.float32), x.to("cpu", dtype=lucid.float32),
              x.to(device="cpu", dtype=lucid.float32), x.to(lucid.tensor([1.0])),
              x.type(lucid.float32)):
        assert y.dtype == lucid.float32 and y.grad_fn is not None
    y.sum().backward()
    assert x.grad.dtype == lucid.float64 and x.grad.tolist() == [1.0, 1.0]
    assert x.type() == "lucid.DoubleTensor" and lucid.tensor([1]).type() == "lucid.LongTensor"
    assert x.type("lucid.FloatTensor").dtype == lucid.float32
    assert x.to(lucid.float64) is x
    copy = x.to(lucid.float64, copy=True)
    assert copy is not x and copy.tolist() == [1.0, 2.0]
    before = to_numpy(x)
    for call, exc, pattern in (
            (lambda: x.to("cuda"), RuntimeError, "CPU only.*'cuda'"),
            (lambda: x.to(device="mps", dtype=lucid.float32), RuntimeError, "'mps'"),
            (lambda: x.to("cpu", "cpu"), TypeError, "device was given twice"),
            (lambda: x.to(lucid.float32, lucid.int32), TypeError, "dtype was given twice"),
            (lambda: x.to(np.float16), TypeError, "unsupported dtype"),
            (lambda: x.to(lucid.float32, blocking=True), TypeError, "blocking"),
            (lambda: x.type("lucid.HalfTensor"), TypeError, "HalfTensor")):
        with pytest.raises(exc, match=pattern):
            call()
    assert np.array_equal(to_numpy(x), before) and x.dtype == lucid.float64


def test_no_grad_and_enable_grad_as_bare_decorators():
    x = f64([1.0], requires_grad=True)

    @lucid.no_grad
    def doubled(t):
        """doc kept"""
        return t * 2

    assert not doubled(x).requires_grad and doubled.__doc__ == "doc kept"
    assert lucid.is_grad_enabled()

    @lucid.no_grad()
    def also(t):
        return t * 2

    assert not also(x).requires_grad

    with lucid.no_grad():
        @lucid.enable_grad
        def recorded(t):
            return t * 2
        assert recorded(x).requires_grad
        assert not (x * 2).requires_grad
    with pytest.raises(TypeError, match="no_grad"):
        lucid.no_grad(3)


def test_inference_mode():
    x = f64([1.0, 2.0], requires_grad=True)
    with lucid.inference_mode():
        assert lucid.is_inference_mode_enabled() and not lucid.is_grad_enabled()
        y = x * 2
        z = lucid.zeros(2)
        v = z[0:1]                                     # a view made inside
        w = lucid.ones(2, requires_grad=True)          # accepted, without effect
        assert not w.requires_grad and not (w * 2).requires_grad
    assert lucid.is_grad_enabled() and not lucid.is_inference_mode_enabled()
    assert not y.requires_grad and y.grad_fn is None
    for t in (y, z, v, w, y.detach()):
        assert t.is_inference()
        with pytest.raises(RuntimeError, match="inference_mode"):
            t.requires_grad_(True)
        with pytest.raises(RuntimeError, match="inference_mode"):
            t.requires_grad = True
        assert not t.requires_grad
    assert not (y * x).is_inference() and (y * x).requires_grad    # usable as a constant
    assert not x.is_inference() and not lucid.zeros(1).is_inference()
    with lucid.inference_mode(False):                 # a no-op
        assert lucid.is_grad_enabled() and (x * 2).requires_grad
        assert not lucid.zeros(1).is_inference()

    @lucid.inference_mode
    def bare(t):
        return t * 2

    @lucid.inference_mode()
    def called(t):
        return t * 2

    assert bare(x).is_inference() and called(x).is_inference() and lucid.is_grad_enabled()


def test_inference_mode_is_per_thread():
    seen = {}

    def other():
        seen["inference"] = lucid.is_inference_mode_enabled()
        seen["tensor"] = lucid.zeros(1).is_inference()

    with lucid.inference_mode():
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen == {"inference": False, "tensor": False}
