"""Indexing and shape ops (ops/shape/gather.pxi, ops/shape/rearrange.pxi, ops/linalg/einsum.pxi)
beyond their table rows (tests/support/op_rows_indexing.py; values in float64 and float32, backward against finite
differences, gradcheck, gradgradcheck, tangents and non-contiguous inputs of every row are
checked by the table's loops: tests/ops/test_gradcheck.py, tests/forward/test_forward_ad.py): what a
Jacobian check can't see: views vs copies (shared memory and version counter, in-place on views
refused), repeated indices adding up, exact zeros under masks, einsum's repeated letters, and
every error path.
"""
import numpy as np
import pytest

import lucid
from support.checks import assert_close, assert_exact


# ---------------------------------------------------------------------------------------------
# views and copies
# ---------------------------------------------------------------------------------------------

VIEWS = {
    "narrow": lambda x: x.narrow(1, 1, 2),
    "split": lambda x: x.split(2, 1)[1],
    "chunk": lambda x: x.chunk(2, 0)[0],
    "unbind": lambda x: x.unbind(1)[2],
    "diagonal": lambda x: x.diagonal(1),
    "movedim": lambda x: x.movedim(1, 0),
    "mT": lambda x: x.mT,
}
COPIES = {
    "gather": lambda x: x.gather(1, _idx([[0, 1], [2, 2], [3, 0]])),
    "index_select": lambda x: x.index_select(0, _idx([1])),
    "take_along_dim": lambda x: x.take_along_dim(_idx([[1], [1], [1]]), 1),
    "masked_select": lambda x: x.masked_select(x > -100),
    "masked_fill": lambda x: x.masked_fill(x > 100, 0.0),
    "scatter_add": lambda x: x.scatter_add(0, _idx([[0]]), lucid.ones(1, 1, dtype=x.dtype)),
    "flip": lambda x: x.flip(0),
    "roll": lambda x: x.roll(1, 0),
    "repeat": lambda x: x.repeat(1, 1),
    "tile": lambda x: x.tile((1,)),
    "tril": lambda x: x.tril(5),
    "triu": lambda x: x.triu(-5),
    "diag": lambda x: x.diag(),
    "einsum": lambda x: lucid.einsum("ij->ji", x),
    "contiguous": lambda x: x.T.contiguous(),
}


def _idx(values, dtype=np.int64):
    return lucid.tensor(np.array(values, dtype=dtype))


def _base():
    return lucid.tensor(np.arange(12.0).reshape(3, 4))


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_share_memory_and_version(name):
    x = _base()
    v = VIEWS[name](x)
    assert np.shares_memory(v.numpy(), x.numpy())
    before = x._version
    v.mul_(-1.0)                                     # a write through the view shows in x
    assert x._version == v._version == before + 1
    assert (x.numpy() < 0).sum() == v.numel() - (v.numpy() == 0).sum()
    x.add_(1.0)                                      # and a write to x shows in the view
    assert v._version == x._version == before + 2
    assert_close(v, VIEWS[name](x), rtol=0, atol=0)


def test_split_chunk_unbind_pieces_are_views_of_one_memory():
    for make in (lambda x: x.split(1), lambda x: x.chunk(2, 1), lambda x: x.unbind(1),
                 lambda x: lucid.split(x, [1, 3], 1)):
        x = _base() + 1.0
        pieces = make(x)
        for p in pieces:
            assert np.shares_memory(p.numpy(), x.numpy())
            p.zero_()
        assert all(p._version == x._version == len(pieces) for p in pieces)
        assert x.sum().item() == 0                  # the pieces cover x


def test_expand_as_is_a_read_only_view():
    x = lucid.tensor(np.arange(3.0).reshape(3, 1))
    y = x.expand_as(lucid.zeros(2, 3, 4))
    assert y.shape == (2, 3, 4) and np.shares_memory(y.numpy(), x.numpy())
    with pytest.raises(RuntimeError, match="read-only"):
        y.add_(1.0)
    assert_close(x, np.arange(3.0).reshape(3, 1), rtol=0, atol=0)


def test_contiguous_is_self_when_already_contiguous():
    x = _base()
    assert x.contiguous() is x
    t = x.T
    c = t.contiguous()
    assert c is not t and c.numpy().flags.c_contiguous and c.is_contiguous()
    assert not np.shares_memory(c.numpy(), x.numpy())
    assert not t.is_contiguous()


