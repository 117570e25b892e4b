"""The programs of examples/ run as a user runs them (a fresh interpreter) and solve their problems;
their objectives, imported from the files, are checked against independent computations."""
import importlib.util
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from support.child_process import LUCID_ROOT
from support.paths import ROOT

EXAMPLES = ROOT / "examples"
# One BLAS thread: on a small shared machine, BLAS threads waiting for each other make these
# small products up to 50x slower (the examples themselves leave threading to the user).
ONE_THREAD = {var: "1" for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def needs(*modules):
    """Skip, naming what is missing, unless every module is importable."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"the example needs {', '.join(missing)}, not installed here")


def run_example(name, *args, timeout=120):
    """Run examples/<name>.py in a fresh interpreter that imports the tests' lucid; its stdout."""
    env = {**os.environ, **ONE_THREAD}
    env["PYTHONPATH"] = LUCID_ROOT + (os.pathsep + env["PYTHONPATH"]
                                      if env.get("PYTHONPATH") else "")
    proc = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, f"{name}.py exited {proc.returncode}\n{proc.stderr}"
    print(proc.stdout)
    return proc.stdout


def load_example(name):
    """examples/<name>.py imported as a module (its main() does not run)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def number_after(label, text):
    """The number printed right after `label` in text."""
    found = re.search(re.escape(label) + r"\s*(-?[\d.]+(?:e[-+]?\d+)?)", text)
    assert found, f"no {label!r} in the output:\n{text}"
    return float(found.group(1))


def relative_difference(a, b):
    return abs(a - b) / abs(b)


# --- logistic regression -------------------------------------------------------------------------

def test_logistic_regression_classifies_held_out_digits():
    needs("scipy", "sklearn")
    out = run_example("logistic_regression_lbfgs")
    assert "converged: True" in out
    assert number_after("L-BFGS-B:", out) > 10                   # iterations
    assert 0 < number_after("final loss:", out) < 0.5
    assert number_after("test accuracy:", out) >= 0.95


def test_logistic_regression_objective_and_gradient():
    """The loss equals NumPy's cross-entropy; the gradient equals central finite differences, at
    the example's start point and at a random one (where the penalty's gradient is nonzero)."""
    needs("scipy", "sklearn")
    from scipy.special import log_softmax

    example = load_example("logistic_regression_lbfgs")
    features, _, labels, _ = example.load_data()
    features, labels = features[:200], labels[:200]       # a subset keeps the check fast
    n_classes, n_features = 10, features.shape[1]
    objective = example.make_objective(features, labels, n_classes, l2=0.1)
    rng = np.random.default_rng(0)
    start = example.initial_parameters(n_features, n_classes)
    for theta in (start, rng.normal(scale=0.1, size=start.shape)):
        loss, gradient = objective(theta)
        weights = theta[:-n_classes].reshape(n_features, n_classes)
        log_probs = log_softmax(features @ weights + theta[-n_classes:], axis=1)
        expected = -log_probs[np.arange(len(labels)), labels].mean() + 0.05 * (weights ** 2).sum()
        assert loss == pytest.approx(expected, rel=1e-12)

        eps = 1e-6
        coordinates = np.r_[rng.choice(start.size - n_classes, 20, replace=False),
                            np.arange(start.size - n_classes, start.size)]   # 20 weights, biases
        directions = [np.eye(start.size)[i] for i in coordinates]
        directions += list(rng.standard_normal((5, start.size)))
        for v in directions:
            numeric = (objective(theta + eps * v)[0] - objective(theta - eps * v)[0]) / (2 * eps)
            assert gradient @ v == pytest.approx(numeric, rel=1e-6, abs=1e-8)


# --- Gaussian process ----------------------------------------------------------------------------

def test_gaussian_process_matches_scikit_learn(tmp_path):
    needs("scipy", "sklearn")
    png = tmp_path / "gp.png"
    out = run_example("gaussian_process", "--plot", png)
    rows = {}
    for name in ("signal_variance", "lengthscale", "noise_variance", "log likelihood"):
        found = re.search(rf"^{name}\s+(\S+)\s+(\S+)$", out, re.M)
        assert found, f"no row {name!r} in the output:\n{out}"
        rows[name] = float(found.group(1)), float(found.group(2))
    for name in ("signal_variance", "lengthscale", "noise_variance"):
        assert relative_difference(*rows[name]) <= 0.05, (name, rows[name])
    assert relative_difference(*rows["log likelihood"]) <= 1e-3, rows["log likelihood"]
    # the fit found the noise that made the data (0.2^2), not a degenerate bound
    assert 0.01 < rows["noise_variance"][0] < 0.1

    if importlib.util.find_spec("matplotlib") is None:
        assert "matplotlib is not installed" in out and not png.exists()
        print("matplotlib is not installed: only the message of the plot path is checked")
    else:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_gaussian_process_likelihood_and_posterior_equal_scikit_learn():
    """At several hyperparameters the example's log likelihood and gradient equal scikit-learn's
    for the same kernel; its posterior equals scikit-learn's prediction."""
    needs("scipy", "sklearn")
    example = load_example("gaussian_process")
    x, y = example.make_data()
    reference = example.fit_sklearn(x, y)
    for log_params in (np.log(example.START), np.log([2.0, 0.5, 0.01]), reference.kernel_.theta):
        value, gradient = example.negative_log_likelihood(log_params, x, y)
        expected, expected_gradient = reference.log_marginal_likelihood(log_params,
                                                                        eval_gradient=True)
        assert value == pytest.approx(-expected, rel=1e-10)
        np.testing.assert_allclose(gradient, -expected_gradient, rtol=1e-7, atol=1e-9)

    x_new = np.linspace(-5.0, 5.0, 7)
    mean, std = example.posterior(reference.kernel_.theta, x, y, x_new)
    expected_mean, expected_std = reference.predict(x_new.reshape(-1, 1), return_std=True)
    noise_variance = np.exp(reference.kernel_.theta[2])     # scikit-learn's std includes it
    np.testing.assert_allclose(mean, expected_mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(std ** 2 + noise_variance, expected_std ** 2, rtol=1e-8)


# --- Newton on Rosenbrock ------------------------------------------------------------------------

def test_newton_rosenbrock_reaches_the_minimum():
    needs("scipy")
    out = run_example("newton_rosenbrock")
    for derivative in ("gradient", "Hessian", "Hessian-vector product"):
        assert number_after(f" {derivative}", out) <= 1e-10, derivative
    assert 0 < number_after("N = 10:", out) < 100                # Newton steps
    assert number_after("max |x - 1| =", out) <= 1e-8


# --- tight-binding ground state (complex gradients) ----------------------------------------------

def test_tight_binding_gradient_descent_finds_the_ground_state():
    out = run_example("tight_binding_ground_state", "--sites", 16, "--flux", 0.4)
    assert number_after("difference:", out) < 1e-9
    assert number_after("overlap with the exact ground state:", out) > 0.999999
    assert number_after("gradient descent steps:", out) < 4000       # it converged


def test_tight_binding_energy_gradient_is_the_rayleigh_quotients():
    """psi.grad of the example's energy equals 2 (H psi - E psi) / (psi^H psi), and gradcheck
    (both Wirtinger derivatives, by the real and imaginary parts) passes on it."""
    import lucid

    example = load_example("tight_binding_ground_state")
    h = example.hamiltonian(6, 0.25)
    rng = np.random.default_rng(3)
    v = rng.standard_normal(6) + 1j * rng.standard_normal(6)
    psi = lucid.tensor(v, requires_grad=True)
    e = example.energy(h, psi)
    e.backward()
    hn = h.numpy()
    want_e = np.real(np.vdot(v, hn @ v)) / np.real(np.vdot(v, v))
    np.testing.assert_allclose(e.item(), want_e, rtol=1e-12)
    np.testing.assert_allclose(psi.grad.numpy(), 2 * (hn @ v - want_e * v) / np.vdot(v, v).real,
                               rtol=1e-10, atol=1e-12)
    leaf = psi.detach().requires_grad_()
    assert lucid.autograd.gradcheck(lambda p: example.energy(h, p), (leaf,), check_forward_ad=True)
