"""BatchedTensor: what a function under vmap sees in place of a tensor.

It holds the physical value, a plain tensor whose leading dims are the batch dims, one per vmap
level it is batched at (`levels`, outermost first, ids increasing), and behaves as the logical
tensor without them: shape, ndim, len, indexing, operators and every op see only the logical
dims (Note [Batch dispatch]). The value carries the autograd history, so reverse mode works on
the physical graph. Reading its data as Python values (item, bool, tolist, numpy) would need one
value per batch element: RuntimeError.
"""
from .. import _core, _ops

_DATA_DEPENDENT = (
    "vmap: {what} on a batched tensor needs the value of each batch element: data-dependent "
    "Python control flow is not supported inside vmap (compute with tensor ops instead, e.g. "
    "lucid.where for an if, or move the {what} outside the vmapped function)")


def data_dependent(what):
    """The RuntimeError of reading a batched tensor's data as a Python value."""
    return RuntimeError(_DATA_DEPENDENT.format(what=what))


class BatchedTensor:
    """A logical tensor under vmap: value's leading len(levels) dims are its batch dims."""
    __slots__ = ("value", "levels", "__weakref__")
    __array_ufunc__ = None                    # NumPy defers to our reflected operators
    __array_priority__ = 1000

    def __init__(self, value, levels):
        self.value = value
        self.levels = levels

    # -- what the logical tensor is ------------------------------------------------------------
    @property
    def shape(self):
        return tuple(self.value.shape)[len(self.levels):]

    @property
    def ndim(self):
        return self.value.ndim - len(self.levels)

    def dim(self):
        return self.ndim

    def size(self, dim=None):
        shape = self.shape
        if dim is None:
            return shape
        if not -len(shape) <= dim < max(len(shape), 1):
            raise IndexError(f"size: dim {dim} is out of range for a tensor of {len(shape)} dims")
        return shape[dim] if shape else 1

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __len__(self):
        shape = self.shape
        if not shape:
            raise TypeError("len() of a 0-d tensor")
        return shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(_ops.unbind(self, 0))

    @property
    def dtype(self):
        return self.value.dtype

    @property
    def device(self):
        return self.value.device

    @property
    def requires_grad(self):
        return self.value.requires_grad

    @property
    def grad_fn(self):
        return self.value.grad_fn

    @property
    def is_leaf(self):
        return self.value.is_leaf

    @property
    def grad(self):
        return None

    @property
    def T(self):
        return self.permute(*reversed(range(self.ndim)))

    @property
    def mT(self):
        return _core.transpose(self, -2, -1)

    @property
    def data(self):
        return BatchedTensor(self.value.detach(), self.levels)

    def is_contiguous(self):
        return self.value.is_contiguous()

    def element_size(self):
        return self.value.element_size()

    def __repr__(self):
        return (f"BatchedTensor(levels={self.levels}, shape={self.shape}, "
                f"value={self.value!r})")

    # -- data-dependent reads ------------------------------------------------------------------
    def item(self):
        raise data_dependent(".item()")

    def tolist(self):
        raise data_dependent(".tolist()")

    def numpy(self, *args, **kwargs):
        raise data_dependent(".numpy()")

    def __array__(self, *args, **kwargs):
        raise data_dependent("conversion to a NumPy array (np.asarray, or a write of a batched "
                             "value into a tensor that is not batched)")

    def __bool__(self):
        raise data_dependent("bool()")

    def __float__(self):
        raise data_dependent("float()")

    def __int__(self):
        raise data_dependent("int()")

    def __index__(self):
        raise data_dependent("use as an index")

    def __hash__(self):
        return id(self)

    def __dlpack__(self, *args, **kwargs):
        raise data_dependent("__dlpack__")

    def backward(self, *args, **kwargs):
        raise RuntimeError("vmap: backward() inside a vmapped function is not supported: it "
                           "would accumulate the gradients of all batch elements into .grad; "
                           "use lucid.func.grad or lucid.func.vjp inside vmap")

    def register_hook(self, hook):
        raise RuntimeError("vmap: register_hook on a batched tensor is not supported")
