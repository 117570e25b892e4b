"""lucid benchmarks: lucid, the NumPy floor and PyTorch (when importable), side by side.

    python benchmarks/run.py [--quick] [--only W1,W4] [--json PATH] [--plot PATH]
    python benchmarks/run.py --compare OLD.json NEW.json

Workloads are those of benchmarks/README.md (W1-W15), one module each, listed in REGISTRY
below: adding a workload is one new file plus one line here.  Every library runs with one intra-op
thread (the thread variables are set here before numpy is imported; torch.set_num_threads(1)).

The workloads run in a child process (this script with --_worker) that writes one JSON record per
finished measurement, so that a crash or a hang in lucid costs only the cell it happened in: the
child is restarted on the remaining workloads.  Peak memory (W5) and the scaling runs (W10) use a
fresh process per library (and size).  Exit status: 0; 1 if any gradient was WRONG; 3 if
lucid raised or crashed in a workload
("n/a", a missing feature such as lucid.autograd.Function, is not a failure).
"""
import os
import sys

# One intra-op thread for every library: before anything imports numpy.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_var] = "1"

# Make the `benchmarks` package importable when run as a script from anywhere.  Appended, not
# prepended, so that an installed lucid is not shadowed by the source tree.
_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_HERE)
if _ROOT not in sys.path:
    sys.path.append(_ROOT)

import argparse        # noqa: E402
import importlib       # noqa: E402
import json            # noqa: E402
import subprocess      # noqa: E402
import tempfile        # noqa: E402
import time            # noqa: E402

from benchmarks import _harness as h  # noqa: E402
from benchmarks import _report, _stats  # noqa: E402

REGISTRY = [
    "w1_deep_chain",
    "w2_wide_fanout",
    "w3_mlp_step",
    "w4_custom_function",
    "w5_large_elementwise",
    "w5_avx2",              # W5 again with NumPy forced onto its AVX2 kernels
    "w6_backward_replay",
    "w8_hvp",
    "w9_forward_mode",
    "w11_lbfgs",
    "w12_per_sample_grads",
    "w13_batched_laplacian",
    "w14_mixed_ops",
    "w15_op_table",         # its own table, printed after the main one
    "w10_scaling",          # fresh processes per library and size, run from this process
]

# A workload whose child makes no progress for this long is killed (its open cells: "error").
WORKLOAD_TIMEOUT = {"quick": 90.0, "full": 600.0}
FRESH_TIMEOUT = 600.0


def load_workloads(only=None):
    mods = [importlib.import_module("benchmarks." + name) for name in REGISTRY]
    if only:
        wanted = [w.strip().upper() for w in only.split(",") if w.strip()]
        known = {m.ID.upper(): m for m in mods}
        unknown = [w for w in wanted if w not in known]
        if unknown:
            raise SystemExit(f"unknown workload(s) {', '.join(unknown)}; known: "
                             f"{', '.join(m.ID for m in mods)}")
        mods = [m for m in mods if m.ID.upper() in wanted]
    return mods


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="python benchmarks/run.py",
        description="lucid benchmarks (benchmarks/README.md): lucid, the NumPy floor and PyTorch "
                    "(if importable), one thread each.")
    p.add_argument("--quick", action="store_true",
                   help="few repetitions (about 100 s in all, torch included); the graphs are the same")
    p.add_argument("--only", metavar="W1,W4", help="comma-separated workload ids")
    p.add_argument("--json", metavar="PATH", help="write the results and environment as JSON")
    p.add_argument("--plot", metavar="PATH", help="write a PNG chart of the ratios with their "
                                                  "intervals, and W10 against N (matplotlib)")
    p.add_argument("--compare", nargs=2, metavar=("OLD.json", "NEW.json"),
                   help="compare two --json files: per ratio, old, new and whether the change "
                        "is beyond noise")
    p.add_argument("--clock", choices=sorted(h.CLOCKS), default="wall",
                   help="wall: perf_counter (default); cpu: this thread's CPU time, steadier "
                        "on a busy machine")
    p.add_argument("--no-memory", action="store_true", help="skip the peak-memory processes")
    p.add_argument("--in-process", action="store_true",
                   help="measure in this process (no crash isolation; for debugging/profiling)")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    # internal: child processes
    p.add_argument("--_worker", help=argparse.SUPPRESS)
    p.add_argument("--_out", help=argparse.SUPPRESS)
    p.add_argument("--_fresh", help=argparse.SUPPRESS)
    p.add_argument("--_lib", help=argparse.SUPPRESS)
    p.add_argument("--_n", type=int, help=argparse.SUPPRESS)
    p.add_argument("--_count", type=int, help=argparse.SUPPRESS)
    return p.parse_args(argv)


