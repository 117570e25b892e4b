"""Random small programs built from the op table's rows (and view steps), run by lucid and NumPy.

A program is a list of leaves (float values with a memory layout made by NumPy: contiguous,
transposed, reversed or strided), a list of steps ``v3 = <expression over earlier names>`` and its
outputs (the steps no later step uses).
Each step is a table row (its lambda for lucid, its reference for NumPy; the in-place rows of
tests/support/op_rows_inplace.py write into a copy of their first input) or a view (transpose,
permute, reshape, slicing, expand, unsqueeze, squeeze). Programs print as runnable Python.
A program may carry extras (``Extras``), which the runs that compute gradients apply and the
printed script shows: tensor hooks returning g * 1.0 on some steps, some steps run through
lucid.utils.checkpoint.checkpoint, and the steps run under a pair of saved-tensor hooks
(lucid.autograd.graph.saved_tensors_hooks); none of them changes a value or a derivative.

Values are kept where finite differences mean something: every step's values are finite and
bounded, and an operand is reused only when it lies inside the row's domain with a margin (positive
for log/sqrt, away from 0 for abs/relu/division, inside [-2, 2] for asin(0.4 x), away from the
clamp bounds, no ties for max/min/maximum/minimum); otherwise a fresh leaf is sampled from the
domain. Inputs of the leaf-only domains (well-conditioned, positive-definite) and all inputs of a
row with ``fresh_inputs`` are always fresh leaves. A row with several outputs (split, eigh, qr)
is one step whose value is its outputs joined (flattened and concatenated: op_spec.joined). Keeping all values
finite also keeps every upstream gradient finite: masking by multiplication in the backward of
where/clamp/maximum/minimum/relu/amax turns inf/NaN gradients into NaN (a known open bug).
"""
import contextlib
import warnings
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

import lucid
from lucid.autograd.graph import saved_tensors_hooks
from lucid.utils.checkpoint import checkpoint
from support import op_rows_inplace
from support import op_table as T
from support.row_source import row_code, value_code

LIMIT = 1e4         # a step with a value outside +-LIMIT (or not finite) is not taken
BOUND = 8.0         # only values within +-BOUND are reused as operands
MARGIN = 0.02       # distance kept from kinks (clamp bounds, ties)
POS_MIN = 0.1       # reused operands of "positive" inputs are at least this
NONZERO_MIN = 0.05  # reused operands of "nonzero" inputs are at least this far from 0
MAX_NUMEL = 12      # elements per value (finite differences cost one run per leaf element)

SHAPES = [(), (1,), (3,), (4,), (0,), (2, 3), (3, 1), (1, 4), (2, 0), (0, 3), (2, 3, 2),
          (2, 1, 3), (1, 2, 2), (3, 0, 2), (2, 2, 3)]
# above lucid's typed-loop cut-off (2048 elements), where NumPy's kernels take over
LARGE_SHAPES = [(2100,), (1, 2100), (42, 50), (50, 1), (3, 25, 30), (2, 1, 1100)]
LARGE_NUMEL = 4400
LAYOUTS = ("contiguous", "transposed", "reversed", "strided")


def as_value(x):
    """x as a program's value: a float64 array, or complex128 when x is complex."""
    return np.asarray(x, np.complex128 if np.iscomplexobj(x) else np.float64)


def of_kind(np_dtype, values):
    """np_dtype (float64 or float32), or its complex counterpart when the values are complex."""
    if not np.iscomplexobj(values):
        return np_dtype
    return np.complex64 if np.dtype(np_dtype) == np.float32 else np.complex128


@dataclass
class Leaf:
    name: str
    values: np.ndarray      # float64 (complex128 for a complex leaf), the logical values
    layout: str
    code: str = ""          # NumPy code making the values (large leaves), else they are printed


@dataclass
class Step:
    name: str
    args: tuple             # names of the operands
    label: str              # the table row's name, or "view:<kind>"
    fn: Callable            # lucid
    ref: Callable           # NumPy
    code: str               # Python expression over the operands' names
    same_dtype: bool = False  # the operands must share one dtype (the row's same_dtype)


