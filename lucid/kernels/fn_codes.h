/* lucid/kernels/fn_codes.h -- the codes of the one-pass loops' functions (kernels/binary_loops.h),
   alone, so that every module reads them (_core_internal.pxi) without compiling the loops. */
#ifndef LUCID_FN_CODES_H
#define LUCID_FN_CODES_H

/* the binary functions' codes: the forward of each but FN_DIV (arith's typed loop), and the
   backward of each; FN_NONE (0, a node's field before it is set): none */
enum LucidFn {
    FN_NONE, FN_MAXIMUM, FN_MINIMUM, FN_XLOGY, FN_COPYSIGN, FN_ATAN2, FN_HYPOT, FN_FMOD,
    FN_REMAINDER, FN_LOGADDEXP, FN_LOGADDEXP2, FN_POW, FN_DIV
};

/* the one-input functions' codes (clamp's and nan_to_num's constants are arguments) */
enum LucidFn1 { FN1_NONE, FN1_NEG, FN1_SINC, FN1_CLAMP, FN1_NAN_TO_NUM };

#endif
