/* lucid/kernels/unary_loops.h -- the typed loops of the table ops: one-input elementwise
   functions (forward) and their fused backward g * f'(x) in one pass (Note [Elementwise rules]:
   the formula of each op's rule, in the same order of operations, with constants of the
   element's type).

   A NumPy ufunc call costs ~200 ns before it touches data and a recorded composite backward one
   op call per term, so at small sizes these loops win even with one libm call per element.
   Where NumPy has a SIMD kernel for an op, it wins again above some size; LUCID_UNARY_LIMITS
   says, per op, up to what size the typed loops run (ops/elementwise/unary_table.pxi reads it).

   The special functions (erfc lgamma digamma erfinv) come from kernels/special.h, in float64
   rounded once (as their forward kernels). */
#ifndef LUCID_UNARY_LOOPS_H
#define LUCID_UNARY_LOOPS_H

#include <math.h>
#include "special.h"
#include "simd.h"                       /* lucid_tanh1: lucid's float32 tanh */
#include "loops.h"                      /* LUCID_CLONES */
#include "unary_codes.h"


/* Up to what size (elements) the typed loops run, forward and backward, when NumPy runs its
   AVX-512 kernels (simd) and when not (plain). NumPy's float32 kernels per element against the
   C library's (glibc 2.36): sin cos 0.4 ns (AVX-512) / 0.6 ns (AVX2) against 1.9 ns; tan asin
   acos atan sinh cosh log1p expm1 log2 log10 exp2 0.25 ns with AVX-512 (SVML) against 2-7 ns,
   and the C library's own loop on AVX2. The arithmetic (rsqrt reciprocal abs relu frac, the
   step functions, leaky_relu; most backward formulas) vectorises here too, and erf and the
   special functions NumPy has not: those run typed at every size (LUCID_ANY). A limit is where
   op + backward of the typed loops stops beating NumPy's kernels plus the composite backward
   (benchmarks/w15_op_table.py's cases, measured on both NumPy paths). */
#define LUCID_ANY 0x7fffffffL
typedef struct { long simd_fwd, simd_bwd, plain_fwd, plain_bwd; } LucidUnaryLimit;
static const LucidUnaryLimit LUCID_UNARY_LIMITS[UN_COUNT] = {
    [UN_SIN] = {256, 256, 256, 256},        [UN_COS] = {256, 256, 256, 256},
    [UN_TAN] = {128, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_ASIN] = {256, 384, LUCID_ANY, 384},
    [UN_ACOS] = {256, 384, LUCID_ANY, 384},
    [UN_ATAN] = {192, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_SINH] = {96, 96, LUCID_ANY, LUCID_ANY}, [UN_COSH] = {96, 96, LUCID_ANY, LUCID_ANY},
    [UN_LOG1P] = {128, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_EXPM1] = {128, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_LOG2] = {256, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_LOG10] = {192, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_EXP2] = {256, LUCID_ANY, 1024, LUCID_ANY},
    [UN_RSQRT] = {1024, LUCID_ANY, 1024, LUCID_ANY},
    [UN_RECIPROCAL] = {LUCID_ANY, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_ERF] = {2048, 2048, 2048, 2048},
    [UN_ERFC] = {LUCID_ANY, 2048, LUCID_ANY, 2048},
    [UN_LGAMMA] = {LUCID_ANY, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_DIGAMMA] = {LUCID_ANY, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_ERFINV] = {LUCID_ANY, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_ABS] = {LUCID_ANY, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_RELU] = {LUCID_ANY, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_FRAC] = {LUCID_ANY, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_SIGN] = {LUCID_ANY, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_FLOOR] = {LUCID_ANY, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_CEIL] = {LUCID_ANY, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_TRUNC] = {LUCID_ANY, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_ROUND] = {LUCID_ANY, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_SILU] = {512, 512, 1024, 1024},
    [UN_GELU] = {2048, 2048, 2048, 2048},
    [UN_GELU_TANH] = {LUCID_ANY, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_SOFTPLUS] = {512, 512, 1024, 1024},
    [UN_LEAKY_RELU] = {LUCID_ANY, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_ELU] = {LUCID_ANY, LUCID_ANY, LUCID_ANY, LUCID_ANY},
    [UN_ANGLE] = {LUCID_ANY, LUCID_ANY, LUCID_ANY, LUCID_ANY},
};

