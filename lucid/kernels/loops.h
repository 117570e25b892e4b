/* lucid/kernels/loops.h -- the typed elementwise loops (arithmetic, tensor with scalar, the fused
   backward formulas) and the full sum, written in C so that GCC vectorises them with the widest
   instructions the CPU has.

   Written in Cython these loops computed in double for float32 data (Cython types the literal 1
   as 1.0) and were built for the baseline x86-64 (SSE2, 4 floats per instruction): the tanh
   backward of 1M float32 took ~280 us, 2.5x a NumPy multiply. Here every constant has the
   element's type and target_clones adds AVX2 and AVX-512 versions, picked once at load time
   (ifunc), so each loop is bound by memory. The sum keeps eight double accumulators, so its
   additions vectorise without reordering a single chain (no -ffast-math needed) and float32
   data is summed in double as before. */
#ifndef LUCID_LOOPS_H
#define LUCID_LOOPS_H

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define LUCID_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define LUCID_CLONES
#endif

/* the arithmetic of fast_binary / fast_scalar (lucid/kernels/typed_loops.pxi); RSUB and RDIV put the second
   operand (b, or s) first */
/* lucid's arithmetic op codes: one enum for the ops (ops/elementwise/arith.pxi) and these
   loops, which take all but OP_POW (NumPy computes powers) */
enum LucidOp { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_POW, OP_RSUB, OP_RDIV };

#define LUCID_LOOPS(T, SUFFIX)                                                               \
    /* the bodies are inlined into each clone of their callers (here and in kernels/block_loops.h) */\
    static inline void lucid_binary_body_##SUFFIX(                                          \
            int op, const T* a, const T* b, T* o, long n) {                                 \
        if (op == OP_ADD)       for (long i = 0; i < n; i++) o[i] = a[i] + b[i];              \
        else if (op == OP_SUB)  for (long i = 0; i < n; i++) o[i] = a[i] - b[i];              \
        else if (op == OP_MUL)  for (long i = 0; i < n; i++) o[i] = a[i] * b[i];              \
        else if (op == OP_DIV)  for (long i = 0; i < n; i++) o[i] = a[i] / b[i];              \
        else if (op == OP_RSUB) for (long i = 0; i < n; i++) o[i] = b[i] - a[i];              \
        else                   for (long i = 0; i < n; i++) o[i] = b[i] / a[i];              \
    }                                                                                        \
    static inline void lucid_scalar_body_##SUFFIX(int op, const T* a, T s, T* o, long n) {  \
        if (op == OP_ADD)       for (long i = 0; i < n; i++) o[i] = a[i] + s;                 \
        else if (op == OP_SUB)  for (long i = 0; i < n; i++) o[i] = a[i] - s;                 \
        else if (op == OP_MUL)  for (long i = 0; i < n; i++) o[i] = a[i] * s;                 \
        else if (op == OP_DIV)  for (long i = 0; i < n; i++) o[i] = a[i] / s;                 \
        else if (op == OP_RSUB) for (long i = 0; i < n; i++) o[i] = s - a[i];                 \
        else                   for (long i = 0; i < n; i++) o[i] = s / a[i];                 \
    }                                                                                        \
    LUCID_CLONES static void lucid_binary_##SUFFIX(                                         \
            int op, const T* a, const T* b, T* o, long n) {                                 \
        lucid_binary_body_##SUFFIX(op, a, b, o, n);                                          \
    }                                                                                        \
    LUCID_CLONES static void lucid_scalar_##SUFFIX(                                         \
            int op, const T* a, T s, T* o, long n) {                                        \
        lucid_scalar_body_##SUFFIX(op, a, s, o, n);                                          \
    }                                                                                        \
    LUCID_CLONES static void lucid_tanh_backward_##SUFFIX(                                  \
            const T* g, const T* y, T* o, long n) {                                         \
        for (long i = 0; i < n; i++) o[i] = g[i] * ((T)1 - y[i] * y[i]);                     \
    }                                                                                        \
    LUCID_CLONES static void lucid_sigmoid_backward_##SUFFIX(                               \
            const T* g, const T* y, T* o, long n) {                                         \
        for (long i = 0; i < n; i++) o[i] = g[i] * y[i] * ((T)1 - y[i]);                     \
    }                                                                                        \
    static inline double lucid_sum_body_##SUFFIX(const T* a, long n) {                      \
        double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                            \
        long i = 0;                                                                          \
        for (; i + 8 <= n; i += 8)                                                           \
            for (int k = 0; k < 8; k++) acc[k] += (double)a[i + k];                          \
        double total = ((acc[0] + acc[4]) + (acc[1] + acc[5])) +                             \
                       ((acc[2] + acc[6]) + (acc[3] + acc[7]));                              \
        for (; i < n; i++) total += (double)a[i];                                            \
        return total;                                                                        \
    }                                                                                        \
    LUCID_CLONES static double lucid_sum_##SUFFIX(const T* a, long n) {                     \
        return lucid_sum_body_##SUFFIX(a, n);                                                \
    }

LUCID_LOOPS(float, f32)
LUCID_LOOPS(double, f64)

#endif
