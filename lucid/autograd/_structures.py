"""Tensors in and out of the functional transforms: a tensor or a tuple of them, checked, and
given back in the structure the user passed."""
import numpy as np

from .. import _core
from .._batching.batched import BatchedTensor

Tensor = _core.Tensor


def check_callable(fn, what, fn_name):
    """TypeError naming the function and the argument unless fn can be called."""
    if not callable(fn):
        raise TypeError(f"{fn_name}: {what} must be callable (a function of tensors), not "
                        f"{type(fn).__name__}")


def as_tensor_tuple(value, what, fn_name):
    """(was_tuple, tuple of tensors) for a Tensor or a tuple/list of them; TypeError naming the
    function, the argument and the entry that is not a tensor."""
    was_tuple = isinstance(value, (tuple, list))
    items = tuple(value) if was_tuple else (value,)
    for i, item in enumerate(items):
        if not isinstance(item, Tensor):
            where = f"{what}[{i}]" if was_tuple else what
            raise TypeError(f"{fn_name}: {where} is a {type(item).__name__}, not a Tensor: "
                            f"{what} must be a Tensor or a tuple of Tensors")
    return was_tuple, items


def function_outputs(value, fn_name):
    """as_tensor_tuple for what the user's function returned (its own error wording); under
    vmap (a vectorized Jacobian) its outputs are BatchedTensors."""
    was_tuple = isinstance(value, (tuple, list))
    items = tuple(value) if was_tuple else (value,)
    for i, item in enumerate(items):
        if not isinstance(item, Tensor) and type(item) is not BatchedTensor:
            where = f"output {i} of the user-provided function" if was_tuple else \
                "the output of the user-provided function"
            raise TypeError(f"{fn_name}: {where} is a {type(item).__name__}, not a Tensor: "
                            "the function must return a Tensor or a tuple of Tensors")
    return was_tuple, items


def restore(items, was_tuple):
    """Undo as_tensor_tuple: the tuple itself, or its one entry."""
    return tuple(items) if was_tuple else items[0]


def restore_nested(rows, outer_was_tuple, inner_was_tuple):
    """Undo as_tensor_tuple on both levels of a table rows[i][j]."""
    return restore([restore(row, inner_was_tuple) for row in rows], outer_was_tuple)


def check_float(tensors, what, fn_name):
    """Only floating point tensors can be differentiated: TypeError naming the entry."""
    for i, t in enumerate(tensors):
        if t.dtype not in (_core.float32, _core.float64):
            raise TypeError(f"{fn_name}: {what} {i} has dtype {_core.dtype_name(t.dtype)}; only "
                            "floating point tensors (float32, float64) can be differentiated")


def refuse_integer_tangents(tangents, fn_name):
    """Tangents are never cast from integers or bools (make_dual refuses them too): TypeError
    naming the entry. Entries that are not tensors are left to checked_vectors."""
    items = tangents if isinstance(tangents, (tuple, list)) else (tangents,)
    for i, t in enumerate(items):
        if isinstance(t, Tensor) and np.dtype(t.dtype).kind not in "fc":
            raise TypeError(f"{fn_name}: a tangent must be a floating point or complex tensor, not "
                            f"{_core.dtype_name(t.dtype)} (tangent {i}); tangents are not cast "
                            "from integers or bools")


def checked_vectors(v, reference, ref_what, fn_name):
    """v as a tuple matching reference entry by entry in shape (cast to each one's dtype);
    RuntimeError naming both shapes when it does not."""
    _, v = as_tensor_tuple(v, "v", fn_name)
    if len(v) != len(reference):
        raise RuntimeError(f"{fn_name}: v is a tuple of invalid length: should be "
                           f"{len(reference)} (one per {ref_what}) but got {len(v)}")
    out = []
    for i, (vi, ref) in enumerate(zip(v, reference)):
        if tuple(vi.shape) != tuple(ref.shape):
            raise RuntimeError(f"{fn_name}: entry {i} in v has invalid size: should be "
                               f"{tuple(ref.shape)} (the shape of {ref_what} {i}) but got "
                               f"{tuple(vi.shape)}")
        out.append(vi if vi.dtype == ref.dtype else vi.to(ref.dtype))
    return tuple(out)


def default_vector(reference, ref_what, fn_name):
    """v=None stands for a single 1, allowed only for one tensor with one element."""
    if len(reference) != 1 or reference[0].numel() != 1:
        shapes = ", ".join(str(tuple(r.shape)) for r in reference)
        raise RuntimeError(f"{fn_name}: the vector v can only be None if the {ref_what} is a "
                           f"single Tensor with a single element, but got shapes [{shapes}]; "
                           "pass v")
    r = reference[0]
    return (_core._from_array(np.ones(r.shape, dtype=np.dtype(r.dtype))),)


def zeros_like(t):
    """Fresh zeros of t's shape and dtype (the value of an absent derivative)."""
    return _core._from_array(np.zeros(t.shape, dtype=np.dtype(t.dtype)))
