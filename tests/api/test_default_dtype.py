"""lucid.set_default_dtype / get_default_dtype (API.md section 13, as PyTorch's): the float dtype
every constructor picks when nothing decides it, and the dtype integer operands of float-only ops
compute in. Process-wide; each test here restores the default it found."""
import threading

import numpy as np
import pytest

import lucid


@pytest.fixture(autouse=True)
def restore_default_dtype():
    before = lucid.get_default_dtype()
    yield
    lucid.set_default_dtype(before)


FLOATS = [lucid.float32, lucid.float64]

# constructors that pick a float dtype of their own
FLOAT_CONSTRUCTORS = {
    "tensor(floats)": lambda: lucid.tensor([1.0, 2.5]),
    "tensor(float)": lambda: lucid.tensor(1.5),
    "tensor(mixed)": lambda: lucid.tensor([1, 2.5]),
    "as_tensor(floats)": lambda: lucid.as_tensor([1.0]),
    "zeros": lambda: lucid.zeros(2),
    "ones": lambda: lucid.ones(2, 2),
    "empty": lambda: lucid.empty(3),
    "full(float)": lambda: lucid.full((2,), 1.5),
    "arange(floats)": lambda: lucid.arange(0.0, 1.0, 0.25),
    "arange(float step)": lambda: lucid.arange(0, 2, 0.5),
    "linspace": lambda: lucid.linspace(0, 1, 3),
    "logspace": lambda: lucid.logspace(0, 1, 3),
    "eye": lambda: lucid.eye(2),
    "randn": lambda: lucid.randn(2),
    "rand": lambda: lucid.rand(2),
    "normal(numbers)": lambda: lucid.normal(0.0, 1.0, (2,)),
}

# the integer ops that PyTorch computes in the default float dtype
INT = lambda: lucid.tensor([1, 2, 4])             # noqa: E731
FLOAT_RESULTS = {
    "sqrt": lambda: INT().sqrt(), "exp": lambda: lucid.exp(INT()), "log": lambda: INT().log(),
    "sin": lambda: INT().sin(), "tanh": lambda: INT().tanh(), "sigmoid": lambda: INT().sigmoid(),
    "erf": lambda: INT().erf(), "rsqrt": lambda: INT().rsqrt(),
    "div": lambda: INT() / 2, "div tensors": lambda: INT() / INT(),
    "int * float": lambda: INT() * 1.5, "int + float": lambda: 1.5 + INT(),
    "atan2": lambda: lucid.atan2(INT(), INT()), "logsumexp": lambda: INT().logsumexp(0),
}

# what the default does not change
KEPT = {
    "tensor(ints)": (lambda: lucid.tensor([1, 2]), lucid.int64),
    "arange(ints)": (lambda: lucid.arange(3), lucid.int64),
    "full(int)": (lambda: lucid.full((2,), 3), lucid.int64),
    "full(bool)": (lambda: lucid.full((2,), True), lucid.bool),
    "dtype= given": (lambda: lucid.zeros(2, dtype=lucid.float32), lucid.float32),
    "from numpy float32": (lambda: lucid.tensor(np.zeros(2, np.float32)), lucid.float32),
    "as_tensor(float32 array)": (lambda: lucid.as_tensor(np.zeros(2, np.float32)), lucid.float32),
    "float32 tensor * float": (lambda: lucid.zeros(2, dtype=lucid.float32) * 2.5, lucid.float32),
    "float32 sqrt": (lambda: lucid.ones(2, dtype=lucid.float32).sqrt(), lucid.float32),
    "zeros_like": (lambda: lucid.zeros_like(lucid.zeros(2, dtype=lucid.float32)), lucid.float32),
    "randint": (lambda: lucid.randint(3, (2,)), lucid.int64),
}


def test_the_default_is_float32():
    assert lucid.get_default_dtype() == lucid.float32


@pytest.mark.parametrize("default", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(FLOAT_CONSTRUCTORS))
def test_constructors_follow_the_default(name, default):
    lucid.set_default_dtype(default)
    assert lucid.get_default_dtype() == default
    assert FLOAT_CONSTRUCTORS[name]().dtype == default


@pytest.mark.parametrize("default", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(FLOAT_RESULTS))
def test_integer_operands_of_float_ops_follow_the_default(name, default):
    lucid.set_default_dtype(default)
    assert FLOAT_RESULTS[name]().dtype == default


@pytest.mark.parametrize("name", sorted(KEPT))
def test_what_the_default_does_not_change(name):
    lucid.set_default_dtype(lucid.float64)
    make, dtype = KEPT[name]
    assert make().dtype == dtype


def test_float64_values_are_exact_under_a_float64_default():
    lucid.set_default_dtype(lucid.float64)
    assert lucid.tensor([0.1]).item() == 0.1           # not rounded through float32
    assert (lucid.tensor([1]) / 3).item() == 1 / 3


def test_repr_names_the_dtype_that_is_not_the_default():
    lucid.set_default_dtype(lucid.float64)
    assert "dtype" not in repr(lucid.tensor([1.5]))
    assert "dtype=lucid.float32" in repr(lucid.tensor([1.5], dtype=lucid.float32))


def test_gradients_flow_in_the_default_dtype():
    lucid.set_default_dtype(lucid.float64)
    x = lucid.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.dtype == lucid.float64 and x.grad.tolist() == [2.0, 4.0]


@pytest.mark.parametrize("bad", [lucid.int64, lucid.int32, lucid.bool, None, "int64", np.float16,
                                 "not a dtype", 3, object()], ids=repr)
def test_only_float32_and_float64_are_accepted(bad):
    lucid.set_default_dtype(lucid.float64)
    with pytest.raises(TypeError, match="set_default_dtype"):
        lucid.set_default_dtype(bad)
    assert lucid.get_default_dtype() == lucid.float64        # unchanged


def test_dtype_spellings_lucid_accepts_elsewhere_work():
    lucid.set_default_dtype("float64")
    assert lucid.get_default_dtype() == lucid.float64
    lucid.set_default_dtype(np.float32)
    assert lucid.get_default_dtype() == lucid.float32


def test_the_default_is_process_wide():
    seen = []
    lucid.set_default_dtype(lucid.float64)
    thread = threading.Thread(target=lambda: seen.append(lucid.zeros(1).dtype))
    thread.start()
    thread.join()
    assert seen == [lucid.float64]


def test_concurrent_sets_and_gets_see_only_the_two_dtypes():
    """Threads set and read the default at once: every read is float32 or float64, and every
    tensor made is one of them, never anything torn or None."""
    errors, seen = [], set()
    barrier = threading.Barrier(4)

    def setter(dtype):
        barrier.wait()
        for _ in range(2000):
            lucid.set_default_dtype(dtype)

    def reader():
        barrier.wait()
        try:
            for _ in range(2000):
                seen.add(lucid.get_default_dtype())
                seen.add(lucid.zeros(1).dtype)
        except Exception as e:               # pragma: no cover - the assertion reports it
            errors.append(e)

    threads = [threading.Thread(target=setter, args=(d,)) for d in FLOATS]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and seen <= set(FLOATS) and seen
    lucid.set_default_dtype(lucid.float32)
    assert lucid.get_default_dtype() == lucid.float32 and lucid.zeros(1).dtype == lucid.float32
