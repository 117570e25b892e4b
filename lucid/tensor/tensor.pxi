# Tensor: an ndarray plus its place in the graph.

@cython.freelist(256)
cdef class Tensor:
    """A NumPy-backed tensor that records the operations made on it for backward."""

    def __init__(self, *args, **kwargs):
        raise TypeError("make tensors with lucid.tensor(), lucid.from_numpy() or the constructors "
                        "(lucid.zeros, lucid.ones, ...)")

    # -- storage and version -------------------------------------------------------------------
    cdef Storage storage(self):
        if self._storage is None:
            self._storage = new_storage()
        return self._storage

    cdef int64_t version(self) noexcept:
        return 0 if self._storage is None else self._storage.version

    cdef void bump_version(self):
        cdef Storage s = self.storage()
        s.version += 1

    cdef void bump_version_by(self, str op):
        cdef Storage s = self.storage()
        s.version += 1
        s.last_op = op

    @property
    def _version(self):
        return self.version()

    def _increment_version(self):
        """Count one in-place change of this tensor's memory (graph.increment_version)."""
        self.bump_version()

    # -- attributes ----------------------------------------------------------------------------
    @property
    def shape(self):
        """The sizes of the dims, a tuple of ints."""
        return self.data.shape

    @property
    def ndim(self):
        """The number of dims."""
        return ndim_of(self.data)

    @property
    def dtype(self):
        """The element type (a NumPy dtype: lucid.float32, float64, int32, int64 or bool)."""
        return self.data.dtype

    @property
    def device(self):
        """Where the memory lives: always lucid.device("cpu"), a string equal to "cpu"."""
        return _CPU

    @property
    def is_leaf(self):
        """True for a tensor made by the user (no grad_fn), False for an op's output."""
        return self._grad_fn is None

    @property
    def grad_fn(self):
        """The backward node that made this tensor (None for a leaf)."""
        if self._grad_fn is not None:
            # Note [GC tracking]: the user now holds the node and may attach state to it that
            # refers back to this tensor (hooks, metadata): both must be visible to the GC
            gc_track(self)
            gc_track(self._grad_fn)
        return self._grad_fn

    @property
    def output_nr(self):
        """Which output of its grad_fn this tensor is (0 for a leaf)."""
        return self._output_nr

    @property
    def retains_grad(self):
        """True after retain_grad() on this non-leaf tensor."""
        return self._retains_grad

    @property
    def requires_grad(self):
        """Whether ops on this tensor are recorded for backward (settable on leaves)."""
        return self.requires_grad_c()

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    @property
    def grad(self):
        """The gradient backward accumulated (None until then); settable to a matching tensor.
        Reading it on a non-leaf that does not retain its gradient warns, as PyTorch does: backward
        never fills it (call retain_grad() first)."""
        if self._grad is None and self._grad_fn is not None and not self._retains_grad:
            import warnings
            warnings.warn("the .grad of a tensor that is not a leaf is being read; backward does "
                          "not fill it. Call .retain_grad() on the tensor before backward to keep "
                          "its gradient, or take the gradient of the leaf instead.", UserWarning,
                          stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is self:
            raise RuntimeError("can't assign Variable as its own grad: Tensor.grad must be "
                               "another tensor (or None), not the tensor itself")
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"grad must be a Tensor or None, not {type(value).__name__}")
            if np.shares_memory((<Tensor>value).data, self.data):
                raise RuntimeError("can't assign Variable as its own grad: the assigned tensor "
                                   "shares memory with this one (a view of it), and backward "
                                   "would accumulate gradients into this tensor's own values; "
                                   "assign a copy (clone()) instead")
            if (<Tensor>value).data.shape != self.data.shape:
                raise RuntimeError(f"assigned grad has shape {(<Tensor>value).data.shape}, "
                                   f"but the tensor has shape {self.data.shape}")
            if (<Tensor>value).data.dtype != self.data.dtype:
                raise RuntimeError(f"assigned grad has dtype {dtype_name((<Tensor>value).data.dtype)}, "
                                   f"but the tensor has dtype {dtype_name(self.data.dtype)}")
        if value is not None:
            gc_track(self)               # Note [GC tracking]: a user-set .grad may close a cycle
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    # -- methods -------------------------------------------------------------------------------
    def requires_grad_(self, requires_grad=True):
        """Set requires_grad on a leaf in place; returns self."""
        cdef bint flag = bool(requires_grad)
        if self._grad_fn is not None:
            if flag:
                return self
            raise RuntimeError("requires_grad can only be changed on leaf tensors; use "
                               ".detach() to get a tensor that does not require grad")
        if flag and is_inference(self):
            if lucid_inference_on:       # nothing records in the mode anyway (torch accepts it)
                return self
            raise RuntimeError("this tensor was made under lucid.inference_mode() and can never "
                               "require grad; make it outside inference_mode, or use "
                               "lucid.no_grad() where gradients may be wanted later")
        if flag and not is_float_dtype(descr(self.data)) and descr(self.data).kind != b'c':
            raise RuntimeError(f"only floating point tensors can require gradients, not "
                               f"{dtype_name(self.data.dtype)}; convert with .float() or .double()")
        self._requires_grad = flag
        return self



    def item(self):
        """The single value of a one-element tensor, as a Python number."""
        if self.data.size != 1:
            raise RuntimeError(f"a tensor with {self.data.size} elements cannot be converted "
                               "to a Python number")
        return self.data.reshape(()).item()

    def tolist(self):
        """The values as nested Python lists (a number for a 0-d tensor)."""
        return self.data.tolist()

    def size(self, dim=None):
        """The shape (a tuple), or the size of dim when dim is given."""
        if dim is None:
            return self.data.shape
        return self.data.shape[normalize_dim(dim, ndim_of(self.data), "size")]

    def numel(self):
        """The number of elements, prod(shape)."""
        return self.data.size

    def dim(self):
        """The number of dims (same as ndim)."""
        return ndim_of(self.data)

    def __len__(self):
        if ndim_of(self.data) == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.data.shape[0]

    def __iter__(self):
        if ndim_of(self.data) == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.data.shape[0]))

    def __bool__(self):
        if self.data.size != 1:
            raise RuntimeError(f"the truth value of a tensor with {self.data.size} elements is "
                               "ambiguous; use t.any() or t.all()")
        return bool(self.data)

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if dtype_category(descr(self.data)) != 1 or self.data.size != 1:
            raise TypeError("only one-element integer tensors can be used as an index")
        return int(self.item())

    def __hash__(self):
        return id(self)

















    def __repr__(self):
        return tensor_repr(self)



    # -- arithmetic ----------------------------------------------------------------------------
    def __add__(self, other):
        if batched_operand(other):                # Note [Batch dispatch]
            return NotImplemented
        return add(self, other)

    def __radd__(self, other):
        return add(other, self)

    def __sub__(self, other):
        if batched_operand(other):
            return NotImplemented
        return sub(self, other)

    def __rsub__(self, other):
        return sub(other, self)

    def __mul__(self, other):
        if batched_operand(other):
            return NotImplemented
        return mul(self, other)

    def __rmul__(self, other):
        return mul(other, self)

    def __truediv__(self, other):
        if batched_operand(other):
            return NotImplemented
        return div(self, other)

    def __rtruediv__(self, other):
        return div(other, self)

    def __pow__(self, other, modulo):
        if batched_operand(other):
            return NotImplemented
        return pow(self, other)

    def __rpow__(self, other, modulo):
        return pow(other, self)

    def __matmul__(self, other):
        if batched_operand(other):
            return NotImplemented
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def __neg__(self):
        return neg(self)

    def __pos__(self):
        return self

    def __richcmp__(self, other, int op):
        if batched_operand(other):
            return NotImplemented
        return compare(self, other, op)

    # -- in place ------------------------------------------------------------------------------
    def __iadd__(self, other):
        if batched_operand(other):
            raise batched_into_plain("__iadd__")
        return inplace_binary(self, other, INPLACE_ADD)

    def __isub__(self, other):
        if batched_operand(other):
            raise batched_into_plain("__isub__")
        return inplace_binary(self, other, INPLACE_SUB)

    def __imul__(self, other):
        if batched_operand(other):
            raise batched_into_plain("__imul__")
        return inplace_binary(self, other, INPLACE_MUL)

    def __itruediv__(self, other):
        if batched_operand(other):
            raise batched_into_plain("__itruediv__")
        return inplace_binary(self, other, INPLACE_DIV)








    def __getitem__(self, index):
        if lucid_batch_dispatching():             # an index may be batched (Note [Batch dispatch])
            batched = _batch_dispatch_call(Tensor.__getitem__, self, index)
            if batched is not NotImplemented:
                return batched
        return getitem(self, index)

    def __setitem__(self, index, value):
        if lucid_batch_dispatching():
            if _batch_dispatch_call(Tensor.__setitem__, self, index, value) is not NotImplemented:
                return
        setitem(self, index, value)

    def __abs__(self):
        return abs(self)

    # -- methods of their own (the rest are lucid's functions: tensor/methods.pxi) ------------
    # shapes given as separate ints or one sequence: t.reshape(2, 3) or t.reshape((2, 3))
    def reshape(self, *shape):
        """self with a new shape: a view when the layout allows, else a copy (lucid.reshape)."""
        return reshape(self, shape_arg(shape))

    def view(self, *shape):
        """self with a new shape, always sharing its memory (lucid.view)."""
        return view(self, shape_arg(shape))

    def expand(self, *shape):
        """self broadcast to shape without copying (-1 keeps a size) (lucid.expand)."""
        return expand(self, shape_arg(shape))

    def permute(self, *dims):
        """self with its dims reordered as dims, a view (lucid.permute)."""
        return permute(self, shape_arg(dims))

    @property
    def T(self):
        """self with all dims reversed (a view; the transpose of a matrix)."""
        return permute(self, tuple(range(ndim_of(self.data) - 1, -1, -1)))

    @property
    def mT(self):
        """self with its last two dims swapped (a view; a batch of transposed matrices)."""
        return matrix_transpose(self)

    def expand_as(self, other):
        """self broadcast to other's shape without copying (self.expand(other.shape))."""
        return expand_as(self, other)

    def contiguous(self):
        """self if its memory is C-contiguous, else a C-contiguous copy."""
        return contiguous(self)

    def is_contiguous(self):
        """True when self's memory is C-contiguous."""
        return bool(self.data.flags.c_contiguous)










    def is_inference(self):
        """True for a tensor made under lucid.inference_mode()."""
        return is_inference(self)


