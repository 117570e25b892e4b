"""W14 mixed-op graph: a fixed, seeded random program of 10,000 ops on (4,) float32 tensors, run
as generated straight-line Python; then the sum of every value (one stack, one sum) and backward.

The ops: add, sub, mul, div by constants and between tensors; sin cos exp log1p tanh sigmoid relu
abs sqrt, with their domains kept safe (log1p(abs(a)), sqrt(abs(a) + 1), exp(0.1 * a), division
by constants in [1.5, 3], a tensor divisor as 1 + a*a). A binary op reads two earlier values drawn
uniformly, a unary op one, so the graph has fan-in and fan-out, and every value is live in
backward (the loss sums them all). The floor is the same program in NumPy with a hand-written
reverse pass, generated alongside. Variants time 10^3 and 10^5 ops (the growth); 10^5 only in
the full run.
"""
import numpy as np

from . import _harness as h

ID = "W14"
NAME = "mixed-op graph"
DESCRIPTION = ("seeded random program of 10,000 ops (add sub mul div, sin cos exp log1p tanh "
               "sigmoid relu abs sqrt) on (4,) float32, fan-in and fan-out; sum of all; backward")
METRIC = "fwd+bwd"
OPS = 10_000
NODES = OPS
NODE_UNIT = "op"
TARGETS = {"lucid/torch": 0.05, "lucid/floor": 0.5}
MEMORY = False
RTOL, ATOL = 2e-3, 1e-4
SEED = 14
INPUTS = 4                        # leaves the program starts from
UNARY = ("sin", "cos", "exp", "log1p", "tanh", "sigmoid", "relu", "abs", "sqrt")
BINARY = ("add", "sub", "mul", "div")


def program(n_ops, seed=SEED):
    """The program: [(op, inputs, constant)], inputs indexing earlier values (the first INPUTS
    values are the leaves). A constant is None for an op between tensors."""
    rng = np.random.default_rng(seed)
    ops = []
    for k in range(INPUTS, INPUTS + n_ops):
        if rng.random() < 0.5:
            ops.append((UNARY[rng.integers(len(UNARY))], (int(rng.integers(k)),), None))
            continue
        op = BINARY[rng.integers(len(BINARY))]
        a = int(rng.integers(k))
        if rng.random() < 0.5:           # by a constant
            c = float(rng.uniform(1.5, 3.0)) if op == "div" else float(rng.uniform(-1.0, 1.0))
            ops.append((op, (a,), c))
        else:
            ops.append((op, (a, int(rng.integers(k))), None))
    return ops


# -- the program as Python source, for an autograd library (m: the module) ------------------------

FORWARD = {
    "sin": "m.sin({a})", "cos": "m.cos({a})", "exp": "m.exp({a} * 0.1)",
    "log1p": "m.log1p(m.abs({a}))", "tanh": "m.tanh({a})", "sigmoid": "m.sigmoid({a})",
    "relu": "m.relu({a})", "abs": "m.abs({a})", "sqrt": "m.sqrt(m.abs({a}) + 1.0)",
    "add": "{a} + {b}", "sub": "{a} - {b}", "mul": "{a} * {b}", "div": "{a} / ({b} * {b} + 1.0)",
}
BY_CONSTANT = {"add": "{a} + {c!r}", "sub": "{a} - {c!r}", "mul": "{a} * {c!r}",
               "div": "{a} / {c!r}"}


def autograd_source(ops):
    """def forward(m, x0, ..., x3): the program, returning the sum of every value."""
    lines = [f"def forward(m, {', '.join(f'v{i}' for i in range(INPUTS))}):"]
    for k, (op, args, c) in enumerate(ops, INPUTS):
        names = {"a": f"v{args[0]}", "b": f"v{args[-1]}", "c": c}
        expr = (BY_CONSTANT[op] if c is not None else FORWARD[op]).format(**names)
        lines.append(f"    v{k} = {expr}")
    every = ", ".join(f"v{k}" for k in range(INPUTS + len(ops)))
    lines.append(f"    return m.stack([{every}]).sum()")
    return "\n".join(lines)


# -- the floor: NumPy forward, saving what the reverse pass reads, and the reverse pass -----------

