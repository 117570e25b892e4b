"""Tensors: constructors, dtypes, promotion, attributes, methods, repr, in-place writes
outside the graph (API.md section 1 and the in-place paragraph of section 2)."""
import numpy as np
import pytest

import lucid
from support.checks import assert_close, f64, to_numpy

NP_OF = {
    "float32": np.float32,
    "float64": np.float64,
    "int64": np.int64,
    "int32": np.int32,
    "bool": np.bool_,
}


def ldt(name):
    return getattr(lucid, name)


# ---------------------------------------------------------------------------------------------
# constructors
# ---------------------------------------------------------------------------------------------

def test_tensor_from_python_floats_is_float32_copy():
    x = lucid.tensor([[1., 2.], [3., 4.]], requires_grad=True)
    assert isinstance(x, lucid.Tensor)
    assert x.dtype == lucid.float32
    assert x.shape == (2, 2)
    assert x.requires_grad
    assert x.is_leaf
    assert x.grad is None and x.grad_fn is None
    assert x.detach().numpy().dtype == np.float32
    assert_close(x, np.array([[1., 2.], [3., 4.]], dtype=np.float32))


@pytest.mark.parametrize("data", [[0.3, -0.2], 0.1, [[1e-300, 1.0 / 3.0]]], ids=["list", "scalar", "nested"])
def test_tensor_from_python_floats_with_float64_dtype_is_exact(data):
    # Python floats are doubles: asking for float64 must not round through float32
    t = lucid.tensor(data, dtype=lucid.float64)
    assert t.dtype == lucid.float64
    np.testing.assert_array_equal(t.numpy(), np.array(data, dtype=np.float64))
    assert t.tolist() == data


def test_tensor_from_python_ints_is_int64():
    t = lucid.tensor([1, 2, 3])
    assert t.dtype == lucid.int64
    assert t.numpy().dtype == np.int64
    assert t.tolist() == [1, 2, 3]


def test_tensor_from_python_bools_is_bool():
    t = lucid.tensor([True, False])
    assert t.dtype == lucid.bool
    assert t.tolist() == [True, False]


def test_tensor_scalar_is_0d():
    t = lucid.tensor(3.5)
    assert t.shape == ()
    assert t.ndim == 0
    assert t.dtype == lucid.float32
    assert t.item() == 3.5


def test_tensor_copies_numpy_input_and_keeps_dtype():
    arr = np.array([1.0, 2.0, 3.0], dtype=np.float64)
    t = lucid.tensor(arr)
    assert t.dtype == lucid.float64
    arr[0] = 100.0
    assert t.tolist() == [1.0, 2.0, 3.0], "lucid.tensor must copy its input"


@pytest.mark.parametrize("name", ["float32", "float64", "int64", "int32", "bool"])
def test_tensor_dtype_argument(name):
    t = lucid.tensor([0, 1, 1], dtype=ldt(name))
    assert t.dtype == ldt(name)
    assert t.numpy().dtype == NP_OF[name]


@pytest.mark.parametrize("name", ["float32", "float64", "int64", "int32", "bool"])
def test_from_numpy_keeps_dtype_and_shares_memory(name):
    arr = np.zeros((2, 3), dtype=NP_OF[name])
    t = lucid.from_numpy(arr)
    assert t.dtype == ldt(name)
    assert t.shape == (2, 3)
    arr[1, 2] = 1
    assert t.tolist()[1][2] == 1, "from_numpy must share memory with the array"
    # and the other direction: an out-of-graph in-place write on the tensor is visible in arr
    if name != "bool":
        t.fill_(0)
        assert arr[1, 2] == 0


def test_zeros_ones_full_shapes_and_dtypes():
    z = lucid.zeros(2, 3)
    assert z.shape == (2, 3) and z.dtype == lucid.float32
    assert_close(z, np.zeros((2, 3), dtype=np.float32))
    z2 = lucid.zeros((2, 3))
    assert z2.shape == (2, 3)
    o = lucid.ones((2, 3), dtype=lucid.float64)
    assert o.shape == (2, 3) and o.dtype == lucid.float64
    assert_close(o, np.ones((2, 3)))
    o2 = lucid.ones(4)
    assert o2.shape == (4,) and o2.dtype == lucid.float32
    f = lucid.full((2,), 7.0)
    assert f.shape == (2,) and f.dtype == lucid.float32
    assert f.tolist() == [7.0, 7.0]
    f64 = lucid.full((2, 2), -1.5, dtype=lucid.float64)
    assert f64.dtype == lucid.float64
    assert_close(f64, np.full((2, 2), -1.5))


