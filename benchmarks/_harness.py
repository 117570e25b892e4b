"""Shared benchmark harness: libraries, timing loop, checks, records, table, JSON, plot, memory.

Every workload module (``w1_deep_chain.py`` ...) exposes:

    ID = "W1"                  # short id, unique
    NAME = "deep chain"        # short name for the table
    DESCRIPTION = "..."        # one line: the graph
    METRIC = "fwd+bwd"         # what the ratios compare: "fwd+bwd", or "bwd" (W6)
    NODES = 2000               # denominator for per-node nanoseconds, or None
    NODE_UNIT = "node"         # what one NODES unit is ("op", "Function call", ...)
    TARGET = ("torch", 0.10)   # lucid/<peer> ratio to meet (BENCHMARKS.md), or None
    MEMORY = False             # True: also measure peak memory in a fresh process per library
    RTOL, ATOL = 1e-3, 1e-5    # gradient check tolerance (optional, these are the defaults)

    def setup(lib, quick) -> Case

``lib`` is a :class:`Lib` (``lib.name`` is "lucid", "numpy" or "torch", ``lib.mod`` the module).
``setup`` builds the seeded leaves (outside any timed region) and returns a :class:`Case` of four
callables: ``forward()`` builds the graph and returns the loss (or whatever ``backward`` needs),
``backward(out)`` runs the backward pass, ``grads()`` returns the leaves' gradients as NumPy arrays,
``reset()`` drops the leaves' gradients (run before every repetition, outside the timed region).
A workload timing backward alone (W6) sets ``forward=None`` and builds its graph in ``setup``;
``backward`` then gets the ``state`` given to the Case.  ``setup`` raises :class:`NotAvailable` when
the library lacks a feature the workload needs (the cell shows "n/a" and the reason).

This module must not import numpy at module level before ``pin_threads()`` has run: the entry
point (run.py) calls it first thing.
"""
from __future__ import annotations

import datetime
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback

LIBS = ("lucid", "numpy", "torch")          # the order of columns
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
SEED = 1234
CLOCKS = {
    # wall time, the default; what a user waits for
    "wall": time.perf_counter_ns,
    # CPU time of this thread (user + system): not inflated when a busy machine preempts us
    "cpu": time.thread_time_ns,
}
_clock = CLOCKS["wall"]


def set_clock(name):
    global _clock
    _clock = CLOCKS[name]


NOISY_IQR = 0.25        # flag a measurement whose (p75 - p25) / median exceeds this

# Repetition policy.  A "sample" is one reset + forward + backward; the clock covers forward and
# backward only, each with its own perf_counter_ns pair.
FULL = dict(warmup=3, min_repeats=20, min_time=2.0, max_time=30.0)
QUICK = dict(warmup=1, min_repeats=3, min_time=0.15, max_time=3.0)


# --------------------------------------------------------------------------------------------
# environment
# --------------------------------------------------------------------------------------------
def pin_threads() -> None:
    """One intra-op thread for every library.  Must run before numpy (or torch) is imported."""
    for var in THREAD_VARS:
        os.environ[var] = "1"


class NotAvailable(Exception):
    """The library lacks something this workload needs (shown as "n/a: reason")."""


class Lib:
    """A library under test.  ``mod`` is the imported module (numpy for the floor)."""

    def __init__(self, name, mod):
        self.name = name
        self.mod = mod

    def leaf(self, arr):
        """A leaf that requires grad, holding a copy of the float NumPy array ``arr``."""
        import numpy as np
        arr = np.array(arr, copy=True)
        if self.name == "torch":
            return self.mod.from_numpy(arr).requires_grad_(True)
        if self.name == "lucid":
            return self.mod.tensor(arr, requires_grad=True)
        return arr

    def const(self, arr):
        """A tensor that does not require grad."""
        import numpy as np
        arr = np.array(arr, copy=True)
        if self.name == "torch":
            return self.mod.from_numpy(arr)
        if self.name == "lucid":
            return self.mod.tensor(arr)
        return arr

    @staticmethod
    def grad_of(t):
        """``t.grad`` as a NumPy array (None if there is none)."""
        import numpy as np
        g = t.grad
        if g is None:
            return None
        return np.array(g.detach().numpy(), copy=True)


