"""Python source for a table row's lambda, applied to named operands (for printed reproducers).

``row_code(lambda x, y: lucid.where(_cond, x, y), ["v1", "x0"])`` gives
``lucid.where(lucid.tensor(np.array([...], dtype=np.bool_)), v1, x0)``: the lambda's body read from
its source file (by the code object's column positions), its parameters renamed, and the values of
its closure variables and module constants (bounds, masks, index tensors) written out as literals,
so the code runs with nothing but ``import numpy as np`` and ``import lucid``.
"""
import ast
import functools
import inspect
import math
import types

import numpy as np

import lucid


def value_code(v):
    """An expression that rebuilds v (numbers, slices, tuples, lists, NumPy arrays, lucid tensors)."""
    if isinstance(v, lucid.Tensor):
        return f"lucid.tensor({value_code(v.detach().numpy())})"
    if isinstance(v, np.ndarray):
        return f"np.array({value_code(v.tolist())}, dtype=np.{v.dtype.name})"
    if isinstance(v, float) and not math.isfinite(v):
        return f"float({str(v)!r})"
    if isinstance(v, (tuple, list)):
        inner = ", ".join(value_code(e) for e in v)
        return f"({inner},)" if isinstance(v, tuple) and len(v) == 1 else \
            f"({inner})" if isinstance(v, tuple) else f"[{inner}]"
    if v is Ellipsis:
        return "..."
    return repr(v)


def _value_node(v, in_subscript):
    """v as an AST node; slices inside a subscript stay slice syntax (x[1:3], x[:, ::2])."""
    if in_subscript and isinstance(v, slice):
        return ast.Slice(*(None if e is None else ast.Constant(e) for e in (v.start, v.stop, v.step)))
    if in_subscript and isinstance(v, tuple):
        return ast.Tuple([_value_node(e, True) for e in v], ast.Load())
    return ast.parse(value_code(v), mode="eval").body


@functools.lru_cache(maxsize=None)
def lambda_body(fn):
    """The source text of a one-expression lambda's body (read once: later edits of the file do
    not shift it)."""
    code = fn.__code__
    spans = [p for p in code.co_positions()
             if p[0] is not None and p[2] is not None and (p[0], p[2]) != (p[1], p[3])]
    if not spans:
        raise ValueError(f"no source positions for {fn!r}")
    start = min((p[0], p[2]) for p in spans)
    end = max((p[1], p[3]) for p in spans)
    lines = inspect.findsource(fn)[0]
    if start[0] == end[0]:
        return lines[start[0] - 1].encode()[start[1]:end[1]].decode()
    text = [lines[start[0] - 1].encode()[start[1]:].decode()]
    text += lines[start[0]:end[0] - 1]
    text.append(lines[end[0] - 1].encode()[:end[1]].decode())
    return "".join(text)


class _Rename(ast.NodeTransformer):
    def __init__(self, names, values):
        self.names = names          # parameter -> operand name
        self.values = values        # closure / module constant -> value
        self.subscript_depth = 0

    def visit_Subscript(self, node):
        node.value = self.visit(node.value)
        self.subscript_depth += 1
        node.slice = self.visit(node.slice)
        self.subscript_depth -= 1
        return node

    def visit_Name(self, node):
        if node.id in self.names:
            return ast.copy_location(ast.Name(self.names[node.id], ast.Load()), node)
        if node.id in self.values:
            return ast.copy_location(_value_node(self.values[node.id], self.subscript_depth > 0), node)
        return node


def row_code(fn, operands):
    """fn's body as code over the operand names, with its constants written out."""
    code = fn.__code__
    params = code.co_varnames[:code.co_argcount]
    names = dict(zip(params, operands))
    values = {}
    if fn.__closure__:
        values.update(zip(code.co_freevars, (c.cell_contents for c in fn.__closure__)))
    for name in code.co_names:
        if name in fn.__globals__ and name not in ("np", "lucid"):
            v = fn.__globals__[name]
            if not isinstance(v, (types.ModuleType, types.FunctionType, type)):
                values[name] = v
    tree = ast.parse(lambda_body(fn).strip(), mode="eval")
    tree = _Rename(names, values).visit(tree)
    return ast.unparse(ast.fix_missing_locations(tree))