# saved-tensor hooks a program may run under: kind -> (pack, unpack, their code); "numpy" keeps
# a copy without history, so it is for first derivatives only (as in PyTorch)
SAVED_HOOKS = {
    "alias": (lambda t: t, lambda p: p, "lambda t: t", "lambda p: p"),
    "clone": (lambda t: t.clone(), lambda p: p, "lambda t: t.clone()", "lambda p: p"),
    "numpy": (lambda t: t.detach().numpy().copy(), lambda a: lucid.from_numpy(a),
              "lambda t: t.detach().numpy().copy()", "lambda a: lucid.from_numpy(a)"),
}
HOOK_CODE = "lambda g: g * 1.0"


def _same_gradient(g):
    return g * 1.0               # HOOK_CODE: a replacement with the same values


@dataclass(frozen=True)
class Extras:
    """What a gradient run adds to a program: a tensor hook on each of the steps `hooks`, the
    steps `checkpointed` run through checkpoint, and the steps run under `saved_hooks`."""
    hooks: frozenset = frozenset()
    checkpointed: frozenset = frozenset()
    saved_hooks: str = None

    def kept(self, names):
        """These extras for the steps called names only."""
        return replace(self, hooks=self.hooks & names, checkpointed=self.checkpointed & names)


@dataclass
class Program:
    leaves: list
    steps: list
    outputs: tuple          # the steps no later step uses (so every step counts)
    seed: object = 0
    extras: Extras = None   # applied by the runs that compute gradients

    def upto(self, name):
        """The program whose one output is the step called name (only what it needs)."""
        needed, steps = {name}, []
        for step in reversed(self.steps):
            if step.name in needed:
                needed.update(step.args)
                steps.append(step)
        steps.reverse()
        leaves = [leaf for leaf in self.leaves if leaf.name in needed]
        extras = None if self.extras is None else self.extras.kept({st.name for st in steps})
        return Program(leaves, steps, (name,), self.seed, extras)


# ---------------------------------------------------------------------------------------------
# leaves
# ---------------------------------------------------------------------------------------------

def layouts_for(shape):
    nd = len(shape)
    return [lay for lay in LAYOUTS
            if lay == "contiguous" or (lay == "transposed" and nd >= 2) or
            (lay in ("reversed", "strided") and nd >= 1)]


def leaf_array(values, layout, np_dtype):
    """A NumPy array of the values whose memory has the layout (a view of another buffer);
    np_dtype's complex counterpart for complex values."""
    a = np.asarray(values, dtype=of_kind(np_dtype, values))
    # .copy(), not np.ascontiguousarray: that keeps a view of a size-1 dim (any stride counts as
    # contiguous there), so the strides would differ from the printed np.array(...)[::-1]
    if layout == "transposed":
        return a.T.copy().T
    if layout == "reversed":
        return a[::-1].copy()[::-1]
    if layout == "strided":
        return np.repeat(a, 2, axis=-1)[..., ::2]
    return a.copy()


def leaf_code(leaf, np_dtype):
    """NumPy code making the leaf's values with its layout."""
    np_dtype = of_kind(np_dtype, leaf.values)
    dt = f"np.{np.dtype(np_dtype).name}"
    a = np.asarray(leaf.values, dtype=np_dtype)
    if leaf.code:               # the same steps as leaf_array, from the code of the values
        base = f"({leaf.code}).astype({dt})"
        return {"transposed": f"{base}.T.copy().T",
                "reversed": f"{base}[::-1].copy()[::-1]",
                "strided": f"np.repeat({base}, 2, axis=-1)[..., ::2]"}.get(leaf.layout, base)

    def array(x):
        if x.size == 0:
            return f"np.zeros({x.shape!r}, dtype={dt})"
        return f"np.array({value_code(x.tolist())}, dtype={dt})"

    if leaf.layout == "transposed":
        return array(a.T) + ".T"
    if leaf.layout == "reversed":
        return array(a[::-1]) + "[::-1]"
    if leaf.layout == "strided":
        return f"np.repeat({array(a)}, 2, axis=-1)[..., ::2]"
    return array(a)


