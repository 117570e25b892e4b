# The op registry: one record per public op, made by the one registration line beside the op's
# definition (`define_op(log1p, POINTWISE, FLOAT)`).
#
# Note [Op registry]: a registration says what the rest of lucid would otherwise repeat by hand:
# the op's public name, its batching-rule family (what vmap does with a batched input: the vmap
# issue fills the rules in per family), the dtypes it takes, and whether it is a Tensor method
# too. Registering a method installs it (t.log1p() is lucid.log1p(t), tensor/methods.pxi); the
# package's exports (lucid/__init__.py), the stubs of ops with a plain signature (_core.pyi) and
# the API reference are written from the registry by tools/gen_ops.py and docs/gen_api.py, and
# tests/api/test_op_registry.py checks the rest against it: every op has its stubs, a test row
# or a stated reason, a dtype behaviour that matches its record, a place in the bad-input sweep.
# Registration runs at import, once per op: nothing here is on a hot path.
#
# Note [Op keywords]: PyTorch's arg parser takes `axis=` for `dim=` and `keepdims=` for `keepdim=`
# on every op that has them, and `out=` on most functions. A registration gives the op those
# spellings by forwarding its vectorcall entry (ops/op_keywords.h): a call without keywords, or
# naming none of the three, goes straight on to the op's own entry (one test, one jump; the
# operators, e.g. `x + y`, never come here), while a call naming one is renamed (`axis` -> `dim`
# when the op's signature has `dim`; both given: TypeError) or refused (`out=`: a TypeError naming
# the op). Tensor methods of kind "function" are the function, so `x.sum(axis=0)` is covered too.
#
# An op registered with an in-place kind also gets the method `name_` (inplace_forms.pxi, Note
# [In-place forms]): "values" writes name(x, ...) into x's memory (exp_, clamp_, masked_fill_),
# "view" makes x the view name(x, ...) (t_, unsqueeze_, squeeze_).

# batching-rule families (what a vmap rule does with an input batched at dim 0)
BATCHING_FAMILIES = {
    "pointwise": "elementwise over broadcast operands: the batch dim leads, the others align",
    "reduction": "reduces over `dim` (None: every dim): dims shift past the batch dim",
    "dims": "takes dim arguments (dim, dims, dim0, start_dim, ...): they shift past the batch dim",
    "shape": "takes a shape (reshape, view, expand) or a permutation: the batch size leads it",
    "batched_matrix": "works on the last dims and broadcasts over leading ones: the batch dim is one",
    "tensors": "takes a sequence of tensors (cat, stack): each moved to batch at dim 0",
    "custom": "its own rule (index arguments, data-dependent shapes, fixed-rank ops)",
}
POINTWISE = "pointwise"
REDUCTION = "reduction"
DIMS = "dims"
SHAPE = "shape"
BATCHED_MATRIX = "batched_matrix"
TENSORS = "tensors"
CUSTOM = "custom"

# the dtypes an op takes
DTYPE_KINDS = {
    "float": "floating inputs; integer and bool inputs compute in the default float dtype",
    "float_only": "floating inputs only; an integer or bool input raises, naming the op",
    "numeric": "integer and floating inputs, the result of integers stays integer",
    "any": "every dtype, bool included; the result's dtype is the op's own (bool for tests)",
    "complex_only": "complex inputs only; a real input raises, naming the op (imag, ...)",
}
FLOAT = "float"
FLOAT_ONLY = "float_only"
NUMERIC = "numeric"
ANY = "any"
COMPLEX_ONLY = "complex_only"

# how an op is a Tensor method
METHOD_KINDS = {
    "function": "t.name(...) is lucid.name(t, ...), installed by the registration",
    "own": "Tensor spells it itself, with another signature (t.reshape(2, 3), t.pow(exponent=))",
    "none": "not a Tensor method (cat, stack, where, ...)",
}