@cython.freelist(256)
cdef class TensorExtra:
    """A tensor's rarely used state (fields in _core.pxd); kept on a free list, since every
    tensor made in a dual level gets one for its tangent."""


cdef extern from "Python.h":
    void Py_SET_REFCNT(PyObject* o, Py_ssize_t n)
    Py_ssize_t refcount_of "Py_REFCNT"(PyObject* o)     # borrowed: no reference taken to read it

cdef destructor cython_tensor_dealloc = (<PyTypeObject*>Tensor).tp_dealloc


cdef void tensor_dealloc(PyObject* o) noexcept:
    """Tensor's tp_dealloc: its array, and its extra's tangent when the extra dies with it, go to
    the array pool (Note [Array pool]); then Cython's deallocation. Not a __dealloc__: Cython
    wraps that in a save and restore of the exception state, which cost more than the pool saves,
    and nothing here can raise or run Python code."""
    Py_SET_REFCNT(o, 1)                  # the borrowed view below takes and drops a reference
    cdef Tensor t = <Tensor>o
    recycle_array(<PyObject*>t.data)
    if t._extra is not None and refcount_of(<PyObject*>t._extra) == 1:
        recycle_array(<PyObject*>t._extra.fw_grad)
    t = None
    Py_SET_REFCNT(o, 0)
    cython_tensor_dealloc(o)


