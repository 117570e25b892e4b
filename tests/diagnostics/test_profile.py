"""lucid.autograd.profile(): the engine's counters (backward calls, nodes run and skipped, Python
re-entries) and, with record_nodes, an event per node apply, hook and Function backward, as a
table or a Chrome trace; only inside a block, nested blocks and threads each seeing their own."""
import json
import time

import numpy as np
import pytest

import lucid
from lucid.autograd import Function
from support.checks import assert_close, f64
from support.shared_functions import Square


from .common import MLP_SITE, Boom, Double, NoGrad, mlp_loss

# ------------------------------------------------------------------------------------------------
# engine counters
# ------------------------------------------------------------------------------------------------

def _chain():
    x = f64([0.5, 1.0], requires_grad=True)
    a = x * 2.0
    b = a.exp()
    c = b.sum()
    return x, a, b, c


def test_profile_chain_counts_every_node():
    x, a, b, c = _chain()
    with lucid.autograd.profile() as p:
        c.backward()
    # Sum, Exp, Mul and the leaf's AccumulateGrad
    assert p.backward_calls == 1
    assert p.nodes_run == 4
    assert p.nodes_skipped == 0
    assert p.python_reentries == 0
    assert p.python_seconds == 0
    assert p.engine_seconds >= 0
    assert_close(x.grad, 2 * np.exp([1.0, 2.0]))


def test_profile_grad_wrt_middle_tensor_prunes_below():
    x, a, b, c = _chain()
    with lucid.autograd.profile() as p:
        (ga,) = lucid.autograd.grad(c, a)
    assert p.backward_calls == 1
    assert p.nodes_run == 2                        # Sum and Exp; Mul and the leaf are pruned
    assert p.nodes_skipped == 2
    assert_close(ga, np.exp([1.0, 2.0]))
    assert x.grad is None


def test_profile_backward_inputs_prunes_below():
    x, a, b, c = _chain()
    w = f64([3.0, 4.0], requires_grad=True)
    d = (c * w).sum()                              # Sum, Mul(c, w), then the chain, w's leaf
    with lucid.autograd.profile() as p:
        d.backward(inputs=[w])
    assert p.nodes_run == 3                        # Sum, Mul, w's AccumulateGrad
    assert p.nodes_skipped > 0
    assert x.grad is None and w.grad is not None


def test_profile_node_given_no_gradient_is_skipped():
    x = f64([0.5, 1.0], requires_grad=True)
    a = x * 2.0
    y = NoGrad.apply(a)
    with lucid.autograd.profile() as p:
        y.sum().backward()
    assert p.nodes_run == 2                        # Sum and NoGrad's node
    assert p.nodes_skipped == 2                    # Mul and the leaf got no gradient
    assert p.python_reentries == 1
    assert x.grad is None


def test_profile_function_and_hook_are_python_reentries():
    x = f64([0.5, 1.0], requires_grad=True)
    y = Double.apply(x)
    calls = []

    def hook(g):
        calls.append(1)
        time.sleep(0.005)

    y.register_hook(hook)
    z = y.sum()
    with lucid.autograd.profile() as p:
        z.backward()
    assert calls == [1]
    assert p.python_reentries == 2
    assert p.nodes_run == 3                        # Sum, DoubleBackward, AccumulateGrad
    assert p.python_seconds >= 0.004               # the hook slept 5 ms
    assert p.python_seconds <= p.engine_seconds
    assert_close(x.grad, [2.0, 2.0])


