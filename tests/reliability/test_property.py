"""Differential property test: random small programs built from the op table's rows.

Every row with ``property`` set (tests/support/op_table.py) takes part, so an op added to the table joins
automatically; every row is the anchor of at least one program per run. Programs mix float64 and
float32, 0-d, 0-size and broadcast shapes, leaves with NumPy-made layouts (transposed, reversed,
strided) and view steps (reshape, transpose, permute, slicing, expand, squeeze, unsqueeze).
Each is checked against NumPy (forward values) and float64 central finite differences of itself
(a VJP with a random cotangent; gradgradcheck of a small scalar-valued program); large programs
(above lucid's typed-loop cut-off) are checked along a random direction.

Programs also run through the in-place rows (tests/support/op_rows_inplace.py), and some carry extras
that change no derivative (tensor hooks, checkpointed steps, saved-tensor hooks:
random_programs.Extras). Programs of the rows with forward mode and second derivatives are also
checked under forward-over-reverse and reverse-over-forward (program_checks.check_mixed_modes):
every in-place row anchors one program of each per run.

Complex programs are built from the complex rows (tests/support/op_rows_complex_values.py):
complex and real values meet in them (abs, real, var give real values; lucid.complex and polar
take real leaves), each checked against NumPy in both precisions and by gradcheck with forward
mode (gradgradcheck on some), which compare every real and imaginary part
(tests/reliability/complex_checks.py).

Budget: LUCID_PROPERTY_SECONDS (default 4) seconds in all, after the one pass over every row (and
every in-place row of the mixed modes); LUCID_PROPERTY_SEED picks another sequence of programs.
A failure prints the program as a script.
"""
import collections
import os
import time
import traceback

import numpy as np
import pytest

import lucid
from support import op_table as T
from support.row_source import row_code
from support.op_rows_complex_values import ROWS as COMPLEX_ROWS
from support.shared_functions import SquareWithJvp

from .complex_checks import check_complex_program

from .program_checks import (FORWARD_OVER_REVERSE, INCONCLUSIVE, REVERSE_OVER_FORWARD,
                             check_directional, check_first_order, check_forward,
                             check_mixed_modes, check_second_order)
from .random_programs import (INPLACE_ROWS, SAVED_HOOKS, Extras, Generator, MAX_NUMEL, StepError,
                              features, leaf_array, render, run_lucid)

# lucid's mean of a 0-size tensor goes through NumPy, which warns; the values are what is checked
pytestmark = pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning",
                                        "ignore:invalid value encountered:RuntimeWarning")

SECONDS = float(os.environ.get("LUCID_PROPERTY_SECONDS", "4"))
SEED = int(os.environ.get("LUCID_PROPERTY_SEED", "0"))
SHARES = {"first order": 0.35, "second order": 0.15, "large": 0.2,       # of the budget
          FORWARD_OVER_REVERSE: 0.1, REVERSE_OVER_FORWARD: 0.1, "complex": 0.1}
EXTRAS = 0.3            # the share of programs with hooks, checkpointing or saved-tensor hooks
MAX_REPORTS = 3

ROWS = [spec for spec in T.OPS if spec.property]
GRADGRAD_ROWS = [spec for spec in ROWS if spec.gradgrad]
MIXED_ROWS = [spec for spec in ROWS if spec.gradgrad and spec.forward_ad]
MIXED_ANCHORS = [spec for spec in MIXED_ROWS if spec.name in INPLACE_ROWS]
for _spec in ROWS:
    row_code(_spec.fn, [f"x{i}" for i in range(_spec.arity)])  # each row's source is read now, once


def _report(kind, stats, failures):
    print(f"\n{kind}: {stats['programs']} programs, {stats['steps']} steps, "
          f"{stats['inconclusive']} inconclusive (near a kink), {len(stats['labels'])} rows/views "
          f"used, {len(failures)} failures, seed {SEED}, {stats['seconds']:.1f} s\nprograms with: " +
          ", ".join(f"{name} {n}" for name, n in sorted(stats["features"].items())))
    excluded = [f"{spec.name}: {spec.reason}" for spec in T.OPS if not spec.property]
    if excluded:
        print("kept out of the property test:\n  " + "\n  ".join(excluded))
    if failures:
        pytest.fail("\n\n".join(failures[:MAX_REPORTS]) +
                    (f"\n\n... and {len(failures) - MAX_REPORTS} more" if
                     len(failures) > MAX_REPORTS else ""), pytrace=False)


