"""The semantics of the table's ops that a Jacobian check cannot see: ties, repeated indices, views
vs copies, gradient dtypes under promotion; and a crash regression run in a child interpreter.
(The table-driven forward / gradient checks of every op are in test_gradcheck.py.)
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import lucid
from support.checks import assert_close, f64, numerical_vjp, to_numpy
from support.op_table import DISTINCT, cases, sample
from support.paths import TESTS

GRADCHECK_MODULE = f"{__package__}.test_gradcheck"        # the table-driven checks run in the child

# Regression (a NumPy scalar once reached a typed ndarray slot and crashed the interpreter in the
# backward of these 0-d cases): they run in-process below like every case, and once more in a
# child interpreter so that a crash fails one test instead of the whole session.
ZERO_DIM_REGRESSION = {
    "lucid.maximum-scalar_scalar", "lucid.minimum-scalar_scalar", "lucid.where_0d-scalar_scalar",
    "amax_default-scalar", "amin_default-scalar", "max_all_method-scalar", "min_all_method-scalar",
}
_CHILD_SCRIPT = """
import sys
import numpy as np
import importlib
sys.path[:0] = [sys.argv[1], sys.argv[3]]      # the tests/ folder, and the lucid this session imports
import lucid
assert lucid.__file__ == sys.argv[4], (lucid.__file__, sys.argv[4])
T = importlib.import_module(sys.argv[5])
from support.checks import SEED
case = {c[0]: c for c in T.CASES}[sys.argv[2]]
for check in T.GRAD_CHECKS:
    check(*case, np.random.default_rng(SEED))
