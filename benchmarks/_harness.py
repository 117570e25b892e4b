"""Shared benchmark harness: libraries, cases, the interleaved timing loop, checks, the worker.

Every workload module timed here (``w1_deep_chain.py`` ...) exposes:

    ID = "W1"                  # short id, unique
    NAME = "deep chain"        # short name for the table
    DESCRIPTION = "..."        # one line: the graph
    METRIC = "fwd+bwd"         # label of what is timed: "fwd+bwd", "bwd" (W6), "solve" (W11)
    NODES = 2000               # denominator for per-node nanoseconds, or None
    NODE_UNIT = "node"         # what one NODES unit is ("op", "Function call", ...)
    TARGETS = {"lucid/torch": 0.05}   # ratio name -> the most it may be (benchmarks/README.md)
    MEMORY = False             # True: also measure peak memory in a fresh process per library
    RTOL, ATOL = 1e-3, 1e-5    # gradient check tolerance (optional, these are the defaults)
    POLICY = {"quick": {...}, "full": {...}}   # optional: the repetition policy (as QUICK/FULL)

    def setup(lib, quick) -> Case, or {variant: Case} (the first variant is the main one; a
                              variant may be a NotAvailable instance: its cell says n/a)

Optional: ``EXTRA_RATIOS`` (name, numerator cell, denominator cell) beyond lucid/torch,
lucid/floor and torch/floor; ``reference(variant)`` giving the expected gradients when there is
no NumPy floor for a variant; ``check(got, ref) -> (ok, message)`` replacing the gradient
comparison.  A cell is a library name ("lucid", "numpy", "torch"), or "lucid:grad" for a variant.

``lib`` is a :class:`Lib` (``lib.name`` is "lucid", "numpy" or "torch", ``lib.mod`` the module).
``setup`` builds the seeded leaves (outside any timed region) and returns :class:`Case` objects:
``forward()`` builds the graph and returns the loss (or whatever ``backward`` needs),
``backward(out)`` runs the backward pass, ``grads()`` returns the leaves' gradients as NumPy arrays,
``reset()`` drops the leaves' gradients (run before every repetition, outside the timed region).
Either timed phase may be None: W6 times backward alone on ``state``, W11 one whole solve as its
forward.  ``setup`` raises :class:`NotAvailable` when the library lacks a feature the workload
needs (the cell shows "n/a" and the reason).

This module must not import numpy at module level before ``pin_threads()`` has run: the entry
point (run.py) calls it first thing.
"""
import datetime
import gc
import json
import os
import platform
import subprocess
import sys
import time
import traceback

LIBS = ("lucid", "numpy", "torch")          # the order of columns
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
SEED = 1234
CLOCKS = {
    "wall": time.perf_counter_ns,   # the default; what a user waits for
    "cpu": time.thread_time_ns,     # this thread's CPU time: not inflated by preemption
}
_clock = CLOCKS["wall"]


def set_clock(name):
    global _clock
    _clock = CLOCKS[name]


# Repetition policy.  A sample is one reset (untimed) + forward + backward, each phase timed.
FULL = dict(warmup=3, min_repeats=20, min_time=2.0, max_time=30.0)
QUICK = dict(warmup=1, min_repeats=3, min_time=0.15, max_time=3.0)


def pin_threads():
    """One intra-op thread for every library.  Must run before numpy (or torch) is imported."""
    for var in THREAD_VARS:
        os.environ[var] = "1"


def progress(msg):
    print(msg, file=sys.stderr, flush=True)


def first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def describe(exc):
    return f"{type(exc).__name__}: {first_line(exc)}"


class NotAvailable(Exception):
    """The library lacks something this workload needs (shown as "n/a: reason")."""


