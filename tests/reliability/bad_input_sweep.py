"""The every-public-name bad-input sweep: which names it calls, with what, and the child server.

Every public function of the modules in MODULES and every public method of lucid.Tensor is
called with each bad value of BAD_VALUES in each positional parameter (the first of a *args too),
the other arguments holding valid fillers. Pass rule per call: a result, or a TypeError,
ValueError, RuntimeError or IndexError whose message names the op; anything else fails, and so
does a crash. Names are found from the namespaces, so an op added later is swept without an edit
here: its required parameters get fillers by parameter name (FILLERS_BY_PARAM), or from the
per-name table (CALLS); a name that is not an op is listed in EXCLUDED with its reason.

The calls run in a child server (serve()), which reads case numbers from its stdin and answers
one JSON line each; test_bad_inputs.py restarts it after a crash and reports the call that
crashed. Parent and child build the same case list (cases()), in the same order.
"""
import faulthandler
import importlib
import inspect
import json
import os
import sys
import warnings

import numpy as np

import lucid
from lucid._batching import BatchedTensor

MODULES = [
    "lucid", "lucid.linalg", "lucid.func", "lucid.autograd", "lucid.autograd.functional",
    "lucid.autograd.forward_ad", "lucid.autograd.graph", "lucid.testing",
    "lucid.utils.checkpoint",
]

# The bad values, made fresh for every call (a callee may keep or change what it is given).
BAD_VALUES = {
    "None": lambda: None,
    "str": lambda: "abc",
    "ragged": lambda: [[1, 2], [3]],
    "float": lambda: 1.5,
    "int": lambda: 2,
    "huge": lambda: 10**20,
    "complex": lambda: 1 + 2j,
}
ALLOWED = (TypeError, ValueError, RuntimeError, IndexError)


# -- valid fillers -----------------------------------------------------------------------------

def mat():
    """A symmetric positive definite float64 matrix: valid for every op on a matrix."""
    return lucid.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=lucid.float64)


def grad_mat():
    return mat().requires_grad_()


def vec():
    return lucid.tensor([1.0, 2.0], dtype=lucid.float64)


def cmat():
    return lucid.tensor([[2.0 + 1j, 1.0], [1.0 - 2j, 3.0j]], dtype=lucid.complex128)


def batch():
    return lucid.tensor([[[2.0, 1.0], [1.0, 3.0]]], dtype=lucid.float64)


def index2():
    return lucid.tensor([[0, 1], [1, 0]])


def index1():
    return lucid.tensor([0, 1])


def mask():
    return lucid.tensor([[True, False], [False, True]])


def scalar_loss():
    return (grad_mat() * 2).sum()


class UserFunctionRefused(Exception):
    """Raised by the sweep's own user functions (elementwise, total) for a non-tensor: a bad
    value that lucid passed on to the user's function untouched, as PyTorch does, is the user's
    function's business, not an error of lucid's."""


def user_tensor(x):
    if not isinstance(x, (lucid.Tensor, BatchedTensor)):       # a tensor, also under vmap
        raise UserFunctionRefused(f"the user function got {type(x).__name__}")
    return x


def elementwise(x):
    return user_tensor(x).exp()


def total(x):
    return (user_tensor(x) * x).sum()


def const(value):
    return lambda: value


