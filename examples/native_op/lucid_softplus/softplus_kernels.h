/* The softplus loops, in C so that the compiler can vectorise them.
 *
 *   forward   y  = max(x, 0) + log1p(exp(-|x|))                 (no branch, no overflow)
 *   backward  gx = g * sigmoid(x),  sigmoid(x) = (x >= 0 ? 1 : e) / (1 + e),  e = exp(-|x|)
 *
 * Both loops are branch-free, so gcc turns them into SIMD code. The exp / log1p calls become
 * calls to glibc's vector math library (libmvec, e.g. _ZGVdN8v_expf: 8 floats per call) when
 * setup.py defines LUCID_SOFTPLUS_LIBMVEC (x86-64 Linux with glibc >= 2.35 and gcc); the
 * declarations below tell gcc those vector versions exist. target_clones builds each loop for
 * AVX-512, AVX2 and the baseline, and the loader picks one for the CPU at import. Without
 * LUCID_SOFTPLUS_LIBMVEC (other platforms, compilers) scalar libm calls would be 10x slower than
 * NumPy, so the module takes the NumPy path described below instead. Compile with
 * -fno-math-errno: a math call that may set errno cannot be vectorised.
 */
#ifndef LUCID_SOFTPLUS_KERNELS_H
#define LUCID_SOFTPLUS_KERNELS_H

#include <math.h>
#include <stddef.h>

#if defined(LUCID_SOFTPLUS_LIBMVEC) && defined(__GNUC__) && !defined(__clang__)
#define SOFTPLUS_VECTOR_MATH 1
#define LUCID_SIMD_DECL __attribute__((__simd__("notinbranch")))
float expf(float) LUCID_SIMD_DECL;
float log1pf(float) LUCID_SIMD_DECL;
double exp(double) LUCID_SIMD_DECL;
double log1p(double) LUCID_SIMD_DECL;
#define LUCID_KERNEL static __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SOFTPLUS_VECTOR_MATH 0
#define LUCID_KERNEL static
#endif

/* One definition of the math for both precisions: T is the type, S the name suffix, and EXP,
 * LOG1P, ABS the libm functions of that precision.
 *
 * Single pass (the kernel when SOFTPLUS_VECTOR_MATH): softplus_forward_S, softplus_backward_S.
 * NumPy path (the kernel otherwise): the same math in passes around NumPy's SIMD exp and log,
 *   a = -|x|;  a = np.exp(a);  softplus_forward_part_S (y, and a = 1 + e);  a = np.log(a);  y += a
 *   a = -|x|;  a = np.exp(a);  softplus_backward_from_exp_S
 * where log1p(e) = log(u) + (e - (u - 1)) / u with u = 1 + e rounded: the second term restores
 * what the rounding of u lost, so tiny e (softplus(-100) = 3.7e-44) keeps its full precision. */
#define LUCID_SOFTPLUS_KERNELS(T, S, EXP, LOG1P, ABS)                                           \
    /* sigmoid(v) from e = exp(-|v|): no branch, no overflow for either sign */                 \
    static inline T sigmoid_from_exp_##S(T v, T e)                                              \
    {                                                                                           \
        return (v >= 0 ? (T)1 : e) / (1 + e);                                                   \
    }                                                                                           \
                                                                                                \
    /* y[i] = softplus(x[i]) */                                                                 \
    LUCID_KERNEL void softplus_forward_##S(const T *restrict x, T *restrict y, ptrdiff_t n)     \
    {                                                                                           \
        for (ptrdiff_t i = 0; i < n; i++) {                                                     \
            T v = x[i];                                                                         \
            y[i] = (v > 0 ? v : (T)0) + LOG1P(EXP(-ABS(v)));                                    \
        }                                                                                       \
    }                                                                                           \
                                                                                                \
    /* gx[i] = g[i] * sigmoid(x[i]); g_step is 1, or 0 for one value broadcast to all */        \
    LUCID_KERNEL void softplus_backward_##S(const T *restrict g, ptrdiff_t g_step,              \
                                            const T *restrict x, T *restrict gx, ptrdiff_t n)   \
    {                                                                                           \
        if (g_step == 0) {                      /* e.g. the gradient of sum(): one value */     \
            const T g0 = g[0];                                                                  \
            for (ptrdiff_t i = 0; i < n; i++)                                                   \
                gx[i] = g0 * sigmoid_from_exp_##S(x[i], EXP(-ABS(x[i])));                       \
        } else {                                                                                \
            for (ptrdiff_t i = 0; i < n; i++)                                                   \
                gx[i] = g[i] * sigmoid_from_exp_##S(x[i], EXP(-ABS(x[i])));                     \
        }                                                                                       \
    }                                                                                           \
                                                                                                \
    /* a[i] = -|x[i]|, the argument of exp */                                                   \
    static void neg_abs_##S(const T *restrict x, T *restrict a, ptrdiff_t n)                    \
    {                                                                                           \
        for (ptrdiff_t i = 0; i < n; i++)                                                       \
            a[i] = -ABS(x[i]);                                                                  \
    }                                                                                           \
                                                                                                \
    /* given a[i] = e = exp(-|x[i]|): y[i] = max(x, 0) + (e - (u - 1)) / u,  a[i] = u = 1 + e */ \
    static void softplus_forward_part_##S(const T *restrict x, T *restrict a, T *restrict y,    \
                                          ptrdiff_t n)                                          \
    {                                                                                           \
        for (ptrdiff_t i = 0; i < n; i++) {                                                     \
            T v = x[i], e = a[i], u = 1 + e;                                                    \
            y[i] = (v > 0 ? v : (T)0) + (e - (u - 1)) / u;                                      \
            a[i] = u;                                                                           \
        }                                                                                       \
    }                                                                                           \
                                                                                                \
    /* given e[i] = exp(-|x[i]|): gx[i] = g[i] * sigmoid(x[i]); g_step as above */              \
    static void softplus_backward_from_exp_##S(const T *restrict g, ptrdiff_t g_step,           \
                                               const T *restrict x, const T *restrict e,        \
                                               T *restrict gx, ptrdiff_t n)                     \
    {                                                                                           \
        if (g_step == 0) {                                                                      \
            const T g0 = g[0];                                                                  \
            for (ptrdiff_t i = 0; i < n; i++)                                                   \
                gx[i] = g0 * sigmoid_from_exp_##S(x[i], e[i]);                                  \
        } else {                                                                                \
            for (ptrdiff_t i = 0; i < n; i++)                                                   \
                gx[i] = g[i] * sigmoid_from_exp_##S(x[i], e[i]);                                \
        }                                                                                       \
    }

LUCID_SOFTPLUS_KERNELS(float, f32, expf, log1pf, fabsf)
LUCID_SOFTPLUS_KERNELS(double, f64, exp, log1p, fabs)

#endif
