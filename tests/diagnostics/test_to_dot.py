"""Looking inside a backward pass: to_dot/render, profile with per-node events, DLPack.

The DOT text must be stable (the same graph gives the same text, so it can be diffed), name every
node with its creation site, show leaves with shape and dtype and saved tensors on request. The
profile must time every node apply (and hooks and Function backwards as their own events) only
inside a block, and keep only the counters with record_nodes=False.
"""
import json
import os
import shutil

import numpy as np
import pytest

import lucid
from lucid.autograd.graph import render, to_dot
from support.checks import assert_close
from support.shared_functions import Square

THIS_FILE = os.path.basename(__file__)           # creation sites name it


def _mlp_loss():
    lucid.manual_seed(0)
    x = lucid.randn(5, 4)
    w1 = lucid.randn(4, 3, requires_grad=True)
    w2 = lucid.randn(3, 2, requires_grad=True)
    return ((x @ w1).tanh() @ w2).sigmoid().mean(), (w1, w2)


# ------------------------------------------------------------------------------------------------
# to_dot / render
# ------------------------------------------------------------------------------------------------

def test_to_dot_is_stable_and_names_nodes_with_sites():
    loss, _ = _mlp_loss()
    first, second = to_dot(loss), to_dot(loss)
    assert first == second
    assert first.startswith("digraph backward {") and first.rstrip().endswith("}")
    for name in ("MeanBackward", "SigmoidBackward", "MatmulBackward", "TanhBackward"):
        assert name in first
    assert f"{THIS_FILE}:" in first                          # the creation site, file:line
    assert first.count("leaf (AccumulateGrad)") == 2
    assert "(4, 3) float32" in first and "(3, 2) float32" in first


def test_to_dot_same_graph_rebuilt_gives_the_same_text_modulo_sites():
    a, _ = _mlp_loss()
    b, _ = _mlp_loss()
    assert to_dot(a) == to_dot(b)


def test_to_dot_show_saved():
    loss, _ = _mlp_loss()
    plain, saved = to_dot(loss), to_dot(loss, show_saved=True)
    assert "saved" not in plain
    assert "saved (5, 4) float32" in saved          # x, saved by the first matmul
    assert "saved (4, 3) float32" in saved          # w1


def test_to_dot_of_several_outputs_and_functions():
    class Twice(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = lucid.ones(3, requires_grad=True)
    y = Twice.apply(x)
    text = to_dot(y.sum(), y.exp())
    assert "output 0" in text and "output 1" in text and "TwiceBackward" in text
    assert text.count("leaf (AccumulateGrad)") == 1


def test_to_dot_rejects_non_tensors():
    with pytest.raises(TypeError):
        to_dot(3)


def test_render_writes_svg_or_says_what_to_install(tmp_path):
    loss, _ = _mlp_loss()
    have_graphviz = shutil.which("dot") is not None
    try:
        import graphviz  # noqa: F401
    except ImportError:
        have_graphviz = False
    if not have_graphviz:
        with pytest.raises(RuntimeError, match="lucid-autograd\\[viz\\]"):
            render(loss, path=str(tmp_path / "g.svg"))
        print("graphviz (package or dot program) missing: checked the error message only")
        return
    out = render(loss, path=str(tmp_path / "g.svg"))
    text = open(out).read()
    assert "<svg" in text and "MatmulBackward" in text
    with pytest.raises(ValueError):
        render(loss, path=str(tmp_path / "g.bmp"))


# ------------------------------------------------------------------------------------------------
# profile
# ------------------------------------------------------------------------------------------------

def test_profile_times_every_node_and_makes_a_table():
    loss, _ = _mlp_loss()
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
    assert f"{THIS_FILE}:" in by_site
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
    loss, _ = _mlp_loss()
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
    loss, _ = _mlp_loss()
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


class _SplitSaved(lucid.autograd.Function):
    """(x * y, x + y): saves x, None, y and its first output, so the saved list has a gap."""

    @staticmethod
    def forward(ctx, x, y):
        prod = x * y
        ctx.save_for_backward(x, None, y, prod)
        return prod, x + y

    @staticmethod
    def backward(ctx, g_prod, g_sum):
        x, _, y, _ = ctx.saved_tensors
        return g_prod * y + g_sum, g_prod * x + g_sum


def _saved_labels(text):
    return sorted(line.split("label=")[1].split('"')[1] for line in text.splitlines()
                  if 'label="saved ' in line)


@pytest.mark.parametrize("dtype", [lucid.float32, lucid.float64])
@pytest.mark.parametrize("shape", [(), (3,), (2, 0), (2, 3)])
def test_to_dot_shows_what_a_function_saved_like_a_built_in_node(dtype, shape):
    x = lucid.ones(*shape, dtype=dtype, requires_grad=True)
    builtin = _saved_labels(to_dot((x * x.detach()), show_saved=True))   # MulBackward saves one
    function = _saved_labels(to_dot(Square.apply(x), show_saved=True))   # ctx saved x (one)
    name = "float32" if dtype == lucid.float32 else "float64"
    assert builtin == function == [f"saved {shape} {name}"]


def test_to_dot_shows_every_tensor_a_function_saved_and_drops_them_after_backward():
    x = lucid.ones(2, 3, dtype=lucid.float64, requires_grad=True)
    y = lucid.ones(2, 3, dtype=lucid.float64, requires_grad=True)
    prod, total = _SplitSaved.apply(x, y)
    loss = prod.sum() + total.sum()
    assert _saved_labels(to_dot(loss, show_saved=True)) == ["saved (2, 3) float64"] * 3
    assert "saved" not in to_dot(loss)
    loss.backward()
    text = to_dot(loss, show_saved=True)
    assert "_SplitSavedBackward" in text and "saved" not in text    # freed by backward


def test_to_dot_shows_a_function_s_tensors_packed_by_hooks():
    from lucid.autograd.graph import saved_tensors_hooks
    x = lucid.ones(4, dtype=lucid.float64, requires_grad=True)
    with saved_tensors_hooks(lambda t: t.numpy().copy(), lucid.from_numpy):
        y = Square.apply(x)
    assert _saved_labels(to_dot(y, show_saved=True)) == ["saved (4,) float64"]


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


# ------------------------------------------------------------------------------------------------
# DLPack
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.bool_])
def test_dlpack_round_trip_with_numpy_is_zero_copy(dtype):
    a = np.arange(6).reshape(2, 3).astype(dtype)
    t = lucid.from_dlpack(a)
    assert t.dtype == a.dtype and t.shape == (2, 3)
    back = np.from_dlpack(t)
    assert np.shares_memory(back, a)
    assert t.__dlpack_device__() == (1, 0)
    assert_close(lucid.from_dlpack(t), a)


def test_dlpack_refuses_tensors_that_require_grad():
    x = lucid.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="detach"):
        x.__dlpack__()
    assert np.from_dlpack(x.detach()).shape == (2,)


def test_from_dlpack_rejects_unsupported_dtypes():
    with pytest.raises(TypeError, match="unsupported dtype"):
        lucid.from_dlpack(np.zeros(2, dtype=np.complex128))


def test_dlpack_with_torch_when_installed():
    torch = pytest.importorskip("torch", reason="torch is not installed: DLPack with PyTorch "
                                "is checked only where it is")
    t = torch.arange(4, dtype=torch.float32)
    x = lucid.from_dlpack(t)
    t[0] = 10.0
    assert x.numpy()[0] == 10.0                      # shares memory
    back = torch.from_dlpack(lucid.tensor([1.0, 2.0]))
    assert back.tolist() == [1.0, 2.0]