NP_FORWARD = {
    "sin": "np.sin({a})", "cos": "np.cos({a})", "exp": "np.exp({a} * np.float32(0.1))",
    "log1p": "np.log1p(np.abs({a}))", "tanh": "np.tanh({a})",
    "sigmoid": "1 / (1 + np.exp(-{a}))", "relu": "np.maximum({a}, 0)", "abs": "np.abs({a})",
    "sqrt": "np.sqrt(np.abs({a}) + np.float32(1))",
    "add": "{a} + {b}", "sub": "{a} - {b}", "mul": "{a} * {b}",
    "div": "{a} / ({b} * {b} + np.float32(1))",
}
NP_BY_CONSTANT = {"add": "{a} + np.float32({c!r})", "sub": "{a} - np.float32({c!r})",
                  "mul": "{a} * np.float32({c!r})", "div": "{a} / np.float32({c!r})"}
# the gradient terms: g is the output's gradient, y the output, a and b the inputs
NP_BACKWARD = {
    "sin": ["{ga} += g * np.cos({a})"], "cos": ["{ga} -= g * np.sin({a})"],
    "exp": ["{ga} += g * np.float32(0.1) * {y}"],
    "log1p": ["{ga} += g * np.sign({a}) / (1 + np.abs({a}))"],
    "tanh": ["{ga} += g * (1 - {y} * {y})"], "sigmoid": ["{ga} += g * {y} * (1 - {y})"],
    "relu": ["{ga} += g * ({a} > 0)"], "abs": ["{ga} += g * np.sign({a})"],
    "sqrt": ["{ga} += g * np.sign({a}) / (2 * {y})"],
    "add": ["{ga} += g", "{gb} += g"], "sub": ["{ga} += g", "{gb} -= g"],
    "mul": ["{ga} += g * {b}", "{gb} += g * {a}"],
    "div": ["{ga} += g / ({b} * {b} + 1)",
            "{gb} -= g * {a} * 2 * {b} / ({b} * {b} + 1) ** 2"],
}
NP_BACKWARD_CONSTANT = {"add": ["{ga} += g"], "sub": ["{ga} += g"],
                        "mul": ["{ga} += g * np.float32({c!r})"],
                        "div": ["{ga} += g / np.float32({c!r})"]}


def numpy_source(ops):
    """def forward(v0, ..., v3): the values; def backward(v): the leaves' gradients."""
    n = INPUTS + len(ops)
    fwd = [f"def forward({', '.join(f'v{i}' for i in range(INPUTS))}):"]
    for k, (op, args, c) in enumerate(ops, INPUTS):
        names = {"a": f"v{args[0]}", "b": f"v{args[-1]}", "c": c}
        fwd.append(f"    v{k} = " + (NP_BY_CONSTANT[op] if c is not None
                                       else NP_FORWARD[op]).format(**names))
    fwd.append(f"    return [{', '.join(f'v{k}' for k in range(n))}]")
    bwd = ["def backward(v):", "    gs = [np.ones_like(v[0]) for _ in v]   # d sum / d v_k"]
    for k in range(n - 1, INPUTS - 1, -1):       # every consumer of v_k comes after it
        op, args, c = ops[k - INPUTS]
        names = {"a": f"v[{args[0]}]", "b": f"v[{args[-1]}]", "y": f"v[{k}]",
                 "ga": f"gs[{args[0]}]", "gb": f"gs[{args[-1]}]", "c": c}
        bwd.append(f"    g = gs[{k}]")
        for term in (NP_BACKWARD_CONSTANT[op] if c is not None else NP_BACKWARD[op]):
            bwd.append("    " + term.format(**names))
    bwd.append(f"    return gs[:{INPUTS}]")
    return "\n".join(fwd) + "\n\n" + "\n".join(bwd)


def compiled(source, namespace):
    scope = dict(namespace)
    exec(compile(source, f"<W14 program, {source.count(chr(10))} lines>", "exec"), scope)
    return scope


def leaf_values():
    rng = np.random.default_rng(h.SEED)
    return [rng.standard_normal(4).astype(np.float32) for _ in range(INPUTS)]


def case(lib, n_ops):
    ops = program(n_ops)
    x0 = leaf_values()
    if lib.name == "numpy":
        fns = compiled(numpy_source(ops), {"np": np})
        xs = [a.copy() for a in x0]
        return h.numpy_case(lambda: fns["forward"](*xs), fns["backward"])
    forward = compiled(autograd_source(ops), {})["forward"]
    xs = [lib.leaf(a) for a in x0]
    return h.autograd_case(lib, xs, lambda: forward(lib.mod, *xs))


def setup(lib, quick):
    cases = {"main": case(lib, OPS), "1e3": case(lib, 1_000)}
    if not quick:
        cases["1e5"] = case(lib, 100_000)
    return cases