# --------------------------------------------------------------------------------------------
def read_records(path):
    recs = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        recs.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass            # a line cut by a crash
    except FileNotFoundError:
        pass
    return recs


def run_workers(mods, quick, clock="wall", total=None):
    """Run the workloads in child processes, one group per environment a workload asks for
    (its ENV, e.g. W5/AVX2's NumPy CPU features); returns the list of records. Progress counts
    each workload by its place in mods, of total (default: len(mods))."""
    records = []
    groups = {}
    for i, m in enumerate(mods, 1):
        groups.setdefault(tuple(sorted(getattr(m, "ENV", {}).items())), []).append((i, m))
    for env, group in groups.items():
        records += run_worker_group(group, quick, clock, dict(env), total or len(mods))
    return records


def run_worker_group(numbered, quick, clock, extra_env, total):
    """Run workloads sharing one environment in child processes; returns the list of records.

    When the child dies (crash, or no progress within the timeout), the cell it was in gets an
    error; if that was lucid, the same workload is rerun without lucid so that the floor and
    PyTorch still get their figures; then the remaining workloads go on in a new child.
    """
    records = []
    pending = [(i, m, "") for i, m in numbered]
    timeout = WORKLOAD_TIMEOUT["quick" if quick else "full"]
    while pending:
        fd, out_path = tempfile.mkstemp(prefix="lucid-bench-", suffix=".jsonl")
        os.close(fd)
        items = ",".join(f"{i}:{m.ID}" + (f":-{skip}" if skip else "") for i, m, skip in pending)
        cmd = [sys.executable, os.path.abspath(__file__), "--_worker", items, "--_out", out_path,
               f"--_count={total}", f"--clock={clock}"]
        if quick:
            cmd.append("--quick")
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, env=dict(os.environ, **extra_env))
        last_len, last_change, killed = 0, time.monotonic(), False
        try:
            while proc.poll() is None:
                time.sleep(0.25)
                size = os.path.getsize(out_path)
                if size != last_len:
                    last_len, last_change = size, time.monotonic()
                elif time.monotonic() - last_change > timeout:
                    proc.kill()
                    proc.wait()
                    killed = True
            recs = read_records(out_path)
        finally:
            if proc.poll() is None:      # interrupted: do not leave the child running
                proc.kill()
                proc.wait()
            os.unlink(out_path)
        records.extend(r for r in recs if r["type"] != "at")
        finished = {r["workload"] for r in recs if r["type"] == "end"}
        started = [r["workload"] for r in recs if r["type"] == "start"]
        if proc.returncode == 0 and not killed:
            break
        # the child died: blame the cell it was in
        why = (f"no progress for {timeout:.0f} s, killed" if killed
               else f"benchmark process died: {h.describe_exit(proc.returncode)}")
        broken = next((w for w in started if w not in finished), None)
        if broken is None:       # died before starting a workload (e.g. at import)
            broken = pending[0][1].ID
        at = [r for r in recs if r["type"] == "at" and r["workload"] == broken]
        cell, phase = (at[-1]["lib"], at[-1]["phase"]) if at else ("lucid", "import")
        culprit = cell.split(":")[0]             # the library of the cell ("lucid:grad")
        h.progress(f"!! {broken}: {why} while running {cell} ({phase})")
        records.append({"type": "result", "workload": broken, "lib": cell, "status": "error",
                        "message": f"{why} during {phase}"})
        entry = next(p for p in pending if p[1].ID == broken)
        rest = [p for p in pending if p[1].ID not in finished and p[1].ID != broken]
        skip = set(filter(None, entry[2].split("+"))) | {culprit}
        done_libs = {r["lib"] for r in recs if r["type"] == "result" and r["workload"] == broken}
        if culprit == "lucid" and set(h.LIBS) - skip - done_libs:
            # rerun the floor and torch alone (their partial records, if any, are superseded)
            records[:] = [r for r in records if not (r["type"] == "result" and
                          r["workload"] == broken and r["lib"].split(":")[0] not in skip)]
            rest.insert(0, (entry[0], entry[1], "+".join(sorted(skip))))
        else:
            for lib in h.LIBS:
                if lib not in done_libs and lib not in skip:
                    records.append({"type": "result", "workload": broken, "lib": lib,
                                    "status": "not run",
                                    "message": f"{why} while running {culprit} ({phase})"})
        pending = rest
    return records