def load_lib(name):
    """Import a library; returns (Lib or None, reason-if-None)."""
    try:
        if name == "numpy":
            import numpy
            return Lib("numpy", numpy), None
        if name == "torch":
            try:
                import torch
            except ImportError as e:
                return None, f"torch not importable ({first_line(e)})"
            torch.set_num_threads(1)
            try:
                torch.set_num_interop_threads(1)
            except RuntimeError:
                pass
            return Lib("torch", torch), None
        if name == "lucid":
            import lucid
            if getattr(lucid, "__file__", None) is None:
                where = ", ".join(getattr(lucid, "__path__", []))
                return None, (f"lucid is not built: only the source folder {where} was found "
                              f"(run pip install -e . in the repository)")
            return Lib("lucid", lucid), None
    except Exception as e:                       # noqa: BLE001 - any import failure is reported
        return None, f"import {name} failed: {type(e).__name__}: {first_line(e)}"
    raise ValueError(name)


def first_line(exc) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def env_info(libs) -> dict:
    """The environment as seen by a worker process, for the JSON."""
    import numpy as np
    info = {
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "executable": sys.executable,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "numpy": np.__version__,
        "env": {k: os.environ.get(k) for k in
                ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") + THREAD_VARS},
    }
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg.get("Build Dependencies", {}).get("blas", {})
        info["numpy_blas"] = {k: blas.get(k) for k in ("name", "version", "openblas configuration")}
    except Exception:                            # noqa: BLE001 - older numpy: not essential
        pass
    try:
        import threadpoolctl
        info["threadpools"] = [
            {k: p.get(k) for k in ("internal_api", "version", "num_threads", "architecture")}
            for p in threadpoolctl.threadpool_info()]
    except Exception:                            # noqa: BLE001 - optional
        pass
    t = libs.get("torch")
    info["torch"] = t.mod.__version__ if t else None
    if t:
        info["torch_num_threads"] = t.mod.get_num_threads()
        info["torch_num_interop_threads"] = t.mod.get_num_interop_threads()
    lu = libs.get("lucid")
    if lu:
        info["lucid"] = getattr(lu.mod, "__version__", None)
        info["lucid_file"] = getattr(lu.mod, "__file__", None)
    info["git"] = _git_describe()
    return info


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _git_describe():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        out = subprocess.run(["git", "-C", root, "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10)
        if out.returncode != 0:
            return "no commit yet" if "HEAD" in out.stderr or "revision" in out.stderr else None
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


# --------------------------------------------------------------------------------------------
# cases and timing
# --------------------------------------------------------------------------------------------
class Case:
    """What a workload's ``setup`` returns for one library."""

    def __init__(self, forward, backward, grads, reset, state=None):
        self.forward = forward      # () -> out, or None: backward alone is timed on ``state``
        self.backward = backward    # (out) -> None
        self.grads = grads          # () -> list of np.ndarray
        self.reset = reset          # () -> None, outside the timed region
        self.state = state


def autograd_case(lib, leaves, forward, backward=None, state=None):
    """A Case for an autograd library (lucid, torch): ``leaves`` are the tensors whose ``.grad``
    is checked and reset (set to None, so every timed backward allocates them afresh)."""
    def reset():
        for t in leaves:
            t.grad = None

    def grads():
        return [lib.grad_of(t) for t in leaves]

    if backward is None:
        def backward(out):
            out.backward()
    return Case(forward, backward, grads, reset, state)


def numpy_case(forward, backward, state=None):
    """A Case for the NumPy floor: ``forward()`` returns what the hand-written ``backward(saved)``
    needs; ``backward`` returns the list of gradients."""
    box = {}

    def bwd(saved):
        box["grads"] = backward(saved)

    return Case(forward, bwd, lambda: box.get("grads"), box.clear, state)


def run_once(case):
    """One untimed repetition; returns the gradients."""
    case.reset()
    out = case.forward() if case.forward is not None else case.state
    case.backward(out)
    del out
    return case.grads()


class Samples:
    """Timing samples of one library on one workload (nanoseconds)."""

    def __init__(self):
        self.fwd = []
        self.bwd = []
        self._total_ns = 0

    @property
    def total_time_s(self):
        return self._total_ns * 1e-9

    def sample(self, case):
        case.reset()
        clock = _clock
        if case.forward is not None:
            t0 = clock()
            out = case.forward()
            t1 = clock()
        else:
            out = case.state
            t0 = t1 = clock()
        case.backward(out)
        t2 = clock()
        del out
        self.fwd.append(t1 - t0)
        self.bwd.append(t2 - t1)
        self._total_ns += t2 - t0

    def summary(self, timed_forward=True):
        total = [f + b for f, b in zip(self.fwd, self.bwd)]
        res = {"n": len(total), "bwd": stats(self.bwd), "total": stats(total)}
        res["fwd"] = stats(self.fwd) if timed_forward else None
        return res


def stats(ns):
    if not ns:
        return None
    q = statistics.quantiles(ns, n=4) if len(ns) >= 2 else [ns[0]] * 3
    return {"median_s": statistics.median(ns) * 1e-9, "min_s": min(ns) * 1e-9,
            "mean_s": statistics.fmean(ns) * 1e-9, "p25_s": q[0] * 1e-9, "p75_s": q[2] * 1e-9}


def time_cases(cases, policy, on_error, mark=lambda lib, phase: None):
    """Time every case, round-robin in short batches so that drift hits all libraries alike.

    ``cases``: {lib: Case}.  Returns {lib: Samples}.  A case that raises is dropped and reported
    through ``on_error(lib, exc)``.  Warm-up first; then each library repeats until it has at
    least ``min_repeats`` samples and ``min_time`` seconds of timed work (or ``max_time``).
    """
    samples = {lib: Samples() for lib in cases}
    live = dict(cases)

    def guarded(lib, fn):
        try:
            fn()
            return True
        except Exception as e:                   # noqa: BLE001 - reported, the run goes on
            on_error(lib, e)
            live.pop(lib, None)
            samples.pop(lib, None)
            return False

    for lib, case in list(live.items()):
        mark(lib, "warm-up")
        guarded(lib, lambda c=case: [run_once(c) for _ in range(policy["warmup"])])
    gc.collect()

    batch_time = policy["min_time"] / 5
    done = set()
    while len(done) < len(live):
        for lib, case in list(live.items()):
            if lib in done:
                continue
            s = samples[lib]

            def batch(s=s, case=case):
                start = s.total_time_s
                while s.total_time_s - start < batch_time:
                    s.sample(case)
                    if len(s.fwd) >= policy["min_repeats"] and s.total_time_s >= policy["min_time"]:
                        break
            mark(lib, "timing")
            if not guarded(lib, batch):
                continue
            enough = len(s.fwd) >= policy["min_repeats"] and s.total_time_s >= policy["min_time"]
            if enough or s.total_time_s >= policy["max_time"]:
                done.add(lib)
        done &= set(live)
    return samples


def compare(got, ref, rtol, atol):
    """Compare lists of gradient arrays.  Returns (ok, message)."""
    import numpy as np
    if got is None or len(got) != len(ref):
        return False, f"expected {len(ref)} gradients, got {None if got is None else len(got)}"
    for i, (g, r) in enumerate(zip(got, ref)):
        if g is None:
            return False, f"gradient {i} is None"
        g = np.asarray(g)
        if g.shape != r.shape:
            return False, f"gradient {i}: shape {g.shape}, expected {r.shape}"
        if g.dtype != r.dtype:
            return False, f"gradient {i}: dtype {g.dtype}, expected {r.dtype} (the leaf's)"
        with np.errstate(all="ignore"):
            scale = float(np.max(np.abs(r[np.isfinite(r)]), initial=0.0)) or 1.0
            ok = bool(np.allclose(g.astype(np.float64), r.astype(np.float64),
                                  rtol=rtol, atol=atol * scale))
        if not ok:
            with np.errstate(all="ignore"):
                diff = np.abs(g.astype(np.float64) - r.astype(np.float64))
                diff[np.isnan(diff) & ~(np.isnan(g) & np.isnan(r))] = np.inf
                diff[(g == r)] = 0.0
                k = int(np.nanargmax(diff)) if diff.size else 0
            return False, (f"gradient {i}: max |diff| at flat index {k}: "
                           f"got {g.ravel()[k]!r}, floor {r.ravel()[k]!r}")
    return True, "matches the NumPy floor"


# --------------------------------------------------------------------------------------------
# worker: runs workloads, writes one JSON record per line
# --------------------------------------------------------------------------------------------
def emit(fh, record):
    fh.write(json.dumps(record) + "\n")
    fh.flush()


def progress(msg):
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()


def run_workload(mod, libs, load_errors, quick, out, index, count, skip=()):
    """Measure one workload for every library; records go to ``out`` as they complete."""
    import numpy as np
    policy = QUICK if quick else FULL
    rtol = getattr(mod, "RTOL", 1e-3)
    atol = getattr(mod, "ATOL", 1e-5)
    t_start = time.perf_counter()
    head = f"[{index}/{count}] {mod.ID} {mod.NAME}"
    progress(f"{head}: measuring ..." + (f" (again, without {', '.join(sorted(skip))})"
                                          if skip else ""))
    results = {}
    last_mark = [None]

    def mark(lib, phase):
        if last_mark[0] != (lib, phase):
            last_mark[0] = (lib, phase)
            emit(out, {"type": "at", "workload": mod.ID, "lib": lib, "phase": phase})

    def record(lib, status, message=None, **extra):
        rec = {"type": "result", "workload": mod.ID, "lib": lib, "status": status,
               "message": message}
        rec.update(extra)
        results[lib] = rec
        emit(out, rec)
        if status in ("error", "WRONG") and lib == "lucid":
            progress(f"{head}: lucid {status}: {message}")

    # setup (the floor first: it is the reference)
    cases = {}
    for name in ("numpy", "torch", "lucid"):
        if name in skip:                         # a rerun after this library crashed
            continue
        lib = libs.get(name)
        if lib is None:
            record(name, "n/a" if name == "torch" else "error", load_errors.get(name))
            continue
        mark(name, "setup")
        try:
            with np.errstate(all="ignore"):
                cases[name] = mod.setup(lib, quick)
        except NotAvailable as e:
            record(name, "n/a", str(e))
        except Exception as e:                   # noqa: BLE001 - reported, the run goes on
            record(name, "error", f"setup: {type(e).__name__}: {first_line(e)}",
                   traceback=traceback.format_exc(limit=-4))

    # correctness: two untimed repetitions each, compared with the floor's gradient
    checks = {}
    ref = None
    if "numpy" in cases:
        mark("numpy", "check")
        try:
            with np.errstate(all="ignore"):
                ref = [np.asarray(g) for g in run_once(cases["numpy"])]
        except Exception as e:                   # noqa: BLE001
            record("numpy", "error", f"{type(e).__name__}: {first_line(e)}",
                   traceback=traceback.format_exc(limit=-4))
            cases.pop("numpy")
    for name in ("torch", "lucid"):
        if name not in cases:
            continue
        mark(name, "check")
        try:
            with np.errstate(all="ignore"):
                got1 = run_once(cases[name])
                got2 = run_once(cases[name])
        except Exception as e:                   # noqa: BLE001
            record(name, "error", f"{type(e).__name__}: {first_line(e)}",
                   traceback=traceback.format_exc(limit=-4))
            cases.pop(name)
            continue
        if ref is None:
            checks[name] = (True, "not checked (no floor)")
            continue
        ok, msg = compare(got1, ref, rtol, atol)
        if ok:
            ok, msg = compare(got2, ref, rtol, atol)
            if not ok:
                msg = "second repetition: " + msg
        checks[name] = (ok, msg)
        if not ok:
            bar = "!" * 78
            progress(f"{bar}\n!! {mod.ID} {name}: WRONG GRADIENT: {msg}\n{bar}")

    # timing
    errors = {}

    def on_error(name, e):
        errors[name] = (f"{type(e).__name__}: {first_line(e)}", traceback.format_exc(limit=-4))

    with np.errstate(all="ignore"):
        samples = time_cases(cases, policy, on_error, mark)
    timed_forward = getattr(mod, "METRIC", "fwd+bwd") != "bwd"
    for name in cases:
        if name in errors:
            record(name, "error", errors[name][0], traceback=errors[name][1])
            continue
        ok, msg = checks.get(name, (True, "reference"))
        record(name, "ok" if ok else "WRONG", None if ok else msg, check=msg,
               timing=samples[name].summary(timed_forward))

    # the progress line
    parts = []
    for name in ("lucid", "numpy", "torch"):
        r = results.get(name)
        if r is None:
            continue
        if r.get("timing"):
            parts.append(f"{name} {fmt_time(r['timing']['total']['median_s'])}"
                         + ("" if r["status"] == "ok" else f" {r['status']}"))
        else:
            parts.append(f"{name} {r['status']}")
    progress(f"{head}: {', '.join(parts)}  ({time.perf_counter() - t_start:.1f} s)")
    gc.collect()


def worker_main(workload_mods, quick, out_path):
    libs, load_errors = {}, {}
    for name in ("numpy", "torch", "lucid"):
        lib, why = load_lib(name)
        if lib is None:
            load_errors[name] = why
        else:
            libs[name] = lib
    with open(out_path, "a") as out:
        emit(out, {"type": "env", "env": env_info(libs)})
        for index, count, mod, skip in workload_mods:
            emit(out, {"type": "start", "workload": mod.ID})
            run_workload(mod, libs, load_errors, quick, out, index, count, skip)
            emit(out, {"type": "end", "workload": mod.ID})


# --------------------------------------------------------------------------------------------
# peak memory, in a fresh process per library
# --------------------------------------------------------------------------------------------
MEMORY_METHOD = ("peak RSS growth during one forward+backward, fresh process per library: "
                 "Linux VmHWM reset through /proc/self/clear_refs after imports and leaves, "
                 "minus VmRSS at that point; glibc MALLOC_MMAP_THRESHOLD_=131072 so that freed "
                 "large buffers go back to the OS")
MEMORY_ENV = {"MALLOC_MMAP_THRESHOLD_": "131072"}


def _proc_status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(field)


def memory_main(mod, lib_name, quick):
    """Child process: print one JSON line with the peak memory of one forward+backward."""
    lib, why = load_lib(lib_name)
    if lib is None:
        print(json.dumps({"status": "n/a" if lib_name == "torch" else "error", "message": why}))
        return
    import numpy as np
    try:
        case = mod.setup(lib, quick)
    except NotAvailable as e:
        print(json.dumps({"status": "n/a", "message": str(e)}))
        return
    case.reset()
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")                         # resets VmHWM to the current RSS
        base_kb = _proc_status_kb("VmRSS")
        method = "vmhwm"
    except OSError:
        import resource
        base_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        method = "ru_maxrss"
    with np.errstate(all="ignore"):
        out = case.forward() if case.forward is not None else case.state
        case.backward(out)
        del out
    if method == "vmhwm":
        peak_kb = _proc_status_kb("VmHWM")
    else:
        import resource
        peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"status": "ok", "peak_bytes": (peak_kb - base_kb) * 1024,
                      "baseline_bytes": base_kb * 1024, "method": method}))


