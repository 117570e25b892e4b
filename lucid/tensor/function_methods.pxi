# The Tensor methods that are one of lucid's functions, named as the function (tensor/methods.pxi
# says how): t.exp() is lucid.exp(t). lucid._linalg installs its own (det, slogdet, inverse).

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
})