# Fillers for required parameters, by parameter name (used unless CALLS gives the arguments).
FILLERS_BY_PARAM = {
    "x": mat, "y": mat, "a": mat, "input": mat, "other": mat, "tensor": mat, "t": mat,
    "A": mat, "B": mat, "src": mat, "exponent": mat, "mat2": mat, "vec2": vec,
    "condition": mask, "mask": mask, "index": index2, "indices": index1,
    "value": const(0.0), "fill_value": const(1.0),
    "dim": const(0), "dim0": const(0), "dim1": const(1), "source": const(0),
    "destination": const(1), "dims": const((0,)), "shape": const((4,)),
    "chunks": const(2), "split_size_or_sections": const(1), "split_size": const(1),
    "shifts": const(1), "start": const(0), "length": const(1), "end": const(1),
    "steps": const(3), "n": const(2), "size": const((2,)), "seed": const(0),
    "data": const([[1.0, 2.0]]), "array": lambda: np.ones(2), "obj": lambda: np.ones(2),
    "tensors": lambda: [mat(), mat()], "equation": const("ij->ji"),
    "func": const(elementwise), "fn": const(elementwise), "inputs": grad_mat,
    "primals": lambda: (grad_mat(),), "tangents": lambda: (mat(),), "tangent": mat,
    "outputs": scalar_loss, "backward": const(lambda ctx, g: g), "hook": const(lambda g: None),
    "on": const(True), "mode": const(True), "pack_hook": const(lambda t: t),
    "unpack_hook": const(lambda t: t), "error_message": const("no saved tensors here"),
    "sample_inputs": lambda: [(mat(),)], "function": const(elementwise),
    "k": const(1), "q": const(0.5), "x1": mat, "x2": mat,
    "min": const(0.0), "max": const(1.0), "stride": const((1,)), "split_sizes": const((1, 1)),
    "axis0": const(0), "axis1": const(1), "sizes": const((2, 1)),
    "real": mat, "imag": mat, "abs": mat, "angle": mat,
    "enable": const(True), "policy_fn_or_list": const([]),
}

class Call:
    """A valid call of one name: its positional arguments, keywords, the tensor a method is
    called on, and a context manager it needs (each a factory)."""

    def __init__(self, args, on=mat, kwargs=dict, context=None):
        self.args, self.on, self.kwargs, self.context = args, on, kwargs, context


def in_dual_level():
    import lucid.autograd.forward_ad as fwAD
    return fwAD.dual_level()


