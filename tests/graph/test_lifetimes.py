"""Lifetimes: a FunctionCtx outliving its node, GC tracking (Note [GC tracking]) and leaks.

The crash-prone checks (a ctx whose node was freed by the cyclic GC) run in a child interpreter.
"""
import gc
import weakref

import numpy as np
import pytest

import lucid
from support.child_process import run_child

DTYPES = [lucid.float32, lucid.float64]
SHAPES = [(3,), (2, 3), ()]


class _NoGC:
    """gc disabled inside the block (restored after): objects must die by refcount alone."""

    def __enter__(self):
        self.was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self.was:
            gc.enable()


def _leaf(shape, dtype):
    data = np.arange(1, 1 + int(np.prod(shape, dtype=np.int64)), dtype=np.float64).reshape(shape)
    return lucid.tensor(data * 0.25, dtype=dtype, requires_grad=True)


def _recording_function(held):
    """A Function whose forward keeps its ctx in `held` and sets a few attributes."""

    class Twice(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            ctx.k = 7
            ctx.note = "kept"
            held.append(ctx)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2

    return Twice


# -- 1. FunctionCtx used after its node died --------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_user_held_ctx_after_node_freed_by_refcount(shape, dtype):
    """Bug: a ctx the user kept lost its attributes when its node died (release() cleared the
    __dict__); saved_tensors must raise RuntimeError (freed) and attributes stay readable."""
    held = []
    F = _recording_function(held)
    x = _leaf(shape, dtype)
    with _NoGC():
        y = F.apply(x)
        node = weakref.ref(y.grad_fn)
        del y
        assert node() is None, "the node should die by refcount once its output is gone"
    ctx = held[0]
    with pytest.raises(RuntimeError, match="freed"):
        ctx.saved_tensors
    assert ctx.k == 7 and ctx.note == "kept"
    assert ctx.needs_input_grad == (True,)
    with pytest.raises(AttributeError):
        ctx.missing


@pytest.mark.parametrize("retain", [False, True])
def test_user_held_ctx_keeps_attributes_after_backward(retain):
    """Bug: backward without retain_graph cleared the attributes of a ctx the user still holds;
    only the saved tensors are freed (and with retain_graph nothing is)."""
    held = []
    F = _recording_function(held)
    x = _leaf((2, 2), lucid.float64)
    y = F.apply(x)
    y.sum().backward(retain_graph=retain)
    ctx = held[0]
    assert ctx.k == 7 and ctx.note == "kept"
    if retain:
        (s,) = ctx.saved_tensors
        np.testing.assert_array_equal(s.detach().numpy(), x.detach().numpy())
    else:
        with pytest.raises(RuntimeError, match="freed"):
            ctx.saved_tensors
    del y
    assert ctx.k == 7, "attributes must survive the node's death too"
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 2), 2.0))


