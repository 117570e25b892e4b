"""The report: ratios with bootstrap intervals, targets, the printed tables, JSON, plot, --compare.

Everything here works from the report dict alone (the JSON), whose result records keep the raw
samples: ``--compare`` recomputes the intervals of old and new runs from their samples.
"""
import json
import textwrap

import numpy as np

from . import _stats
from ._harness import MEMORY_METHOD

LIBS = ("lucid", "numpy", "torch")
LABEL = {"lucid": "lucid", "numpy": "floor", "torch": "torch"}
DEFAULT_RATIOS = (("lucid", "torch"), ("lucid", "numpy"), ("torch", "numpy"))
OWN_TABLE = ("scaling", "op table")   # workloads with their own table (W10, W15), not a row


def metric_samples(rec, phase=None):
    """A record's samples (ns) of one phase, or of the sum of its phases; per node when the
    record has ``nodes`` (W10).  None when the record did not produce samples."""
    if not rec or rec.get("status") != "ok" or not rec.get("samples"):
        return None
    s = rec["samples"]
    a = np.asarray(s[phase + "_ns"], float) if phase else np.sum([s[k] for k in s], axis=0)
    return list(a / rec.get("nodes", 1))


def ratio_specs(wl):
    """What to divide by what: the default ratios for every variant, then the module's extras.
    A workload may bring its own list (W10)."""
    if "ratio_specs" in wl:
        return wl["ratio_specs"]
    variants = ["main"] + sorted({c.split(":")[1] for c in wl["results"] if ":" in c})
    specs = []
    for v in variants:
        sfx = "" if v == "main" else ":" + v
        for a, b in DEFAULT_RATIOS:
            specs.append({"variant": v, "name": f"{LABEL[a]}/{LABEL[b]}", "num": a + sfx,
                          "den": b + sfx, "target": wl["targets"].get(f"{LABEL[a]}/{LABEL[b]}")
                          if v == "main" else None})
    for name, a, b in wl.get("extra_ratios", ()):
        specs.append({"variant": "main", "name": name, "num": a, "den": b,
                      "target": wl["targets"].get(name)})
    return specs


def ratio_inputs(wl, spec):
    """(numerator samples, denominator samples) of a ratio spec, or None."""
    num = metric_samples(wl["results"].get(spec["num"]), spec.get("phase"))
    den = metric_samples(wl["results"].get(spec["den"]), spec.get("phase"))
    return None if num is None or den is None else (num, den)


def judge(value, low, high, limit):
    """A target verdict from a ratio and its interval."""
    if high <= limit:
        return "met"
    if low > limit:
        return "MISSED"
    return "met?" if value <= limit else "MISSED?"     # the interval straddles the target


def derive(wl):
    """Summaries, ratios with intervals, target verdicts, per-node figures (in place)."""
    for rec in wl["results"].values():
        if rec and rec.get("samples"):
            rec["summary"] = {k[:-3]: _stats.summary(v) for k, v in rec["samples"].items()}
    wl["ratios"] = []
    for spec in ratio_specs(wl):
        inputs = ratio_inputs(wl, spec)
        r = dict(spec)
        if inputs:
            r["value"], r["low"], r["high"] = _stats.interval([inputs[0]], [inputs[1]])
            if spec.get("target") is not None:
                r["verdict"] = judge(r["value"], r["low"], r["high"], spec["target"])
        wl["ratios"].append(r)
    if wl.get("nodes"):
        wl["per_node_ns"] = {}
        for lib in LIBS:
            rec = wl["results"].get(lib)
            m = metric_samples(rec)
            if m is not None:
                bwd = metric_samples(rec, "bwd") if "bwd_ns" in rec["samples"] else None
                wl["per_node_ns"][lib] = {
                    "total_ns": float(np.median(m)) / wl["nodes"],
                    "bwd_ns": None if bwd is None else float(np.median(bwd)) / wl["nodes"]}
    mem = wl.get("memory")
    if mem:
        lm, tm = (mem.get(n, {}).get("peak_bytes") for n in ("lucid", "torch"))
        mem["lucid<=torch"] = None if lm is None or tm is None else lm <= tm


# --------------------------------------------------------------------------------------------
# text
# --------------------------------------------------------------------------------------------
def fmt_time(s):
    if s is None:
        return "-"
    for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "us")):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s * 1e9:.0f} ns"


