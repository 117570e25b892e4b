# NumPy interop: a ufunc that meets a tensor (np.float64(0.5) * w, np.ones(2) + t, np.exp(t))
# runs the lucid op and gives a tensor, so results never silently leave lucid or the graph.

cdef dict UFUNC_OPS = {
    np.add: add, np.subtract: sub, np.multiply: mul, np.true_divide: div, np.power: pow,
    np.matmul: matmul, np.maximum: maximum, np.minimum: minimum, np.negative: neg,
    np.exp: exp, np.log: log, np.sqrt: sqrt, np.absolute: abs, np.sin: sin, np.cos: cos,
    np.tanh: tanh,
}

cdef dict UFUNC_COMPARISONS = {
    np.less: 0, np.less_equal: 1, np.equal: 2, np.not_equal: 3, np.greater: 4,
    np.greater_equal: 5,
}


cdef object array_ufunc(object ufunc, str method, tuple inputs, dict kwargs):
    """The lucid op for a NumPy ufunc call on tensors; NotImplemented (NumPy then raises
    TypeError) for ufuncs and methods lucid does not have. With out= NumPy arrays, NumPy
    computes into them from the tensors' values, as the caller asked."""
    cdef object out = kwargs.get("out")
    if out is not None:
        if len(kwargs) == 1 and all(isinstance(o, cnp.ndarray) for o in out):
            arrays = tuple(np.asarray(x) if isinstance(x, Tensor) else x for x in inputs)
            return getattr(ufunc, method)(*arrays, out=out)
        return NotImplemented
    if method != "__call__" or kwargs:
        return NotImplemented
    op = UFUNC_OPS.get(ufunc)
    if op is not None:
        return op(*inputs)
    cmp = UFUNC_COMPARISONS.get(ufunc)
    if cmp is not None and len(inputs) == 2:
        return compare(operand(inputs[0], ufunc.__name__), inputs[1], cmp)
    return NotImplemented
