"""What a row of the op table is (``OpSpec``), the input domains, and the builders that make rows.

tests/support/op_table.py assembles the one table ``OPS`` from rows made here; the family modules
(tests/op_rows_*.py) make their rows with the same builders (``Rows``), so a row reads the same
wherever it is written.

Traits of a row (see op_table's docstring for what each check does with them):
  * ``kind``: ``ELEMENTWISE`` (inputs broadcast together; the random programs pick any shapes),
    ``REDUCTION`` (one input of any shape with at least ``min_ndim`` dims: reductions and ops
    along a dim) or ``FIXED`` (only the listed shapes);
  * ``zero_size``: a 0-size input is allowed; ``apart``: the inputs must differ everywhere (a kink
    where they meet); ``any_layout``: non-contiguous inputs are accepted (view refuses some);
  * ``multi_output``: fn returns a tuple of tensors and ref the matching tuple of arrays; every
    check compares each output, and a random program uses them joined into one vector
    (``joined``: each flattened, concatenated in order), so the step chains like any other;
  * ``fresh_inputs``: the random programs feed every input a fresh leaf sampled from its domain,
    never an intermediate value (the row is smooth only at generic points: no ties in |x|, full
    rank, ...); inputs whose domain is in ``LEAF_DOMAINS`` are always fresh leaves;
  * ``same_dtype``: the inputs must share one dtype (scatter_add raises otherwise, as PyTorch
    does), so a program using the row is not run with a random mix of float32 and float64 leaves;
  * ``inplace``: an ``ELEMENTWISE`` row that writes into (a copy of) its first input: the other
    inputs broadcast to the first one's shape, which is the result's (tests/support/op_rows_inplace.py);
  * ``tol64`` / ``tol32``: value tolerances (rtol = atol) in float64 / float32 (looser for
    linalg, tighter in float32 for the elementwise family);
  * ``gradgrad`` / ``forward_ad`` / ``property``: take part in gradgradcheck / the forward-mode
    check / the random programs; ``reason`` says why a row is kept out of something (it names
    the problem; a row with ``property`` off must have one).

Domains (per input):
  * ``ANY``: standard normal; ``POS``: in [0.5, 2]; ``NONZERO``: +-[0.5, 2]; ``SMALL``: in [-2, 2]
    (the rows that scale it into (-1, 1): asin(0.4 x), tan(0.5 x));
  * ``DISTINCT``: entries pairwise at least ~0.2 apart (no ties for max/min/amax/amin);
  * ``CLAMP``: entries at least 0.1 away from the clamp bounds ``LO``/``HI``;
  * ``WELL``: a well-conditioned square matrix (or batch): Gaussian entries plus 4 I (4 on the
    main diagonal of a non-square one); ``SPD``: a symmetric positive-definite matrix
    X X^T + n I. No intermediate value of a random program is trusted to be either
    (``LEAF_DOMAINS``).
  * the complex domains (``COMPLEX_DOMAINS``): ``C_ANY``: real and imaginary parts standard
    normal; ``C_NONZERO``: |z| in [0.5, 2] (a divisor, |z|); ``C_RIGHT``: real part in [0.5, 2]
    (off the negative real axis, where log, sqrt, angle and pow cut); ``C_SMALL``: |z| <= 0.8
    (inside the unit disc: asin, acos, atan and tan/tanh/sigmoid stay off their cuts and
    poles). An input with a complex domain takes real values too (a real operand meeting a
    complex one); the rows of tests/support/op_rows_complex_values.py have them.
"""
from dataclasses import dataclass
from typing import Callable

import numpy as np

ANY, POS, NONZERO, SMALL, DISTINCT, CLAMP = "any", "positive", "nonzero", "small", "distinct", "clamp"
WELL, SPD = "well_conditioned", "spd"
LEAF_DOMAINS = frozenset({WELL, SPD})
C_ANY, C_NONZERO, C_RIGHT, C_SMALL = "complex", "complex nonzero", "complex right", "complex small"
COMPLEX_DOMAINS = frozenset({C_ANY, C_NONZERO, C_RIGHT, C_SMALL})
LO, HI = -0.5, 0.5
ELEMENTWISE, REDUCTION, FIXED = "elementwise", "reduction", "fixed"


@dataclass(frozen=True)
class OpSpec:
    name: str
    fn: Callable
    ref: Callable
    shapes: tuple          # tuple of shape-tuples, one tuple per case
    domains: tuple         # one per input
    arity: int = -1        # number of tensor inputs (len(domains) when not given)
    kind: str = FIXED      # ELEMENTWISE, REDUCTION or FIXED (see the module docstring)
    min_ndim: int = 0      # REDUCTION: the fewest dims its dim argument needs
    zero_size: bool = True  # ELEMENTWISE / REDUCTION: a 0-size input is allowed
    apart: bool = False    # the inputs must differ everywhere (maximum, minimum)
    any_layout: bool = True  # takes non-contiguous inputs (view raises RuntimeError on some)
    multi_output: bool = False  # fn returns a tuple of tensors (ref: a tuple of arrays)
    fresh_inputs: bool = False  # random programs feed it fresh leaves only
    same_dtype: bool = False  # its inputs must share one dtype (it raises otherwise, by design)
    inplace: bool = False  # writes into its first input: the others broadcast to its shape
    tol64: float = 1e-12   # float64 values: rtol = atol
    tol32: float = 2e-5    # float32 values: rtol = atol
    gradgrad: bool = True  # second derivatives are checked
    forward_ad: bool = True  # tangents are checked (forward-mode AD)
    property: bool = True  # used by the random programs of tests/reliability/test_property.py
    reason: str = ""       # why property (or zero_size) is off: names the problem

    def __post_init__(self):
        if self.arity == -1:
            object.__setattr__(self, "arity", len(self.domains))


