"""lucid.func.vmap: results equal a loop over the batch with the unbatched ops; composed with the
other transforms; the error paths of API.md section 14."""
import warnings

import numpy as np
import pytest

import lucid
from lucid.func import grad, hessian, jacfwd, jacrev, vmap

F64 = lucid.float64


def loop(f, *xs):
    """stack([f(x[0]), f(x[1]), ...]) over the leading dim of every input."""
    return np.stack([f(*[x[i] for x in xs]).numpy() for i in range(xs[0].shape[0])])


def randn(*shape):
    return lucid.randn(*shape, dtype=F64)


W = randn(3, 2)
ELEMENTWISE_AND_FRIENDS = [
    ("exp+broadcast", lambda a: a.exp() * 2 + W[:, 0]),
    ("matmul tanh", lambda a: lucid.tanh(a @ W).sum(0)),
    ("softmax", lambda a: lucid.softmax(a, -1)),
    ("reshape expand T", lambda a: a.reshape(3, 1).expand(3, 2).T),
    ("stack", lambda a: lucid.stack([a, a * 2], 0)),
    ("cat plain", lambda a: lucid.cat([a, lucid.ones(2, dtype=F64)], 0)),
    ("slice", lambda a: a[1:]),
    ("max dim", lambda a: a.max(0)[0]),
    ("sum all", lambda a: a.sum()),
    ("var keepdim", lambda a: a.var(keepdim=True)),
    ("outer", lambda a: lucid.outer(a, a)),
    ("einsum", lambda a: lucid.einsum("i,ij->j", a, W)),
    ("cumsum", lambda a: lucid.cumsum(a, 0)),
    ("where", lambda a: lucid.where(a > 0, a, -a)),
    ("unsqueeze squeeze", lambda a: a.unsqueeze(-1).squeeze()),
]


@pytest.mark.parametrize("name,f", ELEMENTWISE_AND_FRIENDS, ids=[n for n, _ in ELEMENTWISE_AND_FRIENDS])
def test_vmap_equals_a_loop(name, f):
    x = randn(4, 3)
    np.testing.assert_allclose(vmap(f)(x).numpy(), loop(f, x), rtol=1e-12, atol=1e-12)


def test_in_dims_out_dims_and_nesting():
    x = randn(4, 3)
    np.testing.assert_allclose(vmap(lambda a: a.sum(), in_dims=1)(x).numpy(), x.numpy().sum(0))
    y = vmap(lambda a: a * 2, in_dims=1, out_dims=1)(x)
    np.testing.assert_allclose(y.numpy(), 2 * x.numpy())
    z = randn(2, 3, 4)
    np.testing.assert_allclose(vmap(vmap(lambda a: a.sum()))(z).numpy(), z.numpy().sum(-1))
    out = vmap(lambda a, b: a + b, in_dims=(0, None))(x, W[:, 0])
    np.testing.assert_allclose(out.numpy(), x.numpy() + W.numpy()[:, 0])


def test_a_batched_index_picks_per_element():
    x = randn(4, 3)
    idx = lucid.tensor([0, 1, 2, 1])
    out = vmap(lambda a, j: a[j])(x, idx)
    np.testing.assert_allclose(out.numpy(), x.numpy()[np.arange(4), [0, 1, 2, 1]])


def test_per_sample_gradients_equal_a_loop_of_grad():
    x = randn(5, 3)
    f = lambda w, a: lucid.tanh(a @ w).sum()
    got = vmap(grad(f), in_dims=(None, 0))(W, x)
    want = np.stack([grad(f)(W, x[i]).numpy() for i in range(5)])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def test_grad_of_vmap_sums_the_elements_gradients():
    x = randn(5, 3)
    f = lambda w, a: lucid.tanh(a @ w).sum()
    got = grad(lambda w: vmap(lambda a: f(w, a))(x).sum())(W)
    want = sum(grad(f)(W, x[i]).numpy() for i in range(5))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def test_jacobians_and_hessians_compose_with_vmap():
    A = randn(2, 3)
    f = lambda v: lucid.tanh(A @ v)
    g = lambda v: (lucid.tanh(A @ v) ** 2).sum()
    xs = randn(5, 3)
    x = xs[0]
    ref = (1 - np.tanh(A.numpy() @ x.numpy()) ** 2)[:, None] * A.numpy()
    np.testing.assert_allclose(jacrev(f)(x).numpy(), ref, rtol=1e-12)
    np.testing.assert_allclose(jacfwd(f)(x).numpy(), ref, rtol=1e-12)
    np.testing.assert_allclose(hessian(g)(x).numpy(), jacrev(jacrev(g))(x).numpy(), rtol=1e-10)
    np.testing.assert_allclose(vmap(jacrev(f))(xs).numpy(), loop(jacrev(f), xs), rtol=1e-12)
    np.testing.assert_allclose(vmap(jacfwd(f))(xs).numpy(), loop(jacrev(f), xs), rtol=1e-12)
    np.testing.assert_allclose(vmap(hessian(g))(xs).numpy(), loop(hessian(g), xs), rtol=1e-10)
    assert tuple(jacrev(vmap(f))(xs).shape) == (5, 2, 5, 3)


def test_hessian_matches_finite_differences():
    A = randn(2, 3)
    g = lambda v: (lucid.tanh(A @ v) ** 2).sum()
    x = randn(3)
    h, eps = np.zeros((3, 3)), 1e-5
    gradient = lambda v: grad(g)(lucid.tensor(v, dtype=F64)).numpy()
    for j in range(3):
        e = np.zeros(3)
        e[j] = eps
        h[:, j] = (gradient(x.numpy() + e) - gradient(x.numpy() - e)) / (2 * eps)
    np.testing.assert_allclose(vmap(hessian(g))(x.unsqueeze(0)).numpy()[0], h, rtol=1e-6,
                               atol=1e-8)