def _run(kind, rows, check, budget, anchors, make_generator, stream=None):
    stats = {"programs": 0, "steps": 0, "inconclusive": 0, "labels": set(),
             "features": collections.Counter()}
    failures, seen = [], set()
    start = time.perf_counter()
    k = 0
    while k < len(anchors) or time.perf_counter() - start < budget:
        rng = np.random.default_rng([SEED, k, len(kind) if stream is None else stream])
        anchor = anchors[k] if k < len(anchors) else None
        prog = make_generator(rng).program(int(rng.integers(2, 8)), anchor=anchor, seed=(SEED, k))
        k += 1
        if prog is None:
            continue
        stats["programs"] += 1
        stats["steps"] += len(prog.steps)
        stats["labels"] |= {s.label for s in prog.steps}
        stats["features"].update(features(prog))
        result = _checked(check, prog, rng)
        if result == INCONCLUSIVE:
            stats["inconclusive"] += 1
        elif result is not None:
            key = result.splitlines()[0].split(" (seed")[0] + str(sorted(
                {s.label for s in prog.steps}))
            if key not in seen:
                seen.add(key)
                failures.append(result)
    stats["seconds"] = time.perf_counter() - start
    return stats, failures


def _checked(check, prog, rng):
    """The check's result; an exception from lucid becomes a report with the program."""
    try:
        return check(prog, rng)
    except StepError as e:
        return (f"lucid raised in a random program (seed {prog.seed}) where NumPy computes a "
                f"value: {e}\n" + render(e.prog, e.np_dtypes, [
                    f"# raises {type(e.error).__name__}: {e.error}"]))
    except Exception as e:
        return (f"lucid raised {type(e).__name__}: {e} in a random program (seed {prog.seed})\n"
                f"{traceback.format_exc(limit=-3)}\n" + render(prog))


def _first_order(prog, rng):
    return check_forward(prog) or check_first_order(prog, rng)


def test_random_programs_forward_and_first_order():
    stats, failures = _run("first order", ROWS, _first_order, SECONDS * SHARES["first order"],
                           ROWS, lambda rng: Generator(rng, ROWS, extras=EXTRAS))
    missing = {spec.name for spec in ROWS} - stats["labels"]
    assert not missing, f"rows no program used: {sorted(missing)}"
    _report("first order", stats, failures)


def _small_generator(rng):
    # contiguous leaves: gradgradcheck perturbs its inputs in place; no 0-size leaves:
    # lucid.autograd.gradcheck refuses a 0-size input as "not contiguous" (a gradcheck bug)
    return _SmallGenerator(rng, GRADGRAD_ROWS, layouts=False, zero_size=False)


class _SmallGenerator(Generator):
    """Programs with at most MAX_NUMEL leaf elements in all (gradgradcheck builds full Jacobians)."""

    def program(self, n_steps, anchor=None, seed=0):
        for _ in range(20):
            prog = super().program(n_steps, anchor, seed)
            if prog is None or sum(leaf.values.size for leaf in prog.leaves) <= MAX_NUMEL:
                return prog
        return None


def test_random_programs_second_order():
    stats, failures = _run("second order", GRADGRAD_ROWS, check_second_order,
                           SECONDS * SHARES["second order"], [], _small_generator)
    assert stats["programs"] > 0
    _report("second order", stats, failures)


def _large(prog, rng):
    return check_forward(prog) or check_directional(prog, rng)


def test_large_random_programs():
    # values above lucid's typed-loop cut-off run NumPy's kernels; gradients are checked along
    # a random direction (one central difference instead of one per element)
    stats, failures = _run("large", ROWS, _large, SECONDS * SHARES["large"], [],
                           lambda rng: Generator(rng, ROWS, large=True))
    assert stats["programs"] > 0
    _report("large", stats, failures)


def _complex_generator(rng):
    # contiguous leaves and no 0-size ones for gradcheck, as _small_generator; the forward check
    # runs the programs' layouts
    return _SmallGenerator(rng, COMPLEX_ROWS, zero_size=False)


