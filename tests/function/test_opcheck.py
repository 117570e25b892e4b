"""lucid.testing.opcheck: correct ops pass every check; each broken op (one planted bug each)
fails exactly the check that looks for its bug."""
import re

import numpy as np
import pytest

import lucid
from lucid.autograd import Function
from lucid.testing import CHECKS, OpCheckError, opcheck
from support.paths import ROOT
from support.shared_functions import Square as SquareNoJvp
from support.shared_functions import SquareWithJvp as Square     # y = x*x with a jvp: every check applies


def doc_namespace(page, defines):
    """Run the ```python block of docs/<page> that defines `defines`; return its namespace."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    for code in re.findall(r"^```python\n(.*?)^```", text, re.S | re.M):
        if f"class {defines}(" in code:
            namespace = {"__name__": "__doc_example__"}
            exec(compile(code, f"<{page}>", "exec"), namespace)
            return namespace
    raise AssertionError(f"no block of docs/{page} defines {defines}")


def f64(*shape, seed=0):
    return lucid.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=lucid.float64)


def statuses(report):
    return {check: report.status(check) for check in CHECKS}


# -- correct ops ---------------------------------------------------------------------------------

def test_softplus_function_of_the_docs_passes():
    Softplus = doc_namespace("custom_functions.md", "Softplus")["Softplus"]
    report = opcheck(Softplus.apply, [(f64(3, 4), 2.0), (f64(5, seed=1), 0.5), (f64(),  1.0)])
    print(report)
    got = statuses(report)
    assert got.pop("forward_ad") == "skipped"                  # it has no jvp
    assert got.pop("vmap") == "skipped"                        # nor a way to batch
    assert set(got.values()) == {"passed"}, got
    forward = [r for r in report.results if r.check == "forward_ad"]
    assert all("does not implement jvp" in r.detail for r in forward)
    batched = [r for r in report.results if r.check == "vmap"]
    assert all(r.detail.startswith("not supported") for r in batched)


def test_split_halves_of_the_docs_passes():
    SplitHalves = doc_namespace("custom_functions.md", "SplitHalves")["SplitHalves"]
    report = opcheck(SplitHalves.apply, [(f64(6),), (f64(4, 3, seed=2),)])
    got = statuses(report)
    assert got.pop("forward_ad") == "skipped"
    assert got.pop("vmap") == "skipped"
    # the outputs are halves: no 0-d inputs implied; the backward only concatenates gradients
    assert got.pop("zero_dim_inputs") == "skipped"
    assert got.pop("inplace_change_of_saved_input") == "skipped"
    assert set(got.values()) == {"passed"}, got


def test_native_softplus_example_passes():
    try:
        from lucid_softplus import softplus
    except ImportError as e:        # not installed, or built against another lucid
        pytest.skip(f"examples/native_op is not built for this lucid ({e}); build it with "
                    "pip install --no-build-isolation examples/native_op")
    with pytest.raises(OpCheckError, match="softplus raised under vmap: TypeError") as info:
        opcheck(softplus, [(f64(3, 4) * 5,), (f64(7, seed=3),)])
    print(info.value.report)
    got = statuses(info.value.report)
    assert got.pop("vmap") == "failed"             # a typed native op with no batching rule
    assert got.pop("forward_ad") == "passed"                   # the example has a native jvp
    assert set(got.values()) == {"passed"}, got


SAMPLES = [(f64(3, 4),), (f64(5, seed=1),)]


class VmapSquare(Function):
    """y = x*x in the setup_context style, with a jvp and generate_vmap_rule: every check
    applies."""
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x * x

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2.0 * g * x

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return 2.0 * x * t


def test_a_correct_op_with_jvp_and_a_vmap_rule_passes_every_check():
    report = opcheck(VmapSquare.apply, SAMPLES, check_forward_ad=True)
    assert statuses(report) == {check: "passed" for check in CHECKS}
    assert report.ok and "thread_safety" in str(report)
    got = statuses(opcheck(Square.apply, SAMPLES, check_forward_ad=True))
    assert got.pop("vmap") == "skipped"                  # Square says nothing of vmap
    assert set(got.values()) == {"passed"}, got


def test_samples_are_not_modified():
    x = f64(3, 4)
    before = x.numpy().copy()
    opcheck(Square.apply, [(x,)])
    assert np.array_equal(x.numpy(), before) and x.grad is None and not x.requires_grad


def test_forward_ad_required_but_missing_fails():
    NoJvp = SquareNoJvp                  # saves its input, has no jvp
    assert opcheck(NoJvp.apply, SAMPLES).status("forward_ad") == "skipped"
    with pytest.raises(OpCheckError, match="forward_ad") as info:
        opcheck(NoJvp.apply, SAMPLES, check_forward_ad=True)
    assert info.value.check == "forward_ad" and info.value.sample == 0
    assert opcheck(NoJvp.apply, SAMPLES, check_forward_ad=False).status("forward_ad") == "skipped"


# -- broken ops: one planted bug each ------------------------------------------------------------

class WrongBackward(Square):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3.0 * g * x                                     # should be 2


class WrongDoubleBackward(Square):
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2.0 * g * x.detach()                            # right value, no second derivative


class WrongJvp(Square):
    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return 3.0 * t * x


class WrongFloat32(Square):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        if x.dtype == lucid.float32:
            return x * x + 0.01                                # a different float32 kernel
        return x * x


class IgnoresStrides(Square):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        a = x.detach().numpy()
        memory_order = np.lib.stride_tricks.as_strided(a, shape=(a.size,), strides=(a.itemsize,))
        values = memory_order.reshape(a.shape)                 # wrong unless C-contiguous
        return lucid.from_numpy(np.asarray(values * values))


def records_under_no_grad(x):
    with lucid.enable_grad():
        return Square.apply(x)


class MissesInPlace(Square):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_forward(x)
        ctx.x = x                                              # kept without the version check
        return x * x

    @staticmethod
    def backward(ctx, g):
        return 2.0 * g * ctx.x


def leaks_its_output(x):
    y = Square.apply(x)
    if y.grad_fn is not None:
        y.grad_fn.metadata["output"] = y                       # y -> node -> metadata -> y
    return y


class NotThreadSafe(Square):
    scratch = None                                             # one per class, not per call

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        NotThreadSafe.scratch = x
        return x * x

    @staticmethod
    def backward(ctx, g):
        ctx.saved_tensors                                      # still checks in-place changes
        return 2.0 * g * NotThreadSafe.scratch


BROKEN = [
    (WrongBackward.apply, "gradcheck"),
    (WrongDoubleBackward.apply, "gradgradcheck"),
    (WrongJvp.apply, "forward_ad"),
    (WrongFloat32.apply, "float32_matches_float64"),
    (IgnoresStrides.apply, "non_contiguous_inputs"),
    (records_under_no_grad, "no_graph_under_no_grad"),
    (MissesInPlace.apply, "inplace_change_of_saved_input"),
    (leaks_its_output, "freed_after_backward"),
    (NotThreadSafe.apply, "thread_safety"),
]


@pytest.mark.parametrize("fn, check", BROKEN, ids=[check for _, check in BROKEN])
def test_each_planted_bug_fails_its_check(fn, check):
    with pytest.raises(OpCheckError) as info:
        opcheck(fn, SAMPLES, check_forward_ad=True)
    error = info.value
    failed = {check for check in CHECKS if error.report.status(check) == "failed"}
    if check == "gradcheck":
        # the 0-d check runs gradcheck too (gradgradcheck differentiates the backward as
        # written, so it agrees with itself)
        assert failed == {"gradcheck", "zero_dim_inputs"}, error.report
    else:
        assert failed == {check}, error.report
    assert error.check == check and error.sample == 0
    assert f"check {check!r} failed for sample 0" in str(error)
    assert "Tensor(shape=(3, 4), dtype=float64)" in str(error)


def test_failure_details_explain_the_bug():
    cases = {MissesInPlace.apply: "silently used the new values",
             leaks_its_output: "output 0",
             records_under_no_grad: "recorded under no_grad",
             IgnoresStrides.apply: "non-contiguous"}
    for fn, phrase in cases.items():
        with pytest.raises(OpCheckError, match=phrase):
            opcheck(fn, SAMPLES[:1])


def test_an_op_that_raises_fails_with_the_exception_named():
    def raises(x):
        raise KeyError("boom")

    with pytest.raises(OpCheckError, match="KeyError"):
        opcheck(raises, SAMPLES[:1])


def test_bad_sample_lists_are_rejected():
    with pytest.raises(ValueError, match="empty"):
        opcheck(Square.apply, [])
    with pytest.raises(ValueError, match="no float tensor"):
        opcheck(Square.apply, [(lucid.tensor([1, 2]),)])


# -- an op that changes its inputs ---------------------------------------------------------------
# Checked first: the derivative checks differentiate inputs that the op itself keeps changing,
# so their failures would only be a consequence; the report must say the input was modified.

class AddsToItsInput(Function):
    """The reproducer's op: y = 2x, and x += 1 in place (without mark_dirty)."""

    @staticmethod
    def forward(ctx, x):
        y = x * 2.0
        with lucid.no_grad():
            x.add_(1.0)
        return y

    @staticmethod
    def backward(ctx, g):
        return g * 2.0


