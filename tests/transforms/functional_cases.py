"""Functions and oracles shared by the functional-transform tests: Rosenbrock (scipy's
derivatives as oracles), a tiny MLP loss, a Gaussian log-likelihood (closed forms), and central
finite differences of any lucid function."""
import numpy as np
import pytest

import lucid



def t64(arr, requires_grad=False):
    return lucid.tensor(np.array(arr, dtype=np.float64), dtype=lucid.float64,
                        requires_grad=requires_grad)


def rosen(x):
    """Rosenbrock: sum 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2 (slicing and sum)."""
    return (100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2).sum()


def rosen2(a, b):
    """Two-variable Rosenbrock of two 0-d tensors, elementwise ops only."""
    return 100.0 * (b - a * a) ** 2 + (1.0 - a) ** 2


def smooth(x):
    """sum exp(x) * sin(x) + x^3 / 3 (elementwise ops and one sum)."""
    return (x.exp() * x.sin() + x ** 3 / 3.0).sum()


def smooth_np(x):
    return np.sum(np.exp(x) * np.sin(x) + x ** 3 / 3.0)


def smooth_grad_np(x):
    return np.exp(x) * (np.sin(x) + np.cos(x)) + x ** 2


def smooth_hess_np(x):
    return np.diag(2 * np.exp(x) * np.cos(x) + 2 * x)


def vector_fn(x):
    """exp(x) * sin(x), elementwise (no reduction)."""
    return x.exp() * x.sin()


def vector_fn_second_np(x):
    """Its second derivative: T[i, j, k] = 2 e^x_i cos x_i when i = j = k, else 0."""
    n = x.size
    t = np.zeros((n, n, n))
    t[np.arange(n), np.arange(n), np.arange(n)] = 2 * np.exp(x) * np.cos(x)
    return t


def mlp_data(rng, n=5, d=3, h=4):
    """Inputs X, targets Y and parameters (W1, b1, W2) of a tiny one-hidden-layer MLP."""
    X = rng.standard_normal((n, d))
    Y = rng.standard_normal((n, 1))
    W1 = rng.standard_normal((d, h)) * 0.5
    b1 = rng.standard_normal(h) * 0.1
    W2 = rng.standard_normal((h, 1)) * 0.5
    return X, Y, W1, b1, W2


def mlp_loss(X, Y):
    """loss(W1, b1, W2) = mean((tanh(X W1 + b1) W2 - Y)^2)."""
    Xt, Yt = t64(X), t64(Y)

    def loss(W1, b1, W2):
        return (((Xt @ W1 + b1).tanh() @ W2 - Yt) ** 2).mean()
    return loss


def mlp_grad_np(X, Y, W1, b1, W2):
    """The closed-form gradient of mlp_loss."""
    H = np.tanh(X @ W1 + b1)
    r = H @ W2 - Y
    g_out = 2 * r / r.size
    gW2 = H.T @ g_out
    g_pre = (g_out @ W2.T) * (1 - H ** 2)
    return X.T @ g_pre, g_pre.sum(0), gW2


def gauss_ll(data):
    """Log-likelihood of data under N(mu, exp(log_sigma)^2), mu and log_sigma 0-d."""
    xs = t64(data)
    half_log_2pi = 0.5 * np.log(2 * np.pi)

    def ll(mu, log_sigma):
        z = (xs - mu) / log_sigma.exp()
        return (-0.5 * z * z - log_sigma - half_log_2pi).sum()
    return ll


def gauss_grad_hess_np(data, mu, log_sigma):
    """Closed-form gradient (2,) and Hessian (2, 2) of gauss_ll in (mu, log_sigma)."""
    s2 = np.exp(2 * log_sigma)
    r = data - mu
    n = data.size
    g = np.array([r.sum() / s2, (r ** 2).sum() / s2 - n])
    h = np.array([[-n / s2, -2 * r.sum() / s2],
                  [-2 * r.sum() / s2, -2 * (r ** 2).sum() / s2]])
    return g, h


def value_np(fn, arrays):
    """fn (a lucid function of tensors, returning a tensor or a tuple) at NumPy arrays."""
    with lucid.no_grad():
        out = fn(*[t64(a) for a in arrays])
    if isinstance(out, tuple):
        return tuple(np.array(o.numpy(), dtype=np.float64) for o in out)
    return np.array(out.numpy(), dtype=np.float64)


def fd_jacobian(fn, arrays, j, output=None, eps=1e-6):
    """Central-difference Jacobian of output `output` (None: the only one) of fn with respect to
    argument j, of shape out.shape + in.shape."""
    def pick(out):
        return out if output is None else out[output]
    base = [np.array(a, dtype=np.float64) for a in arrays]
    out_shape = np.shape(pick(value_np(fn, base)))
    jac = np.zeros(out_shape + base[j].shape)
    for k in range(base[j].size):
        plus = [a.copy() for a in base]
        minus = [a.copy() for a in base]
        plus[j].reshape(-1)[k] += eps
        minus[j].reshape(-1)[k] -= eps
        col = (pick(value_np(fn, plus)) - pick(value_np(fn, minus))) / (2 * eps)
        jac.reshape(out_shape + (-1,))[..., k] = col
    return jac


def snapshot(*tensors):
    """What must not change on the caller's tensors."""
    return [(t.requires_grad, t.grad is None, t.grad_fn, t._version, t.is_leaf,
             np.array(t.detach().numpy(), copy=True)) for t in tensors]


def assert_unchanged(before, tensors):
    after = snapshot(*tensors)
    for b, a in zip(before, after):
        assert b[:5] == a[:5]
        np.testing.assert_array_equal(b[5], a[5])
