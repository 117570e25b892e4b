"""Composable function transforms in the style of torch.func (without vmap).

    grad(f, argnums=0, has_aux=False)(*args)        -> df/dargs (f returns one element)
    grad_and_value(f, argnums=0, has_aux=False)     -> (grad, value)  /  (grad, (value, aux))
    vjp(f, *primals, has_aux=False)                 -> (f(*primals), vjp_fn[, aux])
    jvp(f, primals, tangents, has_aux=False)        -> (f(*primals), J @ tangents[, aux])
    jacrev(f, argnums=0, has_aux=False)(*args)      -> Jacobian by reverse mode (rows)
    jacfwd(f, argnums=0, has_aux=False)(*args)      -> Jacobian by forward mode (columns)
    hessian(f, argnums=0)(*args)                    -> jacfwd(jacrev(f))

argnums is an int (the result is one tensor) or a tuple of ints (a tuple, one per position).
A Jacobian block has shape output.shape + input.shape; several outputs give a tuple over them.

Transforms nest: grad(grad(f)), jacrev(jacrev(f)), jacfwd(jacrev(f)), jacrev(jacfwd(f)),
grad inside jvp (forward-over-reverse) and so on. Each call differentiates with respect to its
own alias of its inputs (Note [Transform aliases] in lucid/autograd/_aliases.py), so levels never
mix: grad(lambda x: grad(lambda y: x * y)(x))(x) is 1. Inputs need not require grad; the
caller's tensors are never changed. Results are differentiable (recorded with create_graph)
exactly when something outside the transform can differentiate them: an enclosing transform or
dual level, an input that requires grad, or a closure over tensors that require grad.

lucid has one forward-mode (dual) level per thread, so at most one forward-mode transform
(jvp, jacfwd) can be active at a time: jacfwd(jacfwd(f)) or jvp inside jvp raises RuntimeError.
hessian uses jacrev for its outer Jacobian when called inside a dual level.
"""
import numbers

from . import _core
from ._grad_mode import enable_grad
from .autograd import forward_ad
from .autograd._aliases import (
    detached, differentiable_alias, inside_transform, needs_graph, transform_depth,
)
from .autograd._jacobian import assemble, forward_columns, reverse_rows
from .autograd._structures import (
    check_callable, check_float, checked_vectors, function_outputs, refuse_integer_tangents,
    restore, restore_nested, zeros_like,
)

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian"]


def __dir__():
    """dir(lucid.func) lists the public names (the helpers below stay importable by name)."""
    return list(__all__)


# -- arguments and outputs -------------------------------------------------------------------

def _positions(argnums, nargs, fn_name):
    """(positions, was_tuple) for argnums (an int or a tuple of ints) and nargs arguments."""
    was_tuple = isinstance(argnums, (tuple, list))
    items = tuple(argnums) if was_tuple else (argnums,)
    if was_tuple and not items:
        raise RuntimeError(f"{fn_name}: argnums must be non-empty")
    positions = []
    for a in items:
        if isinstance(a, bool) or not isinstance(a, numbers.Integral):
            raise TypeError(f"{fn_name}: argnums must be an int or a tuple of ints, got "
                            f"{argnums!r}")
        if not -nargs <= a < nargs:
            raise RuntimeError(f"{fn_name}: argnums {a} is out of range for a function called "
                               f"with {nargs} positional argument(s)")
        positions.append(a % nargs)
    if len(set(positions)) != len(positions):
        raise RuntimeError(f"{fn_name}: argnums {argnums!r} names an argument twice")
    return tuple(positions), was_tuple


def _primals(args, positions, fn_name):
    """The arguments at positions: floating point tensors."""
    primals = []
    for p in positions:
        if not isinstance(args[p], _core.Tensor):
            raise TypeError(f"{fn_name}: argument {p} is differentiated (argnums) but is a "
                            f"{type(args[p]).__name__}, not a Tensor")
        primals.append(args[p])
    check_float(primals, "differentiated argument (argnums entry)", fn_name)
    return tuple(primals)


def _substituted(args, positions, values):
    out = list(args)
    for p, v in zip(positions, values):
        out[p] = v
    return out


def _split_aux(value, has_aux, fn_name):
    """(output, aux) of what the function returned."""
    if not has_aux:
        return value, None
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{fn_name}: with has_aux=True the function must return a tuple "
                        f"(output, aux), but it returned a {type(value).__name__}"
                        + (f" of length {len(value)}" if isinstance(value, (tuple, list)) else ""))
    return value[0], value[1]


def _tensors_in(obj):
    """The tensors in obj (a tensor, or tuples, lists and dicts of them)."""
    if isinstance(obj, _core.Tensor):
        return [obj]
    if isinstance(obj, dict):
        obj = list(obj.values())
    if isinstance(obj, (tuple, list)):
        return [t for item in obj for t in _tensors_in(item)]
    return []


def _detached_aux(obj):
    """aux with every tensor detached (its structure kept)."""
    if isinstance(obj, _core.Tensor):
        return detached(obj)
    if isinstance(obj, dict):
        return {k: _detached_aux(v) for k, v in obj.items()}
    if isinstance(obj, (tuple, list)):
        return type(obj)(_detached_aux(v) for v in obj)
    return obj


