"""Checks of one random program (tests/reliability/random_programs.py); each returns None or a report.

* forward: every step's lucid value against NumPy (float64, and float32 with float32 dtypes kept);
* first order: a VJP with random cotangents (in random memory layouts; by backward(), by
  autograd.grad, or by backward() twice, which must accumulate) against float64 central finite
  differences of the same lucid program; the VJP with float32 leaves, and with a random mix of
  float32 and float64 leaves (each gradient in its leaf's dtype; not for a program with a step
  whose inputs must share a dtype), against the float64 one; neither
  the cotangents nor the leaves may be written;
* second order: gradgradcheck of the program made scalar (sum of out * w);
* forward-over-reverse and reverse-over-forward: with random tangents t on the leaves (one leaf
  in four without one) and random cotangents u, the tangent of the gradient of
  sum_j sum(out_j * u_j) taken in a dual level, and the gradient of sum_j sum(tangent_j * u_j)
  of the tangents made in one, are both H_u t (H_u the Hessian of that sum); each is checked
  against central finite differences of the plain gradient along t, with its first-order part
  (the gradient itself; the tangents against finite differences of the program along t).
A mismatch is re-measured with two other finite-difference steps; when those disagree with each
other the point is not smooth enough to judge and the program is counted as inconclusive.
A report is the (shrunk) program as a runnable script, ending with the failing comparison.
"""
from dataclasses import dataclass

import numpy as np

import lucid
import lucid.autograd.forward_ad as fwAD
from support.row_source import value_code

from .random_programs import (Leaf, layouts_for, leaf_array, leaf_code, leaf_dtype, make_leaves,
                              render, run_lucid, run_numpy, run_steps)

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
                if got.shape == want.shape and want.size > 24:     # show the worst entry
                    at = np.unravel_index(np.argmax(np.abs(got - want)), want.shape)
                    shown, got, want = f"{step.name}[{at}]", got[at], want[at]
                else:
                    shown = step.name
                return (f"forward value of {step.name} = {step.code} differs from NumPy "
                        f"({dtype}):\n" + render(sub, np_dtype, [
                            f"print({shown})",
                            f"# lucid gives {value.dtype} {np.asarray(got).tolist()}",
                            f"# NumPy gives {np.asarray(want).tolist()}"]))
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


MODES = ("backward", "autograd.grad", "backward twice")


@dataclass
class Pullback:
    """How gradients are asked for: the mode and each cotangent's memory layout."""
    mode: str
    layouts: tuple

    def factor(self):
        return 2.0 if self.mode == "backward twice" else 1.0


def _random_pullback(prog, us, rng):
    mode = MODES[int(rng.integers(len(MODES)))]
    return Pullback(mode, tuple(layouts_for(u.shape)[int(rng.integers(len(layouts_for(u.shape))))]
                                for u in us))


def _vjp(prog, np_dtype, us, pull):
    """lucid's gradients for each leaf (scaled by pull.factor()), or a failure of the cotangents."""
    env = run_lucid(prog, np_dtype)
    leaves = [env[leaf.name] for leaf in prog.leaves]
    outs = [env[o] for o in prog.outputs]
    cot_dtypes = [np.float64 if o.dtype == lucid.float64 else np.float32 for o in outs]
    cots = [lucid.from_numpy(leaf_array(u, layout, dt))
            for u, layout, dt in zip(us, pull.layouts, cot_dtypes)]
    if pull.mode == "autograd.grad":
        grads = lucid.autograd.grad(outs, leaves, cots, allow_unused=True)
    else:
        for _ in range(int(pull.factor())):
            for out, cot in zip(outs, cots):
                out.backward(cot, retain_graph=True)
        grads = [t.grad for t in leaves]
    for j, (u, cot, dt) in enumerate(zip(us, cots, cot_dtypes)):
        if not np.array_equal(_np(cot), u.astype(dt)):
            return (None, _np(cot), u, f"the gradient computation wrote into the cotangent u{j}",
                    np_dtype)
    for i, (leaf, t) in enumerate(zip(prog.leaves, leaves)):
        if not np.array_equal(_np(t), leaf.values.astype(leaf_dtype(np_dtype, i))):
            return (None, _np(t), leaf.values, f"the gradient computation wrote into {leaf.name}",
                    np_dtype)
    return [None if g is None else (_np(g), g.dtype, g.shape) for g in grads]


