"""gradcheck/gradgradcheck keywords as PyTorch's (API.md §13): fast_mode, nondet_tol,
check_undefined_grad, check_grad_dtypes, check_backward_ad, raise_exception, masked; what needs
vmap raises ValueError naming the keyword. Each behaviour is compared with torch when it is
installed (the same scenario, the same outcome), and checked on lucid alone otherwise."""
import numpy as np
import pytest

import lucid
from lucid.autograd import Function, GradcheckError, gradcheck, gradgradcheck

try:
    import torch
except ImportError:          # pragma: no cover - torch is only a comparison
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed; "
                                 "pip install torch==2.13.0 to compare with PyTorch")
VALUES = [0.3, -1.2, 2.0, 0.7]


def make_functions(base):
    """The scenarios' Functions, written once against lucid's or torch's Function."""

    class Right(base):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return g * 2 * t

    class Wrong(base):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    class IgnoresGradOutput(base):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2 if bool((g != 0).any()) else g * 0 + 1

    class Noisy(base):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * (2 + float(np.random.default_rng().random()) * 1e-9)

    class TwoOutputs(base):
        @staticmethod
        def forward(ctx, t):
            ctx.set_materialize_grads(False)
            return t * 2, t * 3

        @staticmethod
        def backward(ctx, g1, g2):
            out = None if g1 is None else g1 * 2
            if g2 is not None:
                out = g2 * 3 if out is None else out + g2 * 3
            return out

    class Doubles(base):
        """materialize_grads off: with no gradient for its output backward gets None"""
        @staticmethod
        def forward(ctx, t):
            ctx.set_materialize_grads(False)
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2                      # cannot take None

    class DoublesTakingNone(Doubles):
        @staticmethod
        def backward(ctx, g):
            return None if g is None else g * 2

    class DoublesMaterialized(base):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2                      # gets zeros: materialize_grads is on

    return {c.__name__: c for c in (Right, Wrong, IgnoresGradOutput, Noisy, TwoOutputs, Doubles,
                                    DoublesTakingNone, DoublesMaterialized)}


LUCID_FUNCTIONS = make_functions(Function)
TORCH_FUNCTIONS = make_functions(torch.autograd.Function) if torch is not None else {}


def lucid_outcome(name, **kw):
    x = lucid.tensor(np.array(VALUES), requires_grad=True)
    return _outcome(lambda: gradcheck(LUCID_FUNCTIONS[name].apply, (x,), **kw))


def torch_outcome(name, **kw):
    x = torch.tensor(VALUES, dtype=torch.float64, requires_grad=True)
    return _outcome(lambda: torch.autograd.gradcheck(TORCH_FUNCTIONS[name].apply, (x,), **kw))


def _outcome(run):
    """True/False, or "raises" for a GradcheckError (lucid's and torch's are RuntimeErrors), or
    for the TypeError torch lets out of a backward that cannot take None (lucid reports it as a
    GradcheckError)."""
    try:
        return run()
    except TypeError:
        return "raises"
    except RuntimeError as e:
        assert type(e).__name__ == "GradcheckError", e
        return "raises"


SCENARIOS = [
    ("Right", {}, True),
    ("Right", {"fast_mode": True}, True),
    ("Right", {"fast_mode": True, "check_grad_dtypes": True}, True),
    ("Right", {"check_grad_dtypes": True}, True),
    ("Right", {"masked": True}, True),
    ("Right", {"masked": False}, True),
    ("Wrong", {}, "raises"),
    ("Wrong", {"fast_mode": True}, "raises"),
    ("Wrong", {"raise_exception": False}, False),
    ("Wrong", {"raise_exception": False, "fast_mode": True}, False),
    ("IgnoresGradOutput", {}, "raises"),
    ("IgnoresGradOutput", {"check_undefined_grad": False}, "raises"),
    ("IgnoresGradOutput", {"raise_exception": False}, False),
    ("Noisy", {}, "raises"),
    ("Noisy", {"fast_mode": True}, "raises"),
    ("Noisy", {"nondet_tol": 1e-6}, True),
    ("Noisy", {"nondet_tol": 1e-6, "fast_mode": True}, True),
    ("TwoOutputs", {}, True),
    ("TwoOutputs", {"fast_mode": True}, True),
    ("TwoOutputs", {"check_undefined_grad": False}, True),
    # no gradient for any output: check_undefined_grad runs such a backward (lucid's engine never
    # does, PyTorch's does): None each, or zeros when ctx materializes them
    ("Doubles", {}, "raises"),
    ("Doubles", {"check_undefined_grad": False}, True),
    ("DoublesTakingNone", {}, True),
    ("DoublesMaterialized", {}, True),
]


@pytest.mark.parametrize("name,kw,expected", SCENARIOS)
def test_keyword_outcome(name, kw, expected):
    assert lucid_outcome(name, **kw) == expected


@needs_torch
@pytest.mark.parametrize("name,kw,expected", SCENARIOS)
def test_keyword_outcome_is_torchs(name, kw, expected):
    assert torch_outcome(name, **kw) == expected


def test_messages_carry_pytorchs_phrases():
    x = lucid.tensor(np.array(VALUES), requires_grad=True)
    with pytest.raises(GradcheckError, match="Backward is not reentrant"):
        gradcheck(LUCID_FUNCTIONS["Noisy"].apply, (x,))
    with pytest.raises(GradcheckError, match="backward not multiplied by grad_output"):
        gradcheck(LUCID_FUNCTIONS["IgnoresGradOutput"].apply, (x,))
    with pytest.raises(GradcheckError, match="fast mode"):
        gradcheck(LUCID_FUNCTIONS["Wrong"].apply, (x,), fast_mode=True)
    with pytest.raises(GradcheckError, match="handle undefined output grads"):
        gradcheck(LUCID_FUNCTIONS["Doubles"].apply, (x,))
    assert x.grad is None