(<PyTypeObject*>Tensor).tp_dealloc = tensor_dealloc


cdef TensorExtra tensor_extra(Tensor t):
    """t's rarely used state, made on first need (untracked: Note [GC tracking]; register_hook
    tracks it when hooks go in)."""
    if t._extra is None:
        t._extra = TensorExtra.__new__(TensorExtra)
        gc_untrack(t._extra)
    return t._extra


cdef inline bint is_inference(Tensor t) noexcept:
    """Was t made under inference_mode (or derived from such a tensor)?"""
    return t._extra is not None and t._extra.inference


cdef inline bint has_leaf_hooks(Tensor t) noexcept:
    return t._extra is not None and bool(t._extra.hooks)


cdef Tensor wrap(object array):
    cdef Tensor t = Tensor.__new__(Tensor)
    gc_untrack(t)                        # Note [GC tracking]
    # NumPy hands back scalars from 0-d work; the typed code behind a Tensor needs an ndarray
    t.data = array if type(array) is cnp.ndarray else np.asarray(array)
    if rare_modes and lucid_inference_on:     # Note [Rare modes]
        tensor_extra(t).inference = True
    return t


cdef Tensor wrap_like_view(object array, Tensor base):
    """A tensor over array, a view of base's memory: they share the version counter."""
    cdef Tensor t = Tensor.__new__(Tensor)
    gc_untrack(t)                        # Note [GC tracking]
    t.data = array if type(array) is cnp.ndarray else np.asarray(array)
    t._storage = base.storage()
    t._view_base = base if base._view_base is None else base._view_base
    cdef int64_t version = t._storage.graph_version
    # Note [No-grad views]: a view taken in no_grad mode, or of such a view, is marked
    t._view_version = version if grad_enabled() and not taken_in_no_grad(base) else -1 - version
    if is_inference(base) or (rare_modes != 0 and lucid_inference_on != 0):
        tensor_extra(t).inference = True
    return t