@pytest.mark.parametrize("name", sorted(COPIES))
def test_copies_have_their_own_memory(name):
    x = _base()
    y = COPIES[name](x)
    assert not np.shares_memory(y.numpy(), x.numpy())
    before = x._version
    y.zero_()
    assert x._version == before and x.numpy().sum() == 66


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_in_place_on_a_view_of_a_graph_tensor_is_refused(name):
    leaf = lucid.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    y = leaf * 1.0
    v = VIEWS[name](y)
    snapshot, version = y.detach().numpy().copy(), y._version
    with pytest.raises(RuntimeError, match="view"):
        v.add_(1.0)
    assert_close(y, snapshot, rtol=0, atol=0)
    assert y._version == version
    y.sum().backward()                              # the graph is still usable
    assert_close(leaf.grad, np.ones((3, 4)), rtol=0, atol=0)


def test_views_of_a_leaf_that_requires_grad_refuse_in_place():
    leaf = lucid.tensor(np.arange(6.0), requires_grad=True)
    piece = leaf.split(3)[0]
    with pytest.raises(RuntimeError):
        piece.mul_(2.0)
    assert_close(leaf, np.arange(6.0), rtol=0, atol=0)


@pytest.mark.parametrize("op", ["split", "chunk", "unbind"])
def test_gradient_of_a_subset_of_pieces(op):
    x = lucid.tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)
    pieces = {"split": lambda: x.split(1), "chunk": lambda: x.chunk(4),
              "unbind": lambda: x.unbind()}[op]()
    (pieces[1] * 2.0 + pieces[3] * pieces[3]).sum().backward()
    expected = np.zeros((4, 3))
    expected[1] = 2.0
    expected[3] = 2.0 * np.arange(9.0, 12.0)
    assert_close(x.grad, expected, rtol=0, atol=0)


def test_pieces_taken_twice_add_up():
    x = lucid.tensor(np.arange(6.0), requires_grad=True)
    a, b = x.split(3)
    c, = x.narrow(0, 2, 2).split(2)
    (a.sum() + b.sum() * 3.0 + c.sum() * 10.0).backward()
    assert_close(x.grad, [1.0, 1.0, 11.0, 13.0, 3.0, 3.0], rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# repeated indices, masks, ties
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("index_dtype", [np.int64, np.int32])
def test_gather_repeated_indices_accumulate(index_dtype):
    x = lucid.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    y = x.gather(1, _idx([[2, 2, 2, 0], [1, 1, 0, 1]], index_dtype))
    assert_close(y, [[2.0, 2.0, 2.0, 0.0], [4.0, 4.0, 3.0, 4.0]], rtol=0, atol=0)
    y.backward(lucid.tensor(np.arange(1.0, 9.0).reshape(2, 4)))
    assert_close(x.grad, [[4.0, 0.0, 6.0], [7.0, 5.0 + 6.0 + 8.0, 0.0]], rtol=0, atol=0)


def test_index_select_repeated_indices_accumulate():
    x = lucid.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
    y = lucid.index_select(x, 0, _idx([2, 0, 2, 2], np.int32))
    y.backward(lucid.tensor(np.arange(8.0).reshape(4, 2)))
    assert_close(x.grad, [[2.0, 3.0], [0.0, 0.0], [10.0, 13.0]], rtol=0, atol=0)


def test_scatter_add_repeated_indices_add_and_route_back():
    x = lucid.tensor(np.zeros((2, 3)), requires_grad=True)
    src = lucid.tensor(np.array([[1.0, 2.0, 4.0, 8.0]]), requires_grad=True)
    y = x.scatter_add(1, _idx([[2, 2, 0, 2]]), src)
    assert_close(y, [[4.0, 0.0, 11.0], [0.0, 0.0, 0.0]], rtol=0, atol=0)
    upstream = np.array([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]])
    y.backward(lucid.tensor(upstream))
    assert_close(x.grad, upstream, rtol=0, atol=0)
    assert_close(src.grad, [[30.0, 30.0, 10.0, 30.0]], rtol=0, atol=0)


