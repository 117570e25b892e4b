"""The op registry (Note [Op registry], lucid/ops/registry.pxi) against everything that depends
on it: the generated exports and stubs are current, every op is a public name, a method when its
record says so, in the test table or exempt with a reason, swept by the bad-input sweep, and takes
the dtypes its record states."""
import inspect
import subprocess
import sys

import numpy as np
import pytest

import lucid
import lucid._core as core
from support import op_table
from support.paths import ROOT

from reliability import bad_input_sweep as sweep

OPS = core.registered_ops()
BY_NAME = {op.name: op for op in OPS}

# Registered ops with no row of their own in tests/support/op_table.py, and why
NO_TABLE_ROW = {
    "allclose": "returns a Python bool: no gradient; tests/ops/elementwise test it",
    "isclose": "a comparison: bool result, no gradient; tests/ops/elementwise test it",
    "eq": "a comparison: no gradient", "ne": "a comparison: no gradient",
    "lt": "a comparison: no gradient", "le": "a comparison: no gradient",
    "gt": "a comparison: no gradient", "ge": "a comparison: no gradient",
    "isnan": "a test: no gradient", "isinf": "a test: no gradient",
    "isfinite": "a test: no gradient",
    "logical_and": "logic: no gradient", "logical_or": "logic: no gradient",
    "logical_xor": "logic: no gradient", "logical_not": "logic: no gradient",
    "all": "logic: no gradient", "any": "logic: no gradient",
    "argmax": "indices: no gradient", "argmin": "indices: no gradient",
    "argsort": "indices: no gradient (tests/ops/test_order.py checks them against sort's)",
    "numel": "returns a Python int: no gradient; tests/ops/test_views.py test it",
    "is_tensor": "returns a Python bool: no gradient; tests/ops/test_views.py test it",
    "is_floating_point": "returns a Python bool: no gradient; tests/api/test_parity_names.py "
                         "tests it",
    "is_complex": "returns a Python bool: no gradient; tests/api/test_parity_names.py tests it",
    **{step: "a step function: zero gradient (tests/ops/test_elementwise.py)"
       for step in ("sign", "floor", "ceil", "trunc", "round")},
    "linalg.matrix_rank": "an int64 count: no gradient; tests/ops/test_linalg_more.py tests it",
    "linalg.eig": "complex results, not supported yet: it raises (tests/ops/test_linalg_more.py)",
    "linalg.eigvals": "complex results, not supported yet: it raises (tests/ops/test_linalg_more.py)",
}


def public(op):
    """The object lucid exposes under op's public name."""
    module, _, name = op.name.rpartition(".")
    return getattr(lucid.linalg if module == "linalg" else lucid, name)


def test_the_generated_files_are_current():
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "gen_ops.py"), "--check"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_registry_holds_every_op_family():
    names = set(BY_NAME)
    for name in ("add", "exp", "atan2", "sum", "max", "softmax", "reshape", "gather", "cat",
                 "matmul", "einsum", "linalg.det", "linalg.norm"):
        assert name in names, name
    assert {op.module for op in OPS} == {"lucid._core", "lucid._linalg", "lucid._ops"}


# Core ops whose function keeps another name, because the core's own C-level function of that
# name (add, max, ...) is the fast one its rules call, or the name is taken in the core's source
# (Python's complex; real, the typed loops' fused type); help() shows these names. Every other
# op's function is named as users call it (help(lucid.linalg.solve) shows "solve").
NAMED_OTHERWISE = {"add": "add_alpha", "sub": "sub_alpha", "max": "reduce_max",
                   "min": "reduce_min", "all": "reduce_all", "any": "reduce_any",
                   "expand": "checked_expand", "reshape": "checked_reshape",
                   "complex": "complex_from_parts", "real": "real_part", "imag": "imag_part"}


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_a_registered_op_is_its_public_name(name):
    op = BY_NAME[name]
    assert public(op) is op.function
    short = name.rpartition(".")[2]
    assert op.function.__name__ == NAMED_OTHERWISE.get(short, short)
    assert op.batching in core.BATCHING_FAMILIES
    assert op.dtypes in core.DTYPE_KINDS
    assert op.function.__doc__, f"{name} has no docstring"
    assert op.function.__doc__ != type(op.function).__doc__, f"{name} shows its type's docstring"


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_a_registered_op_is_a_method_as_its_record_says(name):
    op = BY_NAME[name]
    method = op.name.rpartition(".")[2]
    raw = vars(lucid.Tensor).get(method)
    if op.method == "function":
        assert type(raw).__name__ == "function_method" and raw.__func__ is op.function
    elif op.method == "own":             # its own definition: in Tensor's body, or a function
        assert raw is not None           # of the op's module installed under the op's name
        assert getattr(raw, "__func__", None) is not op.function
    elif "." in name:                     # Tensor.norm is lucid.norm, not lucid.linalg.norm
        assert getattr(raw, "__func__", None) is not op.function
    else:
        assert raw is None, f"Tensor.{method} exists though {name} says it is not a method"
    form = vars(lucid.Tensor).get(method + "_")
    if op.inplace != "none":            # Note [In-place forms]: name_ made from the op
        assert form.__func__.function is op.function
    else:
        assert not hasattr(getattr(form, "__func__", None), "function"), method + "_"


def test_registering_twice_or_with_unknown_words_is_refused():
    before = len(core.registered_ops())
    with pytest.raises(ValueError, match="registered twice"):
        core.define_op(lucid.exp, core.POINTWISE, core.FLOAT)
    with pytest.raises(ValueError, match="batching family"):
        core.define_op(lucid.exp, "elementwiseish", core.FLOAT, name="exp_again")
    with pytest.raises(ValueError, match="dtype kind"):
        core.define_op(lucid.exp, core.POINTWISE, "floaty", name="exp_again")
    with pytest.raises(ValueError, match="method kind"):
        core.define_op(lucid.exp, core.POINTWISE, core.FLOAT, method="maybe", name="exp_again")
    with pytest.raises(ValueError, match="in-place kind"):
        core.define_op(lucid.exp, core.POINTWISE, core.FLOAT, name="exp_again", inplace="yes")
    assert len(core.registered_ops()) == before
    assert not hasattr(lucid.Tensor, "exp_again")


