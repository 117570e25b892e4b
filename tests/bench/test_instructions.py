"""The instruction-count guard's logic (benchmarks/instructions.py) on fake callgrind dumps and
counts: parsing, summaries, the +-5% verdicts (per workload and per op of W15's table), the
baseline's two sections, the environment check, the exit statuses; and its measuring functions on
the real W14 and W15 cases with a fake probe.  No valgrind here: the guard itself runs as its own
CI step (.ci/instructions)."""
import json
import sys

import pytest

from support.paths import ROOT

# benchmarks/ is not part of the installed package: import it from the source tree that holds
# this tests/ folder
sys.path.insert(0, str(ROOT))
from benchmarks import _harness  # noqa: E402
from benchmarks import instructions as ic  # noqa: E402
from benchmarks import w14_mixed_ops as w14  # noqa: E402
from benchmarks import w15_op_table as w15  # noqa: E402

META = {"W1": {"name": "deep chain", "nodes": 2000, "unit": "op"},
        "W4": {"name": "custom Function", "nodes": 1000, "unit": "Function call"},
        "W15:add": {"name": "add", "nodes": 20, "unit": "call", "kind": "op"},
        "W15:x*0.5": {"name": "x*0.5", "nodes": 20, "unit": "call", "kind": "op"}}
ENV = {"python": "3.11.7", "numpy": "2.4.6", "Cython": "3.3.1", "setuptools": "84.2.1",
       "compiler": "gcc (Debian 12.2.0-14+deb12u1) 12.2.0", "valgrind": "valgrind-3.19.0",
       "machine": "x86_64"}


def dump(label, *values, events="Ir", key="summary"):
    """The text of a callgrind dump (the lines the guard reads, among others it ignores)."""
    trigger = (f"Client Request: {label}" if label is not None else "Program termination")
    return "\n".join(["# callgrind format", "version: 1", "creator: callgrind-3.19.0",
                      "desc: I1 cache: ", f"desc: Trigger: {trigger}", f"events: {events}",
                      f"{key}: {' '.join(str(v) for v in values)}", "fl=(1) x.c", "fn=(1) f",
                      "1 5"]) + "\n"


def fake_dumps(reps):
    """Dumps of a run: a first binding call, three empty regions (100, 101, 99), then ``reps``."""
    texts = [dump(None, 0), dump("empty/-1", 9000)]
    texts += [dump(f"empty/{i}", c) for i, c in enumerate((100, 101, 99))]
    for wid, counts in reps.items():
        texts += [dump(f"{wid}/{i}", c) for i, c in enumerate(counts)]
    return texts


def current(w1=2_000_100, w4=3_000_100, add=400_100, half=300_100):
    """A summary of one fake run: W1, W4 and W15's add and x*0.5 at the given counts (the
    overhead, 100, included)."""
    return ic.summarize(ic.counts_by_label(fake_dumps(
        {"W1": [w1] * 3, "W4": [w4] * 3, "W15:add": [add] * 3, "W15:x*0.5": [half] * 3})), META)


# ------------------------------------------------------------------------------------------
def test_parse_dump_reads_the_label_and_the_ir_summary():
    assert ic.parse_dump(dump("W1/3", 123456)) == ("W1/3", 123456)
    assert ic.parse_dump(dump("W6/0", 7, 5, 3, events="Dr Ir Dw")) == ("W6/0", 5)
    assert ic.parse_dump(dump("W4/1", 42, key="totals")) == ("W4/1", 42)
    assert ic.parse_dump(dump(None, 0)) == (None, 0)


@pytest.mark.parametrize("text", ["", "events: Dr\nsummary: 5\n", "desc: Trigger: x\n"])
def test_parse_dump_rejects_what_is_not_an_ir_dump(text):
    with pytest.raises(ValueError, match="Ir summary"):
        ic.parse_dump(text)