def test_undefined_output_grad_that_backward_cannot_take_fails():
    """One output's gradient undefined (None), the other's zero: a backward that cannot take
    that fails the check (GradcheckError, PyTorch's phrase); check_undefined_grad=False skips it."""

    class NoUndefinedWithZero(Function):
        @staticmethod
        def forward(ctx, t):
            ctx.set_materialize_grads(False)
            return t * 2, t * 3

        @staticmethod
        def backward(ctx, g1, g2):
            if g1 is None and not bool((g2 != 0).any()):
                raise RuntimeError("an undefined gradient beside a zero one")
            return (0 if g1 is None else g1 * 2) + (0 if g2 is None else g2 * 3)

    x = lucid.tensor(np.array(VALUES), requires_grad=True)
    assert gradcheck(NoUndefinedWithZero.apply, (x,), check_undefined_grad=False)
    with pytest.raises(GradcheckError, match="handle undefined output grads"):
        gradcheck(NoUndefinedWithZero.apply, (x,))
    assert gradcheck(NoUndefinedWithZero.apply, (x,), raise_exception=False) is False


def test_fast_mode_accepts_forward_ad_and_gradgradcheck():
    x = lucid.tensor(np.array(VALUES), requires_grad=True)
    fn = lambda t: (t.sin() * t, t.exp().sum())  # noqa: E731
    assert gradcheck(fn, (x,), fast_mode=True, check_forward_ad=True)
    assert gradgradcheck(fn, (x,), fast_mode=True)
    assert gradgradcheck(lambda t: t.sin() * t, (x,), check_fwd_over_rev=True)
    assert gradgradcheck(lambda t: t.sin() * t, (x,), gen_non_contig_grad_outputs=True)


def test_fast_mode_catches_a_wrong_second_derivative():
    class WrongSecond(Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t * t

        @staticmethod
        def backward(ctx, g):
            (t,) = ctx.saved_tensors
            return g * 3 * t * t.detach()      # the second derivative misses a term

    x = lucid.tensor(np.array(VALUES), requires_grad=True)
    assert gradcheck(WrongSecond.apply, (x,), fast_mode=True)
    assert gradgradcheck(WrongSecond.apply, (x,), raise_exception=False, fast_mode=True) is False
    assert gradgradcheck(WrongSecond.apply, (x,), raise_exception=False) is False


def test_fast_mode_runs_one_backward_per_output_not_per_entry():
    """Fast mode asks backward once per output (plus the reentrancy and zero-grad checks),
    the full check once per output entry."""
    calls = []

    class Counted(Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            calls.append(1)
            return g * 2

    x = lucid.tensor(np.linspace(-1, 1, 50), requires_grad=True)
    assert gradcheck(Counted.apply, (x,), fast_mode=True, check_undefined_grad=False)
    fast = len(calls)
    calls.clear()
    assert gradcheck(Counted.apply, (x,), check_undefined_grad=False)
    assert fast <= 3 < len(calls)


def test_non_contiguous_input():
    base = lucid.tensor(np.arange(12.0).reshape(3, 4) / 7)
    x = base.detach().T            # a strided leaf
    x.requires_grad_(True)
    assert gradcheck(lambda t: (t * t).sum(0), (x,))
    assert gradcheck(lambda t: (t * t).sum(0), (x,), fast_mode=True)
    np.testing.assert_array_equal(base.numpy(), np.arange(12.0).reshape(3, 4) / 7)


def test_nothing_to_check_raises_value_error_naming_the_keywords():
    x = lucid.tensor(np.array(VALUES), requires_grad=True)
    with pytest.raises(ValueError, match="check_backward_ad"):
        gradcheck(lambda t: t.sin(), (x,), check_backward_ad=False)
    assert gradcheck(lambda t: t.sin(), (x,), check_backward_ad=False, check_forward_ad=True)
    assert x.grad is None


def test_gradgradcheck_keyword_errors():
    x = lucid.tensor(np.array(VALUES), requires_grad=True)
    with pytest.raises(TypeError, match="check_batched_grad"):
        gradgradcheck(lambda t: t.sin(), (x,), check_batched_grad=1)
    with pytest.raises(ValueError, match="check_rev_over_rev"):
        gradgradcheck(lambda t: t.sin(), (x,), check_rev_over_rev=False)
    with pytest.raises(TypeError, match="fast_mode"):
        gradgradcheck(lambda t: t.sin(), (x,), fast_mode="yes")
    np.testing.assert_array_equal(x.detach().numpy(), VALUES)
    assert x.grad is None


@pytest.mark.parametrize("kw,error", [
    ({"fast_mode": "yes"}, TypeError), ({"nondet_tol": "0"}, TypeError),
    ({"nondet_tol": -1.0}, ValueError), ({"nondet_tol": float("nan")}, ValueError),
    ({"check_undefined_grad": None}, TypeError), ({"check_grad_dtypes": 1}, TypeError),
    ({"masked": "no"}, TypeError), ({"raise_exception": None}, TypeError),
])
def test_bad_keyword_values(kw, error):
    x = lucid.tensor(np.array(VALUES), requires_grad=True)
    with pytest.raises(error, match=next(iter(kw))):
        gradcheck(lambda t: t.sin(), (x,), **kw)
    np.testing.assert_array_equal(x.detach().numpy(), VALUES)
    assert x.grad is None