def test_every_op_has_a_table_row_or_a_reason():
    rows = {spec.name.removeprefix("lucid.") for spec in op_table.OPS}
    missing = []
    for name in BY_NAME:
        has_row = any(row == name or row.startswith((name + "_", name + "[")) for row in rows)
        if name in NO_TABLE_ROW:
            assert not has_row, f"{name} has a row now: take it off NO_TABLE_ROW"
        elif not has_row:
            missing.append(name)
    assert not missing, f"registered ops with no row in tests/support/op_table.py: {missing}"
    assert set(NO_TABLE_ROW) <= set(BY_NAME)


def test_the_bad_input_sweep_calls_every_op():
    swept = {q for q, *_ in sweep.swept_names()}
    missing = [name for name in BY_NAME if f"lucid.{name}" not in swept]
    assert not missing, missing


# -- the dtypes a record states, against what the op does ---------------------------------------

SAMPLE_ARGS = {            # extra arguments for a call on one (2, 2) tensor x
    "clamp": (0,), "masked_fill": ("mask", 0), "pow": ("x",), "gather": (0, "index"),
    "index_select": (0, "index1"), "scatter_add": (0, "index", "x"), "scatter": (0, "index", "x"),
    "index_add": (0, "index1", "row"), "take_along_dim": ("index",),
    "masked_select": ("mask",), "narrow": (0, 0, 1), "flip": ((0,),), "tile": ((1, 2),),
    "roll": (1,), "movedim": (0, 1), "split": (1,), "chunk": (2,), "reshape": ((4,),),
    "view": ((4,),), "expand": ((2, 2, 2),), "permute": ((1, 0),), "transpose": (0, 1),
    "unsqueeze": (0,), "cumsum": (0,), "cumprod": (0,), "softmax": (0,), "log_softmax": (0,),
    "logsumexp": (0,), "where": ("mask", "x"), "cat": (), "stack": (),
    "fmod": ("ones",), "remainder": ("ones",),     # x holds a 0: an integer divisor of 0 raises
    "topk": (1,), "kthvalue": (1,), "quantile": (0.5,), "nanquantile": (0.5,), "cummax": (0,),
    "cummin": (0,), "logcumsumexp": (0,), "cdist": ("x",),
    "clamp_min": (0,), "clamp_max": (1,), "select": (0, 1), "swapaxes": (0, 1),
    "swapdims": (0, 1), "broadcast_to": ((2, 2, 2),), "unflatten": (0, (2, 1)),
    "split_with_sizes": ((1, 1),), "as_strided": ((2,), (1,)),
}


def required_operands(op):
    """The names of op's required parameters that are tensor operands."""
    params = inspect.signature(op.function).parameters.values()
    return [p.name for p in params if p.default is p.empty and p.name in ("x", "y", "input", "other")]


def sample_call(op, dtype):
    x = lucid.tensor(np.array([[1, 2], [3, 0]]).astype(dtype))
    fillers = {"mask": lucid.tensor([[True, False], [False, True]]),
               "index": lucid.tensor([[0, 1], [1, 0]]), "index1": lucid.tensor([1]), "x": x, "row": x[:1],
               "ones": lucid.tensor(np.ones((2, 2)).astype(dtype))}
    if op.name in ("cat", "stack"):
        return op.function([x, x])
    if op.name == "where":
        return op.function(fillers["mask"], x, x)
    if op.name == "polygamma":                # polygamma(n, input): the order comes first
        return op.function(1, x)
    if op.name == "meshgrid":
        return op.function(x[0], x[1], indexing="ij")
    extra = [fillers.get(a, a) if isinstance(a, str) else a for a in SAMPLE_ARGS.get(op.name, ())]
    args = [x, *extra]
    if op.name not in SAMPLE_ARGS and len(required_operands(op)) == 2:
        args = [x, x]
    if op.name in ("mm", "matmul", "dot", "outer", "bmm"):
        y = x if op.name in ("mm", "matmul") else x[0]
        args = [y, y] if op.name != "bmm" else [x[None], x[None]]
    return op.function(*args)


CHECKABLE = [op.name for op in OPS if not op.name.startswith("linalg.")
             and op.name not in ("diag", "trace", "einsum")]


def result_dtype(result):
    first = result[0] if isinstance(result, tuple) else result
    return first.dtype if isinstance(first, lucid.Tensor) else np.dtype(type(first))


@pytest.mark.parametrize("name", CHECKABLE)
def test_an_op_takes_the_dtypes_its_record_states(name):
    op = BY_NAME[name]
    if op.dtypes in ("float_only", "complex_only"):
        for dtype in (np.int64,) if op.dtypes == "float_only" else (np.int64, np.float64):
            with pytest.raises((TypeError, RuntimeError), match=name.rpartition(".")[2]):
                sample_call(op, dtype)
        return
    got = result_dtype(sample_call(op, np.int64))
    if op.dtypes == "float":
        assert got.kind == "f", f"{name} of int64 gave {got}"
    else:
        assert got.kind in "iub", f"{name} of int64 gave {got}: its record says {op.dtypes}"
    if op.dtypes == "numeric":
        with pytest.raises((TypeError, RuntimeError)):
            sample_call(op, np.bool_)
    elif op.dtypes == "any":
        sample_call(op, np.bool_)
