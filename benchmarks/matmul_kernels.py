"""Which kernel lucid.matmul uses for a stack of products (Note [Matmul kernels]), measured.

    python benchmarks/matmul_kernels.py [--rounds N]
    NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR" python benchmarks/matmul_kernels.py

For each shape pair it times np.matmul (NumPy's loop of one BLAS call per matrix) against the
alternative kernel (one GEMM over the stacked rows for a right operand that is one matrix;
einsum for a product over one contracted index), interleaved round by round, and prints the
medians, their ratio and the kernel lucid.matmul picks. A pick is right when the ratio
alternative/matmul is below 1 exactly where the pick says "alternative" (run it on both of
NumPy's x86 paths: the second command forces the AVX2 kernels).
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

STACK_KERNEL_MIN_SIZE = 4096       # lucid/ops/linalg/matmul.pxi
ONE_GEMM_MAX_ROWS = 2


def one_gemm(a, w):
    return np.matmul(a.reshape(-1, a.shape[-1]), w[(0,) * (w.ndim - 2)]).reshape(
        a.shape[:-1] + (w.shape[-1],))


def outer(a, b):
    return np.einsum("...ij,...jk->...ik", a, b)


def cases(dtype):
    rng = np.random.default_rng(0)
    for batch, rows, k, n in [(64, 1, 128, 128), (64, 2, 128, 128), (64, 8, 128, 128),
                              (256, 1, 32, 32), (16, 1, 16, 16), (16, 4, 16, 16),
                              (64, 1, 512, 256)]:
        a = rng.standard_normal((batch, rows, k)).astype(dtype)
        w = np.broadcast_to(rng.standard_normal((k, n)).astype(dtype), (batch, k, n))
        pick = ("alternative" if rows <= ONE_GEMM_MAX_ROWS and batch * rows * n >= STACK_KERNEL_MIN_SIZE
                else "matmul")
        yield f"({batch},{rows},{k}) @ W({k},{n}) stride 0", a, w, one_gemm, pick
    for batch, m, n in [(64, 128, 128), (64, 32, 32), (16, 16, 16), (4, 8, 8), (256, 64, 10)]:
        a = rng.standard_normal((batch, m, 1)).astype(dtype)
        b = rng.standard_normal((batch, 1, n)).astype(dtype)
        pick = "alternative" if batch * m * n >= STACK_KERNEL_MIN_SIZE else "matmul"
        yield f"({batch},{m},1) @ ({batch},1,{n}) outer", a, b, outer, pick


def median_seconds(fn, a, b, number):
    t0 = time.perf_counter()
    for _ in range(number):
        fn(a, b)
    return (time.perf_counter() - t0) / number


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    print(f"NPY_DISABLE_CPU_FEATURES={os.environ.get('NPY_DISABLE_CPU_FEATURES', '')!r}")
    print(f"{'shapes':40} {'dtype':8} {'matmul us':>10} {'alt us':>9} {'alt/matmul':>10}  "
          f"{'lucid picks':12} {'lucid us':>9}")
    for dtype in (np.float32, np.float64):
        for label, a, b, alternative, pick in cases(dtype):
            ta, tb = lucid.from_numpy(a), lucid.from_numpy(b)
            assert np.allclose(alternative(a, b), np.matmul(a, b), rtol=1e-4, atol=1e-4)
            number = max(1, int(2e-3 / max(median_seconds(np.matmul, a, b, 1), 1e-7)))
            times = {"matmul": [], "alt": [], "lucid": []}
            for _ in range(args.rounds):
                times["matmul"].append(median_seconds(np.matmul, a, b, number))
                times["alt"].append(median_seconds(alternative, a, b, number))
                times["lucid"].append(median_seconds(lucid.matmul, ta, tb, number))
            m, alt, luc = (statistics.median(times[key]) * 1e6 for key in ("matmul", "alt", "lucid"))
            print(f"{label:40} {np.dtype(dtype).name:8} {m:10.1f} {alt:9.1f} {alt / m:10.2f}  "
                  f"{pick:12} {luc:9.1f}")


if __name__ == "__main__":
    main()
