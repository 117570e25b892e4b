"""The programs of examples/ run as a user runs them (a fresh interpreter) and solve their problems;
their objectives, imported from the files, are checked against independent computations."""
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from child_process import LUCID_ROOT

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
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
