"""A complex number's parts and the ops that build complex tensors (API.md section 15): conj,
real, imag, angle, abs, complex, polar, view_as_real, view_as_complex, and complex * and /, each
against PyTorch in value, gradient, double backward and forward mode, with their views' memory
and their errors. Finite differences of the real and imaginary parts: tests/ops/test_complex.py."""
import numpy as np
import pytest

import lucid
import lucid.autograd.forward_ad as fwl

torch = pytest.importorskip("torch", reason="torch is not installed: the complex tests compare "
                            "with PyTorch")
fwt = torch.autograd.forward_ad

RNG = np.random.default_rng(7)
Z = RNG.standard_normal((2, 3)) + 1j * RNG.standard_normal((2, 3))
W = RNG.standard_normal(3) + 1j * RNG.standard_normal(3)
X = RNG.standard_normal((2, 3))
Y = RNG.uniform(0.5, 2.0, 3)


# programs of complex leaves (z: (2, 3) complex, w: (3,) complex, x: (2, 3) real, y: (3,) real)
PROGRAMS = {
    "mul": lambda m, z, w, x, y: z * w,
    "div": lambda m, z, w, x, y: z / w,
    "mul real": lambda m, z, w, x, y: x * w,
    "div real": lambda m, z, w, x, y: y / z,
    "scalar": lambda m, z, w, x, y: (2.5 - 1j) * z / 3j,
    "conj": lambda m, z, w, x, y: m.conj(z) * w,
    "conj method": lambda m, z, w, x, y: z.conj() * z,
    "conj_physical": lambda m, z, w, x, y: m.conj_physical(z * w),
    "real": lambda m, z, w, x, y: m.real(z * w),
    "imag": lambda m, z, w, x, y: m.imag(z * w) * x,
    "real property": lambda m, z, w, x, y: (z / w).real + (z * w).imag,
    "abs": lambda m, z, w, x, y: m.abs(z * w),
    "abs operator": lambda m, z, w, x, y: abs(z - w) * y,
    "angle": lambda m, z, w, x, y: m.angle(z * w),
    "angle of real": lambda m, z, w, x, y: m.angle(x - 0.1) * y,
    "complex": lambda m, z, w, x, y: m.complex(x, y) * w,
    "polar": lambda m, z, w, x, y: m.polar(y, x) * z,
    "view_as_real": lambda m, z, w, x, y: m.view_as_real(z * w) * 2.0,
    "view_as_complex": lambda m, z, w, x, y: m.view_as_complex(m.view_as_real(z) * y[:, None]),
    "mul_": lambda m, z, w, x, y: (z * 1.0).mul_(w),
    "div_": lambda m, z, w, x, y: (z + 0).div_(w).mul_(x),
    "round trip": lambda m, z, w, x, y: m.abs(m.view_as_complex(m.stack([x, x * 2], -1))),
}


def leaves(m, requires_grad=True):
    make = (lambda v: lucid.tensor(v, requires_grad=requires_grad)) if m is lucid else \
        (lambda v: torch.tensor(v, requires_grad=requires_grad))
    return [make(v) for v in (Z, W, X, Y)]


def as_numpy(t):
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().numpy()
    return t.detach().numpy()


def cotangent(out, seed=0):
    rng = np.random.default_rng(seed)
    shape = tuple(out.shape)
    g = rng.standard_normal(shape)
    return g + 1j * rng.standard_normal(shape) if as_numpy(out).dtype.kind == "c" else g


def grads(m, name, create_graph=False):
    """(output, the leaves' gradients) of program name under m."""
    ls = leaves(m)
    out = PROGRAMS[name](m, *ls)
    g = cotangent(out)
    seed = lucid.tensor(g) if m is lucid else torch.from_numpy(g)
    gs = m.autograd.grad(out, ls, seed, allow_unused=True, create_graph=create_graph)
    return out, ls, gs


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_value_and_gradient_match_torch(name):
    out, _, got = grads(lucid, name)
    tout, _, want = grads(torch, name)
    assert as_numpy(out).dtype == as_numpy(tout).dtype
    np.testing.assert_allclose(as_numpy(out), as_numpy(tout), rtol=1e-12, atol=1e-14)
    for g, t in zip(got, want):
        assert_same_gradient(g, t, name, rtol=1e-10, atol=1e-12)


def assert_same_gradient(g, t, where, rtol, atol):
    """lucid's gradient g equals torch's t; None (no path) and zeros are the same gradient: torch
    leaves angle's real input out of the graph, lucid gives it zeros."""
    if g is None or t is None:
        other = t if g is None else g
        assert other is None or not np.any(as_numpy(other)), where
        return
    assert as_numpy(g).dtype == as_numpy(t).dtype, where
    np.testing.assert_allclose(as_numpy(g), as_numpy(t), rtol=rtol, atol=atol, err_msg=where)