static inline long lucid_unary_limit(int op, int numpy_simd, int backward) {
    const LucidUnaryLimit* l = &LUCID_UNARY_LIMITS[op];
    return numpy_simd ? (backward ? l->simd_bwd : l->simd_fwd)
                      : (backward ? l->plain_bwd : l->plain_fwd);
}

#define LUCID_SP1(op, v) lucid_special_one(op, 0, (double)(v), NULL)
/* d/dx cot(pi x) = pi * (-1 - cot(pi x)^2): lucid_cot_derivative(1), digamma's derivative */
static const double LUCID_COT_D1[3] = {-1.0, 0.0, -1.0};

/* the loops: each case one pass, x (forward) or g and s (backward: s the saved input or
   output) read per element; p and q an activation's parameters */
#define LUCID_EACH(T, expr) for (long i = 0; i < n; i++) { T x = a[i]; o[i] = (expr); } break;
#define LUCID_EACH_GRAD(T, expr)                                                                \
    for (long i = 0; i < n; i++) {                                                              \
        T g = ga[i], s = sa[i]; (void)g; (void)s; o[i] = (expr);                                \
    }                                                                                           \
    break;

/* F: the C library's suffix of T's functions (f for float, none for double); TANH: lucid's tanh
   of T (its float32 one vectorises: kernels/simd.h) */
