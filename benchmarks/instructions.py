"""Instruction-count guard for lucid's hot paths: W1, W4, W6, W14 and W15's ops under callgrind.

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
repetitions.  W14 is counted at its 1,000-op variant ("1e3", a figure per op): its main
variant's 10,000 ops would take ten times as long under callgrind.  W15's table is counted
per op at (4,) float32, after the workloads, in the same process: the ops' cases are warmed up
together (as the harness warms the table's cells), then one collection, then per op one re-warm
and ``OP_REPS`` counted repetitions of its case (``CALLS`` calls of the op, each with its
backward: the ``fwd`` that run.py times).  An op's figure is per call, compared with its own
entry of the baseline, so a regression of one op shows by name (``--op-reps 0``: no op).

The measuring process runs with a minimal environment, PYTHONHASHSEED=0, one thread per library
and the cyclic GC enabled, as in the benchmark; an uncounted ``gc.collect()`` before each
repetition starts the collector's cycle alike in all of them (else W4's repetitions alternate by
7% with whether a collection falls on the live graph).  It first runs once outside valgrind, so
that every run under it reads the same .pyc files (compiling them shifts the heap's layout, and
the counts of small copies and reallocations with it).  Two runs of one build agree to the
instruction; another folder or other paths move them by up to about half a percent.  The
repetitions of one op differ by at most about 0.3% (fewer repetitions than a workload's suffice).

The comparison is with ``instructions_baseline.json`` (next to this file): beyond +5% fails
(exit 1), beyond -5% is reported as an improvement (suggesting ``--update``) and passes; a
workload or op that the baseline lacks, or one it has that is no longer counted, fails too.  The
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

# The workloads counted: (module, the variant of its setup counted, its NODES); None: the
# setup's only case and the module's NODES.  W14 at 1,000 ops (its "1e3" variant).
WORKLOADS = (("w1_deep_chain", None, None), ("w4_custom_function", None, None),
             ("w6_backward_replay", None, None), ("w14_mixed_ops", "1e3", 1_000))
OP_TABLE = "w15_op_table"     # the per-op table: each op counted at (OP_SIZE,) float32
OP_ID = "W15"
OP_SIZE = 4
TOLERANCE = 0.05              # beyond +5% fails, beyond -5% suggests --update
REPS = 5                      # counted repetitions per workload
OP_REPS = 3                   # counted repetitions per op
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
    """The dump label of repetition ``index`` of ``workload`` ("W1/3", "W15:add/0")."""
    return f"{workload}/{index}"


def op_key(op):
    """The key of an op of the per-op table among the counts ("W15:add")."""
    return f"{OP_ID}:{op}"


def display(key):
    """A key as the tables and messages name it ("W1", "W15 add")."""
    return key.replace(":", " ", 1)


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
    """Per workload (or op): median instructions per repetition (the empty region's median
    subtracted), per unit (``meta``'s nodes), the net repetitions and their relative spread;
    ``kind`` "op" for the per-op table's rows, else "workload"."""
    overhead = statistics.median(repetitions(counts, EMPTY) or [0])
    out = {}
    for wid, info in meta.items():
        reps = [c - overhead for c in repetitions(counts, wid)]
        if not reps:
            raise ValueError(f"no counted repetitions of {wid}")
        median = statistics.median(reps)
        out[wid] = {"name": info["name"], "unit": info["unit"], "nodes": info["nodes"],
                    "kind": info.get("kind", "workload"),
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
    """One row per current workload (or op): its count, the baseline's (None if it has none),
    the ratio and the verdict ("no baseline" when there is none); then one row per baseline
    entry no longer counted (verdict "not counted").  ``baseline``: as ``baseline_entries``."""
    rows = []
    for wid, cur in current.items():
        entry = baseline.get(wid, {})
        base = entry.get("instructions")
        ratio = cur["instructions"] / base if base else None
        rows.append({"workload": wid, "name": cur["name"], "kind": cur["kind"],
                     "instructions": cur["instructions"], "per_unit": cur["per_unit"],
                     "unit": cur["unit"], "baseline": base,
                     "base_per_unit": base / entry["nodes"] if base else None, "ratio": ratio,
                     "verdict": "no baseline" if ratio is None else verdict(ratio, tolerance)})
    for wid, entry in baseline.items():
        if wid not in current:
            rows.append({"workload": wid, "name": entry["name"],
                         "kind": "op" if wid.startswith(op_key("")) else "workload",
                         "instructions": None, "per_unit": None, "unit": entry["unit"],
                         "baseline": entry["instructions"],
                         "base_per_unit": entry["instructions"] / entry["nodes"], "ratio": None,
                         "verdict": "not counted"})
    return rows


def environment_differences(current, recorded):
    """[(key, recorded, current)] for every pinned key whose versions differ."""
    return [(key, recorded.get(key), current.get(key)) for key in PINNED
            if recorded.get(key) != current.get(key)]


def exit_status(rows, env_diffs):
    """1 if the environment differs, a workload (or op) is WORSE, has no baseline or is no longer
    counted; else 0."""
    failing = {"WORSE", "no baseline", "not counted"}
    return 1 if env_diffs or any(r["verdict"] in failing for r in rows) else 0


def _figure(value, spec=","):
    return "-" if value is None else format(value, spec)


def format_table(rows):
    """The workloads' comparison as a text table."""
    head = (f"{'workload':<26} {'instructions/rep':>16} {'per unit':>20} {'baseline':>14} "
            f"{'ratio':>7}  verdict")
    lines = [head, "-" * len(head)]
    for r in rows:
        if r["kind"] != "workload":
            continue
        per = "-" if r["per_unit"] is None else f"{r['per_unit']:,.0f}/{r['unit']}"
        lines.append(f"{r['workload'] + ' ' + r['name']:<26} {_figure(r['instructions']):>16} "
                     f"{per:>20} {_figure(r['baseline']):>14} {_figure(r['ratio'], '.4f'):>7}  "
                     f"{r['verdict']}")
    return "\n".join(lines)


def format_op_table(rows):
    """The per-op table's comparison as a text table (instructions per call of the op and its
    backward); empty when it has no rows."""
    ops = [r for r in rows if r["kind"] == "op"]
    if not ops:
        return ""
    head = (f"{OP_ID + ' op (' + str(OP_SIZE) + ',)':<20} {'instructions/call':>17} "
            f"{'baseline/call':>14} {'ratio':>7}  verdict")
    lines = [head, "-" * len(head)]
    for r in ops:
        lines.append(f"{r['name']:<20} {_figure(r['per_unit'], ',.0f'):>17} "
                     f"{_figure(r['base_per_unit'], ',.0f'):>14} {_figure(r['ratio'], '.4f'):>7}  "
                     f"{r['verdict']}")
    return "\n".join(lines)


def format_tables(rows):
    """The workloads' table, then the per-op table (if it has rows)."""
    return "\n\n".join(t for t in (format_table(rows), format_op_table(rows)) if t)


def make_baseline(current, env, info):
    """The baseline file's content: the workloads by id, the per-op table's ops by name."""
    def entry(cur):
        return {k: cur[k] for k in ("name", "instructions", "per_unit", "unit", "nodes", "reps")}

    return {"about": "instruction counts of benchmarks/instructions.py; update deliberately "
                     "(--update, in the pinned environment) with the reason in the commit",
            "environment": env, "info": info,
            "workloads": {wid: entry(cur) for wid, cur in current.items()
                          if cur["kind"] == "workload"},
            "ops": {cur["name"]: entry(cur) for cur in current.values() if cur["kind"] == "op"}}


def baseline_entries(recorded):
    """A baseline file's entries keyed as the counts are: the workloads by id, the ops by
    ``op_key``."""
    out = dict(recorded.get("workloads", {}))
    out.update({op_key(name): entry for name, entry in recorded.get("ops", {}).items()})
    return out


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


def measuring_command(helper, folder, reps, op_reps):
    """The command line of the measuring process (this script with --_measure)."""
    return [os.path.abspath(sys.executable), os.path.abspath(__file__), "--_measure", helper,
            "--_meta", os.path.join(folder, "meta.json"), "--reps", str(reps),
            "--op-reps", str(op_reps)]


def run_child(cmd):
    """Run ``cmd`` in the measuring environment; GuardError (3) with its output's tail if it
    fails."""
    proc = subprocess.run(cmd, env=child_environment(), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise GuardError(f"the measuring process failed (exit {proc.returncode}):\n"
                         + "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-30:]), 3)


def prime(helper, folder, reps, op_reps):
    """The measuring process once outside valgrind: the .pyc files it writes are then read by
    every counted run (a run that compiles them counts differently afterwards)."""
    run_child(measuring_command(helper, folder, reps, op_reps) + ["--_native"])


def run_valgrind(helper, folder, reps, op_reps):
    """One measuring process under callgrind; returns (summary, info)."""
    out_base = os.path.join(folder, "callgrind.out")
    run_child([shutil.which("valgrind"), "--tool=callgrind", "--instr-atstart=no",
               "--collect-atstart=no", f"--callgrind-out-file={out_base}",
               f"--log-file={os.path.join(folder, 'vg.log')}"]
              + measuring_command(helper, folder, reps, op_reps))
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


def warmup(h, mod):
    """The warm-up repetitions of ``mod``'s full run (its POLICY's, else the harness's)."""
    return getattr(mod, "POLICY", {}).get("full", {}).get("warmup", h.FULL["warmup"])


def check_grads(case, what):
    if any(g is None for g in case.grads()):
        raise GuardError(f"{what}: a leaf got no gradient", 3)


def measure_workload(h, lucid, probe, mod, variant, nodes, reps):
    """Count ``reps`` repetitions of ``mod``'s lucid case (its setup's ``variant``) after the
    harness's warm-up; returns its meta entry.  quick=True: no variant beyond the quick run's is
    built (W14's 10^5 ops); the cases are the full run's."""
    made = mod.setup(lucid, True)
    case = made if variant is None else made[variant]
    del made
    for _ in range(warmup(h, mod)):
        h.run_once(case)
    gc.collect()
    h.run_once(case)
    for index in range(reps):
        counted_rep(case, probe, region_label(mod.ID, index))
    check_grads(case, mod.ID)
    name = mod.NAME if variant is None else f"{mod.NAME} ({variant})"
    return {"name": name, "nodes": nodes or mod.NODES, "unit": mod.NODE_UNIT}


def measure_ops(h, lucid, probe, mod, reps):
    """Count ``reps`` repetitions of each op's case of the per-op table at (OP_SIZE,): the ops
    warmed up together (as the harness does the table's cells), one collection, then per op one
    re-warm and its repetitions; returns their meta entries."""
    made = mod.setup(lucid, True)
    cases = {op: made[mod.variant(op, OP_SIZE)] for op in mod.table_ops()}
    del made
    for case in cases.values():
        for _ in range(warmup(h, mod)):
            h.run_once(case)
    gc.collect()
    meta = {}
    for op, case in cases.items():
        h.run_once(case)
        for index in range(reps):
            counted_rep(case, probe, region_label(op_key(op), index))
        check_grads(case, f"{OP_ID} {op}")
        meta[op_key(op)] = {"name": op, "nodes": mod.CALLS, "unit": "call", "kind": "op"}
    return meta


def measure(helper, meta_path, reps, op_reps, native=False):
    """The measuring process (under callgrind): calibration, every workload's reps, then every
    op's.  ``native``: the same run outside valgrind (its client requests do nothing), which
    leaves every .pyc the counted run will read in place."""
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
        for name, variant, nodes in WORKLOADS:
            mod = importlib.import_module("benchmarks." + name)
            meta[mod.ID] = measure_workload(h, lucid, probe, mod, variant, nodes, reps)
            gc.collect()
        if op_reps > 0:
            meta.update(measure_ops(h, lucid, probe,
                                    importlib.import_module("benchmarks." + OP_TABLE), op_reps))
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
        description="Instruction counts of W1, W4, W6, W14 and W15's ops under callgrind, "
                    "against the committed baseline (fails beyond +5%%).")
    p.add_argument("--update", action="store_true", help="rewrite the baseline with these counts")
    p.add_argument("--baseline", default=BASELINE, help="the baseline file (default: %(default)s)")
    p.add_argument("--reps", type=int, default=REPS, help="counted repetitions per workload")
    p.add_argument("--op-reps", type=int, default=OP_REPS,
                   help="counted repetitions per op of the per-op table (0: no op counted)")
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
    """Per workload: the repetitions, their spread and (several runs) the run-to-run variation;
    of the ops, the largest of each."""
    ops = [cur for cur in current.values() if cur["kind"] == "op"]
    for wid, cur in current.items():
        if cur["kind"] == "op":
            continue
        line = (f"{wid}: overhead {cur['overhead']:,} subtracted; reps "
                f"{', '.join(f'{c:,.0f}' for c in cur['reps'])} (spread {cur['spread']:.4%})")
        if "runs" in cur:
            line += (f"; runs {', '.join(f'{c:,}' for c in cur['runs'])} "
                     f"(between runs {cur['between_runs']:.4%})")
        print(line)
    if ops:
        worst = max(ops, key=lambda c: c["spread"])
        line = (f"{OP_ID}: {len(ops)} ops, {len(ops[0]['reps'])} reps each; largest spread "
                f"{worst['spread']:.4%} ({worst['name']})")
        if "runs" in ops[0]:
            apart = max(ops, key=lambda c: c["between_runs"])
            line += f"; largest between runs {apart['between_runs']:.4%} ({apart['name']})"
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
        prime(helper, folder, args.reps, args.op_reps)
        results = [run_valgrind(helper, folder, args.reps, args.op_reps)
                   for _ in range(args.runs)]
    current = merge_runs([r[0] for r in results]) if args.runs > 1 else results[0][0]
    h = harness()
    info = dict(results[0][1], git=h._git_describe(), cpu=h._cpu_model(), reps=args.reps,
                op_reps=args.op_reps)
    print(f"environment: {', '.join(f'{k} {env[k]}' for k in PINNED)}")
    report_counts(current)
    if args.update:
        with open(args.baseline, "w") as f:
            json.dump(make_baseline(current, env, info), f, indent=1, sort_keys=True)
            f.write("\n")
        print(format_tables(compare(current, {})))
        print(f"baseline written: {args.baseline} (commit it with the reason)")
        return 0
    recorded = read_baseline(args.baseline)
    if recorded is None:
        print(format_tables(compare(current, {})))
        loud([f"no baseline at {args.baseline}: make one with --update in the pinned "
              "environment (.ci/instructions --update)"])
        return 1
    rows = compare(current, baseline_entries(recorded))
    print(format_tables(rows))
    diffs = environment_differences(env, recorded["environment"])
    if diffs:
        loud(["this environment is not the baseline's: the counts cannot be compared"] +
             [f"{key}: baseline {old!r}, here {new!r}" for key, old, new in diffs] +
             ["run it in the pinned environment (.ci/instructions, benchmarks/constraints.txt)"])
    for r in rows:
        what = display(r["workload"])
        if r["verdict"] == "WORSE":
            loud([f"{what}: {r['ratio'] - 1:+.2%} instructions per repetition, beyond "
                  f"+{TOLERANCE:.0%}"])
        elif r["verdict"] == "better":
            print(f"{what}: {r['ratio'] - 1:+.2%}: an improvement beyond "
                  f"{TOLERANCE:.0%}; consider --update (with the reason in the commit)")
    unmatched = [f"{display(r['workload'])}: {r['verdict']}" for r in rows
                 if r["verdict"] in ("no baseline", "not counted")]
    if unmatched:
        loud(["what is counted and the baseline differ (a workload or op added, renamed or "
              "removed):"] + unmatched +
             ["update the baseline in the pinned environment (.ci/instructions --update)"])
    return exit_status(rows, diffs)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        if args._measure:
            measure(args._measure, args._meta, args.reps, args.op_reps, args._native)
            return 0
        return guard(args)
    except GuardError as e:
        print(f"instructions.py: {e}", file=sys.stderr)
        return e.status


if __name__ == "__main__":
    sys.exit(main())