def test_take_along_dim_and_masked_select_broadcast_gradients_add_up():
    x = lucid.tensor(np.array([[1.0, 2.0, 3.0]]), requires_grad=True)          # (1, 3)
    y = x.take_along_dim(_idx([[0], [2], [2]]), 1)                          # (3, 1)
    y.sum().backward()
    assert_close(x.grad, [[1.0, 0.0, 2.0]], rtol=0, atol=0)
    x.grad = None
    z = x.masked_select(lucid.tensor(np.array([[True, False, True], [True, True, False]])))
    assert_close(z, [1.0, 3.0, 1.0, 2.0], rtol=0, atol=0)
    z.sum().backward()
    assert_close(x.grad, [[2.0, 1.0, 1.0]], rtol=0, atol=0)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_masked_fill_gradient_is_exactly_zero_where_masked(bad):
    x = lucid.tensor(np.arange(4.0), requires_grad=True)
    v = lucid.tensor(0.5, dtype=lucid.float32, requires_grad=True)
    mask = lucid.tensor(np.array([True, False, False, True]))
    y = x.masked_fill(mask, v)
    assert y.dtype == lucid.float64
    assert_close(y, [0.5, 1.0, 2.0, 0.5], rtol=0, atol=0)
    y.backward(lucid.tensor(np.array([bad, 1.0, 2.0, 3.0])))
    assert x.grad.numpy()[0] == 0.0 and x.grad.numpy()[3] == 0.0
    assert_close(x.grad, [0.0, 1.0, 2.0, 0.0], rtol=0, atol=0)
    assert v.grad.dtype == lucid.float32 and v.grad.shape == ()
    assert np.isnan(v.grad.item()) if np.isnan(bad) else v.grad.item() == bad + 3.0


def test_masked_fill_double_backward_selects_too():
    # the backward of masked_fill's backward (gradient with respect to the upstream gradient u)
    # is the same selection: an inf there still gives exactly 0 at masked places
    x = lucid.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    u = lucid.tensor(np.array([1.0, 1.0, 1.0]), requires_grad=True)
    mask = lucid.tensor(np.array([True, False, True]))
    (g,) = lucid.autograd.grad(x.masked_fill(mask, 0.0), (x,), u, create_graph=True)
    (gu,) = lucid.autograd.grad(g, (u,), lucid.tensor(np.array([np.inf, 1.0, np.nan])))
    assert_close(gu, [0.0, 1.0, 0.0], rtol=0, atol=0)


def test_masked_fill_keeps_the_input_dtype():
    x = lucid.tensor(np.arange(3), dtype=lucid.int64)
    y = x.masked_fill(lucid.tensor(np.array([False, True, False])), 7.9)
    assert y.dtype == lucid.int64 and y.tolist() == [0, 7, 2]
    z = lucid.ones(3).masked_fill(lucid.tensor(np.array([True, False, False])), 2)
    assert z.dtype == lucid.float32 and z.tolist() == [2.0, 1.0, 1.0]


def test_zero_size_inputs():
    e = lucid.zeros(0, 3, requires_grad=True)
    assert [p.shape for p in e.split(2)] == [(0, 3)]
    assert [p.shape for p in e.chunk(3)] == [(0, 3)] * 3
    assert [p.shape for p in _base().split([1, 0, 2])] == [(1, 4), (0, 4), (2, 4)]
    assert e.masked_select(lucid.tensor(np.zeros((0, 3), dtype=bool))).shape == (0,)
    product = lucid.einsum("ij,jk->ik", lucid.zeros(2, 0), lucid.zeros(0, 3))
    assert product.tolist() == [[0.0] * 3] * 2
    x = lucid.tensor(np.ones((2, 3)), requires_grad=True)
    y = x.gather(1, lucid.tensor(np.zeros((2, 0), dtype=np.int64)))
    assert y.shape == (2, 0)
    y.sum().backward()
    assert_close(x.grad, np.zeros((2, 3)), rtol=0, atol=0)
    z = x.index_select(0, [])
    assert z.shape == (0, 3)


def test_einsum_repeated_letters_take_the_diagonal():
    a = np.arange(9.0).reshape(3, 3)
    x = lucid.tensor(a, requires_grad=True)
    y = lucid.einsum("ii->i", x)
    assert_close(y, np.diagonal(a), rtol=0, atol=0)
    y.backward(lucid.tensor(np.array([1.0, 2.0, 3.0])))
    assert_close(x.grad, np.diag([1.0, 2.0, 3.0]), rtol=0, atol=0)
    b = np.arange(8.0).reshape(2, 2, 2)
    z = lucid.tensor(b, requires_grad=True)
    w = lucid.einsum("iii->", z)
    assert w.item() == b[0, 0, 0] + b[1, 1, 1]
    w.backward()
    expected = np.zeros((2, 2, 2))
    expected[0, 0, 0] = expected[1, 1, 1] = 1.0
    assert_close(z.grad, expected, rtol=0, atol=0)