def test_summarize_subtracts_the_empty_region_and_takes_the_median():
    counts = ic.counts_by_label(fake_dumps({"W1": [1100, 1000, 1300, 1050, 1060],
                                            "W4": [600, 600, 600], "W15:add": [2100, 2200],
                                            "W15:x*0.5": [1100]}))
    out = ic.summarize(counts, META)
    w1, w4, add = out["W1"], out["W4"], out["W15:add"]
    assert w1["overhead"] == 100                     # median of 100, 101, 99; not the first call
    assert w1["reps"] == [1000, 900, 1200, 950, 960]
    assert w1["instructions"] == 960
    assert w1["per_unit"] == pytest.approx(960 / 2000)
    assert w1["spread"] == pytest.approx(300 / 960)
    assert (w4["instructions"], w4["spread"], w4["unit"]) == (500, 0.0, "Function call")
    assert (w1["kind"], w4["kind"], add["kind"]) == ("workload", "workload", "op")
    assert (add["instructions"], add["per_unit"]) == (2050, 2050 / 20)    # per call


def test_summarize_fails_when_a_workload_has_no_repetitions():
    counts = ic.counts_by_label(fake_dumps({"W1": [500]}))
    with pytest.raises(ValueError, match="no counted repetitions of W4"):
        ic.summarize(counts, META)
    counts = ic.counts_by_label(fake_dumps({"W1": [500], "W4": [500], "W15:add": [500]}))
    with pytest.raises(ValueError, match=r"no counted repetitions of W15:x\*0.5"):
        ic.summarize(counts, META)


def test_repetitions_stop_at_the_first_missing_index():
    counts = {"W1/0": 1, "W1/1": 2, "W1/3": 4, "W10/0": 9}
    assert ic.repetitions(counts, "W1") == [1, 2]
    assert ic.repetitions(counts, "W6") == []


@pytest.mark.parametrize("ratio, expected", [
    (1.0, "ok"), (1.05, "ok"), (1.0501, "WORSE"), (1.5, "WORSE"),
    (0.95, "ok"), (0.9499, "better"), (0.5, "better")])
def test_verdict_thresholds_are_five_percent_either_way(ratio, expected):
    assert ic.verdict(ratio) == expected


def entries(run):
    """The baseline made of ``run``, keyed as the counts are."""
    return ic.baseline_entries(ic.make_baseline(run, ENV, {}))


def test_baseline_holds_workloads_by_id_and_ops_by_name():
    made = ic.make_baseline(current(), ENV, {"git": "abc"})
    assert set(made["workloads"]) == {"W1", "W4"}
    assert set(made["ops"]) == {"add", "x*0.5"}
    assert made["ops"]["add"] == {"name": "add", "instructions": 400_000, "per_unit": 20_000.0,
                                  "unit": "call", "nodes": 20, "reps": [400_000] * 3}
    assert (made["environment"], made["info"]) == (ENV, {"git": "abc"})
    flat = ic.baseline_entries(made)
    assert set(flat) == {"W1", "W4", "W15:add", "W15:x*0.5"}
    assert flat["W15:add"] is made["ops"]["add"]
    assert ic.baseline_entries({"workloads": {}}) == {}


def test_compare_gives_ratio_and_verdict_per_workload_and_op():
    base = entries(current())
    rows = ic.compare(current(w1=2_200_100, w4=2_000_100, add=420_100, half=330_100), base)
    by_id = {r["workload"]: r for r in rows}
    assert by_id["W1"]["ratio"] == pytest.approx(1.1)
    assert by_id["W1"]["verdict"] == "WORSE"
    assert by_id["W4"]["ratio"] == pytest.approx(2 / 3)
    assert by_id["W4"]["verdict"] == "better"
    assert by_id["W1"]["baseline"] == 2_000_000
    assert (by_id["W15:add"]["ratio"], by_id["W15:add"]["verdict"]) == (1.05, "ok")
    assert by_id["W15:add"]["base_per_unit"] == 20_000
    assert by_id["W15:x*0.5"]["ratio"] == pytest.approx(1.1)
    assert by_id["W15:x*0.5"]["verdict"] == "WORSE"
    assert [r["kind"] for r in rows] == ["workload", "workload", "op", "op"]