def _first_order_failure(prog, us, pull, rng):
    """None, INCONCLUSIVE or (leaf index or None, lucid's value, expected value, what, dtypes)."""
    analytic = _vjp(prog, np.float64, us, pull)
    if isinstance(analytic, tuple):
        return analytic
    numeric = [pull.factor() * g for g in fd_vjp(prog, us, EPS)]
    for i, (leaf, a, n) in enumerate(zip(prog.leaves, analytic, numeric)):
        got = np.zeros(leaf.values.shape) if a is None else a[0]
        if a is not None and (a[1] != lucid.float64 or tuple(a[2]) != leaf.values.shape):
            return i, got, n, f"gradient has dtype {a[1]} and shape {a[2]}", np.float64
        atol = 1e-6 * (1.0 + (np.max(np.abs(n)) if n.size else 0.0))
        if not _close(got, n, 1e-4, atol):
            wide, narrow = fd_vjp(prog, us, 1e-4)[i], fd_vjp(prog, us, 1e-7)[i]
            if not _close(wide, narrow, 1e-3, 100 * atol):
                return INCONCLUSIVE
            return i, got, n, "gradient differs from central finite differences", np.float64
    return _dtype_failure(prog, us, pull, rng, analytic)


def _dtype_failure(prog, us, pull, rng, analytic):
    """Float32 leaves, and a random mix of float32 and float64 leaves, agree with float64."""
    mixed = tuple((np.float32, np.float64)[int(b)] for b in rng.integers(0, 2, len(prog.leaves)))
    one_dtype = any(step.same_dtype for step in prog.steps)    # e.g. scatter_add refuses a mix
    for dtypes in (np.float32,) if one_dtype else (np.float32, mixed):
        other = _vjp(prog, dtypes, us, pull)
        if isinstance(other, tuple):
            return other
        for i, (leaf, a64, a) in enumerate(zip(prog.leaves, analytic, other)):
            want_dtype = lucid.float64 if leaf_dtype(dtypes, i) == np.float64 else lucid.float32
            if (a64 is None) != (a is None):
                return i, a, a64, "runs in float64 and in these dtypes disagree on which " \
                    "leaves get a gradient", dtypes
            if a is None:
                continue
            g64 = a64[0]
            scale = 1.0 + (np.max(np.abs(g64)) if g64.size else 0.0)
            if a[1] != want_dtype or not _close(a[0], g64, 1e-3, 1e-3 * scale):
                return i, a[0], g64, f"gradient ({a[1]}) of a {want_dtype} leaf differs from " \
                    "the all-float64 run", dtypes
    return None


class Drawn(np.ndarray):
    """Random values made by a line of NumPy code, printed as that code (large cotangents)."""
    code = ""


def _cotangents(prog, rng):
    env = run_lucid(prog, np.float64, requires_grad=False)
    us = []
    for o in prog.outputs:
        shape = env[o].shape
        if int(np.prod(shape)) <= 24:
            us.append(np.round(rng.standard_normal(shape), 2))
            continue
        seed = int(rng.integers(2 ** 31))
        code = f"np.round(np.random.default_rng({seed}).standard_normal({shape!r}), 2)"
        u = eval(code).view(Drawn)
        u.code = code
        us.append(u)
    return us


