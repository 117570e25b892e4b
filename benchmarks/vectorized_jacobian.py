"""autograd.functional.jacobian / hessian with vectorize=True (one vjp or jvp vmapped over the
identity) against vectorize=False (one pass per element), interleaved, medians and ratios.

    python benchmarks/vectorized_jacobian.py [--rounds N] [--size N]

The function is a small tanh layer in float64, R^n -> R^n for the Jacobians and R^n -> R for
the Hessian: the scientists' small-tensor case, where the per-pass overhead is the cost.
"""
import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import argparse        # noqa: E402
import statistics      # noqa: E402
import time            # noqa: E402

import numpy as np     # noqa: E402

import lucid           # noqa: E402
from lucid.autograd.functional import hessian, jacobian   # noqa: E402


def cases(n):
    rng = np.random.default_rng(0)
    W = lucid.tensor(rng.standard_normal((n, n)) / np.sqrt(n), dtype=lucid.float64)
    x = lucid.tensor(rng.standard_normal(n), dtype=lucid.float64)

    def layer(t):
        return (t @ W).tanh() @ W

    def energy(t):
        return (t @ W).tanh().sum()
    yield "jacobian reverse-mode", lambda v: jacobian(layer, x, vectorize=v)
    yield "jacobian forward-mode", lambda v: jacobian(layer, x, vectorize=v,
                                                      strategy="forward-mode")
    yield "hessian", lambda v: hessian(energy, x, vectorize=v)


def seconds(fn, number):
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--size", type=int, default=64)
    args = parser.parse_args()
    print(f"n = {args.size}, float64")
    print(f"{'':24} {'loop ms':>9} {'vectorized ms':>14} {'vectorized/loop':>16}")
    for name, run in cases(args.size):
        loop, vectorized = (lambda: run(False)), (lambda: run(True))
        np.testing.assert_allclose(run(True).numpy(), run(False).numpy(), rtol=1e-10, atol=1e-12)
        number = max(1, int(0.02 / seconds(loop, 1)))
        times = {"loop": [], "vectorized": []}
        for _ in range(args.rounds):
            times["loop"].append(seconds(loop, number))
            times["vectorized"].append(seconds(vectorized, number))
        a, b = (statistics.median(times[k]) * 1e3 for k in ("loop", "vectorized"))
        print(f"{name:24} {a:9.2f} {b:14.2f} {b / a:16.2f}")


if __name__ == "__main__":
    main()
