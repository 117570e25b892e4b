"""Newton's method on the N-dimensional Rosenbrock function, with lucid's gradient and Hessian.

    python examples/newton_rosenbrock.py [--n 10]

lucid.func.grad and lucid.func.hessian (forward-over-reverse) give the derivatives; they are
checked against scipy.optimize.rosen_der / rosen_hess at the start, as is a Hessian-vector
product of lucid.autograd.functional.hvp (which never forms H) against rosen_hess_prod.

Each Newton step solves (H + tau I) d = -g, with tau raised from 0 until the Cholesky
factorisation succeeds (H is indefinite away from the minimum), then backtracks until the
function decreases enough. The start is CUTEst's GENROSE one, x_i = i / (N + 1); from
(-1.2, 1, -1.2, 1, ...) this chained Rosenbrock leads Newton to its other local minimum, near
x_1 = -1.

Needs scipy (`pip install -e ".[examples]"`).
"""
import argparse
import time

import numpy as np
from scipy.optimize import rosen_der, rosen_hess, rosen_hess_prod

import lucid
from lucid.autograd.functional import hvp
from lucid.func import grad, hessian
from lucid.linalg import cholesky, solve_triangular


def rosenbrock(x):
    """sum_i 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2."""
    return (100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2).sum()


gradient = grad(rosenbrock)
curvature = hessian(rosenbrock)


def start_point(n):
    """x_i = i / (n + 1), i = 1..n."""
    return lucid.tensor(np.arange(1, n + 1) / (n + 1), dtype=lucid.float64)


def derivative_errors(x):
    """Max abs differences of lucid's gradient, Hessian and Hessian-vector product (with
    v = 1, 2, ..., N) from scipy's closed forms at x."""
    xn, v = x.numpy(), np.arange(1.0, len(x) + 1)
    _, product = hvp(rosenbrock, x, lucid.tensor(v, dtype=lucid.float64))
    return (np.abs(gradient(x).numpy() - rosen_der(xn)).max(),
            np.abs(curvature(x).numpy() - rosen_hess(xn)).max(),
            np.abs(product.numpy() - rosen_hess_prod(xn, v)).max())


def newton_direction(H, g):
    """d = -(H + tau I)^-1 g for the smallest tau in 0, 1e-3 ||H||, 2x that, ... that is SPD."""
    identity = lucid.eye(H.shape[0], dtype=lucid.float64)
    tau = 0.0
    while True:
        try:
            L = cholesky(H + tau * identity)
            break
        except RuntimeError:                       # not positive-definite
            tau = max(2 * tau, 1e-3 * lucid.linalg.norm(H).item())
    y = solve_triangular(L, -g.reshape(-1, 1), upper=False)
    return solve_triangular(L.mT, y, upper=True).reshape(-1)


def minimise(x, tol=1e-10, max_steps=200):
    """Damped Newton with Armijo backtracking; stops when ||gradient|| < tol."""
    for step in range(max_steps):
        g = gradient(x)
        if lucid.linalg.norm(g).item() < tol:
            return x, step
        d = newton_direction(curvature(x), g)
        fx, slope, t = rosenbrock(x).item(), (g * d).sum().item(), 1.0
        while rosenbrock(x + t * d).item() > fx + 1e-4 * t * slope:
            t /= 2
        x = x + t * d
    raise RuntimeError(f"no convergence in {max_steps} steps")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10, help="dimension (default 10)")
    args = parser.parse_args()

    x0 = start_point(args.n)
    grad_error, hess_error, hvp_error = derivative_errors(x0)
    print(f"at the start, max abs error: gradient {grad_error:.1e}, Hessian {hess_error:.1e}, "
          f"Hessian-vector product {hvp_error:.1e}")
    start = time.perf_counter()
    x, steps = minimise(x0)
    seconds = time.perf_counter() - start
    error = np.abs(x.numpy() - 1.0).max()
    print(f"N = {args.n}: {steps} Newton steps, f = {rosenbrock(x).item():.3e}, "
          f"max |x - 1| = {error:.1e}, {seconds:.2f} s")


if __name__ == "__main__":
    main()