def _vjp_code(prog, us, np_dtype, pull, leaf):
    env = run_lucid(prog, np_dtype, requires_grad=False)
    dts = [np.float64 if env[o].dtype == lucid.float64 else np.float32 for o in prog.outputs]
    cots = [Leaf(f"u{j}", u, layout, getattr(u, "code", "")) for j, (u, layout) in
            enumerate(zip(us, pull.layouts))]
    lines = [f"{u.name} = lucid.from_numpy({leaf_code(u, dt)})  # {u.layout}"
             for u, dt in zip(cots, dts)]
    leaves = [lf.name for lf in prog.leaves]
    if pull.mode == "autograd.grad":
        cots = ", ".join(f"u{j}" for j in range(len(us)))
        return lines + [f"grads = lucid.autograd.grad([{', '.join(prog.outputs)}], "
                        f"[{', '.join(leaves)}], [{cots}], allow_unused=True)",
                        f"print(grads[{leaves.index(leaf)}])  # {leaf}" if leaf else "print(grads)"]
    calls = [f"{o}.backward(u{j}, retain_graph=True)" for j, o in enumerate(prog.outputs)]
    if pull.mode == "backward twice":
        calls = ["for _ in range(2):"] + ["    " + c for c in calls]
    return lines + calls + [f"print({leaf}.grad)" if leaf else "print(u0)"]


def check_first_order(prog, rng):
    """VJP with random cotangents (random layouts; backward, autograd.grad, or backward twice
    to accumulate) against finite differences; on a failure, the smallest prefix of the program
    (one output) that fails is reported."""
    us = _cotangents(prog, rng)
    pull = _random_pullback(prog, us, rng)
    failure = _first_order_failure(prog, us, pull, rng)
    if failure is None or failure == INCONCLUSIVE:
        return failure
    for step in prog.steps:
        sub = prog.upto(step.name)
        sub_us = _cotangents(sub, rng)
        sub_pull = Pullback(pull.mode, tuple(layouts_for(u.shape)[-1] for u in sub_us))
        sub_failure = _first_order_failure(sub, sub_us, sub_pull, rng)
        if sub_failure is not None and sub_failure != INCONCLUSIVE:
            prog, us, pull, failure = sub, sub_us, sub_pull, sub_failure
            break
    return _report(prog, us, pull, failure)


def check_directional(prog, rng):
    """For programs too big for one finite difference per element: the VJP paired with a random
    direction d against the central difference of the program along d; then the dtype runs."""
    us = _cotangents(prog, rng)
    pull = _random_pullback(prog, us, rng)
    analytic = _vjp(prog, np.float64, us, pull)
    if isinstance(analytic, tuple):
        return _report(prog, us, pull, analytic)
    seeds = [int(rng.integers(2 ** 31)) for _ in prog.leaves]
    ds = [np.random.default_rng(sd).standard_normal(leaf.values.shape)
          for sd, leaf in zip(seeds, prog.leaves)]
    terms = [np.sum(a[0] * d) / pull.factor() for a, d in zip(analytic, ds) if a is not None]
    lucid_says = float(sum(terms))
    scale = 1.0 + float(sum(np.sum(np.abs(a[0] * d)) for a, d in zip(analytic, ds) if a is not None))

    def along(eps):
        with lucid.no_grad():
            def f(t):
                env = run_lucid(prog, np.float64, [lf.values + t * d for lf, d in
                                                   zip(prog.leaves, ds)], False)
                return sum(float(np.sum(_np(env[o]) * u)) for o, u in zip(prog.outputs, us))
            return (f(eps) - f(-eps)) / (2 * eps)
    fd = along(EPS)
    if abs(lucid_says - fd) > 1e-6 * scale + 1e-4 * abs(fd):
        if abs(along(1e-4) - along(1e-7)) > 1e-4 * scale:
            return INCONCLUSIVE
        names = [lf.name for lf in prog.leaves]
        grads = ([f"grads[{i}]" for i in range(len(names))] if pull.mode == "autograd.grad" else
                 [f"{n}.grad" for n in names])
        lines = [f"d{i} = np.random.default_rng({sd}).standard_normal({lf.values.shape!r})"
                 for i, (sd, lf) in enumerate(zip(seeds, prog.leaves))]
        pairs = " + ".join(f"np.sum({g}.numpy() * d{i})" for i, g in enumerate(grads))
        lines.append(f"print(({pairs}){' / 2' if pull.factor() == 2 else ''})")
        return (f"wrong gradient in a large random program (seed {prog.seed}, {pull.mode}): the "
                f"VJP along a random direction differs from the central difference\n" +
                render(prog, np.float64, _vjp_code(prog, us, np.float64, pull, None)[:-1] + lines + [
                    f"# lucid gives {lucid_says!r}",
                    f"# the central difference of sum_j sum(output_j * u_j) along d gives {fd!r}"]))
    failure = _dtype_failure(prog, us, pull, rng, analytic)
    return None if failure is None else _report(prog, us, pull, failure)


