/* lucid/kernels/block_loops.h -- loops over one block of adjacent dims of a C-contiguous array seen as
   (outer, n, inner): its sum, max and min over n, and arithmetic with an (outer, 1, inner)
   operand stretched over n by broadcasting (lucid/kernels/block_loops.pxi calls them).

   NumPy reduces a short axis slowly: summing the 10-wide rows of a (1797, 10) float64 array
   costs it ~26 us and their max ~54 us (an inner loop of 10 started 1797 times), summing its
   columns ~23 us. These loops cost a few microseconds for the same work. A row (inner == 1) is
   summed by lucid_sum's eight double accumulators (kernels/loops.h); columns (inner > 1) are
   summed row after row into a double accumulator per column, starting from the first row, so
   float64 columns add in NumPy's order. float32 is summed in double and rounded once. Max and
   min propagate NaN as NumPy does: a NaN element wins, and a NaN extreme stays.

   NumPy's broadcasting arithmetic has the same short-inner-loop cost: adding a bias of 10 to
   the (1797, 10) logits, or subtracting their (1797, 1) row max, costs it ~9 us each.

   Indexing by integer arrays on the leading dims turns them into row numbers of the trailing
   block (checked against the dims) and copies those rows out (x[i, j], ~2 us against NumPy's
   ~5 us for 1797 picks); its gradient adds the rows back at those row numbers, in order
   (np.add.at's result and order, without its ~15 us of machinery). */
#include <stddef.h>
#ifndef LUCID_BLOCK_LOOPS_H
#define LUCID_BLOCK_LOOPS_H

#include "loops.h"