def fmt_interval(r):
    if r.get("value") is None:
        return "-"
    return f"{r['value']:.3g} [{r['low']:.3g}, {r['high']:.3g}]"


def fmt_bytes(b):
    return "-" if b is None else f"{b / 2**20:.1f} MiB"


def table(headers, rows):
    widths = [max(len(str(r[i])) for r in [headers] + rows) for i in range(len(headers))]
    line = lambda r: "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)  # noqa: E731
                               for i, (c, w) in enumerate(zip(r, widths)))
    return "\n".join([line(headers), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])


def row_label(wl, variant):
    return f"{wl['id']} {wl['name']}" + ("" if variant == "main" else f" ({variant})")


def short_label(wl, variant):
    """The row's workload id (and variant): the tables after the first, which names them."""
    return wl["id"] + ("" if variant == "main" else f" ({variant})")


def _time_cell(rec, phase=None):
    if rec is None:
        return "-"
    if rec.get("status") != "ok":
        return rec["status"]
    m = metric_samples(rec, phase) if phase is None or phase + "_ns" in rec["samples"] else None
    return "-" if m is None else fmt_time(float(np.median(m)) * 1e-9)


def blas_kernels(env):
    """'BLAS kernels: openblas SkylakeX; ' from threadpoolctl's record (what the matrix products
    of W3, W8, W9 and W11 ran on), or '' when it was not importable."""
    pools = [p for p in env.get("threadpools") or [] if p.get("internal_api") != "openmp"]
    if not pools:
        return ""
    return "BLAS kernels: " + ", ".join(f"{p.get('internal_api')} {p.get('architecture')}"
                                        for p in pools) + "; "


def format_report(report):
    wls = [w for w in report["workloads"] if w.get("kind") not in OWN_TABLE]
    env, cfg = report["env"], report["config"]
    have_torch = any((r or {}).get("status") == "ok" for w in wls
                     for c, r in w["results"].items() if c.startswith("torch"))
    e = env.get("env", {})
    lines = [f"lucid benchmarks  {env.get('date_utc', '')}  python {env.get('python')}  "
             f"numpy {env.get('numpy')}  torch {env.get('torch') or 'absent'}  "
             f"git {env.get('git') or '?'}",
             f"threads: OMP/OPENBLAS/MKL={e.get('OMP_NUM_THREADS')}/"
             f"{e.get('OPENBLAS_NUM_THREADS')}/{e.get('MKL_NUM_THREADS')}; "
             f"OPENBLAS_CORETYPE={e.get('OPENBLAS_CORETYPE')}; {blas_kernels(env)}"
             f"mode={'quick' if cfg['quick'] else 'full'}; clock={cfg['clock']}"
             + (f"; measured in {report['summary']['elapsed_s']:.0f} s"
                if report.get("summary", {}).get("elapsed_s") is not None else ""), ""]
    if not wls:                                  # only workloads with their own table (W10, W15)
        return "\n".join(wrapped(line) for line in lines[:2])
    libs = [lib for lib in LIBS if have_torch or lib != "torch"]
    rows, drows, nrows, extra = [], [], [], []
    for w in wls:
        by_variant = {}
        for r in w["ratios"]:
            by_variant.setdefault(r["variant"], {})[r["name"]] = r
        for variant, ratios in by_variant.items():
            sfx = "" if variant == "main" else ":" + variant
            res = {lib: w["results"].get(lib + sfx) for lib in LIBS}
            row = [row_label(w, variant), w["metric"]]
            for lib in libs:
                row += ([_time_cell(res[lib])] if lib == "numpy" else
                        [_time_cell(res[lib], "fwd"), _time_cell(res[lib], "bwd")])
            rows.append(row)
            cells = []
            for a, b in DEFAULT_RATIOS:
                if have_torch or "torch" not in (a, b):
                    r = ratios.get(f"{LABEL[a]}/{LABEL[b]}")
                    st = (res[a] or {}).get("status")
                    cells.append(fmt_interval(r) if st in ("ok", None) else st)
            tg = [f"{r['name'].split('/')[1]}<={r['target']:g} {r.get('verdict', '-')}"
                  for r in ratios.values() if r.get("target") is not None
                  and r["name"] in ("lucid/torch", "lucid/floor")]
            mem = w.get("memory") if variant == "main" else None
            # one target per line (a second one on a row of its own), so the table stays within
            # 120 columns with the widest intervals
            drows.append([short_label(w, variant)] + cells + [tg[0] if tg else "-"])
            drows.extend([""] * (1 + len(cells)) + [t] for t in tg[1:])
            nodes, memory = _node_cells(w, variant, libs), _mem_cell(mem)
            if nodes or memory:
                nrows.append([short_label(w, variant), nodes or "-", memory or "-"])
            for r in ratios.values():
                if r["name"] not in [f"{LABEL[a]}/{LABEL[b]}" for a, b in DEFAULT_RATIOS]:
                    extra.append(f"  {w['id']} {r['name']}: {fmt_interval(r)}"
                                 + (f"; target <= {r['target']:g}: {r.get('verdict', '-')}"
                                    if r.get("target") is not None else ""))
    headers = ["workload", "timed"]
    for lib in libs:
        headers += [LABEL[lib]] if lib == "numpy" else [f"{lib} fwd", f"{lib} bwd"]
    lines += ["Times: medians of the repetitions; fwd = building the graph (W11: one whole "
              "solve), bwd = the backward pass; floor = the same math in NumPy by hand",
              table(headers, rows), "",
              f"Ratios of medians [{_stats.LEVEL:.0%} bootstrap interval] (lower is better); "
              "target: met/MISSED, with ? when the interval straddles it",
              table(["workload"] + [f"{LABEL[a]}/{LABEL[b]}" for a, b in DEFAULT_RATIOS
                                    if have_torch or "torch" not in (a, b)] + ["target"], drows)]
    if nrows:
        lines += ["", "Per node: median / nodes, fwd+bwd|bwd; peak memory: see the notes",
                  table(["workload", "ns/node " + "  ".join(LABEL[lib] for lib in libs),
                         "peak mem " + " | ".join(LABEL[lib] for lib in LIBS)], nrows)]
    if extra:
        lines += ["", "More ratios:"] + extra
    lines += _notes(wls)
    return "\n".join(wrapped(line) for line in lines)


