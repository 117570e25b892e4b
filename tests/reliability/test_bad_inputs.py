"""Bad inputs never crash and always name the op.

The sweep (test_every_public_name_survives_bad_inputs) calls every public function and method with
None, a string, a ragged list, a float, an int, a huge int and a complex number in each positional
parameter (tests/reliability/bad_input_sweep.py says how); it runs only with
LUCID_BAD_INPUT_SWEEP=1 (CI's bad-input step). The other tests run in every suite: the table's
completeness, and one regression test per class found (each once crashed or leaked an internal
error).
"""
import json
import os
import re
import select
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

import lucid
from support.child_process import LUCID_ROOT, run_child
from support.paths import TESTS

from . import bad_input_sweep as sweep

CALL_TIMEOUT = 60                        # seconds one call may take before it counts as a hang


# -- the sweep's table ------------------------------------------------------------------------

def test_every_public_name_is_swept_or_excluded():
    """A new public name is swept automatically; the test fails when its valid call is not
    known (a required parameter with no filler) or an exclusion names nothing."""
    names = {q for q, _, _ in sweep.public_names()}
    unknown = []
    for qualname, obj, owner in sweep.public_names():
        if sweep.classify(qualname, obj, owner) is None:
            missing = sweep.missing_fillers(qualname, obj, owner)
            if missing:
                unknown.append(f"{qualname}: no filler for {missing}")
    assert not unknown, ("add these to bad_input_sweep.CALLS or FILLERS_BY_PARAM, or to EXCLUDED "
                         f"with a reason: {unknown}")
    stale = sorted(set(sweep.EXCLUDED) - names) + sorted(set(sweep.CALLS) - names)
    assert not stale, f"bad_input_sweep lists names that are not public: {stale}"
    assert all(reason.strip() for reason in sweep.EXCLUDED.values())


def test_the_sweep_covers_the_ops_and_methods():
    swept = {q for q, *_ in sweep.swept_names()}
    for q in ("lucid.clone", "lucid.gather", "lucid.scatter_add", "lucid.linalg.solve",
              "lucid.func.jvp", "lucid.autograd.grad", "Tensor.scatter_add", "Tensor.add_",
              "Tensor.expand_as", "lucid.autograd.forward_ad.make_dual"):
        assert q in swept, q
    assert len(swept) > 250
    assert len(sweep.cases()) > 5 * len(swept)


def test_the_verdict_rule():
    assert sweep.verdict("lucid.clone", 0, None) is None
    assert sweep.verdict("lucid.clone", 0, TypeError("clone: argument 'a' must be a Tensor")) \
        is None
    assert "does not name" in sweep.verdict("lucid.clone", 0, TypeError("Argument 'a' bad"))
    assert "outside the contract" in sweep.verdict("lucid.clone", 0, AttributeError("clone"))
    assert "valid call failed" in sweep.verdict("lucid.clone", None, TypeError("clone"))
    assert sweep.verdict("Tensor.add_", 0, TypeError("add: expected a Tensor")) is None
    # an op not implemented yet passes its valid call only with NotImplementedError naming it
    assert sweep.verdict("lucid.linalg.eig", None, NotImplementedError("linalg.eig: later")) is None
    assert "valid call failed" in sweep.verdict("lucid.linalg.eig", None, RuntimeError("eig"))
    assert "valid call failed" in sweep.verdict("lucid.clone", None, NotImplementedError("clone"))


# -- the sweep --------------------------------------------------------------------------------

