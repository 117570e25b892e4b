# Nodes' saved values under PyTorch's attribute names: node._saved_<name> gives the value (a
# Tensor unpacked with the version check, or a plain value), node._raw_saved_<name> the
# SavedTensor itself. Read through Node.__getattr__, so only a failed lookup pays.
#
# Covered: binary arithmetic (Mul/Div: self, other, None where not needed; Pow: self, exponent), the unary
# nodes (self, or result where the op saved its output: exp, tanh, sigmoid, sqrt, ... log
# saves self), ops with a Python number (self or result), matmul (self, mat2), the fused
# second-order nodes (grad_output, output), sum and mean (self_sym_sizes, dim, keepdim).

cdef dict saved_fields(Node node):
    """{PyTorch's name: SavedTensor or plain value} of what node saved; {} for other nodes."""
    cdef SavedTensor s
    if isinstance(node, (AddBackward, SubBackward)):
        return {}                        # they save no tensor
    if isinstance(node, PowBackward):
        return {"self": (<BinaryBackward>node).a, "exponent": (<BinaryBackward>node).b}
    if isinstance(node, BinaryBackward):
        return {"self": (<BinaryBackward>node).a, "other": (<BinaryBackward>node).b}
    if isinstance(node, MatmulBackward):
        return {"self": (<MatmulBackward>node).a, "mat2": (<MatmulBackward>node).b}
    if isinstance(node, UnaryBackward):
        s = (<UnaryBackward>node).saved_x
        return one_saved(s)
    if isinstance(node, ScalarBackward):
        s = (<ScalarBackward>node).saved_x
        return one_saved(s)
    if isinstance(node, FusedGradBackward):
        return {"grad_output": (<FusedGradBackward>node).g, "output": (<FusedGradBackward>node).y}
    if isinstance(node, SumBackward):
        return {"self_sym_sizes": (<SumBackward>node).in_shape, "dim": (<SumBackward>node).dims,
                "keepdim": (<SumBackward>node).keepdim}
    return {}


cdef dict one_saved(SavedTensor s):
    """A node's one saved tensor, named result when it is the node's output, else self."""
    if s is None:
        return {"self": None, "result": None}
    return {"result" if s.is_output else "self": s}


cdef object saved_attribute(Node node, str name):
    """node._saved_<x> / node._raw_saved_<x>; AttributeError when node saved no <x>."""
    cdef bint raw = name.startswith("_raw_saved_")
    cdef str key = name[len("_raw_saved_"):] if raw else name[len("_saved_"):]
    fields = saved_fields(node)
    if key not in fields:
        raise AttributeError(f"'{type(node).__name__}' object has no attribute '{name}'")
    value = fields[key]
    if value is None and node.released:
        raise_freed_graph(node)
    if not isinstance(value, SavedTensor):
        return value
    return value if raw else (<SavedTensor>value).unpack(node)