def real_loss(m, g):
    """A real scalar of each gradient: sum |g|^2 (complex and real alike)."""
    return sum((gi * gi.conj()).real.sum() if as_numpy(gi).dtype.kind == "c" else (gi * gi).sum()
               for gi in g if gi is not None)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_double_backward_matches_torch(name):
    results = []
    for m in (lucid, torch):
        _, ls, gs = grads(m, name, create_graph=True)
        loss = real_loss(m, gs)
        if not loss.requires_grad:              # the gradients are constants: nothing more
            results.append([None] * len(ls))
            continue
        results.append(m.autograd.grad(loss, ls, allow_unused=True))
    for g, t in zip(*results):
        assert_same_gradient(g, t, name, rtol=1e-9, atol=1e-11)


def tangents():
    rng = np.random.default_rng(11)
    return [rng.standard_normal(v.shape) + (1j * rng.standard_normal(v.shape)
                                            if v.dtype.kind == "c" else 0) for v in (Z, W, X, Y)]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_forward_mode_matches_torch(name):
    results = []
    for m, fw in ((lucid, fwl), (torch, fwt)):
        with fw.dual_level():
            duals = [fw.make_dual(p, lucid.tensor(t) if m is lucid else torch.from_numpy(t))
                     for p, t in zip(leaves(m, False), tangents())]
            out = PROGRAMS[name](m, *duals)
            results.append(fw.unpack_dual(out).tangent)
    got, want = results
    if want is None or not np.any(as_numpy(want)):
        assert got is None or not np.any(as_numpy(got)), name
        return
    np.testing.assert_allclose(as_numpy(got), as_numpy(want), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["abs", "angle"])
def test_abs_and_angle_have_zero_gradient_at_zero_as_torch(name):
    got, want = [], []
    for m, out in ((lucid, got), (torch, want)):
        z = m.tensor(np.array([0j, 1 + 1j]), requires_grad=True)
        getattr(m, name)(z).sum().backward()
        out.append(as_numpy(z.grad))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-15)
    assert got[0][0] == 0


def test_real_and_imag_are_views_of_the_complex_memory():
    z = lucid.tensor([1 + 2j, 3 - 4j])
    re, im = z.real, lucid.imag(z)
    assert re.dtype == lucid.float32 and im.dtype == lucid.float32
    re.mul_(10.0)
    im.add_(1.0)
    assert z.tolist() == [10 + 3j, 30 - 3j]
    z.add_(lucid.tensor([1j, 1j]))                # the views see the base's writes
    assert im.tolist() == [4.0, -2.0]
    assert z._version == re._version


def test_real_of_a_real_tensor_is_itself_and_imag_refuses_it():
    x = lucid.tensor([1.0, 2.0])
    assert lucid.real(x) is x and x.real is x and lucid.conj(x) is x
    assert lucid.conj_physical(x) is x and x.conj() is x
    for f in (lambda: lucid.imag(x), lambda: x.imag):
        with pytest.raises(RuntimeError, match="imag is not implemented for tensors with "
                                               "non-complex dtypes"):
            f()
    with pytest.raises(RuntimeError):
        torch.tensor([1.0]).imag
    assert x.tolist() == [1.0, 2.0]


def test_conj_is_physical():
    z = lucid.tensor([1 + 2j])
    c = z.conj()
    assert not c.is_conj() and c.resolve_conj() is c
    assert c.numpy().tolist() == [1 - 2j]        # numpy() of it always works (API.md 15)
    c.add_(lucid.tensor([1.0 + 0j]))
    assert z.tolist() == [1 + 2j]                # its own memory


def test_view_as_real_and_view_as_complex_share_memory():
    z = lucid.tensor(np.array([[1 + 2j, 3 - 4j]]), dtype=lucid.complex64)
    v = lucid.view_as_real(z)
    assert v.shape == (1, 2, 2) and v.dtype == lucid.float32
    v[0, 1, 1] = 7.0
    assert z.tolist() == [[1 + 2j, 3 + 7j]]
    back = lucid.view_as_complex(v)
    assert back.dtype == lucid.complex64 and back.shape == (1, 2)
    back.mul_(2.0)
    assert v.tolist() == [[[2.0, 4.0], [6.0, 14.0]]]


def test_view_as_real_of_a_strided_and_a_0d_tensor_matches_torch():
    for v in (Z[:, ::2], np.array(Z[0, 1]), Z.T):
        got = lucid.view_as_real(lucid.tensor(v))
        want = torch.view_as_real(torch.tensor(v))
        assert got.shape == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("make", [lambda m: m.zeros((2, 3, 0, 2), dtype=m.float64),
                                  lambda m: m.zeros((2, 6, 2), dtype=m.float64)[:, 0:0],
                                  lambda m: m.zeros((0, 2), dtype=m.float64)])
def test_view_as_complex_of_a_0_size_tensor_matches_torch_and_has_a_gradient(make):
    """NumPy gives 0-size arrays strides of 0: no layout to refuse (gradgradcheck's 0-size
    complex grad outputs go through here as pairs)."""
    x = make(lucid).requires_grad_()
    z = lucid.view_as_complex(x)
    assert z.shape == tuple(torch.view_as_complex(make(torch)).shape) and z.dtype.kind == "c"
    (z * 2).sum().real.backward()
    assert x.grad.shape == x.shape