def test_profile_reentrant_backward_is_its_own_call():
    class Checkpoint(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with lucid.enable_grad():
                xd = x.detach().requires_grad_()
                y = xd.sin()
            (gx,) = lucid.autograd.grad(y, xd, g)
            return gx

    x = f64([0.5, 1.0], requires_grad=True)
    out = Checkpoint.apply(x).sum()
    with lucid.autograd.profile() as p:
        out.backward()
    assert p.backward_calls == 2
    assert p.python_reentries == 1
    # outer: Sum, CheckpointBackward, AccumulateGrad; inner grad(): SinBackward (captured leaf)
    assert p.nodes_run == 4
    assert 0 <= p.python_seconds <= p.engine_seconds
    assert_close(x.grad, np.cos([0.5, 1.0]))


def test_profile_counts_only_inside_the_block():
    x, a, b, c = _chain()
    c.backward(retain_graph=True)                  # before: not counted
    with lucid.autograd.profile() as p:
        c.backward(retain_graph=True)
        c.backward(retain_graph=True)
    snapshot = (p.backward_calls, p.nodes_run, p.nodes_skipped, p.python_reentries,
                p.python_seconds, p.engine_seconds)
    assert snapshot[:4] == (2, 8, 0, 0)
    c.backward(retain_graph=True)                  # after: not counted
    Double.apply(x).sum().backward()
    assert (p.backward_calls, p.nodes_run, p.nodes_skipped, p.python_reentries,
            p.python_seconds, p.engine_seconds) == snapshot
    with lucid.autograd.profile() as q:           # a new block starts from zero
        pass
    assert (q.backward_calls, q.nodes_run, q.nodes_skipped, q.python_reentries) == (0, 0, 0, 0)
    assert q.python_seconds == 0 and q.engine_seconds == 0


def test_profile_block_with_an_error_still_reports_and_stops():
    x = f64([0.5, 1.0], requires_grad=True)
    y = Boom.apply(x).sum()
    with pytest.raises(KeyError):
        with lucid.autograd.profile() as p:
            y.backward()
    assert p.backward_calls == 1
    assert p.nodes_run in (1, 2)                   # Sum ran; Boom's node raised (counted or not)
    assert p.python_reentries == 1
    _, _, _, c = _chain()
    c.backward()
    with lucid.autograd.profile() as q:
        pass
    assert q.backward_calls == 0 and q.nodes_run == 0


def test_profile_does_not_change_results():
    xs = [0.3, -0.7]
    x1 = f64(xs, requires_grad=True)
    x2 = f64(xs, requires_grad=True)
    (x1.tanh() * x1).sum().backward()
    with lucid.autograd.profile():
        (x2.tanh() * x2).sum().backward()
    assert_close(x2.grad, x1.grad, rtol=0, atol=0)


# ------------------------------------------------------------------------------------------------
# events, tables and traces
# ------------------------------------------------------------------------------------------------

def test_profile_times_every_node_and_makes_a_table():
    loss, _ = mlp_loss()
    with lucid.autograd.profile() as prof:
        loss.backward()
    names = [e.name for e in prof.events if e.kind == "node"]
    assert sorted(names) == sorted(["MeanBackward", "SigmoidBackward", "MatmulBackward",
                                    "TanhBackward", "MatmulBackward", "AccumulateGrad",
                                    "AccumulateGrad"])
    assert prof.nodes_run == len(names)
    assert all(e.duration_ns >= 0 and e.sequence_nr > 0 for e in prof.events)
    table = prof.table()
    assert table.splitlines()[0].split()[:2] == ["node", "count"]
    assert "MatmulBackward" in table and "%" in table
    by_site = prof.table(by="site")
    assert f"{MLP_SITE}:" in by_site
    with pytest.raises(ValueError):
        prof.table(by="color")


def test_profile_hooks_and_functions_are_their_own_events():
    x = lucid.ones(3, requires_grad=True)
    y = Square.apply(x)
    y.register_hook(lambda g: g)
    with lucid.autograd.profile() as prof:
        y.sum().backward()
    kinds = {e.kind for e in prof.events}
    assert {"node", "hook", "python"} <= kinds
    assert prof.python_reentries == 2


def test_chrome_trace_is_valid_trace_event_json(tmp_path):
    loss, _ = mlp_loss()
    with lucid.autograd.profile() as prof:
        loss.backward()
    path = prof.export_chrome_trace(str(tmp_path / "trace.json"))
    data = json.load(open(path))
    events = data["traceEvents"]
    assert len(events) == len(prof.events)
    for e in events:
        assert e["ph"] == "X" and e["dur"] >= 0 and e["ts"] >= 0
        assert {"name", "cat", "pid", "tid", "args"} <= set(e)
        assert "sequence_nr" in e["args"] and "creation_site" in e["args"]


def test_counters_only_and_nothing_outside_a_block():
    loss, _ = mlp_loss()
    with lucid.autograd.profile(record_nodes=False) as prof:
        loss.backward(retain_graph=True)
    assert prof.events == [] and prof.nodes_run == 7
    with pytest.raises(RuntimeError, match="record_nodes=True"):
        prof.table()
    loss.backward()                                   # outside: nothing recorded anywhere
    assert prof.events == [] and prof.nodes_run == 7
    with lucid.autograd.profile() as outer:
        pass
    assert outer.events == [] and outer.nodes_run == 0


# -- nested profile blocks and the trace's events ----------------------------------------------

def _exp_chain(x):
    """One backward pass of 4 nodes: SumBackward, ExpBackward, MulBackward, AccumulateGrad."""
    (x * 2).exp().sum().backward()


def _node_names(prof):
    return sorted(e.name for e in prof.events if e.kind == "node")


def test_nested_profile_blocks_each_see_what_ran_inside_them():
    x = lucid.ones(3, requires_grad=True)
    with lucid.autograd.profile(record_nodes=True) as outer:
        _exp_chain(x)
        with lucid.autograd.profile(record_nodes=True) as inner:
            _exp_chain(x)
            with lucid.autograd.profile(record_nodes=True) as innermost:
                pass
        _exp_chain(x)
    one = ["AccumulateGrad", "ExpBackward", "MulBackward", "SumBackward"]
    assert (inner.backward_calls, inner.nodes_run, _node_names(inner)) == (1, 4, one)
    assert (outer.backward_calls, outer.nodes_run) == (3, 12)
    assert _node_names(outer) == sorted(one * 3)
    assert (innermost.backward_calls, innermost.nodes_run, innermost.events) == (0, 0, [])
    inner_events = {(e.name, e.start_ns) for e in inner.events}
    assert inner_events <= {(e.name, e.start_ns) for e in outer.events}
    assert outer.engine_seconds >= inner.engine_seconds


def test_nested_profile_blocks_with_and_without_node_records():
    x = lucid.ones(3, requires_grad=True)
    with lucid.autograd.profile(record_nodes=False) as outer:
        _exp_chain(x)
        with lucid.autograd.profile(record_nodes=True) as inner:
            _exp_chain(x)
    assert outer.events == [] and (outer.backward_calls, outer.nodes_run) == (2, 8)
    assert len(inner.events) == 4 and inner.backward_calls == 1
    with lucid.autograd.profile(record_nodes=True) as outer:
        with lucid.autograd.profile(record_nodes=False) as inner:
            _exp_chain(x)
        _exp_chain(x)
    assert inner.events == [] and (inner.backward_calls, inner.nodes_run) == (1, 4)
    assert len([e for e in outer.events if e.kind == "node"]) == 8
    with lucid.autograd.profile() as after:          # nothing left over from the blocks above
        pass
    assert (after.backward_calls, after.nodes_run, after.events) == (0, 0, [])


def test_an_inner_profile_block_left_by_an_exception_keeps_the_outer_one_whole():
    x = lucid.ones(3, requires_grad=True)
    with lucid.autograd.profile() as outer:
        with pytest.raises(ZeroDivisionError):
            with lucid.autograd.profile() as inner:
                _exp_chain(x)
                1 / 0
        _exp_chain(x)
    assert inner.backward_calls == 1 and outer.backward_calls == 2
    assert len([e for e in outer.events if e.kind == "node"]) == 8


def test_profile_blocks_of_two_threads_overlap_without_losing_counts():
    # the counters are process-wide (a block counts every thread's backward while it is open):
    # a block opened in one thread and closed after another thread's block keeps both passes
    import threading
    opened, other_done = threading.Event(), threading.Event()
    result = {}

    def worker():
        x = lucid.ones(3, requires_grad=True)
        with lucid.autograd.profile() as prof:
            opened.set()
            other_done.wait(10)
            _exp_chain(x)
        result["worker"] = prof

    thread = threading.Thread(target=worker)
    thread.start()
    assert opened.wait(10)
    with lucid.autograd.profile() as main:
        _exp_chain(lucid.ones(3, requires_grad=True))
    other_done.set()
    thread.join()
    worker_prof = result["worker"]
    assert (main.backward_calls, main.nodes_run) == (1, 4)
    assert (worker_prof.backward_calls, worker_prof.nodes_run) == (2, 8)
    assert len([e for e in worker_prof.events if e.kind == "node"]) == 8


class _TwoOut(lucid.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, ga, gb):
        return ga * 2 + gb * 3


def _trace(prof, tmp_path):
    return json.load(open(prof.export_chrome_trace(str(tmp_path / "t.json"))))["traceEvents"]


@pytest.mark.parametrize("with_hooks", [False, True])
def test_chrome_trace_has_one_event_per_node_apply_of_a_function(tmp_path, with_hooks):
    x = lucid.ones(3, dtype=lucid.float64, requires_grad=True)
    y = Square.apply(x)
    a, b = _TwoOut.apply(y)
    if with_hooks:
        y.register_hook(lambda g: g)
        a.grad_fn.register_hook(lambda gi, go: None)
        a.grad_fn.register_prehook(lambda go: None)
    loss = (a + b).sum()
    with lucid.autograd.profile(record_nodes=True) as prof:
        loss.backward(retain_graph=True)
        loss.backward()
    events = _trace(prof, tmp_path)
    node_events = [e for e in events if e["cat"] == "node"]
    assert len(node_events) == prof.nodes_run == 2 * 5
    for name in ("SquareBackward", "_TwoOutBackward"):
        named = [e for e in events if e["name"] == name]
        assert len(named) == 2 and all(e["cat"] == "node" for e in named), named
        for node_event in named:                 # the user's backward: nested, its own category
            inside = [e for e in events if e["cat"] == "python" and
                      e["args"]["sequence_nr"] == node_event["args"]["sequence_nr"] and
                      node_event["ts"] <= e["ts"] and
                      e["ts"] + e["dur"] <= node_event["ts"] + node_event["dur"] + 1e-3]
            assert len(inside) == 1 and inside[0]["name"] != name
            assert inside[0]["name"].endswith(".backward")
    hook_events = [e for e in events if e["cat"] == "hook"]
    assert len(hook_events) == (6 if with_hooks else 0)
    node_names = {e["name"] for e in node_events}
    assert not node_names & {e["name"] for e in events if e["cat"] != "node"}
    assert prof.table().count("SquareBackward") == 1


def test_a_node_event_spans_the_hooks_run_for_it():
    """Each hook event lies inside the event of the node it ran for: tensor hooks and pre-hooks
    as well as post-hooks (a node's event is the whole of its run, Note [Hook order])."""
    x = lucid.ones(3, dtype=lucid.float64, requires_grad=True)
    a = x * 2.0
    y = a.sin()
    x.register_hook(lambda g: None)
    a.register_hook(lambda g: None)
    a.grad_fn.register_prehook(lambda go: None)
    a.grad_fn.register_hook(lambda gi, go: None)
    with lucid.autograd.profile(record_nodes=True) as prof:
        y.sum().backward()
    nodes = {e.sequence_nr: e for e in prof.events if e.kind == "node"}
    hooks = [e for e in prof.events if e.kind == "hook"]
    assert len(hooks) == 4 and len(nodes) == 4
    for hook in hooks:
        node = nodes[hook.sequence_nr]
        assert node.start_ns <= hook.start_ns, (node, hook)
        assert hook.start_ns + hook.duration_ns <= node.start_ns + node.duration_ns, (node, hook)