def _with_aux(result, aux, has_aux):
    return (result, aux) if has_aux else result


def _refuse_nested_forward(fn_name):
    if _core._current_dual_level() is not None:
        raise RuntimeError(f"{fn_name}: a forward-mode transform is already active in this "
                           "thread: nested forward-mode levels are not supported (lucid has one "
                           "dual level per thread, so jacfwd(jacfwd(f)) and jvp inside jvp "
                           "raise); use jacrev for one of them")


class _Finisher:
    """Detaches a transform's results unless something outside it can differentiate them
    (needs_graph); called inside the transform."""

    def __init__(self, grad_was_enabled, primals, results):
        self.create_graph = needs_graph(grad_was_enabled, primals, results)

    def __call__(self, tensors):
        return list(tensors) if self.create_graph else [detached(t) for t in tensors]

    def aux(self, aux):
        return aux if self.create_graph else _detached_aux(aux)


class _ReverseCall:
    """One reverse-mode transform call: aliases of the differentiated arguments, the function run
    on them, and whether the results must stay differentiable."""

    def __init__(self, func, args, kwargs, argnums, has_aux, fn_name):
        self.positions, self.argnums_tuple = _positions(argnums, len(args), fn_name)
        self.primals = _primals(args, self.positions, fn_name)
        grad_was_enabled = _core.is_grad_enabled()
        with enable_grad():
            self.aliases = tuple(differentiable_alias(p) for p in self.primals)
            value, self.aux = _split_aux(
                func(*_substituted(args, self.positions, self.aliases), **kwargs),
                has_aux, fn_name)
        self.value = value
        self.finish = _Finisher(grad_was_enabled, self.primals,
                                _tensors_in(value) + _tensors_in(self.aux))
        self.create_graph = self.finish.create_graph

    def finish_aux(self):
        return self.finish.aux(self.aux)


# -- grad --------------------------------------------------------------------------------------