# the in-place method `name_` an op has (Note [In-place forms], ops/elementwise/inplace_forms.pxi)
INPLACE_KINDS = {
    "none": "no in-place form (or one of its own: add_, mul_, copy_, ...)",
    "values": "t.name_(...) writes lucid.name(t, ...) into t's memory and returns t",
    "view": "t.name_(...) makes t the view lucid.name(t, ...) of its memory and returns t",
}
IN_PLACE = "values"
IN_PLACE_VIEW = "view"

cdef extern from "ops/op_keywords.h":
    int lucid_keywords_install(object function, object record) except -1


@cython.final
cdef class OpRecord:
    """One registered op: its public name and the facts its registration states."""
    cdef readonly str name                  # the public name: lucid.<name> (linalg: "linalg.<x>")
    cdef readonly object function           # the function lucid.<name> is
    cdef readonly str batching              # a key of BATCHING_FAMILIES
    cdef readonly str dtypes                # a key of DTYPE_KINDS
    cdef readonly str method                # a key of METHOD_KINDS
    cdef readonly str module                # the extension module that defines it
    cdef readonly str inplace               # a key of INPLACE_KINDS
    cdef readonly bint keywords             # takes axis= / keepdims= / refuses out= (Note [Op keywords])
    cdef readonly str complex_support       # "supported", "not yet", "never" (Note [Complex guard])

    def __repr__(self):
        return (f"OpRecord({self.name!r}, batching={self.batching!r}, dtypes={self.dtypes!r}, "
                f"method={self.method!r}, inplace={self.inplace!r}, "
                f"complex_support={self.complex_support!r})")


cdef list OP_REGISTRY = []                  # OpRecords, in registration order
cdef dict OP_NAMES = {}                     # name -> OpRecord (refuses a second registration)


cdef tuple parameter_names(object function):
    """The names of function's parameters (from its code object, else its signature)."""
    code = getattr(function, "__code__", None)
    if code is not None:
        return tuple(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    import inspect
    return tuple(inspect.signature(function).parameters)


def define_op(function, str batching, str dtypes, str method="function", str name=None,
              str inplace="none"):
    """Register function as the op `name` (its own __name__ when None); a method of kind
    "function" is installed on Tensor, an in-place kind installs `name_` too, and the op takes
    PyTorch's keyword spellings (Note [Op keywords]). Returns the function."""
    if batching not in BATCHING_FAMILIES:
        raise ValueError(f"define_op: unknown batching family {batching!r}")
    if dtypes not in DTYPE_KINDS:
        raise ValueError(f"define_op: unknown dtype kind {dtypes!r}")
    if method not in METHOD_KINDS:
        raise ValueError(f"define_op: unknown method kind {method!r}")
    if inplace not in INPLACE_KINDS:
        raise ValueError(f"define_op: unknown in-place kind {inplace!r}")
    cdef OpRecord op = OpRecord.__new__(OpRecord)
    op.name = function.__name__ if name is None else name
    if op.name in OP_NAMES:
        raise ValueError(f"define_op: {op.name!r} is registered twice")
    op.function, op.batching, op.dtypes, op.method = function, batching, dtypes, method
    op.module = getattr(function, "__module__", None) or "lucid._core"
    op.inplace = inplace
    op.complex_support = complex_support(op.name)
    cdef str short = op.name.rpartition(".")[2]
    cdef tuple params = parameter_names(function)
    op.keywords = lucid_keywords_install(
        function, (op.name, "dim" in params, "keepdim" in params, "out" in params,
                   complex_refusal_record(op.name))) == 1
    if method == "function":             # named as the op: lucid.linalg.det -> Tensor.det
        install_methods(Tensor, {short: function})
    if inplace != "none":
        install_methods(Tensor, {short + "_": inplace_form(function, short, inplace == "view")})
    OP_REGISTRY.append(op)
    OP_NAMES[op.name] = op
    return function


def registered_ops():
    """Every registered op's record (lucid._core and the modules that register into it)."""
    return tuple(OP_REGISTRY)
