"""Checks of one random program (tests/random_programs.py); each returns None or a report.

* forward: every step's lucid value against NumPy (float64, and float32 with float32 dtypes kept);
* first order: a VJP with a random cotangent against float64 central finite differences of the
  same lucid program (and the float32 VJP against the float64 one);
* second order: gradgradcheck of the program made scalar (sum of out * w).
A mismatch is re-measured with two other finite-difference steps; when those disagree with each
other the point is not smooth enough to judge and the program is counted as inconclusive.
A report is the (shrunk) program as a runnable script, ending with the failing comparison.
"""
import numpy as np

import lucid
from random_programs import render, run_lucid, run_numpy
from row_source import value_code

INCONCLUSIVE = "inconclusive"
EPS = 1e-6


def _np(t):
    return np.array(t.detach().numpy(), dtype=np.float64, copy=True)


def _close(a, b, rtol, atol):
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= atol + rtol * np.abs(b)))


# ---------------------------------------------------------------------------------------------
# forward
# ---------------------------------------------------------------------------------------------

def check_forward(prog):
    """Every step's value against NumPy: float64 to 1e-9, float32 to ~1e-4, dtypes kept."""
    ref = run_numpy(prog)
    env = run_lucid(prog, np.float64)
    rounded = [leaf.values.astype(np.float32).astype(np.float64) for leaf in prog.leaves]
    ref32 = run_numpy(prog, rounded)
    env32 = run_lucid(prog, np.float32)
    for step in prog.steps:
        r, r32 = ref[step.name], ref32[step.name]
        for dtype, value, want, rtol in ((lucid.float64, env[step.name], r, 1e-9),
                                         (lucid.float32, env32[step.name], r32, 2e-4)):
            scale = 1.0 + (np.max(np.abs(want)) if want.size else 0.0)
            got = _np(value)
            if value.dtype != dtype or not _close(got, want, rtol, rtol * scale):
                sub = prog.upto(step.name)
                np_dtype = np.float64 if dtype == lucid.float64 else np.float32
                return (f"forward value of {step.name} = {step.code} differs from NumPy "
                        f"({dtype}):\n" + render(sub, np_dtype, [
                            f"print({step.name})",
                            f"# lucid gives {value.dtype} {got.tolist()}",
                            f"# NumPy gives {want.tolist()}"]))
    return None


# ---------------------------------------------------------------------------------------------
# first order
# ---------------------------------------------------------------------------------------------

def fd_vjp(prog, us, eps):
    """Central finite differences of sum_j sum(out_j * u_j) for each leaf (float64, lucid)."""
    base = [np.array(leaf.values, np.float64) for leaf in prog.leaves]
    grads = []
    with lucid.no_grad():
        def f(values):
            env = run_lucid(prog, np.float64, values, False)
            return sum(float(np.sum(_np(env[o]) * u)) for o, u in zip(prog.outputs, us))
        for i, b in enumerate(base):
            g = np.zeros(b.shape)
            for k in range(b.size):
                values = list(base)
                plus, minus = b.copy(), b.copy()
                plus.reshape(-1)[k] += eps
                minus.reshape(-1)[k] -= eps
                values[i] = plus
                fp = f(values)
                values[i] = minus
                g.reshape(-1)[k] = (fp - f(values)) / (2 * eps)
            grads.append(g)
    return grads


def _vjp(prog, np_dtype, us):
    """lucid's gradients for each leaf: backward() for one output, autograd.grad for several."""
    env = run_lucid(prog, np_dtype)
    dt = lucid.float64 if np_dtype == np.float64 else lucid.float32
    cots = [lucid.tensor(u.astype(np_dtype), dtype=dt) for u in us]
    leaves = [env[leaf.name] for leaf in prog.leaves]
    if len(prog.outputs) == 1:
        env[prog.outputs[0]].backward(cots[0])
        grads = [t.grad for t in leaves]
    else:
        grads = lucid.autograd.grad([env[o] for o in prog.outputs], leaves, cots,
                                    allow_unused=True)
    return [None if g is None else (_np(g), g.dtype, g.shape) for g in grads]


def _first_order_failure(prog, us):
    """None, INCONCLUSIVE or (leaf index, lucid gradient, numerical gradient, what)."""
    analytic = _vjp(prog, np.float64, us)
    numeric = fd_vjp(prog, us, EPS)
    for i, (leaf, a, n) in enumerate(zip(prog.leaves, analytic, numeric)):
        got = np.zeros(leaf.values.shape) if a is None else a[0]
        if a is not None and (a[1] != lucid.float64 or tuple(a[2]) != leaf.values.shape):
            return i, got, n, f"gradient has dtype {a[1]} and shape {a[2]}"
        atol = 1e-6 * (1.0 + (np.max(np.abs(n)) if n.size else 0.0))
        if not _close(got, n, 1e-4, atol):
            wide, narrow = fd_vjp(prog, us, 1e-4)[i], fd_vjp(prog, us, 1e-7)[i]
            if not _close(wide, narrow, 1e-3, 100 * atol):
                return INCONCLUSIVE
            return i, got, n, "gradient differs from central finite differences"
    # the float32 backward agrees with the float64 one
    for i, (leaf, a64, a32) in enumerate(zip(prog.leaves, analytic, _vjp(prog, np.float32, us))):
        if (a64 is None) != (a32 is None):
            return i, a32, a64, "float32 and float64 runs disagree on which leaves get a gradient"
        if a32 is None:
            continue
        g64 = a64[0]
        scale = 1.0 + (np.max(np.abs(g64)) if g64.size else 0.0)
        if a32[1] != lucid.float32 or not _close(a32[0], g64, 1e-3, 1e-3 * scale):
            return i, a32[0], g64, f"float32 gradient ({a32[1]}) differs from the float64 one"
    return None