# ---------------------------------------------------------------------------------------------
# running and printing
# ---------------------------------------------------------------------------------------------

def leaf_dtype(np_dtype, i):
    """The i-th leaf's dtype: np_dtype is one dtype for all leaves or a tuple, one per leaf."""
    return np_dtype[i] if isinstance(np_dtype, tuple) else np_dtype


def make_leaves(prog, np_dtype=np.float64, leaf_values=None, requires_grad=True):
    """The program's leaves as lucid tensors, in order."""
    out = []
    for i, leaf in enumerate(prog.leaves):
        values = leaf.values if leaf_values is None else leaf_values[i]
        t = lucid.from_numpy(leaf_array(values, leaf.layout, leaf_dtype(np_dtype, i)))
        out.append(t.requires_grad_() if requires_grad else t)
    return out


def run_lucid(prog, np_dtype=np.float64, leaf_values=None, requires_grad=True, extras=True):
    """Every name of the program bound to its lucid tensor (with the program's extras when the
    leaves require grad, unless extras is False)."""
    leaves = make_leaves(prog, np_dtype, leaf_values, requires_grad)
    return run_steps(prog, dict(zip((leaf.name for leaf in prog.leaves), leaves)), np_dtype,
                     prog.extras if requires_grad and extras else None)


def run_steps(prog, env, np_dtype=np.float64, extras=None):
    """env (the leaves bound to tensors) with every step of the program added, run with extras."""
    hooks = contextlib.nullcontext() if extras is None or extras.saved_hooks is None else \
        saved_tensors_hooks(*SAVED_HOOKS[extras.saved_hooks][:2])
    with hooks:
        for step in prog.steps:
            try:
                env[step.name] = _run_step(step, env, extras)
            except Exception as e:
                sub = prog.upto(step.name)
                names = [leaf.name for leaf in prog.leaves]
                dtypes = tuple(leaf_dtype(np_dtype, names.index(leaf.name))
                               for leaf in sub.leaves)
                raise StepError(sub, step, e, dtypes) from e
    return env


def _run_step(step, env, extras):
    """The step's value (through checkpoint, and with a hook, when extras say so)."""
    if extras is not None and step.name in extras.checkpointed:
        names = _unique(step.args)
        value = checkpoint(lambda *a: step.fn(*[a[names.index(n)] for n in step.args]),
                           *[env[n] for n in names])
    else:
        value = step.fn(*[env[a] for a in step.args])
    if extras is not None and step.name in extras.hooks and value.requires_grad:
        value.register_hook(_same_gradient)
    return value


def _unique(names):
    return list(dict.fromkeys(names))


class StepError(Exception):
    """lucid raised in a step that NumPy computes: carries the program up to that step and the
    leaves' dtypes of the run that raised."""

    def __init__(self, prog, step, error, np_dtypes):
        super().__init__(f"{step.name} = {step.code} raised {type(error).__name__}: {error}")
        self.prog, self.step, self.error, self.np_dtypes = prog, step, error, np_dtypes


def run_numpy(prog, leaf_values=None):
    """Every name of the program bound to its NumPy float64 (or complex128) value."""
    env = {leaf.name: as_value(leaf.values if leaf_values is None else leaf_values[i]).copy()
           for i, leaf in enumerate(prog.leaves)}
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # NumPy's "mean of empty slice"
        for step in prog.steps:
            env[step.name] = as_value(step.ref(*[env[a].copy() for a in step.args]))
    return env


