"""Cost of the functional transforms on a small MLP loss, as ratios to a plain gradient.

    python -m benchmarks.functional_mlp [--repeat 30]

The loss is mean((tanh(X W1 + b1) W2 + b2 - Y)^2) in float64 (X: 64 x 8, 16 hidden units,
161 parameters). Each case is timed in `repeat` interleaved rounds of ~10 ms batches of calls
(median per call, a gc.collect() before each batch); the ratios divide by the median of
`lucid.autograd.grad` of the loss (forward + backward). hvp reports the
path it took (forward-over-reverse, or reverse-over-reverse when no tangent reached the gradient).
Every result is checked against reverse-over-reverse before timing.
"""
import argparse
import gc
import statistics
import time

import numpy as np

import lucid
from lucid.autograd import functional as F
from lucid.autograd.functional import _hvp_forward_over_reverse
from lucid.func import grad as func_grad, jacrev


def make_problem(seed=0, n=64, d=8, h=16):
    rng = np.random.default_rng(seed)
    X = lucid.tensor(rng.standard_normal((n, d)), dtype=lucid.float64)
    Y = lucid.tensor(rng.standard_normal((n, 1)), dtype=lucid.float64)
    shapes = [(d, h), (h,), (h, 1), (1,)]
    params = tuple(lucid.tensor(rng.standard_normal(s) * 0.3, dtype=lucid.float64)
                   for s in shapes)
    v = tuple(lucid.tensor(rng.standard_normal(s), dtype=lucid.float64) for s in shapes)

    def loss(W1, b1, W2, b2):
        return (((X @ W1 + b1).tanh() @ W2 + b2 - Y) ** 2).mean()
    return loss, params, v


def cases(loss, params, v):
    leaves = tuple(p.detach().requires_grad_() for p in params)
    argnums = tuple(range(len(params)))
    return {
        "autograd.grad": lambda: lucid.autograd.grad(loss(*leaves), leaves),
        "func.grad": lambda: func_grad(loss, argnums)(*params),
        "functional.vjp": lambda: F.vjp(loss, params),
        "functional.hvp": lambda: F.hvp(loss, params, v),
        "functional.vhp": lambda: F.vhp(loss, params, v),
        "functional.hessian": lambda: F.hessian(loss, params),
        "func jacrev(jacrev)": lambda: jacrev(jacrev(loss, argnums), argnums)(*params),
    }


def check(loss, params, v, funcs):
    """Every case against reverse-over-reverse / autograd.grad."""
    ref_grad = [t.numpy() for t in funcs["autograd.grad"]()]
    for name in ("func.grad", "functional.vjp"):
        got = funcs[name]()
        got = got[1] if name == "functional.vjp" else got
        assert all(np.allclose(a.numpy(), b) for a, b in zip(got, ref_grad)), name
    hv_ref = [t.numpy() for t in F.vhp(loss, params, v)[1]]
    assert all(np.allclose(a.numpy(), b) for a, b in zip(F.hvp(loss, params, v)[1], hv_ref))
    H = F.hessian(loss, params)
    Hv = [sum(np.tensordot(H[i][j].numpy(), v[j].numpy(), axes=v[j].ndim)
              for j in range(len(params))) for i in range(len(params))]
    assert all(np.allclose(a, b) for a, b in zip(Hv, hv_ref))
    Hr = funcs["func jacrev(jacrev)"]()
    assert all(np.allclose(Hr[i][j].numpy(), H[i][j].numpy())
               for i in range(len(params)) for j in range(len(params)))


def calls_per_batch(fn, seconds=0.01):
    """How many calls make a batch of about `seconds` (at least one)."""
    start = time.perf_counter()
    fn()
    return max(1, int(seconds / max(time.perf_counter() - start, 1e-7)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    loss, params, v = make_problem()
    funcs = cases(loss, params, v)
    check(loss, params, v, funcs)
    forward = _hvp_forward_over_reverse(loss, params, v, False, False) is not None
    batch = {name: calls_per_batch(fn) for name, fn in funcs.items()}
    times = {name: [] for name in funcs}
    for _ in range(args.repeat):
        for name, fn in funcs.items():
            gc.collect()                    # no batch pays for the garbage of the one before
            start = time.perf_counter()
            for _ in range(batch[name]):
                fn()
            times[name].append((time.perf_counter() - start) / batch[name])
    base = statistics.median(times["autograd.grad"])
    n = sum(p.numel() for p in params)
    print(f"MLP loss, {n} parameters, float64, median of {args.repeat}; hvp path: "
          f"{'forward-over-reverse' if forward else 'reverse-over-reverse (fallback)'}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"  {name:22s} {med * 1e6:10.1f} us   x{med / base:7.2f}")


if __name__ == "__main__":
    main()
