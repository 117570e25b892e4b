"""The random constructors of API.md section 13 (rand_like randn_like randint randint_like randperm
normal, with rand and randn): PyTorch's signatures, seeded by manual_seed, their dtypes, and the
errors of bad arguments (which draw nothing)."""
import numpy as np
import pytest

import lucid

X = lambda: lucid.zeros(300, 40, dtype=lucid.float64)        # noqa: E731


def draws():
    """One call of each random constructor."""
    return [lucid.randn(3), lucid.rand(2, 2), lucid.randn_like(lucid.zeros(3)),
            lucid.rand_like(lucid.zeros(3)), lucid.randint(10, (4,)),
            lucid.randint_like(lucid.zeros(4), 3, 9), lucid.randperm(6),
            lucid.normal(0.0, 2.0, (3,)), lucid.normal(lucid.zeros(3), lucid.ones(3))]


def test_manual_seed_makes_every_constructor_reproducible():
    lucid.manual_seed(1234)
    first = [t.tolist() for t in draws()]
    lucid.manual_seed(1234)
    assert [t.tolist() for t in draws()] == first
    lucid.manual_seed(1235)
    assert [t.tolist() for t in draws()] != first


def test_rng_state_round_trips_through_the_new_constructors():
    lucid.manual_seed(0)
    state = lucid.get_rng_state()
    a = lucid.randint(0, 100, (5,)).tolist() + lucid.randperm(5).tolist()
    lucid.set_rng_state(state)
    assert lucid.randint(0, 100, (5,)).tolist() + lucid.randperm(5).tolist() == a


def test_like_forms_copy_shape_and_dtype():
    x = X()
    for t in (lucid.randn_like(x), lucid.rand_like(x), lucid.randint_like(x, 5)):
        assert t.shape == x.shape and t.dtype == lucid.float64 and not t.requires_grad
    assert lucid.rand_like(x, dtype=lucid.float32).dtype == lucid.float32
    r = lucid.randn_like(x, requires_grad=True)
    assert r.requires_grad and r.is_leaf
    u = lucid.rand_like(x).numpy()
    assert u.min() >= 0.0 and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.01
    n = lucid.randn_like(x).numpy()
    assert abs(n.mean()) < 0.02 and abs(n.std() - 1.0) < 0.02


def test_randint_overloads():
    lucid.manual_seed(5)
    for t, low, high, shape in ((lucid.randint(5, (300, 40)), 0, 5, (300, 40)),
                                (lucid.randint(-3, 2, (1000,)), -3, 2, (1000,)),
                                (lucid.randint(5, size=(1000,)), 0, 5, (1000,)),
                                (lucid.randint(low=2, high=7, size=[1000]), 2, 7, (1000,)),
                                (lucid.randint(high=4, size=(1000,)), 0, 4, (1000,))):
        v = t.numpy()
        assert t.dtype == lucid.int64 and t.shape == shape
        assert set(np.unique(v)) == set(range(low, high))       # every value, none outside
    assert lucid.randint(3, ()).shape == ()
    assert lucid.randint(3, (0,)).shape == (0,)
    big = lucid.randint(0, 2**63 - 1, (8,)).numpy()
    assert big.dtype == np.int64 and (big >= 0).all()


def test_randint_dtypes():
    assert lucid.randint(5, (4,), dtype=lucid.int32).dtype == lucid.int32
    f = lucid.randint(5, (200,), dtype=lucid.float32)
    assert f.dtype == lucid.float32 and set(np.unique(f.numpy())) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    g = lucid.randint(5, (3,), dtype=lucid.float64, requires_grad=True)
    assert g.requires_grad and g.is_leaf
    b = lucid.randint(2, (200,), dtype=lucid.bool)
    assert b.dtype == lucid.bool and set(np.unique(b.numpy())) == {False, True}