def _report(prog, us, pull, failure):
    i, got, want, what, dtypes = failure
    leaf = None if i is None else prog.leaves[i].name
    source = ("expected" if i is None else
              "central finite differences" + (" (x2)" if pull.factor() == 2 else "") + " give"
              if dtypes is np.float64 else "the all-float64 run gives")
    return (f"wrong gradient in a random program (seed {prog.seed}, {pull.mode}): "
            f"{f'd/d({leaf}) of sum_j sum(output_j * u_j): ' if leaf else ''}{what}\n" +
            render(prog, dtypes, _vjp_code(prog, us, dtypes, pull, leaf) + [
                f"# lucid gives {np.asarray(got).tolist()}",
                f"# {source} {np.round(np.asarray(want), 8).tolist()}"]))


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


# ---------------------------------------------------------------------------------------------
# forward-over-reverse and reverse-over-forward
# ---------------------------------------------------------------------------------------------

FORWARD_OVER_REVERSE, REVERSE_OVER_FORWARD = "forward-over-reverse", "reverse-over-forward"


def _tangents(prog, rng):
    """A random tangent per leaf; about one leaf in four gets none (at least one gets one)."""
    ts = [None if rng.random() < 0.25 else np.round(rng.standard_normal(leaf.values.shape), 2)
          for leaf in prog.leaves]
    if all(t is None for t in ts):
        k = int(rng.integers(len(ts)))
        ts[k] = np.round(rng.standard_normal(prog.leaves[k].values.shape), 2)
    return ts


def _weighted_sum(outs, us):
    """sum_j sum(out_j * u_j) as a lucid scalar (None when no term requires grad)."""
    total = None
    for out, u in zip(outs, us):
        if out is None or not out.requires_grad:
            continue
        term = (out * lucid.from_numpy(np.array(u, np.float64))).sum()
        total = term if total is None else total + term
    return total


def _gradients(loss, leaves):
    """d loss / d leaves as float64 arrays (zeros where there is none)."""
    if loss is None:
        return [np.zeros(leaf.shape) for leaf in leaves]
    grads = lucid.autograd.grad(loss, leaves, allow_unused=True, materialize_grads=True)
    return [_np(g) for g in grads]


def _plain_gradient(prog, values, us):
    """The plain reverse-mode gradient of sum_j sum(out_j * u_j) at the leaf values (float64,
    without the program's extras)."""
    leaves = make_leaves(prog, np.float64, values)
    env = run_steps(prog, dict(zip((leaf.name for leaf in prog.leaves), leaves)))
    return _gradients(_weighted_sum([env[o] for o in prog.outputs], us), leaves)


def _along(values, ts, eps):
    return [v + eps * (0.0 if t is None else t) for v, t in zip(values, ts)]


def fd_hvp(prog, us, ts, eps):
    """Central finite differences of the plain gradient along the tangents: H_u t."""
    values = [leaf.values for leaf in prog.leaves]
    plus = _plain_gradient(prog, _along(values, ts, eps), us)
    minus = _plain_gradient(prog, _along(values, ts, -eps), us)
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus)]


