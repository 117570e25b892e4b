# Complex values: which ops take them, and the guard that refuses them elsewhere.
#
# Note [Complex guard]
#   lucid's ops were written for real dtypes: given a complex operand, most would compute a wrong
#   value (a cast to float drops the imaginary part) or a wrong gradient (PyTorch's convention,
#   Note [Complex gradients] in docs/design.md, conjugates the derivative of a holomorphic op).
#   So an op takes complex only when it is listed in COMPLEX_OPS: ops that are real-linear with
#   real coefficients (views, joins, indexing, clone, neg, add, sub), whose real backward is
#   already right for complex, the equality tests, mul and div (which save their operands
#   conjugated), and the parts of a complex number (ops/elementwise/complex_parts.pxi). Every other registered op refuses a
#   complex argument: RuntimeError naming the op (NotImplementedError or RuntimeError, as PyTorch
#   raises, for ops that order values, which refuse it for good). The refusal costs the real
#   paths nothing: the registered ops' forwarders (ops/op_keywords.h) test the sticky flag
#   lucid_complex_any together with vmap's flag (one test), and scan their arguments only once a
#   complex value has entered lucid (note_complex: where a complex dtype is accepted: dtype
#   arguments, NumPy and DLPack arrays, Python complex numbers). The operators that do not come
#   through a forwarder (x * y, x < y, x @ y, abs(x), x *= y, the own methods) check in the
#   branch where non-float operands already go (refuse_complex).

cdef extern from "base/complex_guard.h":
    int lucid_complex_any
    int (*lucid_complex_value)(PyObject* o) noexcept


cdef inline void note_complex() noexcept:
    """A complex value enters lucid: the registered ops check their arguments from now on."""
    global lucid_complex_any
    lucid_complex_any = 1


cdef int complex_value(PyObject* o) noexcept:
    """Is o a complex tensor, array or number?"""
    cdef object x = <object>o
    if isinstance(x, Tensor):
        return descr((<Tensor>x).data).kind == b'c'
    if isinstance(x, cnp.ndarray):
        return descr(x).kind == b'c'
    return isinstance(x, (complex, np.complexfloating))


lucid_complex_value = complex_value

# the ops that take complex operands (Note [Complex guard]); tests/ops/test_complex.py checks each
COMPLEX_OPS = frozenset((
    "add", "sub", "mul", "div", "neg", "clone", "eq", "ne",
    "conj", "conj_physical", "real", "imag", "angle", "abs", "complex", "polar", "view_as_real",
    "view_as_complex", "sum", "mean", "cumsum", "matmul", "mm", "bmm", "dot", "outer", "einsum",
    "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "square", "sin", "cos", "tan",
    "sinh", "cosh", "tanh", "asin", "acos", "atan", "sigmoid", "pow", "where",
    "isclose", "allclose", "isnan", "isinf", "isfinite", "var", "std", "var_mean", "std_mean",
    "prod", "cumprod", "norm", "logsumexp", "linalg.vector_norm", "linalg.norm",
    "reshape", "view", "transpose", "expand", "permute", "squeeze", "unsqueeze", "flatten",
    "unflatten", "movedim", "t", "swapaxes", "swapdims", "broadcast_to", "broadcast_tensors",
    "narrow", "select", "diagonal", "flip", "roll", "tile", "index_select",
    "cat", "stack", "split", "split_with_sizes", "chunk", "unbind", "meshgrid",
    "numel", "is_tensor", "is_floating_point", "is_complex",
))

# the other names whose operand may be a Python complex number (operand(): the in-place forms)
COMPLEX_NUMBER_OPS = frozenset(("add_", "sub_", "mul_", "div_", "copy_", "fill_", "setitem"))

# ops that order values refuse complex for good, with the exception PyTorch raises
ORDERING_NOT_IMPLEMENTED = frozenset((
    "max", "min", "amax", "amin", "clamp", "clamp_min", "clamp_max", "lt", "le", "gt", "ge"))
ORDERING_RUNTIME = frozenset((
    "argmax", "argmin", "sort", "argsort", "topk", "maximum", "minimum", "kthvalue", "median",
    "nanmedian", "quantile", "nanquantile", "cummax", "cummin", "aminmax"))


cdef object complex_refusal(str op):
    """The exception op raises for a complex operand (Note [Complex guard])."""
    if op in ORDERING_NOT_IMPLEMENTED or op in ORDERING_RUNTIME:
        kind = NotImplementedError if op in ORDERING_NOT_IMPLEMENTED else RuntimeError
        return kind(f"lucid.{op}: complex tensors are not supported: complex numbers have no "
                    "order")
    return RuntimeError(f"lucid.{op}: complex tensors are not supported yet")


cdef str complex_support(str op):
    """op's complex support, for its OpRecord: "supported", "not yet" or "never" (it orders)."""
    if op in COMPLEX_OPS:
        return "supported"
    return "never" if op in ORDERING_NOT_IMPLEMENTED or op in ORDERING_RUNTIME else "not yet"


cdef object complex_refusal_record(str op):
    """None when op takes complex, else (exception type, message) for its forwarder."""
    if op in COMPLEX_OPS:
        return None
    e = complex_refusal(op)
    return (type(e), e.args[0])


cdef int refuse_complex(str op, object x, object y) except -1:
    """complex_refusal(op) when x or y is complex (tested only once a complex value exists)."""
    if lucid_complex_any and (complex_value(<PyObject*>x) or complex_value(<PyObject*>y)):
        raise complex_refusal(op)
    return 0