def test_randint_like_overloads():
    i = lucid.zeros(1000, dtype=lucid.int32)
    t = lucid.randint_like(i, 3)
    assert t.dtype == lucid.int32 and set(np.unique(t.numpy())) == {0, 1, 2}
    t = lucid.randint_like(i, 3, 6)
    assert set(np.unique(t.numpy())) == {3, 4, 5}
    t = lucid.randint_like(i, low=1, high=3, dtype=lucid.int64)
    assert t.dtype == lucid.int64 and set(np.unique(t.numpy())) == {1, 2}


def test_randperm():
    lucid.manual_seed(2)
    p = lucid.randperm(50)
    assert p.dtype == lucid.int64 and sorted(p.tolist()) == list(range(50))
    assert p.tolist() != list(range(50))
    assert lucid.randperm(0).shape == (0,) and lucid.randperm(0).dtype == lucid.int64
    assert sorted(lucid.randperm(7, dtype=lucid.int32).tolist()) == list(range(7))
    f = lucid.randperm(5, dtype=lucid.float64, requires_grad=True)
    assert f.dtype == lucid.float64 and f.requires_grad and sorted(f.tolist()) == [0, 1, 2, 3, 4]


def test_normal_with_numbers_and_size():
    lucid.manual_seed(4)
    t = lucid.normal(2.0, 3.0, size=(400, 50))
    v = t.numpy()
    assert t.dtype == lucid.float32 and t.shape == (400, 50)
    assert abs(v.mean() - 2.0) < 0.05 and abs(v.std() - 3.0) < 0.05
    assert lucid.normal(0, 1, (2,), dtype=lucid.float64).dtype == lucid.float64
    r = lucid.normal(0.0, 1.0, (2,), requires_grad=True)
    assert r.requires_grad and r.is_leaf
    assert lucid.normal(1.0, 0.0, (3,)).tolist() == [1.0, 1.0, 1.0]
    assert lucid.normal(lucid.tensor(0.5), lucid.tensor(0.0), size=(2,)).tolist() == [0.5, 0.5]


def test_normal_with_tensors_broadcasts():
    lucid.manual_seed(6)
    mean = lucid.tensor([[0.0], [10.0]], dtype=lucid.float64)
    std = lucid.tensor([0.0, 1.0, 2.0], dtype=lucid.float32)
    t = lucid.normal(mean, std)
    v = t.numpy()
    assert t.shape == (2, 3) and t.dtype == lucid.float64        # mean's dtype
    assert v[:, 0].tolist() == [0.0, 10.0]                         # std 0: exactly the mean
    assert lucid.normal(lucid.zeros(4), 0.0).tolist() == [0.0] * 4
    s = lucid.normal(5.0, lucid.zeros(3, dtype=lucid.float64))
    assert s.dtype == lucid.float64 and s.tolist() == [5.0] * 3
    assert lucid.normal(mean=lucid.zeros(2)).shape == (2,)        # std defaults to 1
    wide = lucid.normal(lucid.full((20000,), 3.0), lucid.full((20000,), 2.0)).numpy()
    assert abs(wide.mean() - 3.0) < 0.06 and abs(wide.std() - 2.0) < 0.06


def test_normal_gradient_is_zero_as_in_pytorch():
    """PyTorch's derivative of normal(mean, std) with respect to mean and std is zero (its
    documented formula: zeros_like); the result is still in the graph."""
    mean = lucid.tensor([0.0, 1.0], dtype=lucid.float64, requires_grad=True)
    std = lucid.tensor([1.0, 2.0], dtype=lucid.float64, requires_grad=True)
    out = lucid.normal(mean, std)
    assert out.requires_grad and out.grad_fn is not None
    out.sum().backward()
    assert mean.grad.tolist() == [0.0, 0.0] and std.grad.tolist() == [0.0, 0.0]
    out = lucid.normal(mean, 1.0)
    out.sum().backward()
    assert mean.grad.tolist() == [0.0, 0.0]
    with lucid.no_grad():
        assert not lucid.normal(mean, std).requires_grad