def test_compare_flags_a_workload_or_op_missing_from_the_baseline():
    base = entries(current())
    del base["W4"], base["W15:add"]
    rows = ic.compare(current(), base)
    assert [(r["workload"], r["verdict"], r["ratio"]) for r in rows] == [
        ("W1", "ok", 1.0), ("W4", "no baseline", None), ("W15:add", "no baseline", None),
        ("W15:x*0.5", "ok", 1.0)]
    assert ic.exit_status(rows, []) == 1


def test_compare_flags_a_baseline_entry_no_longer_counted():
    base = entries(current())
    run = current()
    del run["W4"], run["W15:add"]
    rows = ic.compare(run, base)
    gone = [(r["workload"], r["kind"], r["instructions"], r["baseline"], r["verdict"])
            for r in rows if r["verdict"] != "ok"]
    assert gone == [("W4", "workload", None, 3_000_000, "not counted"),
                    ("W15:add", "op", None, 400_000, "not counted")]
    assert ic.exit_status(rows, []) == 1


def test_exit_status():
    base = entries(current())
    same = ic.compare(current(), base)
    assert ic.exit_status(same, []) == 0
    assert ic.exit_status(ic.compare(current(w4=1_000_100), base), []) == 0    # better passes
    assert ic.exit_status(ic.compare(current(add=100_100), base), []) == 0
    assert ic.exit_status(ic.compare(current(w1=2_200_100), base), []) == 1
    assert ic.exit_status(ic.compare(current(add=440_100), base), []) == 1    # one op worse
    assert ic.exit_status(same, [("numpy", "2.4.6", "2.5.0")]) == 1


def test_environment_differences_name_the_pinned_keys_that_differ():
    here = dict(ENV, numpy="2.5.0", compiler="clang 19", cpu="another processor")
    recorded = dict(ENV, cpu="one processor")
    assert ic.environment_differences(here, recorded) == [
        ("numpy", "2.4.6", "2.5.0"), ("compiler", ENV["compiler"], "clang 19")]
    assert ic.environment_differences(ENV, dict(ENV, extra="x")) == []
    missing = {k: v for k, v in ENV.items() if k != "valgrind"}
    assert ic.environment_differences(ENV, missing) == [("valgrind", None, "valgrind-3.19.0")]


def test_merge_runs_takes_the_median_and_the_variation_between_runs():
    runs = [current(w1=2_000_100), current(w1=2_002_100), current(w1=1_999_100)]
    merged = ic.merge_runs(runs)
    assert merged["W1"]["instructions"] == 2_000_000
    assert merged["W1"]["runs"] == [2_000_000, 2_002_000, 1_999_000]
    assert merged["W1"]["between_runs"] == pytest.approx(3000 / 2_000_000)
    assert merged["W4"]["between_runs"] == 0.0


def test_table_shows_counts_per_unit_baseline_and_ratio():
    base = entries(current())
    table = ic.format_table(ic.compare(current(w1=2_100_100), base))
    w1 = next(ln for ln in table.splitlines() if ln.startswith("W1 "))
    assert "2,100,000" in w1 and "1,050/op" in w1 and "2,000,000" in w1 and "1.0500" in w1
    assert w1.endswith("ok")
    assert "add" not in table                    # the ops have their own table


def test_op_table_shows_each_op_per_call_against_its_baseline():
    base = entries(current())
    table = ic.format_op_table(ic.compare(current(add=460_100), base))
    lines = table.splitlines()
    assert lines[0].startswith("W15 op (4,)") and "instructions/call" in lines[0]
    add = next(ln for ln in lines if ln.startswith("add "))
    assert add.split() == ["add", "23,000", "20,000", "1.1500", "WORSE"]
    half = next(ln for ln in lines if ln.startswith("x*0.5 "))
    assert half.split() == ["x*0.5", "15,000", "15,000", "1.0000", "ok"]
    assert not any(ln.startswith(("W1 ", "W4 ")) for ln in lines)
    assert ic.format_op_table(ic.compare({"W1": current()["W1"]}, {})) == ""


def test_tables_show_what_is_not_counted_or_has_no_baseline():
    run = current()
    del run["W15:add"]
    text = ic.format_tables(ic.compare(run, entries(current())))
    add = next(ln for ln in text.splitlines() if ln.startswith("add "))
    assert add.split() == ["add", "-", "20,000", "-", "not", "counted"]
    assert "W4 custom Function" in text and "x*0.5" in text
    w1 = next(ln for ln in ic.format_tables(ic.compare(current(), {})).splitlines()
              if ln.startswith("W1 "))
    assert w1.split()[-4:] == ["-", "-", "no", "baseline"]


