# Tensor methods that are one of lucid's functions with the tensor as its first argument:
# t.exp() is lucid.exp(t), t.sum(1) is lucid.sum(t, 1). The function is the one definition (its
# signature, checks and docstring); the method is that function put in Tensor's dict at import,
# wrapped in a method descriptor (tensor/function_method.h) that passes the call on unchanged, so
# it costs what the function costs. The class body (tensor/tensor.pxi) keeps what is Tensor's own:
# fields, properties, operators, conversions, and methods whose signature differs from a
# function's (t.reshape(2, 3), t.pow(exponent=2)).

cdef extern from "tensor/function_method.h":
    object lucid_function_method(object func)


cdef void install_methods(type cls, dict methods) except *:
    """cls.name(self, ...) = fn(self, ...) for each name: fn of methods."""
    for name, fn in methods.items():
        set_type_attribute(cls, name, lucid_function_method(fn))


cdef dict methods_named_as_functions(tuple functions):
    """{fn.__name__: fn}: the methods named as the function they are."""
    return {fn.__name__: fn for fn in functions}


install_methods(Tensor, methods_named_as_functions((
    # elementwise (ops/elementwise/)
    exp, log, tanh, relu, sqrt, abs, sin, cos, sigmoid, clamp, atan2,
    log1p, expm1, square, rsqrt, reciprocal, tan, asin, acos, atan, sinh, cosh, erf,
    sign, floor, ceil, round, trunc, silu, gelu, softplus, leaky_relu, elu,
    eq, ne, lt, le, gt, ge, isnan, isinf, isfinite,
    logical_and, logical_or, logical_xor, logical_not, isclose, allclose, clone,
    # reductions (ops/reduction/)
    sum, mean, amax, amin, prod, var, std, norm, logsumexp, softmax, log_softmax,
    cumsum, cumprod, argmax, argmin,
    # shape and indexing (ops/shape/)
    transpose, flatten, squeeze, unsqueeze, gather, scatter_add, index_select, take_along_dim,
    masked_fill, masked_select, chunk, unbind, narrow, roll, tril, triu, diagonal, diag,
    trace, movedim,
    # linear algebra (ops/linalg/)
    mm, bmm, dot, outer,
)))
install_methods(Tensor, {
    "max": reduce_max, "min": reduce_min, "all": reduce_all, "any": reduce_any,
    "det": linalg_det, "slogdet": linalg_slogdet, "inverse": linalg_inv,
})
