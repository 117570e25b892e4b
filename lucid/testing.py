"""lucid.testing.opcheck: validate a custom op (a Function's apply or a native op) in one call.

    report = lucid.testing.opcheck(MyOp.apply, [(x,), (x2, 2.0)])
    print(report)

Each sample is a tuple of arguments (tensors and other values). The float tensors that require
grad are the differentiated inputs (all float tensors when none does); each check makes its own
fresh copies of them, so the samples are never modified. Every check runs on every sample; the
report lists each check as passed, skipped (with the reason) or failed, and OpCheckError names
the first failure and its sample.
"""
import gc
import threading
import warnings
import weakref

import numpy as np

from . import _core
from ._grad_mode import no_grad
from .autograd import forward_ad as fwAD
from .autograd.gradcheck import gradcheck, gradgradcheck, GradcheckError

__all__ = ["opcheck", "OpCheckError", "OpCheckReport", "CheckResult", "CHECKS"]

# The names of the checks opcheck runs; its report lists them in this order.
CHECKS = ("inputs_not_modified", "gradcheck", "gradgradcheck", "forward_ad", "vmap",
          "float32_matches_float64",
          "non_contiguous_inputs", "zero_dim_inputs", "no_graph_under_no_grad",
          "inplace_change_of_saved_input", "freed_after_backward", "thread_safety")

FLOAT32_RTOL, FLOAT32_ATOL = 2e-4, 2e-5       # float32 against float64, relative to the scale
LAYOUT_RTOL, LAYOUT_ATOL = 1e-9, 1e-12         # same float64 values, another memory layout
VMAP_SCALES = (1.0, 0.75, 0.5)                 # the vmap check's batch: the sample's floats scaled


class OpCheckError(AssertionError):
    """A check of opcheck failed; .report holds every result, .check and .sample the first."""

    def __init__(self, message, report, check, sample):
        super().__init__(message)
        self.report, self.check, self.sample = report, check, sample


class CheckResult:
    """One check on one sample: status 'passed', 'skipped' or 'failed', with a detail text."""

    def __init__(self, check, sample, status, detail=""):
        self.check, self.sample, self.status, self.detail = check, sample, status, detail

    def __repr__(self):
        return f"CheckResult({self.check!r}, sample={self.sample}, {self.status!r})"


class OpCheckReport:
    """Every check's result per sample, and a summary status per check."""

    def __init__(self, results):
        self.results = results

    def status(self, check):
        """'failed' if any sample failed, else 'passed' if any passed, else 'skipped'."""
        states = {r.status for r in self.results if r.check == check}
        for state in ("failed", "passed", "skipped"):
            if state in states:
                return state
        raise KeyError(check)

    def failed(self):
        """The results whose status is 'failed'."""
        return [r for r in self.results if r.status == "failed"]

    @property
    def ok(self):
        """True when no check failed."""
        return not self.failed()

    def __str__(self):
        lines = []
        for check in CHECKS:
            state = self.status(check)
            notes = [r for r in self.results if r.check == check and r.status == state]
            reason = f": {notes[0].detail.splitlines()[0]}" if state != "passed" and notes else ""
            lines.append(f"{check:32s} {state}{reason}")
        return "\n".join(lines)

    __repr__ = __str__


class _Skip(Exception):
    """The check does not apply to this op or sample (the message says why)."""


class _Fail(Exception):
    """The check found a fault (the message says which)."""


# -- the entry point -----------------------------------------------------------------------------