def fd_jvp(prog, ts, eps):
    """Central finite differences of each output along the tangents: J t."""
    values = [leaf.values for leaf in prog.leaves]
    with lucid.no_grad():
        plus = run_lucid(prog, np.float64, _along(values, ts, eps), False)
        minus = run_lucid(prog, np.float64, _along(values, ts, -eps), False)
    return [(_np(plus[o]) - _np(minus[o])) / (2 * eps) for o in prog.outputs]


def _dual_program(prog, ts):
    """Inside a dual level: (the leaves, the program's values) with each leaf given its tangent."""
    leaves = make_leaves(prog)
    env = {leaf.name: (t if tangent is None else
                       fwAD.make_dual(t, lucid.from_numpy(np.array(tangent, np.float64))))
           for leaf, t, tangent in zip(prog.leaves, leaves, ts)}
    return leaves, run_steps(prog, env, np.float64, prog.extras)


def forward_over_reverse(prog, us, ts):
    """(the gradient of sum_j sum(out_j * u_j), its tangent) computed in a dual level."""
    with fwAD.dual_level():
        leaves, env = _dual_program(prog, ts)
        loss = _weighted_sum([env[o] for o in prog.outputs], us)
        if loss is None:
            zeros = [np.zeros(leaf.shape) for leaf in leaves]
            return zeros, zeros
        grads = lucid.autograd.grad(loss, leaves, allow_unused=True, materialize_grads=True)
        tangents = [fwAD.unpack_dual(g).tangent for g in grads]
        return [_np(g) for g in grads], [np.zeros(g.shape) if t is None else _np(t)
                                         for g, t in zip(grads, tangents)]


def reverse_over_forward(prog, us, ts):
    """(the tangent of each output, the gradient of sum_j sum(tangent_j * u_j)): the tangents
    made in a dual level, the gradient taken after it."""
    with fwAD.dual_level():
        leaves, env = _dual_program(prog, ts)
        jvps = [fwAD.unpack_dual(env[o]).tangent for o in prog.outputs]
    outs = [np.zeros(env[o].shape) if j is None else _np(j) for o, j in zip(prog.outputs, jvps)]
    return outs, _gradients(_weighted_sum(jvps, us), leaves)


def _mixed_failure(prog, us, ts, mode):
    """None, INCONCLUSIVE or (leaf index or output index, lucid's value, expected, what)."""
    if mode == FORWARD_OVER_REVERSE:
        grads, hvp = forward_over_reverse(prog, us, ts)
        plain = _plain_gradient(prog, [leaf.values for leaf in prog.leaves], us)
        for i, (g, p) in enumerate(zip(grads, plain)):
            if not _close(g, p, 1e-10, 1e-10 * (1.0 + (np.max(np.abs(p)) if p.size else 0.0))):
                return ("leaf", i), g, p, "the gradient taken in a dual level differs from the " \
                    "plain gradient"
    else:
        jvps, hvp = reverse_over_forward(prog, us, ts)
        want = fd_jvp(prog, ts, EPS)
        for j, (got, w) in enumerate(zip(jvps, want)):
            atol = 1e-6 * (1.0 + (np.max(np.abs(w)) if w.size else 0.0))
            if not _close(got, w, 1e-4, atol):
                wide, narrow = fd_jvp(prog, ts, 1e-4)[j], fd_jvp(prog, ts, 1e-7)[j]
                if not _close(wide, narrow, 1e-3, 100 * atol):
                    return INCONCLUSIVE
                return ("output", j), got, w, "tangent differs from central finite " \
                    "differences of the program along the tangents"
    want = fd_hvp(prog, us, ts, EPS)
    for i, (got, w) in enumerate(zip(hvp, want)):
        atol = 1e-6 * (1.0 + (np.max(np.abs(w)) if w.size else 0.0))
        if not _close(got, w, 1e-4, atol):
            wide, narrow = fd_hvp(prog, us, ts, 1e-4)[i], fd_hvp(prog, us, ts, 1e-7)[i]
            if not _close(wide, narrow, 1e-3, 100 * atol):
                return INCONCLUSIVE
            what = "tangent of the gradient" if mode == FORWARD_OVER_REVERSE else \
                "gradient of sum_j sum(tangent_j * u_j)"
            return ("leaf", i), got, w, f"{what} differs from central finite differences of " \
                "the gradient along the tangents"
    return None


