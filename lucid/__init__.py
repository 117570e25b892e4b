"""lucid: a small, very fast autograd core over NumPy."""
import os as _os

from . import _core
from ._core import (
    Tensor, Storage, add, sub, mul, div, pow, neg, matmul, exp, log, sqrt, abs, sin, cos, tanh,
    sigmoid, relu, clamp, maximum, minimum, where, sum, mean, amax, amin, view,
    transpose, permute, flatten, squeeze, unsqueeze, cat, stack, clone,
)
# reshape and expand keep typed C signatures for native ops (lucid/_core.pxd); Python calls go
# through their checked forms
from ._core import checked_reshape as reshape, checked_expand as expand
from ._core import (
    gather, scatter_add, index_select, take_along_dim, masked_fill, masked_select, split, chunk,
    unbind, narrow, flip, roll, tile, tril, triu, diagonal, diag, trace, movedim,
)
# the linear-algebra family is its own module (it also gives Tensor det, slogdet and inverse)
from ._linalg import einsum
from ._core import reduce_max as max, reduce_min as min
from ._core import (
    prod, var, std, norm, logsumexp, softmax, log_softmax, cumsum, cumprod, argmax, argmin,
    reduce_all as all, reduce_any as any,
)
from ._core import mm, bmm, dot, outer
from ._core import (
    log1p, expm1, square, rsqrt, reciprocal, tan, asin, acos, atan, sinh, cosh, erf, atan2,
    sign, floor, ceil, round, trunc, silu, gelu, softplus, leaky_relu, elu,
    eq, ne, lt, le, gt, ge, isnan, isinf, isfinite, logical_and, logical_or, logical_xor,
    logical_not, isclose, allclose,
)
from ._creation import (
    tensor, from_numpy, zeros, ones, empty, full, zeros_like, ones_like, full_like, arange,
    empty_like, eye, linspace, logspace, as_tensor,
)
from ._random import (
    manual_seed, get_rng_state, set_rng_state, randn, rand, randn_like, rand_like, randint,
    randint_like, randperm, normal,
)
from ._core import device, set_default_dtype, get_default_dtype
from ._grad_mode import (
    no_grad, enable_grad, set_grad_enabled, is_grad_enabled, inference_mode,
    is_inference_mode_enabled,
)
from ._core import from_dlpack
from . import autograd
from . import linalg

float32 = _core.float32
float64 = _core.float64
int32 = _core.int32
int64 = _core.int64
bool = _core.bool_

__version__ = "0.1.0"


def get_include():
    """The folder holding the `lucid` package, for a native extension's include path."""
    return _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
from . import func
from . import testing