def opcheck(fn, sample_inputs, *, check_forward_ad=None, atol=1e-5, rtol=1e-3):
    """Run every check of CHECKS on every sample; raise OpCheckError on the first failure.

    check_forward_ad: None tries forward mode and reports 'not supported' when the op has no
    jvp; True requires it; False skips it. atol/rtol are gradcheck's tolerances (float64).
    """
    if not callable(fn):
        raise TypeError(f"opcheck: fn must be callable, not {type(fn).__name__}")
    if isinstance(sample_inputs, (str, bytes)) or not hasattr(sample_inputs, "__iter__"):
        raise TypeError(f"opcheck: sample_inputs must be a sequence of argument tuples, not "
                        f"{type(sample_inputs).__name__}")
    samples = [tuple(s) if isinstance(s, (tuple, list)) else (s,) for s in sample_inputs]
    if not samples:
        raise ValueError("opcheck: sample_inputs is empty; give at least one tuple of arguments")
    op = _Op(fn, atol, rtol, check_forward_ad)
    results = []
    for index, sample in enumerate(samples):
        if not _differentiable_positions(sample):
            raise ValueError(f"opcheck: sample {index} holds no float tensor to differentiate")
        for check in CHECKS:
            results.append(_run_check(op, check, index, sample))
    report = OpCheckReport(results)
    failed = report.failed()
    if failed:
        first = failed[0]
        raise OpCheckError(f"opcheck: check {first.check!r} failed for sample {first.sample} "
                           f"({_describe(samples[first.sample])}): {first.detail}\n\n{report}",
                           report, first.check, first.sample)
    return report


def _run_check(op, check, index, sample):
    try:
        detail = getattr(op, check)(sample) or ""
        return CheckResult(check, index, "passed", detail)
    except _Skip as e:
        return CheckResult(check, index, "skipped", str(e))
    except _Fail as e:
        return CheckResult(check, index, "failed", str(e))
    except Exception as e:
        return CheckResult(check, index, "failed", f"raised {type(e).__name__}: {e}")


# -- inputs and runs -----------------------------------------------------------------------------

def _is_float_tensor(a):
    return isinstance(a, _core.Tensor) and a.dtype in (_core.float32, _core.float64)


def _differentiable_positions(sample):
    floats = [i for i, a in enumerate(sample) if _is_float_tensor(a)]
    wanted = [i for i in floats if sample[i].requires_grad]
    return wanted or floats


def _fresh(sample, dtype=np.float64, layout=None, requires_grad=True):
    """New leaves holding the sample's values: float tensors cast to dtype (the differentiated
    ones requiring grad), laid out by layout(array) -> array when given; others passed as is."""
    wanted = _differentiable_positions(sample)
    args = []
    for i, a in enumerate(sample):
        if _is_float_tensor(a):
            array = np.array(a.detach().numpy(), dtype=dtype)
            t = _core.from_numpy(layout(array) if layout is not None else array)
            if requires_grad and i in wanted:
                t.requires_grad_()
            args.append(t)
        elif isinstance(a, _core.Tensor):
            args.append(_core.from_numpy(np.array(a.detach().numpy())))
        else:
            args.append(a)
    return args, [args[i] for i in wanted]


def _tensor_outputs(result):
    items = result if isinstance(result, (tuple, list)) else (result,)
    return [o for o in items if isinstance(o, _core.Tensor)]


def _batched_outputs(result):
    """The tensors among result's items under vmap (BatchedTensors or tensors), as a tuple."""
    from ._batching.transforms import tensor_or_batched
    items = result if isinstance(result, (tuple, list)) else (result,)
    return tuple(o for o in items if tensor_or_batched(o))


def _cotangents(outputs):
    """A fixed random gradient per output (the same values whatever the output's dtype)."""
    rng = np.random.default_rng(1234)
    return [_core.from_numpy(rng.standard_normal(o.shape).astype(o.dtype)) for o in outputs]


def _backward(outputs, inputs):
    """Gradients of sum(output * cotangent) w.r.t. inputs, as arrays (None where unused)."""
    roots = [o for o in outputs if o.requires_grad]
    if not roots:
        return [None] * len(inputs)
    grads = _core.grad(tuple(roots), tuple(inputs), tuple(_cotangents(roots)),
                       allow_unused=True)
    return [None if g is None else np.array(g.detach().numpy()) for g in grads]


def _values_and_grads(fn, args, inputs):
    outputs = _tensor_outputs(fn(*args))
    values = [np.array(o.detach().numpy()) for o in outputs]
    return values, _backward(outputs, inputs)


