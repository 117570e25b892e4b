"""The benchmark statistics and checks: bootstrap intervals, verdicts, the gradient comparison."""
import sys

import numpy as np
import pytest

from support.paths import ROOT

# benchmarks/ is not part of the installed package: import it from the source tree (a checkout or
# the unpacked sdist) that holds this tests/ folder
sys.path.insert(0, str(ROOT))
from benchmarks import _harness, _report, _stats  # noqa: E402


def noisy(center, n, seed):
    return list(center * (1.0 + 0.05 * np.random.default_rng(seed).standard_normal(n)))


def test_interval_of_constant_samples_is_exact():
    assert _stats.interval([[6.0] * 5], [[3.0] * 7]) == (2.0, 2.0, 2.0)


def test_interval_contains_the_ratio_of_medians_and_is_seeded():
    a, b = noisy(2.0, 60, 1), noisy(1.0, 60, 2)
    value, low, high = _stats.interval([a], [b])
    assert value == pytest.approx(np.median(a) / np.median(b), rel=1e-12)
    assert low < value < high
    assert 1.8 < low and high < 2.2
    assert _stats.interval([a], [b]) == (value, low, high)


def test_interval_narrows_with_more_samples():
    few = _stats.interval([noisy(1.0, 10, 3)], [noisy(1.0, 10, 4)])
    many = _stats.interval([noisy(1.0, 1000, 3)], [noisy(1.0, 1000, 4)])
    assert many[2] - many[1] < few[2] - few[1]


def test_interval_without_samples_is_none():
    assert _stats.interval([[]], [[1.0]]) is None


def test_change_verdicts():
    old_a, old_b = noisy(1.0, 50, 5), noisy(1.0, 50, 6)
    same_a, same_b = noisy(1.0, 50, 7), noisy(1.0, 50, 8)
    fast_a = noisy(0.5, 50, 9)
    assert _stats.verdict(_stats.interval([same_a, old_b], [same_b, old_a])) == "within noise"
    assert _stats.verdict(_stats.interval([fast_a, old_b], [same_b, old_a])).startswith("better")
    assert _stats.verdict(_stats.interval([old_a, same_b], [same_b, fast_a])).startswith("WORSE")
    assert _stats.verdict(None) == "no samples"
    assert _stats.verdict((0.97, 0.96, 0.98)) == "better (beyond noise, under 5%)"
    assert _stats.verdict((1.03, 1.02, 1.04)) == "worse (beyond noise, under 5%)"


def test_summary_quartiles():
    s = _stats.summary([1000, 2000, 3000, 4000, 5000])
    assert s == pytest.approx({"median_s": 3e-6, "min_s": 1e-6, "p25_s": 2e-6, "p75_s": 4e-6})
    assert _stats.summary([]) is None


def test_target_judgement_uses_the_interval():
    assert _report.judge(0.5, 0.4, 0.6, 0.7) == "met"
    assert _report.judge(0.8, 0.75, 0.9, 0.7) == "MISSED"
    assert _report.judge(0.65, 0.6, 0.8, 0.7) == "met?"
    assert _report.judge(0.75, 0.6, 0.8, 0.7) == "MISSED?"


def test_metric_samples_sum_phases_and_divide_by_nodes():
    rec = {"status": "ok", "samples": {"fwd_ns": [10, 20], "bwd_ns": [1, 2]}}
    assert _report.metric_samples(rec) == [11, 22]
    assert _report.metric_samples(rec, "bwd") == [1, 2]
    assert _report.metric_samples(dict(rec, nodes=2), "fwd") == [5, 10]
    assert _report.metric_samples(dict(rec, status="WRONG")) is None


def test_compare_accepts_inf_and_names_the_mismatch():
    ref = [np.array([1.0, np.inf], np.float32)]
    assert _harness.compare([ref[0].copy()], ref, 1e-3, 1e-5)[0]
    ok, msg = _harness.compare([np.array([1.5, np.inf], np.float32)], ref, 1e-3, 1e-5)
    assert not ok and msg.startswith("gradient 0")
    ok, msg = _harness.compare([ref[0].astype(np.float64)], ref, 1e-3, 1e-5)
    assert not ok and "float64" in msg
    assert not _harness.compare(None, ref, 1e-3, 1e-5)[0]


def test_plot_has_a_colour_for_every_ratio_name(tmp_path):
    """A report with more ratio names than a palette has colours still plots (a full run has
    over twenty: the default ratios and the workloads' extra ones)."""
    pytest.importorskip("matplotlib", reason="matplotlib (the bench extra) draws the chart")
    ratios = [{"variant": "main", "name": f"lucid/extra{k}", "value": 1.0 + k, "low": 0.5 + k,
               "high": 1.5 + k, "target": None} for k in range(25)]
    report = {"workloads": [{"id": "W0", "kind": "ratios", "ratios": ratios}],
              "env": {"torch": None, "date_utc": "2026-12-01T00:00:00", "git": "abc"}}
    path = tmp_path / "chart.png"
    assert _report.write_plot(report, str(path)) is None
    assert path.stat().st_size > 0


