"""Pytrees of vmap's inputs and outputs: tuples, lists and dicts nest; anything else is a leaf."""


def rebuild(kind, items):
    """A sequence of type kind holding items: a named result tuple (namedtuple, or a tuple
    subclass such as max's (values, indices)) takes them as positional arguments."""
    if kind is tuple or kind is list or not issubclass(kind, tuple):
        return kind(items)
    return kind(*items)


def flatten(tree):
    """(leaves, spec): spec rebuilds the tree from its leaves with unflatten."""
    if isinstance(tree, (tuple, list)):
        leaves, specs = [], []
        for item in tree:
            sub, spec = flatten(item)
            leaves.extend(sub)
            specs.append(spec)
        return leaves, (type(tree), None, specs)
    if isinstance(tree, dict):
        leaves, specs = [], []
        keys = list(tree.keys())
        for k in keys:
            sub, spec = flatten(tree[k])
            leaves.extend(sub)
            specs.append(spec)
        return leaves, (dict, keys, specs)
    return [tree], None


def count(spec):
    if spec is None:
        return 1
    return sum(count(s) for s in spec[2])


def unflatten(leaves, spec):
    it = iter(leaves)
    return _build(it, spec)


def _build(it, spec):
    if spec is None:
        return next(it)
    kind, keys, specs = spec
    items = [_build(it, s) for s in specs]
    if kind is dict:
        return dict(zip(keys, items))
    return rebuild(kind, items)


def describe(spec):
    """A short text of a tree's structure for error messages: (*, [*, *])."""
    if spec is None:
        return "*"
    kind, keys, specs = spec
    inner = ", ".join(describe(s) for s in specs)
    if kind is dict:
        return "{" + ", ".join(f"{k!r}: {describe(s)}" for k, s in zip(keys, specs)) + "}"
    if kind is list:
        return "[" + inner + "]"
    return "(" + inner + ("," if len(specs) == 1 else "") + ")"


def broadcast_prefix(prefix, tree, is_leaf_value):
    """The leaves of prefix matched to the leaves of tree: a leaf of prefix (is_leaf_value(x))
    covers a whole subtree. None when the structures do not match."""
    if is_leaf_value(prefix):
        return [prefix] * count(flatten(tree)[1])
    if isinstance(prefix, (tuple, list)) and isinstance(tree, (tuple, list)):
        if len(prefix) != len(tree):
            return None
        out = []
        for p, t in zip(prefix, tree):
            sub = broadcast_prefix(p, t, is_leaf_value)
            if sub is None:
                return None
            out.extend(sub)
        return out
    if isinstance(prefix, dict) and isinstance(tree, dict):
        if set(prefix) != set(tree):
            return None
        out = []
        for k in tree:
            sub = broadcast_prefix(prefix[k], tree[k], is_leaf_value)
            if sub is None:
                return None
            out.extend(sub)
        return out
    return None
