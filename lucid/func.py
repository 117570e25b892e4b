"""Composable function transforms in the style of torch.func.

    vmap(f, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None)(*args)
                                                    -> f mapped over a batch dim (lucid/_batching)
    register_vmap_rule(op, rule)                    -> op batched by rule(info, in_dims, *args)

    grad(f, argnums=0, has_aux=False)(*args)        -> df/dargs (f returns one element)
    grad_and_value(f, argnums=0, has_aux=False)     -> (grad, value)  /  (grad, (value, aux))
    vjp(f, *primals, has_aux=False)                 -> (f(*primals), vjp_fn[, aux])
    jvp(f, primals, tangents, has_aux=False)        -> (f(*primals), J @ tangents[, aux])
    jacrev(f, argnums=0, has_aux=False)(*args)      -> Jacobian by reverse mode (rows)
    jacfwd(f, argnums=0, has_aux=False)(*args)      -> Jacobian by forward mode (columns)
    hessian(f, argnums=0)(*args)                    -> jacfwd(jacrev(f))
    linearize(f, *primals)                          -> (f(*primals), jvp_fn): J @ tangents

argnums is an int (the result is one tensor) or a tuple of ints (a tuple, one per position).
A Jacobian block has shape output.shape + input.shape; several outputs give a tuple over them.

Transforms nest: grad(grad(f)), jacrev(jacrev(f)), jacfwd(jacrev(f)), jacrev(jacfwd(f)),
grad inside jvp (forward-over-reverse) and so on. Each call differentiates with respect to its
own alias of its inputs (Note [Transform aliases] in lucid/autograd/_aliases.py), so levels never
mix: grad(lambda x: grad(lambda y: x * y)(x))(x) is 1. Inputs need not require grad; the
caller's tensors are never changed. Results are differentiable (recorded with create_graph)
exactly when something outside the transform can differentiate them: an enclosing transform or
dual level, an input that requires grad, or a closure over tensors that require grad.

Under vmap each transform works on the physical tensors (lucid/_batching/transforms.py), so
vmap(grad(f)) gives per-sample gradients; jacrev and jacfwd vmap one vjp / jvp over the rows /
columns of the identity instead of looping. lucid has one forward-mode (dual) level per thread,
so at most one forward-mode transform (jvp, jacfwd) can be active at a time: jacfwd(jacfwd(f))
or jvp inside jvp raises RuntimeError. hessian uses jacrev for its outer Jacobian when called
inside a dual level.
"""
import numbers

import numpy as np

from . import _core
from ._grad_mode import enable_grad
from ._batching import vmap, register_vmap_rule
from ._linearize import linearize
from ._batching import transforms as _batching
from .autograd import forward_ad
from .autograd._aliases import (
    detached, differentiable_alias, inside_transform, needs_graph, transform_depth,
)
from .autograd._jacobian import assemble, forward_columns, reverse_rows
from .autograd._structures import (
    check_callable, check_float, checked_vectors, function_outputs, refuse_integer_tangents,
    restore, restore_nested, zeros_like,
)

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap",
           "register_vmap_rule", "linearize"]


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
        if _batching.active():
            return _batched_grad_and_value(func, args, kwargs, argnums, has_aux)
        return _grad_and_value(func, args, kwargs, argnums, has_aux)
    return wrapper


def _grad_and_value(func, args, kwargs, argnums, has_aux, seed_ones=False):
    """grad_and_value's work; seed_ones: the output is a physical batch of scalars (under vmap),
    differentiated with a seed of ones."""
    with inside_transform():
        call = _ReverseCall(func, args, kwargs, argnums, has_aux, "grad")
        out = call.value if seed_ones else _scalar(call.value, "grad")
        with enable_grad():
            if out.requires_grad:
                seed = _core._from_array(np.ones(out.shape, dtype=np.dtype(out.dtype))) \
                    if seed_ones else None
                grads = _core.grad(out, call.aliases, grad_outputs=seed,
                                   create_graph=call.create_graph, allow_unused=True,
                                   materialize_grads=True)
            else:
                grads = tuple(zeros_like(p) for p in call.primals)
        grads = restore(call.finish(grads), call.argnums_tuple)
        value = call.finish([out])[0]
        return grads, _with_aux(value, call.finish_aux(), has_aux)