def fake_workload(wid, name, variants=(), memory=False, nodes=None, seed=0, lucid_scale=1.0):
    """A workload record as run.py assembles it, with samples for every library (torch too);
    lucid_scale scales lucid's times (small ratios print the widest intervals)."""
    results = {}
    for k, sfx in enumerate([""] + [":" + v for v in variants]):
        for j, lib in enumerate(("lucid", "numpy", "torch")):
            scale = lucid_scale if lib == "lucid" else 1.0
            results[lib + sfx] = {"status": "ok", "samples": {
                "fwd_ns": noisy(1e5 * (j + 1) * scale, 30, seed + 10 * k + j),
                "bwd_ns": noisy(2e5 * (j + 1) * scale, 30, seed + 10 * k + j + 5)}}
    wl = {"id": wid, "name": name, "metric": "fwd+bwd", "results": results,
          "targets": {"lucid/torch": 0.05, "lucid/floor": 0.9}}
    if nodes:
        wl["nodes"] = nodes
    if memory:
        wl["memory"] = {lib: {"status": "ok", "peak_bytes": 88_000_000 + k}
                        for k, lib in enumerate(("lucid", "numpy", "torch"))}
    _report.derive(wl)
    return wl


def test_the_report_fits_in_120_columns_with_every_column_filled():
    """With PyTorch's columns, a variant, per-node figures and peak memory (the widest run), no
    line of the printed report is wider than 120 characters."""
    report = {"workloads": [
        fake_workload("W1", "deep chain", nodes=2000, seed=1),
        fake_workload("W5/AVX2", "large elementwise (NumPy AVX2)", memory=True, seed=2),
        fake_workload("W9", "forward mode", variants=("chain-fwd", "mlp-fwd"), nodes=1000, seed=3),
        fake_workload("W14", "mixed-op graph", variants=("1e3",), seed=5, lucid_scale=0.0137)],
        "env": {"torch": "2.13.0", "python": "3.11.7", "numpy": "2.4.6", "git": "abc1234",
                "date_utc": "2026-12-02T00:00:00+00:00", "env": {}},
        "config": {"quick": False, "clock": "wall"}}
    text = _report.format_report(report)
    assert "lucid/torch" in text and "peak mem" in text and "W9 (mlp-fwd)" in text
    wide = [line for line in text.splitlines() if len(line) > 120]
    assert not wide, f"{len(wide)} lines over 120 columns, the widest {max(map(len, wide))}"


def test_the_report_says_how_long_the_run_took():
    report = {"workloads": [fake_workload("W1", "deep chain", seed=4)],
              "env": {"env": {}}, "config": {"quick": True, "clock": "wall"},
              "summary": {"elapsed_s": 97.4}}
    assert "mode=quick; clock=wall; measured in 97 s" in _report.format_report(report)


def test_the_scaling_table_fits_in_120_columns():
    """W10's own table, every library measured at every N, fits as the main report does."""
    from benchmarks import w10_scaling

    def fresh(lib, n):
        k = ("lucid", "numpy", "torch").index(lib)
        return {"status": "ok", "nodes": 2 * n, "bytes_per_node": 200.0 * (k + 1),
                "gc_share": 0.01, "samples": {"fwd_ns": noisy(1e3 * n * (k + 1), 9, n + k),
                                              "bwd_ns": noisy(2e3 * n * (k + 1), 9, n + k + 1)}}
    wl = w10_scaling.run(False, fresh)
    _report.derive(wl)
    text = w10_scaling.format_table(wl)
    assert "lucid/torch fwd" in text and "1e+06" in text
    wide = [line for line in text.splitlines() if len(line) > 120]
    assert not wide, f"{len(wide)} lines over 120 columns, the widest {max(map(len, wide))}"


def test_the_op_table_fits_in_120_columns():
    """W15's own table, every op measured for lucid and torch, the widest intervals (small
    ratios, few noisy samples) and a note for an op that failed, fits as the main report does."""
    from benchmarks import w15_op_table as w15
    wl = {"id": w15.ID, "name": w15.NAME, "metric": w15.METRIC, "targets": {}, "results": {}}
    w15.assemble(wl)
    for k, op in enumerate(wl["ops"]):
        for n in w15.SIZES:
            for j, lib in enumerate(("lucid", "torch")):
                wl["results"][w15.cell(lib, op, n)] = {"status": "ok", "samples": {
                    "fwd_ns": noisy(1.37e4 * (1 + 73 * j) * (1 + k % 7), 8, 100 * k + n + j)}}
    wl["results"][w15.cell("lucid", "atan2", 1000)] = {
        "status": "error", "message": "RuntimeError: " + "a long message " * 12}
    _report.derive(wl)
    text = w15.format_table(wl)
    assert "lucid/torch (1000,)" in text and "logaddexp2" in text and "atan2@1000" in text
    wide = [line for line in text.splitlines() if len(line) > 120]
    assert not wide, f"{len(wide)} lines over 120 columns, the widest {max(map(len, wide))}"


def test_the_header_fits_when_every_workload_has_its_own_table():
    """`--only W15` (or W10): the main report is its two header lines, folded to 120 columns."""
    report = {"workloads": [{"id": "W15", "kind": "op table", "results": {}, "ratios": []}],
              "env": {"torch": "2.13.0+cpu", "python": "3.11.7", "numpy": "2.4.6",
                      "git": "abc1234-dirty", "date_utc": "2026-12-03T18:00:22+00:00",
                      "threadpools": [{"internal_api": "openblas", "architecture": "SkylakeX"}],
                      "env": {k: "1" for k in _harness.THREAD_VARS}},
              "config": {"quick": True, "clock": "wall"}, "summary": {"elapsed_s": 26.0}}
    text = _report.format_report(report)
    assert "measured in 26 s" in text and "W15" not in text
    assert max(map(len, text.splitlines())) <= 120