def describe_exit(code):
    if code is None:
        return "killed"
    if code < 0:
        import signal
        try:
            return f"signal {-code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


def measure_memory(script, workload_id, lib_name, quick, timeout):
    env = dict(os.environ)
    env.update(MEMORY_ENV)
    cmd = [sys.executable, script, "--_memory", workload_id, "--_lib", lib_name]
    if quick:
        cmd.append("--quick")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "error", "message": f"timed out after {timeout} s"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        err = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {"status": "error", "message": f"{describe_exit(p.returncode)}: {err}"}
    return json.loads(lines[-1])


# --------------------------------------------------------------------------------------------
# report: derived figures, table, JSON, plot
# --------------------------------------------------------------------------------------------
def metric_s(res, metric, stat="median_s"):
    """The median (or min) time the ratio compares, from a result record (None if unusable)."""
    if not res or res.get("status") != "ok" or not res.get("timing"):
        return None
    key = "bwd" if metric == "bwd" else "total"
    return res["timing"][key][stat]


def derive(wl):
    """Ratios, per-node figures and target verdicts for one workload entry (in place)."""
    metric = wl["metric"]
    res = wl["results"]
    lu, fl, to = (metric_s(res.get(n), metric) for n in LIBS)
    lu_m, fl_m, to_m = (metric_s(res.get(n), metric, "min_s") for n in LIBS)
    div = lambda a, b: a / b if a and b else None  # noqa: E731
    wl["ratios"] = {"lucid/torch": div(lu, to), "lucid/floor": div(lu, fl),
                    "torch/floor": div(to, fl), "metric": metric, "of": "medians",
                    "min": {"lucid/torch": div(lu_m, to_m), "lucid/floor": div(lu_m, fl_m),
                            "torch/floor": div(to_m, fl_m)}}
    nodes = wl.get("nodes")
    if nodes:
        pn = {}
        for name in LIBS:
            r = res.get(name)
            if r and r.get("status") == "ok" and r.get("timing"):
                t = r["timing"]
                pn[name] = {"bwd_ns": t["bwd"]["median_s"] * 1e9 / nodes,
                            "total_ns": (t["total"]["median_s"] * 1e9 / nodes
                                         if metric != "bwd" else None)}
        wl["per_node_ns"] = pn
    target = wl.get("target")
    if target:
        peer, limit = target["peer"], target["max"]
        ratio = wl["ratios"]["lucid/torch" if peer == "torch" else "lucid/floor"]
        target["ratio"] = ratio
        target["met"] = None if ratio is None else ratio <= limit
    mem = wl.get("memory")
    if mem:
        lm = mem.get("lucid", {}).get("peak_bytes")
        tm = mem.get("torch", {}).get("peak_bytes")
        mem["lucid<=torch"] = None if lm is None or tm is None else lm <= tm


