"""W6 backward replay: W1's graph built once, backward with ``retain_graph=True`` timed alone.

Engine traversal alone.  Before every backward, outside the timed region, the leaf's ``.grad``
is set to None (for every library), so each timed backward allocates the gradient afresh.
"""
from . import _harness as h
from . import w1_deep_chain as w1

ID = "W6"
NAME = "backward replay"
DESCRIPTION = "W1's graph built once; loss.backward(retain_graph=True) timed alone"
METRIC = "bwd"
NODES = w1.NODES
NODE_UNIT = "node"
TARGETS = {"lucid/torch": 0.03}
MEMORY = False


def setup(lib, quick):
    x0 = w1.leaf_values()
    if lib.name == "numpy":
        x = x0.copy()
        return h.numpy_case(None, lambda _: w1.numpy_backward(x))
    x = lib.leaf(x0)
    loss = w1.autograd_forward(x)
    return h.autograd_case(lib, [x], None, lambda out: out.backward(retain_graph=True),
                           state=loss)