def test_constructor_requires_grad_argument():
    for t in (lucid.zeros(2, requires_grad=True), lucid.ones((2,), requires_grad=True),
              lucid.full((2,), 1.0, requires_grad=True), lucid.randn(2, requires_grad=True),
              lucid.tensor([1.0], requires_grad=True)):
        assert t.requires_grad and t.is_leaf and t.grad_fn is None


def test_like_constructors():
    x = lucid.tensor(np.arange(6, dtype=np.float64).reshape(2, 3))
    zl = lucid.zeros_like(x)
    ol = lucid.ones_like(x)
    assert zl.shape == (2, 3) and zl.dtype == lucid.float64
    assert ol.shape == (2, 3) and ol.dtype == lucid.float64
    assert_close(zl, np.zeros((2, 3)))
    assert_close(ol, np.ones((2, 3)))
    # new memory: writing into the result does not touch x
    zl.fill_(5.0)
    assert_close(x, np.arange(6, dtype=np.float64).reshape(2, 3))
    assert lucid.zeros_like(x, dtype=lucid.float32).dtype == lucid.float32


def test_arange_and_empty():
    a = lucid.arange(5)
    assert a.shape == (5,)
    assert a.dtype == lucid.int64
    assert a.tolist() == [0, 1, 2, 3, 4]
    e = lucid.empty(3)
    assert e.shape == (3,) and e.dtype == lucid.float32
    e2 = lucid.empty(2, 3, dtype=lucid.float64)
    assert e2.shape == (2, 3) and e2.dtype == lucid.float64


def test_manual_seed_reproducible():
    lucid.manual_seed(0)
    a = to_numpy(lucid.randn(4, 5))
    b = to_numpy(lucid.rand(4, 5))
    lucid.manual_seed(0)
    a2 = to_numpy(lucid.randn(4, 5))
    b2 = to_numpy(lucid.rand(4, 5))
    np.testing.assert_array_equal(a, a2)
    np.testing.assert_array_equal(b, b2)
    # successive draws differ
    assert not np.array_equal(a, to_numpy(lucid.randn(4, 5)))
    lucid.manual_seed(1)
    assert not np.array_equal(a, to_numpy(lucid.randn(4, 5)))


def test_randn_rand_distribution():
    lucid.manual_seed(123)
    n = lucid.randn(200, 100)
    u = lucid.rand(200, 100)
    assert n.shape == (200, 100) and u.shape == (200, 100)
    assert n.dtype == lucid.float32 and u.dtype == lucid.float32
    n_ = to_numpy(n)
    u_ = to_numpy(u)
    assert abs(n_.mean()) < 0.05 and abs(n_.std() - 1.0) < 0.05
    assert u_.min() >= 0.0 and u_.max() < 1.0
    assert abs(u_.mean() - 0.5) < 0.02
    assert lucid.randn((3, 2)).shape == (3, 2)
    assert lucid.randn(3, dtype=lucid.float64).dtype == lucid.float64


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


# ---------------------------------------------------------------------------------------------
# requires_grad only on float
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["int64", "int32", "bool"])
def test_requires_grad_rejected_on_non_float(name):
    with pytest.raises(RuntimeError):
        lucid.tensor([1, 0], dtype=ldt(name), requires_grad=True)
    t = lucid.tensor([1, 0], dtype=ldt(name))
    with pytest.raises(RuntimeError):
        t.requires_grad_()
    assert t.requires_grad is False
    with pytest.raises(RuntimeError):
        t.requires_grad = True
    assert t.requires_grad is False
    assert t.tolist() == [1, 0] if name != "bool" else t.tolist() == [True, False]
    with pytest.raises(RuntimeError):
        lucid.zeros(2, dtype=ldt(name), requires_grad=True)


@pytest.mark.parametrize("name", ["float32", "float64"])
def test_requires_grad_settable_on_float_leaf(name):
    t = lucid.zeros(3, dtype=ldt(name))
    assert t.requires_grad is False
    t.requires_grad = True
    assert t.requires_grad is True and t.is_leaf
    t.requires_grad = False
    assert t.requires_grad is False
    assert t.requires_grad_() is t
    assert t.requires_grad is True
    t.requires_grad_(False)
    assert t.requires_grad is False


# ---------------------------------------------------------------------------------------------
# promotion (API.md section 1), one row per rule
# ---------------------------------------------------------------------------------------------

