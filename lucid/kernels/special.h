/* lucid/kernels/special.h -- special functions NumPy does not have, as typed C loops
   (ops/elementwise/special.pxi calls them): lgamma and erfc from the C library, digamma,
   polygamma and erfinv written here. Each kernel is float64; float32 data computes through it
   and rounds once at the end.

   lgamma: lgamma_r, which returns the sign of Gamma in an argument instead of writing the
   global signgam (plain lgamma's data race when two threads call it).
   digamma: the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the asymptotic series
   ln x - 1/(2x) - sum B_2k / (2k x^2k); reflection psi(x) = psi(1 - x) - pi cot(pi x) below 0.
   polygamma(n >= 1): (-1)^(n+1) n! zeta(n + 1, x), the Hurwitz zeta summed directly up to
   max(10, 2(n + 1)) and Euler-Maclaurin beyond; reflection below 0 through the n-th derivative
   of cot, a polynomial in cot computed once per loop.
   erfinv: a first guess (a series near 0, Winitzki's closed form beyond 0.5) and three Halley
   steps on erf(y) = x, whose residual is taken from erfc near |x| = 1 (1 - |x| is exact there).
   Poles and limits follow PyTorch: digamma(+-0) = -+inf, digamma at negative integers NaN,
   polygamma at non-positive integers +inf (odd n) or -inf (even n), erfinv(+-1) = +-inf. */
#ifndef LUCID_SPECIAL_H
#define LUCID_SPECIAL_H

#include <math.h>
#include <stdlib.h>

#if !defined(_WIN32)
extern double lgamma_r(double x, int* sign);
#endif

enum LucidSpecial { SP_LGAMMA, SP_DIGAMMA, SP_POLYGAMMA, SP_ERFINV, SP_ERFC };

#define LUCID_SP_PI 3.14159265358979323846
#define LUCID_SP_TWO_OVER_SQRT_PI 1.12837916709551257390
#define LUCID_SP_SQRT_PI_OVER_2 0.88622692545275801365

/* cot(pi x), accurate near its zeros too: x reduced to r in [-1/2, 1/2], and cot(pi r) =
   -tan(pi (r -+ 1/2)) for |r| > 1/4 (r -+ 1/2 is exact there) */
static inline double lucid_cot_pi(double x) {
    double r = x - round(x);
    if (fabs(r) <= 0.25)
        return 1.0 / tan(LUCID_SP_PI * r);
    return -tan(LUCID_SP_PI * (r - copysign(0.5, r)));
}

static inline double lucid_lgamma(double x) {
#if defined(_WIN32)
    return lgamma(x);
#else
    int sign;
    return lgamma_r(x, &sign);
#endif
}

/* B_2k / (2k), k = 1..8: the asymptotic series of digamma */
static const double LUCID_DIGAMMA_SERIES[8] = {
    1.0 / 12.0, -1.0 / 120.0, 1.0 / 252.0, -1.0 / 240.0, 1.0 / 132.0, -691.0 / 32760.0,
    1.0 / 12.0, -3617.0 / 8160.0};

static double lucid_digamma(double x) {
    if (isnan(x))
        return x;
    if (x == 0.0)
        return copysign(INFINITY, -x);
    if (x < 0.0) {
        if (x == floor(x))
            return NAN;                          /* poles, and -inf */
        return lucid_digamma(1.0 - x) - LUCID_SP_PI * lucid_cot_pi(x);
    }
    if (isinf(x))
        return x;
    double shifted = 0.0;
    while (x < 10.0) {
        shifted += 1.0 / x;
        x += 1.0;
    }
    double z = 1.0 / (x * x), series = 0.0;
    for (int k = 7; k >= 0; k--)
        series = series * z + LUCID_DIGAMMA_SERIES[k];
    return log(x) - 0.5 / x - series * z - shifted;
}

/* B_2j / (2j)!, j = 1..12: the Euler-Maclaurin terms of the Hurwitz zeta */
static const double LUCID_ZETA_TERMS[12] = {
    8.3333333333333333e-02, -1.3888888888888889e-03, 3.3068783068783069e-05,
    -8.2671957671957672e-07, 2.0876756987868099e-08, -5.2841901386874932e-10,
    1.3382536530684679e-11, -3.3896802963225829e-13, 8.5860620562778446e-15,
    -2.1748686985580619e-16, 5.5090028283602295e-18, -1.3954464685812523e-19};

/* a^-s for a > 0, s >= 2: by repeated squaring when s is an integer up to 64 (polygamma's
   s = n + 1; a few ulp from pow, at a tenth of its ~150 instructions), else pow */
static inline double lucid_inv_pow(double a, double s) {
    if (s > 64.0 || s != (double)(int)s)
        return pow(a, -s);
    double r = 1.0, base = a;
    for (int k = (int)s; k != 0; k >>= 1) {
        if (k & 1)
            r *= base;
        base *= base;
    }
    return 1.0 / r;
}

/* zeta(s, q) = sum_k (q + k)^-s for s >= 2 and q > 0 */
static double lucid_hurwitz_zeta(double s, double q) {
    double limit = 2.0 * s > 10.0 ? 2.0 * s : 10.0, a = q, direct = 0.0;
    while (a < limit) {
        double term = lucid_inv_pow(a, s);
        direct += term;
        if (term <= direct * 1e-17)
            return direct;
        a += 1.0;
    }
    double p = lucid_inv_pow(a, s);
    double sum = direct + a * p / (s - 1.0) + 0.5 * p;
    double rising = s / a;                       /* s (s+1) ... (s+2j-2) / a^(2j-1) */
    for (int j = 1; j <= 12; j++) {
        double term = LUCID_ZETA_TERMS[j - 1] * rising * p;
        sum += term;
        if (fabs(term) <= fabs(sum) * 1e-17)
            break;
        rising *= (s + 2.0 * j - 1.0) * (s + 2.0 * j) / (a * a);
    }
    return sum;
}

