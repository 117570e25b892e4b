"""Assertions and conversions the tests share (import them: ``from support.checks import ...``)."""
import re

import numpy as np

import lucid
from lucid.autograd import grad

SEED = 20240601


def to_numpy(t):
    """A NumPy copy of a lucid tensor (or anything array-like)."""
    if isinstance(t, lucid.Tensor):
        return np.array(t.detach().numpy(), copy=True)
    return np.asarray(t)


def assert_close(actual, expected, rtol=1e-7, atol=1e-9, msg=""):
    a = to_numpy(actual)
    e = to_numpy(expected)
    assert a.shape == e.shape, f"shape mismatch: got {a.shape}, expected {e.shape}. {msg}"
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=msg)


def f64(arr, requires_grad=False):
    """A float64 lucid tensor holding a copy of ``arr``."""
    return lucid.tensor(np.array(arr, dtype=np.float64), dtype=lucid.float64,
                        requires_grad=requires_grad)


def numerical_vjp(ref_fn, arrays, upstream, eps=1e-6):
    """Central finite differences of ``sum(ref_fn(*arrays) * upstream)`` w.r.t. each array.

    ``ref_fn`` works on NumPy float64 arrays, so this check is independent of lucid entirely.
    """
    arrays = [np.array(a, dtype=np.float64, copy=True) for a in arrays]
    grads = []
    for i, a in enumerate(arrays):
        g = np.zeros(a.shape, dtype=np.float64)
        flat = a.reshape(-1)          # a view: a is a fresh contiguous copy
        gflat = g.reshape(-1)
        for k in range(a.size):
            orig = flat[k]
            flat[k] = orig + eps
            fp = np.sum(np.asarray(ref_fn(*arrays), dtype=np.float64) * upstream)
            flat[k] = orig - eps
            fm = np.sum(np.asarray(ref_fn(*arrays), dtype=np.float64) * upstream)
            flat[k] = orig
            gflat[k] = (fp - fm) / (2 * eps)
        grads.append(g)
    return grads


def leaf(values, dtype=lucid.float64, requires_grad=True):
    """A leaf tensor of ``dtype`` holding ``values`` (read as float64 first), requiring grad."""
    return lucid.tensor(np.asarray(values, dtype=np.float64), dtype=dtype,
                        requires_grad=requires_grad)


def grads_for(out, upstream, *inputs, create_graph=False):
    """d(out)/d(inputs) for the upstream gradient `upstream` (a NumPy array)."""
    seed = lucid.tensor(np.asarray(upstream, dtype=np.float64), dtype=out.dtype)
    return grad((out,), inputs, (seed,), create_graph=create_graph, allow_unused=True)


def random_leaf(rng, *shape, requires_grad=True):
    """A float64 tensor of standard normal values drawn from rng, a leaf requiring grad."""
    return lucid.tensor(rng.standard_normal(shape), dtype=lucid.float64,
                        requires_grad=requires_grad)


def leaf_with_grad(values=(0.5, -1.0, 2.0)):
    """A float64 leaf with a known, non-trivial .grad already set."""
    x = f64(list(values), requires_grad=True)
    x.grad = f64(np.arange(len(values), dtype=np.float64) + 10.0)
    return x


def assert_unchanged(x, values=(0.5, -1.0, 2.0)):
    """x still holds the values and the .grad that leaf_with_grad(values) gave it."""
    assert x.grad is not None
    assert_close(x.grad, np.arange(len(values), dtype=np.float64) + 10.0, rtol=0, atol=0)
    assert_close(x, np.array(values, dtype=np.float64), rtol=0, atol=0)


def assert_exact(actual, expected):
    """Equal, NaN-for-NaN, with exact zeros where expected has zeros."""
    a, e = to_numpy(actual), np.asarray(expected, dtype=np.float64)
    assert a.shape == e.shape, (a.shape, e.shape)
    finite = np.isfinite(e)
    np.testing.assert_array_equal(np.isfinite(a), finite, err_msg=f"{a} vs {e}")
    np.testing.assert_array_equal(a[~finite], e[~finite], err_msg=f"{a} vs {e}")  # inf, -inf, nan
    np.testing.assert_allclose(a[finite], e[finite], rtol=1e-6, atol=0, err_msg=f"{a} vs {e}")


def _shape_regex(shape):
    dims = [str(int(d)) for d in shape]
    if len(dims) == 0:
        return r"(\(\)|\[\]|torch\.Size\(\[\]\))"
    if len(dims) == 1:
        # (4,) / [4] / (4)
        return r"[\(\[]\s*" + dims[0] + r"\s*,?\s*[\)\]]"
    sep = r"\s*[,x×]\s*"
    return r"(?<!\d)" + sep.join(dims) + r"(?!\d)"


def mentions_shape(msg, shape):
    return re.search(_shape_regex(shape), msg) is not None


def assert_mentions_shapes(msg, *shapes):
    for s in shapes:
        assert mentions_shape(msg, s), f"error message does not name shape {s}: {msg!r}"
