"""The names of the contract's PyTorch-parity section (API.md section 13, its first three bullets)
exist where PyTorch has them: a function in lucid (or lucid.linalg), a Tensor method, an
in-place form. The lists are written here from that section by hand; each name is checked in
the place the section names it, and, where PyTorch is installed, in every other place PyTorch
has it (torch.<name>, torch.Tensor.<name>, torch.Tensor.<name>_)."""
import pytest

import lucid
import lucid.linalg

try:
    import torch
except ImportError:          # the PyTorch comparison says why it did not run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed; "
                                 "pip install torch==2.13.0 to compare with PyTorch's namespace")

# bullet 1: constructors, conversions and tensor facts
FUNCTIONS_1 = "set_default_dtype get_default_dtype rand_like randn_like randint randint_like " \
              "randperm normal manual_seed".split()
METHODS_1 = "new_empty type_as view_as reshape_as is_floating_point is_complex element_size " \
            "stride storage_offset is_contiguous data_ptr data".split()
# bullet 2: method spellings and in-place forms
METHODS_2 = "add sub mul div neg matmul mm pow where clamp_min clamp_max t select as_strided " \
            "split_with_sizes unflatten swapaxes swapdims broadcast_to numel".split()
INPLACE_2 = "clamp_ masked_fill_ index_add_ scatter_ scatter_add_ exp_ log_ sqrt_ tanh_ " \
            "sigmoid_ relu_ neg_ abs_ pow_ t_ unsqueeze_ squeeze_".split()
FUNCTIONS_2 = "select as_strided split_with_sizes unflatten swapaxes swapdims broadcast_to " \
              "broadcast_tensors meshgrid is_tensor numel".split()
# bullet 3: more ops, and lucid.linalg's
FUNCTIONS_3 = "log2 log10 exp2 logaddexp logaddexp2 xlogy hypot lgamma digamma erfc erfinv sinc " \
              "frac fmod remainder copysign nan_to_num nansum nanmean cdist sort topk kthvalue " \
              "median quantile nanquantile cummax cummin logcumsumexp var_mean std_mean " \
              "aminmax".split()
LINALG_3 = "svd svdvals eig eigvals lstsq pinv matrix_exp matrix_power lu_factor lu_solve " \
           "vector_norm matrix_norm cross multi_dot cond matrix_rank".split()

STATED = ([("lucid", n) for n in FUNCTIONS_1 + FUNCTIONS_2 + FUNCTIONS_3]
          + [("Tensor", n) for n in METHODS_1 + METHODS_2 + INPLACE_2]
          + [("lucid.linalg", n) for n in LINALG_3])
PLACES = {"lucid": lucid, "Tensor": lucid.Tensor, "lucid.linalg": lucid.linalg}


@pytest.mark.parametrize("place,name", STATED, ids=[f"{p}.{n}" for p, n in STATED])
def test_a_name_of_the_section_is_where_it_says(place, name):
    assert hasattr(PLACES[place], name), f"{place}.{name} is missing"


def torch_places(name, linalg):
    """(lucid's place, name) for every place PyTorch has name (or its in-place form)."""
    if linalg:
        return [("lucid.linalg", name)] if hasattr(torch.linalg, name) else []
    base = name.removesuffix("_")
    found = []
    if hasattr(torch, base):
        found.append(("lucid", base))
    if hasattr(torch.Tensor, base):
        found.append(("Tensor", base))
    if hasattr(torch.Tensor, base + "_"):
        found.append(("Tensor", base + "_"))
    return found


ALL_NAMES = sorted(set(FUNCTIONS_1 + METHODS_1 + METHODS_2 + INPLACE_2 + FUNCTIONS_2
                       + FUNCTIONS_3)) + [f"linalg.{n}" for n in LINALG_3]


# names PyTorch has that lucid does not yet, each with its reason: the test fails when one arrives
# (take it off) or another goes missing
NOT_YET = {
    "Tensor.normal_": "lucid has no in-place random fills (normal_, uniform_, ...) yet",
}


@needs_torch
def test_every_name_is_where_pytorch_has_it():
    missing = []
    for name in ALL_NAMES:
        linalg = name.startswith("linalg.")
        for place, attr in torch_places(name.removeprefix("linalg."), linalg):
            if not hasattr(PLACES[place], attr):
                missing.append(f"{place}.{attr}")
    assert set(missing) == set(NOT_YET), \
        f"PyTorch has these names of API.md section 13, lucid does not: {missing}"


def test_is_floating_point_and_is_complex_are_the_methods():
    for x in (lucid.ones(2), lucid.tensor([1, 2]), lucid.tensor([True])):
        assert lucid.is_floating_point(x) is x.is_floating_point()
        assert lucid.is_complex(x) is x.is_complex() is False
    assert lucid.is_floating_point(lucid.ones(2, dtype=lucid.float64)) is True
    with pytest.raises(TypeError, match="is_floating_point.*input"):
        lucid.is_floating_point([1.0])