/* coef[0..n+1]: d^n/dx^n cot(pi x) = pi^n * sum_i coef[i] cot(pi x)^i; from P_0(c) = c and
   P_{k+1}(c) = -(1 + c^2) P_k'(c). coef holds n + 2 doubles, work as many more. */
static void lucid_cot_derivative(int n, double* coef, double* work) {
    for (int i = 0; i < n + 2; i++)
        coef[i] = 0.0;
    coef[1] = 1.0;
    for (int k = 0; k < n; k++) {
        for (int j = 0; j < n + 2; j++) {
            double up = j + 1 < n + 2 ? (j + 1) * coef[j + 1] : 0.0;
            double down = j >= 1 ? (j - 1) * coef[j - 1] : 0.0;
            work[j] = -(up + down);
        }
        for (int j = 0; j < n + 2; j++)
            coef[j] = work[j];
    }
}

/* polygamma(n, x) for n >= 1; cot_coef from lucid_cot_derivative(n), NULL for n beyond
   LUCID_REFLECTED_ORDERS */
#define LUCID_REFLECTED_ORDERS 170
static double lucid_polygamma(int n, double x, const double* cot_coef) {
    if (isnan(x) || x == -INFINITY)
        return NAN;
    if (x <= 0.0 && x == floor(x))
        return n % 2 ? INFINITY : -INFINITY;
    if (x == INFINITY)
        return n % 2 ? 0.0 : -0.0;
    if (x < 0.0) {          /* psi^(n)(x) = -pi d^n/dx^n cot(pi x) + (-1)^n psi^(n)(1 - x) */
        if (cot_coef == NULL)
            return NAN;                          /* n > 170: n! and the coefficients overflow */
        double c = lucid_cot_pi(x), poly = 0.0;
        for (int i = n + 1; i >= 0; i--)
            poly = poly * c + cot_coef[i];
        double mirrored = lucid_polygamma(n, 1.0 - x, cot_coef);
        return -pow(LUCID_SP_PI, n + 1) * poly + (n % 2 ? -mirrored : mirrored);
    }
    double factorial = 1.0;
    for (int k = 2; k <= n && factorial < INFINITY; k++)
        factorial *= k;
    return (n % 2 ? factorial : -factorial) * lucid_hurwitz_zeta(n + 1.0, x);
}

static double lucid_erfinv(double x) {
    double ax = fabs(x);
    if (isnan(x) || ax == 0.0)
        return x;
    if (ax >= 1.0)
        return ax == 1.0 ? copysign(INFINITY, x) : NAN;
    double y;
    if (ax < 0.5) {                               /* sqrt(pi)/2 (x + pi/12 x^3 + 7 pi^2/480 x^5) */
        double z = ax * ax;
        y = LUCID_SP_SQRT_PI_OVER_2 * ax *
            (1.0 + z * (LUCID_SP_PI / 12.0 + z * (7.0 * LUCID_SP_PI * LUCID_SP_PI / 480.0)));
    } else {                                      /* Winitzki's approximation, a = 0.147 */
        double l = log((1.0 - ax) * (1.0 + ax));
        double t = 2.0 / (LUCID_SP_PI * 0.147) + 0.5 * l;
        y = sqrt(sqrt(t * t - l / 0.147) - t);
    }
    double rest = 1.0 - ax;                       /* exact for ax >= 0.5 */
    for (int step = 0; step < 3; step++) {        /* f = erf(y) - ax, f'' = -2 y f' */
        double f = ax < 0.5 ? erf(y) - ax : rest - erfc(y);
        double ratio = f / (LUCID_SP_TWO_OVER_SQRT_PI * exp(-y * y));
        y -= ratio / (1.0 + y * ratio);
    }
    return copysign(y, x);
}

static inline double lucid_special_one(int op, int n, double x, const double* cot_coef) {
    switch (op) {
        case SP_LGAMMA: return lucid_lgamma(x);
        case SP_DIGAMMA: return lucid_digamma(x);
        case SP_POLYGAMMA: return lucid_polygamma(n, x, cot_coef);
        case SP_ERFINV: return lucid_erfinv(x);
        default: return erfc(x);
    }
}

/* out[i] = op(x[i]) for size elements (n: polygamma's order, 1 <= n < INT_MAX - 2), times
   g[i] unless g is NULL (a fused backward: g * f'(x), f' another special function); 0, or -1
   when out of memory */
#define LUCID_SPECIAL_LOOP(T, SUFFIX)                                                        \
    static inline int lucid_special_scaled_##SUFFIX(                                        \
            int op, int n, const T* g, const T* x, T* out, long size) {                     \
        double* coef = NULL;                                                                 \
        if (op == SP_POLYGAMMA && n <= LUCID_REFLECTED_ORDERS) {                            \
            coef = (double*)malloc(2 * (size_t)(n + 2) * sizeof(double));                   \
            if (coef == NULL)                                                                \
                return -1;                                                                   \
            lucid_cot_derivative(n, coef, coef + n + 2);                                    \
        }                                                                                    \
        for (long i = 0; i < size; i++) {                                                    \
            T v = (T)lucid_special_one(op, n, (double)x[i], coef);                           \
            out[i] = g == NULL ? v : g[i] * v;                                               \
        }                                                                                    \
        free(coef);                                                                          \
        return 0;                                                                            \
    }

LUCID_SPECIAL_LOOP(double, f64)
LUCID_SPECIAL_LOOP(float, f32)

#endif