def test_ctx_only_the_node_holds_drops_attributes_after_backward():
    """Guard for the fix: a ctx nobody but its node holds still has its attributes cleared after
    a backward without retain_graph (an attribute's object dies by refcount, gc disabled),
    while the graph itself is still alive."""

    class Payload:
        pass

    refs = []

    class Keep(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            p = Payload()
            refs.append(weakref.ref(p))
            ctx.payload = p
            return x * 3

        @staticmethod
        def backward(ctx, g):
            return g * 3

    x = _leaf((4,), lucid.float32)
    with _NoGC():
        y = Keep.apply(x)
        assert refs[0]() is not None
        y.sum().backward()
        assert y.grad_fn is not None          # the node (and its ctx) are alive
        assert refs[0]() is None, "a ctx only the node holds should drop its attributes"


_GC_CTX_CHILD = r"""
import gc, sys
import numpy as np
import lucid
variant, dtype_name = sys.argv[1], sys.argv[2]
dtype = getattr(lucid, dtype_name)
held = []
class Twice(lucid.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        ctx.k = len(held)
        held.append(ctx)
        return x * 2, x * w
    @staticmethod
    def backward(ctx, g1, g2):
        x, w = ctx.saved_tensors
        return g1 * 2 + g2 * w, None
x = lucid.tensor(np.arange(6.0).reshape(2, 3), dtype=dtype, requires_grad=True)
w = lucid.tensor(np.ones((2, 3)), dtype=dtype)
keep_alive = []
for i in range(150):
    y, z = Twice.apply(x, w)
    node = y.grad_fn
    if variant == "hook_captures_node":
        y.register_hook(lambda g, node=node: g)
    elif variant == "hook_captures_output":
        z.register_hook(lambda g, z=z: g)
    elif variant == "hook_captures_list_with_ctx":
        box = [held[-1], y]
        y.register_hook(lambda g, box=box: g)
        keep_alive.append(held[-1])
    elif variant == "node_hook_captures_node":
        node.register_hook(lambda gi, go, node=node: None)
    elif variant == "metadata_holds_node":
        node.metadata["self"] = node
    elif variant == "after_backward_retain":
        (y.sum() + z.sum()).backward(retain_graph=True)
        y.register_hook(lambda g, node=node: g)
    del y, z, node
    box = None
gc.collect()
junk = [bytearray(160) for _ in range(20000)]          # reuse what the GC freed
junk2 = [object() for _ in range(20000)]
bad = []
for i, ctx in enumerate(held):
    try:
        ctx.saved_tensors
        bad.append(f"ctx {i}: saved_tensors did not raise")
    except RuntimeError as e:
        if "freed" not in str(e):
            bad.append(f"ctx {i}: unexpected message {e}")
    if ctx.k != i:
        bad.append(f"ctx {i}: attribute k = {ctx.k!r}")
    if ctx.needs_input_grad != (True, False):
        bad.append(f"ctx {i}: needs_input_grad = {ctx.needs_input_grad!r}")
assert not bad, bad[:5]
print("OK", len(held))
"""


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("variant", ["hook_captures_node", "hook_captures_output",
                                     "hook_captures_list_with_ctx", "node_hook_captures_node",
                                     "metadata_holds_node", "after_backward_retain"])
def test_user_held_ctx_after_node_collected_by_gc(variant, dtype):
    """Bug (repro_01): the cyclic GC cleared a Function node's ctx before its __dealloc__, so the
    ctx kept a dangling pointer to the freed node; ctx.saved_tensors then crashed. Now: a
    RuntimeError saying the tensors were freed, and the ctx's attributes are intact."""
    out = run_child(_GC_CTX_CHILD, args=(variant, dtype))
    assert out.strip() == "OK 150"


# -- 8. GC tracking (Note [GC tracking]) --------------------------------------------------------

def _plain_objects():
    x = lucid.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 2
    z = (y @ x).tanh()
    s = z.sum()
    v = y[0]
    r = y.reshape(4)
    s.backward(retain_graph=True)
    return {
        "lucid.tensor": x, "from_numpy": lucid.from_numpy(np.ones(3)), "zeros": lucid.zeros(2),
        "randn": lucid.randn(2, 2), "arange": lucid.arange(4), "mul": y, "tanh(matmul)": z,
        "sum": s, "basic-index view": v, "reshape view": r, "detach": y.detach(),
        "clone": y.clone(), "cat": lucid.cat([x, y]), "leaf .grad": x.grad,
    }


def _tracked_growth(build):
    """How many more objects the GC tracks while the graph build() returns is alive."""
    gc.collect()
    before = len(gc.get_objects())
    keep = build()
    after = len(gc.get_objects())
    del keep
    return after - before


def _chain(n, create_graph=False):
    x = lucid.tensor(np.ones(4), requires_grad=True)
    y = x
    for _ in range(n):
        y = (y * 0.5 + x).tanh()
    if create_graph:
        (g,) = lucid.autograd.grad(y.sum(), [x], create_graph=True)
        return y, g
    return y


def test_plain_tensors_and_nodes_are_untracked():
    """Note [GC tracking]: tensors, nodes and storages made by plain ops are not GC-tracked (a
    plain graph holds no cycle), so a full collection never walks a big graph: a 3000-op graph
    adds (almost) nothing to what the collector sees."""
    tracked = [name for name, o in _plain_objects().items() if gc.is_tracked(o)]
    assert tracked == []
    assert _tracked_growth(lambda: _chain(1000)) < 50


def test_create_graph_results_are_untracked():
    """Note [GC tracking]: the graph recorded by create_graph=True is plain too."""
    x = lucid.tensor([1.0, 2.0], dtype=lucid.float64, requires_grad=True)
    (g,) = lucid.autograd.grad((x * x * x).sum(), [x], create_graph=True)
    assert not gc.is_tracked(g)
    assert _tracked_growth(lambda: _chain(300, create_graph=True)) < 50


def test_grad_fn_access_tracks_tensor_and_node():
    """Note [GC tracking]: a node reached from Python through t.grad_fn may get hooks or
    metadata that refer back to t, so both are tracked from then on."""
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    assert not gc.is_tracked(y)
    node = y.grad_fn
    assert gc.is_tracked(y) and gc.is_tracked(node)


def test_hook_tracks_tensor_and_its_node():
    """Note [GC tracking]: a hook can close a cycle, so registering one puts the tensor (and
    its node) back under the collector; a leaf hook tracks the leaf."""
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    assert not gc.is_tracked(y) and not gc.is_tracked(x)
    y.register_hook(lambda g: g)
    assert gc.is_tracked(y) and gc.is_tracked(y.grad_fn)
    x.register_hook(lambda g: g)
    assert gc.is_tracked(x)


def test_function_node_ctx_and_outputs_are_tracked():
    """Note [GC tracking]: a Function's ctx may hold anything, so its node, ctx and outputs
    stay tracked (while its plain inputs are not)."""
    held = []
    F = _recording_function(held)
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = F.apply(x)
    assert gc.is_tracked(y) and gc.is_tracked(y.grad_fn) and gc.is_tracked(held[0])
    assert not gc.is_tracked(x)


def _chain_graph():
    x = lucid.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
    y = (x * 2).tanh()
    v = y[0:1]
    w = (y + v).sum()
    return x, w


def _inplace_graph():
    x = lucid.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1.0
    y.mul_(3)
    y[0] = x[1] * 2
    return x, (y * y).sum()


def _function_graph():
    F = _recording_function([])
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    return x, (F.apply(x) * 3).sum()


@pytest.mark.parametrize("build", [_chain_graph, _inplace_graph, _function_graph])
@pytest.mark.parametrize("run", ["none", "backward", "retain_graph"])
def test_plain_graph_dies_by_refcount_with_gc_disabled(build, run):
    """Guard: with untracked objects, a graph without cycles must still die by refcount alone
    (gc disabled): its root, nodes and leaf, backwarded or not."""
    with _NoGC():
        x, loss = build()
        if run == "backward":
            loss.backward()
        elif run == "retain_graph":
            loss.backward(retain_graph=True)
        refs = [weakref.ref(loss), weakref.ref(loss.grad_fn), weakref.ref(x)]
        del x, loss
        alive = [i for i, r in enumerate(refs) if r() is not None]
        assert alive == []


def _cycle_tensor_hook_captures_output():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).tanh()
    y.register_hook(lambda g: g if y is not None else g)
    return [y, y.grad_fn]


