"""W10 scaling: W1's chain (x (16,) float32; ``y = y * 0.5 + x`` N times; ``y.sum().backward()``)
at N = 10^2 ... 10^6: forward and backward ns/node and bytes/node, with the cyclic GC enabled.

One fresh process per library and N (``fresh_main``): warm up on a short chain, then one untimed
forward+backward whose RSS growth while the graph is alive gives bytes/node (VmRSS after the
forward minus before it, over the 2N nodes) and whose gradient is checked against the floor's;
then a collection and an untimed re-warm, outside any timed region, and the timed repetitions,
with no collection between them.  The share of the timed time spent in the cyclic GC is recorded
(``gc.callbacks``).  The floor is W1's NumPy code: it keeps no graph (its bytes/node is ~0).
"""
import gc
import time

import numpy as np

from . import _harness as h
from . import _report
from . import _stats
from . import w1_deep_chain as w1

ID = "W10"
NAME = "scaling"
DESCRIPTION = "W1's chain at N = 1e2 .. 1e6 steps, fresh process per library and N, GC on"
SIZES = (10**2, 10**3, 10**4, 10**5, 10**6)
QUICK_SIZES = SIZES[:4]
POLICY = {"full": dict(min_reps=5, min_time=1.0, max_reps=300, max_time=20.0),
          "quick": dict(min_reps=3, min_time=0.2, max_reps=100, max_time=5.0)}
GROWTH = (10**3, 10**6)           # benchmarks/README.md: within 1.5x from 10^3 to 10^6 nodes
GROWTH_TARGET = 1.5
BYTES_TARGET = 0.25               # lucid's bytes/node at most this fraction of torch's


def nodes(n):
    return 2 * n                  # one mul and one add per step


def _rss():
    return h.proc_status_kb("VmRSS") * 1024


class GcTimer:
    """Nanoseconds spent in the cyclic GC while ``on``, through ``gc.callbacks``."""

    def __init__(self):
        self.ns, self.on, self._start = 0, False, 0
        gc.callbacks.append(self)

    def __call__(self, phase, info):
        if phase == "start":
            self._start = time.perf_counter_ns()
        elif self.on:
            self.ns += time.perf_counter_ns() - self._start


def fresh_main(lib_name, quick, n):
    """Child process: one library at one N; returns the record (printed as JSON by run.py)."""
    lib, why = h.load_lib(lib_name)
    if lib is None:
        return {"status": "n/a" if lib_name == "torch" else "error", "message": why}
    x = lib.leaf(w1.leaf_values())
    if lib.name == "numpy":
        forward = lambda steps: w1.numpy_forward(x, steps)          # noqa: E731
        backward = lambda out, steps: w1.numpy_backward(x, steps)   # noqa: E731
    else:
        forward = lambda steps: w1.autograd_forward(x, steps)       # noqa: E731

        def backward(out, steps):
            x.grad = None
            out.backward()
            return [lib.to_numpy(x.grad)]

    def warm():
        for _ in range(3):
            backward(forward(100), 100)

    warm()
    gc.collect()
    before = _rss()
    out = forward(n)
    growth = _rss() - before
    got = backward(out, n)
    del out
    ok, msg = (True, "the reference") if lib.name == "numpy" else \
        h.compare(got, w1.numpy_backward(w1.leaf_values(), n), 1e-3, 1e-5)

    gc.collect()                                  # outside the timed region, then re-warm
    warm()
    policy = POLICY["quick" if quick else "full"]
    fwd, bwd, spent, timer = [], [], 0, GcTimer()
    while len(fwd) < 3 or not (spent >= policy["max_time"] * 1e9 or len(fwd) >= policy["max_reps"]
                               or (len(fwd) >= policy["min_reps"]
                                   and spent >= policy["min_time"] * 1e9)):
        if lib.name != "numpy":
            x.grad = None
        timer.on = True
        t0 = time.perf_counter_ns()
        out = forward(n)
        t1 = time.perf_counter_ns()
        backward(out, n)
        t2 = time.perf_counter_ns()
        timer.on = False
        del out
        fwd.append(t1 - t0)
        bwd.append(t2 - t1)
        spent += t2 - t0
    return {"status": "ok" if ok else "WRONG", "message": None if ok else msg, "check": msg,
            "n": n, "nodes": nodes(n), "samples": {"fwd_ns": fwd, "bwd_ns": bwd},
            "rss_growth_bytes": growth, "bytes_per_node": growth / nodes(n),
            "gc_share": timer.ns / spent}


def cell(lib, n):
    return f"{lib}@{n}"


