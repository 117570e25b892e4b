"""The check of one random complex program (tests/reliability/random_programs.py over the rows of
tests/support/op_rows_complex_values.py): None or a report.

* forward: every step's lucid value against NumPy, in complex128/float64 to 1e-9 and in
  complex64/float32 (the leaves rounded so) to ~2e-4, each step's dtype as NumPy's;
* derivatives: lucid.autograd.gradcheck of the program as a function of its leaves, with forward
  mode, and (second_order) gradgradcheck with forward-over-reverse. Both take each complex
  input and output apart into its real and imaginary parts, so every partial derivative is
  compared with central finite differences: a missing conjugate or a factor of 2 anywhere in
  the program, PyTorch's convention broken by one node (Note [Complex gradients]), fails.
A failing program is shrunk to its smallest failing prefix (one output) and printed as a script.
"""
import numpy as np

import lucid
from lucid.autograd import GradcheckError, gradcheck, gradgradcheck

from .random_programs import run_lucid, run_numpy, run_steps, render


def _dtype_name(np_dtype, values):
    return np.dtype(np_dtype if not np.iscomplexobj(values) else
                    np.complex64 if np_dtype == np.float32 else np.complex128).name


def _forward_failure(prog):
    """A report of the first step whose value or dtype differs from NumPy's, or None."""
    ref = run_numpy(prog)
    rounded = [leaf.values.astype(np.complex64 if np.iscomplexobj(leaf.values) else np.float32)
               for leaf in prog.leaves]
    ref32 = run_numpy(prog, rounded)
    for np_dtype, want_env, rtol in ((np.float64, ref, 1e-9), (np.float32, ref32, 2e-4)):
        env = run_lucid(prog, np_dtype, requires_grad=False)
        for step in prog.steps:
            want, value = want_env[step.name], env[step.name]
            got = value.detach().numpy()
            scale = 1.0 + (np.max(np.abs(want)) if want.size else 0.0)
            kind = _dtype_name(np_dtype, want)
            if str(value.dtype) != kind or got.shape != want.shape or \
                    not np.all(np.abs(got - want) <= rtol * scale + rtol * np.abs(want)):
                return (f"forward value of {step.name} = {step.code} differs from NumPy "
                        f"({kind}):\n" + render(prog.upto(step.name), np_dtype, [
                            f"print({step.name})",
                            f"# lucid gives {value.dtype} {got.tolist()}",
                            f"# NumPy gives {kind} {want.tolist()}"]))
    return None


def program_function(prog):
    """fn(*leaves): the program's outputs from contiguous leaf tensors, in order."""
    names = [leaf.name for leaf in prog.leaves]

    def fn(*leaves):
        env = run_steps(prog, dict(zip(names, leaves)))
        return tuple(env[o] for o in prog.outputs)
    return fn


def _derivative_failure(prog, second_order, forward_ad):
    """(the check that failed, its GradcheckError message) for the program's derivatives, or
    None."""
    leaves = [lucid.tensor(leaf.values.copy(), requires_grad=True) for leaf in prog.leaves]
    check = "gradcheck"
    try:
        gradcheck(program_function(prog), leaves, check_forward_ad=forward_ad)
        if second_order:
            check = "gradgradcheck"
            gradgradcheck(program_function(prog), leaves, check_fwd_over_rev=forward_ad)
    except GradcheckError as e:
        return check, str(e)
    return None


def check_complex_program(prog, second_order=False, forward_ad=True):
    """Forward values, then gradcheck (and gradgradcheck), with forward mode unless forward_ad
    is False: None or a report of the smallest failing prefix."""
    failure = _forward_failure(prog)
    if failure is not None:
        return failure
    failure = _derivative_failure(prog, second_order, forward_ad)
    if failure is None:
        return None
    for step in prog.steps:
        sub = prog.upto(step.name)
        sub_failure = _derivative_failure(sub, second_order, forward_ad)
        if sub_failure is not None:
            prog, failure = sub, sub_failure
            break
    check, what = failure
    flag = "check_forward_ad" if check == "gradcheck" else "check_fwd_over_rev"
    return (f"wrong derivative in a random complex program (seed {prog.seed}): {check} "
            "fails\n" + "".join(f"# {line}\n" for line in what.splitlines()) +
            render(prog, np.float64, [
                "from lucid.autograd import gradcheck, gradgradcheck",
                f"leaves = [{', '.join(leaf.name for leaf in prog.leaves)}]",
                f"def fn({', '.join(leaf.name for leaf in prog.leaves)}):",
                *[f"    {step.name} = {step.code}" for step in prog.steps],
                f"    return ({', '.join(prog.outputs)},)",
                f"print({check}(fn, [t.detach().contiguous().requires_grad_() for t in leaves],"
                f" raise_exception=False, {flag}={forward_ad}))"]))
