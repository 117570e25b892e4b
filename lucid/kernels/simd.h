/* lucid/kernels/simd.h -- float32 tanh written so that GCC vectorises it (-O3 -fno-trapping-math).

   NumPy's float32 tanh costs 3-5 ns per element on the machines this project runs on; this one
   is bound by memory bandwidth (~1.3 ns). It stays within 1.3 ulp of the correctly rounded tanh
   (tests/kernels/test_simd_tanh.py checks it against float64 tanh on a dense sweep):
   - |x| < 0.625: tanh x = x (1 + x^2 P(x^2)), P of degree 4 fitted for least relative error
     (|error| < 5e-9 before float32 rounding);
   - otherwise: tanh |x| = 1 - 2 / (e^{2|x|} + 1) with a range-reduced exponential
     (e^y = 2^n e^r, |r| <= ln2/2, e^r by its Taylor series to r^7), |x| clamped at 10 where
     tanh already rounds to 1;
   both are computed and one is selected, so there is no branch in the loop. target_clones gives
   an AVX2 version and a baseline one, picked at load time. */
#ifndef LUCID_SIMD_H
#define LUCID_SIMD_H

#include <stdint.h>
#include <string.h>
#include <math.h>

static inline float lucid_exp_pos(float y) {
    /* e**y for 0 <= y <= 20: y = n*ln2 + r, |r| <= ln2/2, e**r by its Taylor series to r**7 */
    const float magic = 12582912.0f;                  /* 1.5 * 2**23: rounds to an integer */
    float t = y * 1.44269504088896341f + magic;
    int32_t tb; memcpy(&tb, &t, 4);
    int32_t n = tb - 0x4B400000;
    float fn = t - magic;
    float r = (y - fn * 0.693145751953125f) - fn * 1.428606765330187e-06f;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t pb; memcpy(&pb, &p, 4);
    pb += n << 23;
    memcpy(&p, &pb, 4);
    return p;
}

static inline float lucid_tanh1(float x) {
    float ax = fabsf(x);
    /* both branches are computed; the selects below are blends, so the loop vectorises */
    float x2 = x * x;
    float q = -5.7140782853e-03f;
    q = q * x2 + 2.0648232016e-02f;
    q = q * x2 - 5.3742940292e-02f;
    q = q * x2 + 1.3331488261e-01f;
    q = q * x2 - 3.3333284089e-01f;
    float small = x * (1.0f + x2 * q);       /* keeps the sign of -0 */
    float y = ax < 10.0f ? 2.0f * ax : 20.0f;
    float big = 1.0f - 2.0f / (lucid_exp_pos(y) + 1.0f);
    big = copysignf(big, x);
    float r = ax < 0.625f ? small : big;
    return x != x ? x : r;                    /* NaN in, NaN out */
}

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("avx2", "default")))   /* ifunc dispatch: GCC on x86-64 Linux */
#endif
static void lucid_tanh_f32(const float* x, float* out, long n) {
    for (long i = 0; i < n; i++) out[i] = lucid_tanh1(x[i]);
}

#endif