def _complex(prog, rng):
    return check_complex_program(prog, second_order=rng.random() < 0.3)


def test_random_complex_programs():
    """Programs of the complex rows, real values among them (abs, real, var, polar's inputs):
    values against NumPy, gradcheck with forward mode, and gradgradcheck on some."""
    stats, failures = _run("complex", COMPLEX_ROWS, _complex, SECONDS * SHARES["complex"],
                           COMPLEX_ROWS, _complex_generator)
    missing = {spec.name for spec in COMPLEX_ROWS} - stats["labels"]
    assert not missing, f"complex rows no program used: {sorted(missing)}"
    assert stats["features"]["complex"] > 0 and stats["features"]["real leaf"] > 0
    _report("complex", stats, failures)


def _mixed_generator(mode):
    # reverse-over-forward through checkpoint raises in PyTorch too (the re-run in backward
    # saves fewer tensors than the forward run in the dual level did), and a saved-tensor hook
    # that keeps a copy without history cuts the tangents' graph (as it would in PyTorch)
    backward_of_tangents = mode == REVERSE_OVER_FORWARD
    return lambda rng: Generator(
        rng, MIXED_ROWS, extras=EXTRAS, checkpoints=not backward_of_tangents,
        saved_hooks=("alias", "clone") if backward_of_tangents else tuple(SAVED_HOOKS))


@pytest.mark.parametrize("mode", [FORWARD_OVER_REVERSE, REVERSE_OVER_FORWARD])
def test_random_programs_under_mixed_modes(mode):
    stats, failures = _run(mode, MIXED_ROWS, lambda prog, rng: check_mixed_modes(prog, rng, mode),
                           SECONDS * SHARES[mode], MIXED_ANCHORS, _mixed_generator(mode),
                           stream=100 + (mode == REVERSE_OVER_FORWARD))
    missing = {spec.name for spec in MIXED_ANCHORS} - stats["labels"]
    assert not missing, f"in-place rows no program used: {sorted(missing)}"
    assert stats["features"]["in-place"] >= len(MIXED_ANCHORS)
    _report(mode, stats, failures)


# ---------------------------------------------------------------------------------------------
# the harness itself
# ---------------------------------------------------------------------------------------------

def _exec(code):
    scope = {}
    exec(compile(code, "<printed program>", "exec"), scope)
    return scope


@pytest.mark.parametrize("np_dtype", [np.float64, np.float32])
def test_printed_programs_run_and_give_the_same_values(np_dtype):
    noncontiguous = 0
    for k in range(40):
        rng = np.random.default_rng([SEED, k, 99])
        prog = Generator(rng, ROWS).program(5, anchor=ROWS[(7 * k) % len(ROWS)])
        scope = _exec(render(prog, np_dtype))
        env = run_lucid(prog, np_dtype)
        for name, t in env.items():
            assert scope[name].dtype == t.dtype and scope[name].shape == t.shape, name
            np.testing.assert_array_equal(scope[name].detach().numpy(), t.detach().numpy(),
                                          err_msg=render(prog, np_dtype))
        for leaf in prog.leaves:
            arr = scope[leaf.name].detach().numpy()
            want = leaf_array(leaf.values, leaf.layout, np_dtype)
            if arr.size > 0:        # (the stride of a dimension of size 1 carries no layout)
                assert [st for st, n in zip(arr.strides, arr.shape) if n > 1] == \
                    [st for st, n in zip(want.strides, want.shape) if n > 1], leaf.name
            noncontiguous += not arr.flags.c_contiguous
    assert noncontiguous > 0


def test_every_row_prints_as_code_that_runs_alone():
    # the printed code of a row needs nothing but numpy and lucid, and computes what fn computes
    for spec in ROWS:
        rng = np.random.default_rng([SEED, 5])
        args = [lucid.tensor(T.sample(rng, s, d)) for s, d in zip(spec.shapes[0], spec.domains)]
        names = [f"x{i}" for i in range(spec.arity)]
        code = T.joined_code(spec, row_code(spec.fn, names))
        got = eval(code, {"np": np, "lucid": lucid, **dict(zip(names, args))})
        want = T.joined(spec)[0](*args)
        np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=f"{spec.name}: {code}")