# ------------------------------------------------------------------------------------------
# the command, with the measurement replaced by fake counts
# ------------------------------------------------------------------------------------------
@pytest.fixture
def fake_guard(monkeypatch, tmp_path):
    """The guard with valgrind "present" and each run giving ``counts['run']``."""
    counts = {"run": current(), "env": dict(ENV)}
    monkeypatch.setattr(ic.shutil, "which", lambda name: "/bin/" + name)
    monkeypatch.setattr(ic, "environment", lambda: counts["env"])
    monkeypatch.setattr(ic, "build_helper", lambda folder: "helper.so")
    monkeypatch.setattr(ic, "prime", lambda helper, folder, reps, op_reps: None)
    monkeypatch.setattr(ic, "run_valgrind",
                        lambda helper, folder, reps, op_reps: (counts["run"], {"reps": reps}))
    counts["path"] = tmp_path / "baseline.json"
    return counts


def test_without_valgrind_the_guard_says_so_and_fails(monkeypatch, capsys):
    monkeypatch.setattr(ic.shutil, "which", lambda name: None)
    assert ic.main([]) == 2
    assert "valgrind is not installed" in capsys.readouterr().err


def test_update_writes_a_baseline_that_then_passes(fake_guard, capsys):
    path = str(fake_guard["path"])
    assert ic.main(["--update", "--baseline", path]) == 0
    written = json.loads(fake_guard["path"].read_text())
    assert written["environment"] == ENV
    assert written["workloads"]["W1"]["instructions"] == 2_000_000
    assert written["ops"]["add"]["instructions"] == 400_000
    assert ic.main(["--baseline", path]) == 0
    out = capsys.readouterr().out
    assert "!!" not in out and "W15 op (4,)" in out


@pytest.mark.parametrize("worse, named", [({"w1": 2_120_100}, "W1"),
                                           ({"add": 424_100}, "W15 add")],
                         ids=["a workload", "one op, by name"])
def test_a_regression_beyond_five_percent_fails_loudly(fake_guard, capsys, worse, named):
    path = str(fake_guard["path"])
    ic.main(["--update", "--baseline", path])
    fake_guard["run"] = current(**worse)
    assert ic.main(["--baseline", path]) == 1
    assert f"!! {named}: +6.00% instructions per repetition" in capsys.readouterr().out


def test_an_op_added_or_gone_fails_and_names_update(fake_guard, capsys):
    path = str(fake_guard["path"])
    run = current()
    fake_guard["run"] = {k: v for k, v in run.items() if k != "W15:add"}
    ic.main(["--update", "--baseline", path])
    fake_guard["run"] = run                      # add is new
    assert ic.main(["--baseline", path]) == 1
    out = capsys.readouterr().out
    assert "!! W15 add: no baseline" in out and "--update" in out
    fake_guard["run"] = {k: v for k, v in run.items() if k != "W15:x*0.5"}
    assert ic.main(["--baseline", path]) == 1
    assert "!! W15 x*0.5: not counted" in capsys.readouterr().out


def test_an_improvement_beyond_five_percent_passes_and_suggests_update(fake_guard, capsys):
    path = str(fake_guard["path"])
    ic.main(["--update", "--baseline", path])
    fake_guard["run"] = current(w4=2_700_100)
    assert ic.main(["--baseline", path]) == 0
    out = capsys.readouterr().out
    assert "W4: -10.00%" in out and "consider --update" in out and "!!" not in out


def test_another_environment_fails_loudly_even_with_equal_counts(fake_guard, capsys):
    path = str(fake_guard["path"])
    ic.main(["--update", "--baseline", path])
    fake_guard["env"] = dict(ENV, Cython="3.4.0")
    assert ic.main(["--baseline", path]) == 1
    out = capsys.readouterr().out
    assert "not the baseline's" in out and "Cython: baseline '3.3.1', here '3.4.0'" in out


