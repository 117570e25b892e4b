"""Drawing a backward graph: lucid.autograd.graph.to_dot and render.

The DOT text must be stable (the same graph gives the same text, so it can be diffed), name every
node with its creation site, show leaves with shape and dtype and saved tensors on request (a
custom Function's like a built-in node's, hooks' packed values included).
"""
import shutil

import pytest

import lucid
from lucid.autograd.graph import render, to_dot
from support.shared_functions import Square

from .common import MLP_SITE, mlp_loss

# ------------------------------------------------------------------------------------------------
# to_dot / render
# ------------------------------------------------------------------------------------------------

def test_to_dot_is_stable_and_names_nodes_with_sites():
    loss, _ = mlp_loss()
    first, second = to_dot(loss), to_dot(loss)
    assert first == second
    assert first.startswith("digraph backward {") and first.rstrip().endswith("}")
    for name in ("MeanBackward", "SigmoidBackward", "MatmulBackward", "TanhBackward"):
        assert name in first
    assert f"{MLP_SITE}:" in first                          # the creation site, file:line
    assert first.count("leaf (AccumulateGrad)") == 2
    assert "(4, 3) float32" in first and "(3, 2) float32" in first


def test_to_dot_same_graph_rebuilt_gives_the_same_text_modulo_sites():
    a, _ = mlp_loss()
    b, _ = mlp_loss()
    assert to_dot(a) == to_dot(b)


def test_to_dot_show_saved():
    loss, _ = mlp_loss()
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
    loss, _ = mlp_loss()
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