def assemble(mods, records, args, env):
    wls = []
    for m in mods:
        results = {}
        for r in records:
            if r["type"] == "result" and r["workload"] == m.ID:
                results.setdefault(r["lib"], r)
        for lib in h.LIBS:
            results.setdefault(lib, None)
        wls.append({
            "id": m.ID, "name": m.NAME, "description": m.DESCRIPTION,
            "metric": getattr(m, "METRIC", "fwd+bwd"),
            "nodes": getattr(m, "NODES", None), "node_unit": getattr(m, "NODE_UNIT", None),
            "targets": getattr(m, "TARGETS", {}),
            "extra_ratios": getattr(m, "EXTRA_RATIOS", ()),
            "show_check": getattr(m, "SHOW_CHECK", False),
            "results": results,
        })
        if hasattr(m, "assemble"):                # a workload with its own ratios (W15)
            m.assemble(wls[-1])
    return {
        "schema": "lucid-benchmarks/2",
        "command": [os.path.basename(sys.executable)] + sys.argv,
        "config": {"quick": args.quick, "seed": h.SEED, "policy": h.QUICK if args.quick else h.FULL,
                   "clock": args.clock,
                   "timing": f"{h.CLOCKS[args.clock].__name__} around forward and around "
                             "backward; leaves and gradient reset outside; repetitions "
                             "round-robin across libraries after warm-up; gc enabled, one "
                             "collection after warm-up followed by an untimed re-warm",
                   "intervals": f"{_stats.LEVEL:.0%} percentile bootstrap of the ratio of "
                                f"medians, {_stats.RESAMPLES} resamples, seed {_stats.SEED}",
                   "memory_method": h.MEMORY_METHOD},
        "env": env,
        "workloads": wls,
    }


