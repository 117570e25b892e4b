# The one-pass backward of the elementwise functions (kernels/binary_loops.pxi), taken where
# nothing records: grad mode off (a backward without create_graph) and no dual level. Under
# create_graph, or with tangents to carry, the nodes apply their rules, which are lucid ops and
# record (double backward and forward-over-reverse differentiate them).


cdef inline bint fusing() noexcept:
    """Does nothing record here? Then a backward may compute its gradients by the loops."""
    return not grad_enabled() and not fw_active()


cdef tuple fused_binary_grads(BinaryBackward node, int fn, Tensor g, Tensor x, Tensor y):
    """The gradients of node's inputs x, y (z = fn(x, y), neither broadcast) by one pass over g,
    x, y; None when the loops do not apply (something records, not a fast triple, or as large
    as fn's limit: kernels/binary_loops.pxi)."""
    if not (fusing() and fast_pair(x.data, y.data) and fast_pair(g.data, x.data) and
            cnp.PyArray_SIZE(<cnp.ndarray>x.data) < fn2_limits[fn]):
        return None
    return wrapped_pair(fast_fn2_grads(fn, g.data, x.data, y.data, needs(node, 0),
                                       needs(node, 1)))


cdef tuple wrapped_pair(tuple arrays):
    """Two gradient arrays (either None) as tensors."""
    ga, gb = arrays
    return (None if ga is None else wrap(ga), None if gb is None else wrap(gb))


cdef class Fn1Backward(RuleBackward):
    """RuleBackward of a one-input function with a one-pass backward loop (fn, a LucidFn1): the
    loop where nothing records and g, x are a small fast pair, else the rule."""
    # its field (fn) is declared in _core_internal.pxi: lucid._ops subclasses it

    cdef tuple apply(self, tuple grads):
        cdef Tensor g = grads[0]
        cdef Tensor x
        if self.fn != FN1_NONE and not self.saved_is_output and fusing():
            x = self.saved_x.unpack(self)
            if fast_pair(g.data, x.data) and small_fast(x.data):
                return (wrap(fast_fn1_grad(self.fn, g.data, x.data, 0, 0, False, False)),)
            return (self.rule(g, x, None),)
        return RuleBackward.apply(self, grads)