def _tripled_gradient(x):
    y = x * 1.0
    if y.requires_grad:
        y.register_hook(lambda g: g * 3.0)
    return y


class _UnconjugatedSquare(lucid.autograd.Function):
    """z**2 whose backward forgets the conjugate: g * 2z instead of g * conj(2z)."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return z * z

    @staticmethod
    def backward(ctx, g):
        z, = ctx.saved_tensors
        return g * 2.0 * z


def _unconjugated_square(z):
    return _UnconjugatedSquare.apply(z)


def test_complex_check_catches_a_missing_conjugate_and_prints_the_program():
    wrong = T.OpSpec("unconjugated", lambda z: _unconjugated_square(z), np.square,
                     T.UNARY_SHAPES, (T.C_ANY,), 1, kind=T.ELEMENTWISE, forward_ad=False)
    prog = _SmallGenerator(np.random.default_rng(3), [wrong, *COMPLEX_ROWS[:4]],
                           zero_size=False).program(3, anchor=wrong)
    report = check_complex_program(prog, forward_ad=False)
    assert report is not None and "wrong derivative in a random complex program" in report
    assert "_UnconjugatedSquare.apply(" in report and "complex128" in report
    # the printed program runs (given the Function this test defines) and its check fails
    code = report.split("\n", 1)[1].replace("print(gradcheck(", "assert not (gradcheck(")
    exec(compile(code, "<report>", "exec"), {"_UnconjugatedSquare": _UnconjugatedSquare})


def test_first_order_check_catches_a_wrong_gradient_and_prints_the_program():
    wrong = T.OpSpec("wrong_grad", lambda x: _tripled_gradient(x), lambda a: a * 1.0,
                     T.UNARY_SHAPES, (T.ANY,), 1, kind=T.ELEMENTWISE)
    prog = Generator(np.random.default_rng(1), [wrong, *ROWS[:3]]).program(3, anchor=wrong)
    report = check_first_order(prog, np.random.default_rng(2))
    assert report not in (None, INCONCLUSIVE)
    assert "wrong gradient" in report and "_tripled_gradient(" in report
    assert "import lucid" in report and "u0 = lucid.from_numpy(" in report
    assert ".backward(u0" in report or "lucid.autograd.grad([" in report
    # the printed program runs (given the helper this test defines) and shows the wrong gradient
    code = report.split("\n", 1)[1]
    lucid_says = eval(code.rsplit("# lucid gives ", 1)[1].splitlines()[0])
    scope = {"_tripled_gradient": _tripled_gradient}
    exec(compile(code, "<report>", "exec"), scope)
    leaf = report.split("d/d(", 1)[1].split(")", 1)[0]
    got = scope["grads"][[n for n in scope if n.startswith("x")].index(leaf)] \
        if "grads" in scope else scope[leaf].grad
    np.testing.assert_allclose(got.numpy(), lucid_says)


def test_directional_check_catches_a_wrong_gradient_in_a_large_program():
    wrong = T.OpSpec("wrong_grad", lambda x: _tripled_gradient(x), lambda a: a * 1.0,
                     T.UNARY_SHAPES, (T.ANY,), 1, kind=T.ELEMENTWISE)
    prog = Generator(np.random.default_rng(8), [wrong], large=True).program(1, anchor=wrong)
    assert prog.leaves[0].values.size > 2048 and prog.leaves[0].code
    report = check_directional(prog, np.random.default_rng(9))
    assert report not in (None, INCONCLUSIVE) and "along a random direction" in report
    assert "np.random.default_rng(" in report and len(report) < 4000


def test_second_order_check_catches_a_wrong_second_derivative():
    # the recorded derivative of detach(x) * x * x treats detach(x) as a constant
    wrong = T.OpSpec("wrong_gradgrad", lambda x: x.detach() * x * x, lambda a: a ** 3,
                     T.UNARY_SHAPES, (T.ANY,), 1, kind=T.ELEMENTWISE)
    prog = Generator(np.random.default_rng(3), [wrong], layouts=False).program(1, anchor=wrong)
    report = check_second_order(prog, np.random.default_rng(4))
    assert report not in (None, INCONCLUSIVE)
    assert "wrong second derivative" in report
    assert "detach()" in report and "gradgradcheck" in report


def test_forward_check_catches_a_wrong_value():
    wrong = T.OpSpec("wrong_value", lambda x: x * 1.001, lambda a: a * 1.0, T.UNARY_SHAPES,
                     (T.ANY,), 1, kind=T.ELEMENTWISE, zero_size=False)
    prog = Generator(np.random.default_rng(5), [wrong], zero_size=False).program(1, anchor=wrong)
    report = check_forward(prog)
    assert report is not None and "differs from NumPy" in report and "* 1.001" in report


def test_every_row_kept_out_names_its_reason():
    for spec in T.OPS:
        assert spec.property or spec.reason.strip(), spec.name
        assert spec.zero_size or spec.reason.strip() or spec.kind == T.FIXED, spec.name


def _refuses(x):
    raise RuntimeError("refused")


def test_an_error_from_lucid_is_reported_with_the_program():
    refusing = T.OpSpec("refusing", lambda x: _refuses(x), lambda a: a * 1.0, T.UNARY_SHAPES,
                        (T.ANY,), 1, kind=T.ELEMENTWISE)
    prog = Generator(np.random.default_rng(6), [refusing, *ROWS[:3]]).program(3, anchor=refusing)
    report = _checked(_first_order, prog, np.random.default_rng(7))
    assert report.startswith("lucid raised in a random program")
    assert "_refuses(" in report and "# raises RuntimeError: refused" in report


class _SquareWithoutTangentInBackward(SquareWithJvp):
    """x*x with a right backward made outside lucid's ops (its gradient carries no tangent: wrong
    under forward-over-reverse) and a right jvp."""

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return lucid.from_numpy(2.0 * g.detach().numpy() * x.detach().numpy())


class _SquareWithWrongJvp(SquareWithJvp):
    """x*x with a right backward and a wrong jvp (3 x t for 2 x t)."""

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return 3.0 * x * t


def _report_of(mode, fn, seed):
    wrong = T.OpSpec("wrong_mixed", fn, lambda a: a * a, T.UNARY_SHAPES, (T.ANY,), 1,
                     kind=T.ELEMENTWISE, zero_size=False)
    prog = Generator(np.random.default_rng(seed), [wrong], zero_size=False).program(2, anchor=wrong)
    return check_mixed_modes(prog, np.random.default_rng(seed + 1), mode)


def test_mixed_mode_checks_catch_a_gradient_without_tangent_and_a_wrong_jvp():
    report = _report_of(FORWARD_OVER_REVERSE,
                        lambda x: _SquareWithoutTangentInBackward.apply(x), 11)
    assert report not in (None, INCONCLUSIVE), report
    assert report.startswith("wrong forward-over-reverse derivative") and \
        "tangent of the gradient differs" in report
    code = report.split("\n", 1)[1]
    assert "with fwAD.dual_level():" in code and "fwAD.make_dual(" in code
    exec(compile(code, "<report>", "exec"),
         {"_SquareWithoutTangentInBackward": _SquareWithoutTangentInBackward})
    report = _report_of(REVERSE_OVER_FORWARD, lambda x: _SquareWithWrongJvp.apply(x), 12)
    assert report not in (None, INCONCLUSIVE), report
    assert "tangent differs from central finite differences" in report
    exec(compile(report.split("\n", 1)[1], "<report>", "exec"),
         {"_SquareWithWrongJvp": _SquareWithWrongJvp})


@pytest.mark.parametrize("saved", [None, *SAVED_HOOKS])
def test_printed_programs_with_extras_run_and_give_the_same_values(saved):
    for k in range(15):
        rng = np.random.default_rng([SEED, k, 98])
        prog = Generator(rng, ROWS).program(5, anchor=ROWS[(11 * k) % len(ROWS)])
        names = frozenset(step.name for step in prog.steps)
        prog.extras = Extras(frozenset(list(names)[::2]), frozenset(list(names)[1::2]), saved)
        code = render(prog)
        assert "checkpoint(lambda " in code or len(names) < 2
        scope = _exec(code)
        env = run_lucid(prog)
        for name, t in env.items():
            np.testing.assert_allclose(scope[name].detach().numpy(), t.detach().numpy(),
                                       rtol=1e-15, atol=0, err_msg=code)
