# The codes of the table ops (kernels/unary_codes.h), for each module that names them: the core
# and lucid._ops. Not in _core.pxd, which a native op reads: the header is lucid's own.

cdef extern from "kernels/unary_codes.h" nogil:
    cdef enum LucidUnary:                        # the table ops' codes
        UN_NONE, UN_SIN, UN_COS, UN_TAN, UN_ASIN, UN_ACOS, UN_ATAN, UN_SINH, UN_COSH,
        UN_LOG1P, UN_EXPM1, UN_LOG2, UN_LOG10, UN_EXP2, UN_RSQRT, UN_RECIPROCAL,
        UN_ERF, UN_ERFC, UN_LGAMMA, UN_DIGAMMA, UN_ERFINV,
        UN_ABS, UN_RELU, UN_FRAC, UN_SIGN, UN_FLOOR, UN_CEIL, UN_TRUNC, UN_ROUND,
        UN_SILU, UN_GELU, UN_GELU_TANH, UN_SOFTPLUS, UN_LEAKY_RELU, UN_ELU, UN_ANGLE
