"""device= on every constructor and conversion, and lucid.device (API.md section 13): the CPU
passes in every spelling PyTorch accepts for it; any other device is a RuntimeError naming it."""
import pickle

import numpy as np
import pytest

import lucid


def base():
    return lucid.tensor([[1.0, 2.0], [3.0, 4.0]])


# every constructor and conversion that takes device=, as f(device) -> tensor
CONSTRUCTORS = {
    "tensor": lambda d: lucid.tensor([1.0, 2.0], device=d),
    "as_tensor": lambda d: lucid.as_tensor([1.0, 2.0], device=d),
    "zeros": lambda d: lucid.zeros(2, 3, device=d),
    "ones": lambda d: lucid.ones((2, 3), device=d),
    "empty": lambda d: lucid.empty(2, device=d),
    "full": lambda d: lucid.full((2,), 1.5, device=d),
    "zeros_like": lambda d: lucid.zeros_like(base(), device=d),
    "ones_like": lambda d: lucid.ones_like(base(), device=d),
    "empty_like": lambda d: lucid.empty_like(base(), device=d),
    "full_like": lambda d: lucid.full_like(base(), 2.0, device=d),
    "arange": lambda d: lucid.arange(5, device=d),
    "linspace": lambda d: lucid.linspace(0, 1, 5, device=d),
    "logspace": lambda d: lucid.logspace(0, 1, 5, device=d),
    "eye": lambda d: lucid.eye(3, device=d),
    "randn": lambda d: lucid.randn(2, 3, device=d),
    "rand": lambda d: lucid.rand(2, 3, device=d),
    "randn_like": lambda d: lucid.randn_like(base(), device=d),
    "rand_like": lambda d: lucid.rand_like(base(), device=d),
    "randint": lambda d: lucid.randint(0, 5, (3,), device=d),
    "randint_like": lambda d: lucid.randint_like(base(), 5, device=d),
    "randperm": lambda d: lucid.randperm(4, device=d),
    "normal": lambda d: lucid.normal(0.0, 1.0, (3,), device=d),
    "to(device=)": lambda d: base().to(device=d),
    "new_zeros": lambda d: base().new_zeros(2, device=d),
    "new_ones": lambda d: base().new_ones(2, device=d),
    "new_empty": lambda d: base().new_empty(2, device=d),
    "new_full": lambda d: base().new_full((2,), 3.0, device=d),
    "new_tensor": lambda d: base().new_tensor([1.0], device=d),
}


class CpuLike:
    """An object whose str is "cpu" (as torch.device("cpu") is)."""
    def __str__(self):
        return "cpu"


CPU_SPELLINGS = [None, "cpu", "cpu:0", "cpu:1", lucid.device("cpu"), lucid.device("cpu", 0),
                 CpuLike()]
OTHER_DEVICES = ["cuda", "cuda:0", "meta", "mps", lucid.device("cuda"), "gpu", "cpu:x", 0, "CPU"]


@pytest.mark.parametrize("name", sorted(CONSTRUCTORS))
@pytest.mark.parametrize("device", CPU_SPELLINGS, ids=repr)
def test_the_cpu_in_every_spelling_passes(name, device):
    t = CONSTRUCTORS[name](device)
    assert isinstance(t, lucid.Tensor) and t.device == "cpu"


@pytest.mark.parametrize("name", sorted(CONSTRUCTORS))
@pytest.mark.parametrize("device", OTHER_DEVICES, ids=repr)
def test_any_other_device_is_a_runtime_error_naming_it(name, device):
    with pytest.raises(RuntimeError, match=repr(str(device))):
        CONSTRUCTORS[name](device)


def test_a_refused_device_changes_nothing():
    x = base()
    before = x.numpy().copy()
    lucid.manual_seed(3)
    state = lucid.get_rng_state()
    for call in (lambda: x.to("cuda"), lambda: x.new_zeros(2, device="cuda"),
                 lambda: lucid.randn(2, device="cuda"), lambda: lucid.normal(0.0, 1.0, (2,),
                                                                              device="meta")):
        with pytest.raises(RuntimeError):
            call()
    assert np.array_equal(x.numpy(), before) and x.dtype == lucid.float32 and x._version == 0
    assert lucid.get_rng_state() == state            # no sample was drawn


def test_to_with_a_device_object_keeps_the_tensor():
    x = base()
    assert x.to(lucid.device("cpu")) is x and x.to(x.device) is x
    assert x.to(lucid.device("cpu"), lucid.float64).dtype == lucid.float64


def test_tensor_device_is_a_device_equal_to_the_string_cpu():
    d = base().device
    assert isinstance(d, lucid.device) and isinstance(d, str)
    assert d == "cpu" and str(d) == "cpu" and d.type == "cpu" and d.index is None
    assert repr(d) == "device(type='cpu')"
    assert lucid.zeros(2, device=d).device == d


def test_device_objects():
    assert str(lucid.device("cpu:0")) == "cpu:0" and lucid.device("cpu:0").index == 0
    assert lucid.device("cpu", 3) == "cpu:3" and repr(lucid.device("cpu", 3)) == \
        "device(type='cpu', index=3)"
    assert lucid.device("cuda:1").type == "cuda" and lucid.device("cuda:1").index == 1
    d = lucid.device("cpu")
    assert lucid.device(d) is d
    assert pickle.loads(pickle.dumps(d)) == d and type(pickle.loads(pickle.dumps(d))) is lucid.device
    assert {d: 1}["cpu"] == 1


@pytest.mark.parametrize("args, exc", [(("foo",), RuntimeError), (("CPU",), RuntimeError),
                                       (("cpu:x",), RuntimeError), (("cpu:-1",), RuntimeError),
                                       ((" cpu",), RuntimeError), (("cpu:0", 1), RuntimeError),
                                       (("cpu", -1), RuntimeError), (("cpu", 1.5), RuntimeError),
                                       ((0,), TypeError), ((None,), TypeError)])
def test_bad_device_objects(args, exc):
    with pytest.raises(exc):
        lucid.device(*args)
