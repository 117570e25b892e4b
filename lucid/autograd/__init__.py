"""lucid.autograd: backward(), grad(), gradient checks, and graph-mode switches."""
from .. import _core
from .._core import Node, AccumulateGrad, backward, grad
from .gradcheck import gradcheck, gradgradcheck, GradcheckError

__all__ = ["Node", "AccumulateGrad", "backward", "grad", "gradcheck", "gradgradcheck",
           "GradcheckError"]
