"""W15 per-op table: every elementwise op of lucid's registry (batching family "pointwise"), one
call plus its backward at a time, on (4,) and (1000,) float32 leaves, against lucid's `x * 0.5`.

One timed call: the leaves' ``.grad`` set to None, the op on leaves that require grad, then
``backward`` with a ones gradient (no ``.sum()`` in the timed region). A sample is ``CALLS`` such
calls (the ``fwd`` column holds all of it; there is no separate backward phase); the table gives
ns per call. Every op's gradient is checked before timing against a central difference of
lucid's own forward in float64. The ops come from ``lucid._core.registered_ops()``, so a new
pointwise op gets a row without a change here: its leaves are signed values in +-(0.1, 0.9)
unless ``DOMAINS`` says otherwise, and it is called as ``op(*leaves)`` unless ``CALLERS`` says how.
Ops with a boolean result (no gradient) have no row; ``NO_ROW`` says why for each.
"""
import numpy as np

from . import _harness as h
from . import _report
from . import _stats

ID = "W15"
NAME = "per-op table"
DESCRIPTION = ("every pointwise op of the registry, op + backward(ones) on (4,) and (1000,) "
               "float32, against x * 0.5")
METRIC = "fwd+bwd"
NODES = None
TARGETS = {}
MEMORY = False
KIND = "op table"
RTOL, ATOL = 2e-3, 1e-4
SIZES = (4, 1000)
CALLS = 20                        # op calls per timed sample
TARGET = 1.5                      # lucid's op at (4,) within 1.5x of its own x * 0.5 (issue 31)
BASELINE = "x*0.5"
STEP = 1e-6                       # central difference step (float64)
POLICY = {"quick": dict(warmup=1, min_repeats=5, min_time=0.05, max_time=1.0),
          "full": dict(warmup=2, min_repeats=15, min_time=0.5, max_time=5.0)}
ONLY = None                       # a tuple of op names restricts the table (the tests)

_BOOLEAN = "boolean result: no gradient to time"
NO_ROW = {name: _BOOLEAN for name in (
    "lt", "le", "eq", "ne", "gt", "ge", "isnan", "isinf", "isfinite", "logical_and",
    "logical_or", "logical_xor", "logical_not", "isclose")}

_COMPLEX = ("a complex number's part or builder: on a real leaf it is the leaf "
            "itself (conj, real), refuses it (imag), or makes a complex result (complex, polar), "
            "whose backward needs a complex gradient")
NO_ROW.update({name: _COMPLEX for name in (
    "conj", "conj_physical", "real", "imag", "complex", "polar")})

# the leaves' domains: "signed" +-(0.1, 0.9), "positive" (0.5, 2)
DOMAINS = {name: ("positive",) for name in (
    "log", "log2", "log10", "sqrt", "rsqrt", "lgamma", "digamma", "polygamma")}
DOMAINS.update({name: ("signed", "signed") for name in (
    "add", "sub", "mul", "div", "maximum", "minimum", "atan2", "logaddexp", "logaddexp2",
    "hypot", "copysign", "where")})
DOMAINS.update({"pow": ("positive", "signed"), "xlogy": ("signed", "positive"),
                "fmod": ("signed", "positive"), "remainder": ("signed", "positive")})

# ops called otherwise than op(*leaves): (module, leaves, constants) -> tensor; the constants
# are built from the float32 inputs outside the timed region (mask: input 0 > 0)
CALLERS = {
    BASELINE: lambda m, t, c: t[0] * 0.5,
    "clamp": lambda m, t, c: m.clamp(t[0], -0.5, 0.5),
    "clamp_min": lambda m, t, c: m.clamp_min(t[0], -0.2),
    "clamp_max": lambda m, t, c: m.clamp_max(t[0], 0.2),
    "where": lambda m, t, c: m.where(c[0], t[0], t[1]),
    "masked_fill": lambda m, t, c: m.masked_fill(t[0], c[0], 0.0),
    "polygamma": lambda m, t, c: m.polygamma(1, t[0]),
}
MASKED = ("where", "masked_fill")


def table_ops():
    """The ops with a row, in the registry's order (the baseline x * 0.5 first)."""
    from lucid import _core
    names = [r.name for r in _core.registered_ops()
             if r.batching == "pointwise" and r.name not in NO_ROW]
    return [BASELINE] + [n for n in names if ONLY is None or n in ONLY]


def function(mod, name):
    """``mod.name``, or ``mod.nn.functional.name`` (torch's silu, gelu, softplus, ...)."""
    fn = getattr(mod, name, None)
    return fn if fn is not None else getattr(mod.nn.functional, name)


def call(mod, op, leaves, consts):
    caller = CALLERS.get(op)
    return caller(mod, leaves, consts) if caller else function(mod, op)(*leaves)


def inputs(op, n):
    """(the leaves' float32 values, the constants' values) of ``op`` at size ``n``, seeded."""
    rng = np.random.default_rng([h.SEED, n, sum(map(ord, op))])
    leaves = []
    for domain in DOMAINS.get(op, ("signed",)):
        if domain == "positive":
            leaves.append(rng.uniform(0.5, 2.0, n).astype(np.float32))
        else:
            sign = np.where(rng.random(n) < 0.5, -1.0, 1.0)
            leaves.append((sign * rng.uniform(0.1, 0.9, n)).astype(np.float32))
    return leaves, [leaves[0] > 0] if op in MASKED else []