class CaseServer:
    """A child interpreter that runs sweep cases sent over a pipe; restarted after a crash."""

    def __init__(self):
        self.proc = None
        self.stderr = None
        self.starts = 0

    def start(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([LUCID_ROOT, str(TESTS)] +
                                            ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env["PYTHONFAULTHANDLER"] = "1"
        self.stderr = tempfile.TemporaryFile("w+")     # the child's last words, after a crash
        self.proc = subprocess.Popen([sys.executable, "-m", sweep.__name__], cwd=LUCID_ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, env=env, text=True, bufsize=1)
        self.starts += 1

    def stop(self):
        """End the server (it exits when its stdin closes)."""
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        self.discard()

    def discard(self):
        """Forget the server and its stderr (after it stopped, crashed or was killed)."""
        self.proc = None
        if self.stderr is not None:
            self.stderr.close()
            self.stderr = None

    def run(self, index):
        """The case's problem (None when it passes); after a crash or a hang, what happened
        (the next call starts a new server)."""
        if self.proc is None:
            self.start()
        try:
            self.proc.stdin.write(f"{index}\n")
            self.proc.stdin.flush()
            ready, _, _ = select.select([self.proc.stdout], [], [], CALL_TIMEOUT)
        except BrokenPipeError:          # it died before reading the request
            ready = [True]
        line = self.proc.stdout.readline() if ready else ""
        if line:
            return json.loads(line)["problem"]
        if not ready:
            self.proc.kill()
        code = self.proc.wait(timeout=30)
        self.stderr.seek(0)
        text = self.stderr.read()
        self.discard()
        how = f"hung (no answer in {CALL_TIMEOUT} s)" if not ready else f"crashed (exit {code})"
        # faulthandler's first line names the signal; a sanitizer's report after it can be long
        fatal = next((ln for ln in text.splitlines() if ln.startswith("Fatal Python error")), "")
        fatal = f"{fatal}\n...\n" if fatal and fatal not in text[-1500:] else ""
        return f"the interpreter {how}; its stderr ends:\n{fatal}{text[-1500:]}"


def test_the_case_server_reports_a_crash_and_restarts():
    server = CaseServer()
    try:
        first = sweep.cases()[0][0]
        assert server.run(0) is None, first               # a valid call passes
        problem = server.run(sweep.CRASH_FOR_TEST)
        # exit -11 (SIGSEGV) in the release build; 1 under AddressSanitizer, which catches the
        # signal, reports and exits (the sanitizer step)
        assert re.match(r"the interpreter crashed \(exit (-11|1)\)", problem), problem
        assert "Segmentation fault" in problem            # faulthandler's report, from stderr
        assert server.run(0) is None and server.starts == 2
    finally:
        server.stop()


@pytest.mark.skipif(os.environ.get("LUCID_BAD_INPUT_SWEEP") != "1",
                    reason="the bad-input sweep runs once, in CI's bad-input step: set "
                           "LUCID_BAD_INPUT_SWEEP=1 to run it (a few seconds)")
def test_every_public_name_survives_bad_inputs():
    table = sweep.cases()
    server = CaseServer()
    started = time.monotonic()
    problems = []
    try:
        for index, (label, *_) in enumerate(table):
            problem = server.run(index)
            if problem is not None:
                problems.append(f"{label}: {problem}")
    finally:
        server.stop()
    took = time.monotonic() - started
    print(f"bad-input sweep: {len(table)} calls of {len(sweep.swept_names())} names in "
          f"{took:.1f} s, {server.starts} interpreter(s)")
    assert not problems, f"{len(problems)} of {len(table)} calls failed:\n" + "\n".join(problems)


# -- None (or another non-tensor) where an op wants a tensor: TypeError naming op and argument --
# These segfaulted for None (typed Cython parameters dereferenced it), and gave Cython's
# "Argument 'a' has incorrect type" for a string or a list. They run in a child interpreter, so a
# regression fails this test instead of killing the suite.

TENSOR_POSITIONS = [
    # (call with BAD in the tensor position, op, argument name)
    ("lucid.clone(BAD)", "clone", "a"),
    ("lucid.flatten(BAD)", "flatten", "input"),
    ("lucid.squeeze(BAD)", "squeeze", "input"),
    ("lucid.unsqueeze(BAD, 0)", "unsqueeze", "input"),
    ("lucid.permute(BAD, (0,))", "permute", "a"),
    ("lucid.transpose(BAD, 0, 1)", "transpose", "a"),
    ("lucid.flip(BAD, 0)", "flip", "input"),
    ("lucid.roll(BAD, 1, 0)", "roll", "input"),
    ("lucid.diag(BAD)", "diag", "input"),
    ("lucid.diagonal(BAD)", "diagonal", "input"),
    ("lucid.trace(BAD)", "trace", "input"),
    ("lucid.tril(BAD)", "tril", "input"),
    ("lucid.triu(BAD)", "triu", "input"),
    ("lucid.unbind(BAD)", "unbind", "input"),
    ("lucid.split(BAD, 1)", "split", "tensor"),
    ("lucid.chunk(BAD, 2)", "chunk", "input"),
    ("lucid.narrow(BAD, 0, 0, 1)", "narrow", "input"),
    ("lucid.movedim(BAD, 0, 1)", "movedim", "input"),
    ("lucid.tile(BAD, (2,))", "tile", "input"),
    ("lucid.reshape(BAD, (4,))", "reshape", "a"),
    ("lucid.view(BAD, (4,))", "view", "a"),
    ("lucid.expand(BAD, (2, 2))", "expand", "a"),
    ("lucid.gather(BAD, 0, index)", "gather", "input"),
    ("lucid.index_select(BAD, 0, lucid.tensor([0]))", "index_select", "input"),
    ("lucid.take_along_dim(BAD, lucid.tensor([0]), 0)", "take_along_dim", "input"),
    ("lucid.scatter_add(BAD, 0, index, x)", "scatter_add", "input"),
    ("lucid.scatter_add(x, 0, index, BAD)", "scatter_add", "src"),
    ("x.scatter_add(0, index, BAD)", "scatter_add", "src"),
    ("lucid.masked_fill(BAD, mask, 0.0)", "masked_fill", "input"),
    ("lucid.masked_select(BAD, mask)", "masked_select", "input"),
    ("x.expand_as(BAD)", "expand_as", "other"),
    ("lucid.zeros_like(BAD)", "zeros_like", "t"),
    ("lucid.ones_like(BAD)", "ones_like", "t"),
    ("lucid.full_like(BAD, 1.0)", "full_like", "t"),
    ("lucid.empty_like(BAD)", "empty_like", "t"),
]
NON_TENSORS = ["None", "'abc'", "[[1, 2], [3]]", "[1.0, 2.0]", "1.5", "2"]


def test_a_non_tensor_in_a_tensor_position_raises_type_error_naming_op_and_argument():
    out = run_child("""
        import json
        x = lucid.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=lucid.float64)
        index = lucid.tensor([[0, 1], [1, 0]])
        mask = lucid.tensor([[True, False], [False, True]])
        outcomes = []
        for template, bad in json.loads(sys.argv[1]):
            call = template.replace("BAD", bad)
            try:
                eval(call)
                outcomes.append((call, None, ""))
            except Exception as e:
                outcomes.append((call, type(e).__name__, str(e)))
        print(json.dumps(outcomes))
    """, args=[json.dumps([(t, b) for t, _, _ in TENSOR_POSITIONS for b in NON_TENSORS])])
    outcomes = json.loads(out.strip().splitlines()[-1])
    expected = [(op, arg) for _, op, arg in TENSOR_POSITIONS for _ in NON_TENSORS]
    wrong = [(call, exc, msg) for (call, exc, msg), (op, arg) in zip(outcomes, expected)
             if exc != "TypeError" or not msg.startswith(f"{op}: argument '{arg}' must be a "
                                                         "Tensor, not ")]
    assert not wrong, wrong
    assert len(outcomes) == len(expected)


# -- integer arguments (dims, sizes, offsets, indices): errors in lucid's words, naming the op --
# They leaked AttributeError '__index__' (None, a string), OverflowError 'C ssize_t' (a huge
# int) and messages without the op's name.

X22 = lambda: lucid.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lucid.float64)   # noqa: E731
DIM_OPS = {
    "sum": lambda x, d: x.sum(d), "mean": lambda x, d: lucid.mean(x, d),
    "amax": lambda x, d: x.amax(d), "prod": lambda x, d: x.prod(d),
    "var": lambda x, d: x.var(d), "norm": lambda x, d: x.norm(dim=d),
    "logsumexp": lambda x, d: lucid.logsumexp(x, d), "softmax": lambda x, d: x.softmax(d),
    "log_softmax": lambda x, d: x.log_softmax(d), "cumsum": lambda x, d: x.cumsum(d),
    "cumprod": lambda x, d: lucid.cumprod(x, d), "argmax": lambda x, d: x.argmax(d),
    "max": lambda x, d: x.max(d), "all": lambda x, d: x.all(d),
    "unsqueeze": lambda x, d: x.unsqueeze(d), "squeeze": lambda x, d: x.squeeze(d),
    "transpose": lambda x, d: x.transpose(0, d), "flatten": lambda x, d: x.flatten(d),
    "unbind": lambda x, d: x.unbind(d), "split": lambda x, d: x.split(1, d),
    "chunk": lambda x, d: x.chunk(2, d), "narrow": lambda x, d: x.narrow(d, 0, 1),
    "flip": lambda x, d: x.flip(d), "roll": lambda x, d: x.roll(1, d),
    "movedim": lambda x, d: x.movedim(d, 0), "permute": lambda x, d: x.permute(d, 0),
    "gather": lambda x, d: x.gather(d, lucid.tensor([[0, 1], [1, 0]])),
    "index_select": lambda x, d: x.index_select(d, lucid.tensor([0])),
    "take_along_dim": lambda x, d: x.take_along_dim(lucid.tensor([[0, 1]]), d),
    "scatter_add": lambda x, d: x.scatter_add(d, lucid.tensor([[0, 1]]), x),
    "cat": lambda x, d: lucid.cat([x, x], d), "stack": lambda x, d: lucid.stack([x, x], d),
    "size": lambda x, d: x.size(d), "diagonal": lambda x, d: x.diagonal(0, d, 1),
    "linalg.norm": lambda x, d: lucid.linalg.norm(x, dim=d),
}


@pytest.mark.parametrize("op", sorted(DIM_OPS))
def test_a_dim_out_of_range_is_an_index_error_in_pytorchs_words(op):
    x = X22()
    ndim = 3 if op in ("unsqueeze", "stack") else 2
    for d in (5, -7, 10**20, -10**20, 2**63):
        with pytest.raises(IndexError) as info:
            DIM_OPS[op](x, d)
        assert str(info.value) == (f"{op}: Dimension out of range (expected to be in range of "
                                   f"[{-ndim}, {ndim - 1}], but got {d})"), info.value


@pytest.mark.parametrize("op", sorted(DIM_OPS))
def test_a_dim_that_is_not_an_int_is_a_type_error_naming_the_op(op):
    x = X22()
    for d in ("a", 1.5, [[0], [1]], lucid.tensor([0.5])) + ((True,) if op != "var" else ()):
        with pytest.raises(TypeError, match=rf"^{op}: "):     # var(x, True): the unbiased flag
            DIM_OPS[op](x, d)


def test_a_zero_dim_tensor_takes_dims_0_and_minus_1_only():
    x = lucid.tensor(3.0)
    assert x.sum(0).item() == 3.0 and x.sum(-1).item() == 3.0
    with pytest.raises(IndexError, match=re.escape(
            "sum: Dimension out of range (expected to be in range of [-1, 0], but got 1)")):
        x.sum(1)
    assert x.unsqueeze(-1).shape == (1,)


INT_ARGS = [
    # (call, exception, message pattern)
    (lambda x: x.split(None),
     TypeError, r"^split: argument 'split_size_or_sections' must be an int, not NoneType"),
    (lambda x: x.split([1, "a"]),
     TypeError, r"^split: argument 'split_size_or_sections' must be an int, not str"),
    (lambda x: x.split(10**20),
     ValueError, r"^split: argument 'split_size_or_sections' is 10{20}, which does not fit"),
    (lambda x: x.chunk(None), TypeError, r"^chunk: argument 'chunks' must be an int, not NoneType"),
    (lambda x: x.chunk(1.5), TypeError, r"^chunk: argument 'chunks' must be an int, not float"),
    (lambda x: x.chunk(True), TypeError, r"^chunk: argument 'chunks' must be an int, not bool"),
    (lambda x: x.narrow(0, None, 1), TypeError, r"^narrow: argument 'start' must be an int"),
    (lambda x: x.narrow(0, 0, "a"), TypeError, r"^narrow: argument 'length' must be an int"),
    (lambda x: lucid.tril(x, None),
     TypeError, r"^tril: argument 'diagonal' must be an int, not NoneType"),
    (lambda x: lucid.triu(x, "a"),
     TypeError, r"^triu: argument 'diagonal' must be an int, not str"),
    (lambda x: lucid.tril(x, 10**20), ValueError, r"^tril: argument 'diagonal' is 10{20}"),
    (lambda x: lucid.diagonal(x, None),
     TypeError, r"^diagonal: argument 'offset' must be an int, not NoneType"),
    (lambda x: lucid.diag(x, 1.5),
     TypeError, r"^diag: argument 'diagonal' must be an int, not float"),
    (lambda x: lucid.roll(x, "a"), TypeError, r"^roll: argument 'shifts' must be an int, not str"),
    (lambda x: lucid.roll(x, [1, None], [0, 1]),
     TypeError, r"^roll: argument 'shifts' must be an int, not NoneType"),
    (lambda x: lucid.roll(x, 10**20), ValueError, r"^roll: argument 'shifts' is 10{20}"),
    (lambda x: x.permute(0, None), TypeError, r"^permute: dim must be an int, not NoneType"),
    (lambda x: x.reshape(-2, 2),
     RuntimeError, r"^reshape: invalid shape dimension -2 at index 0 of shape \[-2, 2\]"),
    (lambda x: x.view(-2, 2),
     RuntimeError, r"^view: invalid shape dimension -2 at index 0 of shape \[-2, 2\]"),
    (lambda x: x.reshape(2, -5), RuntimeError, r"^reshape: invalid shape dimension -5 at index 1"),
    (lambda x: lucid.reshape(x, "ab"),
     TypeError, r"^reshape: argument 'shape' must be a sequence of ints, not str"),
    (lambda x: lucid.reshape(x, 4),
     TypeError, r"^reshape: argument 'shape' must be a sequence of ints, not int"),
    (lambda x: x.reshape(10**20), ValueError, r"^reshape: argument 'shape' is 10{20}"),
    (lambda x: x.expand(None, 2),
     TypeError, r"^expand: argument 'shape' must be an int, not NoneType"),
    (lambda x: x.repeat(None), TypeError, r"^repeat: argument 'shape' must be an int"),
    (lambda x: x.tile("a"), TypeError, r"^tile: argument 'shape' must be an int, not str"),
    (lambda x: x.new_zeros(None),
     TypeError, r"^new_zeros: argument 'size' must be an int, not NoneType"),
    (lambda x: x.new_ones(-1), RuntimeError, r"^new_ones: sizes must be non-negative, got \(-1,\)"),
    (lambda x: x.new_full((2,), None),
     TypeError, r"^new_full: fill_value must be a number, not NoneType"),
    (lambda x: x[2**63],
     IndexError, r"^index 9223372036854775808 is out of range for a tensor of shape \(2, 2\): "
                 r"an index must fit in 64 bits$"),
    (lambda x: x[-2**63 - 1],
     IndexError, r"is out of range for a tensor of shape \(2, 2\): an index must fit in 64 bits$"),
    (lambda x: x.__setitem__(2**63, 1.0),
     IndexError, r"^index 9223372036854775808 is out of range"),
]


@pytest.mark.parametrize("dtype", [lucid.float32, lucid.float64])
@pytest.mark.parametrize("case", range(len(INT_ARGS)))
def test_a_bad_integer_argument_is_an_error_naming_the_op(case, dtype):
    call, exc, pattern = INT_ARGS[case]
    for x in (X22().to(dtype), X22().to(dtype).transpose(0, 1)):    # contiguous and strided
        before, version = x.numpy().copy(), x._version
        with pytest.raises(exc, match=pattern):
            call(x)
        assert np.array_equal(x.numpy(), before) and x._version == version


CONSTRUCTOR_ARGS = [
    (lambda: lucid.zeros(None), TypeError, r"^zeros: argument 'size' must be an int, not NoneType"),
    (lambda: lucid.ones(2, "a"), TypeError, r"^ones: argument 'size' must be an int, not str"),
    (lambda: lucid.empty(1.5), TypeError, r"^empty: argument 'size' must be an int, not float"),
    (lambda: lucid.randn(10**20), ValueError, r"^randn: argument 'size' is 10{20}"),
    (lambda: lucid.rand(2, -1), RuntimeError, r"^rand: sizes must be non-negative, got \(2, -1\)"),
    (lambda: lucid.zeros(-1), RuntimeError, r"^zeros: sizes must be non-negative"),
    (lambda: lucid.full(None, 1.0),
     TypeError, r"^full: argument 'size' must be an int, not NoneType"),
    (lambda: lucid.full((2,), None),
     TypeError, r"^full: fill_value must be a number, not NoneType"),
    (lambda: lucid.full((2,), "a"), TypeError, r"^full: fill_value must be a number, not str"),
    (lambda: lucid.full_like(lucid.ones(2), [1, 2]),
     TypeError, r"^full_like: fill_value must be a number"),
    (lambda: lucid.eye(10**20), ValueError, r"^eye: n = 10{20} does not fit"),
    (lambda: lucid.arange("a"), TypeError, r"^arange: end must be a number, not str"),
    (lambda: lucid.arange(0, 10, None), TypeError, r"^arange: step must be a number, not NoneType"),
    (lambda: lucid.arange(10**20), ValueError, r"^arange: end = 10{20} does not fit"),
    (lambda: lucid.linspace(None, 1, 3),
     TypeError, r"^linspace: start must be a number, not NoneType"),
    (lambda: lucid.linspace(0, 1, 10**20), ValueError, r"^linspace: steps = 10{20} does not fit"),
    (lambda: lucid.logspace(0, 1, 3, "a"), TypeError, r"^logspace: base must be a number, not str"),
    (lambda: lucid.tensor([[1, 2], [3]]),
     ValueError, r"^tensor: data must be a number or a rectangular"),
    (lambda: lucid.tensor(None), TypeError, r"^tensor: can't make a tensor from NoneType values"),
    (lambda: lucid.as_tensor("abc"), TypeError, r"^as_tensor: can't make a tensor from str values"),
    (lambda: lucid.from_dlpack(None),
     TypeError, r"^from_dlpack: expected an object with __dlpack__"),
    (lambda: lucid.from_dlpack([1.0]),
     TypeError, r"^from_dlpack: expected an object with __dlpack__"),
    (lambda: lucid.zeros(2, dtype="abc"), TypeError, r"^zeros: unsupported dtype 'abc'"),
    (lambda: lucid.manual_seed(None),
     TypeError, r"^manual_seed: seed must be an int, not NoneType"),
    (lambda: lucid.manual_seed(-1), ValueError, r"^manual_seed: seed must be >= 0, got -1"),
    (lambda: lucid.set_rng_state("abc"),
     TypeError, r"^set_rng_state: state must be what get_rng_state\(\) returned"),
    (lambda: lucid.ones(2).to(np.float16), TypeError, r"^to: unsupported dtype float16"),
    (lambda: lucid.ones(2).type(2), TypeError, r"^type: unsupported dtype 2"),
    (lambda: lucid.ones(2).prod(dtype=[1]), TypeError, r"^prod: unsupported dtype \[1\]"),
    (lambda: lucid.cumsum(lucid.ones(2), 0, dtype=1.5),
     TypeError, r"^cumsum: unsupported dtype 1.5"),
    (lambda: lucid.ones(2).new_zeros(2, dtype="x"),
     TypeError, r"^new_zeros: unsupported dtype 'x'"),
    (lambda: lucid.arange(3, requires_grad=True),
     RuntimeError, r"^arange: only floating point tensors can require gradients"),
    (lambda: lucid.pow(lucid.tensor([True]), lucid.tensor([True])), RuntimeError,
     r"^pow: not implemented for lucid.bool and lucid.bool inputs"),
    (lambda: lucid.ones(2).isclose(lucid.ones(2), None),
     TypeError, r"^isclose: argument 'rtol' must be a number"),
    (lambda: lucid.allclose(lucid.ones(2), lucid.ones(2), 1e-5, "a"),
     TypeError, r"^allclose: argument 'atol' must be a number"),
    (lambda: lucid.gather(lucid.ones(2), 0, [[1, 2], [3]]),
     TypeError, r"^gather: index must be an int64 tensor .* ragged list"),
    (lambda: lucid.linalg.norm(lucid.ones(2), dim=1.5),
     TypeError, r"^linalg.norm: argument 'dim' must be a sequence of ints, not float"),
]


@pytest.mark.parametrize("case", range(len(CONSTRUCTOR_ARGS)))
def test_a_bad_constructor_or_conversion_argument_is_an_error_naming_the_op(case):
    call, exc, pattern = CONSTRUCTOR_ARGS[case]
    with pytest.raises(exc, match=pattern):
        call()


def _elementwise(x):
    return x.exp()


PYTHON_LEVEL = [
    (lambda x: lucid.autograd.gradcheck(None, (x,)), TypeError, r"^gradcheck: fn must be callable"),
    (lambda x: lucid.autograd.gradcheck(_elementwise, (x,), None),
     TypeError, r"^gradcheck: eps must be a number"),
    (lambda x: lucid.autograd.gradcheck(_elementwise, (x,), 1e-6, -1.0),
     ValueError, r"^gradcheck: atol must be >= 0"),
    (lambda x: lucid.autograd.gradcheck(_elementwise, (x,), 1.5),
     lucid.autograd.GradcheckError, r"^gradcheck: Jacobian mismatch"),
    (lambda x: lucid.autograd.gradgradcheck(_elementwise, None),
     ValueError, r"^gradgradcheck: no input requires grad"),
    (lambda x: lucid.autograd.gradgradcheck(_elementwise, (x,), "abc"),
     TypeError, r"^gradgradcheck: grad_outputs\[0\] must be a Tensor, not str"),
    (lambda x: lucid.autograd.gradgradcheck(_elementwise, (x,), [x, x]),
     RuntimeError, r"^gradgradcheck: 2 grad_outputs for 1 outputs"),
    (lambda x: lucid.autograd.gradgradcheck(_elementwise, (x,), 1.5),
     TypeError, r"^gradgradcheck: grad_outputs\[0\] must be a Tensor"),
    (lambda x: lucid.autograd.gradgradcheck(_elementwise, (x,), (lucid.ones(3).double(),)),
     RuntimeError,
     r"^gradgradcheck: grad_outputs\[0\] has shape \(3,\) but its output has shape \(2, 2\)"),
    (lambda x: lucid.func.vjp(None, x), TypeError, r"^vjp: func must be callable"),
    (lambda x: lucid.func.jvp("abc", (x,), (x,)), TypeError, r"^jvp: func must be callable"),
    (lambda x: lucid.func.grad(1.5), TypeError, r"^grad: func must be callable"),
    (lambda x: lucid.func.jacrev(None), TypeError, r"^jacrev: func must be callable"),
    (lambda x: lucid.autograd.functional.jacobian(None, x),
     TypeError, r"^jacobian: func must be callable"),
    (lambda x: lucid.autograd.functional.hvp([[1, 2], [3]], x, x),
     TypeError, r"^hvp: func must be callable"),
    (lambda x: lucid.testing.opcheck(None, [(x,)]), TypeError, r"^opcheck: fn must be callable"),
    (lambda x: lucid.testing.opcheck(_elementwise, None),
     TypeError, r"^opcheck: sample_inputs must be a sequence"),
    (lambda x: lucid.autograd.backward(None),
     TypeError,
     r"^backward: tensors must be a Tensor, a GradientEdge or a sequence of them, got NoneType"),
    (lambda x: lucid.autograd.backward(x.sum(), "abc"),
     TypeError, r"^backward: grad_tensors must be a Tensor, None or a sequence"),
    (lambda x: lucid.autograd.backward(x.exp(), [1.0]),
     RuntimeError, r"^backward: gradient 0 has shape \(\) but output 0 has shape \(2, 2\)"),
    (lambda x: x.exp().backward(),
     RuntimeError, r"^backward: grad can be implicitly created only for outputs with one element"),
    (lambda x: lucid.autograd.grad(x.sum(), None),
     TypeError,
     r"^grad: inputs must be a Tensor, a GradientEdge or a sequence of them, got NoneType"),
    (lambda x: lucid.autograd.grad(x.sum(), x, 2.0),
     TypeError, r"^grad: grad_outputs must be a Tensor, None or a sequence"),
    (lambda x: lucid.autograd.grad([x.sum(), "a"], x),
     TypeError, r"^grad: outputs must be Tensors or GradientEdges, got str"),
    (lambda x: x.register_hook(None), TypeError, r"^register_hook: hook must be callable"),
    (lambda x: lucid.utils.checkpoint.checkpoint_sequential(None, 1, x), TypeError,
     r"^checkpoint_sequential: functions must be a sequence of callables, not NoneType"),
    (lambda x: lucid.utils.checkpoint.checkpoint_sequential([_elementwise, "a"], 1, x), TypeError,
     r"^checkpoint_sequential: functions\[1\] must be callable, not str"),
]


@pytest.mark.parametrize("case", range(len(PYTHON_LEVEL)))
def test_a_bad_argument_to_the_autograd_api_is_an_error_naming_the_function(case):
    call, exc, pattern = PYTHON_LEVEL[case]
    x = lucid.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=lucid.float64, requires_grad=True)
    with pytest.raises(exc, match=pattern):
        call(x)
    assert x.grad is None