def fresh(wid, lib, quick, n=None, extra_env=None):
    """One measurement in a fresh process (W5 peak memory, W10 one size)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--_fresh", wid, "--_lib", lib]
    cmd += (["--quick"] if quick else []) + ([f"--_n={n}"] if n is not None else [])
    return h.run_fresh(cmd, FRESH_TIMEOUT, extra_env)


def fresh_main(args):
    mod = load_workloads(args._fresh)[0]
    if hasattr(mod, "fresh_main"):
        rec = mod.fresh_main(args._lib, args.quick, args._n)
    else:
        rec = h.memory_main(mod, args._lib, args.quick)
    print(json.dumps(rec))


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    h.set_clock(args.clock)
    if args._fresh:
        fresh_main(args)
        return 0
    if args._worker:
        count = args._count or 1
        items = []
        for part in args._worker.split(","):
            i, wid, *skip = part.split(":")
            skip = set(skip[0].lstrip("-").split("+")) if skip else set()
            items.append((int(i), count, load_workloads(wid)[0], skip))
        h.worker_main(items, args.quick, args._out)
        return 0
    if args.compare:
        old, new = (json.load(open(p)) for p in args.compare)
        print(_report.compare_reports(old, new))
        return 0

    # W7 (native op vs Function vs composed) is lucid-only and runs after the table
    wanted = [w.strip().upper() for w in (args.only or "").split(",") if w.strip()]
    run_w7 = not wanted or "W7" in wanted
    only = ",".join(w for w in wanted if w != "W7")
    mods = load_workloads(only) if only or not wanted else []
    if args.list:
        for m in mods:
            print(f"{m.ID:4s} {m.NAME:20s} {m.DESCRIPTION}")
        print("W7   native op            softplus: native Cython node vs Python Function vs "
              "composed ops, small and large")
        return 0
    timed = [m for m in mods if hasattr(m, "setup")]
    standalone = [m for m in mods if not hasattr(m, "setup")]
    t0 = time.perf_counter()
    h.progress(f"lucid benchmarks: {', '.join(m.ID for m in mods)} "
               f"({'quick' if args.quick else 'full'} mode); progress on stderr, table on stdout")
    if args.in_process:
        fd, out_path = tempfile.mkstemp(prefix="lucid-bench-", suffix=".jsonl")
        os.close(fd)
        h.worker_main([(i, len(mods), m, set()) for i, m in enumerate(timed, 1)], args.quick,
                      out_path)
        records = read_records(out_path)
        os.unlink(out_path)
    else:
        records = run_workers(timed, args.quick, args.clock, len(mods)) if timed else []
    envs = [r["env"] for r in records if r["type"] == "env"]
    env = envs[0] if envs else h.env_info({n: lib for n in ("torch", "lucid")
                                           for lib in [h.load_lib(n)[0]] if lib})
    report = assemble(timed, records, args, env)

    if not args.no_memory:
        for w, m in zip(report["workloads"], timed):
            if not getattr(m, "MEMORY", False):
                continue
            h.progress(f"{m.ID} peak memory: one fresh process per library ...")
            w["memory"] = {lib: fresh(m.ID, lib, args.quick, extra_env=getattr(m, "ENV", None))
                           for lib in h.LIBS}
            h.progress(f"{m.ID} peak memory: " + ", ".join(
                f"{lib} " + (_report.fmt_bytes(v["peak_bytes"]) if v.get("status") == "ok"
                             else v.get("status")) for lib, v in w["memory"].items()))
    for k, m in enumerate(standalone, len(timed) + 1):
        h.progress(f"[{k}/{len(mods)}] {m.ID} {m.NAME}: measuring ...")
        report["workloads"].append(m.run(args.quick, lambda lib, n, m=m: fresh(m.ID, lib,
                                                                                args.quick, n)))
    for w in report["workloads"]:
        _report.derive(w)
    cells = [(w["id"], cell, r) for w in report["workloads"] for cell, r in w["results"].items()]
    wrong = [f"{wid} {cell}" for wid, cell, r in cells if r and r.get("status") == "WRONG"]
    lucid_errors = [f"{wid} {cell}" for wid, cell, r in cells
                    if cell.startswith("lucid") and r and r.get("status") == "error"]
    report["summary"] = {"wrong": wrong, "lucid_errors": lucid_errors,
                         "elapsed_s": round(time.perf_counter() - t0, 1)}

    print(_report.format_report(report))
    for m in timed + standalone:                  # the workloads with their own table
        if hasattr(m, "format_table"):
            print()
            print(m.format_table(next(w for w in report["workloads"] if w["id"] == m.ID)))
    if run_w7:
        from benchmarks import w7_native_op
        h.progress("W7 native op vs Function vs composed ...")
        w7_table, report["w7"] = w7_native_op.run(args.quick)
        print()
        print(w7_table)
    sys.stdout.flush()
    if args.json:
        _report.write_json(report, args.json)
        h.progress(f"wrote {args.json}")
    if args.plot:
        note = _report.write_plot(report, args.plot)
        h.progress(note if note else f"wrote {args.plot}")
    h.progress(f"done in {time.perf_counter() - t0:.1f} s")
    if wrong:
        h.progress("!" * 78 + "\n!! WRONG: " + ", ".join(wrong) + "\n" + "!" * 78)
        return 1
    if lucid_errors:
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