def writes_through_numpy(x):
    """Changes x's memory behind the version counter."""
    x.detach().numpy()[...] *= 1.5
    return x * 2.0


def scatters_into_its_index(x, index):
    """Changes a non-float argument (an index tensor)."""
    with lucid.no_grad():
        index.add_(0)                 # bumps the version, values unchanged
    return x * 2.0


@pytest.mark.parametrize("dtype", [lucid.float32, lucid.float64])
@pytest.mark.parametrize("shape", [(), (3,), (2, 3)])
def test_an_op_that_changes_its_input_is_reported_as_such(dtype, shape):
    x = lucid.tensor(np.random.default_rng(0).standard_normal(shape), dtype=dtype)
    before = x.numpy().copy()
    with pytest.raises(OpCheckError) as info:
        opcheck(AddsToItsInput.apply, [(x,)])
    error = info.value
    first = str(error).splitlines()[0]
    assert error.check == "inputs_not_modified" and error.sample == 0
    assert "modified argument 0 in place" in first and "version" in first
    assert error.report.status("inputs_not_modified") == "failed"
    assert np.array_equal(x.numpy(), before) and x._version == 0    # the sample is untouched


def test_a_write_through_numpy_is_reported_without_a_version_bump():
    with pytest.raises(OpCheckError) as info:
        opcheck(writes_through_numpy, SAMPLES[:1])
    first = str(info.value).splitlines()[0]
    assert info.value.check == "inputs_not_modified"
    assert "modified argument 0 in place" in first and "values changed" in first


def test_a_changed_argument_that_is_not_differentiated_is_reported():
    index = lucid.tensor([0, 1, 2])
    with pytest.raises(OpCheckError) as info:
        opcheck(scatters_into_its_index, [(f64(3), index)])
    assert info.value.check == "inputs_not_modified"
    assert "modified argument 1 in place" in str(info.value).splitlines()[0]


def test_ops_that_leave_their_inputs_alone_pass_the_check():
    report = opcheck(Square.apply, SAMPLES, check_forward_ad=True)
    assert report.status("inputs_not_modified") == "passed"
    assert CHECKS[0] == "inputs_not_modified"
