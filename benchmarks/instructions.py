"""Instruction-count guard for lucid's hot paths: W1, W4 and W6 counted under callgrind.

    python benchmarks/instructions.py            # count, compare with the baseline (1: worse)
    python benchmarks/instructions.py --update   # count, and rewrite the baseline
    python benchmarks/instructions.py --runs 2   # count twice: the run-to-run variation

Each workload's lucid case (the very ``setup`` that ``run.py`` times) is warmed up as the harness
does (its warm-up repetitions, one collection, one re-warm), then repeated; only the timed region
of each repetition (forward and backward, not the untimed ``reset``) is counted.  Collection is
switched on and off around that region by a tiny C helper built here against valgrind's
``callgrind.h`` and called through ctypes; callgrind runs with ``--instr-atstart=no
--collect-atstart=no`` and writes one dump per region, whose ``summary:`` line is its count.  The
helper's own cost (an empty region) is subtracted.  A workload's figure is the median over its
repetitions.  The measuring process runs with a minimal environment, PYTHONHASHSEED=0, one
thread per library and the cyclic GC enabled, as in the benchmark; an uncounted ``gc.collect()``
before each repetition starts the collector's cycle alike in all of them (else W4's repetitions
alternate by 7% with whether a collection falls on the live graph).  It first runs once outside
valgrind, so that every run under it reads the same .pyc files (compiling them shifts the heap's
layout, and the counts of small copies and reallocations with it).  Two runs of one build agree to
the instruction; another folder or other paths move them by up to about half a percent.

The comparison is with ``instructions_baseline.json`` (next to this file): beyond +5% fails
(exit 1), beyond -5% is reported as an improvement (suggesting ``--update``) and passes.  The
baseline records the versions it was made with (Python, NumPy, Cython, setuptools, the C
compiler, valgrind, the machine); in any other environment the counts mean nothing, so a
difference fails loudly.  Update the baseline deliberately, with the reason in the commit message,
in the pinned environment (``.ci/instructions --update``).  Exit status: 0 ok; 1 worse, no
baseline or another environment; 2 no valgrind or no C compiler; 3 the measuring process failed.
"""
import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)