def test_einsum_mixed_dtypes_promote_and_grads_keep_each_dtype():
    x = lucid.tensor(np.ones((2, 3)), dtype=lucid.float32, requires_grad=True)
    y = lucid.tensor(np.ones((3,)), dtype=lucid.float64, requires_grad=True)
    z = lucid.einsum("ij,j->i", x, y)
    assert z.dtype == lucid.float64
    z.sum().backward()
    assert x.grad.dtype == lucid.float32 and y.grad.dtype == lucid.float64
    assert_close(y.grad, [2.0, 2.0, 2.0], rtol=0, atol=0)


def test_einsum_result_never_aliases_an_operand():
    x = _base()
    y = lucid.einsum("ij->ij", x)
    assert not np.shares_memory(y.numpy(), x.numpy())


def test_einsum_saves_only_what_the_gradients_read():
    x = lucid.tensor(np.ones((2, 3)), requires_grad=True)
    w = lucid.tensor(np.ones((3,)))
    z = lucid.einsum("ij,j->i", x, w)
    w.add_(1.0)                  # x's gradient reads w: the change must be noticed
    with pytest.raises(RuntimeError, match="modified by an in-place"):
        z.sum().backward()
    x2 = lucid.tensor(np.ones((2, 3)))
    w2 = lucid.tensor(np.ones((3,)), requires_grad=True)
    z2 = lucid.einsum("ij,j->i", x2, w2)
    w2.detach().add_(1.0)        # w2 itself is read by nobody: its gradient reads x2 only
    z2.sum().backward()
    assert_close(w2.grad, [2.0, 2.0, 2.0], rtol=0, atol=0)


def test_trace_and_diag_of_int_tensors():
    x = lucid.tensor(np.arange(6).reshape(2, 3))
    assert x.trace().item() == 4 and x.trace().dtype == lucid.int64
    assert x.diag().tolist() == [0, 4]
    assert lucid.tensor([1, 2]).diag(1).tolist() == [[0, 1, 0], [0, 0, 2], [0, 0, 0]]


def test_0d_inputs():
    x = lucid.tensor(2.0, dtype=lucid.float64, requires_grad=True)
    assert x.flip(0).item() == 2.0 and x.roll(3).item() == 2.0
    assert x.repeat(3).tolist() == [2.0, 2.0, 2.0]
    assert x.movedim(0, 0).shape == ()
    y = x.take_along_dim(_idx([0, 0]))
    assert y.tolist() == [2.0, 2.0]
    z = x.masked_select(lucid.tensor(np.array([True, False, True])))
    assert z.tolist() == [2.0, 2.0]
    (y.sum() + z.sum() + x.repeat(3).sum()).backward()
    assert x.grad.item() == 7.0
    assert lucid.autograd.gradcheck(lambda t: t.repeat(2, 2).flip(0, 1), (x,))


def test_methods_accept_varargs_and_tuples():
    x = lucid.tensor(np.arange(6.0).reshape(2, 3))
    assert_close(x.flip(0, 1), x.flip((0, 1)), rtol=0, atol=0)
    assert_close(x.repeat(2, 1), x.repeat((2, 1)), rtol=0, atol=0)
    assert_close(x.tile(2), x.tile((2,)), rtol=0, atol=0)
    assert x.tile(2).shape == (2, 6)


# ---------------------------------------------------------------------------------------------
# a shape op to the same shape (expand(x.shape), reshape(x.shape), x[...], ...) returns a new view,
# not x itself, so a hook registered on it stays on it (PyTorch); a cast to the same dtype is x
# ---------------------------------------------------------------------------------------------

SAME_SHAPE_EXPANDS = {"expand": lambda x: x.expand(x.shape),
                      "expand_args": lambda x: x.expand(*x.shape),
                      "lucid_expand": lambda x: lucid.expand(x, x.shape),
                      "expand_minus1": lambda x: x.expand(-1, -1)}
SAME_SHAPE_OTHERS = {"reshape": lambda x: x.reshape(x.shape), "squeeze": lambda x: x.squeeze(),
                     "transpose": lambda x: x.transpose(0, 0),
                     "permute": lambda x: x.permute(0, 1), "flatten": lambda x: x.flatten(1),
                     "view": lambda x: x.view(2, 3), "getitem": lambda x: x[...]}


@pytest.mark.parametrize("name", sorted(SAME_SHAPE_EXPANDS))
def test_expand_to_the_same_shape_returns_a_new_view(name):
    check_new_view(SAME_SHAPE_EXPANDS[name])