def _batched_grad_and_value(func, args, kwargs, argnums, has_aux):
    """grad_and_value under vmap (Note in lucid/_batching/transforms.py): every differentiated
    argument batched at all active levels, the physical output seeded with ones."""
    levels, sizes = _batching.active_levels()
    positions, _ = _positions(argnums, len(args), "grad")
    physical = list(args)
    for p in positions:
        if not _batching.tensor_or_batched(args[p]):
            raise TypeError(f"grad: argument {p} is differentiated (argnums) but is a "
                            f"{type(args[p]).__name__}, not a Tensor")
        physical[p] = _batching.to_physical(args[p], levels, sizes)

    def on_physical(*xs):
        logical = list(xs)
        for p in positions:
            logical[p] = _batching.to_logical(xs[p], levels)
        value = func(*logical, **kwargs)
        out, aux = _split_aux(value, has_aux, "grad")
        if not _batching.tensor_or_batched(out):
            raise TypeError(f"grad: expected the function to return a Tensor, but it returned "
                            f"a {type(out).__name__}")
        if _batching.logical_numel(out) != 1:
            raise RuntimeError(f"grad: expected the function to return a scalar Tensor (one "
                               f"element), but it returned a Tensor of shape {out.shape}; use "
                               "vjp or jacrev for non-scalar outputs")
        out = _batching.to_physical(out, levels, sizes)
        return (out, aux) if has_aux else out

    grads, value = _grad_and_value(on_physical, tuple(physical), {}, argnums, has_aux,
                                   seed_ones=True)
    if isinstance(grads, tuple):
        grads = tuple(_batching.to_logical(g, levels) for g in grads)
    else:
        grads = _batching.to_logical(grads, levels)
    if has_aux:
        return grads, (_batching.to_logical(value[0], levels), value[1])
    return grads, _batching.to_logical(value, levels)


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
    if _batching.active():
        return _batched_vjp(func, primals, has_aux)
    return _plain_vjp(func, primals, has_aux)


def _plain_vjp(func, primals, has_aux):
    """vjp on plain tensors (no batch level active, or the physical ones under vmap)."""
    with inside_transform():
        call = _ReverseCall(func, primals, {}, tuple(range(len(primals))), has_aux, "vjp")
        outputs_tuple, outputs = function_outputs(call.value, "vjp")

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        """v^T J for cotangents v shaped like the outputs; one tensor per primal."""
        if _batching.active() and _batching.any_batched(cotangents):
            return _batched_vjp(func, primals, has_aux)[1](cotangents, retain_graph,
                                                           create_graph)
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


def _logical_outputs(value, fn_name):
    """(was_tuple, outputs) of what a function under vmap returned: tensors or batched ones."""
    was_tuple = isinstance(value, (tuple, list))
    items = tuple(value) if was_tuple else (value,)
    for i, item in enumerate(items):
        if not _batching.tensor_or_batched(item):
            where = f"output {i} of the user-provided function" if was_tuple else \
                "the output of the user-provided function"
            raise TypeError(f"{fn_name}: {where} is a {type(item).__name__}, not a Tensor: "
                            "the function must return a Tensor or a tuple of Tensors")
    return was_tuple, items


def _on_physical(func, levels, sizes, has_aux, fn_name, structure):
    """func as a function of physical tensors: its inputs become BatchedTensors at levels, its
    outputs physical tensors batched at all of them; structure receives the outputs' was_tuple."""
    def on_physical(*xs):
        value = func(*[_batching.to_logical(x, levels) for x in xs])
        out, aux = _split_aux(value, has_aux, fn_name)
        was_tuple, outs = _logical_outputs(out, fn_name)
        structure.append(was_tuple)
        outs = tuple(_batching.to_physical(o, levels, sizes) for o in outs)
        out = outs if was_tuple else outs[0]
        return (out, aux) if has_aux else out
    return on_physical