def _t(dtype, ndim=1):
    shape = (3,) if ndim == 1 else ((2, 2) if ndim == 2 else ())
    return lucid.ones(shape, dtype=getattr(lucid, dtype))


PROMOTION = [
    # (id, make operands, op, expected dtype)
    ("f32+i64 float beats int", lambda: (_t("float32"), _t("int64")), "add", "float32"),
    ("i64+f32 float beats int", lambda: (_t("int64"), _t("float32")), "add", "float32"),
    ("i32*f64 float beats int", lambda: (_t("int32"), _t("float64")), "mul", "float64"),
    ("f64-i32 float beats int", lambda: (_t("float64"), _t("int32")), "sub", "float64"),
    ("f32+f64 wider wins", lambda: (_t("float32"), _t("float64")), "add", "float64"),
    ("f64*f32 wider wins", lambda: (_t("float64"), _t("float32")), "mul", "float64"),
    ("f32/f64 wider wins", lambda: (_t("float32"), _t("float64")), "div", "float64"),
    ("f32@f64 wider wins", lambda: (_t("float32", 2), _t("float64", 2)), "matmul", "float64"),
    ("f64@f32 wider wins", lambda: (_t("float64", 2), _t("float32", 2)), "matmul", "float64"),
    ("f32+pyfloat", lambda: (_t("float32"), 2.5), "add", "float32"),
    ("pyfloat*f32 reflected", lambda: (2.5, _t("float32")), "mul", "float32"),
    ("f64+pyfloat", lambda: (_t("float64"), 2.5), "add", "float64"),
    ("f32*pyint", lambda: (_t("float32"), 3), "mul", "float32"),
    ("f32+0d f64", lambda: (_t("float32"), _t("float64", 0)), "add", "float32"),
    ("0d f64*f32", lambda: (_t("float64", 0), _t("float32")), "mul", "float32"),
    ("f32**0d f64", lambda: (_t("float32"), _t("float64", 0)), "pow", "float32"),
    ("i64+pyfloat -> f32", lambda: (_t("int64"), 2.5), "add", "float32"),
    ("pyfloat*i64 -> f32", lambda: (2.5, _t("int64")), "mul", "float32"),
    ("i32+pyfloat -> f32", lambda: (_t("int32"), 0.5), "add", "float32"),
    ("i64+i64 stays int", lambda: (_t("int64"), _t("int64")), "add", "int64"),
    ("i64+pyint stays int", lambda: (_t("int64"), 2), "add", "int64"),
]

OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a ** b,
    "matmul": lambda a, b: a @ b,
}
FUNCS = {
    "add": lambda a, b: lucid.add(a, b),
    "sub": lambda a, b: lucid.sub(a, b),
    "mul": lambda a, b: lucid.mul(a, b),
    "div": lambda a, b: lucid.div(a, b),
    "pow": lambda a, b: lucid.pow(a, b),
    "matmul": lambda a, b: lucid.matmul(a, b),
}


@pytest.mark.parametrize("rule,make,opname,expected", PROMOTION, ids=[p[0] for p in PROMOTION])
def test_promotion(rule, make, opname, expected):
    a, b = make()
    r = OPS[opname](a, b)
    assert r.dtype == getattr(lucid, expected), f"{rule}: got {r.dtype}"
    assert r.numpy().dtype == NP_OF[expected]
    r2 = FUNCS[opname](a, b)
    assert r2.dtype == getattr(lucid, expected), f"{rule} (function form): got {r2.dtype}"


def test_promotion_values_are_correct():
    a = lucid.tensor([1, 2, 3])                   # int64
    r = a * 0.5
    assert r.dtype == lucid.float32
    assert_close(r, np.array([0.5, 1.0, 1.5], dtype=np.float32))
    f32 = lucid.tensor(np.array([1.0, 2.0], dtype=np.float32))
    f64 = lucid.tensor(np.array([1e-10, 1e-10], dtype=np.float64))
    s = f32 + f64
    assert s.dtype == lucid.float64
    # computed in float64: the tiny addend survives (in float32 it would vanish)
    assert_close(s, np.array([1.0 + 1e-10, 2.0 + 1e-10]), rtol=0, atol=1e-15)


# ---------------------------------------------------------------------------------------------
# attributes
# ---------------------------------------------------------------------------------------------

