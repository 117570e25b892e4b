"""lucid's dtype codes (DtypeCode in lucid/_core.pxd, dtype_code() in lucid/base/dtypes.pxi, reached
through the private testing hook lucid._core._debug_dtype_code): the five dtypes of today's
tensors and the two complex ones reserved for later; -1 for everything else. Complex values are
still refused by every way of making a tensor, with the messages of before."""
import numpy as np
import pytest

import lucid
from lucid import _core

# the DtypeCode enum, in its order
CODES = [(np.bool_, 0), (np.int32, 1), (np.int64, 2), (np.float32, 3), (np.float64, 4),
         (np.complex64, 5), (np.complex128, 6)]


@pytest.mark.parametrize("dtype,code", CODES, ids=[np.dtype(d).name for d, _ in CODES])
def test_each_dtype_has_its_code(dtype, code):
    assert _core._debug_dtype_code(dtype) == code


def test_codes_are_distinct_and_cover_lucids_dtypes():
    assert sorted(code for _, code in CODES) == list(range(7))
    assert {np.dtype(d) for d, code in CODES} == set(_core.SUPPORTED_DTYPES)


@pytest.mark.parametrize("alias,code", [("q", 2), ("l", 2), ("i", 1), ("?", 0), ("d", 4),
                                        ("f", 3), ("F", 5), ("D", 6), ("=f8", 4), ("|b1", 0)])
def test_aliases_of_the_same_dtype_share_its_code(alias, code):
    assert _core._debug_dtype_code(alias) == code


OTHERS = [np.float16, np.int8, np.int16, np.uint8, np.uint32, np.uint64, object, "U3", "S2",
          "datetime64[s]", "timedelta64[ms]", [("a", np.float64)], (np.float64, (2,)),
          np.dtype(np.float64).newbyteorder("S"), np.dtype(np.int32).newbyteorder("S"),
          np.dtype(np.complex128).newbyteorder("S")]
if np.dtype(np.longdouble).itemsize not in (4, 8):
    OTHERS += [np.longdouble, np.clongdouble]


@pytest.mark.parametrize("dtype", OTHERS, ids=[str(np.dtype(d)) for d in OTHERS])
def test_other_dtypes_have_no_code(dtype):
    assert _core._debug_dtype_code(dtype) == -1


def test_none_has_no_code():
    assert _core._debug_dtype_code(None) == -1


SUPPORTED_WORDS = "lucid supports float32, float64, int32, int64, bool, complex64 and complex128"
DTYPE_WORDS = "use lucid.float32, float64, int32, int64, bool, complex64 or complex128"


@pytest.mark.parametrize("make,error,message", [     # complex: tests/ops/test_complex.py
    (lambda: lucid.from_numpy(np.array([1], dtype=np.float16)), TypeError,
     f"from_numpy: unsupported dtype float16; {SUPPORTED_WORDS}"),
    (lambda: lucid.from_dlpack(np.array([1], dtype=np.uint8)), TypeError,
     f"from_dlpack: unsupported dtype uint8; {SUPPORTED_WORDS}"),
    (lambda: lucid.tensor(np.zeros(2), dtype=np.float16), TypeError,
     f"tensor: unsupported dtype float16; {DTYPE_WORDS}"),
    (lambda: lucid.ones(2).to(np.uint8), TypeError, f"to: unsupported dtype uint8; {DTYPE_WORDS}"),
])
def test_unsupported_dtypes_are_refused(make, error, message):
    with pytest.raises(error) as info:
        make()
    assert str(info.value) == message
