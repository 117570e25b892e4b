"""The complex rows (tests/support/op_rows_complex_values.py), each shape case: values against
NumPy in complex128 and complex64 (dtypes kept: a complex64 input gives what NumPy gives),
gradcheck with forward mode and gradgradcheck with forward-over-reverse, both taking every
complex input and output apart into real and imaginary parts (both Wirtinger derivatives)."""
import numpy as np
import pytest

import lucid
from lucid.autograd import gradcheck, gradgradcheck
from support.op_rows_complex_values import ROWS
from support.op_spec import sample

CASES = [pytest.param(spec, shapes, id=f"{spec.name}-{k}") for spec in ROWS
         for k, shapes in enumerate(spec.shapes)]


def inputs(spec, shapes, seed=0):
    """Arrays of the row's domains (complex128 or float64), one per input."""
    rng = np.random.default_rng(seed)
    return [np.asarray(sample(rng, s, d)) for s, d in zip(shapes, spec.domains)]


def single(dtype):
    return np.complex64 if np.dtype(dtype).kind == "c" else np.float32


@pytest.mark.parametrize("spec, shapes", CASES)
def test_a_complex_row_matches_numpy_in_both_precisions(spec, shapes):
    arrays = inputs(spec, shapes)
    for cast, tol in ((lambda a: a, 1e-12), (lambda a: a.astype(single(a.dtype)), 2e-5)):
        args = [cast(a) for a in arrays]
        got = spec.fn(*[lucid.tensor(a) for a in args])
        want = np.asarray(spec.ref(*args))
        assert got.dtype == want.dtype, (spec.name, got.dtype, want.dtype)
        np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("spec, shapes", CASES)
def test_a_complex_row_passes_gradcheck_and_gradgradcheck(spec, shapes):
    leaves = [lucid.tensor(a, requires_grad=True) for a in inputs(spec, shapes, seed=1)]
    assert gradcheck(spec.fn, leaves, check_forward_ad=spec.forward_ad)
    if spec.gradgrad:
        assert gradgradcheck(spec.fn, leaves, check_fwd_over_rev=spec.forward_ad)


def test_every_complex_row_has_a_complex_input_or_output():
    """A row of this table that never meets a complex value would belong to the real table."""
    for spec, shapes in ((c.values[0], c.values[1]) for c in CASES):
        arrays = inputs(spec, shapes)
        out = np.asarray(spec.ref(*arrays))
        assert out.dtype.kind == "c" or any(a.dtype.kind == "c" for a in arrays), spec.name