def render(prog, np_dtype=np.float64, tail=(), head=(), dual=None):
    """The program as a Python script: leaves made with NumPy layouts, the head lines, the steps
    (with the program's extras), then the tail lines. dual: (lines before the steps, lines after
    them), all inside `with fwAD.dual_level():`."""
    extras = prog.extras
    lines = ["import numpy as np", "import lucid"]
    if dual is not None:
        lines.append("import lucid.autograd.forward_ad as fwAD")
    if extras is not None and extras.checkpointed:
        lines.append("from lucid.utils.checkpoint import checkpoint")
    lines.append("")
    for i, leaf in enumerate(prog.leaves):
        code = leaf_code(leaf, leaf_dtype(np_dtype, i))
        lines.append(f"{leaf.name} = lucid.from_numpy({code}).requires_grad_()"
                     f"  # {leaf.layout}")
    lines += list(head)
    indent = ""
    if dual is not None:
        lines.append("with fwAD.dual_level():")
        indent = "    "
        lines += [indent + line for line in dual[0]]
    if extras is not None and extras.saved_hooks is not None:
        pack, unpack = SAVED_HOOKS[extras.saved_hooks][2:]
        lines.append(f"{indent}with lucid.autograd.graph.saved_tensors_hooks({pack}, {unpack}):")
        indent += "    "
    lines += [indent + line for step in prog.steps for line in _step_lines(step, extras)]
    if dual is not None:
        lines += ["    " + line for line in dual[1]]
    lines += list(tail)
    return "\n".join(lines)


def _step_lines(step, extras):
    """The step's line (and its hook's) as the program's extras run it."""
    if extras is not None and step.name in extras.checkpointed:
        names = ", ".join(_unique(step.args))
        lines = [f"{step.name} = checkpoint(lambda {names}: {step.code}, {names})"]
    else:
        lines = [f"{step.name} = {step.code}"]
    if extras is not None and step.name in extras.hooks:
        lines.append(f"if {step.name}.requires_grad:")
        lines.append(f"    {step.name}.register_hook({HOOK_CODE})")
    return lines


def features(prog):
    """What the program exercises (for the run's summary): shapes, layouts, views, broadcasting."""
    env = run_numpy(prog)
    found = {f"layout:{leaf.layout}" for leaf in prog.leaves}
    found |= {step.label for step in prog.steps if step.label.startswith("view:")}
    for value in env.values():
        if value.ndim == 0:
            found.add("0-d")
        if value.size == 0:
            found.add("0-size")
        if value.size >= 2048:
            found.add(">= 2048 elements")
    for step in prog.steps:
        if len({env[a].shape for a in step.args}) > 1:
            found.add("mixed shapes")
    if len(prog.outputs) > 1:
        found.add("several outputs")
    if any(np.iscomplexobj(value) for value in env.values()):
        found.add("complex")
        if any(not np.iscomplexobj(leaf.values) for leaf in prog.leaves):
            found.add("real leaf")
    if any(step.label in INPLACE_ROWS for step in prog.steps):
        found.add("in-place")
    extras = prog.extras
    if extras is not None:
        found |= {name for name, on in (("hooks", extras.hooks),
                                        ("checkpoint", extras.checkpointed)) if on}
        if extras.saved_hooks is not None:
            found.add(f"saved-tensor hooks ({extras.saved_hooks})")
    return found


INPLACE_ROWS = frozenset(spec.name for spec in op_rows_inplace.ROWS)


# ---------------------------------------------------------------------------------------------
# domains of reused operands
# ---------------------------------------------------------------------------------------------

