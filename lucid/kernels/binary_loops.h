/* lucid/kernels/binary_loops.h -- one-pass typed loops of the binary functions (maximum, xlogy,
   atan2, pow, ...) and of the selections and clamps (where, masked_fill, clamp, nan_to_num,
   sinc, neg): each forward, and each backward computing both inputs' gradients in one pass.

   Each backward element is the same float expression, in the same order, as the op's rules
   compute with lucid's ops (the ops/elementwise files); a selection (Note [Mask by selection])
   writes exactly 0 where it drops g. Constants have the element's type: a float32 loop computes
   in float32, with libm's float functions (sinf, atan2f, ...). The callers run these for small
   contiguous arrays of one float dtype and shape (kernels/binary_loops.pxi; neg at any size),
   a backward only where nothing records (under create_graph the rules run, and record). */
#ifndef LUCID_BINARY_LOOPS_H
#define LUCID_BINARY_LOOPS_H

#include <math.h>
#include "loops.h"                      /* LUCID_CLONES */
#include "fn_codes.h"                   /* LucidFn, LucidFn1 */

/* ga[i] = GA and gb[i] = GB over the elements (g_, a_, b_ the element's g, a, b); an output
   pointer NULL is not written (its input needs no gradient) */
#define LUCID_GRAD_LOOP(T, GA, GB)                                                          \
    do {                                                                                     \
        if (ga != NULL && gb != NULL)                                                        \
            for (long i = 0; i < n; i++) {                                                   \
                const T g_ = g[i], a_ = a[i], b_ = b[i];                                     \
                (void)g_; (void)a_; (void)b_; ga[i] = (GA); gb[i] = (GB);                    \
            }                                                                                \
        else if (ga != NULL)                                                                 \
            for (long i = 0; i < n; i++) {                                                   \
                const T g_ = g[i], a_ = a[i], b_ = b[i];                                     \
                (void)g_; (void)a_; (void)b_; ga[i] = (GA);                                  \
            }                                                                                \
        else if (gb != NULL)                                                                 \
            for (long i = 0; i < n; i++) {                                                   \
                const T g_ = g[i], a_ = a[i], b_ = b[i];                                     \
                (void)g_; (void)a_; (void)b_; gb[i] = (GB);                                  \
            }                                                                                \
    } while (0)

/* o[i] = EXPR over the elements (a_, b_ the element's a, b) */
#define LUCID_MAP2(T, EXPR)                                                                 \
    for (long i = 0; i < n; i++) {                                                           \
        const T a_ = a[i], b_ = b[i];                                                        \
        o[i] = (EXPR);                                                                       \
    }