#define LUCID_BLOCK_LOOPS(T, SUFFIX)                                                        \
    /* o[r, j] = scale * sum_i a[r, i, j]; acc holds inner doubles (unused when inner == 1) */ \
    LUCID_CLONES static void lucid_sum_mid_##SUFFIX(                                        \
            const T* a, long outer, long n, long inner, double scale, T* o, double* acc) {  \
        for (long r = 0; r < outer; r++) {                                                   \
            const T* block = a + r * n * inner;                                              \
            if (inner == 1) {                                                                \
                o[r] = (T)(lucid_sum_body_##SUFFIX(block, n) * scale);                       \
                continue;                                                                    \
            }                                                                                \
            for (long j = 0; j < inner; j++) acc[j] = (double)block[j];                      \
            for (long i = 1; i < n; i++) {                                                   \
                const T* row = block + i * inner;                                            \
                for (long j = 0; j < inner; j++) acc[j] += (double)row[j];                   \
            }                                                                                \
            T* out = o + r * inner;                                                          \
            for (long j = 0; j < inner; j++) out[j] = (T)(acc[j] * scale);                   \
        }                                                                                    \
    }                                                                                        \
    /* x if it beats m (is_max: larger, else smaller) or is NaN, else m */                   \
    static inline T lucid_pick_##SUFFIX(int is_max, T x, T m) {                             \
        return ((is_max ? x > m : x < m) || x != x) ? x : m;                                 \
    }                                                                                        \
    /* o[r, j] = max_i (is_max) or min_i a[r, i, j]; n >= 1. Rows (inner == 1) go eight at a \
       time, so eight independent chains of compares overlap */                              \
    LUCID_CLONES static void lucid_extreme_mid_##SUFFIX(                                    \
            const T* a, long outer, long n, long inner, int is_max, T* o) {                 \
        if (inner == 1) {                                                                    \
            long r = 0;                                                                      \
            for (; r + 8 <= outer; r += 8) {                                                 \
                T m[8];                                                                      \
                for (int k = 0; k < 8; k++) m[k] = a[(r + k) * n];                           \
                for (long i = 1; i < n; i++)                                                 \
                    for (int k = 0; k < 8; k++)                                              \
                        m[k] = lucid_pick_##SUFFIX(is_max, a[(r + k) * n + i], m[k]);        \
                for (int k = 0; k < 8; k++) o[r + k] = m[k];                                 \
            }                                                                                \
            for (; r < outer; r++) {                                                         \
                T m = a[r * n];                                                              \
                for (long i = 1; i < n; i++) m = lucid_pick_##SUFFIX(is_max, a[r * n + i], m); \
                o[r] = m;                                                                    \
            }                                                                                \
            return;                                                                          \
        }                                                                                    \
        for (long r = 0; r < outer; r++) {                                                   \
            const T* block = a + r * n * inner;                                              \
            T* out = o + r * inner;                                                          \
            for (long j = 0; j < inner; j++) out[j] = block[j];                              \
            for (long i = 1; i < n; i++) {                                                   \
                const T* row = block + i * inner;                                            \
                for (long j = 0; j < inner; j++)                                             \
                    out[j] = lucid_pick_##SUFFIX(is_max, row[j], out[j]);                    \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    /* o[r, i, j] = a[r, i, j] (op) s[r, j] (RSUB, RDIV: s first), a LucidOp; nothing \
       when a is empty (s may then be empty too: its s[r] must not be read) */               \
    LUCID_CLONES static void lucid_binary_block_##SUFFIX(                                   \
            int op, const T* a, const T* s, T* o, long outer, long n, long inner) {         \
        if (n <= 0 || inner <= 0) return;                                                    \
        for (long r = 0; r < outer; r++) {                                                   \
            const long start = r * n * inner;                                                \
            if (inner == 1) {                                                                \
                lucid_scalar_body_##SUFFIX(op, a + start, s[r], o + start, n);               \
                continue;                                                                    \
            }                                                                                \
            for (long i = 0; i < n; i++)                                                     \
                lucid_binary_body_##SUFFIX(op, a + start + i * inner, s + r * inner,         \
                                           o + start + i * inner, inner);                    \
        }                                                                                    \
    }                                                                                        \
    /* o[i, :] = a[rows[i], :]; a is (?, inner), o is (m, inner) */                          \
    LUCID_CLONES static void lucid_gather_rows_##SUFFIX(                                    \
            const T* a, const ptrdiff_t* rows, T* o, long m, long inner) {                  \
        for (long i = 0; i < m; i++) {                                                       \
            const T* src = a + rows[i] * inner;                                              \
            T* dst = o + i * inner;                                                          \
            for (long j = 0; j < inner; j++) dst[j] = src[j];                                \
        }                                                                                    \
    }                                                                                        \
    /* o[rows[i], :] += g[i, :] for i in order; o is (?, inner), g is (m, inner) */          \
    LUCID_CLONES static void lucid_scatter_rows_##SUFFIX(                                   \
            T* o, const ptrdiff_t* rows, const T* g, long m, long inner) {                  \
        for (long i = 0; i < m; i++) {                                                       \
            T* dst = o + rows[i] * inner;                                                    \
            const T* src = g + i * inner;                                                    \
            for (long j = 0; j < inner; j++) dst[j] += src[j];                               \
        }                                                                                    \
    }

/* rows[i] = the row number of (idx[0][i], ..., idx[k-1][i]) in C-ordered dims[0..k-1], a
   negative index counting from the end; 1 (rows unfinished) when one is out of range */
static int lucid_row_numbers(const ptrdiff_t* const* idx, int k, const ptrdiff_t* dims, long m,
                             ptrdiff_t* rows) {
    for (long i = 0; i < m; i++) {
        ptrdiff_t row = 0;
        for (int d = 0; d < k; d++) {
            ptrdiff_t v = idx[d][i];
            if (v < 0) v += dims[d];
            if (v < 0 || v >= dims[d]) return 1;
            row = row * dims[d] + v;
        }
        rows[i] = row;
    }
    return 0;
}

LUCID_BLOCK_LOOPS(float, f32)
LUCID_BLOCK_LOOPS(double, f64)

#endif