WIDTH = 120                                      # the widest line the report prints


def wrapped(line):
    """A prose line folded to WIDTH (a note's continuation indented); tables are built to fit."""
    if len(line) <= WIDTH or "\n" in line:       # short, or a table (made to fit)
        return line
    indent = " " * (len(line) - len(line.lstrip()) + 2)
    return textwrap.fill(line, WIDTH, subsequent_indent=indent, break_on_hyphens=False)


def _node_cells(w, variant, libs):
    pn = w.get("per_node_ns")
    if not pn or variant != "main":
        return ""
    cell = lambda p: "-" if p is None else (  # noqa: E731
        f"{p['total_ns']:.0f}" + ("" if p["bwd_ns"] is None else f"|{p['bwd_ns']:.0f}"))
    return "  ".join(cell(pn.get(lib)) for lib in libs)


def _mem_cell(mem):
    """The peak memory of each library, and the verdict of lucid <= torch when both ran."""
    if not mem:
        return ""
    cell = " | ".join(fmt_bytes(mem[n]["peak_bytes"]) if mem.get(n, {}).get("status") == "ok"
                      else (mem.get(n, {}).get("status") or "-") for n in LIBS)
    if mem.get("lucid<=torch") is not None:
        cell += "  (lucid<=torch " + ("met)" if mem["lucid<=torch"] else "MISSED)")
    return cell


def _notes(wls):
    grouped = {}                                 # the same message for several workloads: once
    for w in wls:
        for cell, r in list(w["results"].items()) + [(n + " memory", m) for n, m
                                                     in (w.get("memory") or {}).items()
                                                     if isinstance(m, dict)]:
            if r and r.get("status") != "ok" and r.get("message"):
                grouped.setdefault((cell, r["status"], r["message"]), []).append(w["id"])
    notes = [f"  {','.join(ids)} {cell}: {st}: {msg}" for (cell, st, msg), ids in grouped.items()]
    notes += [f"  {w['id']} {cell}: {r['check']}" for w in wls if w.get("show_check")
              for cell, r in w["results"].items() if r and r.get("status") == "ok"
              and r.get("check") not in (None, "the reference")]
    if any(w.get("memory") for w in wls):
        notes.append("  peak mem: " + MEMORY_METHOD)
    if any(w["metric"] == "bwd" for w in wls):
        notes.append("  W6: the leaf's .grad is set to None before every backward, outside the "
                     "timed region, for every library (so the timed backward allocates it)")
    return ["", "Notes:"] + notes if notes else []