def fmt_time(s):
    if s is None:
        return "-"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.1f} us"
    return f"{s * 1e9:.0f} ns"


def fmt_ratio(x):
    if x is None:
        return "-"
    return f"{x:.3g}"


def fmt_bytes(b):
    if b is None:
        return "-"
    return f"{b / 2**20:.1f} MiB"


def _cell_time(res, key):
    """'median (min)' for a timing key, or the status."""
    if res is None:
        return "-"
    st = res.get("status")
    if st != "ok":
        return st
    t = res.get("timing") or {}
    v = t.get(key)
    if v is None:
        return "-"
    return f"{fmt_time(v['median_s'])} ({fmt_time(v['min_s'])})"


def _table(headers, rows):
    widths = [max(len(str(r[i])) for r in [headers] + rows) for i in range(len(headers))]
    line = lambda r: "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)  # noqa: E731
                               for i, (c, w) in enumerate(zip(r, widths)))
    out = [line(headers), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    return "\n".join(out)


def format_report(report) -> str:
    wls = report["workloads"]
    have_torch = any((w["results"].get("torch") or {}).get("status") == "ok" for w in wls)
    lines = []
    env = report["env"]
    lines.append(f"lucid benchmarks  {env.get('date_utc', '')}  python {env.get('python')}  "
                 f"numpy {env.get('numpy')}  torch {env.get('torch') or 'absent'}  "
                 f"lucid {env.get('lucid') or '?'}  git {env.get('git') or '?'}")
    e = env.get("env", {})
    lines.append("threads: " + ", ".join(f"{k}={e.get(k)}" for k in THREAD_VARS[:3])
                 + f"; OPENBLAS_CORETYPE={e.get('OPENBLAS_CORETYPE')}"
                 + (f"; torch threads={env.get('torch_num_threads')}" if env.get("torch") else "")
                 + f"; mode={'quick' if report['config']['quick'] else 'full'}"
                 + f"; clock={report['config'].get('clock', 'wall')}")
    lines.append("")
    lines.append("Times: median (min) per repetition; fwd = building the graph, bwd = .backward(); "
                 "floor = the same math in NumPy by hand")
    headers = ["workload", "lucid fwd", "lucid bwd", "floor fwd+bwd"]
    if have_torch:
        headers += ["torch fwd", "torch bwd"]
    rows = []
    for w in wls:
        r = w["results"]
        row = [f"{w['id']} {w['name']}", _cell_time(r.get("lucid"), "fwd"),
               _cell_time(r.get("lucid"), "bwd"),
               _cell_time(r.get("numpy"), "bwd" if w["metric"] == "bwd" else "total")]
        if have_torch:
            row += [_cell_time(r.get("torch"), "fwd"), _cell_time(r.get("torch"), "bwd")]
        rows.append(row)
    lines.append(_table(headers, rows))
    lines.append("")

    lines.append("Derived: ratios of medians [of mins] (fwd+bwd; W6: bwd); per-node ns = median / "
                 "nodes (fwd+bwd | bwd); targets (BENCHMARKS.md) judged on medians")
    headers = ["workload", "lucid/torch", "lucid/floor", "target", "lucid ns/node",
               "floor ns/node"]
    if have_torch:
        headers.insert(3, "torch/floor")
        headers.append("torch ns/node")
    else:
        headers.remove("lucid/torch")
    any_mem = any(w.get("memory") for w in wls)
    if any_mem:
        headers.append("peak mem lucid | floor | torch")
    rows = []
    for w in wls:
        rt = w["ratios"]
        tg = w.get("target")
        if tg:
            verdict = "?" if tg.get("met") is None else ("met" if tg["met"] else "MISSED")
            tcell = f"<={tg['max']:g} vs {tg['peer']}: {verdict}"
            mem = w.get("memory") or {}
            if mem.get("lucid<=torch") is not None:
                tcell += "; mem<=torch: " + ("met" if mem["lucid<=torch"] else "MISSED")
        else:
            tcell = "-"
        pn = w.get("per_node_ns") or {}

        def node_cell(name):
            if not w.get("nodes"):
                return ""
            p = pn.get(name)
            if not p:
                return "-"
            tot = "-" if p["total_ns"] is None else f"{p['total_ns']:.0f}"
            return f"{tot} | {p['bwd_ns']:.0f}"
        mem = w.get("memory")
        if mem:
            mcell = " | ".join(
                fmt_bytes(mem[n]["peak_bytes"]) if mem.get(n, {}).get("status") == "ok"
                else (mem.get(n, {}).get("status") or "-") for n in LIBS)
        else:
            mcell = ""
        lucid_status = (w["results"].get("lucid") or {}).get("status")

        def ratio_cell(key):
            if lucid_status not in ("ok", None) and key.startswith("lucid"):
                return lucid_status
            if rt[key] is None:
                return "-"
            return f"{fmt_ratio(rt[key])} [{fmt_ratio(rt['min'][key])}]"
        lt, lf = ratio_cell("lucid/torch"), ratio_cell("lucid/floor")
        row = [f"{w['id']} {w['name']}", lt, lf, tcell, node_cell("lucid"), node_cell("numpy")]
        if have_torch:
            row.insert(3, ratio_cell("torch/floor"))
            row.append(node_cell("torch"))
        else:
            del row[1]
        if any_mem:
            row.append(mcell)
        rows.append(row)
    lines.append(_table(headers, rows))

    notes = []
    grouped = {}                                 # the same message for several workloads: once
    for w in wls:
        for name in LIBS:
            r = w["results"].get(name)
            if r and r.get("status") != "ok" and r.get("message"):
                grouped.setdefault((name, r["status"], r["message"]), []).append(w["id"])
        mem = w.get("memory") or {}
        for name in LIBS:
            m = mem.get(name)
            if m and m.get("status") != "ok" and m.get("message"):
                grouped.setdefault((name + " memory", m["status"], m["message"]),
                                   []).append(w["id"])
    for (name, status, message), ids in grouped.items():
        notes.append(f"  {','.join(ids)} {name}: {status}: {message}")
    noisy = []
    for w in wls:
        key = "bwd" if w["metric"] == "bwd" else "total"
        for name in LIBS:
            t = ((w["results"].get(name) or {}).get("timing") or {}).get(key)
            if t and t["median_s"] > 0:
                spread = (t["p75_s"] - t["p25_s"]) / t["median_s"]
                if spread > NOISY_IQR:
                    noisy.append(f"{w['id']} {name} {spread:.0%}")
    if noisy:
        notes.append(f"  noisy (interquartile range over median > {NOISY_IQR:.0%}): "
                     + ", ".join(noisy) + "; the machine was busy, ratios are less reliable"
                     + ("" if report["config"].get("clock") == "cpu" else
                        " (--clock cpu counts only this thread's CPU time)"))
    if any(w.get("memory") for w in wls):
        notes.append(f"  peak mem: {MEMORY_METHOD}")
    if any(w["metric"] == "bwd" for w in wls):
        notes.append("  W6: the leaf's .grad is set to None before every backward, outside the "
                     "timed region, for every library (so the timed backward allocates it)")
    if notes:
        lines.append("")
        lines.append("Notes:")
        lines += notes
    return "\n".join(lines)


def write_json(report, path):
    with open(path, "w") as f:
        json.dump(report, f, indent=2, default=_json_default)
        f.write("\n")


def _json_default(o):
    if isinstance(o, float) and not math.isfinite(o):
        return None
    return str(o)


def write_plot(report, path):
    """A bar chart of lucid/torch and lucid/floor per workload.  Returns a note or None."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib not importable: no plot written"
    wls = report["workloads"]
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    series = [("lucid/torch", "#1f77b4"), ("lucid/floor", "#ff7f0e"), ("torch/floor", "#bbbbbb")]
    labels = [f"{w['id']}\n{w['name']}\n({w['metric']})" for w in wls]
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(wls) + 2), 4.8))
    width = 0.27
    for k, (key, color) in enumerate(series):
        xs, ys = [], []
        for i, w in enumerate(wls):
            v = w["ratios"].get(key)
            if v is not None:
                xs.append(i + (k - 1) * width)
                ys.append(v)
        bars = ax.bar(xs, ys, width, label=key, color=color)
        for b, v in zip(bars, ys):
            ax.annotate(fmt_ratio(v), (b.get_x() + b.get_width() / 2, v), ha="center",
                        va="bottom", fontsize=7)
    for i, w in enumerate(wls):
        tg = w.get("target")
        if tg:
            k = 0 if tg["peer"] == "torch" else 1
            x = i + (k - 1) * width
            ax.plot([x - width / 2, x + width / 2], [tg["max"]] * 2, color="k", lw=2)
        st = (w["results"].get("lucid") or {}).get("status")
        if st and st != "ok":
            ax.annotate(f"lucid:\n{st}", (i, 1), ha="center", va="center", fontsize=8,
                        color="red")
    ax.axhline(1.0, color="gray", lw=0.8, ls="--")
    ax.set_yscale("log")
    ax.set_xticks(range(len(wls)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("ratio of medians (lower is better)")
    env = report["env"]
    ax.set_title(f"lucid vs PyTorch {env.get('torch') or '(absent)'} and the NumPy floor, "
                 f"1 thread  ({env.get('date_utc', '')[:10]})", fontsize=9)
    handles = [Patch(color=c, label=k) for k, c in series]
    handles.append(Line2D([], [], color="k", lw=2, label="lucid target"))
    ax.legend(handles=handles, fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None
