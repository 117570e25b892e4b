"""The backward graph: its node base, saved-tensor hooks, and hooks on nodes.

- `Node`: the base of every backward node (`t.grad_fn`); `node.register_prehook(fn)`,
  `node.register_hook(fn)`, `node.metadata`, `node.name()`, `node.next_functions`.
- `saved_tensors_hooks(pack_hook, unpack_hook)`: every tensor saved for backward while the
  block is active is stored as `pack_hook(tensor)` and given back as `unpack_hook(packed)`.
- `disable_saved_tensors_hooks(message)`: entering `saved_tensors_hooks` raises
  `RuntimeError(message)` while the block is active.
- `to_dot(*tensors, show_saved=False)` / `render(*tensors, path=PATH)` (path is required): pictures
  of the graph.
- `GradientEdge`, `get_gradient_edge(t)`, `increment_version(t)`: PyTorch's names (_edges.py);
  backward() and grad() take a GradientEdge wherever they take a tensor.
- `register_multi_grad_hook(tensors, fn, mode="all"|"any")`: one hook over several tensors'
  gradients, per backward (_multi_grad_hook.py).
- `allow_mutation_on_saved_tensors()`: in-place changes of saved tensors allowed; backward sees
  the values at save time (_saved_mutation.py).
"""
from .. import _core
from ._edges import GradientEdge, get_gradient_edge, increment_version
from ._multi_grad_hook import register_multi_grad_hook
from ._saved_mutation import allow_mutation_on_saved_tensors

__all__ = ["Node", "saved_tensors_hooks", "disable_saved_tensors_hooks", "to_dot", "render",
           "GradientEdge", "get_gradient_edge", "increment_version", "register_multi_grad_hook",
           "allow_mutation_on_saved_tensors"]

Node = _core.Node


class saved_tensors_hooks:
    """Pack what backward saves with pack_hook(tensor) -> object and get it back with
    unpack_hook(object) -> Tensor (same shape and dtype). Per thread; the innermost pair
    applies. pack_hook receives an alias of the saved tensor without history."""

    def __init__(self, pack_hook, unpack_hook):
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("saved_tensors_hooks takes two callables: pack_hook(tensor) -> "
                            "object and unpack_hook(object) -> Tensor")
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        _core._push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)
        return self

    def __exit__(self, *exc):
        _core._pop_saved_tensors_hooks()
        return False


class disable_saved_tensors_hooks:
    """While active, entering saved_tensors_hooks raises RuntimeError(error_message)."""

    def __init__(self, error_message):
        self.error_message = str(error_message)

    def __enter__(self):
        _core._push_saved_hooks_disabled(self.error_message)
        return self

    def __exit__(self, *exc):
        _core._pop_saved_hooks_disabled()
        return False


# -- pictures of the graph -------------------------------------------------------------------------

def _saved_of(node):
    """(shape, dtype) of each tensor node still holds for backward, in a stable order: a
    built-in node's own, or what a Function's ctx.save_for_backward gave (one or several)."""
    import gc
    found = _saved_in(gc.get_referents(node))
    ctx = getattr(node, "ctx", None)
    if isinstance(ctx, _core.FunctionCtx):
        found += _saved_in(gc.get_referents(ctx))
    return found


def _saved_in(objects):
    """(shape, dtype) of the live SavedTensors among objects, or inside those that are lists
    or tuples."""
    found = []
    for ref in objects:
        items = ref if type(ref) in (list, tuple) else (ref,)
        found += [(item.shape, item.dtype) for item in items
                  if isinstance(item, _core.SavedTensor) and item.shape is not None]
    return found


def _quote(text):
    """text as a DOT string; line breaks become DOT's \\n escape."""
    escaped = str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + escaped + '"'


def _short_site(site):
    if site is None:
        return None
    path, _, line = site.rpartition(":")
    return f"{path.rsplit('/', 1)[-1]}:{line}"


def to_dot(*tensors, show_saved=False):
    """The backward graph behind tensors as Graphviz DOT text: each node with its name and the
    file:line that created it, leaves with shape and dtype, saved tensors when show_saved.
    The same graph always gives the same text (nodes are numbered in traversal order)."""
    for i, t in enumerate(tensors):
        if not isinstance(t, _core.Tensor):
            raise TypeError(f"to_dot takes Tensors; argument {i} is {type(t).__name__}")
    lines = ["digraph backward {", '  rankdir="BT";',
             '  node [shape=box, fontname="Helvetica", fontsize=10];']
    ids = {}
    order = []

    def name_of(node):
        if id(node) not in ids:
            ids[id(node)] = f"n{len(ids)}"
            order.append(node)
        return ids[id(node)]

    for k, t in enumerate(tensors):
        root = f"out{k}"
        dtype = str(t.dtype)
        lines.append(f'  {root} [label={_quote(f"output {k}{chr(10)}{tuple(t.shape)} {dtype}")}, '
                     'style=filled, fillcolor="#d9ead3"];')
        if t.grad_fn is not None:
            lines.append(f"  {name_of(t.grad_fn)} -> {root};")
    seen = 0
    while seen < len(order):
        node = order[seen]
        seen += 1
        me = ids[id(node)]
        if isinstance(node, _core.AccumulateGrad):
            v = node.variable
            label = f"{tuple(v.shape)} {v.dtype}{chr(10)}leaf (AccumulateGrad)"
            lines.append(f'  {me} [label={_quote(label)}, style=filled, fillcolor="#cfe2f3"];')
            continue
        site = _short_site(node.creation_site)
        label = node.name() + (f"{chr(10)}{site}" if site else "")
        lines.append(f"  {me} [label={_quote(label)}];")
        if show_saved:
            for j, (shape, dtype) in enumerate(_saved_of(node)):
                saved = f"{me}s{j}"
                lines.append(f'  {saved} [label={_quote(f"saved {tuple(shape)} {dtype}")}, '
                             'shape=note, style=filled, fillcolor="#fff2cc"];')
                lines.append(f"  {saved} -> {me} [style=dashed, arrowhead=none];")
        for child, slot in node.next_functions:
            if child is not None:
                lines.append(f"  {name_of(child)} -> {me};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(*tensors, path, show_saved=False):
    """Draw the backward graph to path (.svg, .png or .pdf by its suffix) with Graphviz."""
    import os
    try:
        import graphviz
    except ImportError:
        raise RuntimeError("lucid.autograd.graph.render needs the graphviz Python package and "
                           "Graphviz's `dot` program: pip install 'lucid-autograd[viz]' and "
                           "install Graphviz (e.g. apt-get install graphviz)") from None
    stem, suffix = os.path.splitext(str(path))
    fmt = suffix.lstrip(".").lower() or "svg"
    if fmt not in ("svg", "png", "pdf"):
        raise ValueError(f"render: path must end in .svg, .png or .pdf, not {suffix!r}")
    source = graphviz.Source(to_dot(*tensors, show_saved=show_saved))
    try:
        return source.render(filename=stem, format=fmt, cleanup=True)
    except graphviz.ExecutableNotFound:
        raise RuntimeError("lucid.autograd.graph.render: Graphviz's `dot` program was not found; "
                           "install Graphviz (e.g. apt-get install graphviz) besides "
                           "pip install 'lucid-autograd[viz]'") from None
