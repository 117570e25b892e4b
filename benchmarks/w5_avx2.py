"""W5 on NumPy's AVX2 path: the same workload with NPY_DISABLE_CPU_FEATURES set so that NumPy
uses its AVX2 kernels even on a CPU with AVX-512 (a kernel choice that wins on one path can lose
5x on the other; lucid picks per path at import, and both must meet the target)."""
from .w5_large_elementwise import (  # noqa: F401  (the workload is W5's, only the env differs)
    ATOL, DESCRIPTION, MEMORY, METRIC, N, NODES, STEPS, TARGETS, autograd_forward,
    numpy_backward, numpy_forward, setup)

ID = "W5/AVX2"
NAME = "large elementwise (NumPy AVX2)"
ENV = {"NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"}