@pytest.mark.parametrize("read", [lambda a: a.sum().item(), lambda a: bool(a.sum() > 0),
                                  lambda a: a.tolist(), lambda a: a.numpy()],
                         ids=["item", "bool", "tolist", "numpy"])
def test_data_dependent_reads_raise(read):
    with pytest.raises(RuntimeError, match="data-dependent"):
        vmap(read)(randn(3, 2))


def test_randomness_modes():
    x = randn(4, 3)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda a: a + lucid.randn(3))(x)
    different = vmap(lambda a: lucid.randn(3) + 0 * a, randomness="different")(x).numpy()
    same = vmap(lambda a: lucid.randn(3) + 0 * a, randomness="same")(x).numpy()
    assert not np.allclose(different[0], different[1])
    np.testing.assert_allclose(same[0], same[1])


def test_chunk_size_gives_the_same_result():
    x = randn(7, 3)
    f = lambda a: lucid.tanh(a @ W)
    np.testing.assert_allclose(vmap(f, chunk_size=3)(x).numpy(), vmap(f)(x).numpy())


BAD = [
    ("sizes differ", lambda: vmap(lambda a, b: a + b)(randn(3), randn(4)), ValueError,
     "same size in the mapped dimension"),
    ("in_dims structure", lambda: vmap(lambda a, b: a + b, in_dims=(0,))(randn(3), randn(3)),
     ValueError, "not compatible with the structure"),
    ("in_dim out of range", lambda: vmap(lambda a: a, in_dims=2)(randn(3, 4)), ValueError,
     "in_dim=2"),
    ("0-d input", lambda: vmap(lambda a: a)(lucid.tensor(1.0)), ValueError,
     "dimensionality 0"),
    ("out_dim out of range", lambda: vmap(lambda a: a, out_dims=3)(randn(3, 4)), IndexError,
     "out of range"),
    ("non-tensor output", lambda: vmap(lambda a: 1.0)(randn(3)), ValueError,
     "must only return Tensors"),
    ("non-tensor input", lambda: vmap(lambda a: a)(1.0), ValueError, "non-Tensor"),
    ("in_dims None", lambda: vmap(lambda a: a, in_dims=None)(randn(3)), ValueError,
     "expected `in_dims`"),
    ("randomness", lambda: vmap(lambda a: a, randomness="x"), RuntimeError, "randomness"),
    ("chunk_size", lambda: vmap(lambda a: a, chunk_size=0), ValueError, "chunk_size"),
    ("not callable", lambda: vmap(3), TypeError, "callable"),
    ("backward inside", lambda: vmap(lambda a: a.sum().backward())(randn(3, 2)), RuntimeError,
     "backward"),
]


@pytest.mark.parametrize("name,call,error,words", BAD, ids=[b[0] for b in BAD])
def test_bad_input_raises(name, call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_an_in_place_write_into_a_plain_tensor_raises_and_changes_nothing():
    target = lucid.zeros(3, dtype=F64)
    with pytest.raises(RuntimeError, match="in-place"):
        vmap(lambda a: target.__iadd__(a))(randn(4, 3))
    np.testing.assert_array_equal(target.numpy(), np.zeros(3))


def test_nothing_is_batched_after_vmap_returns():
    out = vmap(lambda a: a * 2)(randn(4, 3))
    assert type(out) is lucid.Tensor
    assert lucid._core._batch_dispatch_on() is False


def test_questions_about_a_batched_tensor_answer_for_one_element():
    seen = []
    vmap(lambda a: seen.append((lucid.is_tensor(a), lucid.numel(a), lucid.is_floating_point(a),
                                a.shape, a.ndim, len(a))) or a)(randn(4, 3, 2))
    assert seen == [(True, 6, True, (3, 2), 2, 3)]


def _rule_less_op(a, b):
    """a * 2 + b, an op outside lucid that sends batched calls to the dispatcher (as a native op
    does) with no batching rule: vmap's fallback loop runs it."""
    out = lucid._core._batch_dispatch_call(_rule_less_op, a, b)
    return a * 2 + b if out is NotImplemented else out


def test_an_op_without_a_rule_loops_warns_once_and_is_counted():
    x, y = randn(4, 5), randn(5)
    with lucid.autograd.profile(record_nodes=False) as prof:
        with pytest.warns(UserWarning, match="lucid._rule_less_op has no batching rule"):
            got = vmap(_rule_less_op, in_dims=(0, None))(x, y)
        with warnings.catch_warnings():
            warnings.simplefilter("error")              # once per op and process
            again = vmap(_rule_less_op, in_dims=(0, None))(x, y)
    assert prof.vmap_fallbacks == 2
    for out in (got, again):
        np.testing.assert_allclose(out.numpy(), x.numpy() * 2 + y.numpy(), rtol=1e-15)


def test_fixed_rank_products_batch_and_check_their_ranks():
    a, b, v = randn(4, 2, 3), randn(4, 3, 5), randn(4, 3)
    np.testing.assert_allclose(vmap(lucid.mm)(a, b).numpy(), a.numpy() @ b.numpy())
    np.testing.assert_allclose(vmap(lucid.bmm)(a.unsqueeze(1), b.unsqueeze(1)).numpy(),
                               (a.numpy() @ b.numpy())[:, None])
    np.testing.assert_allclose(vmap(lucid.dot)(v, v).numpy(), (v.numpy() ** 2).sum(1))
    with pytest.raises(RuntimeError, match="mm: self must be a 2-d tensor"):
        vmap(lucid.mm)(v, v)