#define LUCID_UNARY_LOOPS(T, SUFFIX, F, TANH)                                                   \
    LUCID_CLONES static void lucid_unary_##SUFFIX(                                              \
            int op, const T* a, T* o, long n, double pd, double qd) {                           \
        const T p = (T)pd, q = (T)qd, half = (T)0.5, one = (T)1;                                \
        const T k = (T)0.7978845608028654;                          /* gelu's tanh form */      \
        switch (op) {                                                                           \
        case UN_SIN: LUCID_EACH(T, sin##F(x))                                                   \
        case UN_COS: LUCID_EACH(T, cos##F(x))                                                   \
        case UN_TAN: LUCID_EACH(T, tan##F(x))                                                   \
        case UN_ASIN: LUCID_EACH(T, asin##F(x))                                                 \
        case UN_ACOS: LUCID_EACH(T, acos##F(x))                                                 \
        case UN_ATAN: LUCID_EACH(T, atan##F(x))                                                 \
        case UN_SINH: LUCID_EACH(T, sinh##F(x))                                                 \
        case UN_COSH: LUCID_EACH(T, cosh##F(x))                                                 \
        case UN_LOG1P: LUCID_EACH(T, log1p##F(x))                                               \
        case UN_EXPM1: LUCID_EACH(T, expm1##F(x))                                               \
        case UN_LOG2: LUCID_EACH(T, log2##F(x))                                                 \
        case UN_LOG10: LUCID_EACH(T, log10##F(x))                                               \
        case UN_EXP2: LUCID_EACH(T, exp2##F(x))                                                 \
        case UN_RSQRT: LUCID_EACH(T, one / sqrt##F(x))                                          \
        case UN_RECIPROCAL: LUCID_EACH(T, one / x)                                              \
        case UN_ERF: LUCID_EACH(T, erf##F(x))                                                   \
        case UN_ERFC: LUCID_EACH(T, (T)LUCID_SP1(SP_ERFC, x))                                   \
        case UN_LGAMMA: LUCID_EACH(T, (T)LUCID_SP1(SP_LGAMMA, x))                               \
        case UN_DIGAMMA: LUCID_EACH(T, (T)LUCID_SP1(SP_DIGAMMA, x))                             \
        case UN_ERFINV: LUCID_EACH(T, (T)LUCID_SP1(SP_ERFINV, x))                               \
        case UN_ABS: LUCID_EACH(T, fabs##F(x))                                                  \
        case UN_RELU: LUCID_EACH(T, x > 0 || x != x ? x : (T)0)    /* np.maximum(x, 0): +0 */   \
        case UN_FRAC: LUCID_EACH(T, x - trunc##F(x))                                            \
        case UN_SIGN: LUCID_EACH(T, x > 0 ? one : x < 0 ? -one : (T)0)     /* NaN: 0 */         \
        case UN_ANGLE: LUCID_EACH(T, x < 0 ? (T)3.141592653589793 : x == x ? (T)0 : x)         \
        case UN_FLOOR: LUCID_EACH(T, floor##F(x))                                               \
        case UN_CEIL: LUCID_EACH(T, ceil##F(x))                                                 \
        case UN_TRUNC: LUCID_EACH(T, trunc##F(x))                                               \
        case UN_ROUND: LUCID_EACH(T, rint##F(x))                       /* halves to even */     \
        case UN_SILU: LUCID_EACH(T, x / (one + exp##F(-x)))                                     \
        case UN_GELU: LUCID_EACH(T, ((erf##F(x * (T)0.7071067811865476) + one) * x) * half)     \
        case UN_GELU_TANH:                                                                      \
            LUCID_EACH(T, ((TANH(((x * x) * (T)(0.044715 * 0.7978845608028654) + k) * x)        \
                         + one) * x) * half)                                                    \
        case UN_SOFTPLUS:          /* (max(bx, 0) + log1p(exp(-|bx|)))/beta; x above q */       \
            LUCID_EACH(T, x * p > q ? x : ((x * p > 0 ? x * p : (T)0) +                         \
                                        log1p##F(exp##F(-fabs##F(x * p)))) / p)                 \
        case UN_LEAKY_RELU: LUCID_EACH(T, x > 0 ? x : x * p)                                    \
        case UN_ELU: LUCID_EACH(T, x > 0 ? x : expm1##F(x) * p)                                 \
        default: break;                                                                         \
        }                                                                                       \
    }                                                                                           \
    LUCID_CLONES static void lucid_unary_grad_##SUFFIX(                                         \
            int op, const T* ga, const T* sa, T* o, long n, double pd, double qd) {             \
        const T p = (T)pd, q = (T)qd, half = (T)0.5, one = (T)1;                                \
        const T k = (T)0.7978845608028654, c = (T)0.044715;                                     \
        const T erf_slope = (T)1.1283791670955126;                    /* 2/sqrt(pi) */          \
        switch (op) {                                                                           \
        case UN_SIN: LUCID_EACH_GRAD(T, g * cos##F(s))                                          \
        case UN_COS: LUCID_EACH_GRAD(T, -(g * sin##F(s)))                                       \
        case UN_TAN: LUCID_EACH_GRAD(T, g * (s * s + one))                          /* s = y */ \
        case UN_ASIN: LUCID_EACH_GRAD(T, g / sqrt##F(one - s * s))                              \
        case UN_ACOS: LUCID_EACH_GRAD(T, -(g / sqrt##F(one - s * s)))                           \
        case UN_ATAN: LUCID_EACH_GRAD(T, g / (s * s + one))                                     \
        case UN_SINH: LUCID_EACH_GRAD(T, g * cosh##F(s))                                        \
        case UN_COSH: LUCID_EACH_GRAD(T, g * sinh##F(s))                                        \
        case UN_LOG1P: LUCID_EACH_GRAD(T, g / (s + one))                                        \
        case UN_EXPM1: LUCID_EACH_GRAD(T, g * (s + one))                            /* s = y */ \
        case UN_LOG2: LUCID_EACH_GRAD(T, g / (s * (T)0.6931471805599453))                       \
        case UN_LOG10: LUCID_EACH_GRAD(T, g / (s * (T)2.302585092994046))                       \
        case UN_EXP2: LUCID_EACH_GRAD(T, g * (s * (T)0.6931471805599453))           /* s = y */ \
        case UN_RSQRT: LUCID_EACH_GRAD(T, g * ((s * (s * s)) * -half))              /* s = y */ \
        case UN_RECIPROCAL: LUCID_EACH_GRAD(T, -(g * (s * s)))                      /* s = y */ \
        case UN_ERF: LUCID_EACH_GRAD(T, g * (exp##F(-(s * s)) * erf_slope))                     \
        case UN_ERFC: LUCID_EACH_GRAD(T, -(g * (exp##F(-(s * s)) * erf_slope)))                 \
        case UN_LGAMMA: LUCID_EACH_GRAD(T, g * (T)LUCID_SP1(SP_DIGAMMA, s))                     \
        case UN_DIGAMMA:                                                                        \
            LUCID_EACH_GRAD(T, g * (T)lucid_polygamma(1, (double)s, LUCID_COT_D1))              \
        case UN_ERFINV:                                                          /* s = y */    \
            LUCID_EACH_GRAD(T, g * (exp##F(s * s) * (T)0.8862269254527580))                     \
        /* the selections (Note [Mask by selection]): exactly 0 where not picked */             \
        case UN_ABS: LUCID_EACH_GRAD(T, s > 0 ? g : s < 0 ? -g : s == 0 ? (T)0 : s)             \
        case UN_RELU: LUCID_EACH_GRAD(T, s > 0 ? g : (T)0)                          /* s = y */ \
        case UN_FRAC: LUCID_EACH_GRAD(T, g)                                                     \
        case UN_SIGN: case UN_FLOOR: case UN_CEIL: case UN_TRUNC: case UN_ROUND: case UN_ANGLE: \
            LUCID_EACH_GRAD(T, (T)0)                                                            \
        case UN_SILU:                                                                           \
            for (long i = 0; i < n; i++) {                                                      \
                T s = sa[i], sg = one / (one + exp##F(-s));                                     \
                o[i] = ga[i] * (sg * (s * (one - sg) + one));                                   \
            }                                                                                   \
            break;                                                                              \
        case UN_GELU:                          /* g*(Phi(x) + x*phi(x)) */                      \
            for (long i = 0; i < n; i++) {                                                      \
                T s = sa[i];                                                                    \
                T cdf = (erf##F(s * (T)0.7071067811865476) + one) * half;                       \
                T density = exp##F((s * s) * -half) * (T)0.3989422804014327;                    \
                o[i] = ga[i] * (cdf + s * density);                                             \
            }                                                                                   \
            break;                                                                              \
        case UN_GELU_TANH:                                                                      \
            for (long i = 0; i < n; i++) {                                                      \
                T s = sa[i], x2 = s * s;                                                        \
                T t = TANH((x2 * c + one) * (s * k));                                           \
                T du = (x2 * (T)(3.0 * 0.044715) + one) * k;                                    \
                o[i] = ga[i] * (((t + one) + (s * (one - t * t)) * du) * half);                 \
            }                                                                                   \
            break;                                                                              \
        case UN_SOFTPLUS:                          /* g*sigmoid(beta*x); g above q */           \
            LUCID_EACH_GRAD(T, s * p > q ? g : g * (one / (one + exp##F(-(s * p)))))            \
        case UN_LEAKY_RELU: LUCID_EACH_GRAD(T, s > 0 ? g : p == 0 ? (T)0 : g * p)               \
        case UN_ELU: LUCID_EACH_GRAD(T, s > 0 ? g : g * (exp##F(s) * p))                        \
        default: break;                                                                         \
        }                                                                                       \
    }

LUCID_UNARY_LOOPS(float, f32, f, lucid_tanh1)
LUCID_UNARY_LOOPS(double, f64, , tanh)

#endif