cdef inline bint taken_in_no_grad(Tensor t) noexcept:
    """Is t a view taken in no_grad mode, or a view of one? (Note [No-grad views])"""
    return t._view_base is not None and t._view_version < 0


cdef inline int64_t view_taken_at(Tensor t) noexcept:
    """The storage's graph_version when t, a view, was taken (Note [No-grad views])."""
    return t._view_version if t._view_version >= 0 else -1 - t._view_version


cdef object part_strings(object values):
    """values (real) as PyTorch prints a part: integral ones as "2.", others with 4 decimals, all
    right-aligned to one width."""
    finite = values[np.isfinite(values)]
    cdef bint integral = bool(finite.size and np.all(finite == np.round(finite))
                              and np.abs(finite).max() < 1e8)
    texts = [("nan" if v != v else "inf" if v > 0 else "-inf") if not np.isfinite(v) else
             f"{v:.0f}." if integral else f"{v:.4f}" for v in values.ravel().tolist()]
    width = max([len(s) for s in texts], default=0)
    return np.array([s.rjust(width) for s in texts], dtype=object).reshape(values.shape)


cdef str complex_body(object arr, dict opts):
    """A complex array's values as PyTorch prints them (real and imaginary parts formatted
    apart: 1.0000+2.j)."""
    re_text = part_strings(arr.real)
    im_text = part_strings(np.abs(arr.imag))
    signs = np.where(np.signbit(arr.imag), "-", "+")
    texts = np.empty(arr.shape, dtype=object)
    for i in np.ndindex(arr.shape):
        texts[i] = f"{re_text[i]}{signs[i]}{im_text[i].strip()}j"
    width = max([len(s) for s in texts.ravel().tolist()], default=0)
    return np.array2string(texts, formatter={"object": lambda s: s.rjust(width)}, **opts)


def tensor_repr(Tensor t):
    cdef object arr = t.data
    cdef str body
    opts = dict(separator=", ", prefix="tensor(", threshold=1000, edgeitems=3)
    if arr.dtype.kind == "f":
        finite = arr[np.isfinite(arr)]
        if finite.size and np.all(finite == np.round(finite)) and np.abs(finite).max() < 1e8:
            body = np.array2string(arr, **opts)
        else:
            body = np.array2string(arr, precision=4, floatmode="fixed", **opts)
    elif arr.dtype.kind == "c":
        body = complex_body(arr, opts)
    else:
        body = np.array2string(arr, **opts)
    extras = []
    if arr.size == 0 and ndim_of(arr) != 1:
        extras.append(f"size={arr.shape}")          # "[]" alone would hide the shape
    default = {"f": default_float_dtype(), "i": int64, "b": bool_,
               "c": complex_of(default_float_dtype())}.get(arr.dtype.kind)
    if arr.dtype != default:
        extras.append(f"dtype={dtype_name(arr.dtype)}")
    if t._grad_fn is not None:
        extras.append(f"grad_fn=<{t._grad_fn.name()}>")
    elif t._requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"