def _mismatch(got, expected, rtol, atol, what):
    """A text naming the first array of got that differs from expected, or None."""
    for k, (g, e) in enumerate(zip(got, expected)):
        if (g is None) != (e is None):
            return f"{what} {k}: {'None' if g is None else 'a tensor'} where the reference has " \
                   f"{'None' if e is None else 'a tensor'}"
        if g is None:
            continue
        if g.shape != e.shape:
            return f"{what} {k} has shape {g.shape}, expected {e.shape}"
        scale = max(1.0, float(np.max(np.abs(e)))) if e.size else 1.0
        if not np.allclose(g, e, rtol=rtol, atol=atol * scale, equal_nan=True):
            worst = np.unravel_index(np.argmax(np.abs(g - e)), g.shape)
            return f"{what} {k} differs: at index {tuple(map(int, worst))} got " \
                   f"{g[worst]!r}, expected {e[worst]!r}"
    if len(got) != len(expected):
        return f"{len(got)} {what}s, expected {len(expected)}"
    return None


def _describe(sample):
    parts = []
    for a in sample:
        if isinstance(a, _core.Tensor):
            parts.append(f"Tensor(shape={tuple(a.shape)}, dtype={a.dtype})")
        else:
            parts.append(repr(a))
    return ", ".join(parts)


def _is_vmap_unsupported(error):
    """Is error a Function's refusal of vmap (neither a vmap staticmethod nor
    generate_vmap_rule)?"""
    text = str(error)
    return "does not have vmap support" in text or "must override the setup_context" in text


def _op_name(fn):
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, type):
        return f"{owner.__name__}.{getattr(fn, '__name__', 'apply')}"
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def _is_jvp_missing(error):
    text = str(error)
    return "does not implement jvp" in text or "does not implement forward-mode" in text


# -- the checks ----------------------------------------------------------------------------------

