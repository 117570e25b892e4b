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
from conftest import assert_close
from shared_functions import Square


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
    assert "test_observability.py:" in first                 # the creation site, file:line
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
    assert "test_observability.py:" in by_site
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