def test_attributes_of_a_leaf():
    x = lucid.tensor(np.zeros((2, 3, 4)), requires_grad=True)
    assert isinstance(x.shape, tuple) and x.shape == (2, 3, 4)
    assert x.ndim == 3
    assert x.dtype == lucid.float64
    assert x.device == "cpu"
    assert x.grad is None
    assert x.grad_fn is None
    assert x.is_leaf is True
    assert x.retains_grad is False
    assert isinstance(x._version, int)


def test_attributes_of_a_non_leaf():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = x * lucid.tensor([2.0, 2.0])
    assert y.requires_grad
    assert y.is_leaf is False
    assert y.grad_fn is not None
    assert y.grad_fn.name() == "MulBackward"
    assert y.retains_grad is False
    y.retain_grad()
    assert y.retains_grad is True
    # result of an op on tensors that do not require grad is a leaf
    z = lucid.tensor([1.0]) * 2.0
    assert z.is_leaf and z.grad_fn is None and not z.requires_grad


def test_grad_is_settable():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    g = lucid.tensor([0.5, 0.25])
    x.grad = g
    assert_close(x.grad, [0.5, 0.25])
    x.grad = None
    assert x.grad is None


@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize("own", [lambda x: x, lambda x: x.detach(), lambda x: x.detach()[::-1],
                                 lambda x: lucid.from_numpy(x.detach().numpy())],
                         ids=["itself", "detached", "reversed-view", "numpy-alias"])
def test_a_tensor_cannot_be_its_own_grad(own, requires_grad):
    # PyTorch refuses x itself only; a view as x.grad had backward accumulate into x's values
    x = lucid.tensor([1.0, 2.0], requires_grad=requires_grad)
    g = lucid.tensor([0.5, 0.25])
    x.grad = g
    with pytest.raises(RuntimeError, match="can't assign Variable as its own grad"):
        x.grad = own(x)
    assert x.grad is g and x.tolist() == [1.0, 2.0] and g.tolist() == [0.5, 0.25]


def test_a_grad_in_memory_beside_the_tensor_is_accepted():
    base = lucid.tensor([1.0, 2.0, 3.0, 4.0])
    x = base[0::2].detach().requires_grad_(True)
    x.grad = base[1::2]                       # interleaved with x, no element shared
    (x * 3.0).sum().backward()
    assert base.tolist() == [1.0, 5.0, 3.0, 7.0] and x.grad.tolist() == [5.0, 7.0]


# ---------------------------------------------------------------------------------------------
# methods
# ---------------------------------------------------------------------------------------------

def test_numpy_shares_memory():
    t = lucid.zeros(3, dtype=lucid.float64)
    a = t.numpy()
    assert isinstance(a, np.ndarray) and a.dtype == np.float64
    a[1] = 4.0
    assert t.tolist() == [0.0, 4.0, 0.0]


def test_numpy_on_requires_grad_raises_and_detach_works():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError):
        x.numpy()
    d = x.detach()
    a = d.numpy()
    assert a.tolist() == [1.0, 2.0]
    a[0] = 9.0                                   # detach shares memory with x
    assert x.detach().tolist() == [9.0, 2.0]
    # a non-leaf that requires grad too
    with pytest.raises(RuntimeError):
        (x * 1.0).numpy()


def test_item():
    assert lucid.tensor(3.5).item() == 3.5
    assert isinstance(lucid.tensor(3.5).item(), float)
    assert lucid.tensor([2.25]).item() == 2.25
    v = lucid.tensor(7).item()
    assert v == 7 and isinstance(v, int)
    assert lucid.tensor(True).item() is True
    with pytest.raises((RuntimeError, ValueError)):
        lucid.tensor([1.0, 2.0]).item()


def test_tolist():
    arr = np.arange(6, dtype=np.float64).reshape(2, 3)
    assert lucid.tensor(arr).tolist() == arr.tolist()
    assert lucid.tensor(2.0).tolist() == 2.0
    assert lucid.tensor([1, 2]).tolist() == [1, 2]


def test_size_numel_dim_len():
    t = lucid.zeros(4, 2, 3)
    assert tuple(t.size()) == (4, 2, 3)
    assert t.size(1) == 2
    assert t.size(-1) == 3
    assert t.numel() == 24
    assert t.dim() == 3
    assert len(t) == 4
    assert lucid.zeros(()).numel() == 1
    with pytest.raises(TypeError):
        len(lucid.tensor(1.0))


def test_array_protocol():
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = lucid.tensor(arr)
    a = np.asarray(t)
    assert a.dtype == np.float32
    np.testing.assert_array_equal(a, arr)
    np.testing.assert_array_equal(np.array(t, dtype=np.float64), arr.astype(np.float64))


