"""Gaussian-process regression: fit the kernel's hyperparameters by maximising the log marginal
likelihood, with lucid's gradient through a Cholesky factorisation, and check against scikit-learn.

    python examples/gaussian_process.py [--plot gp.png]

The kernel is signal_variance * exp(-|x - x'|^2 / (2 lengthscale^2)) + noise_variance * [x == x'],
scikit-learn's ConstantKernel * RBF + WhiteKernel; both fits optimise the log hyperparameters with
L-BFGS-B from the same start within the same bounds. Needs scipy and scikit-learn; the plot needs
matplotlib (`pip install -e ".[examples]"`).
"""
import argparse
import importlib.util
import math
import time

import numpy as np
from scipy.optimize import minimize
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

import lucid
from lucid.linalg import cholesky, solve_triangular

NAMES = ("signal_variance", "lengthscale", "noise_variance")   # scikit-learn's theta order
START = np.array([1.0, 1.0, 0.1])
BOUNDS = (1e-5, 1e5)                                           # scikit-learn's default bounds


def true_function(x):
    return np.sin(1.5 * x) + 0.3 * x


def make_data(n=50, noise_std=0.2, seed=0):
    """n points of true_function on [-4, 4] plus Gaussian noise, seeded."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-4.0, 4.0, n))
    return x, true_function(x) + noise_std * rng.standard_normal(n)


def rbf(a, b, signal_variance, lengthscale):
    """signal_variance * exp(-(a_i - b_j)^2 / (2 lengthscale^2)) for 1-d inputs (NumPy arrays)."""
    squared_distances = lucid.tensor((a[:, None] - b[None, :]) ** 2, dtype=lucid.float64)
    return signal_variance * (-0.5 * squared_distances / lengthscale ** 2).exp()


def fit_terms(log_params, x, y):
    """The Cholesky factor L of K = rbf(x, x) + noise I, L^-1 y, and the log marginal likelihood
    -1/2 y^T K^-1 y - sum(log diag L) - n/2 log(2 pi)."""
    signal_variance, lengthscale, noise_variance = log_params.exp().unbind(0)
    identity = lucid.eye(len(x), dtype=lucid.float64)
    K = rbf(x, x, signal_variance, lengthscale) + noise_variance * identity
    L = cholesky(K)
    z = solve_triangular(L, lucid.tensor(y.reshape(-1, 1), dtype=lucid.float64), upper=False)
    log_likelihood = (-0.5 * (z * z).sum() - L.diagonal().log().sum()
                      - 0.5 * len(x) * math.log(2 * math.pi))
    return L, z, log_likelihood


def negative_log_likelihood(log_params, x, y):
    """(-log marginal likelihood, its gradient) at the log hyperparameters, for scipy."""
    theta = lucid.tensor(log_params, dtype=lucid.float64, requires_grad=True)
    _, _, log_likelihood = fit_terms(theta, x, y)
    (-log_likelihood).backward()
    return -log_likelihood.item(), theta.grad.numpy()


def fit_lucid(x, y):
    bounds = [(math.log(BOUNDS[0]), math.log(BOUNDS[1]))] * 3
    return minimize(negative_log_likelihood, np.log(START), args=(x, y), jac=True,
                    method="L-BFGS-B", bounds=bounds)


def fit_sklearn(x, y):
    kernel = (ConstantKernel(START[0], BOUNDS) * RBF(START[1], BOUNDS)
              + WhiteKernel(START[2], BOUNDS))
    # alpha=0: no extra jitter, so both fits maximise the very same likelihood
    return GaussianProcessRegressor(kernel, alpha=0.0, normalize_y=False,
                                    n_restarts_optimizer=0).fit(x.reshape(-1, 1), y)


def posterior(log_params, x, y, x_new):
    """Mean and standard deviation of the latent function at x_new."""
    with lucid.no_grad():
        theta = lucid.tensor(log_params, dtype=lucid.float64)
        L, z, _ = fit_terms(theta, x, y)
        signal_variance, lengthscale, _ = theta.exp().unbind(0)
        cross = rbf(x, x_new, signal_variance, lengthscale)          # (n, m)
        v = solve_triangular(L, cross, upper=False)
        mean = (v * z).sum(0)
        variance = signal_variance - (v * v).sum(0)
    return mean.numpy(), np.sqrt(np.maximum(variance.numpy(), 0.0))


def plot(path, log_params, x, y):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = np.linspace(-5.0, 5.0, 300)
    mean, std = posterior(log_params, x, y, grid)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.fill_between(grid, mean - 2 * std, mean + 2 * std, color="tab:blue", alpha=0.2,
                    label="posterior mean ± 2σ")
    ax.plot(grid, mean, color="tab:blue")
    ax.plot(grid, true_function(grid), "k--", lw=1, label="true function")
    ax.plot(x, y, "o", color="tab:orange", ms=4, label="data")
    ax.set_title("GP regression, hyperparameters fitted with lucid's gradient")
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plot", metavar="PATH", help="write the posterior to this PNG")
    args = parser.parse_args()

    x, y = make_data()
    start = time.perf_counter()
    ours = fit_lucid(x, y)
    seconds = time.perf_counter() - start
    reference = fit_sklearn(x, y)

    print(f"{len(x)} points; L-BFGS-B: {ours.nit} iterations, {ours.nfev} evaluations, "
          f"{seconds:.2f} s")
    print(f"{'':16} {'lucid':>12} {'scikit-learn':>12}")
    for name, mine, theirs in zip(NAMES, np.exp(ours.x), np.exp(reference.kernel_.theta)):
        print(f"{name:16} {mine:12.6g} {theirs:12.6g}")
    theirs = reference.log_marginal_likelihood_value_
    print(f"{'log likelihood':16} {-ours.fun:12.6f} {theirs:12.6f}")

    if args.plot and importlib.util.find_spec("matplotlib") is None:
        print("matplotlib is not installed: no plot written")
    elif args.plot:
        plot(args.plot, ours.x, x, y)
        print(f"plot written to {args.plot}")


if __name__ == "__main__":
    main()
