# dtypes, the default float dtype and PyTorch-style type promotion.

import threading as _threading

float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
bool_ = np.dtype(np.bool_)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

_SUPPORTED = {float32: "float32", float64: "float64", int32: "int32", int64: "int64", bool_: "bool",
              complex64: "complex64", complex128: "complex128"}

# promotion ranks of an operand: a tensor with dimensions beats a 0-d tensor beats a Python scalar
cdef enum:
    RANK_SCALAR = 0
    RANK_ZERO_DIM = 1
    RANK_DIM = 2


cdef inline int dtype_category(cnp.dtype dt) noexcept:
    """0 bool, 1 integer, 2 floating, 3 complex."""
    cdef char kind = dt.kind
    if kind == b'f':
        return 2
    if kind == b'b':
        return 0
    if kind == b'c':
        return 3
    return 1


cdef int dtype_code(cnp.dtype dt) noexcept:
    """dt's DtypeCode (_core.pxd) by kind and item size; -1 for None, a non-native byte order
    and every other dtype (float16, unsigned, ...)."""
    if dt is None or (dt.byteorder != b'=' and dt.byteorder != b'|'):
        return -1
    cdef char kind = dt.kind
    cdef Py_ssize_t size = dt.itemsize
    if kind == b'b':
        return DTYPE_BOOL
    if kind == b'i':
        return DTYPE_INT32 if size == 4 else DTYPE_INT64 if size == 8 else -1
    if kind == b'f':
        return DTYPE_FLOAT32 if size == 4 else DTYPE_FLOAT64 if size == 8 else -1
    if kind == b'c':
        return DTYPE_COMPLEX64 if size == 8 else DTYPE_COMPLEX128 if size == 16 else -1
    return -1


def _debug_dtype_code(dtype):
    """Testing hook, private: dtype_code(numpy.dtype(dtype)), or of None."""
    return dtype_code(None if dtype is None else np.dtype(dtype))


# is_float_dtype(dt): _core_internal.pxi (inline in every module of lucid)


cdef inline int operand_rank(Tensor t) noexcept:
    if t._wrapped_number:
        return RANK_SCALAR
    return RANK_DIM if ndim_of(t.data) > 0 else RANK_ZERO_DIM


# Note [Default dtype]
#   The float dtype lucid picks when nothing else decides it: tensors of Python floats, zeros(),
#   randn(), arange() of floats, and integer operands of float-only ops (sqrt, /, sigmoid, a
#   Python float meeting an int tensor). Process-wide, as PyTorch's set_default_dtype: one C
#   global, read with no call on the hot paths; set_default_dtype writes it under a lock.
cdef cnp.dtype lucid_default_float = float32
_default_dtype_lock = _threading.Lock()


cdef inline cnp.dtype default_float_dtype():
    """The default float dtype (Note [Default dtype])."""
    return lucid_default_float


def set_default_dtype(d):
    """Make d (lucid.float32 or lucid.float64) the default float dtype, process-wide."""
    global lucid_default_float
    cdef object dt = None
    if d is not None:                    # np.dtype(None) would be float64
        try:
            dt = np.dtype(d)
        except (TypeError, ValueError):
            pass
    if dt is None or (dt != float32 and dt != float64):
        raise TypeError(f"set_default_dtype: only floating-point types are supported as the "
                        f"default type (lucid.float32 or lucid.float64), not {d!r}")
    with _default_dtype_lock:
        lucid_default_float = float32 if dt == float32 else float64


def get_default_dtype():
    """The default float dtype: lucid.float32 unless set_default_dtype changed it."""
    return lucid_default_float


cdef inline cnp.dtype complex_of(cnp.dtype dt):
    """The complex dtype with float dtype dt's precision (complex64 for float32)."""
    return complex64 if dt.itemsize == 4 else complex128


cdef cnp.dtype float_with_complex(cnp.dtype f, cnp.dtype c, bint float_ranks_higher):
    """A float operand f meeting a complex one c of no higher rank: f's precision when f ranks
    higher (float64 + 1j -> complex128), else the wider (float64 + complex64 -> complex128)."""
    if float_ranks_higher or f.itemsize * 2 >= c.itemsize:
        return complex_of(f)
    return c


cdef cnp.dtype default_dtype_of_category(int category):
    if category == 2:
        return lucid_default_float
    if category == 3:
        return complex_of(lucid_default_float)
    if category == 1:
        return int64
    return bool_


cdef cnp.dtype result_dtype(Tensor a, Tensor b):
    """The dtype of a binary op's result, promoted like PyTorch."""
    cdef cnp.dtype da = descr(a.data)
    cdef cnp.dtype db = descr(b.data)
    if da is db and not (a._wrapped_number or b._wrapped_number):
        return da
    cdef int ca = dtype_category(da), cb = dtype_category(db)
    cdef int category = ca if ca > cb else cb
    cdef int ra = operand_rank(a) if ca == category else -1
    cdef int rb = operand_rank(b) if cb == category else -1
    cdef int rank = ra if ra > rb else rb
    if category == 3 and ca == 2 and operand_rank(a) >= rb:   # a float operand ranked with or
        return float_with_complex(da, db, operand_rank(a) > rb)  # above the complex one
    if category == 3 and cb == 2 and operand_rank(b) >= ra:
        return float_with_complex(db, da, operand_rank(b) > ra)
    if rank == RANK_SCALAR:
        return default_dtype_of_category(category)
    if ra == rb:
        return da if da.itemsize >= db.itemsize else db
    return da if ra > rb else db


def dtype_name(dt):
    """'lucid.float32' for a dtype lucid supports."""
    return "lucid." + _SUPPORTED.get(np.dtype(dt), str(dt))


cdef object as_supported_dtype(object dtype, str op):
    """Normalise op's dtype argument; TypeError naming op for one lucid does not support."""
    if dtype is None:
        return None
    cdef object dt
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):          # ValueError: NumPy's for some strings and lists
        raise TypeError(f"{op}: unsupported dtype {dtype!r}; use lucid.float32, float64, int32, "
                        "int64, bool, complex64 or complex128") from None
    if dt not in _SUPPORTED:
        raise TypeError(f"{op}: unsupported dtype {dt}; use lucid.float32, float64, int32, int64, "
                        "bool, complex64 or complex128")
    if dt.kind == 'c':
        note_complex()
    return dt


SUPPORTED_DTYPES = frozenset(_SUPPORTED)


def as_dtype(dtype, op="dtype"):
    """dtype as a numpy dtype lucid supports (TypeError naming op otherwise)."""
    return as_supported_dtype(dtype, op)
