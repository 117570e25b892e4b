"""lucid.autograd: backward(), grad(), custom Functions, gradient checks and anomaly mode."""
from .._core import Node, AccumulateGrad, backward, grad
from . import _batched_grad  # noqa: F401  (installs grad's batched calls)
from .function import Function, FunctionCtx, PythonBackwardNode, once_differentiable
from .gradcheck import gradcheck, gradgradcheck, GradcheckError
from .anomaly import (detect_anomaly, set_detect_anomaly, is_anomaly_enabled,
                      is_anomaly_check_nan_enabled)
from .variable import Variable
from . import forward_ad, graph, functional, profiler
from .diagnostics import set_saved_tensor_guard, saved_tensor_guard, set_creation_sites, profile

__all__ = ["Node", "AccumulateGrad", "backward", "grad", "Function", "FunctionCtx",
           "PythonBackwardNode", "once_differentiable", "gradcheck", "gradgradcheck",
           "GradcheckError", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "Variable", "profiler", "set_saved_tensor_guard",
           "saved_tensor_guard", "set_creation_sites", "profile", "forward_ad", "graph",
           "functional"]