def _cotangents(prog, rng):
    env = run_lucid(prog, np.float64, requires_grad=False)
    return [np.round(rng.standard_normal(env[o].shape), 2) for o in prog.outputs]


def _vjp_code(prog, us, np_dtype, leaf):
    dt = f"lucid.{np.dtype(np_dtype).name}"
    lines = [f"u{j} = lucid.tensor({value_code(u.astype(np_dtype))}, dtype={dt})"
             for j, u in enumerate(us)]
    if len(prog.outputs) == 1:
        return lines + [f"{prog.outputs[0]}.backward(u0)", f"print({leaf}.grad)"]
    names = ", ".join(leaf.name for leaf in prog.leaves)
    cots = ", ".join(f"u{j}" for j in range(len(us)))
    return lines + [f"grads = lucid.autograd.grad([{', '.join(prog.outputs)}], [{names}], [{cots}], "
                    "allow_unused=True)",
                    f"print(grads[{[lf.name for lf in prog.leaves].index(leaf)}])  # {leaf}"]


def check_first_order(prog, rng):
    """VJP with random cotangents against finite differences; on a failure, the smallest
    prefix of the program (one output) that fails is reported."""
    us = _cotangents(prog, rng)
    failure = _first_order_failure(prog, us)
    if failure is None or failure == INCONCLUSIVE:
        return failure
    for step in prog.steps:
        sub = prog.upto(step.name)
        sub_us = _cotangents(sub, rng)
        sub_failure = _first_order_failure(sub, sub_us)
        if sub_failure is not None and sub_failure != INCONCLUSIVE:
            prog, us, failure = sub, sub_us, sub_failure
            break
    i, got, want, what = failure
    leaf = prog.leaves[i].name
    np_dtype = np.float32 if "float32" in what else np.float64
    return (f"wrong gradient in a random program (seed {prog.seed}): d/d({leaf}) of "
            f"sum_j sum(output_j * u_j): {what}\n" +
            render(prog, np_dtype, _vjp_code(prog, us, np_dtype, leaf) + [
                f"# lucid gives {np.asarray(got).tolist()}",
                f"# {'the float64 run gives' if np_dtype == np.float32 else 'central finite differences give'} "
                f"{np.round(np.asarray(want), 8).tolist()}"]))


# ---------------------------------------------------------------------------------------------
# second order
# ---------------------------------------------------------------------------------------------

def scalar_program(prog, ws):
    """fn(*leaves) = sum_j sum(out_j * w_j) for gradgradcheck (contiguous float64 leaves)."""
    weights = [lucid.tensor(w, dtype=lucid.float64) for w in ws]

    def fn(*leaves):
        env = dict(zip((leaf.name for leaf in prog.leaves), leaves))
        for step in prog.steps:
            env[step.name] = step.fn(*[env[a] for a in step.args])
        terms = [(env[o] * w).sum() for o, w in zip(prog.outputs, weights)]
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        return total
    return fn


def _gradgrad(prog, ws, eps):
    leaves = tuple(lucid.tensor(leaf.values.copy(), dtype=lucid.float64, requires_grad=True)
                   for leaf in prog.leaves)
    try:
        lucid.autograd.gradgradcheck(scalar_program(prog, ws), leaves, eps=eps, atol=1e-5, rtol=1e-3)
    except lucid.autograd.GradcheckError as e:
        return str(e)
    return None


def _second_order_failure(prog, ws):
    message = _gradgrad(prog, ws, EPS)
    if message is None:
        return None
    if _gradgrad(prog, ws, 1e-5) is None or _gradgrad(prog, ws, 1e-7) is None:
        return INCONCLUSIVE
    return message


def check_second_order(prog, rng):
    """gradgradcheck of sum_j sum(out_j * w_j); a failure reports the smallest failing prefix."""
    ws = _cotangents(prog, rng)
    message = _second_order_failure(prog, ws)
    if message is None or message == INCONCLUSIVE:
        return message
    for step in prog.steps:
        sub = prog.upto(step.name)
        sub_ws = _cotangents(sub, rng)
        sub_message = _second_order_failure(sub, sub_ws)
        if sub_message is not None and sub_message != INCONCLUSIVE:
            prog, ws, message = sub, sub_ws, sub_message
            break
    names = ", ".join(leaf.name for leaf in prog.leaves)
    weights = [f"w{j} = lucid.tensor({value_code(w)}, dtype=lucid.float64)" for j, w in enumerate(ws)]
    loss = " + ".join(f"({o} * w{j}).sum()" for j, o in enumerate(prog.outputs))
    body = render(prog, np.float64, weights + [
        f"loss = {loss}",
        f"grads = lucid.autograd.grad(loss, [{names}], create_graph=True)",
        "# second derivatives: lucid.autograd.gradgradcheck of the lines above as a function of "
        f"({names},) fails:",
        f"# {message.splitlines()[0]}"])
    return f"wrong second derivative in a random program (seed {prog.seed}):\n{body}"
