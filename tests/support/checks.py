"""Assertions and conversions the tests share (import them: ``from support.checks import ...``)."""
import re

import numpy as np

import lucid

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
