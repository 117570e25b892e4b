"""Multinomial logistic regression on scikit-learn's digits, by L-BFGS-B with lucid's gradient.

    python examples/logistic_regression_lbfgs.py

lucid computes the penalised cross-entropy and its gradient in float64; scipy's L-BFGS-B does the
optimisation. Needs scipy and scikit-learn (`pip install -e ".[examples]"`).
"""
import time

import numpy as np
from scipy.optimize import minimize
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import lucid

L2_PENALTY = 1e-3      # weight of 0.5 * ||W||^2 (the bias is not penalised)


def load_data(seed=0):
    """Digits (8x8 images, pixels 0..16 scaled to [0, 1]) split 75/25, stratified, fixed seed."""
    images, labels = load_digits(return_X_y=True)
    return train_test_split(images / 16.0, labels, test_size=0.25, random_state=seed,
                            stratify=labels)


def make_objective(features, labels, n_classes, l2=L2_PENALTY):
    """theta -> (loss, gradient) with theta = [W.ravel(), b] flat, as scipy's minimize wants:
    loss = mean_i(-log softmax(x_i W + b)[y_i]) + l2/2 * ||W||^2."""
    x = lucid.tensor(features, dtype=lucid.float64)
    y = lucid.tensor(labels.reshape(-1, 1), dtype=lucid.int64)
    n_weights = features.shape[1] * n_classes

    def objective(theta):
        params = lucid.tensor(theta, dtype=lucid.float64, requires_grad=True)
        weights = params[:n_weights].reshape(features.shape[1], n_classes)
        bias = params[n_weights:]
        log_probs = (x @ weights + bias).log_softmax(dim=1)
        loss = -log_probs.gather(1, y).mean() + 0.5 * l2 * (weights * weights).sum()
        loss.backward()
        return loss.item(), params.grad.numpy()

    return objective


def initial_parameters(n_features, n_classes):
    """All weights and biases zero: every class equally likely."""
    return np.zeros(n_features * n_classes + n_classes)


def predict(theta, features, n_classes):
    """The most probable class of each row."""
    n_weights = features.shape[1] * n_classes
    weights = theta[:n_weights].reshape(features.shape[1], n_classes)
    return np.argmax(features @ weights + theta[n_weights:], axis=1)


def main():
    x_train, x_test, y_train, y_test = load_data()
    n_classes = int(y_train.max()) + 1
    objective = make_objective(x_train, y_train, n_classes)
    theta0 = initial_parameters(x_train.shape[1], n_classes)

    start = time.perf_counter()
    result = minimize(objective, theta0, jac=True, method="L-BFGS-B",
                      options={"maxiter": 500, "gtol": 1e-6})
    seconds = time.perf_counter() - start

    accuracy = np.mean(predict(result.x, x_test, n_classes) == y_test)
    print(f"train/test: {len(y_train)}/{len(y_test)} images, {theta0.size} parameters")
    print(f"L-BFGS-B: {result.nit} iterations, {result.nfev} evaluations, "
          f"converged: {result.success} ({result.message})")
    print(f"final loss: {result.fun:.6f}")
    print(f"test accuracy: {accuracy:.4f}")
    print(f"wall time: {seconds:.2f} s")


if __name__ == "__main__":
    main()