# --------------------------------------------------------------------------------------------
# JSON, plot, compare
# --------------------------------------------------------------------------------------------
def write_json(report, path):
    with open(path, "w") as f:
        json.dump(report, f, indent=1)
        f.write("\n")


def write_plot(report, path):
    """Ratios with their intervals as error bars; W10's ns/node and bytes/node against N."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib not importable: no plot written"
    scaling = [w for w in report["workloads"] if w.get("kind") == "scaling"]
    default = {f"{LABEL[a]}/{LABEL[b]}" for a, b in DEFAULT_RATIOS}
    bars = [(w["id"] + ("" if r["variant"] == "main" else f" {r['variant']}")
             + ("" if r["name"] in default else f" {r['name']}"), r)
            for w in report["workloads"] if w.get("kind") not in OWN_TABLE
            for r in w["ratios"] if r.get("value") is not None]
    fig = plt.figure(figsize=(max(8, 0.45 * len(bars) + 2), 9 if scaling else 5))
    ax = fig.add_subplot(2 if scaling else 1, 1, 1)
    names = sorted({r["name"] for _, r in bars}, key=lambda n: (n.count("/") != 1, n))
    palette = plt.cm.tab20.colors           # more ratio names than colours: the colours repeat
    colors = {n: palette[i % len(palette)] for i, n in enumerate(names)}
    for i, (label, r) in enumerate(bars):
        ax.bar(i, r["value"], color=colors[r["name"]],
               yerr=[[r["value"] - r["low"]], [r["high"] - r["value"]]], capsize=3)
        if r.get("target") is not None:
            ax.plot([i - 0.4, i + 0.4], [r["target"]] * 2, color="k", lw=2)
    ax.set_xticks(range(len(bars)), [lb for lb, _ in bars], rotation=90, fontsize=7)
    ax.axhline(1.0, color="gray", lw=0.8, ls="--")
    ax.set_yscale("log")
    ax.set_ylabel(f"ratio of medians, {_stats.LEVEL:.0%} interval (lower is better)")
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=colors[n], label=n) for n in names]
              + [plt.Line2D([], [], color="k", lw=2, label="target")], fontsize=7, ncol=3)
    env = report["env"]
    ax.set_title(f"lucid vs PyTorch {env.get('torch') or '(absent)'} and the NumPy floor, one "
                 f"thread ({env.get('date_utc', '')[:10]}, git {env.get('git')})", fontsize=9)
    if scaling:
        from . import w10_scaling
        w10_scaling.plot(scaling[0], fig.add_subplot(2, 2, 3), fig.add_subplot(2, 2, 4))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


def compare_reports(old, new):
    """Per ratio in both runs: old and new with intervals, and the change new/old with its
    bootstrap interval (from the raw samples of both runs); beyond noise when that interval
    excludes 1."""
    olds = {w["id"]: w for w in old["workloads"]}
    rows = []
    for w in new["workloads"]:
        ow = olds.get(w["id"])
        if ow is None:
            continue
        old_specs = {(s["variant"], s["name"]): s for s in ratio_specs(ow)}
        for spec in ratio_specs(w):
            ospec = old_specs.get((spec["variant"], spec["name"]))
            a = ratio_inputs(w, spec)
            b = ratio_inputs(ow, ospec) if ospec else None
            if not (a and b):
                continue
            o, n = _stats.interval([b[0]], [b[1]]), _stats.interval([a[0]], [a[1]])
            change = _stats.interval([a[0], b[1]], [a[1], b[0]])
            rows.append([short_label(w, spec["variant"]), spec["name"],
                         fmt_interval(dict(zip(("value", "low", "high"), o))),
                         fmt_interval(dict(zip(("value", "low", "high"), n))),
                         fmt_interval(dict(zip(("value", "low", "high"), change))),
                         _stats.verdict(change)])
    head = (f"old: {old['env'].get('date_utc')} git {old['env'].get('git')}; "
            f"new: {new['env'].get('date_utc')} git {new['env'].get('git')}\n" + wrapped(
            f"ratios of medians [{_stats.LEVEL:.0%} bootstrap interval]; change = new/old, "
            "beyond noise when its interval excludes 1 (lower ratios are better); the intervals "
            "see the noise within each run, not a machine whose load changed between runs"))
    if not rows:
        return head + "\nno ratio has raw samples in both files (a file written before " \
                      "schema lucid-benchmarks/2 has none, or no workload is in both)"
    return head + "\n" + table(["workload", "ratio", "old", "new", "new/old", "verdict"], rows)