WORKLOADS = ("w1_deep_chain", "w4_custom_function", "w6_backward_replay")
TOLERANCE = 0.05              # beyond +5% fails, beyond -5% suggests --update
REPS = 5                      # counted repetitions per workload
CALIBRATION = 3               # empty regions: the helper's own cost
BASELINE = os.path.join(_HERE, "instructions_baseline.json")
# The versions a count depends on; the baseline's must equal the current ones.
PINNED = ("python", "numpy", "Cython", "setuptools", "compiler", "valgrind", "machine")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
# The variables the measuring process inherits; any other one (PATH, HOME, PYTHON*, locales) is
# dropped: each one's strings shift the heap's layout, and with it some counts.
KEPT = ("PYTHONPATH", "LD_LIBRARY_PATH", "VALGRIND_LIB", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
EMPTY = "empty"               # the label of the calibration regions
TRIGGER = "desc: Trigger: Client Request: "

HELPER_C = r"""
#include <valgrind/callgrind.h>
/* Instrumentation on (a no-op when it already is); collection stays off. */
void icount_instrument(void) { CALLGRIND_START_INSTRUMENTATION; }
/* Counters to zero, collection on: the measured region starts. */
void icount_begin(void) { CALLGRIND_ZERO_STATS; CALLGRIND_TOGGLE_COLLECT; }
/* Collection off, then one dump of the region's counts named `label`. */
void icount_end(const char *label) { CALLGRIND_TOGGLE_COLLECT; CALLGRIND_DUMP_STATS_AT(label); }
/* Nonzero under valgrind. */
int icount_on_valgrind(void) { return RUNNING_ON_VALGRIND; }
"""


class GuardError(Exception):
    """The guard cannot measure here; ``status`` is the exit status."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


# --------------------------------------------------------------------------------------------
# pure logic: callgrind dumps, summaries, comparison, environment (tests/bench/test_instructions.py)
# --------------------------------------------------------------------------------------------
def region_label(workload, index):
    """The dump label of repetition ``index`` of ``workload`` ("W1/3")."""
    return f"{workload}/{index}"


def parse_dump(text):
    """(label, instructions) of one callgrind dump; label None unless a client request wrote it."""
    label, events, values = None, None, None
    for line in text.splitlines():
        if line.startswith(TRIGGER):
            label = line[len(TRIGGER):].strip()
        elif line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("summary:") or (line.startswith("totals:") and values is None):
            values = [int(v) for v in line.split()[1:]]
    if events is None or values is None or "Ir" not in events:
        raise ValueError("not a callgrind dump with an Ir summary")
    index = events.index("Ir")
    return label, (values[index] if index < len(values) else 0)


def counts_by_label(texts):
    """{label: instructions} of the client-request dumps among ``texts``."""
    counts = {}
    for text in texts:
        label, count = parse_dump(text)
        if label is not None:
            counts[label] = count
    return counts


def repetitions(counts, workload):
    """The counts of ``workload``'s repetitions, in order (labels "W1/0", "W1/1", ...)."""
    reps, index = [], 0
    while region_label(workload, index) in counts:
        reps.append(counts[region_label(workload, index)])
        index += 1
    return reps


def summarize(counts, meta):
    """Per workload: median instructions per repetition (the empty region's median subtracted),
    per unit (``meta``'s nodes), the net repetitions and their relative spread."""
    overhead = statistics.median(repetitions(counts, EMPTY) or [0])
    out = {}
    for wid, info in meta.items():
        reps = [c - overhead for c in repetitions(counts, wid)]
        if not reps:
            raise ValueError(f"no counted repetitions of {wid}")
        median = statistics.median(reps)
        out[wid] = {"name": info["name"], "unit": info["unit"], "nodes": info["nodes"],
                    "instructions": int(median), "per_unit": median / info["nodes"],
                    "reps": reps, "spread": (max(reps) - min(reps)) / median,
                    "overhead": int(overhead)}
    return out


def merge_runs(runs):
    """Several runs' summaries as one: the median of their figures per workload, and the largest
    relative difference between runs ("between_runs")."""
    merged = {}
    for wid in runs[0]:
        figures = [run[wid]["instructions"] for run in runs]
        median = statistics.median(figures)
        entry = dict(runs[0][wid], instructions=int(median),
                     per_unit=median / runs[0][wid]["nodes"],
                     between_runs=(max(figures) - min(figures)) / median, runs=figures)
        merged[wid] = entry
    return merged


def verdict(ratio, tolerance=TOLERANCE):
    """"WORSE" beyond +tolerance, "better" beyond -tolerance, else "ok"."""
    if ratio > 1.0 + tolerance:
        return "WORSE"
    if ratio < 1.0 - tolerance:
        return "better"
    return "ok"


def compare(current, baseline, tolerance=TOLERANCE):
    """One row per current workload: its count, the baseline's (None if it has none), the ratio
    and the verdict ("no baseline" when there is none)."""
    rows = []
    for wid, cur in current.items():
        base = baseline.get(wid, {}).get("instructions")
        ratio = cur["instructions"] / base if base else None
        rows.append({"workload": wid, "name": cur["name"], "instructions": cur["instructions"],
                     "per_unit": cur["per_unit"], "unit": cur["unit"], "baseline": base,
                     "ratio": ratio,
                     "verdict": "no baseline" if ratio is None else verdict(ratio, tolerance)})
    return rows


def environment_differences(current, recorded):
    """[(key, recorded, current)] for every pinned key whose versions differ."""
    return [(key, recorded.get(key), current.get(key)) for key in PINNED
            if recorded.get(key) != current.get(key)]


def exit_status(rows, env_diffs):
    """1 if the environment differs, a workload is WORSE or has no baseline; else 0."""
    failing = {"WORSE", "no baseline"}
    return 1 if env_diffs or any(r["verdict"] in failing for r in rows) else 0


def format_table(rows):
    """The comparison as a text table."""
    head = (f"{'workload':<22} {'instructions/rep':>16} {'per unit':>20} {'baseline':>14} "
            f"{'ratio':>7}  verdict")
    lines = [head, "-" * len(head)]
    for r in rows:
        base = f"{r['baseline']:,}" if r["baseline"] else "-"
        ratio = f"{r['ratio']:.4f}" if r["ratio"] is not None else "-"
        per = f"{r['per_unit']:,.0f}/{r['unit']}"
        lines.append(f"{r['workload'] + ' ' + r['name']:<22} {r['instructions']:>16,} "
                     f"{per:>20} {base:>14} {ratio:>7}  {r['verdict']}")
    return "\n".join(lines)


def make_baseline(current, env, info):
    """The baseline file's content."""
    return {"about": "instruction counts of benchmarks/instructions.py; update deliberately "
                     "(--update, in the pinned environment) with the reason in the commit",
            "environment": env, "info": info,
            "workloads": {wid: {k: cur[k] for k in ("name", "instructions", "per_unit", "unit",
                                                    "nodes", "reps")}
                          for wid, cur in current.items()}}


# --------------------------------------------------------------------------------------------
# the environment, the helper, the measuring process (run under valgrind)
# --------------------------------------------------------------------------------------------
def _first_line(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return (out.stdout.strip().splitlines() or [None])[0]


def _version(dist):
    from importlib import metadata
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def compiler():
    """The C compiler command that builds extensions here (CC, else Python's configured one)."""
    return (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()


def environment():
    """The versions a count depends on (the keys of PINNED)."""
    return {"python": platform.python_version(), "numpy": _version("numpy"),
            "Cython": _version("Cython"), "setuptools": _version("setuptools"),
            "compiler": _first_line(compiler() + ["--version"]),
            "valgrind": _first_line(["valgrind", "--version"]), "machine": platform.machine()}


def build_helper(folder):
    """Compile HELPER_C into ``folder``; returns the shared library's path."""
    cc = compiler()
    if shutil.which(cc[0]) is None:
        raise GuardError(f"no C compiler ({cc[0]}) to build the callgrind helper", 2)
    src, lib = os.path.join(folder, "icount.c"), os.path.join(folder, "libicount.so")
    with open(src, "w") as f:
        f.write(HELPER_C)
    out = subprocess.run(cc + ["-O2", "-shared", "-fPIC", "-o", lib, src],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise GuardError("the callgrind helper does not compile (is valgrind's callgrind.h "
                         "installed? Debian: apt-get install valgrind):\n" + out.stderr.strip(), 2)
    return lib


def child_environment():
    """The measuring process's environment: only the KEPT variables of this one (the size of the
    environment moves the counts), PYTHONHASHSEED=0, one thread per library."""
    env = {k: os.environ[k] for k in KEPT if k in os.environ}
    env.update(PYTHONHASHSEED="0", **dict.fromkeys(THREAD_VARS, "1"))
    return env


def measuring_command(helper, folder, reps):
    """The command line of the measuring process (this script with --_measure)."""
    return [os.path.abspath(sys.executable), os.path.abspath(__file__), "--_measure", helper,
            "--_meta", os.path.join(folder, "meta.json"), "--reps", str(reps)]


def run_child(cmd):
    """Run ``cmd`` in the measuring environment; GuardError (3) with its output's tail if it
    fails."""
    proc = subprocess.run(cmd, env=child_environment(), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise GuardError(f"the measuring process failed (exit {proc.returncode}):\n"
                         + "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-30:]), 3)


def prime(helper, folder, reps):
    """The measuring process once outside valgrind: the .pyc files it writes are then read by
    every counted run (a run that compiles them counts differently afterwards)."""
    run_child(measuring_command(helper, folder, reps) + ["--_native"])


def run_valgrind(helper, folder, reps):
    """One measuring process under callgrind; returns (summary, info)."""
    out_base = os.path.join(folder, "callgrind.out")
    run_child([shutil.which("valgrind"), "--tool=callgrind", "--instr-atstart=no",
               "--collect-atstart=no", f"--callgrind-out-file={out_base}",
               f"--log-file={os.path.join(folder, 'vg.log')}"]
              + measuring_command(helper, folder, reps))
    texts = []
    for name in sorted(os.listdir(folder)):
        if name.startswith("callgrind.out"):
            with open(os.path.join(folder, name)) as f:
                texts.append(f.read())
            os.unlink(os.path.join(folder, name))
    with open(os.path.join(folder, "meta.json")) as f:
        meta = json.load(f)
    return summarize(counts_by_label(texts), meta["workloads"]), meta["info"]


def harness():
    """benchmarks/_harness.py (the source tree put on sys.path, after any installed lucid)."""
    if _ROOT not in sys.path:
        sys.path.append(_ROOT)
    from benchmarks import _harness
    return _harness


def counted_rep(case, probe, label):
    """One repetition as the harness's ``sample`` runs it, with collection on where it times;
    an uncounted ``gc.collect()`` first puts the cyclic GC at the start of its cycle."""
    case.reset()
    gc.collect()
    probe.icount_begin()
    out = case.forward() if case.forward is not None else case.state
    if case.backward is not None:
        case.backward(out)
    probe.icount_end(label.encode())
    del out


def measure(helper, meta_path, reps, native=False):
    """The measuring process (under callgrind): calibration, then every workload's reps.
    ``native``: the same run outside valgrind (its client requests do nothing), which leaves
    every .pyc the counted run will read in place."""
    import ctypes
    import importlib
    h = harness()
    probe = ctypes.CDLL(helper)
    if not native and not probe.icount_on_valgrind():
        raise GuardError("--_measure runs under valgrind only (use the script without it)", 2)
    lucid, why = h.load_lib("lucid")
    if lucid is None:
        raise GuardError(why, 3)
    import numpy as np
    probe.icount_instrument()
    for index in range(-1, CALIBRATION):       # -1: a first call that binds the symbols
        probe.icount_begin()
        probe.icount_end(region_label(EMPTY, index).encode())
    meta = {}
    with np.errstate(all="ignore"):            # as run_workload (W4 overflows to inf)
        for name in WORKLOADS:
            mod = importlib.import_module("benchmarks." + name)
            case = mod.setup(lucid, False)
            for _ in range(h.FULL["warmup"]):
                h.run_once(case)
            gc.collect()
            h.run_once(case)
            for index in range(reps):
                counted_rep(case, probe, region_label(mod.ID, index))
            if any(g is None for g in case.grads()):
                raise GuardError(f"{mod.ID}: a leaf got no gradient", 3)
            meta[mod.ID] = {"name": mod.NAME, "nodes": mod.NODES, "unit": mod.NODE_UNIT}
            del case
            gc.collect()
    if native:
        return
    info = {"lucid": getattr(lucid.mod, "__version__", None)}
    with open(meta_path, "w") as f:
        json.dump({"workloads": meta, "info": info}, f)


# --------------------------------------------------------------------------------------------
# the command
# --------------------------------------------------------------------------------------------
def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="python benchmarks/instructions.py",
        description="Instruction counts of W1, W4 and W6 under callgrind, against the committed "
                    "baseline (fails beyond +5%%).")
    p.add_argument("--update", action="store_true", help="rewrite the baseline with these counts")
    p.add_argument("--baseline", default=BASELINE, help="the baseline file (default: %(default)s)")
    p.add_argument("--reps", type=int, default=REPS, help="counted repetitions per workload")
    p.add_argument("--runs", type=int, default=1,
                   help="measuring processes (their median; >1 shows the run-to-run variation)")
    p.add_argument("--_measure", help=argparse.SUPPRESS)
    p.add_argument("--_meta", help=argparse.SUPPRESS)
    p.add_argument("--_native", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def read_baseline(path):
    """The baseline file's content, or None when there is none."""
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def report_counts(current):
    """Per workload: the repetitions, their spread and (several runs) the run-to-run variation."""
    for wid, cur in current.items():
        line = (f"{wid}: overhead {cur['overhead']:,} subtracted; reps "
                f"{', '.join(f'{c:,.0f}' for c in cur['reps'])} (spread {cur['spread']:.4%})")
        if "runs" in cur:
            line += (f"; runs {', '.join(f'{c:,}' for c in cur['runs'])} "
                     f"(between runs {cur['between_runs']:.4%})")
        print(line)


def loud(lines):
    """Print ``lines`` between bars of "!", each marked "!! "."""
    bar = "!" * 78
    print("\n".join([bar] + [f"!! {ln}" for ln in lines] + [bar]))


def guard(args):
    """Measure, print, compare (or update); returns the exit status."""
    if shutil.which("valgrind") is None:
        raise GuardError("valgrind is not installed: the instruction-count guard needs it "
                         "(Debian: apt-get install valgrind; CI: .ci/instructions)", 2)
    env = environment()
    with tempfile.TemporaryDirectory(prefix="lucid-icount-") as folder:
        helper = build_helper(folder)
        prime(helper, folder, args.reps)
        results = [run_valgrind(helper, folder, args.reps) for _ in range(args.runs)]
    current = merge_runs([r[0] for r in results]) if args.runs > 1 else results[0][0]
    h = harness()
    info = dict(results[0][1], git=h._git_describe(), cpu=h._cpu_model(), reps=args.reps)
    print(f"environment: {', '.join(f'{k} {env[k]}' for k in PINNED)}")
    report_counts(current)
    if args.update:
        with open(args.baseline, "w") as f:
            json.dump(make_baseline(current, env, info), f, indent=1, sort_keys=True)
            f.write("\n")
        print(format_table(compare(current, {})))
        print(f"baseline written: {args.baseline} (commit it with the reason)")
        return 0
    recorded = read_baseline(args.baseline)
    if recorded is None:
        print(format_table(compare(current, {})))
        loud([f"no baseline at {args.baseline}: make one with --update in the pinned "
              "environment (.ci/instructions --update)"])
        return 1
    rows = compare(current, recorded["workloads"])
    print(format_table(rows))
    diffs = environment_differences(env, recorded["environment"])
    if diffs:
        loud(["this environment is not the baseline's: the counts cannot be compared"] +
             [f"{key}: baseline {old!r}, here {new!r}" for key, old, new in diffs] +
             ["run it in the pinned environment (.ci/instructions, benchmarks/constraints.txt)"])
    for r in rows:
        if r["verdict"] == "WORSE":
            loud([f"{r['workload']}: {r['ratio'] - 1:+.2%} instructions per repetition, beyond "
                  f"+{TOLERANCE:.0%}"])
        elif r["verdict"] == "better":
            print(f"{r['workload']}: {r['ratio'] - 1:+.2%}: an improvement beyond "
                  f"{TOLERANCE:.0%}; consider --update (with the reason in the commit)")
    return exit_status(rows, diffs)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args._measure:
            measure(args._measure, args._meta, args.reps, args._native)
            return 0
        return guard(args)
    except GuardError as e:
        print(f"instructions.py: {e}", file=sys.stderr)
        return e.status


if __name__ == "__main__":
    sys.exit(main())