def in_domain(v, domain):
    """Is v (an intermediate value) safely inside the domain? Never for LEAF_DOMAINS: no
    intermediate value is known to be well-conditioned or positive-definite. A complex value
    is inside the complex domains only; a real one inside those too (where it meets complex)."""
    if domain in T.LEAF_DOMAINS or (np.iscomplexobj(v) and domain not in T.COMPLEX_DOMAINS):
        return False
    if v.size == 0:
        return True
    if not np.all(np.isfinite(v)) or np.max(np.abs(v)) > BOUND:
        return False
    if domain == T.C_NONZERO:
        return np.min(np.abs(v)) >= NONZERO_MIN
    if domain == T.C_RIGHT:
        return np.min(v.real) >= POS_MIN
    if domain == T.C_SMALL:
        return np.max(np.abs(v)) <= 0.8
    if domain == T.POS:
        return np.min(v) >= POS_MIN
    if domain == T.SMALL:
        return np.max(np.abs(v)) <= 2.0
    if domain == T.NONZERO:
        return np.min(np.abs(v)) >= NONZERO_MIN
    if domain == T.CLAMP:
        return min(np.min(np.abs(v - T.LO)), np.min(np.abs(v - T.HI))) >= MARGIN
    if domain == T.DISTINCT:
        flat = np.sort(v.reshape(-1))
        return flat.size < 2 or np.min(np.diff(flat)) >= MARGIN
    return True


def acceptable(out):
    return out.size == 0 or (np.all(np.isfinite(out)) and np.max(np.abs(out)) <= LIMIT)


def apart(values):
    """Do the operands differ everywhere (after broadcasting) by MARGIN?"""
    x, y = np.broadcast_arrays(*values)
    return x.size == 0 or np.min(np.abs(x - y)) >= MARGIN


# ---------------------------------------------------------------------------------------------
# generation
# ---------------------------------------------------------------------------------------------

def domain_code(domain, shape, seed):
    """NumPy code for random values of shape inside the domain (for leaves too big to print)."""
    def rng(k=0):
        return f"np.random.default_rng({seed + k})"
    if domain == T.POS:
        return f"np.round({rng()}.uniform(0.5, 2.0, {shape!r}), 3)"
    if domain == T.NONZERO:
        return (f"np.round({rng()}.uniform(0.5, 2.0, {shape!r}), 3) * "
                f"{rng(1)}.choice([-1.0, 1.0], {shape!r})")
    if domain == T.CLAMP:      # bands around -1, 0 and 1: at least 0.15 from the bounds +-0.5
        return (f"np.round({rng()}.choice([-1.0, 0.0, 1.0], {shape!r}) + "
                f"{rng(1)}.uniform(-0.35, 0.35, {shape!r}), 3)")
    if domain == T.DISTINCT:
        n = int(np.prod(shape))
        return f"({rng()}.permutation({n}) * 0.03 - {0.015 * n!r}).reshape({shape!r})"
    if domain == T.WELL:
        return f"np.round({rng()}.uniform(-2.0, 2.0, {shape!r}), 3) + 4.0 * np.eye({shape[-2]}, {shape[-1]})"
    if domain == T.SPD:
        return (f"(lambda x: x @ np.swapaxes(x, -1, -2) + {shape[-1]} * np.eye({shape[-1]}))"
                f"(np.round({rng()}.uniform(-2.0, 2.0, {shape!r}), 3))")
    return f"np.round({rng()}.uniform(-2.0, 2.0, {shape!r}), 3)"      # ANY, SMALL


def _index_text(key):
    def one(k):
        if isinstance(k, slice):
            parts = ["" if e is None else str(e) for e in (k.start, k.stop, k.step)]
            return ":".join(parts[:2]) + (f":{parts[2]}" if k.step is not None else "")
        return "..." if k is Ellipsis else repr(k)
    return ", ".join(one(k) for k in key)