# The names whose valid call the fillers by parameter name do not make.
CALLS = {
    "lucid.bmm": Call(lambda: [batch(), batch()]),
    "lucid.dot": Call(lambda: [vec(), vec()]),
    "lucid.outer": Call(lambda: [vec(), vec()]),
    "lucid.einsum": Call(lambda: ["ij->ji", mat()]),
    "lucid.clamp": Call(lambda: [mat(), 0.0]),
    "lucid.permute": Call(lambda: [mat(), (1, 0)]),
    "lucid.reshape": Call(lambda: [mat(), (4,)]),
    "lucid.view": Call(lambda: [mat(), (4,)]),
    "lucid.expand": Call(lambda: [mat(), (2, 2)]),
    "lucid.tile": Call(lambda: [mat(), (2,)]),
    "lucid.movedim": Call(lambda: [mat(), 0, 1]),
    "lucid.index_select": Call(lambda: [mat(), 0, index1()]),
    "lucid.take_along_dim": Call(lambda: [mat(), index1()]),
    "lucid.scatter_add": Call(lambda: [mat(), 0, index2(), mat()]),
    "lucid.scatter": Call(lambda: [mat(), 0, index2(), mat()]),
    "lucid.index_add": Call(lambda: [mat(), 0, index1(), mat()]),
    "lucid.full": Call(lambda: [(2,), 1.0]),
    "lucid.set_rng_state": Call(lambda: [lucid.get_rng_state()]),
    "lucid.set_default_dtype": Call(lambda: [lucid.float32]),
    "lucid.device": Call(lambda: ["cpu"]),
    "lucid.normal": Call(lambda: [0.0, 1.0, (2,)]),
    "lucid.randint": Call(lambda: [0, 5, (2,)]),
    "lucid.randint_like": Call(lambda: [mat(), 0, 5]),
    "lucid.linalg.solve_triangular": Call(lambda: [mat(), mat()], kwargs=lambda: {"upper": True}),
    "lucid.linalg.lu_solve": Call(lambda: [*lucid.linalg.lu_factor(mat()), mat()]),
    "lucid.linalg.cross": Call(lambda: [lucid.tensor([1.0, 2.0, 3.0]), lucid.tensor([0.0, 1.0, 0.0])]),
    "lucid.func.vjp": Call(lambda: [elementwise, grad_mat()]),
    "lucid.func.jvp": Call(lambda: [elementwise, (mat(),), (mat(),)]),
    "lucid.func.linearize": Call(lambda: [elementwise, mat()]),
    "lucid.func.grad": Call(lambda: [total]),
    "lucid.func.grad_and_value": Call(lambda: [total]),
    "lucid.func.hessian": Call(lambda: [total]),
    "lucid.func.register_vmap_rule": Call(lambda: [elementwise,
                                                   lambda info, in_dims, x: (x, in_dims[0])]),
    "lucid.autograd.backward": Call(lambda: [scalar_loss()]),
    "lucid.autograd.grad": Call(lambda: [scalar_loss(), []]),
    "lucid.autograd.gradcheck": Call(lambda: [elementwise, (grad_mat(),)]),
    "lucid.autograd.gradgradcheck": Call(lambda: [elementwise, (grad_mat(),)]),
    "lucid.autograd.functional.vjp": Call(lambda: [elementwise, mat(), mat()]),
    "lucid.autograd.functional.jvp": Call(lambda: [elementwise, mat(), mat()]),
    "lucid.autograd.functional.hessian": Call(lambda: [total, mat()]),
    "lucid.autograd.functional.hvp": Call(lambda: [total, mat(), mat()]),
    "lucid.autograd.functional.vhp": Call(lambda: [total, mat(), mat()]),
    "lucid.autograd.forward_ad.make_dual": Call(lambda: [mat(), mat()], context=in_dual_level),
    "lucid.autograd.graph.to_dot": Call(lambda: [scalar_loss()]),
    "lucid.utils.checkpoint.checkpoint": Call(lambda: [elementwise, grad_mat()]),
    "lucid.utils.checkpoint.checkpoint_sequential":
        Call(lambda: [[elementwise, elementwise], 1, grad_mat()]),
    "lucid.select": Call(lambda: [mat(), 0, 1]),
    "lucid.imag": Call(lambda: [cmat()]),
    "lucid.view_as_real": Call(lambda: [cmat()]),
    "lucid.broadcast_to": Call(lambda: [mat(), (3, 2, 2)]),
    "lucid.meshgrid": Call(lambda: [vec(), vec()], kwargs=lambda: {"indexing": "ij"}),
    "Tensor.select": Call(lambda: [0, 1]),
    "Tensor.broadcast_to": Call(lambda: [(3, 2, 2)]),
    "Tensor.clamp_": Call(lambda: [0.0]),
    "Tensor.scatter_add_": Call(lambda: [0, index2(), mat()]),
    "Tensor.scatter_": Call(lambda: [0, index2(), mat()]),
    "Tensor.index_add_": Call(lambda: [0, index1(), mat()]),
    "Tensor.bmm": Call(lambda: [batch()], on=batch),
    "Tensor.dot": Call(lambda: [vec()], on=vec),
    "Tensor.outer": Call(lambda: [vec()], on=vec),
    "Tensor.clamp": Call(lambda: [0.0]),
    "Tensor.index_select": Call(lambda: [0, index1()]),
    "Tensor.take_along_dim": Call(lambda: [index1()]),
    "Tensor.scatter_add": Call(lambda: [0, index2(), mat()]),
    "Tensor.scatter": Call(lambda: [0, index2(), mat()]),
    "Tensor.index_add": Call(lambda: [0, index1(), mat()]),
    "Tensor.permute": Call(lambda: [1, 0]),
    "Tensor.reshape": Call(lambda: [4]),
    "Tensor.view": Call(lambda: [4]),
    "Tensor.expand": Call(lambda: [2, 2]),
    "Tensor.flip": Call(lambda: [0]),
    "Tensor.tile": Call(lambda: [2]),
    "Tensor.repeat": Call(lambda: [1, 2]),
    "Tensor.new_full": Call(lambda: [(2,), 1.0]),
    "Tensor.backward": Call(lambda: [], on=scalar_loss),
    "Tensor.register_hook": Call(lambda: [lambda g: None], on=grad_mat),
    "Tensor.register_post_accumulate_grad_hook": Call(lambda: [lambda t: None], on=grad_mat),
    "lucid.autograd.graph.get_gradient_edge": Call(lambda: [grad_mat()]),
    "lucid.autograd.graph.register_multi_grad_hook": Call(lambda: [[grad_mat(), grad_mat()],
                                                                   lambda grads: None]),
    "lucid.autograd.graph.allow_mutation_on_saved_tensors": Call(lambda: []),
    "Tensor.to": Call(lambda: [lucid.float64]),
}