def variant(op, n):
    return f"{op}@{n}"


def cell(lib, op, n):
    """The harness's cell name: the library alone for the main variant (x * 0.5 at (4,))."""
    v = variant(op, n)
    return lib if v == variant(BASELINE, SIZES[0]) else f"{lib}:{v}"


def op_case(lib, op, n):
    values, const_values = inputs(op, n)
    leaves = [lib.leaf(a) for a in values]
    consts = [lib.const(a) for a in const_values]
    ones = lib.const(np.ones(n, np.float32))
    mod = lib.mod

    def forward():
        for _ in range(CALLS):
            for t in leaves:
                t.grad = None
            call(mod, op, leaves, consts).backward(ones)

    return h.Case(forward, None, lambda: [lib.to_numpy(t.grad) for t in leaves],
                  lambda: None)


def setup(lib, quick):
    if lib.name == "numpy":
        raise h.NotAvailable("no floor: each op's gradient is checked against central "
                             "differences")
    return {variant(op, n): op_case(lib, op, n) for n in SIZES for op in table_ops()}


def reference(name):
    """The gradients of ``sum(op(leaves))``: central differences of lucid's op in float64."""
    import lucid
    op, n = name.rsplit("@", 1)
    values, const_values = inputs(op, int(n))
    values = [a.astype(np.float64) for a in values]
    consts = [lucid.tensor(a) for a in const_values]

    def f(arrays):
        with lucid.no_grad():
            return call(lucid, op, [lucid.tensor(a) for a in arrays], consts).numpy()

    grads = []
    for k in range(len(values)):               # elementwise: one shift of every element at once
        shifted = [[a + s * STEP if j == k else a for j, a in enumerate(values)]
                   for s in (1, -1)]
        grads.append(((f(shifted[0]) - f(shifted[1])) / (2 * STEP)).astype(np.float32))
    return grads


def ratio_specs(ops):
    """Per op: lucid against its own x * 0.5 at (4,) (the target), lucid/torch at each size."""
    small, specs = SIZES[0], []
    for op in ops:
        if op != BASELINE:
                specs.append({"variant": op, "name": f"lucid/x*0.5 ({small},)",
                          "num": cell("lucid", op, small), "den": cell("lucid", BASELINE, small),
                          "target": TARGET})
        for n in SIZES:
            specs.append({"variant": op, "name": f"lucid/torch ({n},)",
                          "num": cell("lucid", op, n), "den": cell("torch", op, n),
                          "target": None})
    return specs


def assemble(wl):
    """run.py's hook: the table's own ratios, the calls per sample and the ops without a row."""
    ops = table_ops()
    wl.update(kind=KIND, ops=ops, calls=CALLS, sizes=list(SIZES), ratio_specs=ratio_specs(ops),
              no_row=dict(NO_ROW))


def format_table(wl):
    small = SIZES[0]
    ratios = {(r["variant"], r["name"]): r for r in wl["ratios"]}
    rows = []
    for op in wl["ops"]:
        rec = wl["results"].get(cell("lucid", op, small)) or {}
        per_call = _report.metric_samples(rec)
        target = ratios.get((op, f"lucid/x*0.5 ({small},)"), {})
        status = rec.get("status", "-")
        rows.append([op if op != BASELINE else "x * 0.5",
                     status if per_call is None else f"{np.median(per_call) / wl['calls']:.0f}",
                     _report.fmt_interval(target), target.get("verdict", "-")]
                    + [_report.fmt_interval(ratios.get((op, f"lucid/torch ({n},)"), {}))
                       for n in wl["sizes"]])
    headers = ["op", f"ns/call ({small},)", f"lucid/x*0.5 ({small},)", f"<={TARGET:g}"] + [
        f"lucid/torch ({n},)" for n in wl["sizes"]]
    met = sum(r[3] == "met" for r in rows[1:])
    lines = [f"{ID} {NAME}: {DESCRIPTION}",
             f"One call: the leaves' .grad set to None, the op on float32 leaves requiring grad, "
             f"backward(ones); {wl['calls']} calls per timed sample; ns/call = lucid's median / "
             f"{wl['calls']}. Ratios of medians [{_stats.LEVEL:.0%} bootstrap interval]; target: "
             f"lucid's op at ({small},) <= {TARGET:g}x its own x * 0.5 (met/MISSED, ? when the "
             "interval straddles it)",
             _report.table(headers, rows),
             f"  target met by {met} of {len(rows) - 1} ops"]
    reasons = {}
    for op, why in sorted(wl.get("no_row", {}).items()):
        reasons.setdefault(why, []).append(op)
    lines += [f"  no row ({why}): {' '.join(ops)}" for why, ops in reasons.items()]
    grouped = {}                                 # a library missing: one note, not one a cell
    for c, r in wl["results"].items():
        if r and r.get("status") != "ok" and not c.startswith("numpy"):
            grouped.setdefault((c.split(":")[0], r.get("status"), r.get("message")),
                               []).append(c.split(":")[-1] if ":" in c else variant(BASELINE,
                                                                                   small))
    notes = [f"  {lib} {st} ({' '.join(where)}): {msg}"
             for (lib, st, msg), where in sorted(grouped.items(), key=str)]
    return "\n".join(_report.wrapped(line) for line in lines + notes)