class Lib:
    """A library under test.  ``mod`` is the imported module (numpy for the floor)."""

    def __init__(self, name, mod):
        self.name = name
        self.mod = mod

    def const(self, arr):
        """A tensor holding a copy of the NumPy array ``arr`` (the array itself for the floor)."""
        import numpy as np
        arr = np.array(arr, copy=True)
        return {"torch": lambda: self.mod.from_numpy(arr), "lucid": lambda: self.mod.tensor(arr),
                "numpy": lambda: arr}[self.name]()

    def leaf(self, arr):
        """Like :meth:`const`, requiring grad."""
        t = self.const(arr)
        return t if self.name == "numpy" else t.requires_grad_(True)

    @staticmethod
    def to_numpy(t):
        """A tensor (or None) as a NumPy array copy."""
        import numpy as np
        return None if t is None else np.array(t.detach().numpy(), copy=True)


def forward_ad(lib):
    """The library's forward-mode module (``lucid.autograd.forward_ad`` or
    ``torch.autograd.forward_ad``); NotAvailable when it has none."""
    import importlib
    try:
        return importlib.import_module(lib.name + ".autograd.forward_ad")
    except ImportError as e:
        raise NotAvailable(f"{lib.name} has no forward_ad ({first_line(e)})") from None


def func_vmap(lib):
    """The library's ``func.vmap`` (``torch.func.vmap``; ``lucid.func.vmap`` once it exists);
    NotAvailable when it has none."""
    vmap = getattr(getattr(lib.mod, "func", None), "vmap", None)
    if vmap is None:
        raise NotAvailable(f"{lib.name}.func.vmap does not exist (yet)")
    return vmap


def call_case(lib, call):
    """A Case timing one call (the "fwd" column, no backward): ``call()`` returns a list of
    tensors (arrays for the floor), which are what the check compares."""
    import numpy as np
    box = {}
    as_numpy = (lambda a: np.array(a, copy=True)) if lib.name == "numpy" else lib.to_numpy

    def forward():
        box["out"] = call()

    return Case(forward, None, lambda: [as_numpy(t) for t in box["out"]], box.clear)


def load_lib(name):
    """Import a library; returns (Lib or None, reason-if-None)."""
    try:
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
        mod = __import__(name)
        if name == "lucid" and getattr(mod, "__file__", None) is None:
            return None, (f"lucid is not built: only the source folder "
                          f"{', '.join(getattr(mod, '__path__', []))} was found "
                          f"(build it in place or pip install -e . in the repository)")
        return Lib(name, mod), None
    except Exception as e:                       # noqa: BLE001 - any import failure is reported
        return None, f"import {name} failed: {describe(e)}"


def env_info(libs):
    """The environment as seen by a worker process, for the JSON."""
    import numpy as np
    info = {
        "python": sys.version.split()[0], "executable": sys.executable,
        "platform": platform.platform(), "cpu": _cpu_model(), "cpu_count": os.cpu_count(),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "numpy": np.__version__, "git": _git_describe(),
        "env": {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") +
                THREAD_VARS},
    }
    try:
        import threadpoolctl
        info["threadpools"] = [{k: p.get(k) for k in ("internal_api", "version", "num_threads",
                                                      "architecture")}
                               for p in threadpoolctl.threadpool_info()]
    except ImportError:
        pass
    t, lu = libs.get("torch"), libs.get("lucid")
    info["torch"] = t.mod.__version__ if t else None
    if t:
        info["torch_threads"] = [t.mod.get_num_threads(), t.mod.get_num_interop_threads()]
    if lu:
        info["lucid"] = getattr(lu.mod, "__version__", None)
        info["lucid_file"] = lu.mod.__file__
    return info


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            return next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or None


