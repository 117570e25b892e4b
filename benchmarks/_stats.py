"""Statistics for the benchmark report: summaries, bootstrap intervals of ratios, comparisons.

A ratio of two libraries is the ratio of their median times.  Its confidence interval is a seeded
percentile bootstrap: each library's samples (taken interleaved, so that drift hits all alike)
are resampled with replacement, independently, and the ratio of the resampled medians is
collected ``RESAMPLES`` times.  The same machinery gives the interval of a change between two
runs (new ratio / old ratio), which is how ``--compare`` decides what is beyond noise.
"""
import numpy as np

SEED = 20261201
RESAMPLES = 2000
LEVEL = 0.95
SMALL_CHANGE = 0.05         # --compare: a change this small is flagged as small
_CHUNK = 4_000_000          # resampled values held at once (memory bound for long sample lists)


def summary(ns):
    """Median, min, quartiles (seconds) of a list of nanosecond samples, or None if empty."""
    if not ns:
        return None
    a = np.asarray(ns, dtype=np.float64) * 1e-9
    p25, med, p75 = np.percentile(a, [25, 50, 75])
    return {"median_s": float(med), "min_s": float(a.min()), "p25_s": float(p25),
            "p75_s": float(p75)}


def resampled_medians(samples, rng, resamples=RESAMPLES):
    """``resamples`` medians of ``samples`` resampled with replacement."""
    a = np.asarray(samples, dtype=np.float64)
    rows = max(1, _CHUNK // max(1, a.size))
    out = [np.median(a[rng.integers(0, a.size, (min(rows, resamples - i), a.size))], axis=1)
           for i in range(0, resamples, rows)]
    return np.concatenate(out)


def interval(numerators, denominators, seed=SEED, level=LEVEL):
    """Point value and percentile bootstrap interval of prod(median(n)) / prod(median(d)).

    ``numerators`` and ``denominators`` are lists of sample lists; a ratio of two libraries is
    ``interval([a], [b])``, a change between runs ``interval([new_a, old_b], [new_b, old_a])``.
    Returns ``(value, low, high)``, or None when a sample list is empty.
    """
    if not all(len(s) for s in list(numerators) + list(denominators)):
        return None
    rng = np.random.default_rng(seed)
    value, boot = 1.0, np.ones(RESAMPLES)
    for samples, sign in [(s, 1) for s in numerators] + [(s, -1) for s in denominators]:
        value *= float(np.median(samples)) ** sign
        boot *= resampled_medians(samples, rng) ** sign
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(boot, [tail, 100 - tail])
    return value, float(low), float(high)


def verdict(change, small=SMALL_CHANGE):
    """Words for a change interval (new/old of a ratio; lower is better).  A change beyond noise
    but smaller than ``small`` is said in lower case: on a shared machine the state drifts
    between runs, which the intervals of one run cannot see."""
    if change is None:
        return "no samples"
    value, low, high = change
    if low <= 1.0 <= high:
        return "within noise"
    word = "better" if high < 1.0 else "WORSE"
    if abs(value - 1.0) < small:
        return f"{word.lower()} (beyond noise, under {small:.0%})"
    return f"{word} (beyond noise)"