def test_no_baseline_fails_and_names_update(fake_guard, capsys):
    assert ic.main(["--baseline", str(fake_guard["path"])]) == 1
    assert "no baseline at" in capsys.readouterr().out


# ------------------------------------------------------------------------------------------
# the measuring functions on the real cases, the probe replaced by one that records the regions
# ------------------------------------------------------------------------------------------
class FakeProbe:
    """The callgrind helper's calls, recorded in ``calls``: ("begin",) and ("end", label)."""

    def __init__(self, calls=None):
        self.calls = [] if calls is None else calls

    def icount_begin(self):
        self.calls.append(("begin",))

    def icount_end(self, label):
        self.calls.append(("end", label.decode()))


@pytest.fixture
def lucid_lib():
    lib, why = _harness.load_lib("lucid")
    assert lib is not None, why
    return lib


def test_w14_is_counted_at_its_1000_op_variant(lucid_lib):
    (_, variant, nodes), = [w for w in ic.WORKLOADS if w[0] == "w14_mixed_ops"]
    assert (variant, nodes) == ("1e3", 1_000)
    probe = FakeProbe()
    info = ic.measure_workload(_harness, lucid_lib, probe, w14, variant, nodes, 2)
    assert info == {"name": "mixed-op graph (1e3)", "nodes": 1_000, "unit": "op"}
    assert probe.calls == [("begin",), ("end", "W14/0"), ("begin",), ("end", "W14/1")]


def test_every_op_of_the_table_is_counted_at_4_with_its_own_regions(lucid_lib, monkeypatch):
    monkeypatch.setattr(w15, "ONLY", ("add", "exp"))
    probe = FakeProbe()
    meta = ic.measure_ops(_harness, lucid_lib, probe, w15, 2)
    assert list(meta) == ["W15:x*0.5", "W15:add", "W15:exp"]
    assert meta["W15:add"] == {"name": "add", "nodes": w15.CALLS, "unit": "call", "kind": "op"}
    labels = [c[1] for c in probe.calls if c[0] == "end"]
    assert labels == [f"W15:{op}/{i}" for op in ("x*0.5", "add", "exp") for i in (0, 1)]
    assert probe.calls[::2] == [("begin",)] * 6


def test_an_ops_region_holds_its_calls_and_nothing_else(lucid_lib, monkeypatch):
    """The region is the op's case (W15's): CALLS calls of the op (each with its backward)."""
    monkeypatch.setattr(w15, "ONLY", ("mul",))
    log = []
    real_call = w15.call

    def logged(mod, op, leaves, consts):
        log.append(op)
        return real_call(mod, op, leaves, consts)

    monkeypatch.setattr(w15, "call", logged)
    ic.measure_ops(_harness, lucid_lib, FakeProbe(log), w15, 1)
    end = log.index(("end", "W15:mul/0"))
    begin = end - 1 - log[end - 1::-1].index(("begin",))
    assert log[begin + 1:end] == ["mul"] * w15.CALLS


# ------------------------------------------------------------------------------------------
# the committed files agree with each other
# ------------------------------------------------------------------------------------------
def test_committed_baseline_matches_the_constraints_file():
    baseline = json.loads((ROOT / "benchmarks" / "instructions_baseline.json").read_text())
    assert set(baseline["environment"]) >= set(ic.PINNED)
    assert set(baseline["workloads"]) == {"W1", "W4", "W6", "W14"}
    pins = dict(line.split("==") for line in
                (ROOT / "benchmarks" / "constraints.txt").read_text().splitlines()
                if line and not line.startswith("#"))
    for dist in ("numpy", "Cython", "setuptools"):
        assert baseline["environment"][dist] == pins[dist], dist


def test_committed_baseline_has_every_op_of_the_table():
    """A new pointwise op (a new row of W15) needs a new baseline, and so does a renamed one."""
    baseline = json.loads((ROOT / "benchmarks" / "instructions_baseline.json").read_text())
    assert list(baseline["ops"]) == sorted(w15.table_ops())
    assert all(e["nodes"] == w15.CALLS and e["unit"] == "call" for e in baseline["ops"].values())
