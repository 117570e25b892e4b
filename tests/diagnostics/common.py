"""What the diagnostics tests share: small custom Functions and a small network's loss."""
import os

import lucid
from lucid.autograd import Function

MLP_SITE = os.path.basename(__file__)       # where mlp_loss's nodes are made: their creation site


class Double(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        return g * 2.0


class SinFn(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.cos()


class Boom(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        raise KeyError("boom from backward")


class NoGrad(Function):
    """Gives its input no gradient."""
    @staticmethod
    def forward(ctx, x):
        return x * 1.0

    @staticmethod
    def backward(ctx, g):
        return None


def mlp_loss():
    """The mean sigmoid of a two-layer tanh network on fixed random data, and its weights."""
    lucid.manual_seed(0)
    x = lucid.randn(5, 4)
    w1 = lucid.randn(4, 3, requires_grad=True)
    w2 = lucid.randn(3, 2, requires_grad=True)
    return ((x @ w1).tanh() @ w2).sigmoid().mean(), (w1, w2)