/* T the element type, S the functions' suffix, F libm's suffix (f, or nothing for double) */
#define LUCID_FN_LOOPS(T, S, F)                                                              \
    /* 1/(1 + exp(-t)): the small sigmoid loop's expression (kernels/typed_loops.pxi) */     \
    static inline T lucid_sigmoid_##S(T t) { return (T)1 / ((T)1 + exp##F(-t)); }           \
    /* NumPy's logaddexp and logaddexp2 (npy_logaddexp): exact at x == y, NaN from x - y */  \
    static inline T lucid_logaddexp_##S(T x, T y) {                                         \
        if (x == y) return x + (T)0.693147180559945309417232121458176568;                     \
        const T d = x - y;                                                                   \
        if (d > 0) return x + log1p##F(exp##F(-d));                                          \
        if (d <= 0) return y + log1p##F(exp##F(d));                                          \
        return d;                                                                            \
    }                                                                                        \
    static inline T lucid_logaddexp2_##S(T x, T y) {                                        \
        const T log2e = (T)1.442695040888963407359924681001892137;                            \
        if (x == y) return x + (T)1;                                                         \
        const T d = x - y;                                                                   \
        if (d > 0) return x + log2e * log1p##F(exp2##F(-d));                                 \
        if (d <= 0) return y + log2e * log1p##F(exp2##F(d));                                 \
        return d;                                                                            \
    }                                                                                        \
    /* an extremum's input's share of g: 0 where it lost, half on a tie, else all */        \
    static inline T lucid_share_##S(T g, int loses, int tie) {                              \
        return loses ? (T)0 : (tie ? g * (T)0.5 : g);                                        \
    }                                                                                        \
    /* Python's remainder: fmod, plus y where it is nonzero and its sign is not y's */       \
    static inline T lucid_remainder_##S(T x, T y) {                                         \
        T r = fmod##F(x, y);                                                                 \
        if (r != 0 && ((r < 0) != (y < 0))) r += y;                                          \
        return r;                                                                            \
    }                                                                                        \
    static inline T lucid_sinc_##S(T x) {                                                   \
        const T y = x * (T)3.141592653589793;                                                \
        return y == 0 ? (T)1 : sin##F(y) / y;                                                \
    }                                                                                        \
    /* sinc'(x): the series pi^2 x (-1/3 + z/30 - z^2/840 + z^3/45360), z = (pi x)^2, below  \
       |x| = 1e-2; above, (cos(pi x) - sinc(x))/x (float_functions.pxi's sinc_slope) */      \
    static inline T lucid_sinc_slope_##S(T x) {                                             \
        const T pi = (T)3.141592653589793, pi2 = (T)(3.141592653589793 * 3.141592653589793);  \
        if (fabs##F(x) < (T)1e-2) {                                                          \
            const T z = (x * x) * pi2;                                                       \
            const T poly = z * (z * (z * (T)(1.0 / 45360) + (T)(-1.0 / 840)) + (T)(1.0 / 30)) \
                           + (T)(-1.0 / 3);                                                  \
            return (x * pi2) * poly;                                                         \
        }                                                                                    \
        return (cos##F(x * pi) - lucid_sinc_##S(x)) / x;                                     \
    }                                                                                        \
    LUCID_CLONES static void lucid_fn2_##S(int fn, const T* a, const T* b, T* o, long n) {  \
        switch (fn) {                                                                        \
        case FN_MAXIMUM: LUCID_MAP2(T, a_ >= b_ || isnan(a_) ? a_ : b_); break;   /* a NaN wins */\
        case FN_MINIMUM: LUCID_MAP2(T, a_ <= b_ || isnan(a_) ? a_ : b_); break;              \
        case FN_XLOGY:   /* 0 where x == 0 unless y is NaN */                                \
            LUCID_MAP2(T, a_ == 0 && !isnan(b_) ? (T)0 : a_ * log##F(b_)); break;            \
        case FN_COPYSIGN: LUCID_MAP2(T, copysign##F(a_, b_)); break;                         \
        case FN_ATAN2: LUCID_MAP2(T, atan2##F(a_, b_)); break;                               \
        case FN_HYPOT: LUCID_MAP2(T, hypot##F(a_, b_)); break;                               \
        case FN_FMOD: LUCID_MAP2(T, fmod##F(a_, b_)); break;                                 \
        case FN_REMAINDER: LUCID_MAP2(T, lucid_remainder_##S(a_, b_)); break;                \
        case FN_LOGADDEXP: LUCID_MAP2(T, lucid_logaddexp_##S(a_, b_)); break;                \
        case FN_LOGADDEXP2: LUCID_MAP2(T, lucid_logaddexp2_##S(a_, b_)); break;              \
        case FN_POW: LUCID_MAP2(T, pow##F(a_, b_)); break;                                   \
        default: LUCID_MAP2(T, a_ / b_);                                                     \
        }                                                                                    \
    }                                                                                        \
    /* ga, gb: the gradients of z = fn(a, b) for the incoming g (either may be NULL) */      \
    LUCID_CLONES static void lucid_fn2_grad_##S(int fn, const T* g, const T* a, const T* b, \
                                               T* ga, T* gb, long n) {                      \
        const T ln2 = (T)0.6931471805599453;                                                 \
        switch (fn) {                                                                        \
        case FN_MAXIMUM: /* ties split g; a NaN sends g to both (no comparison holds) */     \
            LUCID_GRAD_LOOP(T, lucid_share_##S(g_, b_ > a_, a_ == b_),                       \
                            lucid_share_##S(g_, a_ > b_, a_ == b_));                         \
            break;                                                                           \
        case FN_MINIMUM:                                                                     \
            LUCID_GRAD_LOOP(T, lucid_share_##S(g_, b_ < a_, a_ == b_),                       \
                            lucid_share_##S(g_, a_ < b_, a_ == b_));                         \
            break;                                                                           \
        case FN_XLOGY:   /* xlogy(g, y), 0 where x == 0 and y <= 0; g*x/y */                 \
            LUCID_GRAD_LOOP(T, (a_ == 0 && b_ <= 0) || (g_ == 0 && !isnan(b_)) ? (T)0        \
                            : g_ * log##F(b_), (g_ * a_) / b_);                              \
            break;                                                                           \
        case FN_COPYSIGN: /* g*copysign(x, y)/x (+-1, or NaN), 0 at x == 0; 0 */             \
            LUCID_GRAD_LOOP(T, a_ == 0 ? (T)0 : g_ * (copysign##F(a_, b_) / a_), (T)0);      \
            break;                                                                           \
        case FN_ATAN2:   /* g*y/(x*x + y*y) and -g*x/(y*y + x*x), 0 at the origin */         \
            LUCID_GRAD_LOOP(T, a_ * a_ + b_ * b_ == 0 ? (T)0 : (g_ * b_) / (a_ * a_ + b_ * b_),\
                            -(b_ * b_ + a_ * a_ == 0 ? (T)0                                  \
                              : (g_ * a_) / (b_ * b_ + a_ * a_)));                           \
            break;                                                                           \
        case FN_HYPOT:                                                                       \
            LUCID_GRAD_LOOP(T, (g_ * a_) / hypot##F(a_, b_), (g_ * b_) / hypot##F(b_, a_));  \
            break;                                                                           \
        case FN_FMOD:    /* g; -g*trunc(x/y) */                                              \
            LUCID_GRAD_LOOP(T, g_, -(g_ * trunc##F(a_ / b_)));                               \
            break;                                                                           \
        case FN_REMAINDER: /* g; -g*floor(x/y) */                                            \
            LUCID_GRAD_LOOP(T, g_, -(g_ * floor##F(a_ / b_)));                               \
            break;                                                                           \
        case FN_LOGADDEXP: /* g*sigmoid(x - y), g*sigmoid(y - x) */                          \
            LUCID_GRAD_LOOP(T, g_ * lucid_sigmoid_##S(a_ - b_), g_ * lucid_sigmoid_##S(b_ - a_));\
            break;                                                                           \
        case FN_LOGADDEXP2:                                                                  \
            LUCID_GRAD_LOOP(T, g_ * lucid_sigmoid_##S((a_ - b_) * ln2),                      \
                            g_ * lucid_sigmoid_##S((b_ - a_) * ln2));                        \
            break;                                                                           \
        case FN_POW:     /* g*y*x**(y-1), 0 at y == 0; g*x**y*log(x), 0 at x == 0, y >= 0 */ \
            LUCID_GRAD_LOOP(T, b_ == 0 ? (T)0 : g_ * (b_ * pow##F(a_, b_ - (T)1)),           \
                            a_ == 0 && b_ >= 0 ? (T)0 : g_ * (pow##F(a_, b_) * log##F(a_))); \
            break;                                                                           \
        default:         /* FN_DIV: g/y, -(g*x)/(y*y) */                                     \
            LUCID_GRAD_LOOP(T, g_ / b_, -((g_ * a_) / (b_ * b_)));                           \
        }                                                                                    \
    }                                                                                        \
    /* o = fn(a): neg, sinc, clamp to [lo, hi] (a NaN stays), nan_to_num (NaN -> lo, +inf -> \
       hi, -inf -> alt); has_lo / has_hi: clamp's bounds given */                            \
    LUCID_CLONES static void lucid_fn1_##S(int fn, const T* a, T* o, long n, T lo, T hi,    \
                                          T alt, int has_lo, int has_hi) {                  \
        switch (fn) {                                                                        \
        case FN1_NEG:                                                                        \
            for (long i = 0; i < n; i++) o[i] = -a[i];                                       \
            break;                                                                           \
        case FN1_SINC:                                                                       \
            for (long i = 0; i < n; i++) o[i] = lucid_sinc_##S(a[i]);                        \
            break;                                                                           \
        case FN1_CLAMP:  /* minimum(maximum(x, lo), hi), as np.clip */                       \
            for (long i = 0; i < n; i++) {                                                   \
                T t = a[i];                                                                  \
                if (has_lo && t < lo) t = lo;                                                \
                if (has_hi && t > hi) t = hi;                                                \
                o[i] = t;                                                                    \
            }                                                                                \
            break;                                                                           \
        default:         /* FN1_NAN_TO_NUM */                                                \
            for (long i = 0; i < n; i++)                                                     \
                o[i] = isnan(a[i]) ? lo : (a[i] == (T)INFINITY ? hi                          \
                                           : (a[i] == -(T)INFINITY ? alt : a[i]));           \
        }                                                                                    \
    }                                                                                        \
    /* ga = g * fn'(a): sinc's slope; clamp's g inside [lo, hi], else 0; nan_to_num's g      \
       where a is finite, else 0 */                                                          \
    LUCID_CLONES static void lucid_fn1_grad_##S(int fn, const T* g, const T* a, T* ga, long n,\
                                               T lo, T hi, int has_lo, int has_hi) {        \
        switch (fn) {                                                                        \
        case FN1_SINC:                                                                       \
            for (long i = 0; i < n; i++) ga[i] = g[i] * lucid_sinc_slope_##S(a[i]);          \
            break;                                                                           \
        case FN1_CLAMP:                                                                      \
            for (long i = 0; i < n; i++)                                                     \
                ga[i] = ((!has_lo || a[i] >= lo) && (!has_hi || a[i] <= hi)) ? g[i] : (T)0;  \
            break;                                                                           \
        default:         /* FN1_NAN_TO_NUM */                                                \
            for (long i = 0; i < n; i++) ga[i] = isfinite(a[i]) ? g[i] : (T)0;               \
        }                                                                                    \
    }                                                                                        \
    /* where: o = c ? a : b (masked_fill: b the fill value's array, or a number in fill) */   \
    LUCID_CLONES static void lucid_select_##S(const unsigned char* c, const T* a, const T* b,\
                                             T fill, T* o, long n) {                        \
        if (b != NULL) for (long i = 0; i < n; i++) o[i] = c[i] ? a[i] : b[i];               \
        else           for (long i = 0; i < n; i++) o[i] = c[i] ? fill : a[i];               \
    }                                                                                        \
    /* ga = g where c, else 0; gb = g where not c, else 0 (either may be NULL) */            \
    LUCID_CLONES static void lucid_select_grad_##S(const unsigned char* c, const T* g,      \
                                                  T* ga, T* gb, long n) {                   \
        if (ga != NULL) for (long i = 0; i < n; i++) ga[i] = c[i] ? g[i] : (T)0;             \
        if (gb != NULL) for (long i = 0; i < n; i++) gb[i] = c[i] ? (T)0 : g[i];             \
    }

LUCID_FN_LOOPS(float, f32, f)
LUCID_FN_LOOPS(double, f64, )

#endif
