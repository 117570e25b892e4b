"""lucid.func.linearize: func's value at fixed primals and its Jacobian-vector product there,
as torch.func.linearize. Primals, tangents and outputs are pytrees (tuples, lists, dicts of
tensors); each jvp_fn call is one forward-mode pass (lucid.func.jvp) at the primals, so it
composes with vmap and the other transforms."""
from ._batching import trees
from ._batching import transforms as _batching
from .autograd._structures import check_callable


def linearize(func, *primals):
    """(func(*primals), jvp_fn): jvp_fn(*tangents), tangents shaped like primals, gives
    J(primals) @ tangents with the output's structure."""
    check_callable(func, "func", "linearize")
    flat_primals, spec = trees.flatten(primals)
    for i, p in enumerate(flat_primals):
        if not _batching.tensor_or_batched(p):
            raise TypeError(f"linearize: primal:{i} in the flattened pytree is a "
                            f"{type(p).__name__}, not a Tensor")
    output = func(*primals)
    out_specs = []

    def flat_func(*leaves):
        flat_out, out_spec = trees.flatten(func(*trees.unflatten(leaves, spec)))
        out_specs.append(out_spec)
        return tuple(flat_out)

    def jvp_fn(*tangents):
        """J(primals) @ tangents, the tangents shaped (and typed) like the primals."""
        from .func import jvp
        flat_tangents, tangent_spec = trees.flatten(tangents)
        if tangent_spec != spec:
            raise RuntimeError(f"Expected the tangents {trees.describe(tangent_spec)} to have "
                               f"the same argspec as the primals {trees.describe(spec)}")
        for i, (t, p) in enumerate(zip(flat_tangents, flat_primals)):
            _check_tangent(i, t, p)
        del out_specs[:]
        jvps = jvp(flat_func, tuple(flat_primals), tuple(flat_tangents))[1]
        return trees.unflatten(jvps, out_specs[-1])
    return output, jvp_fn


def _check_tangent(i, tangent, primal):
    """RuntimeError in torch's words unless tangent i has its primal's shape and dtype."""
    if not _batching.tensor_or_batched(tangent):
        raise TypeError(f"linearize: tangent:{i} in the flattened pytree is a "
                        f"{type(tangent).__name__}, not a Tensor")
    if tuple(tangent.shape) != tuple(primal.shape):
        raise RuntimeError(f"tangent:{i} with shape {tuple(tangent.shape)} in flattened pytree "
                           f"doesn't match the shape {tuple(primal.shape)} of the corresponding "
                           "primal.")
    if tangent.dtype != primal.dtype:
        raise RuntimeError(f"tangent:{i} with dtype {tangent.dtype} in flattened pytree doesn't "
                           f"match the dtype {primal.dtype} of the corresponding primal.")