print("ALL-CHECKS-PASSED")
"""


def test_crash_regression_cases_are_in_the_table():
    assert ZERO_DIM_REGRESSION <= {c[0] for c in cases()}


@pytest.mark.parametrize("case_id", sorted(ZERO_DIM_REGRESSION))
def test_crashing_case_in_child(case_id):
    lucid_root = os.path.dirname(os.path.dirname(os.path.abspath(lucid.__file__)))
    r = subprocess.run([sys.executable, "-c", _CHILD_SCRIPT, str(TESTS), case_id, lucid_root,
                        lucid.__file__, GRADCHECK_MODULE], cwd=TESTS, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and "ALL-CHECKS-PASSED" in r.stdout, (
        f"{case_id}: child exited with {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")


# ---------------------------------------------------------------------------------------------
# gradgradcheck itself
# ---------------------------------------------------------------------------------------------

def test_gradgradcheck_detects_wrong_second_derivative():
    # the recorded first derivative of detach(t)*t*t is 2*c*t with c = detach(t); its recorded
    # derivative is 2c = 2t, while finite differences of it (c moves with t) give 4t.
    x = f64([0.3, -0.7, 1.1], requires_grad=True)
    assert not lucid.autograd.gradgradcheck(lambda t: (t.detach() * t * t).sum(), (x,),
                                            raise_exception=False)
    assert lucid.autograd.gradgradcheck(lambda t: (t * t * t).sum(), (x,), raise_exception=False)


# ---------------------------------------------------------------------------------------------
# max / min with dim: (values, indices)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["max", "min"])
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("form", ["method", "function"])
def test_max_min_dim_values_and_indices(which, dim, keepdim, form, rng):
    a = sample(rng, (2, 3, 4), DISTINCT)
    x = f64(a, requires_grad=True)
    if form == "method":
        res = getattr(x, which)(dim=dim, keepdim=keepdim)
    else:
        res = getattr(lucid, which)(x, dim=dim, keepdim=keepdim)
    np_val = (np.max if which == "max" else np.min)(a, axis=dim, keepdims=keepdim)
    np_idx = (np.argmax if which == "max" else np.argmin)(a, axis=dim)
    if keepdim:
        np_idx = np.expand_dims(np_idx, dim)
    values, indices = res                       # tuple unpacking
    assert res[0] is values or np.array_equal(to_numpy(res[0]), to_numpy(values))
    assert_close(res.values, np_val, rtol=0, atol=0)
    assert_close(values, np_val, rtol=0, atol=0)
    assert indices.dtype == lucid.int64
    assert res.indices.dtype == lucid.int64
    assert indices.shape == np_idx.shape
    np.testing.assert_array_equal(to_numpy(res.indices), np_idx)
    assert not indices.requires_grad
    assert values.requires_grad and values.grad_fn is not None
    # gradient goes to the selected entries
    up = rng.standard_normal(np_val.shape)
    values.backward(f64(up))
    want = np.zeros_like(a)
    np.put_along_axis(want, np_idx if keepdim else np.expand_dims(np_idx, dim),
                      up if keepdim else np.expand_dims(up, dim), axis=dim)
    assert_close(x.grad, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("which", ["max", "min"])
def test_max_min_no_dim_is_0d(which, rng):
    a = sample(rng, (3, 4), DISTINCT)
    x = f64(a, requires_grad=True)
    for out in (getattr(x, which)(), getattr(lucid, which)(x)):
        assert isinstance(out, lucid.Tensor)
        assert out.shape == ()
        assert out.item() == (a.max() if which == "max" else a.min())


# ---------------------------------------------------------------------------------------------
# ties share the gradient equally
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("red", ["max", "amax", "lucid.max", "lucid.amax"])
def test_max_ties_split_equally(red):
    x = f64([1.0, 3.0, 3.0], requires_grad=True)
    out = x.max() if red == "max" else x.amax() if red == "amax" else getattr(lucid, red[6:])(x)
    out.backward()
    assert_close(x.grad, [0.0, 0.5, 0.5], rtol=0, atol=1e-15)


@pytest.mark.parametrize("red", ["min", "amin"])
def test_min_ties_split_equally(red):
    x = f64([[2.0, -1.0], [-1.0, -1.0]], requires_grad=True)
    (getattr(x, red)() * 6.0).backward()
    assert_close(x.grad, [[0.0, 2.0], [2.0, 2.0]], rtol=0, atol=1e-14)


def test_amax_dim_ties_split_per_slice():
    x = f64([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0], [5.0, 5.0, 5.0], [0.0, -1.0, 4.0]],
            requires_grad=True)
    up = np.array([1.0, 2.0, 3.0, 4.0])
    x.amax(dim=1).backward(f64(up))
    want = np.array([[0, .5, .5], [1.0, 1.0, 0], [1.0, 1.0, 1.0], [0, 0, 4.0]])
    assert_close(x.grad, want, rtol=0, atol=1e-14)


def test_amin_tuple_dim_keepdim_ties():
    x = f64([[[1.0, 0.0], [0.0, 2.0]], [[0.0, 0.0], [3.0, 0.0]]], requires_grad=True)
    out = x.amin(dim=(1, 2), keepdim=True)
    assert out.shape == (2, 1, 1)
    out.sum().backward()
    want = np.array([[[0, .5], [.5, 0]], [[1 / 3, 1 / 3], [0, 1 / 3]]])
    assert_close(x.grad, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("fn", ["maximum", "minimum", "maximum_method", "minimum_method"])
def test_maximum_minimum_ties_split(fn):
    xa = np.array([1.0, 2.0, 3.0, -1.0])
    ya = np.array([1.0, 0.0, 5.0, -1.0])
    x = f64(xa, requires_grad=True)
    y = f64(ya, requires_grad=True)
    name = fn.split("_")[0]
    out = getattr(x, name)(y) if fn.endswith("method") else getattr(lucid, name)(x, y)
    up = np.array([2.0, 3.0, 4.0, 6.0])
    out.backward(f64(up))
    x_wins = (xa > ya) if name == "maximum" else (xa < ya)
    tie = xa == ya
    assert_close(x.grad, up * np.where(tie, 0.5, x_wins), rtol=0, atol=1e-15)
    assert_close(y.grad, up * np.where(tie, 0.5, ~x_wins & ~tie), rtol=0, atol=1e-15)


def test_maximum_ties_with_broadcast_reduce():
    x = f64([[0.0, 1.0, 2.0], [1.0, 1.0, -3.0]], requires_grad=True)
    y = f64(1.0, requires_grad=True)
    lucid.maximum(x, y).sum().backward()
    assert_close(x.grad, [[0, .5, 1], [.5, .5, 0]], rtol=0, atol=1e-15)
    # y wins at (0,0) and (1,2), ties at three places
    assert_close(y.grad, np.array(2 + 1.5), rtol=0, atol=1e-15)


# ---------------------------------------------------------------------------------------------
# repeated indices accumulate
# ---------------------------------------------------------------------------------------------

def test_repeated_list_index_accumulates():
    x = f64([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    x[[0, 0, 1]].sum().backward()
    assert_close(x.grad, [2.0, 1.0, 0.0, 0.0], rtol=0, atol=0)


def test_repeated_tensor_index_accumulates_with_weights():
    x = f64(np.arange(12.0).reshape(4, 3), requires_grad=True)
    idx = lucid.tensor([3, 1, 3, 3], dtype=lucid.int64)
    w = np.array([[1.0], [2.0], [3.0], [4.0]])
    (x[idx] * f64(w)).sum().backward()
    want = np.zeros((4, 3))
    np.add.at(want, [3, 1, 3, 3], np.broadcast_to(w, (4, 3)))
    assert_close(x.grad, want, rtol=0, atol=0)


def test_repeated_pair_index_accumulates():
    x = f64(np.zeros((2, 3)), requires_grad=True)
    x[[0, 0, 1, 0], [1, 1, 2, 1]].sum().backward()
    assert_close(x.grad, [[0, 3, 0], [0, 0, 1]], rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# views share memory and the version counter; copies do not
# ---------------------------------------------------------------------------------------------

VIEWS = [  # name, lucid fn, numpy fn, base shape
    ("view", lambda t: t.view(3, 4), lambda a: a.reshape(3, 4), (2, 6)),
    ("transpose", lambda t: t.transpose(0, 1), lambda a: a.T, (3, 4)),
    ("permute", lambda t: t.permute(2, 0, 1), lambda a: np.transpose(a, (2, 0, 1)), (2, 3, 2)),
    ("T", lambda t: t.T, lambda a: a.T, (3, 4)),
    ("squeeze", lambda t: t.squeeze(), lambda a: a.squeeze(), (1, 4, 1)),
    ("squeeze_dim", lambda t: t.squeeze(0), lambda a: a.squeeze(0), (1, 4, 1)),
    ("unsqueeze", lambda t: t.unsqueeze(1), lambda a: a[:, None], (3, 4)),
    ("expand", lambda t: t.expand(5, 3, 4), lambda a: np.broadcast_to(a, (5, 3, 4)), (3, 4)),
    ("expand_1", lambda t: t.expand(3, 4), lambda a: np.broadcast_to(a, (3, 4)), (1, 4)),
    ("index_int", lambda t: t[1], lambda a: a[1], (3, 4)),
    ("index_slice", lambda t: t[:, 1:3], lambda a: a[:, 1:3], (3, 4)),
    ("index_step", lambda t: t[::2, ::3], lambda a: a[::2, ::3], (3, 4)),
    ("index_none", lambda t: t[None, 1], lambda a: a[None, 1], (3, 4)),
    ("index_ellipsis", lambda t: t[..., 2], lambda a: a[..., 2], (3, 4)),
    ("index_scalar", lambda t: t[2, 3], lambda a: a[2, 3, ...], (3, 4)),
    ("reshape_contig", lambda t: t.reshape(4, 3), lambda a: a.reshape(4, 3), (3, 4)),
    ("flatten_contig", lambda t: t.flatten(), lambda a: a.reshape(-1), (3, 4)),
    ("lucid.reshape_contig", lambda t: lucid.reshape(t, (12,)), lambda a: a.reshape(12), (3, 4)),
    ("view_of_view", lambda t: t[1:].T.unsqueeze(0), lambda a: a[1:].T[None], (3, 4)),
]


@pytest.mark.parametrize("name,fn,ref,shape", VIEWS, ids=[v[0] for v in VIEWS])
@pytest.mark.parametrize("base_requires_grad", [False, True])
@pytest.mark.parametrize("write", ["add_", "setitem", "fill_", "iadd"])
def test_view_shares_memory_and_version(name, fn, ref, shape, base_requires_grad, write):
    a = np.arange(float(np.prod(shape))).reshape(shape)
    base = f64(a, requires_grad=base_requires_grad)
    v = fn(base)
    assert_close(v, ref(a), rtol=0, atol=0)
    if base_requires_grad:
        assert v.requires_grad and v.grad_fn is not None
    v0, b0 = v._version, base._version
    expected = a.copy()
    with lucid.no_grad():
        if write == "add_":
            base.add_(100.0)
            expected += 100.0
        elif write == "setitem":
            base[0] = -7.0
            expected[0] = -7.0
        elif write == "fill_":
            base.fill_(2.5)
            expected[...] = 2.5
        else:
            base += 3.0
            expected += 3.0
    assert_close(base, expected, rtol=0, atol=0)
    assert_close(v, ref(expected), rtol=0, atol=0)
    assert base._version == b0 + 1
    assert v._version == v0 + 1
    if base_requires_grad:
        assert base.is_leaf and base.requires_grad


WRITABLE_VIEWS = [v for v in VIEWS if not v[0].startswith("expand")]


@pytest.mark.parametrize("name,fn,ref,shape", WRITABLE_VIEWS, ids=[v[0] for v in WRITABLE_VIEWS])
def test_write_through_view_visible_in_base(name, fn, ref, shape):
    a = np.arange(float(np.prod(shape))).reshape(shape)
    base = f64(a)
    v = fn(base)
    b0, v0 = base._version, v._version
    v.mul_(-2.0)
    expected = a.copy()
    ref(expected)[...] *= -2.0          # numpy's ref of a view is also a view
    assert_close(base, expected, rtol=0, atol=0)
    assert base._version == b0 + 1 and v._version == v0 + 1


def test_reshape_of_noncontiguous_is_a_correct_copy():
    a = np.arange(6.0).reshape(2, 3)
    base = f64(a)
    r = base.transpose(0, 1).reshape(6)
    f = base.T.flatten()
    assert_close(r, a.T.reshape(6), rtol=0, atol=0)
    assert_close(f, a.T.reshape(6), rtol=0, atol=0)
    r0, f0 = r._version, f._version
    base.add_(10.0)
    # no single-stride layout can express the transposed order: these must be copies
    assert_close(r, a.T.reshape(6), rtol=0, atol=0)
    assert_close(f, a.T.reshape(6), rtol=0, atol=0)
    assert r._version == r0 and f._version == f0


ADV_INDEX = [
    ("list", lambda t: t[[0, 2]], lambda a: a[[0, 2]]),
    ("int64_tensor", lambda t: t[lucid.tensor([1, 1], dtype=lucid.int64)], lambda a: a[[1, 1]]),
    ("bool_mask", lambda t: t[lucid.tensor(np.array([[True, False, True, False]] * 3))],
     lambda a: a[np.array([[True, False, True, False]] * 3)]),
    ("bool_rows", lambda t: t[lucid.tensor(np.array([False, True, True]))],
     lambda a: a[np.array([False, True, True])]),
    ("slice_list", lambda t: t[:, [3, 0]], lambda a: a[:, [3, 0]]),
]


@pytest.mark.parametrize("name,fn,ref", ADV_INDEX, ids=[v[0] for v in ADV_INDEX])
def test_advanced_indexing_returns_copy(name, fn, ref):
    a = np.arange(12.0).reshape(3, 4)
    base = f64(a)
    c = fn(base)
    assert_close(c, ref(a), rtol=0, atol=0)
    c0 = c._version
    base.add_(100.0)
    assert_close(c, ref(a), rtol=0, atol=0)
    assert c._version == c0
    c.mul_(0.0)
    assert_close(base, a + 100.0, rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# gradients keep each leaf's dtype under promotion
# ---------------------------------------------------------------------------------------------

PROMOTE = [  # name, fn, ref, shape of x (float32), shape of y (float64)
    ("add", lambda x, y: x + y, np.add, (2, 3), (3,)),
    ("sub_reflected", lambda x, y: y - x, lambda a, b: b - a, (2, 3), (2, 3)),
    ("mul", lambda x, y: x * y, np.multiply, (2, 3), (2, 1)),
    ("div", lambda x, y: x / y, np.divide, (3,), (2, 3)),
    ("pow", lambda x, y: x.abs() ** y, lambda a, b: np.abs(a) ** b, (3,), (3,)),
    ("matmul", lambda x, y: x @ y, np.matmul, (2, 3), (3, 4)),
    ("matmul_rev", lambda x, y: y @ x, lambda a, b: b @ a, (3, 2), (4, 3)),
    ("lucid.matmul_vec", lambda x, y: lucid.matmul(x, y), np.matmul, (3,), (3, 2)),
    ("cat", lambda x, y: lucid.cat([x, y], dim=0), lambda a, b: np.concatenate([a, b], 0),
     (2, 3), (1, 3)),
    ("cat_rev", lambda x, y: lucid.cat([y, x], dim=1), lambda a, b: np.concatenate([b, a], 1),
     (2, 3), (2, 2)),
    ("stack", lambda x, y: lucid.stack([x, y]), lambda a, b: np.stack([a, b]), (2, 3), (2, 3)),
    ("maximum", lambda x, y: lucid.maximum(x, y), np.maximum, (2, 3), (3,)),
    ("minimum", lambda x, y: lucid.minimum(y, x), lambda a, b: np.minimum(b, a), (2, 3), (2, 3)),
    ("where", lambda x, y: lucid.where(lucid.tensor(np.array([True, False, True])), x, y),
     lambda a, b: np.where(np.array([True, False, True]), a, b), (2, 3), (2, 3)),
]


@pytest.mark.parametrize("name,fn,ref,xs,ys", PROMOTE, ids=[p[0] for p in PROMOTE])
def test_gradients_keep_leaf_dtype_under_promotion(name, fn, ref, xs, ys, rng):
    xa = rng.uniform(0.5, 2.0, xs).astype(np.float32)
    ya = rng.uniform(0.5, 2.0, ys)
    x = lucid.tensor(xa, dtype=lucid.float32, requires_grad=True)
    y = lucid.tensor(ya, dtype=lucid.float64, requires_grad=True)
    out = fn(x, y)
    assert out.dtype == lucid.float64, f"{name}: float32 with float64 gave {out.dtype}"
    expected = ref(xa.astype(np.float64), ya)
    assert_close(out, expected, rtol=1e-12, atol=1e-12)
    up = rng.standard_normal(out.shape)
    out.backward(f64(up))
    gx, gy = numerical_vjp(ref, [xa.astype(np.float64), ya], up)
    assert x.grad is not None and x.grad.dtype == lucid.float32, x.grad
    assert y.grad is not None and y.grad.dtype == lucid.float64, y.grad
    assert x.grad.shape == x.shape and y.grad.shape == y.shape
    assert_close(x.grad, gx.astype(np.float32), rtol=1e-5, atol=1e-5)
    assert_close(y.grad, gy, rtol=1e-6, atol=1e-7)


def test_gradient_dtype_through_float64_chain():
    x = lucid.tensor([0.5, -1.0, 2.0], dtype=lucid.float32, requires_grad=True)
    w = f64([[1.0, 2.0, 3.0], [0.0, -1.0, 0.5]])
    out = (w @ x).tanh().sum()
    assert out.dtype == lucid.float64
    out.backward()
    assert x.grad.dtype == lucid.float32
    xa = np.array([0.5, -1.0, 2.0], dtype=np.float32).astype(np.float64)
    z = to_numpy(w) @ xa
    assert_close(x.grad, (to_numpy(w).T @ (1 - np.tanh(z) ** 2)).astype(np.float32),
                 rtol=1e-6, atol=1e-6)