def test_detach():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    d = y.detach()
    assert d.requires_grad is False and d.grad_fn is None and d.is_leaf
    assert d.dtype == y.dtype and d.shape == y.shape
    assert_close(d, [3.0, 6.0])
    # shares memory (out-of-graph write on the detached tensor is visible in y)
    d.add_(1.0)
    assert_close(y, [4.0, 7.0])
    # y itself is untouched as a graph member
    assert y.grad_fn is not None and y.requires_grad


def test_detach_in_place():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    r = y.detach_()
    assert r is y
    assert y.grad_fn is None and y.requires_grad is False and y.is_leaf
    assert_close(y, [3.0, 6.0])


def test_clone_copies():
    x = lucid.tensor(np.array([1.0, 2.0]), requires_grad=True)
    c = x.clone()
    assert c.dtype == lucid.float64 and c.shape == (2,)
    assert c.requires_grad and c.grad_fn is not None and not c.is_leaf
    with lucid.no_grad():
        c.fill_(0.0)
    assert_close(x, [1.0, 2.0])
    plain = lucid.tensor([1, 2, 3])
    pc = plain.clone()
    pc.fill_(9)
    assert plain.tolist() == [1, 2, 3] and pc.dtype == lucid.int64


def test_repr():
    r = repr(lucid.tensor([1., 2.], requires_grad=True))
    assert r.startswith("tensor([1., 2.]"), r
    assert "requires_grad=True" in r
    x = lucid.tensor([1., 2.], requires_grad=True)
    s = repr(x.sum())
    assert s.startswith("tensor(3."), s
    assert "grad_fn=<SumBackward>" in s, s
    plain = repr(lucid.tensor([1., 2.]))
    assert plain.startswith("tensor([1., 2.]") and "requires_grad" not in plain and "grad_fn" not in plain


@pytest.mark.parametrize("dtype", [lucid.float32, lucid.float64, lucid.int64])
@pytest.mark.parametrize("spec", [".2f", ">8.3f", ".1e", ""])
def test_format_of_zero_dim_tensor(dtype, spec):
    t = lucid.tensor(3.14159, dtype=dtype)
    assert f"{t:{spec}}" == format(t.item(), spec)
    s = lucid.tensor([1.0, 2.0, 3.0], requires_grad=True).sum()
    assert f"{s:.2f}" == "6.00"


def test_format_of_nonscalar_tensor():
    t = lucid.tensor([1.0, 2.0])
    assert f"{t}" == repr(t)
    with pytest.raises(TypeError, match="0-d"):
        f"{t:.2f}"


# ---------------------------------------------------------------------------------------------
# in-place writes outside the graph: they write memory and bump _version
# ---------------------------------------------------------------------------------------------

def _base():
    return np.arange(6, dtype=np.float64).reshape(2, 3)


INPLACE = [
    ("add_scalar", lambda t: t.add_(2.0), lambda a: a + 2.0),
    ("add_tensor_broadcast", lambda t: t.add_(lucid.tensor([1.0, 2.0, 3.0], dtype=lucid.float64)),
     lambda a: a + np.array([1.0, 2.0, 3.0])),
    ("mul_scalar", lambda t: t.mul_(-2.0), lambda a: a * -2.0),
    ("mul_tensor", lambda t: t.mul_(lucid.tensor(np.full((2, 3), 0.5))), lambda a: a * 0.5),
    ("zero_", lambda t: t.zero_(), lambda a: np.zeros_like(a)),
    ("fill_", lambda t: t.fill_(7.5), lambda a: np.full_like(a, 7.5)),
    ("copy_same_shape", lambda t: t.copy_(lucid.tensor(np.ones((2, 3)))), lambda a: np.ones((2, 3))),
    ("copy_broadcast", lambda t: t.copy_(lucid.tensor(np.array([4.0, 5.0, 6.0]))),
     lambda a: np.broadcast_to(np.array([4.0, 5.0, 6.0]), (2, 3))),
    ("copy_from_float32", lambda t: t.copy_(lucid.tensor(np.full((2, 3), 0.25, dtype=np.float32))),
     lambda a: np.full((2, 3), 0.25)),
]
SETITEM = [
    ("int_scalar", lambda t: t.__setitem__(0, 9.0), lambda a: a.__setitem__(0, 9.0)),
    ("tuple_scalar", lambda t: t.__setitem__((1, 2), -1.0), lambda a: a.__setitem__((1, 2), -1.0)),
    ("slice_tensor", lambda t: t.__setitem__((slice(None), 1), lucid.tensor(np.array([8.0, 9.0]))),
     lambda a: a.__setitem__((slice(None), 1), np.array([8.0, 9.0]))),
    ("slice_broadcast", lambda t: t.__setitem__(slice(0, 1), lucid.tensor(np.array([1.0, 2.0, 3.0]))),
     lambda a: a.__setitem__(slice(0, 1), np.array([1.0, 2.0, 3.0]))),
]


