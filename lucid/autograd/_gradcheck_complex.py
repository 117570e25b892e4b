"""gradcheck with complex inputs and outputs: each complex tensor is checked as the pair of its
real and imaginary parts (a last dim of 2), so the real Jacobian gradcheck compares holds all
four partial derivatives, that is both Wirtinger derivatives (as PyTorch's gradcheck checks each
part). The pairs are a real function's leaves and results: view_as_complex turns a pair leaf into
the complex input fn takes, view_as_real turns a complex output into a pair. A backward that
follows lucid's convention (z.grad = dL/dx + i dL/dy) gives the pair's gradient (dL/dx, dL/dy)
through view_as_complex's backward, so the real check tests the convention itself."""
from .. import _core
from .._batching import transforms as _batching
from .._grad_mode import enable_grad, no_grad

_PARTS = ("real", "imaginary")


def _is_complex(x):
    """x is a complex tensor (a batched one too: the real function runs under vmap as well)."""
    return _batching.tensor_or_batched(x) and x.is_complex()


class ComplexParts:
    """Which of fn's inputs and tensor outputs are complex, and the real function over pairs."""

    def __init__(self, fn, complex_inputs, complex_outputs):
        self.fn = fn
        self.complex_inputs = complex_inputs          # one bool per input
        self.complex_outputs = complex_outputs        # one bool per tensor output

    def wrap(self, fn):
        """fn over pair leaves: complex inputs from their pairs, complex outputs as pairs."""
        complex_inputs = self.complex_inputs

        def real_fn(*args):
            with enable_grad():          # the complex inputs are their pairs' history (fn may
                zs = [_core.view_as_complex(a) if c else a     # differentiate them itself,
                      for a, c in zip(args, complex_inputs)]   # as gradgradcheck's does)
            value = fn(*zs)
            items = value if isinstance(value, (tuple, list)) else (value,)
            out = tuple(_core.view_as_real(o) if _is_complex(o) else o for o in items)
            return out if isinstance(value, (tuple, list)) else out[0]
        return real_fn

    def describe(self, output, input, o, k):
        """Which parts a mismatch at real Jacobian entry (o, k) of (output, input) compares."""
        out_part = (f"the {_PARTS[o % 2]} part of its entry {o // 2}"
                    if self.complex_outputs[output] else f"its entry {o}")
        in_part = (f"the {_PARTS[k % 2]} part of its entry {k // 2}"
                   if self.complex_inputs[input] else f"its entry {k}")
        return (f"(complex values are checked as their real and imaginary parts: output "
                f"{output}, {out_part}, with respect to input {input}, {in_part})")


def real_pair(x):
    """A complex tensor's parts as a new float leaf of shape (..., 2), requiring grad as x."""
    with no_grad():
        pair = _core.view_as_real(x.detach()).clone()
    return pair.requires_grad_(x.requires_grad)


def complex_as_real(fn, inputs, tensor_outputs):
    """(fn, inputs, None) when no input or output of fn is complex; else the real problem
    (real_fn, the inputs with each complex one as its pair, ComplexParts)."""
    complex_inputs = [_is_complex(x) for x in inputs]
    with no_grad():
        outputs = tensor_outputs(fn, inputs)
    if not any(complex_inputs) and not any(o.is_complex() for o in outputs):
        return fn, inputs, None
    parts = ComplexParts(fn, complex_inputs, [o.is_complex() for o in outputs])
    real_inputs = tuple(real_pair(x) if c else x for x, c in zip(inputs, complex_inputs))
    return parts.wrap(fn), real_inputs, parts