BAD = [
    (lambda: lucid.randn(2, generator=object()), TypeError, "Generator"),
    (lambda: lucid.randint(5, (2,), generator=1), TypeError, "Generator"),
    (lambda: lucid.normal(0.0, 1.0, (2,), generator=1), TypeError, "Generator"),
    (lambda: lucid.rand(2, dtype=lucid.int64), TypeError, "floating point"),
    (lambda: lucid.randn_like(lucid.zeros(2, dtype=lucid.int64)), TypeError, "floating point"),
    (lambda: lucid.rand_like([1.0]), TypeError, "Tensor"),
    (lambda: lucid.randint(5, 3), TypeError, "size"),
    (lambda: lucid.randint(5.5, (3,)), TypeError, "high"),
    (lambda: lucid.randint(1.0, 5, (3,)), TypeError, "low"),
    (lambda: lucid.randint(size=(3,)), TypeError, "high"),
    (lambda: lucid.randint(5, 2, (3,)), RuntimeError, "from=5 >= to=2"),
    (lambda: lucid.randint(5, 5, (3,)), RuntimeError, "less than"),
    (lambda: lucid.randint(5, (3,), dtype=lucid.bool), RuntimeError, "out of bounds"),
    (lambda: lucid.randint(-1, 1, (3,), dtype=lucid.bool), RuntimeError, "out of bounds"),
    (lambda: lucid.randint(2**40, (3,), dtype=lucid.int32), RuntimeError, "out of bounds"),
    (lambda: lucid.randint(5, (3,), requires_grad=True), RuntimeError, "floating point"),
    (lambda: lucid.randint(5, (-1,)), RuntimeError, "non-negative"),
    (lambda: lucid.randint(2**70, (3,)), ValueError, "64-bit"),
    (lambda: lucid.randint_like(lucid.zeros(2)), TypeError, "high"),
    (lambda: lucid.randint_like(lucid.zeros(2), 3, 1), RuntimeError, "less than"),
    (lambda: lucid.randperm(-1), RuntimeError, ">= 0"),
    (lambda: lucid.randperm(5.0), TypeError, "int"),
    (lambda: lucid.randperm(5, dtype=lucid.bool), TypeError, "bool"),
    (lambda: lucid.randperm(5, requires_grad=True), RuntimeError, "floating point"),
    (lambda: lucid.normal(0.0, 1.0), TypeError, "size"),
    (lambda: lucid.normal(0.0, 1.0, 3), TypeError, "size"),
    (lambda: lucid.normal(0.0, -1.0, (2,)), RuntimeError, "std >= 0.0"),
    (lambda: lucid.normal(0.0, float("nan"), (2,)), RuntimeError, "std >= 0.0"),
    (lambda: lucid.normal(lucid.zeros(2), -1.0), RuntimeError, "std >= 0.0"),
    (lambda: lucid.normal(0.0, lucid.tensor([1.0, -1.0])), RuntimeError, "all elements"),
    (lambda: lucid.normal(lucid.zeros(2, 3), lucid.ones(3, 2)), RuntimeError, "broadcast"),
    (lambda: lucid.normal(lucid.zeros(2, dtype=lucid.int64), 1.0), TypeError, "floating point"),
    (lambda: lucid.normal(lucid.zeros(2), 1.0, dtype=lucid.float64), TypeError, "dtype="),
    (lambda: lucid.normal("0", 1.0, (2,)), TypeError, "mean"),
    (lambda: lucid.normal(0.0, 1.0, (2,), dtype=lucid.int64), TypeError, "floating point"),
]


@pytest.mark.parametrize("call, exc, words", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_arguments_raise_and_draw_nothing(call, exc, words):
    lucid.manual_seed(9)
    state = lucid.get_rng_state()
    with pytest.raises(exc, match=words):
        call()
    assert lucid.get_rng_state() == state