class _Op:
    """The op under test; each method is one check of one sample (returns a detail or raises
    _Skip/_Fail)."""

    def __init__(self, fn, atol, rtol, check_forward_ad):
        self.fn, self.atol, self.rtol, self.check_forward_ad = fn, atol, rtol, check_forward_ad

    def inputs_not_modified(self, sample):
        """The op leaves its tensor arguments as they were (unless it returns one, marked dirty):
        first, because the derivative checks assume inputs that stay put."""
        args, _ = _fresh(sample)
        before = [(i, a._version, np.array(a.detach().numpy(), copy=True))
                  for i, a in enumerate(args) if isinstance(a, _core.Tensor)]
        result = self.fn(*args)
        returned = result if isinstance(result, (tuple, list)) else (result,)
        for i, version, values in before:
            a = args[i]
            if any(o is a for o in returned):
                continue                                 # an in-place op (ctx.mark_dirty)
            if a._version != version:
                how = f"its version went from {version} to {a._version}"
            elif not np.array_equal(a.detach().numpy(), values, equal_nan=values.dtype.kind == "f"):
                how = "its values changed, with no version bump: written through .numpy()?"
            else:
                continue
            raise _Fail(f"the op modified argument {i} in place ({how}) and did not return it; "
                        "an op must not change its inputs (or must return them marked with "
                        "ctx.mark_dirty). The other checks differentiate inputs the op keeps "
                        "changing, so their failures may follow from this one")
        return f"{len(before)} tensor argument(s) unchanged"

    def gradcheck(self, sample):
        args, _ = _fresh(sample)
        try:
            gradcheck(self.fn, args, atol=self.atol, rtol=self.rtol)
        except GradcheckError as e:
            raise _Fail(f"backward disagrees with finite differences: {e}") from None

    def gradgradcheck(self, sample):
        args, _ = _fresh(sample)
        try:
            gradgradcheck(self.fn, args, atol=self.atol, rtol=self.rtol)
        except GradcheckError as e:
            raise _Fail(f"double backward disagrees with finite differences: {e}") from None
        except RuntimeError as e:
            if "once_differentiable" in str(e):
                raise _Skip(f"not supported: the backward is once_differentiable ({e})") from None
            raise

    def forward_ad(self, sample):
        if self.check_forward_ad is False:
            raise _Skip("check_forward_ad=False")
        required = self.check_forward_ad is True
        args, inputs = _fresh(sample)
        try:
            self._require_tangents(args, inputs)
            gradcheck(self.fn, args, atol=self.atol, rtol=self.rtol, check_forward_ad=True,
                      check_backward_ad=False)
        except GradcheckError as e:
            raise _Fail(f"forward-mode derivatives disagree with finite differences: {e}") \
                from None
        except (RuntimeError, NotImplementedError) as e:
            if _is_jvp_missing(e) and not required:
                raise _Skip(f"not supported: {e}") from None
            if _is_jvp_missing(e):
                raise _Fail(f"check_forward_ad=True but the op has no forward mode: {e}") \
                    from None
            raise

    def _require_tangents(self, args, inputs):
        """An op without a forward-mode rule may drop the tangents silently: call that
        'does not implement forward-mode AD' rather than a wrong derivative."""
        with fwAD.dual_level():
            duals = [fwAD.make_dual(a, _core.from_numpy(np.ones(a.shape, a.dtype)))
                     if any(a is x for x in inputs) else a for a in args]
            outputs = _tensor_outputs(self.fn(*duals))
            if outputs and all(fwAD.unpack_dual(o).tangent is None for o in outputs):
                raise RuntimeError("the op does not implement forward-mode AD: its outputs "
                                   "carry no tangent when its inputs do")

    def vmap(self, sample):
        """lucid.func.vmap of the op over a batch of 3 (every tensor argument stacked at dim 0:
        the sample's float tensors scaled by VMAP_SCALES, the others repeated) equals the loop
        of the op over the batch; 'not supported' for a Function that does not say how it
        batches (no vmap staticmethod, no generate_vmap_rule)."""
        from .func import vmap
        elements = [_fresh(sample, layout=lambda a, s=s: np.asarray(a * s, a.dtype),
                           requires_grad=False)[0]
                    for s in VMAP_SCALES]
        stacked = [_core.stack([e[i] for e in elements], 0) if isinstance(a, _core.Tensor)
                   else a for i, a in enumerate(elements[0])]
        in_dims = tuple(0 if isinstance(a, _core.Tensor) else None for a in stacked)
        expected = [_tensor_outputs(self.fn(*e)) for e in elements]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = vmap(lambda *a: _batched_outputs(self.fn(*a)), in_dims)(*stacked)
            except Exception as e:                       # noqa: BLE001  (reported)
                if isinstance(e, RuntimeError) and _is_vmap_unsupported(e):
                    raise _Skip(f"not supported: {e}") from None
                hint = (" (an op that takes only Tensors needs a batching rule: "
                        "lucid.func.register_vmap_rule)" if isinstance(e, TypeError) else "")
                raise _Fail(f"{_op_name(self.fn)} raised under vmap: {type(e).__name__}: "
                            f"{e}{hint}") from None
        got = [np.array(o.detach().numpy()) for o in result]
        want = [np.stack([np.array(outs[k].detach().numpy()) for outs in expected])
                for k in range(len(expected[0]))]
        problem = _mismatch(got, want, LAYOUT_RTOL, LAYOUT_ATOL, "vmapped output")
        if problem:
            raise _Fail(f"{_op_name(self.fn)} under vmap: {problem} (against the loop over the "
                        f"batch of {len(VMAP_SCALES)})")
        fallbacks = sorted({str(w.message).split(";")[0] for w in caught
                            if "has no batching rule" in str(w.message)})
        return "; ".join(fallbacks) if fallbacks else f"batch of {len(VMAP_SCALES)}"

    def float32_matches_float64(self, sample):
        args64, inputs64 = _fresh(sample, np.float64)
        args32, inputs32 = _fresh(sample, np.float32)
        values64, grads64 = _values_and_grads(self.fn, args64, inputs64)
        outputs32 = _tensor_outputs(self.fn(*args32))
        wrong = [str(o.dtype) for o in outputs32 if o.dtype == _core.float64]
        if wrong:
            raise _Fail(f"float32 inputs gave {', '.join(wrong)} outputs (expected float32)")
        values32 = [np.array(o.detach().numpy(), dtype=np.float64) for o in outputs32]
        grads32 = [None if g is None else g.astype(np.float64)
                   for g in _backward(outputs32, inputs32)]
        problem = (_mismatch(values32, values64, FLOAT32_RTOL, FLOAT32_ATOL, "float32 output")
                   or _mismatch(grads32, grads64, FLOAT32_RTOL, FLOAT32_ATOL, "float32 gradient"))
        if problem:
            raise _Fail(problem + " (against the float64 result)")

    def non_contiguous_inputs(self, sample):
        args, inputs = _fresh(sample)
        reference = _values_and_grads(self.fn, args, inputs)
        if not any(x.numel() >= 2 for x in inputs):
            raise _Skip("no differentiated input has two or more elements")
        done = []
        for label, layout in (("strided", _strided_copy), ("transposed", _transposed_copy)):
            if label == "transposed" and not any(x.ndim >= 2 for x in inputs):
                continue
            args2, inputs2 = _fresh(sample, layout=layout)
            values, grads = _values_and_grads(self.fn, args2, inputs2)
            problem = (_mismatch(values, reference[0], LAYOUT_RTOL, LAYOUT_ATOL, "output")
                       or _mismatch(grads, reference[1], LAYOUT_RTOL, LAYOUT_ATOL, "gradient"))
            if problem:
                raise _Fail(f"{label} (non-contiguous) inputs: {problem} (against contiguous "
                            "inputs with the same values)")
            done.append(label)
        return "layouts: " + ", ".join(done)

    def zero_dim_inputs(self, sample):
        args, inputs = _fresh(sample)
        if all(x.ndim == 0 for x in inputs):
            raise _Skip("the sample's inputs are 0-d already (the other checks cover them)")
        outputs = _tensor_outputs(self.fn(*args))
        tensors = [a for a in args if isinstance(a, _core.Tensor)]
        shapes = {tuple(o.shape) for o in outputs}
        if len(shapes) != 1 or any(tuple(t.shape) not in (shapes | {()}) for t in tensors) \
                or not outputs or outputs[0].numel() == 0:
            raise _Skip("the outputs' shape is not the inputs' shape (not elementwise), so the "
                        "sample does not imply that 0-d inputs are valid")
        expected = [np.array(o.detach().numpy()).reshape(-1)[0] for o in outputs]
        first = lambda a: np.array(a.reshape(-1)[0])        # noqa: E731  (0-d: element 0)
        args0, inputs0 = _fresh(sample, layout=first)
        values = [np.array(o.detach().numpy()) for o in _tensor_outputs(self.fn(*args0))]
        if any(v.shape != () for v in values):
            raise _Fail(f"0-d inputs gave outputs of shapes {[v.shape for v in values]}, "
                        "expected 0-d")
        problem = _mismatch(values, [np.array(e) for e in expected], LAYOUT_RTOL, LAYOUT_ATOL,
                            "0-d output")
        if problem:
            raise _Fail(problem + " (against element 0 of the full-shape output)")
        try:
            gradcheck(self.fn, args0, atol=self.atol, rtol=self.rtol)
        except GradcheckError as e:
            raise _Fail(f"gradcheck with 0-d inputs: {e}") from None

    def no_graph_under_no_grad(self, sample):
        args, _ = _fresh(sample)
        with no_grad():
            outputs = _tensor_outputs(self.fn(*args))
        for k, o in enumerate(outputs):
            if o.grad_fn is not None or o.requires_grad:
                node = o.grad_fn.name() if o.grad_fn is not None else None
                raise _Fail(f"output {k} was recorded under no_grad (grad_fn={node}, "
                            f"requires_grad={o.requires_grad})")

    def inplace_change_of_saved_input(self, sample):
        args, inputs = _fresh(sample)
        reference = _values_and_grads(self.fn, args, inputs)[1]
        detected, unsaved = [], []
        for position, i in enumerate(_differentiable_positions(sample)):
            leaves, leaf_inputs = _fresh(sample)
            changed = list(leaves)
            changed[i] = leaves[i].clone()               # a non-leaf: may change in place
            outputs = _tensor_outputs(self.fn(*changed))
            with no_grad():
                changed[i].add_(0.5)
            try:
                grads = _backward(outputs, leaf_inputs)
            except RuntimeError as e:
                text = str(e)
                if "in-place" in text or "in place" in text:
                    detected.append(i)
                    continue
                raise
            if _mismatch(grads, reference, LAYOUT_RTOL, LAYOUT_ATOL, "gradient") is None:
                unsaved.append(i)                        # backward does not read its values
                continue
            raise _Fail(f"argument {i} was changed in place between forward and backward, and "
                        "backward silently used the new values instead of raising a "
                        "RuntimeError about the in-place change (save it with "
                        "save_for_backward / save_tensor)")
        if not detected:
            raise _Skip("backward reads none of the inputs' values (changing them in place "
                        "does not change the gradients)")
        return f"detected for arguments {detected}"

    def freed_after_backward(self, sample):
        was_enabled = gc.isenabled()
        gc.disable()                                     # only reference counting frees now
        try:
            alive = [r for r in self._graph_refs_after_backward(sample) if r[1]() is not None]
        finally:
            if was_enabled:
                gc.enable()
        if alive:
            raise _Fail("still alive after backward without retain_graph and with every "
                        f"reference dropped (a reference cycle?): {', '.join(n for n, _ in alive)}")

    def _graph_refs_after_backward(self, sample):
        args, inputs = _fresh(sample)
        outputs = [o for o in _tensor_outputs(self.fn(*args))
                   if not any(o is a for a in args)]
        refs = [(f"output {k}", weakref.ref(o)) for k, o in enumerate(outputs)]
        refs += [(f"node {o.grad_fn.name()} of output {k}", weakref.ref(o.grad_fn))
                 for k, o in enumerate(outputs) if o.grad_fn is not None]
        _backward(outputs, inputs)
        return refs

    def thread_safety(self, sample):
        flipped = lambda a: np.ascontiguousarray(np.flip(a))     # noqa: E731
        variants = [_fresh(sample), _fresh(sample, layout=flipped)]
        expected = [_values_and_grads(self.fn, *v) for v in variants]
        for round_ in range(2):
            order = [0, 1] if round_ == 0 else [1, 0]
            got = _two_threads(self.fn, [_fresh(sample, layout=None if k == 0 else flipped)
                                         for k in order])
            for slot, k in enumerate(order):
                if isinstance(got[slot], BaseException):
                    e = got[slot]
                    raise _Fail(f"raised in a thread: {type(e).__name__}: {e}")
                problem = (_mismatch(got[slot][0], expected[k][0], 0, 0, "output")
                           or _mismatch(got[slot][1], expected[k][1], 0, 0, "gradient"))
                if problem:
                    raise _Fail(f"two threads running independent graphs got results that "
                                f"differ from a single thread: {problem}")


def _strided_copy(array):
    """The same values, every other element of a larger buffer (strides of 2 on the last axis)."""
    if array.ndim == 0:
        return array
    wide = np.zeros(array.shape[:-1] + (2 * array.shape[-1],), dtype=array.dtype)
    wide[..., ::2] = array
    return wide[..., ::2]


def _transposed_copy(array):
    """The same values stored transposed (Fortran order on the last two axes)."""
    if array.ndim < 2:
        return array
    return np.ascontiguousarray(np.swapaxes(array, -1, -2)).swapaxes(-1, -2)


def _two_threads(fn, variants):
    """Both threads build their graph, wait for each other, then run backward at once."""
    barrier = threading.Barrier(len(variants), timeout=60)
    results = [None] * len(variants)

    def work(slot, args, inputs):
        try:
            outputs = _tensor_outputs(fn(*args))
            values = [np.array(o.detach().numpy()) for o in outputs]
            barrier.wait()                               # both graphs exist before either runs
            results[slot] = (values, _backward(outputs, inputs))
        except BaseException as e:                       # noqa: BLE001  (reported by the check)
            barrier.abort()
            results[slot] = e

    threads = [threading.Thread(target=work, args=(slot, *v)) for slot, v in enumerate(variants)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results
