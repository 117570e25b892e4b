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
 * LUCID_SOFTPLUS_LIBMVEC the same loops call the scalar libm functions (correct, slower).
 * Compile with -fno-math-errno: a math call that may set errno cannot be vectorised.
 */
#ifndef LUCID_SOFTPLUS_KERNELS_H
#define LUCID_SOFTPLUS_KERNELS_H

#include <math.h>
#include <stddef.h>

#if defined(LUCID_SOFTPLUS_LIBMVEC) && defined(__GNUC__) && !defined(__clang__)
#define LUCID_SIMD_DECL __attribute__((__simd__("notinbranch")))
float expf(float) LUCID_SIMD_DECL;
float log1pf(float) LUCID_SIMD_DECL;
double exp(double) LUCID_SIMD_DECL;
double log1p(double) LUCID_SIMD_DECL;
#define LUCID_KERNEL static __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define LUCID_KERNEL static
#endif

/* One definition of the math for both precisions: T is the type, S the name suffix, and EXP,
 * LOG1P, ABS the libm functions of that precision. */
#define LUCID_SOFTPLUS_KERNELS(T, S, EXP, LOG1P, ABS)                                           \
    /* sigmoid(v), without a branch and without overflow for either sign */                    \
    static inline T sigmoid_##S(T v)                                                            \
    {                                                                                           \
        T e = EXP(-ABS(v));                                                                     \
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
                gx[i] = g0 * sigmoid_##S(x[i]);                                                 \
        } else {                                                                                \
            for (ptrdiff_t i = 0; i < n; i++)                                                   \
                gx[i] = g[i] * sigmoid_##S(x[i]);                                               \
        }                                                                                       \
    }

LUCID_SOFTPLUS_KERNELS(float, f32, expf, log1pf, fabsf)
LUCID_SOFTPLUS_KERNELS(double, f64, exp, log1p, fabs)

#endif