def _scalar(value, fn_name):
    if not isinstance(value, _core.Tensor):
        raise TypeError(f"{fn_name}: expected the function to return a Tensor, but it returned "
                        f"a {type(value).__name__}")
    if value.numel() != 1:
        raise RuntimeError(f"{fn_name}: expected the function to return a scalar Tensor (one "
                           f"element), but it returned a Tensor of shape {tuple(value.shape)}; "
                           "use vjp or jacrev for non-scalar outputs")
    return value


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (gradient of func at argnums, func's value); with has_aux,
    (gradient, (value, aux))."""
    check_callable(func, "func", "grad_and_value")
    def wrapper(*args, **kwargs):
        with inside_transform():
            call = _ReverseCall(func, args, kwargs, argnums, has_aux, "grad")
            out = _scalar(call.value, "grad")
            with enable_grad():
                if out.requires_grad:
                    grads = _core.grad(out, call.aliases, create_graph=call.create_graph,
                                       allow_unused=True, materialize_grads=True)
                else:
                    grads = tuple(zeros_like(p) for p in call.primals)
            grads = restore(call.finish(grads), call.argnums_tuple)
            value = call.finish([out])[0]
            return grads, _with_aux(value, call.finish_aux(), has_aux)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of func (one output element) with respect to the
    arguments at argnums; with has_aux, (gradient, aux)."""
    check_callable(func, "func", "grad")
    with_value = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        grads, value = with_value(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads
    return wrapper


# -- vjp and jvp -------------------------------------------------------------------------------

def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn[, aux]): vjp_fn(cotangents) gives v^T J with respect to every
    primal, a tuple with one entry per primal; cotangents have the output's structure."""
    check_callable(func, "func", "vjp")
    with inside_transform():
        call = _ReverseCall(func, primals, {}, tuple(range(len(primals))), has_aux, "vjp")
        outputs_tuple, outputs = function_outputs(call.value, "vjp")

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        """v^T J for cotangents v shaped like the outputs; one tensor per primal."""
        if outputs_tuple != isinstance(cotangents, (tuple, list)):
            raise RuntimeError(f"vjp_fn: the function returned "
                               f"{'a tuple of Tensors' if outputs_tuple else 'a single Tensor'},"
                               f" so cotangents must be "
                               f"{'a tuple of as many' if outputs_tuple else 'a Tensor'} "
                               f"of the same shapes, got a {type(cotangents).__name__}")
        cts = checked_vectors(cotangents, outputs, "output", "vjp_fn")
        if create_graph is None:
            create_graph = _core.is_grad_enabled() and (
                call.create_graph or transform_depth() > 0 or any(c.requires_grad for c in cts)
                or _core._current_dual_level() is not None)
        pairs = [(o, c) for o, c in zip(outputs, cts) if o.requires_grad]
        with enable_grad():
            grads = _core.grad([o for o, _ in pairs], call.aliases,
                               grad_outputs=[c for _, c in pairs], retain_graph=retain_graph,
                               create_graph=create_graph, allow_unused=True,
                               materialize_grads=True) if pairs else \
                tuple(zeros_like(p) for p in call.primals)
        return tuple(grads)

    value = restore(call.finish(outputs), outputs_tuple)
    return (value, vjp_fn, call.finish_aux()) if has_aux else (value, vjp_fn)


def jvp(func, primals, tangents, has_aux=False):
    """(func(*primals), J @ tangents[, aux]) by forward mode; tangents match primals one by
    one in shape."""
    check_callable(func, "func", "jvp")
    for name, seq in (("primals", primals), ("tangents", tangents)):
        if not isinstance(seq, (tuple, list)):
            raise TypeError(f"jvp(f, primals, tangents): expected {name} to be a tuple (it "
                            f"should be valid to call f(*primals)), got a "
                            f"{type(seq).__name__}")
    primals = tuple(primals)
    for i, p in enumerate(primals):
        if not isinstance(p, _core.Tensor):
            raise TypeError(f"jvp: primals[{i}] is a {type(p).__name__}, not a Tensor")
    check_float(primals, "primal", "jvp")
    refuse_integer_tangents(tangents, "jvp")
    tangents = checked_vectors(tuple(tangents), primals, "primal", "jvp")
    _refuse_nested_forward("jvp")
    grad_was_enabled = _core.is_grad_enabled()
    with inside_transform():
        with forward_ad.dual_level():
            duals = [forward_ad.make_dual(p, t) for p, t in zip(primals, tangents)]
            value, aux = _split_aux(func(*duals), has_aux, "jvp")
            outputs_tuple, outputs = function_outputs(value, "jvp")
            unpacked = [forward_ad.unpack_dual(o) for o in outputs]
        values = [u.primal for u in unpacked]
        jvps = [zeros_like(u.primal) if u.tangent is None else u.tangent for u in unpacked]
        finish = _Finisher(grad_was_enabled, primals + tangents, values + jvps + _tensors_in(aux))
    values = restore(finish(values), outputs_tuple)
    jvps = restore(finish(jvps), outputs_tuple)
    return (values, jvps, finish.aux(aux)) if has_aux else (values, jvps)


# -- Jacobians and the Hessian -----------------------------------------------------------------

def jacrev(func, argnums=0, has_aux=False):
    """A function returning the Jacobian of func with respect to argnums, one backward pass per
    output element; with has_aux, (jacobian, aux)."""
    check_callable(func, "func", "jacrev")
    def wrapper(*args, **kwargs):
        with inside_transform():
            call = _ReverseCall(func, args, kwargs, argnums, has_aux, "jacrev")
            outputs_tuple, outputs = function_outputs(call.value, "jacrev")
            with enable_grad():
                rows = reverse_rows(outputs, call.aliases, call.create_graph)
                blocks = [call.finish(
                    assemble([r[j] for r in rows[i]], p, tuple(out.shape) + tuple(p.shape), 0)
                    for j, p in enumerate(call.primals))
                    for i, out in enumerate(outputs)]
            jac = restore_nested(blocks, outputs_tuple, call.argnums_tuple)
            return _with_aux(jac, call.finish_aux(), has_aux)
    return wrapper


def jacfwd(func, argnums=0, has_aux=False):
    """A function returning the Jacobian of func with respect to argnums, one forward-mode pass
    per input element; with has_aux, (jacobian, aux). Not inside another forward-mode
    transform (one dual level per thread)."""
    check_callable(func, "func", "jacfwd")
    def wrapper(*args, **kwargs):
        positions, argnums_tuple = _positions(argnums, len(args), "jacfwd")
        primals = _primals(args, positions, "jacfwd")
        _refuse_nested_forward("jacfwd")
        structure = []

        def call(diff_args):
            value, aux = _split_aux(func(*_substituted(args, positions, diff_args), **kwargs),
                                    has_aux, "jacfwd")
            was_tuple, outs = function_outputs(value, "jacfwd")
            structure.append(was_tuple)
            return outs, aux

        grad_was_enabled = _core.is_grad_enabled()
        with inside_transform():
            outputs, aux, cols = forward_columns(call, primals)
            blocks = [[assemble([c[i] for c in cols[j]], out,
                                tuple(out.shape) + tuple(p.shape), out.ndim)
                       for j, p in enumerate(primals)]
                      for i, out in enumerate(outputs)]
            finish = _Finisher(grad_was_enabled, primals,
                               [b for row in blocks for b in row] + _tensors_in(aux))
        blocks = [finish(row) for row in blocks]
        jac = restore_nested(blocks, structure[0], argnums_tuple)
        return _with_aux(jac, finish.aux(aux), has_aux)
    return wrapper


def hessian(func, argnums=0):
    """A function returning the Hessian of func (one output element) with respect to argnums:
    jacfwd(jacrev(func)), or jacrev(jacrev(func)) when a dual level is already active."""
    check_callable(func, "func", "hessian")
    def wrapper(*args, **kwargs):
        outer = jacrev if _core._current_dual_level() is not None else jacfwd
        return outer(jacrev(func, argnums), argnums)(*args, **kwargs)
    return wrapper