def _git_describe():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        out = subprocess.run(["git", "-C", root, "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


# --------------------------------------------------------------------------------------------
# cases, timing, checks
# --------------------------------------------------------------------------------------------
class Case:
    """One thing to time for one library."""

    def __init__(self, forward, backward, grads, reset=lambda: None, state=None):
        self.forward = forward      # () -> out, or None: backward alone is timed on ``state``
        self.backward = backward    # (out) -> None, or None: forward alone is timed
        self.grads = grads          # () -> list of np.ndarray (what the check compares)
        self.reset = reset          # () -> None, outside the timed region
        self.state = state

    def phases(self):
        return [p for p, f in (("fwd", self.forward), ("bwd", self.backward)) if f is not None]


def autograd_case(lib, leaves, forward, backward=None, state=None):
    """A Case for lucid or torch: the ``leaves``' ``.grad`` are checked, and set to None before
    every repetition (so every timed backward allocates them afresh)."""
    def reset():
        for t in leaves:
            t.grad = None

    return Case(forward, backward or (lambda out: out.backward()),
                lambda: [lib.to_numpy(t.grad) for t in leaves], reset, state)


def numpy_case(forward, backward, state=None):
    """A Case for the NumPy floor: ``forward()`` returns what the hand-written ``backward(saved)``
    needs; ``backward`` returns the list of gradients."""
    box = {}
    return Case(forward, lambda saved: box.update(grads=backward(saved)),
                lambda: box.get("grads"), box.clear, state)


def run_once(case):
    """One untimed repetition; returns the gradients."""
    case.reset()
    out = case.forward() if case.forward is not None else case.state
    if case.backward is not None:
        case.backward(out)
    del out
    return case.grads()


def sample(case, into):
    """One timed repetition, appending nanoseconds per phase to ``into`` (phase -> list)."""
    case.reset()
    clock = _clock
    t0 = clock()
    out = case.forward() if case.forward is not None else case.state
    t1 = clock()
    if case.backward is not None:
        case.backward(out)
    t2 = clock()
    del out
    if case.forward is not None:
        into["fwd"].append(t1 - t0)
    if case.backward is not None:
        into["bwd"].append(t2 - t1)
    return t2 - t0


def time_cases(cases, policy, on_error, mark=lambda cell, phase: None):
    """Time every case, round-robin in short batches so that drift hits all cells alike.

    ``cases``: {cell: Case}.  Returns {cell: {phase: [ns, ...]}}.  A case that raises is dropped
    and reported through ``on_error(cell, exc)``.  Warm-up first, then a collection (outside any
    timed region) and one untimed repetition each to re-warm; then each cell repeats until it has
    ``min_repeats`` samples and ``min_time`` seconds of timed work (or ``max_time``).  There is no
    collection between repetitions (benchmarks/README.md, "What is measured").
    """
    samples = {cell: {p: [] for p in case.phases()} for cell, case in cases.items()}
    spent = dict.fromkeys(cases, 0)
    live = dict(cases)

    def guarded(cell, fn):
        try:
            fn()
        except Exception as e:                   # noqa: BLE001 - reported, the run goes on
            on_error(cell, e)
            live.pop(cell)
            samples.pop(cell)

    for cell, case in list(live.items()):
        mark(cell, "warm-up")
        guarded(cell, lambda c=case: [run_once(c) for _ in range(policy["warmup"])])
    gc.collect()
    for cell, case in list(live.items()):
        guarded(cell, lambda c=case: run_once(c))

    def enough(cell):
        n = len(next(iter(samples[cell].values())))
        return (n >= policy["min_repeats"] and spent[cell] >= policy["min_time"] * 1e9) \
            or spent[cell] >= policy["max_time"] * 1e9

    def batch(cell, case):
        start = spent[cell]
        while spent[cell] - start < policy["min_time"] * 1e9 / 5 and not enough(cell):
            spent[cell] += sample(case, samples[cell])

    while any(not enough(cell) for cell in live):
        for cell, case in list(live.items()):
            if not enough(cell):
                mark(cell, "timing")
                guarded(cell, lambda c=cell, k=case: batch(c, k))
    return samples


def compare(got, ref, rtol, atol):
    """Compare lists of gradient arrays (inf equals inf).  Returns (ok, message)."""
    import numpy as np
    if got is None or len(got) != len(ref):
        return False, f"expected {len(ref)} gradients, got {None if got is None else len(got)}"
    for i, (g, r) in enumerate(zip(got, ref)):
        if g is None or g.shape != r.shape or g.dtype != r.dtype:
            what = "None" if g is None else f"{g.dtype}{list(g.shape)}"
            return False, f"gradient {i}: {what}, expected {r.dtype}{list(r.shape)}"
        finite = np.abs(r[np.isfinite(r)])
        scale = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
        try:
            np.testing.assert_allclose(g.astype(np.float64), r.astype(np.float64), rtol=rtol,
                                       atol=atol * scale)
        except AssertionError as e:
            detail = "; ".join(ln.strip() for ln in str(e).splitlines()[1:5] if ln.strip())
            return False, f"gradient {i}: {detail}"
    return True, "matches the reference"


# --------------------------------------------------------------------------------------------
# worker: runs workloads, writes one JSON record per line
# --------------------------------------------------------------------------------------------
def cell_name(lib, variant, main):
    return lib if variant == main else f"{lib}:{variant}"


def run_workload(mod, libs, load_errors, quick, emit, head, skip=()):
    """Measure one workload for every library and variant; records go to ``emit`` as they
    complete.  The floor is set up first: it is the reference."""
    import numpy as np
    rtol, atol = getattr(mod, "RTOL", 1e-3), getattr(mod, "ATOL", 1e-5)
    check = getattr(mod, "check", lambda got, ref: compare(got, ref, rtol, atol))
    progress(f"{head}: measuring ..." + (f" (again, without {', '.join(sorted(skip))})"
                                          if skip else ""))
    t_start = time.perf_counter()
    results = {}

    def mark(cell, phase):
        emit({"type": "at", "workload": mod.ID, "lib": cell, "phase": phase})

    def record(cell, status, message=None, **extra):
        results[cell] = {"type": "result", "workload": mod.ID, "lib": cell, "status": status,
                         "message": message, **extra}
        emit(results[cell])
        if status in ("error", "WRONG") and cell.startswith("lucid"):
            progress(f"{head}: {cell} {status}: {message}")

    def failed(cell, e):
        record(cell, "error", describe(e), traceback=traceback.format_exc(limit=-4))

    cases, refs = {}, {}
    with np.errstate(all="ignore"):
        for name in ("numpy", "torch", "lucid"):
            if name in skip:                     # a rerun after this library crashed
                continue
            if name not in libs:
                record(name, "n/a" if name == "torch" else "error", load_errors.get(name))
                continue
            mark(name, "setup")
            try:
                made = mod.setup(libs[name], quick)
            except NotAvailable as e:
                record(name, "n/a", str(e))
                continue
            except Exception as e:               # noqa: BLE001 - reported, the run goes on
                failed(name, e)
                continue
            made = made if isinstance(made, dict) else {"main": made}
            main = next(iter(made))
            for variant, case in made.items():
                cell = cell_name(name, variant, main)
                if isinstance(case, NotAvailable):
                    record(cell, "n/a", str(case))
                    continue
                mark(cell, "check")
                try:                            # two untimed repetitions, both checked
                    got = [run_once(case), run_once(case)]
                except Exception as e:           # noqa: BLE001
                    failed(cell, e)
                    continue
                if name == "numpy":
                    refs[variant] = got[0]
                elif variant not in refs and hasattr(mod, "reference"):
                    refs[variant] = mod.reference(variant)
                ref = refs.get(variant)
                if name == "numpy" or ref is None:
                    ok, msg = True, "the reference" if name == "numpy" else "no reference"
                else:
                    ok, msg = check(got[0], ref)
                if ok and ref is not None and name != "numpy":
                    ok, msg = check(got[1], ref)
                    msg = msg if ok else "second repetition: " + msg
                if not ok:
                    progress(f"{'!' * 78}\n!! {mod.ID} {cell}: WRONG: {msg}\n{'!' * 78}")
                cases[cell] = (case, ok, msg)

        errors = {}                              # called inside the except: format_exc works
        policy = getattr(mod, "POLICY", {}).get("quick" if quick else "full") or (
            QUICK if quick else FULL)
        samples = time_cases({c: v[0] for c, v in cases.items()}, policy,
                             lambda c, e: errors.setdefault(c, (describe(e),
                                                                traceback.format_exc(limit=-4))),
                             mark)
    for cell, (case, ok, msg) in cases.items():
        if cell in errors:
            record(cell, "error", errors[cell][0], traceback=errors[cell][1])
        else:
            record(cell, "ok" if ok else "WRONG", None if ok else msg, check=msg,
                   samples={p + "_ns": v for p, v in samples[cell].items()})
    parts = [f"{cell} {r['status']}" if "samples" not in r else
             f"{cell} {np.median(np.sum(list(r['samples'].values()), axis=0)) / 1e6:.3g} ms"
             for cell, r in results.items()]
    if len(parts) > 6:                           # a table of cells (W15): counts, not a list
        counts = {}
        for r in results.values():
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        parts = [f"{len(results)} cells: " + ", ".join(f"{v} {k}" for k, v in counts.items())]
    progress(f"{head}: {', '.join(parts)}  ({time.perf_counter() - t_start:.1f} s)")
    gc.collect()


def worker_main(items, quick, out_path):
    """Child process: ``items`` is [(index, count, module, skipped libraries)]."""
    libs, load_errors = {}, {}
    for name in ("numpy", "torch", "lucid"):
        lib, why = load_lib(name)
        if lib is None:
            load_errors[name] = why
        else:
            libs[name] = lib
    with open(out_path, "a") as out:
        def emit(record):
            out.write(json.dumps(record) + "\n")
            out.flush()
        emit({"type": "env", "env": env_info(libs)})
        for index, count, mod, skip in items:
            emit({"type": "start", "workload": mod.ID})
            run_workload(mod, libs, load_errors, quick, emit,
                         f"[{index}/{count}] {mod.ID} {mod.NAME}", skip)
            emit({"type": "end", "workload": mod.ID})


# --------------------------------------------------------------------------------------------
# fresh processes: peak memory (W5), one JSON line back
# --------------------------------------------------------------------------------------------
MEMORY_METHOD = ("peak RSS growth during one forward+backward, fresh process per library: "
                 "Linux VmHWM reset through /proc/self/clear_refs after imports and leaves, "
                 "minus VmRSS at that point; glibc MALLOC_MMAP_THRESHOLD_=131072 so that freed "
                 "large buffers go back to the OS")
FRESH_ENV = {"MALLOC_MMAP_THRESHOLD_": "131072"}


def proc_status_kb(field):
    """A field of /proc/self/status in KiB (Linux only; OSError elsewhere)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(field)


def memory_main(mod, lib_name, quick):
    """Child process: the peak memory of one forward+backward of ``mod``."""
    lib, why = load_lib(lib_name)
    if lib is None:
        return {"status": "n/a" if lib_name == "torch" else "error", "message": why}
    import numpy as np
    try:
        case = mod.setup(lib, quick)
    except NotAvailable as e:
        return {"status": "n/a", "message": str(e)}
    case.reset()
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")                             # resets VmHWM to the current RSS
    base_kb = proc_status_kb("VmRSS")
    with np.errstate(all="ignore"):
        run_once(case)
    return {"status": "ok", "peak_bytes": (proc_status_kb("VmHWM") - base_kb) * 1024,
            "baseline_bytes": base_kb * 1024}


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


def run_fresh(cmd, timeout, extra_env=None):
    """Run a child that prints one JSON line last; returns that record, or an error record."""
    env = dict(os.environ, **FRESH_ENV, **(extra_env or {}))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "error", "message": f"timed out after {timeout:.0f} s"}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        err = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {"status": "error", "message": f"{describe_exit(p.returncode)}: {err}"}
    return json.loads(lines[-1])