def check_mixed_modes(prog, rng, mode):
    """forward-over-reverse or reverse-over-forward (mode) against finite differences; on a
    failure, the smallest prefix of the program (one output) that fails is reported."""
    us = _cotangents(prog, rng)
    ts = _tangents(prog, rng)
    failure = _mixed_failure(prog, us, ts, mode)
    if failure is None or failure == INCONCLUSIVE:
        return failure
    tangent_of = {leaf.name: t for leaf, t in zip(prog.leaves, ts)}
    for step in prog.steps:
        sub = prog.upto(step.name)
        sub_ts = [tangent_of[leaf.name] for leaf in sub.leaves]
        if all(t is None for t in sub_ts):
            continue
        sub_us = _cotangents(sub, rng)
        sub_failure = _mixed_failure(sub, sub_us, sub_ts, mode)
        if sub_failure is not None and sub_failure != INCONCLUSIVE:
            prog, us, ts, failure = sub, sub_us, sub_ts, sub_failure
            break
    return _mixed_report(prog, us, ts, mode, failure)


def _mixed_report(prog, us, ts, mode, failure):
    (kind, i), got, want, what = failure
    names = [leaf.name for leaf in prog.leaves]
    head = [f"{u.name} = lucid.from_numpy({leaf_code(u, np.float64)})"
            for u in (Leaf(f"u{j}", u, "contiguous", getattr(u, "code", ""))
                      for j, u in enumerate(us))]
    head += [f"t{k} = lucid.from_numpy({leaf_code(Leaf(f't{k}', t, 'contiguous'), np.float64)})"
             for k, t in enumerate(ts) if t is not None]
    head.append(f"leaves = [{', '.join(names)}]")
    before = [f"{n} = fwAD.make_dual({n}, t{k})" for k, n in enumerate(names)
              if ts[k] is not None]
    loss = " + ".join(f"({o} * u{j}).sum()" for j, o in enumerate(prog.outputs))
    if mode == FORWARD_OVER_REVERSE:
        after = [f"grads = lucid.autograd.grad({loss}, leaves, allow_unused=True, "
                 "materialize_grads=True)",
                 f"print(grads[{i}]" + ("" if "plain" in what else ", fwAD.unpack_dual("
                                        f"grads[{i}]).tangent") + f")  # d/d({names[i]})"]
        tail = []
    else:
        after = [f"jvps = [fwAD.unpack_dual(o).tangent for o in [{', '.join(prog.outputs)}]]"]
        tail = [f"print(jvps[{i}])  # the tangent of {prog.outputs[i]}"] if kind == "output" else [
            "loss = " + " + ".join(f"(jvps[{j}] * u{j}).sum()" for j in range(len(prog.outputs))),
            "grads = lucid.autograd.grad(loss, leaves, allow_unused=True, "
            "materialize_grads=True)",
            f"print(grads[{i}])  # d/d({names[i]})"]
    where = f"d/d({names[i]})" if kind == "leaf" else f"output {prog.outputs[i]}"
    tail = tail + [f"# lucid gives {np.asarray(got).tolist()}",
                   f"# expected {np.round(np.asarray(want), 8).tolist()}"]
    return (f"wrong {mode} derivative in a random program (seed {prog.seed}): {where}: {what}\n" +
            render(prog, np.float64, tail, head, (before, after)))
