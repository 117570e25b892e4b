"""A small user program that mypy must accept (tests/api/test_typing.py runs mypy on it)."""
import lucid
from lucid import Tensor


class Square(lucid.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


def loss_of(w: Tensor, x: Tensor) -> Tensor:
    h = (x @ w).tanh()
    return (h ** 2).mean() + 0.1 * w.abs().sum()


x: Tensor = lucid.tensor([[1.0, 2.0], [3.0, 4.0]])
w = lucid.randn(2, 3, requires_grad=True)
loss = loss_of(w, x)
loss.backward()
grad: Tensor | None = w.grad
shape: tuple[int, ...] = w.shape
values, indices = lucid.max(x, dim=1)
top = x.max()
parts = x.split(1, dim=0)
first: Tensor = parts[0]
n: int = x.numel()
ok: bool = lucid.allclose(x, x.clone())
y = lucid.zeros(4)
for _ in range(3):
    y = y * 0.5 + lucid.ones(4)
with lucid.no_grad():
    z = lucid.exp(x) - 1.0 + x.sum(dim=0, keepdim=True)
(gw,) = lucid.autograd.grad(loss_of(w, x), [w])
s = Square.apply(lucid.ones(3, requires_grad=True))
sign, logabsdet = lucid.linalg.slogdet(lucid.eye(3))
handle = w.register_hook(lambda g: g * 2)
handle.remove()
print(float(z.sum()), first.dtype, n, ok, top.item(), values.shape, indices.dtype, sign)