def run(quick, fresh):
    """All sizes and libraries, each in a fresh process (``fresh(lib, n)`` -> record)."""
    sizes = QUICK_SIZES if quick else SIZES
    wl = {"kind": "scaling", "id": ID, "name": NAME, "description": DESCRIPTION,
          "metric": "fwd | bwd per node", "sizes": sizes, "results": {}, "ratio_specs": []}
    for n in sizes:
        for lib in h.LIBS:
            start = time.perf_counter()
            rec = wl["results"][cell(lib, n)] = fresh(lib, n)
            if rec.get("status") == "ok":
                med = {p: np.median(rec["samples"][p + "_ns"]) / rec["nodes"]
                       for p in ("fwd", "bwd")}
                what = (f"fwd {med['fwd']:.0f} ns/node, bwd {med['bwd']:.0f} ns/node, "
                        f"{rec['bytes_per_node']:.0f} B/node")
            else:
                what = f"{rec.get('status')}: {rec.get('message')}"
            h.progress(f"W10 {lib} N={n:.0e}: {what}  ({time.perf_counter() - start:.1f} s)")
            if rec.get("status") == "WRONG":
                h.progress(f"{'!' * 78}\n!! W10 {lib} N={n}: WRONG: {rec['message']}\n{'!' * 78}")
    specs = wl["ratio_specs"]
    for n in sizes:
        for phase in ("fwd", "bwd"):
            specs.append({"variant": f"N={n}", "name": f"lucid/torch {phase}",
                          "num": cell("lucid", n), "den": cell("torch", n), "phase": phase})
    lo, hi = GROWTH
    if hi in sizes:
        for lib in ("lucid", "torch"):
            for phase in ("fwd", "bwd"):
                specs.append({"variant": "main", "name": f"{lib} {phase}/node N={hi:.0e} / "
                              f"N={lo:.0e}", "num": cell(lib, hi), "den": cell(lib, lo),
                              "phase": phase,
                              "target": GROWTH_TARGET if lib == "lucid" else None})
    return wl


def per_node(rec, phase):
    """(median, low, high) ns/node of one phase, or None."""
    s = _report.metric_samples(rec, phase)
    return None if s is None else _stats.interval([s], [[1.0]])


def format_table(wl):
    def iv(x):
        return "-" if x is None else f"{x[0]:.0f} [{x[1]:.0f}, {x[2]:.0f}]"

    rows, ratio_rows = [], []
    for n in wl["sizes"]:                        # one row per N and library: the table fits 120
        for lib, label in (("lucid", "lucid"), ("torch", "torch"), ("numpy", "floor")):
            rec = wl["results"].get(cell(lib, n)) or {}
            row = [f"{n:.0e}", label]
            if rec.get("status") != "ok":
                rows.append(row + [rec.get("status", "-"), "-", "-", "-"])
                continue
            rows.append(row + [iv(per_node(rec, "fwd")), iv(per_node(rec, "bwd")),
                               "-" if lib == "numpy" else f"{rec['bytes_per_node']:.0f}",
                               f"{rec['gc_share']:.0%}"])
        ratios = {r["name"]: r for r in wl["ratios"] if r["variant"] == f"N={n}"}
        ratio_rows.append([f"{n:.0e}"] + [_report.fmt_interval(ratios.get(f"lucid/torch {p}", {}))
                                          for p in ("fwd", "bwd")])
    lines = [f"W10 scaling: {DESCRIPTION}",
             f"ns/node: median [{_stats.LEVEL:.0%} interval] over 2N nodes; B = bytes/node (RSS "
             "growth while the graph is alive / nodes; one measurement, coarse at small N); "
             "gc = share of the timed time spent in the cyclic GC",
             _report.table(["N", "library", "fwd ns/node", "bwd ns/node", "B/node", "gc"], rows),
             "", _report.table(["N", "lucid/torch fwd", "lucid/torch bwd"], ratio_rows)]
    for r in wl["ratios"]:
        if r["variant"] == "main":
            lines.append(f"  {r['name']}: {_report.fmt_interval(r)}"
                         + (f"; target <= {r['target']:g}: {r.get('verdict', '-')}"
                            if r.get("target") is not None else ""))
    big = max(wl["sizes"])
    lb, tb = ((wl["results"].get(cell(lib, big)) or {}).get("bytes_per_node")
              for lib in ("lucid", "torch"))
    if lb is not None and tb:
        lines.append(f"  bytes/node lucid/torch at N={big:.0e}: {lb / tb:.3g} (one measurement "
                     f"each); target <= {BYTES_TARGET:g}: "
                     + ("met" if lb / tb <= BYTES_TARGET else "MISSED"))
    notes = {f"{c}: {r.get('status')}: {r.get('message')}" for c, r in wl["results"].items()
             if r and r.get("status") != "ok"}
    return "\n".join(_report.wrapped(line) for line in lines + sorted(f"  {n}" for n in notes))


def plot(wl, ax_time, ax_mem):
    """ns/node (with interval error bars) and bytes/node against N, log-log."""
    sizes = wl["sizes"]
    for lib, color in (("lucid", "#1f77b4"), ("torch", "#d62728"), ("numpy", "#999999")):
        for phase, style in (("fwd", "-o"), ("bwd", "--s")):
            pts = [(n, per_node(wl["results"].get(cell(lib, n)), phase)) for n in sizes]
            pts = [(n, v) for n, v in pts if v is not None]
            if pts:
                ns, v = zip(*pts)
                med = np.array([p[0] for p in v])
                err = [med - [p[1] for p in v], [p[2] for p in v] - med]
                ax_time.errorbar(ns, med, yerr=err, fmt=style, color=color, capsize=3,
                                 label=f"{'floor' if lib == 'numpy' else lib} {phase}")
        if lib != "numpy":
            pts = [(n, (wl["results"].get(cell(lib, n)) or {}).get("bytes_per_node"))
                   for n in sizes]
            pts = [(n, b) for n, b in pts if b is not None and b > 0]
            if pts:
                ax_mem.plot(*zip(*pts), "-o", color=color, label=lib)
    for ax, label in ((ax_time, "ns per node"), (ax_mem, "bytes per node (RSS growth)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("N (chain steps; 2N nodes)")
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
    ax_time.set_title("W10: time per node against N (GC enabled)", fontsize=9)
    ax_mem.set_title("W10: memory per node against N", fontsize=9)