# -- an integer that fits no integer dtype: an error, never a silent float or a wrap-around ------
# lucid.tensor([1, 2**63 + 5]) became float64 9.223372036854776e+18; an int64 tensor plus 2**63
# became float32; full((2,), 2**63) and masked_fill wrapped around or leaked OverflowError.

@pytest.mark.parametrize("data", [[1, 2**63 + 5], [[1], [2**64]], [-2**63 - 1], [[2**70, 3]],
                                  [True, 2**63], 2**63 + 5, -2**63 - 1])
def test_tensor_refuses_an_int_that_fits_no_integer_dtype(data):
    for make, op in ((lucid.tensor, "tensor"), (lucid.as_tensor, "as_tensor"),
                     (lambda d: lucid.ones(1).new_tensor(d, dtype=lucid.int64), "new_tensor")):
        with pytest.raises(ValueError,
                           match=rf"^{op}: the value -?\d+ does not fit in lucid.int64"):
            make(data)
    with pytest.raises(ValueError, match=r"does not fit in lucid.int64"):
        lucid.tensor(data, dtype=lucid.int64)


def test_big_ints_among_floats_or_asked_as_floats_become_floats():
    t = lucid.tensor([1.0, 2**63 + 5])                    # a float among them: float data
    assert t.dtype == lucid.float32 and t.tolist()[1] == float(np.float32(2**63 + 5))
    t = lucid.tensor([1.5, 2**64], dtype=lucid.float64)
    assert t.dtype == lucid.float64 and t.tolist() == [1.5, float(2**64)]
    t = lucid.tensor([[2**64]], dtype=lucid.float64)
    assert t.shape == (1, 1) and t.item() == float(2**64)
    assert lucid.tensor([1, 2**63 - 1]).tolist() == [1, 2**63 - 1]   # the largest int64 fits
    assert lucid.tensor([-2**63]).dtype == lucid.int64


