"""Small custom Functions that several test files use (one definition each)."""
from lucid.autograd import Function


class Square(Function):
    """y = x^2, x saved; no jvp."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2.0 * g * x


class Cube(Function):
    """y = x^3, x saved; no jvp."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3.0 * x * x


class SquareWithJvp(Square):
    """y = x^2, x saved for both modes; jvp 2 x t."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x * x

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return 2.0 * x * t