def outputs(spec, result):
    """The row's outputs as a tuple (one tensor or array unless the row is multi_output)."""
    return tuple(result) if spec.multi_output else (result,)


def joined(spec):
    """(fn, ref) with one output: a multi_output row's outputs flattened and concatenated."""
    import lucid
    if not spec.multi_output:
        return spec.fn, spec.ref
    return (lambda *a: lucid.cat([t.reshape(-1) for t in spec.fn(*a)]),
            lambda *a: np.concatenate([np.ravel(r) for r in spec.ref(*a)] + [np.zeros(0)]))


def joined_code(spec, code):
    """The code of a step of the row, joined like ``joined`` (code: the row's fn applied)."""
    return f"lucid.cat([t.reshape(-1) for t in {code}])" if spec.multi_output else code


def sample(rng, shape, domain):
    """Random float64 (complex128 for a complex domain) values of shape inside the domain."""
    if domain in COMPLEX_DOMAINS:
        return complex_sample(rng, shape, domain)
    if domain == ANY:
        return rng.standard_normal(shape)
    if domain == SMALL:
        return rng.uniform(-2.0, 2.0, size=shape)
    if domain == DISTINCT:
        n = int(np.prod(shape, dtype=np.int64))
        vals = rng.permutation(n) * 0.3 - 0.15 * n + rng.uniform(-0.05, 0.05, size=n)
        return vals.reshape(shape)
    if domain == CLAMP:
        band = rng.integers(0, 3, size=shape)
        low = rng.uniform(-1.5, LO - 0.1, size=shape)
        mid = rng.uniform(LO + 0.1, HI - 0.1, size=shape)
        high = rng.uniform(HI + 0.1, 1.5, size=shape)
        return np.where(band == 0, low, np.where(band == 1, mid, high))
    if domain == WELL:
        return rng.standard_normal(shape) + 4.0 * np.eye(shape[-2], shape[-1])
    if domain == SPD:
        x = rng.standard_normal(shape)
        return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])
    mag = rng.uniform(0.5, 2.0, size=shape)
    if domain == POS:
        return mag
    if domain == NONZERO:
        return np.where(rng.random(shape) < 0.5, -mag, mag)
    raise ValueError(domain)


def complex_sample(rng, shape, domain):
    """Random complex128 values of shape inside the complex domain."""
    if domain == C_ANY:
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    if domain == C_RIGHT:
        return rng.uniform(0.5, 2.0, size=shape) + 1j * rng.uniform(-2.0, 2.0, size=shape)
    phase = np.exp(1j * rng.uniform(-np.pi, np.pi, size=shape))
    if domain == C_NONZERO:
        return rng.uniform(0.5, 2.0, size=shape) * phase
    if domain == C_SMALL:
        return rng.uniform(0.0, 0.8, size=shape) * phase
    raise ValueError(domain)


BINARY_SHAPES = (
    ((3, 4), (3, 4)),
    ((3, 1), (1, 4)),
    ((2, 3), ()),
    ((), (2, 3)),
    ((4,), (3, 4)),
    ((2, 1, 3), (4, 1)),
    ((), ()),
)
UNARY_SHAPES = (((),), ((5,),), ((2, 3),))
R3 = (((2, 3, 4),),)
M23 = (((2, 3),),)
M34 = (((3, 4),),)


def dims_needed(dim):
    """The fewest dims an input needs for dim (None, an int or a tuple) to be valid."""
    dims = () if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    return max([len(dims)] + [d + 1 if d >= 0 else -d for d in dims])


class Rows(list):
    """A list of rows with the builders that make them; traits given here apply to every row."""

    def __init__(self, **defaults):
        super().__init__()
        self.defaults = defaults

    def op(self, name, fn, ref, shapes, domains, **traits):
        """Add one row."""
        spec = OpSpec(name, fn, ref, tuple(shapes), tuple(domains), len(domains),
                      **{**self.defaults, **traits})
        assert spec.property or spec.reason, f"{name}: a row kept out of the property test needs a reason"
        assert all(len(s) == spec.arity for s in spec.shapes), name
        self.append(spec)
        return spec

    def elementwise(self, name, fn, ref, shapes, domains, **traits):
        """A row whose inputs broadcast together like NumPy and whose output is computed per element."""
        return self.op(name, fn, ref, shapes, domains, kind=ELEMENTWISE, **traits)

    def reduction(self, name, fn, ref, shapes, domains, dim, **traits):
        """A row acting on its one input over dim (None, int or tuple): a reduction, or an op along
        a dim (softmax, cumsum); it takes any shape with enough dims."""
        return self.op(name, fn, ref, shapes, domains, kind=REDUCTION, min_ndim=dims_needed(dim),
                       **traits)
