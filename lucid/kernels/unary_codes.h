/* lucid/kernels/unary_codes.h -- the op codes of the table ops (kernels/unary_loops.h), apart
   so that a module naming them (lucid._ops, through _core_internal.pxi) compiles no loops. */
#ifndef LUCID_UNARY_CODES_H
#define LUCID_UNARY_CODES_H

enum LucidUnary {
    UN_NONE,                            /* 0: a node without a typed backward */
    UN_SIN, UN_COS, UN_TAN, UN_ASIN, UN_ACOS, UN_ATAN, UN_SINH, UN_COSH,
    UN_LOG1P, UN_EXPM1, UN_LOG2, UN_LOG10, UN_EXP2, UN_RSQRT, UN_RECIPROCAL,
    UN_ERF, UN_ERFC, UN_LGAMMA, UN_DIGAMMA, UN_ERFINV,
    UN_ABS, UN_RELU, UN_FRAC, UN_SIGN, UN_FLOOR, UN_CEIL, UN_TRUNC, UN_ROUND,
    UN_SILU, UN_GELU, UN_GELU_TANH, UN_SOFTPLUS, UN_LEAKY_RELU, UN_ELU,
    UN_ANGLE,                           /* of a real input: pi below 0, else 0 */
    UN_COUNT
};

#endif