@pytest.mark.parametrize("dtype,value", [(lucid.int64, 2**63), (lucid.int64, -2**63 - 1),
                                         (lucid.int64, 10**20), (lucid.int32, 2**31),
                                         (lucid.int32, -2**31 - 1)])
def test_an_int_past_an_integer_tensors_dtype_raises_and_changes_nothing(dtype, value):
    pattern = rf"value {value} cannot be converted to type {lucid._core.dtype_name(dtype)} " \
              "without overflow"
    x = lucid.tensor([[1, 2], [3, 4]], dtype=dtype)
    mask = lucid.tensor([[True, False], [False, True]])
    for x_ in (x, x.transpose(0, 1)):
        before, version = x_.numpy().copy(), x_._version
        for op, call in (("add", lambda: x_ + value), ("sub", lambda: value - x_),
                         ("mul", lambda: x_ * value), ("add_", lambda: x_.add_(value)),
                         ("mul_", lambda: x_.mul_(value)), ("fill_", lambda: x_.fill_(value)),
                         ("setitem", lambda: x_.__setitem__((0, 1), value)),
                         ("masked_fill", lambda: x_.masked_fill(mask, value)),
                         ("where", lambda: lucid.where(mask, x_, value)),
                         ("clamp", lambda: x_.clamp(max=value)),
                         ("maximum", lambda: lucid.maximum(x_, value)),
                         ("new_full", lambda: x_.new_full((2,), value)),
                         ("full", lambda: lucid.full((2,), value, dtype=dtype))):
            with pytest.raises(RuntimeError, match=rf"^{op}: {pattern}"):
                call()
            assert np.array_equal(x_.numpy(), before) and x_._version == version, op
    fits = np.iinfo(dtype).max if value > 0 else np.iinfo(dtype).min   # the largest that fits
    assert (x * 0 + int(fits)).dtype == dtype and (x * 0 + int(fits)).tolist()[0][0] == fits
    assert x.masked_fill(mask, int(fits)).tolist()[0][0] == fits
    for float_dtype in (lucid.float32, lucid.float64):      # a float tensor takes it as a float
        f = x.to(float_dtype)
        assert (f + value).dtype == float_dtype
        assert (f * 0 + value).tolist()[0][0] == float(float_dtype.type(value))
        assert f.masked_fill(mask, value).tolist()[0][0] == float(float_dtype.type(value))
        f.fill_(value)
        assert f.tolist() == [[float(float_dtype.type(value))] * 2] * 2


def test_full_infers_int64_and_refuses_what_it_cannot_hold():
    with pytest.raises(RuntimeError, match=r"^full: value 9223372036854775808 cannot be "):
        lucid.full((2,), 2**63)
    assert lucid.full((2,), 2**63 - 1).tolist() == [2**63 - 1] * 2
    assert lucid.full((2,), 2**63, dtype=lucid.float64).tolist() == [2.0**63] * 2
    with pytest.raises(RuntimeError, match=r"^full_like: value 9223372036854775808 cannot "):
        lucid.full_like(lucid.ones(2, dtype=lucid.int64), 2**63)
    assert lucid.full_like(lucid.ones(2), 2**63).dtype == lucid.float32