VIEW_AS_COMPLEX_ERRORS = {
    "not last dim 2": lambda m: m.ones((2, 3), dtype=m.float64),
    "0-d": lambda m: m.ones((), dtype=m.float64),
    "last stride": lambda m: m.ones((2, 4), dtype=m.float64)[:, ::2],
    "odd stride": lambda m: m.ones((3, 3), dtype=m.float64)[:, 1:],
    "odd offset": lambda m: m.ones(6, dtype=m.float64)[1:5].reshape(2, 2),
    "integer": lambda m: m.ones((2, 2), dtype=m.int64),
}


@pytest.mark.parametrize("case", sorted(VIEW_AS_COMPLEX_ERRORS))
def test_view_as_complex_refuses_what_torch_refuses_and_changes_nothing(case):
    with pytest.raises(RuntimeError) as torch_error:
        torch.view_as_complex(VIEW_AS_COMPLEX_ERRORS[case](torch))
    x = VIEW_AS_COMPLEX_ERRORS[case](lucid)
    before = x.numpy().copy()
    with pytest.raises(RuntimeError) as error:
        lucid.view_as_complex(x)
    assert str(torch_error.value).split("\n")[0] in str(error.value)
    np.testing.assert_array_equal(x.numpy(), before)


def test_view_as_real_refuses_a_real_tensor():
    x = lucid.ones(2)
    with pytest.raises(RuntimeError, match="view_as_real is only supported for complex tensors"):
        lucid.view_as_real(x)
    with pytest.raises(RuntimeError, match="view_as_real is only supported for complex tensors"):
        torch.view_as_real(torch.ones(2))


@pytest.mark.parametrize("name", ["complex", "polar"])
def test_complex_and_polar_refuse_mixed_or_integer_dtypes_as_torch(name):
    for a, b in (("float32", "float64"), ("int64", "int64")):
        with pytest.raises(RuntimeError) as want:
            getattr(torch, name)(torch.ones(2, dtype=getattr(torch, a)),
                                 torch.ones(2, dtype=getattr(torch, b)))
        with pytest.raises(RuntimeError) as got:
            getattr(lucid, name)(lucid.ones(2, dtype=getattr(lucid, a)),
                                 lucid.ones(2, dtype=getattr(lucid, b)))
        assert str(got.value).startswith(f"{name}: ")
        assert str(want.value) in str(got.value)


def test_complex_and_polar_keep_the_precision():
    for dt, cdt in (("float32", lucid.complex64), ("float64", lucid.complex128)):
        a = lucid.ones(2, dtype=getattr(lucid, dt))
        assert lucid.complex(a, a).dtype == cdt and lucid.polar(a, a).dtype == cdt


@pytest.mark.parametrize("n", [5, 5000])                 # the typed loop, NumPy's kernels
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_angle_of_real_values_as_torch(n, dtype):
    v = np.resize(np.array([-1.0, 0.0, np.nan, 2.0, -0.0, -np.inf, np.inf]), n).astype(dtype)
    x = lucid.tensor(v, requires_grad=True)
    got = lucid.angle(x)
    np.testing.assert_array_equal(got.detach().numpy(), torch.angle(torch.tensor(v)).numpy())
    got.backward(lucid.tensor(np.full(n, np.nan, dtype=dtype)))
    assert x.grad.dtype == x.dtype and not np.any(x.grad.numpy())   # exactly 0, NaN too
    assert lucid.angle(lucid.tensor([-1, 2])).dtype == lucid.float32


def test_make_dual_takes_complex_primals_and_refuses_a_complex_tangent_of_a_real_one():
    with fwl.dual_level():
        d = fwl.make_dual(lucid.tensor([1 + 1j]), lucid.tensor([1.0]))
        assert fwl.unpack_dual(d).tangent.dtype == lucid.complex64
        with pytest.raises(TypeError, match="a complex tangent needs a complex primal"):
            fwl.make_dual(lucid.tensor([1.0]), lucid.tensor([1j]))


def test_gradient_descent_on_a_complex_leaf_descends():
    """z -= lr * z.grad descends a real loss (the convention's point): |z - c|^2 to its minimum."""
    c = lucid.tensor([1 - 2j, 0.5j], dtype=lucid.complex128)
    z = lucid.zeros(2, dtype=lucid.complex128, requires_grad=True)
    losses = []
    for _ in range(50):
        loss = (lucid.abs(z - c) ** 2).sum()
        losses.append(loss.item())
        z.grad = None
        loss.backward()
        with lucid.no_grad():
            z -= 0.1 * z.grad
    assert losses[-1] < 1e-6 * losses[0]
    np.testing.assert_allclose(z.detach().numpy(), c.numpy(), atol=1e-4)