@pytest.mark.parametrize("name", sorted(SAME_SHAPE_OTHERS))
def test_guard_other_shape_ops_to_the_same_shape_return_new_views(name):
    check_new_view(SAME_SHAPE_OTHERS[name])


def check_new_view(make):
    x = lucid.ones(2, 3, requires_grad=True)
    y = make(x)
    assert y is not x and y.shape == x.shape
    calls = []
    y.register_hook(lambda g: calls.append(g))
    (x * 2).sum().backward()                 # y is not used: its hook must not run
    assert calls == []
    assert_exact(x.grad, np.full((2, 3), 2.0))
    (y * 5).sum().backward()
    assert len(calls) == 1
    assert_exact(x.grad, np.full((2, 3), 7.0))


def test_guard_cast_to_the_same_dtype_is_self():
    x = lucid.ones(2, requires_grad=True)
    assert x.to(lucid.float32) is x and x.float() is x


# ---------------------------------------------------------------------------------------------
# errors: type, a message naming the op and the shapes, nothing modified
# ---------------------------------------------------------------------------------------------

def _x():
    return lucid.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)


ERRORS = [
    ("gather_out_of_range", lambda x: x.gather(1, _idx([[4]])), IndexError,
     r"gather.*index 4.*\(3, 4\)"),
    ("gather_negative", lambda x: x.gather(0, _idx([[-1]])), IndexError, r"gather.*-1"),
    ("gather_ndim", lambda x: x.gather(0, _idx([0])), RuntimeError, r"gather.*\(1,\).*\(3, 4\)"),
    ("gather_index_too_big", lambda x: x.gather(0, _idx(np.zeros((1, 5), int))), RuntimeError,
     r"gather.*\(1, 5\).*\(3, 4\)"),
    ("gather_float_index", lambda x: x.gather(0, lucid.zeros(1, 1)), TypeError, r"gather.*int64"),
    ("gather_bool_index", lambda x: x.gather(0, _idx([[True]], bool)), TypeError, r"gather.*bool"),
    ("gather_0d", lambda x: lucid.tensor(1.0).gather(0, _idx(0)), RuntimeError, r"gather.*0-d"),
    ("gather_bad_dim", lambda x: x.gather(2, _idx([[0]])), IndexError,
     r"gather: Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
    ("scatter_add_dtype", lambda x: x.scatter_add(0, _idx([[0]]), lucid.ones(1, 1)),
     RuntimeError, r"scatter_add.*float32.*float64"),
    ("scatter_add_out_of_range", lambda x: x.scatter_add(0, _idx([[3]]), x.detach()),
     IndexError, r"scatter_add.*index 3.*size 3"),
    ("scatter_add_src_small",
     lambda x: x.scatter_add(0, _idx([[0, 1]]), lucid.ones(1, 1, dtype=lucid.float64)),
     RuntimeError, r"scatter_add.*\(1, 2\).*src.*\(1, 1\)"),
    ("index_select_2d_index", lambda x: x.index_select(0, _idx([[0]])), IndexError,
     r"index_select.*1-d.*\(1, 1\)"),
    ("index_select_out_of_range", lambda x: x.index_select(1, _idx([0, 9])), IndexError,
     r"index_select.*index 9.*dim 1 of size 4"),
    ("take_along_dim_ndim", lambda x: x.take_along_dim(_idx([0]), 1), RuntimeError,
     r"take_along_dim.*\(3, 4\).*\(1,\)"),
    ("take_along_dim_range", lambda x: x.take_along_dim(_idx([12])), IndexError,
     r"take_along_dim.*index 12"),
    ("take_along_dim_broadcast", lambda x: x.take_along_dim(_idx([[0], [0]]), 1), RuntimeError,
     r"take_along_dim.*\(3, 4\).*\(2, 1\)"),
    ("masked_fill_int_mask", lambda x: x.masked_fill(_idx([1, 0, 0, 0]), 0.0), TypeError,
     r"masked_fill.*bool"),
    ("masked_fill_value_1d", lambda x: x.masked_fill(x > 0, lucid.ones(1)), RuntimeError,
     r"masked_fill.*0-d.*\(1,\)"),
    ("masked_fill_value_str", lambda x: x.masked_fill(x > 0, "a"), TypeError, r"masked_fill.*str"),
    ("masked_fill_broadcast", lambda x: x.masked_fill(lucid.tensor(np.ones(3, bool)), 0.0),
     RuntimeError, r"masked_fill.*\(3, 4\).*\(3,\)"),
    ("masked_select_broadcast", lambda x: x.masked_select(lucid.tensor(np.ones(2, bool))),
     RuntimeError, r"masked_select.*\(3, 4\).*\(2,\)"),
    ("split_sections", lambda x: x.split([1, 1]), RuntimeError, r"split.*\(1, 1\).*3"),
    ("split_negative_section", lambda x: x.split([4, -1]), RuntimeError, r"split"),
    ("split_zero_size", lambda x: x.split(0), RuntimeError, r"split.*positive"),
    ("chunk_zero", lambda x: x.chunk(0), RuntimeError, r"chunk.*positive"),
    ("unbind_0d", lambda x: lucid.tensor(1.0).unbind(), RuntimeError, r"unbind.*0-d"),
    ("narrow_too_long", lambda x: x.narrow(1, 2, 3), RuntimeError, r"narrow.*size 4.*\(3, 4\)"),
    ("narrow_start", lambda x: x.narrow(0, 4, 0), IndexError, r"narrow.*start 4"),
    ("flip_duplicate_dims", lambda x: x.flip(0, -2), RuntimeError, r"flip.*more than once"),
    ("roll_lengths", lambda x: x.roll((1, 2), 0), RuntimeError, r"roll.*shifts"),
    ("roll_no_dims_two_shifts", lambda x: x.roll((1, 2)), RuntimeError, r"roll"),
    ("repeat_too_few", lambda x: x.repeat(2), RuntimeError, r"repeat.*\(3, 4\)"),
    ("repeat_negative", lambda x: x.repeat(2, -1), RuntimeError, r"repeat.*non-negative"),
    ("tril_1d", lambda x: x[0].tril(), RuntimeError, r"tril.*\(4,\)"),
    ("triu_1d", lambda x: x[0].triu(), RuntimeError, r"triu.*\(4,\)"),
    ("diagonal_same_dims", lambda x: x.diagonal(0, 1, -1), RuntimeError, r"diagonal.*differ"),
    ("diagonal_1d", lambda x: x[0].diagonal(), RuntimeError, r"diagonal.*\(4,\)"),
    ("diag_3d", lambda x: x.reshape(3, 2, 2).diag(), RuntimeError, r"diag.*\(3, 2, 2\)"),
    ("trace_1d", lambda x: x[0].trace(), RuntimeError, r"trace.*\(4,\)"),
    ("mT_1d", lambda x: x[0].mT, RuntimeError, r"mT.*\(4,\)"),
    ("expand_as_bad_other", lambda x: x.expand_as((3, 4)), TypeError, r"expand_as"),
    ("expand_as_shape", lambda x: x.expand_as(lucid.zeros(4, 3)), RuntimeError,
     r"\(3, 4\).*\(4, 3\)"),
    ("movedim_lengths", lambda x: x.movedim((0, 1), 0), RuntimeError, r"movedim"),
    ("movedim_repeat", lambda x: x.movedim((0, 0), (0, 1)), RuntimeError,
     r"movedim.*more than once"),
    ("einsum_ellipsis", lambda x: lucid.einsum("...j->j", x), RuntimeError, r"einsum.*ellipsis"),
    ("einsum_operand_count", lambda x: lucid.einsum("ij,jk->ik", x), RuntimeError,
     r"einsum.*2 operand.*1"),
    ("einsum_ndim", lambda x: lucid.einsum("ijk->i", x), RuntimeError, r"einsum.*\(3, 4\).*'ijk'"),
    ("einsum_sizes", lambda x: lucid.einsum("ij,ij->i", x, x.T), RuntimeError,
     r"einsum.*'i'.*size 3.*4"),
    ("einsum_output_letter", lambda x: lucid.einsum("ij->k", x), RuntimeError, r"einsum.*'k'"),
    ("einsum_output_twice", lambda x: lucid.einsum("ij->ii", x), RuntimeError, r"einsum.*twice"),
    ("einsum_bad_letter", lambda x: lucid.einsum("i1->i", x), RuntimeError, r"einsum.*letters"),
    ("einsum_not_tensor", lambda x: lucid.einsum("ij->i", x.detach().numpy()), TypeError,
     r"einsum"),
    ("einsum_no_operands", lambda x: lucid.einsum("->"), RuntimeError, r"einsum"),
]


@pytest.mark.parametrize("name,call,exc,pattern", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, call, exc, pattern):
    x = _x()
    with pytest.raises(exc, match=pattern):
        call(x)
    assert_close(x, np.arange(12.0).reshape(3, 4), rtol=0, atol=0)
    assert x._version == 0 and x.grad is None
