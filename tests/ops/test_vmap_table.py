"""vmap of every registered op against a loop: each sample call of tests/support/vmap_rows.py
(and the Tensor method and in-place spellings of the ops that have them), batched over each
tensor argument in turn (in_dims 0), over its first one at another dim, over all of them, and
by vmap(vmap(f)) over all, equals the op run once per batch element and stacked (tuples keep
their type). No case may use the fallback loop (every op has a batching rule); an in-place form
of a tensor that is not batched, and the ops vmap cannot batch, raise.
"""
import importlib

import numpy as np
import pytest

import lucid
import lucid._core as core
from support import vmap_rows
from support.vmap_samples import (B, Call, assert_matches, batched, looped, nested, regrouped,
                                  rng_for)

dispatch = importlib.import_module("lucid._batching.dispatch")   # not lucid.func.dispatch
REGISTRY = {op.name: op for op in core.registered_ops()}
_NOT_METHODS = {"where", "polygamma"}     # their methods take the arguments in another order
_PROPERTIES = {"real", "imag"}            # Tensor spells them as properties (x.real)


def _method_calls():
    """The Tensor method spelling of the first two calls of each op that is a method."""
    out, seen = [], {}
    for c in vmap_rows.CALLS:
        op = REGISTRY[c.name]
        short = c.name.rpartition(".")[2]
        if op.method == "none" or c.fn is not None or c.name in _NOT_METHODS:
            continue
        seen[c.name] = seen.get(c.name, 0) + 1
        if seen[c.name] <= 2 and short in _PROPERTIES:
            out.append(Call(c.name, *c.args, label=f"Tensor.{short}",
                            fn=lambda x, _m=short: getattr(x, _m)))
        elif seen[c.name] <= 2:
            out.append(Call(c.name, *c.args, label=f"Tensor.{short}",
                            fn=lambda x, *a, _m=short, **k: getattr(x, _m)(*a, **k), **c.kwargs))
    return out


def _inplace_calls():
    """The in-place form (x.clone().<op>_(...)) of each op's first call that it can write."""
    out = []
    for name, op in REGISTRY.items():
        if op.inplace == "none" or name in _NOT_METHODS:
            continue
        short = name.rpartition(".")[2] + "_"
        for c in vmap_rows.CALLS:
            if c.name != name or c.fn is not None:
                continue
            candidate = Call(name, *c.args, label=f"Tensor.{short}",
                             fn=lambda x, *a, _m=short, **k: getattr(x.clone(), _m)(*a, **k),
                             **c.kwargs)
            if _writes(candidate):
                out.append(candidate)
                break
    return out


def _writes(call):
    """Does the in-place call run on one sample (its other operands broadcast to the first)?"""
    args, _ = _inputs(call, (None,) * len(call.leaves()), "probe")
    try:
        call.bound()(*args)
    except (RuntimeError, TypeError, ValueError, IndexError):
        return False
    return True


def _configs(call):
    """(label, in_dims) of each way the call is batched."""
    leaves = call.leaves()
    n = len(leaves)
    out = []
    for i in range(n):
        out.append((f"arg{i}", tuple(0 if j == i else None for j in range(n))))
    first = -1 if not leaves[0].shape else len(leaves[0].shape)
    out.append((f"arg0@{first}", (first,) + (None,) * (n - 1)))
    if n > 1:
        out.append(("all", (0,) * n))
        out.append(("all@-1", (0,) * (n - 1) + (-1,)))
    out.append(("nested", None))         # vmap(vmap(f)) over every argument, batch (2, B)
    return out


def _ids(case):
    call, label, _ = case
    return f"{call.describe()}-{label}"


def _inputs(call, dims, seed):
    """(the vmap arguments, each batch element's arguments)."""
    rng = rng_for(seed)
    args, per_element = [], [[] for _ in range(B)]
    for leaf, d in zip(call.leaves(), dims):
        if d is None:
            value = leaf.make(rng)
            args.append(value)
            for e in per_element:
                e.append(value)
        else:
            values, stacked = batched(leaf, rng, d)
            args.append(stacked)
            for e, v in zip(per_element, values):
                e.append(v)
    return args, per_element


CASES = [(call, label, dims) for call in vmap_rows.CALLS + _method_calls() + _inplace_calls()
         for label, dims in _configs(call)]


def _nested_inputs(call, seed, outer=2):
    rng = rng_for(seed)
    args, per_element = [], [[] for _ in range(outer * B)]
    for leaf in call.leaves():
        values, stacked = nested(leaf, rng, outer)
        args.append(stacked)
        for e, v in zip(per_element, values):
            e.append(v)
    return args, per_element


def _vmapped(f, dims):
    """vmap(f, dims), or vmap(vmap(f)) for the nested case (dims None)."""
    if dims is None:
        return lucid.func.vmap(lucid.func.vmap(f))
    return lucid.func.vmap(f, in_dims=dims)


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
def test_vmap_equals_the_loop(case):
    call, label, dims = case
    f = call.bound()
    if dims is None:
        args, per_element = _nested_inputs(call, _ids(case))
        expected = regrouped(looped(f, per_element), (2, B))
    else:
        args, per_element = _inputs(call, dims, _ids(case))
        expected = looped(f, per_element)
    refused = vmap_rows.MOVED_BATCH_REFUSED.get(call.name)
    first = 0 if dims is None else dims[0]
    if call.label.endswith("_") and first is None:
        refused = "writes a batched value into a tensor that is not batched"
    elif refused is None or first in (0, None):
        refused = None
    if refused:
        with pytest.raises(RuntimeError, match=refused):
            _vmapped(f, dims)(*args)
        return
    before = sum(dispatch.fallback_counts.values())
    got = _vmapped(f, dims)(*args)
    assert sum(dispatch.fallback_counts.values()) == before, "the op ran the fallback loop"
    assert_matches(got, expected, _ids(case))


def test_the_table_names_every_registered_op():
    named = ({c.name for c in vmap_rows.CALLS} | set(vmap_rows.REFUSED)
             | set(vmap_rows.PYTHON_VALUES))
    assert not set(REGISTRY) - named, f"ops with no vmap table entry: {set(REGISTRY) - named}"
    assert not named - set(REGISTRY), f"table entries of no registered op: {named - set(REGISTRY)}"


def test_the_table_is_broad():
    assert len(CASES) >= 1200, len(CASES)


@pytest.mark.parametrize("name", sorted(vmap_rows.REFUSED))
def test_an_op_vmap_cannot_batch_raises(name):
    call, error, pattern = vmap_rows.REFUSED[name]
    dims = (0,) + (None,) * (len(call.leaves()) - 1)
    args, _ = _inputs(call, dims, name)
    kept = [a.numpy().copy() for a in args]
    with pytest.raises(error, match=pattern):
        lucid.func.vmap(call.bound(), in_dims=dims)(*args)
    for a, k in zip(args, kept):
        np.testing.assert_array_equal(a.numpy(), k)


@pytest.mark.parametrize("name", sorted(vmap_rows.PYTHON_VALUES))
def test_an_op_answering_a_python_value_answers_for_the_logical_tensor(name):
    call = vmap_rows.PYTHON_VALUES[name]
    f = call.bound()
    args, per_element = _inputs(call, (0,), name)
    seen = []
    lucid.func.vmap(lambda x: (seen.append(f(x)), x)[1])(*args)
    assert seen == [f(*per_element[0])]


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_registered_op_has_a_batching_rule(name):
    if not dispatch._FAMILY_OF:
        dispatch._load_families()
    assert dispatch._rule_of(REGISTRY[name].function) is not dispatch.fallback