def _batched_vjp(func, primals, has_aux):
    """vjp under vmap: primals and cotangents batched at every active level (the physical vjp);
    cotangents batched at a level entered since run func again inside it."""
    levels, sizes = _batching.active_levels()
    physical = [_batching.to_physical(p, levels, sizes) for p in primals]
    structure = []
    result = _plain_vjp(_on_physical(func, levels, sizes, has_aux, "vjp", structure),
                        tuple(physical), has_aux)
    value, plain_fn = result[0], result[1]
    was_tuple = structure[0]

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        """v^T J for cotangents v shaped like the outputs; one tensor per primal."""
        if not set(_batching.levels_in(cotangents)) <= set(levels):
            return _batched_vjp(func, primals, has_aux)[1](cotangents, retain_graph,
                                                           create_graph)
        items = tuple(cotangents) if isinstance(cotangents, (tuple, list)) else (cotangents,)
        cts = [_batching.to_physical(c, levels, sizes) if _batching.tensor_or_batched(c) else c
               for c in items]
        grads = plain_fn(tuple(cts) if isinstance(cotangents, (tuple, list)) else cts[0],
                         retain_graph, create_graph)
        return tuple(_batching.to_logical(g, levels) for g in grads)

    logical = restore([_batching.to_logical(v, levels) for v in
                       (value if was_tuple else (value,))], was_tuple)
    return (logical, vjp_fn, result[2]) if has_aux else (logical, vjp_fn)


def _batched_jvp(func, primals, tangents, has_aux):
    """jvp under vmap: primals and tangents batched at every active level (one physical jvp)."""
    levels, sizes = _batching.active_levels()
    for name, seq in (("primals", primals), ("tangents", tangents)):
        for i, t in enumerate(seq):
            if not _batching.tensor_or_batched(t):
                raise TypeError(f"jvp: {name}[{i}] is a {type(t).__name__}, not a Tensor")
    physical = tuple(_batching.to_physical(p, levels, sizes) for p in primals)
    tangents = tuple(_batching.to_physical(t, levels, sizes) for t in tangents)
    structure = []
    result = _plain_jvp(_on_physical(func, levels, sizes, has_aux, "jvp", structure), physical,
                        tangents, has_aux)
    was_tuple = structure[0]

    def logical(values):
        items = values if was_tuple else (values,)
        return restore([_batching.to_logical(v, levels) for v in items], was_tuple)
    out = (logical(result[0]), logical(result[1]))
    return out + (result[2],) if has_aux else out


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
    if _batching.active():
        return _batched_jvp(func, primals, tuple(tangents), has_aux)
    return _plain_jvp(func, primals, tangents, has_aux)


def _plain_jvp(func, primals, tangents, has_aux):
    """jvp on plain tensors (no batch level active, or the physical ones under vmap)."""
    for i, p in enumerate(primals):
        if not isinstance(p, _core.Tensor):
            raise TypeError(f"jvp: primals[{i}] is a {type(p).__name__}, not a Tensor")
    check_float(primals, "primal", "jvp")
    refuse_integer_tangents(tangents, "jvp")
    tangents = checked_vectors(tuple(tangents), primals, "primal", "jvp")
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

def _identity_blocks(shapes, like):
    """One basis tensor per shape: block i is (n, *shapes[i]) where n = sum of the numels, the
    rows of the n x n identity that fall in shape i's part (dtype of like)."""
    numels = [int(np.prod(shape)) for shape in shapes]
    n = sum(numels)
    eye = np.eye(n, dtype=np.dtype(like.dtype))
    blocks, start = [], 0
    for shape, m in zip(shapes, numels):
        blocks.append(_core._from_array(eye[:, start:start + m].reshape((n,) + tuple(shape))))
        start += m
    return blocks, numels


def jacrev(func, argnums=0, has_aux=False):
    """A function returning the Jacobian of func with respect to argnums: one vjp, vmapped over
    the rows of the identity (one backward pass when the output has one element); with has_aux,
    (jacobian, aux)."""
    check_callable(func, "func", "jacrev")
    def wrapper(*args, **kwargs):
        positions, argnums_tuple = _positions(argnums, len(args), "jacrev")
        primals = tuple(args[p] for p in positions)
        for p, x in zip(positions, primals):
            if not _batching.tensor_or_batched(x):
                raise TypeError(f"jacrev: argument {p} is differentiated (argnums) but is a "
                                f"{type(x).__name__}, not a Tensor")

        def on_primals(*xs):
            return func(*_substituted(args, positions, xs), **kwargs)
        result = vjp(on_primals, *primals, has_aux=has_aux)
        value, vjp_fn = result[0], result[1]
        outputs_tuple, outputs = _logical_outputs(value, "jacrev")
        shapes = [tuple(o.shape) for o in outputs]
        basis, numels = _identity_blocks(shapes, outputs[0] if outputs else primals[0])
        n = sum(numels)
        if n == 1:
            rows = [tuple(_unsqueezed_rows(g) for g in vjp_fn(
                tuple(b[0] for b in basis) if outputs_tuple else basis[0][0]))]
        else:
            rows = [vmap(vjp_fn)(tuple(basis) if outputs_tuple else basis[0])]
        rows = rows[0]
        blocks, start = [], 0
        for out_shape, m in zip(shapes, numels):
            blocks.append([_core.checked_reshape(
                _ops_narrow(r, start, m), out_shape + tuple(p.shape))
                for r, p in zip(rows, primals)])
            start += m
        jac = restore_nested(blocks, outputs_tuple, argnums_tuple)
        return _with_aux(jac, result[2] if has_aux else None, has_aux)
    return wrapper


