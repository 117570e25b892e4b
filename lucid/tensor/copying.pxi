# Copying and pickling (leaves only: a non-leaf's history cannot be copied), and the refusal of
# Tensor.__new__ from Python (a tensor without data).

cdef void refuse_copy(Tensor t, str how) except *:
    if t._grad_fn is not None:
        raise RuntimeError(
            f"can't {how} a tensor that is not a leaf (grad_fn=<{t._grad_fn.name()}>): only "
            f"tensors created by the user (graph leaves) can be {how.rstrip('e')}ed, since their "
            f"history can't be copied. {how.capitalize()} t.detach() (and set requires_grad on the "
            "copy if needed)")


def _rebuild_leaf(data, requires_grad, grad):
    """Unpickle a leaf: its values, requires_grad and .grad (an ndarray or None)."""
    cdef Tensor t = wrap(data)
    if requires_grad:
        t.requires_grad_(True)
    if grad is not None:
        t._grad = wrap(grad)
    return t


cdef object leaf_reduce(Tensor t):
    refuse_copy(t, "pickle")
    grad = None if t._grad is None else np.array((<Tensor>t._grad).data, copy=True)
    return (_rebuild_leaf, (np.array(t.data, copy=True), t._requires_grad, grad))


cdef Tensor leaf_copy(Tensor t, bint deep, dict memo):
    """copy.copy: a new leaf over the same memory (no .grad); copy.deepcopy: new memory, .grad
    copied too. Never the original's gradient accumulator: gradients of the copy are its own."""
    cdef Tensor out
    refuse_copy(t, "deepcopy" if deep else "copy")
    if deep:
        out = wrap(np.array(t.data, copy=True))
        if memo is not None:
            memo[id(t)] = out
        if t._grad is not None:
            out._grad = leaf_copy(<Tensor>t._grad, True, memo) if (<Tensor>t._grad)._grad_fn is \
                None else wrap(np.array((<Tensor>t._grad).data, copy=True))
    else:
        out = wrap(t.data)
        out._storage = t.storage()
    out._requires_grad = t._requires_grad
    return out


def _tensor_new_refused(cls, *args, **kwargs):
    raise TypeError(f"{cls.__name__} objects can't be made with {cls.__name__}.__new__; use "
                    "lucid.tensor(), lucid.from_numpy() or the constructors (lucid.zeros, ...)")



cdef void refuse_python_new(type cls) except *:
    """Tensor.__new__(Tensor) from Python would give a tensor without data: make it raise.
    lucid's own code calls the C-level tp_new directly and is not affected."""
    set_type_attribute(cls, "__new__", staticmethod(_tensor_new_refused))

refuse_python_new(Tensor)


# -- Tensor methods: copy.copy, copy.deepcopy and pickle (installed on Tensor below) ----------

def _tensor_copy(Tensor self):
    """copy.copy(t): a new leaf over the same memory, without .grad (leaves only)."""
    return leaf_copy(self, False, None)


def _tensor_deepcopy(Tensor self, memo):
    """copy.deepcopy(t): a new leaf with copied values and .grad (leaves only)."""
    return leaf_copy(self, True, memo)


def _tensor_reduce_ex(Tensor self, protocol):
    """pickle support: a leaf pickles as its values, requires_grad and .grad."""
    return leaf_reduce(self)


install_methods(Tensor, {
    "__copy__": _tensor_copy,
    "__deepcopy__": _tensor_deepcopy,
    "__reduce_ex__": _tensor_reduce_ex,
})
