"""Python source for a table row's callable, applied to named operands (for printed reproducers).

``row_code(lambda x, y: lucid.where(_cond, x, y), ["v1", "x0"])`` gives
``lucid.where(lucid.tensor(np.array([...], dtype=np.bool_)), v1, x0)``: the lambda's body read from
its source file (by the code object's column positions), its parameters renamed, and the values of
its closure variables and module constants (bounds, masks, index tensors) written out as literals,
so the code runs with nothing but ``import numpy as np`` and ``import lucid``.
A row's callable may also be a one-expression ``def`` (its ``return`` expression is used) or a
lucid function (``lucid.log1p`` gives ``lucid.log1p(v1)``); a call to a one-expression helper
inside the body (``sym(a)``, ``_i(G_IDX)``) is written out the same way, so the helper need not
exist where the code runs (a call to any other helper is left as it is). A row's callable of
any other sort is refused (ValueError) when the row is read.
"""
import ast
import copy
import functools
import inspect
import math
import textwrap
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


@functools.lru_cache(maxsize=None)
def _def_body(fn):
    """The return expression of a one-expression def (its docstring aside)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    body = [st for st in tree.body[0].body
            if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        raise ValueError(f"{fn.__qualname__} is not a one-expression function: make it a lambda")
    return ast.unparse(body[0].value)


def _lucid_name(fn):
    """'lucid.log1p' / 'lucid.linalg.solve' when fn is that public lucid function, else None."""
    name = getattr(fn, "__name__", "")
    for path, module in (("lucid", lucid), ("lucid.linalg", lucid.linalg)):
        if getattr(module, name, None) is fn:
            return f"{path}.{name}"
    return None


def _body(fn):
    """fn's body as source text, for a lambda or a one-expression def."""
    if not isinstance(fn, types.FunctionType):
        raise ValueError(f"{fn!r} is neither a lambda, a one-expression def nor a lucid function")
    return lambda_body(fn) if fn.__name__ == "<lambda>" else _def_body(fn)


def _inlinable(v):
    """A test helper written as one expression (else a call to it is left as it is)."""
    if not isinstance(v, types.FunctionType) or v.__module__.split(".")[0] in ("lucid", "numpy"):
        return False
    try:
        _body(v)
    except (ValueError, OSError, TypeError):
        return False
    return True


def _expr(fn, args):
    """fn applied to the AST nodes args, with its constants written out and helpers inlined."""
    lucid_name = _lucid_name(fn)
    if lucid_name is not None:
        return ast.Call(ast.parse(lucid_name, mode="eval").body, list(args), [])
    code = fn.__code__
    params = code.co_varnames[:code.co_argcount]
    names = dict(zip(params, args))
    values, helpers = {}, {}
    if fn.__closure__:
        values.update(zip(code.co_freevars, (c.cell_contents for c in fn.__closure__)))
    for name in code.co_names:
        if name in fn.__globals__ and name not in ("np", "lucid"):
            v = fn.__globals__[name]
            if _inlinable(v):
                helpers[name] = v
            elif isinstance(v, types.ModuleType) and v.__name__.startswith(("lucid", "numpy")):
                values[name] = v            # an alias (L = lucid.linalg): written as its path
            elif not isinstance(v, (types.ModuleType, types.FunctionType, type)):
                values[name] = v
    tree = ast.parse(_body(fn).strip(), mode="eval").body
    return _Rename(names, values, helpers).visit(tree)


class _Rename(ast.NodeTransformer):
    def __init__(self, names, values, helpers):
        self.names = names          # parameter -> the operand's AST
        self.values = values        # closure / module constant -> value
        self.helpers = helpers      # one-expression helper function -> itself (inlined)
        self.subscript_depth = 0

    def visit_Subscript(self, node):
        node.value = self.visit(node.value)
        self.subscript_depth += 1
        node.slice = self.visit(node.slice)
        self.subscript_depth -= 1
        return node

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id in self.helpers and not node.keywords:
            return _expr(self.helpers[node.func.id], [self.visit(a) for a in node.args])
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id in self.names:
            return copy.deepcopy(self.names[node.id])
        if node.id in self.values:
            v = self.values[node.id]
            new = ast.parse(v.__name__.replace("numpy", "np", 1), mode="eval").body \
                if isinstance(v, types.ModuleType) else _value_node(v, self.subscript_depth > 0)
            return ast.copy_location(new, node)
        return node


def row_code(fn, operands):
    """fn applied to the operand names as code, with its constants written out."""
    tree = _expr(fn, [ast.Name(n, ast.Load()) for n in operands])
    return ast.unparse(ast.fix_missing_locations(tree))
