"""What always-on creation sites cost: W1 and W4 (fwd+bwd) with recording on and off, interleaved.

    python benchmarks/creation_site_cost.py [--rounds N]

Each round times one forward+backward of each workload with lucid.autograd.set_creation_sites
on, then off (alternating which goes first), so both settings see the same machine; the table
shows medians and the on/off ratio.
"""
import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import argparse        # noqa: E402
import statistics      # noqa: E402
import time            # noqa: E402

import lucid           # noqa: E402
from benchmarks import w1_deep_chain, w4_custom_function   # noqa: E402


def cases():
    x0 = w1_deep_chain.leaf_values()
    x1 = lucid.from_numpy(x0.copy()).requires_grad_()
    double = w4_custom_function.make_double(lucid.autograd.Function)
    x4 = lucid.from_numpy(x0.copy()).requires_grad_()

    def w4():
        y = x4
        for _ in range(w4_custom_function.STEPS):
            y = double.apply(y)
        return y.sum()

    return {"W1": (x1, lambda: w1_deep_chain.autograd_forward(x1)), "W4": (x4, w4)}


def once(leaf, forward):
    leaf.grad = None
    start = time.perf_counter_ns()
    forward().backward()
    return time.perf_counter_ns() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    rounds = parser.parse_args().rounds
    times = {(w, s): [] for w in ("W1", "W4") for s in (True, False)}
    work = cases()
    for r in range(rounds):
        for name, (leaf, forward) in work.items():
            for setting in ((True, False) if r % 2 else (False, True)):
                lucid.autograd.set_creation_sites(setting)
                times[(name, setting)].append(once(leaf, forward))
    lucid.autograd.set_creation_sites(True)
    print(f"{'workload':10s} {'sites on':>12s} {'sites off':>12s} {'on/off':>8s}")
    for name in ("W1", "W4"):
        on = statistics.median(times[(name, True)]) / 1e6
        off = statistics.median(times[(name, False)]) / 1e6
        print(f"{name:10s} {on:9.3f} ms {off:9.3f} ms {on / off:8.3f}")


if __name__ == "__main__":
    main()
