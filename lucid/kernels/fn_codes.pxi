# The codes of the one-pass loops' functions (kernels/fn_codes.h), for each module that names
# them: the core (kernels/binary_loops.pxi) and lucid._ops. Not in _core.pxd, which a native op
# reads: the header is lucid's own.

cdef extern from "kernels/fn_codes.h":
    cdef enum LucidFn:                           # the binary functions (FN_NONE: none)
        FN_NONE, FN_MAXIMUM, FN_MINIMUM, FN_XLOGY, FN_COPYSIGN, FN_ATAN2, FN_HYPOT, FN_FMOD,
        FN_REMAINDER, FN_LOGADDEXP, FN_LOGADDEXP2, FN_POW, FN_DIV
    cdef enum LucidFn1:                          # the one-input functions (FN1_NONE: none)
        FN1_NONE, FN1_NEG, FN1_SINC, FN1_CLAMP, FN1_NAN_TO_NUM