def _unsqueezed_rows(g):
    return g.unsqueeze(0)


def _ops_narrow(x, start, length):
    from . import _ops
    return x if start == 0 and length == x.shape[0] else _ops.narrow(x, 0, start, length)


def jacfwd(func, argnums=0, has_aux=False):
    """A function returning the Jacobian of func with respect to argnums: one jvp, vmapped over
    the columns of the identity; with has_aux, (jacobian, aux)."""
    check_callable(func, "func", "jacfwd")
    def wrapper(*args, **kwargs):
        positions, argnums_tuple = _positions(argnums, len(args), "jacfwd")
        primals = _primals_of(args, positions, "jacfwd")
        shapes = [tuple(p.shape) for p in primals]
        basis, numels = _identity_blocks(shapes, primals[0])
        structure = []

        def on_primals(*xs):
            value, aux = _split_aux(func(*_substituted(args, positions, xs), **kwargs),
                                    has_aux, "jacfwd")
            was_tuple, outs = _logical_outputs(value, "jacfwd")
            structure.append(was_tuple)
            return outs, aux

        seen = []

        def column(*tangents):
            outs_and_aux = jvp(lambda *xs: _flat_with_aux(on_primals(*xs)), primals,
                               tangents, has_aux=True)
            seen.append((_batching.active_levels()[0][-1], outs_and_aux[2]))
            return outs_and_aux[1]
        n = sum(numels)
        if n == 0:
            outs, aux = on_primals(*primals)
            columns = tuple(_core._from_array(np.zeros((0,) + tuple(o.shape),
                                                       dtype=np.dtype(o.dtype))) for o in outs)
        else:
            columns = vmap(column)(*basis)
            aux = _batching.first_element(seen[0][1], seen[0][0])
        was_tuple = structure[0]
        blocks = []
        for col in columns:
            moved = _ops_movedim(col, 0, -1)
            row, start = [], 0
            for p, m in zip(primals, numels):
                piece = _ops_narrow_last(moved, start, m)
                row.append(_core.checked_reshape(piece, tuple(col.shape[1:]) + tuple(p.shape)))
                start += m
            blocks.append(row)
        jac = restore_nested(blocks, was_tuple, argnums_tuple)
        return _with_aux(jac, aux, has_aux)
    return wrapper


def _primals_of(args, positions, fn_name):
    primals = []
    for p in positions:
        if not _batching.tensor_or_batched(args[p]):
            raise TypeError(f"{fn_name}: argument {p} is differentiated (argnums) but is a "
                            f"{type(args[p]).__name__}, not a Tensor")
        primals.append(args[p])
    return tuple(primals)


def _flat_with_aux(outs_aux):
    outs, aux = outs_aux
    return tuple(outs), aux


def _ops_movedim(x, a, b):
    from . import _ops
    return _ops.movedim(x, a, b)


def _ops_narrow_last(x, start, length):
    from . import _ops
    return x if start == 0 and length == x.shape[-1] else _ops.narrow(x, -1, start, length)


def hessian(func, argnums=0):
    """A function returning the Hessian of func (one output element) with respect to argnums:
    jacfwd(jacrev(func)), or jacrev(jacrev(func)) when a dual level is already active."""
    check_callable(func, "func", "hessian")
    def wrapper(*args, **kwargs):
        outer = jacrev if _core._current_dual_level() is not None else jacfwd
        return outer(jacrev(func, argnums), argnums)(*args, **kwargs)
    return wrapper