def _cycle_tensor_hook_captures_node():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    n = y.grad_fn
    y.register_hook(lambda g: g if n is not None else g)
    return [y, n]


def _cycle_leaf_hook_captures_leaf():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: g if x is not None else g)
    return [x]


def _cycle_ctx_attribute_holds_output():
    held = []
    F = _recording_function(held)
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = F.apply(x)
    held[0].out = y
    return [y, y.grad_fn, held.pop()]


def _cycle_ctx_attribute_holds_node_and_itself():
    held = []
    F = _recording_function(held)
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = F.apply(x)
    held[0].node = y.grad_fn
    held[0].me = held[0]
    return [y, y.grad_fn, held.pop()]


def _cycle_node_hook_captures_node():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    n = y.grad_fn
    n.register_hook(lambda gi, go: None if n is not None else None)
    n.register_prehook(lambda go: None if n is not None else None)
    return [y, n]


def _cycle_metadata_holds_node():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.grad_fn.metadata["node"] = y.grad_fn
    return [y, y.grad_fn]


@pytest.mark.parametrize("make", [
    _cycle_tensor_hook_captures_output, _cycle_tensor_hook_captures_node,
    _cycle_leaf_hook_captures_leaf, _cycle_ctx_attribute_holds_output,
    _cycle_ctx_attribute_holds_node_and_itself, _cycle_node_hook_captures_node,
    _cycle_metadata_holds_node,
])
def test_cycles_are_collected(make):
    """Note [GC tracking]: whatever can close a cycle (tensor hooks, ctx attributes, node hooks,
    node metadata) tracks what it touches, so gc.collect() frees the output, node and ctx."""
    refs = [weakref.ref(o) for o in make()]
    gc.collect()
    alive = [i for i, r in enumerate(refs) if r() is not None]
    assert alive == [], f"objects {alive} of the cycle leaked"


def _cycle_node_posthook_captures_output():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).tanh()
    y.grad_fn.register_hook(lambda gi, go: None if y is not None else None)
    return [y]


def _cycle_node_prehook_captures_output():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).tanh()
    y.grad_fn.register_prehook(lambda go: None if y is not None else None)
    return [y]


def _cycle_metadata_holds_output():
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).tanh()
    y.grad_fn.metadata["out"] = y
    return [y]


_NODE_STATE_LEAK = ("956e024: node hooks / node.metadata GC-track the node but not its output "
                    "tensor, which stays untracked, so a cycle output -> node -> hook/metadata "
                    "-> output is never collected")


@pytest.mark.parametrize("make", [_cycle_node_posthook_captures_output,
                                  _cycle_node_prehook_captures_output,
                                  _cycle_metadata_holds_output])
def test_cycles_through_node_state_and_output_are_collected(make):
    """A node hook (or metadata entry) that refers to the node's own output forms a cycle
    output -> node -> extra -> hook -> output; gc.collect() must free it."""
    refs = [weakref.ref(o) for o in make()]
    gc.collect()
    assert [r() is None for r in refs] == [True] * len(refs)


def test_grad_assignment_cycle_is_collected():
    """Two leaves holding each other as .grad form a cycle; gc.collect() must free it (it did
    before tensors were untracked at birth)."""
    x = lucid.tensor([1.0, 2.0])
    y = lucid.tensor([3.0, 4.0])
    x.grad = y
    y.grad = x
    refs = [weakref.ref(x), weakref.ref(y)]
    del x, y
    gc.collect()
    assert [r() for r in refs] == [None, None]