class Generator:
    """Makes random programs from rows (OpSpecs) with a seeded NumPy generator."""

    def __init__(self, rng, rows, view_probability=0.3, zero_size=True, layouts=True, large=False,
                 extras=0.0, checkpoints=True, saved_hooks=tuple(SAVED_HOOKS)):
        self.rng = rng
        self.rows = list(rows)
        self.view_probability = view_probability
        self.extras = extras            # the share of programs given random Extras
        self.checkpoints = checkpoints  # may the extras checkpoint steps?
        self.saved_hooks = saved_hooks  # the saved-tensor hooks the extras may use
        self.zero_size = zero_size and not large
        self.layouts = layouts
        self.large = large          # shapes above the typed-loop cut-off; leaves made by code
        self.shapes = LARGE_SHAPES if large else SHAPES
        self.max_numel = LARGE_NUMEL if large else MAX_NUMEL

    # -- shapes ----------------------------------------------------------------------------------
    def _choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def _fresh_shapes(self, allow_empty, min_ndim=0):
        return [s for s in self.shapes if len(s) >= min_ndim and (allow_empty or 0 not in s)]

    def _recent_shape(self, ok):
        names = [n for n in reversed(self.order) if ok(self.values[n].shape)]
        if names and self.rng.random() < 0.75:
            return self.values[names[0] if self.rng.random() < 0.6 else self._choice(names)].shape
        return None

    def _partner(self, base, grow=True):
        """A shape that broadcasts with base (to base's own shape unless grow)."""
        r = self.rng.random() * (1.0 if grow else 0.85)
        if r < 0.35:
            return base
        if r < 0.55:
            return tuple(1 if self.rng.random() < 0.5 else d for d in base)
        if r < 0.75:
            return base[int(self.rng.integers(len(base) + 1)):]
        if r < 0.85:
            return ()
        return (2,) + base

    def _shapes_for(self, spec):
        allow_empty = self.zero_size and spec.zero_size
        if spec.kind == T.ELEMENTWISE:
            ok = (lambda s: allow_empty or 0 not in s)
            base = self._recent_shape(ok) or self._choice(self._fresh_shapes(allow_empty))
            shapes = [base] + [self._partner(base, grow=not spec.inplace)
                               for _ in range(spec.arity - 1)]
            if not spec.inplace:         # (an in-place row's first input has the result's shape)
                order = self.rng.permutation(len(shapes))
                shapes = [shapes[i] for i in order]
            try:
                full = np.broadcast_shapes(*shapes)
            except ValueError:
                return None
            if int(np.prod(full)) > self.max_numel or (not allow_empty and 0 in full):
                return None
            return shapes
        if spec.kind == T.REDUCTION:
            ok = (lambda s: len(s) >= spec.min_ndim and (allow_empty or 0 not in s))
            shape = self._recent_shape(ok) or self._choice(self._fresh_shapes(allow_empty,
                                                                              spec.min_ndim))
            return [shape]
        latest = self.values[self.order[-1]].shape if self.order else None
        fitting = [case for case in spec.shapes if latest in map(tuple, case)]
        return list(self._choice(fitting if fitting and self.rng.random() < 0.8 else spec.shapes))

    def _accepts(self, spec, shape):
        """Can the row take a value of this shape as one of its inputs?"""
        if 0 in shape and not (self.zero_size and spec.zero_size):
            return False
        if spec.kind == T.ELEMENTWISE:
            return int(np.prod(shape)) <= self.max_numel
        if spec.kind == T.REDUCTION:
            return len(shape) >= spec.min_ndim
        return any(shape in map(tuple, case) for case in spec.shapes)

    def _next_row(self):
        """A random row; most often one that can take the latest value (so steps chain)."""
        if self.order and self.rng.random() < 0.7:
            shape = self.values[self.order[-1]].shape
            fitting = [spec for spec in self.rows if self._accepts(spec, shape)]
            if fitting:
                return self._choice(fitting)
        return self._choice(self.rows)

    # -- values ----------------------------------------------------------------------------------
    def _new_leaf(self, shape, domain, contiguous):
        layout = "contiguous" if contiguous or not self.layouts else self._choice(layouts_for(shape))
        if self.large and int(np.prod(shape)) > MAX_NUMEL:
            code = domain_code(domain, shape, int(self.rng.integers(2 ** 31)))
            return Leaf(f"x{len(self.leaves)}", as_value(eval(code)), layout, code)
        # three decimals print short and exactly; the domains' margins are far wider than 5e-4
        values = np.round(T.sample(self.rng, shape, domain), 3)
        return Leaf(f"x{len(self.leaves)}", as_value(values), layout)

    def _bind(self, name, values):
        self.values[name] = values
        self.order.append(name)

    def _row_step(self, spec, fresh_only=False):
        shapes = self._shapes_for(spec)
        if shapes is None:
            return None
        operands, new_leaves = [], []
        latest = self.order[-1] if self.order and self.rng.random() < 0.8 else None
        for shape, domain in zip(shapes, spec.domains):
            name = None
            reuse = not (fresh_only or spec.fresh_inputs) and spec.any_layout
            if latest is not None and reuse and \
                    self.values[latest].shape == tuple(shape) and in_domain(self.values[latest], domain):
                name, latest = latest, None          # chain: consume the latest value once
            if name is None and reuse:
                cands = [n for n in self.order
                         if self.values[n].shape == tuple(shape) and in_domain(self.values[n], domain)]
                if cands and self.rng.random() < 0.8:
                    name = cands[-1] if self.rng.random() < 0.5 else self._choice(cands)
            if name is None:
                leaf = self._new_leaf(tuple(shape), domain, contiguous=not spec.any_layout)
                leaf.name = f"x{len(self.leaves) + len(new_leaves)}"
                new_leaves.append(leaf)
                name = leaf.name
            operands.append(name)
        lookup = {**self.values, **{leaf.name: leaf.values for leaf in new_leaves}}
        args = [lookup[n] for n in operands]
        fn, ref = T.joined(spec)
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                out = as_value(ref(*[a.copy() for a in args]))
        except (ValueError, IndexError):
            return None
        if not acceptable(out) or (spec.apart and not apart(args)):
            return None
        for leaf in new_leaves:
            self.leaves.append(leaf)
            self._bind(leaf.name, leaf.values)
        return self._add_step(tuple(operands), spec.name, fn, ref,
                              T.joined_code(spec, row_code(spec.fn, operands)), out,
                              spec.same_dtype)

    def _add_step(self, args, label, fn, ref, code, out, same_dtype=False):
        step = Step(f"v{len(self.steps)}", args, label, fn, ref, code, same_dtype)
        self.steps.append(step)
        self._bind(step.name, as_value(out).copy())
        return step

    # -- views -----------------------------------------------------------------------------------
    def _view_step(self):
        if not self.order:
            return None
        name = self.order[-1] if self.rng.random() < 0.8 else self._choice(self.order)
        a = self.values[name]
        view = self._view_for(a.shape)
        if view is None:
            return None
        kind, code, fn, ref = view
        out = as_value(ref(a)).copy()
        if out.size > 2 * self.max_numel:
            return None
        return self._add_step((name,), f"view:{kind}", fn, ref, name + code, out)

    def _view_for(self, shape):
        nd, rng = len(shape), self.rng
        kinds = ["reshape", "unsqueeze", "expand"]
        if nd >= 1:
            kinds += ["index", "index"]
        if nd >= 2:
            kinds += ["transpose", "T" if nd == 2 else "permute"]
        if 1 in shape:
            kinds.append("squeeze")
        kind = self._choice(kinds)
        if kind == "transpose":
            i, j = (int(d) for d in rng.choice(nd, 2, replace=False))
            return kind, f".transpose({i}, {j})", lambda t: t.transpose(i, j), \
                lambda a: np.swapaxes(a, i, j)
        if kind == "T":
            return kind, ".T", lambda t: t.T, lambda a: a.T
        if kind == "permute":
            perm = tuple(int(d) for d in rng.permutation(nd))
            return kind, f".permute{perm}", lambda t: t.permute(perm), \
                lambda a: np.transpose(a, perm)
        if kind == "reshape":
            new = self._reshaped(shape)
            text = ", ".join(map(str, new)) if new else "()"
            return kind, f".reshape({text})", lambda t: t.reshape(new), lambda a: a.reshape(new)
        if kind == "unsqueeze":
            d = int(rng.integers(-nd - 1, nd + 1))
            return kind, f".unsqueeze({d})", lambda t: t.unsqueeze(d), lambda a: np.expand_dims(a, d)
        if kind == "squeeze":
            d = self._choice([i for i, n in enumerate(shape) if n == 1])
            return kind, f".squeeze({d})", lambda t: t.squeeze(d), lambda a: np.squeeze(a, d)
        if kind == "expand":
            ones = [i for i, n in enumerate(shape) if n == 1]
            if ones and rng.random() < 0.6:
                d = self._choice(ones)
                new = tuple(3 if i == d else (-1 if rng.random() < 0.3 else n)
                            for i, n in enumerate(shape))
            else:
                new = (2,) + tuple(shape)
            full = tuple(s if s != -1 else shape[i - (len(new) - nd)] for i, s in enumerate(new))
            text = ", ".join(map(str, new))
            return kind, f".expand({text})", lambda t: t.expand(*new), \
                lambda a: np.broadcast_to(a, full)
        # basic indexing along one dimension
        d = int(rng.integers(nd))
        n = shape[d]
        if n > 0 and rng.random() < 0.3:
            k = int(rng.integers(-n, n))
        else:
            step = self._choice([1, 2, -1, -2])
            start = self._choice([None, 0, 1, -1])
            stop = self._choice([None, None, 2, -1])
            k = slice(start, stop, None if step == 1 and rng.random() < 0.5 else step)
        key = (slice(None),) * d + (k,)
        if rng.random() < 0.2:
            key = (Ellipsis,) + key[d:] if d == nd - 1 else key
        return "index", f"[{_index_text(key)}]", lambda t: t[key], lambda a: a[key]

    def _reshaped(self, shape):
        n = int(np.prod(shape))
        dims = []
        rem = n
        for _ in range(int(self.rng.integers(0, 3))):
            if rem == 0:
                dims.append(int(self.rng.integers(1, 3)))
                continue
            divisors = [d for d in range(1, rem + 1) if rem % d == 0]
            d = self._choice(divisors)
            dims.append(d)
            rem //= d
        dims.append(rem)
        dims = [dims[i] for i in self.rng.permutation(len(dims))]
        if n > 0 and len(dims) > 1 and self.rng.random() < 0.3:
            dims[int(self.rng.integers(len(dims)))] = -1
        if n == 1 and self.rng.random() < 0.3:
            return ()
        return tuple(dims)

    # -- programs --------------------------------------------------------------------------------
    def program(self, n_steps, anchor=None, seed=0):
        """A program of up to n_steps steps; the anchor row (if given) is one of them. Its outputs
        are the values no later step uses."""
        self.leaves, self.steps, self.values, self.order = [], [], {}, []
        anchor_at = int(self.rng.integers(n_steps)) if anchor is not None else -1
        for k in range(n_steps):
            if k == anchor_at:
                step = None
                for attempt in range(30):
                    step = self._row_step(anchor, fresh_only=attempt >= 10)
                    if step is not None:
                        break
                if step is None:
                    raise AssertionError(f"row {anchor.name!r}: no program could use it "
                                         "(no acceptable shapes or values)")
                continue
            for _ in range(4):
                if self.order and self.rng.random() < self.view_probability:
                    step = self._view_step()
                else:
                    step = self._row_step(self._next_row())
                if step is not None:
                    break
        if not self.steps:
            return None
        used = {a for step in self.steps for a in step.args}
        outputs = tuple(step.name for step in self.steps if step.name not in used)
        extras = self._extras() if self.rng.random() < self.extras else None
        return Program(self.leaves, self.steps, outputs, seed, extras)

    def _extras(self):
        """Random extras: hooks on some steps, some steps checkpointed, saved-tensor hooks."""
        names = [step.name for step in self.steps]

        def some():
            return frozenset(n for n in names if self.rng.random() < 0.4)
        hooks = some() if self.rng.random() < 0.6 else frozenset()
        checkpointed = some() if self.checkpoints and self.rng.random() < 0.6 else frozenset()
        saved = self._choice(self.saved_hooks) if self.saved_hooks and \
            self.rng.random() < 0.5 else None
        return Extras(hooks, checkpointed, saved)