# Public names that are not ops, each with its reason. A name not covered by the sweep (below)
# and not listed here fails test_every_public_name_is_swept_or_excluded.
EXCLUDED = {
    "lucid.Tensor": "the tensor class: refuses construction; its methods are swept one by one",
    "lucid.Storage": "the storage class: made by tensors, never called by users",
    "lucid.autograd.Node": "the node base class: made by ops, never called by users",
    "lucid.autograd.graph.Node": "the same node base class, re-exported",
    "lucid.autograd.graph.GradientEdge": "a NamedTuple of two plain fields: stores any values",
    "lucid.autograd.AccumulateGrad": "a node class: made by backward for leaves, never called",
    "lucid.autograd.PythonBackwardNode": "a node base class: made by Function.apply",
    "lucid.autograd.FunctionCtx": "ctx class: made by Function.apply for forward",
    "lucid.autograd.Function": "a base class to subclass; its apply is tested in tests/function/",
    "lucid.autograd.GradcheckError": "an exception class",
    "lucid.testing.OpCheckError": "an exception class",
    "lucid.testing.OpCheckReport": "a result record that opcheck builds",
    "lucid.testing.CheckResult": "a result record that opcheck builds",
    "lucid.autograd.forward_ad.UnpackedDualTensor": "a named tuple of (primal, tangent)",
    "lucid.autograd.graph.render": "to_dot's arguments, swept there, then Graphviz's dot program",
    "lucid.get_include": "takes nothing: the folder for a native extension's include path",
}

# Ops whose every call raises NotImplementedError (a RuntimeError) naming the op, by design until
# a later issue implements them; their valid call passes with that error.
NOT_IMPLEMENTED_YET = {
    "lucid.linalg.eig": "complex results: complex dtypes are not supported yet",
    "lucid.linalg.eigvals": "complex results: complex dtypes are not supported yet",
}

# What a call's error must name, when not the name itself: e.g. an in-place method's error may
# name the op without its trailing underscore.
def op_names(qualname):
    """The spellings of the op an error message may use for the public name qualname."""
    name = qualname.rsplit(".", 1)[1]
    return {name, name.rstrip("_")}


# -- enumeration ----------------------------------------------------------------------------------

def public_names():
    """(qualname, object, owner) for every public name: owner is lucid.Tensor for a method."""
    out = []
    for modname in MODULES:
        module = importlib.import_module(modname)
        names = getattr(module, "__all__", None)
        if names is None:
            names = sorted(n for n in dir(module) if not n.startswith("_"))
        for n in names:
            out.append((f"{modname}.{n}", getattr(module, n), None))
    for n in sorted(dir(lucid.Tensor)):
        if not n.startswith("_"):
            out.append((f"Tensor.{n}", inspect.getattr_static(lucid.Tensor, n), lucid.Tensor))
    return out


def positional_params(obj, owner):
    """The positional parameters of obj (self dropped) and whether it takes *args."""
    params = list(inspect.signature(obj).parameters.values())
    if owner is not None:
        params = params[1:]
    named = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = any(p.kind == p.VAR_POSITIONAL for p in params)
    return named, star


def classify(qualname, obj, owner):
    """Why the sweep does not call this name (a string), or None when it is swept."""
    if qualname in EXCLUDED:
        return EXCLUDED[qualname]
    if inspect.ismodule(obj):
        return "a module: its own public names are swept under it"
    if not callable(obj):
        return "not callable (a value or a property): nothing to pass a bad value to"
    named, star = positional_params(obj, owner)
    if not named and not star:
        return "takes no positional argument: nothing to pass a bad value to"
    return None


def missing_fillers(qualname, obj, owner):
    """The required parameters no filler covers (empty when the name's valid call is known)."""
    if qualname in CALLS:
        return []
    named, _ = positional_params(obj, owner)
    return [p.name for p in named if p.default is p.empty and p.name not in FILLERS_BY_PARAM]


