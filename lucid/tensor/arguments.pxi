# Checked arguments: each public op converts what it is given with these helpers, so that a bad
# value raises TypeError/ValueError/IndexError naming the op and the argument, never a crash.

cdef Tensor scalar_operand(object value):
    """A Python number as a 0-d tensor that ranks below every tensor in promotion."""
    cdef Tensor t
    if isinstance(value, bool):
        t = wrap(np.array(value, dtype=bool_))
    elif isinstance(value, int):
        t = wrap(np.array(value, dtype=int64 if -2**63 <= value < 2**63 else float64))
    elif isinstance(value, float):
        t = wrap(np.array(value, dtype=float64))
    elif isinstance(value, np.generic) and np.dtype(type(value)) in _SUPPORTED and \
            not isinstance(value, np.complexfloating):     # complex: operand()
        t = wrap(np.array(value))
    else:
        return None
    t._wrapped_number = True
    return t


cdef void check_int_fits(object value, cnp.dtype dt, str op) except *:
    """RuntimeError when value, a Python int, does not fit integer dtype dt (PyTorch's words);
    nothing for other values and dtypes."""
    if type(value) is not int or dt.kind != b'i':
        return
    cdef int overflow = 0
    cdef long long v = PyLong_AsLongLongAndOverflow(value, &overflow)
    if overflow == 0 and (dt.itemsize == 8 or -2147483648 <= v <= 2147483647):
        return
    raise RuntimeError(f"{op}: value {value} cannot be converted to type {dtype_name(dt)} "
                       "without overflow")


cdef void check_scalar_fits(object value, Tensor other, cnp.dtype dt, str op) except *:
    """A Python int meeting an integer or bool tensor must fit the result's integer dtype, or
    int64 when the result is not an integer (it would silently become a float)."""
    if type(value) is int and not is_float_dtype(descr(other.data)):
        check_int_fits(value, int64 if is_float_dtype(dt) else dt, op)


cdef Tensor operand(object x, str op):
    """A tensor for an op's argument: a Tensor as is, a Python number wrapped; else TypeError."""
    if isinstance(x, Tensor):
        return <Tensor>x
    cdef Tensor t = scalar_operand(x)
    if t is not None:
        return t
    if isinstance(x, cnp.ndarray):
        if x.dtype not in _SUPPORTED:
            raise TypeError(f"{op}: unsupported array dtype {x.dtype}")
        if x.dtype.kind == "c":
            note_complex()
        return wrap(x)
    if isinstance(x, (complex, np.complexfloating)):     # Note [Complex guard]
        note_complex()
        if op not in COMPLEX_OPS and op not in COMPLEX_NUMBER_OPS:
            raise complex_refusal(op)
        t = wrap(np.array(x, dtype=complex128))
        t._wrapped_number = True
        return t
    raise TypeError(f"{op}: expected a Tensor or a number, got {type(x).__name__}")


cdef tuple shape_arg(tuple args):
    """Accept f(2, 3) and f((2, 3)) alike."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return args


# -- checked arguments: a bad one raises TypeError/ValueError/IndexError naming the op -----------

cdef Tensor refuse_non_tensor(object x, str op, str arg):
    raise TypeError(f"{op}: argument '{arg}' must be a Tensor, not {type(x).__name__}")


cdef inline Tensor tensor_arg(object x, str op, str arg):
    """x when it is a Tensor, else TypeError naming op and arg (a list or a number is refused,
    not converted: PyTorch refuses them where an op wants a tensor)."""
    if isinstance(x, Tensor):
        return <Tensor>x
    return refuse_non_tensor(x, op, arg)


cdef inline bint is_integer(object x) noexcept:
    """An int, a NumPy integer or a one-element integer tensor: what __index__ takes (bool is
    not, as in PyTorch)."""
    return PyIndex_Check(x) and x is not True and x is not False


cdef Py_ssize_t int_arg(object x, str op, str arg) except? -1:
    """x as a C integer: TypeError unless an integer, ValueError when it needs more than 64 bits."""
    if not is_integer(x):
        raise TypeError(f"{op}: argument '{arg}' must be an int, not {type(x).__name__}")
    try:
        return x
    except OverflowError:
        raise ValueError(f"{op}: argument '{arg}' is {x}, which does not fit in a 64-bit "
                         "integer") from None
    except TypeError as e:               # an __index__ that refuses: a float tensor
        raise TypeError(f"{op}: argument '{arg}' must be an int, not {type(x).__name__} ({e})") \
            from None


cdef double float_arg(object x, str op, str arg) except? -1.0:
    """x as a C double: TypeError unless a real number (an int, a float, a NumPy number)."""
    if x is True or x is False or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{op}: argument '{arg}' must be a number, not {type(x).__name__}")
    return float(x)


cdef tuple seq_arg(object seq, str op, str arg):
    """seq as a tuple: TypeError naming op and arg unless a sequence (an int, a string and a
    non-iterable are not)."""
    if type(seq) is tuple:
        return <tuple>seq
    if not isinstance(seq, list) and (is_integer(seq) or isinstance(seq, (str, bytes))
                                      or not hasattr(seq, "__iter__")):
        raise TypeError(f"{op}: argument '{arg}' must be a sequence of ints, not "
                        f"{type(seq).__name__}")
    return tuple(seq)


cdef tuple int_tuple(object seq, str op, str arg):
    """seq (a sequence of integers) as a tuple of C integers, each checked by int_arg."""
    return tuple([int_arg(v, op, arg) for v in seq_arg(seq, op, arg)])


cdef Py_ssize_t normalize_dim(object dim, Py_ssize_t ndim, str op) except -1:
    """dim counted from the front (a negative dim counts from the end; a 0-d tensor takes 0 and
    -1): TypeError unless an integer, IndexError out of range, both naming op (PyTorch's words)."""
    cdef Py_ssize_t n = ndim if ndim > 0 else 1, d
    if not is_integer(dim):
        raise TypeError(f"{op}: dim must be an int, not {type(dim).__name__}")
    try:
        d = dim
    except OverflowError:
        d = n                            # out of range whatever the tensor
    except TypeError as e:               # an __index__ that refuses: a float tensor
        raise TypeError(f"{op}: dim must be an int, not {type(dim).__name__} ({e})") from None
    if d < -n or d >= n:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return d + n if d < 0 else d
