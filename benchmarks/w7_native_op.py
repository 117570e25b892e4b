"""W7 native vs Python vs composed: softplus three ways, forward and backward, small and large.

    python benchmarks/w7_native_op.py [--quick]      (run.py runs it too, after W1-W6)

- native:   lucid_softplus.softplus, the Cython op of examples/native_op (a native forward kernel
            and a native backward node); built with
            `pip install --no-build-isolation -e examples/native_op`
- Function: a Python lucid.autograd.Function with the same math in lucid ops
- composed: the formula written with built-in ops, max(x, 0) + log(1 + exp(-|x|))
The three gradients are compared with NumPy's before anything is timed. It is a lucid-only
workload: the ratios are to the native op.
"""
import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import statistics      # noqa: E402
import time            # noqa: E402

import numpy as np     # noqa: E402

ID = "W7"
SIZES = {"small (16,)": 16, "large (1_000_000,)": 1_000_000}


def variants(lucid):
    """name -> softplus(x) for each way there is; a missing native op is reported, not fatal."""
    class Softplus(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return composed(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.sigmoid()

    def composed(x):
        return x.clamp(min=0.0) + (1.0 + (-x.abs()).exp()).log()

    out = {}
    try:
        from lucid_softplus import softplus
        out["native"] = softplus
    except ImportError as e:
        out["native"] = e
    out["Function"] = Softplus.apply
    out["composed"] = composed
    return out


def time_one(lucid, fn, x0, repeats, min_seconds):
    fwd, bwd = [], []
    x = lucid.from_numpy(x0.copy()).requires_grad_()
    start = time.perf_counter()
    while len(fwd) < repeats or time.perf_counter() - start < min_seconds:
        x.grad = None
        t0 = time.perf_counter_ns()
        y = fn(x).sum()
        t1 = time.perf_counter_ns()
        y.backward()
        t2 = time.perf_counter_ns()
        fwd.append(t1 - t0)
        bwd.append(t2 - t1)
    return statistics.median(fwd), statistics.median(bwd)


def check(lucid, fn, x0):
    x = lucid.from_numpy(x0.copy()).requires_grad_()
    fn(x).sum().backward()
    expected = 1.0 / (1.0 + np.exp(-x0.astype(np.float64)))
    return np.allclose(x.grad.numpy(), expected, rtol=1e-4, atol=1e-5)


def fmt(ns):
    return f"{ns / 1e3:9.1f} us" if ns < 1e6 else f"{ns / 1e6:9.2f} ms"


def run(quick=False):
    """Measure and return the printed table (a str) and the records (a list of dicts)."""
    import lucid
    rows, records = [], []
    repeats, min_seconds = (3, 0.05) if quick else (20, 0.5)
    for label, n in SIZES.items():
        x0 = np.random.default_rng(0).standard_normal(n).astype(np.float32)
        base = None
        for name, fn in variants(lucid).items():
            if isinstance(fn, Exception):
                rows.append(f"{label:20s} {name:9s} n/a: {fn} (build examples/native_op)")
                records.append({"size": label, "variant": name, "status": "n/a"})
                continue
            if not check(lucid, fn, x0):
                rows.append(f"{label:20s} {name:9s} WRONG gradient")
                records.append({"size": label, "variant": name, "status": "WRONG"})
                continue
            f, b = time_one(lucid, fn, x0, repeats if n < 10**5 else max(3, repeats // 4),
                            min_seconds)
            base = base or (f + b)
            rows.append(f"{label:20s} {name:9s} {fmt(f)} {fmt(b)} {(f + b) / base:10.2f}")
            records.append({"size": label, "variant": name, "status": "ok", "fwd_ns": f,
                            "bwd_ns": b})
    header = (f"{'size':20s} {'variant':9s} {'fwd':>12s} {'bwd':>12s} {'fwd+bwd / first':>10s}\n"
              + "-" * 70)
    return "W7 softplus: native op vs Python Function vs composed ops (medians)\n" + header + \
        "\n" + "\n".join(rows), records


if __name__ == "__main__":
    table, _ = run(quick="--quick" in sys.argv)
    print(table)