def valid_call(qualname, obj, owner):
    """The Call of the name: from CALLS, else from the fillers by parameter name."""
    if qualname in CALLS:
        return CALLS[qualname]
    named, _ = positional_params(obj, owner)
    fillers = [FILLERS_BY_PARAM[p.name] for p in named if p.default is p.empty]
    return Call(lambda: [f() for f in fillers])


def swept_names():
    """(qualname, object, owner, positions) for every swept name; positions are the argument
    indices that get the bad values."""
    out = []
    for qualname, obj, owner in public_names():
        if classify(qualname, obj, owner) is not None:
            continue
        named, star = positional_params(obj, owner)
        out.append((qualname, obj, owner, list(range(len(named) + (1 if star else 0)))))
    return out


def cases():
    """Every call of the sweep: (label, qualname, position or None for the valid call, bad)."""
    out = []
    for qualname, obj, owner, positions in swept_names():
        out.append((f"{qualname} (valid call)", qualname, None, None))
        for pos in positions:
            for bad in BAD_VALUES:
                out.append((f"{qualname}: {bad} as positional argument {pos}", qualname, pos, bad))
    return out


def run_call(qualname, obj, owner, pos, bad):
    """Make one case's call: the valid call with the bad value at position pos (pos None: the
    valid call itself)."""
    call = valid_call(qualname, obj, owner)
    args = call.args()
    if pos is not None:
        named, _ = positional_params(obj, owner)
        while len(args) < pos:           # optional parameters before pos keep their defaults
            args.append(named[len(args)].default)
        args = args[:pos] + [BAD_VALUES[bad]()] + args[pos + 1:]
    fn = getattr(call.on(), qualname.rsplit(".", 1)[1]) if owner is not None else obj
    if call.context is None:
        fn(*args, **call.kwargs())
    else:
        with call.context():
            fn(*args, **call.kwargs())


def causes(exc):
    """exc and the exceptions it was raised from."""
    while exc is not None:
        yield exc
        exc = exc.__cause__


def verdict(qualname, pos, exc):
    """None when the outcome passes, else what is wrong with it."""
    if exc is None or any(isinstance(e, UserFunctionRefused) for e in causes(exc)):
        return None
    if not isinstance(exc, ALLOWED):
        return f"{type(exc).__name__} (outside the contract): {exc}"
    if pos is None and not (qualname in NOT_IMPLEMENTED_YET and isinstance(exc, NotImplementedError)
                            and any(n in str(exc) for n in op_names(qualname))):
        return f"the valid call failed (fix the table): {type(exc).__name__}: {exc}"
    message = str(exc)
    if not any(n in message for n in op_names(qualname)):
        return f"{type(exc).__name__} whose message does not name the op: {message}"
    return None


# -- the child server ---------------------------------------------------------------------------

def reset_state():
    """Undo the process-wide switches a call may have flipped (the name's own valid call does:
    set_grad_enabled, set_saved_tensor_guard, ...), back to their defaults."""
    lucid._core._set_grad_enabled(True)
    lucid._core._set_inference_mode(False)
    lucid._core._set_anomaly_enabled(False)
    lucid._core.set_saved_tensor_guard(False)
    lucid._core.set_creation_sites(True)


def run_case(index, table):
    label, qualname, pos, bad = table[index]
    obj, owner = LOOKUP[qualname]
    exc = None
    try:
        run_call(qualname, obj, owner, pos, bad)
    except BaseException as e:           # noqa: B036 -- the verdict says what came out
        exc = e
    finally:
        reset_state()
    return {"label": label, "problem": verdict(qualname, pos, exc)}


LOOKUP = {}
CRASH_FOR_TEST = "crash"               # a request that makes the server segfault, for its test


def serve():
    """Answer case numbers read from stdin, one JSON line each, on the real stdout."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)                        # anything an op prints goes to stderr, not the protocol
    warnings.simplefilter("ignore")
    table = cases()
    LOOKUP.update({q: (o, ow) for q, o, ow in public_names()})
    for line in sys.stdin:
        if line.strip() == CRASH_FOR_TEST:
            faulthandler._sigsegv()      # the crash the server's own test makes it survive
        out.write(json.dumps(run_case(int(line), table)) + "\n")


if __name__ == "__main__":
    serve()
