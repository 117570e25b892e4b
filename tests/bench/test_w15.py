"""W15's per-op table: the registry's pointwise ops all have a row or a stated reason, its
gradient reference (central differences) agrees with PyTorch, and the table's machinery (checks,
interleaved timing, ratios, verdicts, the printed table) on three ops, tiny repetition counts."""
import sys

import numpy as np
import pytest

import lucid
from lucid import _core
from support.paths import ROOT

sys.path.insert(0, str(ROOT))
from benchmarks import _harness, _report  # noqa: E402
from benchmarks import w15_op_table as w15  # noqa: E402

POINTWISE = [r.name for r in _core.registered_ops() if r.batching == "pointwise"]
TINY = {"quick": dict(warmup=1, min_repeats=3, min_time=1e-4, max_time=0.5)}


def test_every_pointwise_op_has_a_row_or_a_stated_reason():
    rows = w15.table_ops()
    assert rows[0] == w15.BASELINE
    assert set(rows[1:]).isdisjoint(w15.NO_ROW)
    assert set(rows[1:]) | set(w15.NO_ROW) == set(POINTWISE)
    assert all(w15.NO_ROW.values())              # a reason for each


@pytest.mark.parametrize("name", sorted(w15.NO_ROW))
def test_an_op_without_a_row_has_no_gradient(name):
    """The reason given holds: a boolean result does not require grad; a complex number's part
    is the real leaf itself, refuses it, or gives a complex result."""
    x = lucid.tensor(np.float32([0.5, -0.5, 2.0]), requires_grad=True)
    if w15.NO_ROW[name] == w15._COMPLEX:
        if name in ("conj", "conj_physical", "real"):
            assert getattr(lucid, name)(x) is x
        elif name == "imag":
            with pytest.raises(RuntimeError, match="non-complex"):
                lucid.imag(x)
        else:
            assert getattr(lucid, name)(x, x).dtype == lucid.complex64
        return
    args = (x, x * 2) if name in ("lt", "le", "eq", "ne", "gt", "ge", "isclose") else (x,)
    if name.startswith("logical") and name != "logical_not":
        args = (x, x)
    out = getattr(lucid, name)(*args)
    assert out.dtype == lucid.bool and not out.requires_grad


def torch_gradients(torch, op, n):
    """The gradients of sum(op(leaves)) by torch's autograd in float64."""
    values, consts = w15.inputs(op, n)
    leaves = [torch.tensor(a.astype(np.float64), requires_grad=True) for a in values]
    out = w15.call(torch, op, leaves, [torch.tensor(c) for c in consts])
    out.backward(torch.ones_like(out))
    return [t.grad.numpy() for t in leaves]


@pytest.mark.parametrize("op", w15.table_ops())
def test_the_reference_gradient_agrees_with_torch(op):
    """The check's reference (central differences of lucid's forward) against torch's gradient
    in float64, at (4,) and (1000,): so a WRONG in the table is lucid's, not the reference's."""
    torch = pytest.importorskip("torch", reason="torch gives the independent gradient")
    for n in w15.SIZES:
        want = torch_gradients(torch, op, n)
        got = w15.reference(w15.variant(op, n))
        assert len(got) == len(want)
        for g, r in zip(got, want):
            assert g.dtype == np.float32 and g.shape == (n,)
            np.testing.assert_allclose(g, r, rtol=1e-3, atol=1e-4 * max(1.0, np.abs(r).max()))


def measure(monkeypatch, ops, reference=None):
    """Run W15 through the harness on ``ops`` with tiny repetition counts; returns the workload
    record as run.py assembles it, derived."""
    monkeypatch.setattr(w15, "ONLY", tuple(ops))
    monkeypatch.setattr(w15, "POLICY", TINY)
    monkeypatch.setattr(w15, "CALLS", 2)
    if reference is not None:
        monkeypatch.setattr(w15, "reference", reference)
    libs, errors = {}, {}
    for name in ("numpy", "torch", "lucid"):
        lib, why = _harness.load_lib(name)
        if lib is None:
            errors[name] = why
        else:
            libs[name] = lib
    records = []
    _harness.run_workload(w15, libs, errors, True, records.append, "test")
    wl = {"id": w15.ID, "name": w15.NAME, "metric": w15.METRIC, "targets": {},
          "results": {r["lib"]: r for r in records if r["type"] == "result"}}
    w15.assemble(wl)
    _report.derive(wl)
    return wl


def test_the_table_on_three_ops(monkeypatch):
    wl = measure(monkeypatch, ("exp", "atan2", "where"))
    assert wl["ops"] == [w15.BASELINE] + [n for n in POINTWISE if n in ("exp", "atan2", "where")]
    cells = {c: r["status"] for c, r in wl["results"].items()}
    have_torch = cells.get("torch") == "ok"
    expect = {w15.cell(lib, op, n) for op in wl["ops"] for n in w15.SIZES
              for lib in ("lucid",) + (("torch",) if have_torch else ())}
    assert {c for c, st in cells.items() if st == "ok"} == expect
    assert cells["numpy"] == "n/a"
    by = {(r["variant"], r["name"]): r for r in wl["ratios"]}
    for op in ("exp", "atan2", "where"):
        r = by[(op, "lucid/x*0.5 (4,)")]
        num = np.median(_report.metric_samples(wl["results"][w15.cell("lucid", op, 4)]))
        den = np.median(_report.metric_samples(wl["results"]["lucid"]))
        assert r["value"] == pytest.approx(num / den)
        assert r["verdict"] == _report.judge(r["value"], r["low"], r["high"], w15.TARGET)
        assert ("value" in by[(op, "lucid/torch (1000,)")]) == have_torch
    text = w15.format_table(wl)
    lines = text.splitlines()
    assert [ln.split()[0] for ln in lines if ln.split()[0] in ("exp", "atan2", "where")] == \
        wl["ops"][1:]
    assert any(ln.startswith("x * 0.5 ") for ln in lines)
    assert "no row (boolean result" in text
    assert max(map(len, lines)) <= 120


def test_a_wrong_gradient_is_reported(monkeypatch):
    real = w15.reference

    def doubled(name):
        return [2 * g for g in real(name)] if name.startswith("exp@") else real(name)

    wl = measure(monkeypatch, ("exp",), doubled)
    assert wl["results"][w15.cell("lucid", "exp", 4)]["status"] == "WRONG"
    assert wl["results"][w15.cell("lucid", "exp", 1000)]["status"] == "WRONG"
    assert wl["results"]["lucid"]["status"] == "ok"            # x * 0.5 is checked as before
    text = w15.format_table(wl)
    assert "lucid WRONG (exp@4)" in text and "lucid WRONG (exp@1000)" in text
    assert "gradient 0" in text