def _setitem_ref(f):
    def g(a):
        a = a.copy()
        f(a)
        return a
    return g


ALL_INPLACE = INPLACE + [("setitem_" + n, f, _setitem_ref(r)) for n, f, r in SETITEM]


@pytest.mark.parametrize("name,fn,ref", ALL_INPLACE, ids=[c[0] for c in ALL_INPLACE])
def test_inplace_on_tensor_outside_graph(name, fn, ref):
    t = lucid.tensor(_base(), dtype=lucid.float64)
    v0 = t._version
    res = fn(t)
    if not name.startswith("setitem"):
        assert res is t, f"{name} must return the tensor itself"
    assert t._version > v0, f"{name} did not bump _version"
    assert_close(t, ref(_base()))
    assert t.grad_fn is None and not t.requires_grad


@pytest.mark.parametrize("name,fn,ref", ALL_INPLACE, ids=[c[0] for c in ALL_INPLACE])
def test_inplace_on_leaf_requiring_grad_under_no_grad(name, fn, ref):
    t = lucid.tensor(_base(), dtype=lucid.float64, requires_grad=True)
    v0 = t._version
    with lucid.no_grad():
        fn(t)
    assert t._version > v0
    assert_close(t, ref(_base()))
    assert t.requires_grad and t.is_leaf and t.grad_fn is None
    # still usable as a leaf afterwards
    (t * 2.0).sum().backward()
    assert_close(t.grad, np.full((2, 3), 2.0))


def test_inplace_under_no_grad_shares_memory_with_numpy_view():
    arr = np.zeros(3)
    t = lucid.from_numpy(arr)
    t.add_(1.0)
    t[2] = 5.0
    np.testing.assert_array_equal(arr, [1.0, 1.0, 5.0])


def test_version_counts_every_inplace_change():
    t = lucid.zeros(3)
    versions = [t._version]
    t.add_(1.0)
    versions.append(t._version)
    t.mul_(2.0)
    versions.append(t._version)
    t[0] = 3.0
    versions.append(t._version)
    t.zero_()
    versions.append(t._version)
    assert all(b > a for a, b in zip(versions, versions[1:])), versions
    # out-of-place ops do not bump
    v = t._version
    _ = t + 1.0
    _ = t.clone()
    assert t._version == v


def test_optimizer_style_update_under_no_grad():
    w = lucid.tensor(np.array([1.0, -2.0]), requires_grad=True)
    (w * w).sum().backward()
    with lucid.no_grad():
        w.add_(w.grad * -0.1)
    assert_close(w, np.array([1.0, -2.0]) - 0.1 * 2 * np.array([1.0, -2.0]))
    assert w.is_leaf and w.requires_grad


# ---------------------------------------------------------------------------------------------
# views and aliases share the version counter
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("make_view", [
    lambda t: t.transpose(0, 1),
    lambda t: t.reshape(6),
    lambda t: t.detach(),
], ids=["transpose", "reshape_contiguous", "detach"])
def test_views_share_memory_and_version(make_view):
    t = lucid.tensor(np.zeros((2, 3)))
    v = make_view(t)
    t0, v0 = t._version, v._version
    v.add_(1.0)
    assert_close(t, np.ones((2, 3)))
    assert t._version > t0 and v._version > v0
    t.mul_(3.0)
    assert_close(v, np.full(v.shape, 3.0))
    assert v._version == t._version


def test_item_and_tolist_work_on_tensors_requiring_grad():
    x = lucid.tensor(np.array([1.5, 2.5]), requires_grad=True)
    assert x.sum().item() == 4.0
    assert x.tolist() == [1.5, 2.5]
    assert (x * 2.0).tolist() == [3.0, 5.0]


def test_bool_of_a_tensor_of_several_elements_points_to_any_and_all():
    t = lucid.tensor([1.0, 0.0])
    with pytest.raises(RuntimeError, match=r"2 elements is ambiguous; use t\.any\(\) or t\.all\(\)"):
        bool(t)
    assert bool(lucid.tensor([1.0])) and not bool(lucid.tensor(0.0))
