"""Forward-mode AD (lucid.autograd.forward_ad): every op's jvp, the dual-level API, in-place
ops and views of duals, custom Functions, and forward/reverse composition.

The op rows come from the one op table (tests/support/op_table.py); each row's forward-mode Jacobian is compared with central finite differences by
gradcheck(check_forward_ad=True) in float64.
"""
import threading

import numpy as np
import pytest

import lucid
import lucid.autograd.forward_ad as fwAD
from support.checks import assert_close, f64, to_numpy
from support import op_table


# -- every row of the op tables ------------------------------------------------------------------

def _table_cases():
    """(id, spec, shapes, sample) for each row that has a forward-mode derivative."""
    return [(case_id, spec, shapes, op_table.sample) for case_id, spec, shapes in op_table.cases()
            if spec.forward_ad]


TABLE_CASES = _table_cases()


@pytest.mark.parametrize("case_id,spec,shapes,sample", TABLE_CASES,
                         ids=[c[0] for c in TABLE_CASES])
def test_op_jvp_matches_finite_differences(case_id, spec, shapes, sample, rng):
    inputs = tuple(f64(sample(rng, s, d), requires_grad=True)
                   for s, d in zip(shapes, spec.domains))
    assert lucid.autograd.gradcheck(spec.fn, inputs, atol=1e-6, rtol=1e-4, check_forward_ad=True,
                                    check_backward_ad=False)


# -- helpers -----------------------------------------------------------------------------------

def jvp(fn, primals, tangents):
    """(fn(primals), its tangent) by one forward-mode pass."""
    with fwAD.dual_level():
        duals = [fwAD.make_dual(p, t) if t is not None else p for p, t in zip(primals, tangents)]
        out = fn(*duals)
        primal, tangent = fwAD.unpack_dual(out)
        return primal, tangent


def fd_jvp(fn, primals, tangents, eps=1e-6):
    """The same tangent by central differences on fn."""
    def at(sign):
        shifted = [f64(to_numpy(p) + sign * eps * (0 if t is None else to_numpy(t)))
                   for p, t in zip(primals, tangents)]
        with lucid.no_grad():
            return to_numpy(fn(*shifted))
    return (at(1) - at(-1)) / (2 * eps)


# -- selection and reductions: ties like the backward --------------------------------------------

def test_maximum_tie_splits_the_tangent_like_the_backward():
    x, y = f64([1.0, 2.0, 3.0]), f64([1.0, 5.0, 0.0])
    _, t = jvp(lucid.maximum, (x, y), (f64([10.0, 10.0, 10.0]), f64([2.0, 2.0, 2.0])))
    assert_close(t, [6.0, 2.0, 10.0])
    _, t = jvp(lucid.minimum, (x, y), (f64([10.0, 10.0, 10.0]), None))
    assert_close(t, [5.0, 10.0, 0.0])


def test_where_with_one_tangent_uses_zeros_for_the_other():
    c = lucid.tensor([True, False, True])
    x, y = f64([1.0, 2.0, 3.0]), f64([4.0, 5.0, 6.0])
    _, t = jvp(lambda a, b: lucid.where(c, a, b), (x, y), (None, f64([1.0, 2.0, 3.0])))
    assert_close(t, [0.0, 2.0, 0.0])


def test_where_keeps_exact_zeros_for_an_unpicked_inf_tangent():
    c = lucid.tensor([True, False])
    _, t = jvp(lambda a, b: lucid.where(c, a, b), (f64([1.0, 2.0]), f64([3.0, 4.0])),
               (f64([np.inf, 1.0]), f64([2.0, np.nan])))
    assert to_numpy(t)[0] == np.inf and np.isnan(to_numpy(t)[1])
    _, t = jvp(lambda a, b: lucid.where(c, a, b), (f64([1.0, 2.0]), f64([3.0, 4.0])),
               (f64([1.0, np.inf]), None))
    assert_close(t, [1.0, 0.0])


@pytest.mark.parametrize("reduce,expected", [
    (lambda x: x.amax(), 3.0),                                  # (1 + 2 + 3 + 6) / 4
    (lambda x: x.max(dim=1).values, [1.5, 4.5]),
    (lambda x: lucid.amin(x, dim=(0, 1)), 3.0),
    (lambda x: x.min(dim=0, keepdim=True)[0], [[2.0, 4.0]]),
    (lambda x: x.max(), 3.0),
])
def test_extreme_ties_share_the_tangent_equally(reduce, expected):
    x = f64([[2.0, 2.0], [2.0, 2.0]])
    tx = f64([[1.0, 2.0], [3.0, 6.0]])
    _, t = jvp(reduce, (x,), (tx,))
    assert_close(t, expected)
    # the same shares as the backward: <grad, tx> equals the summed tangent
    leaf = f64(to_numpy(x), requires_grad=True)
    (g,) = lucid.autograd.grad(reduce(leaf).sum(), leaf)
    assert_close(np.sum(to_numpy(g) * to_numpy(tx)), np.sum(to_numpy(t)))


def test_max_dim_indices_have_no_tangent():
    with fwAD.dual_level():
        d = fwAD.make_dual(f64([[1.0, 3.0], [4.0, 2.0]]), f64([[1.0, 1.0], [1.0, 1.0]]))
        values, indices = d.max(dim=1)
        assert fwAD.unpack_dual(values).tangent is not None
        assert fwAD.unpack_dual(indices).tangent is None
        assert fwAD.unpack_dual(d > 2.0).tangent is None


# -- matmul shapes ---------------------------------------------------------------------------------

@pytest.mark.parametrize("sx,sy", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)),
                                   ((5, 2, 3), (3, 4)), ((5, 2, 3), (5, 3, 4))])
@pytest.mark.parametrize("which", ["x", "y", "both"])
def test_matmul_jvp_with_missing_tangents(sx, sy, which, rng):
    x, y = f64(rng.standard_normal(sx)), f64(rng.standard_normal(sy))
    tx = f64(rng.standard_normal(sx)) if which != "y" else None
    ty = f64(rng.standard_normal(sy)) if which != "x" else None
    out, t = jvp(lucid.matmul, (x, y), (tx, ty))
    assert t.shape == out.shape
    assert_close(t, fd_jvp(lucid.matmul, (x, y), (tx, ty)), rtol=1e-6, atol=1e-8)


def test_matmul_jvp_promotes_like_the_primal(rng):
    x = lucid.tensor(rng.standard_normal((2, 3)), dtype=lucid.float32)
    y = f64(rng.standard_normal((3, 2)))
    out, t = jvp(lucid.matmul, (x, y), (lucid.ones(2, 3, dtype=lucid.float32), None))
    assert out.dtype == lucid.float64 and t.dtype == lucid.float64


# -- the API: make_dual, unpack_dual, levels --------------------------------------------------------

def test_make_dual_checks_shape_dtype_and_level():
    x = f64([1.0, 2.0])
    with pytest.raises(RuntimeError, match="make_dual needs an active dual level"):
        fwAD.make_dual(x, f64([1.0, 1.0]))
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match=r"shape \(3,\).*\(2,\)"):
            fwAD.make_dual(x, f64([1.0, 1.0, 1.0]))
        with pytest.raises(TypeError, match="floating point"):
            fwAD.make_dual(x, lucid.tensor([1, 2]))
        with pytest.raises(TypeError, match="floating point"):
            fwAD.make_dual(lucid.tensor([1, 2]), f64([1.0, 1.0]))
        with pytest.raises(TypeError, match="Tensor"):
            fwAD.make_dual(x, np.ones(2))
        assert fwAD.unpack_dual(x).tangent is None          # nothing was attached to x
        d = fwAD.make_dual(x, lucid.tensor([1.0, 2.0], dtype=lucid.float32))
        tangent = fwAD.unpack_dual(d).tangent
        assert tangent.dtype == lucid.float64
        assert_close(tangent, [1.0, 2.0])
    assert_close(x, [1.0, 2.0])


def test_make_dual_lays_the_tangent_out_like_the_primal(rng):
    p = f64(rng.standard_normal((3, 4)))
    t = f64(rng.standard_normal((4, 3))).T                   # same shape, other strides
    with fwAD.dual_level():
        d = fwAD.make_dual(p, t)
        tangent = fwAD.unpack_dual(d).tangent
        assert to_numpy(tangent).shape == (3, 4)
        assert tangent.detach().numpy().strides == p.numpy().strides
        assert_close(tangent, t)


def test_unpack_dual_is_a_named_tuple_and_shares_memory():
    x, tx = f64([1.0, 2.0]), f64([3.0, 4.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, tx)
        unpacked = fwAD.unpack_dual(d)
        primal, tangent = unpacked
        assert unpacked.primal is primal and unpacked.tangent is tangent
        assert isinstance(unpacked, tuple) and unpacked._fields == ("primal", "tangent")
        assert tangent is tx                                 # used as is: same layout and dtype
        assert fwAD.unpack_dual(primal).tangent is None      # the primal carries no tangent
        assert np.shares_memory(primal.numpy(), x.numpy())
        assert fwAD.unpack_dual(x * 2.0).tangent is None     # a plain tensor: None
        assert fwAD.unpack_dual(f64([1.0])) == (fwAD.unpack_dual(f64([1.0])).primal, None)


def test_leaving_a_level_drops_the_tangents():
    x = f64([1.0, 2.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, f64([1.0, 1.0]))
        y = d * 3.0
    assert fwAD.unpack_dual(y).tangent is None
    with fwAD.dual_level():                                  # a new level: old tangents are gone
        assert fwAD.unpack_dual(d).tangent is None
        assert fwAD.unpack_dual(y).tangent is None
        z = d * 2.0
        assert fwAD.unpack_dual(z).tangent is None


def test_nested_levels_nest_and_exit_checks():
    with fwAD.dual_level() as outer:
        inner = fwAD.enter_dual_level()          # levels nest (tests/forward/test_nested_forward.py)
        assert inner > outer
        fwAD.exit_dual_level(level=inner)
    with pytest.raises(RuntimeError, match="no dual level is active"):
        fwAD.exit_dual_level()


def test_enter_and_exit_dual_level():
    level = fwAD.enter_dual_level()
    try:
        d = fwAD.make_dual(f64([1.0]), f64([2.0]))
        assert_close(fwAD.unpack_dual(d.exp()).tangent, [2.0 * np.e])
        with pytest.raises(RuntimeError, match="not an active dual level"):
            fwAD.exit_dual_level(level=level + 1)
        with pytest.raises(RuntimeError, match="not an active dual level"):
            fwAD.make_dual(f64([1.0]), f64([2.0]), level=level + 1)
    finally:
        fwAD.exit_dual_level(level=level)
    assert fwAD.unpack_dual(d).tangent is None


def test_dual_level_as_a_decorator():
    @fwAD.dual_level()
    def directional(x, v):
        return fwAD.unpack_dual((fwAD.make_dual(x, v) ** 2).sum()).tangent

    assert_close(directional(f64([1.0, 2.0]), f64([1.0, 1.0])), 6.0)
    with pytest.raises(RuntimeError, match="make_dual needs an active dual level"):
        fwAD.make_dual(f64([1.0]), f64([1.0]))


def test_levels_are_per_thread():
    seen = {}
    with fwAD.dual_level():
        d = fwAD.make_dual(f64([1.0, 2.0]), f64([1.0, 1.0]))

        def other():
            seen["tangent"] = fwAD.unpack_dual(d).tangent
            seen["out"] = fwAD.unpack_dual(d * 2.0).tangent
            try:
                fwAD.make_dual(f64([1.0]), f64([1.0]))
            except RuntimeError as e:
                seen["error"] = str(e)

        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert fwAD.unpack_dual(d).tangent is not None       # still there in this thread
    assert seen["tangent"] is None and seen["out"] is None
    assert "needs an active dual level" in seen["error"]


def test_nothing_carries_tangents_outside_a_level():
    x = f64([1.0, 2.0], requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, f64([1.0, 1.0]))
    y = (d * 2.0).sum()
    assert fwAD.unpack_dual(y).tangent is None
    with fwAD.dual_level():
        assert fwAD.unpack_dual(y).tangent is None
    with lucid.no_grad():
        z = d.exp()
    assert z.grad_fn is None and fwAD.unpack_dual(z).tangent is None


def test_a_level_without_duals_records_nothing_extra():
    x = f64([1.0, 2.0])
    with fwAD.dual_level():
        y = lucid.maximum(x, 1.5).sum() + (x @ x)
        assert y.grad_fn is None and fwAD.unpack_dual(y).tangent is None


# -- views and in-place ops on duals ----------------------------------------------------------------

def test_tangent_of_a_view_is_the_view_of_the_tangent(rng):
    x, tx = f64(rng.standard_normal((3, 4))), f64(rng.standard_normal((3, 4)))
    with fwAD.dual_level():
        d = fwAD.make_dual(x, tx)
        for view in (d[1], d[:, 1:3], d.T, d.transpose(0, 1), d.reshape(12), d.view(4, 3),
                     d.unsqueeze(0), d[None].squeeze(0), d.permute(1, 0), d.flatten()):
            tangent = fwAD.unpack_dual(view).tangent
            assert np.shares_memory(tangent.numpy(), tx.numpy())
        expanded = fwAD.unpack_dual(d[0:1].expand(5, 4)).tangent
        assert_close(expanded, np.broadcast_to(to_numpy(tx)[0:1], (5, 4)))
        copied = fwAD.unpack_dual(d[[0, 2]]).tangent               # index arrays copy
        assert not np.shares_memory(copied.numpy(), tx.numpy())
        assert_close(copied, to_numpy(tx)[[0, 2]])


def test_outputs_with_memory_of_their_own_get_tangents_of_their_own():
    x, tx = f64([1.0, 2.0]), f64([1.0, 1.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, tx)
        for out in (d + 1.0, d + f64([0.0, 0.0]), 1.0 - (-d), d.T.reshape(2).clone()):
            assert not np.shares_memory(fwAD.unpack_dual(out).tangent.numpy(), tx.numpy())
        y = d + 1.0
        y.mul_(3.0)
        assert_close(fwAD.unpack_dual(y).tangent, [3.0, 3.0])
        assert_close(tx, [1.0, 1.0])                             # d's tangent is untouched
        nc = fwAD.make_dual(f64([[1.0, 2.0], [3.0, 4.0]]).T, f64([[1.0, 1.0], [1.0, 1.0]]))
        flat = nc.reshape(4)                                     # a copy of a transposed dual
        flat.mul_(2.0)
        assert_close(fwAD.unpack_dual(nc).tangent, np.ones((2, 2)))


@pytest.mark.parametrize("op,expected", [
    (lambda x, v: x.add_(v), lambda x, tx, v, tv: tx + tv),
    (lambda x, v: x.sub_(v), lambda x, tx, v, tv: tx - tv),
    (lambda x, v: x.mul_(v), lambda x, tx, v, tv: tx * v + x * tv),
    (lambda x, v: x.div_(v), lambda x, tx, v, tv: tx / v - x * tv / v ** 2),
    (lambda x, v: x.copy_(v), lambda x, tx, v, tv: np.broadcast_to(tv, x.shape)),
    (lambda x, v: x.__iadd__(v), lambda x, tx, v, tv: tx + tv),
    (lambda x, v: x.__imul__(v), lambda x, tx, v, tv: tx * v + x * tv),
])
@pytest.mark.parametrize("duals", ["both", "self", "value"])
@pytest.mark.parametrize("vshape", [(2, 3), (3,), ()])
def test_inplace_ops_on_duals(op, expected, duals, vshape, rng):
    x0 = rng.uniform(0.5, 2.0, (2, 3))
    v0 = rng.uniform(0.5, 2.0, vshape)
    tx0 = rng.standard_normal((2, 3)) if duals != "value" else np.zeros((2, 3))
    tv0 = rng.standard_normal(vshape) if duals != "self" else np.zeros(vshape)
    with fwAD.dual_level():
        x = fwAD.make_dual(f64(x0), f64(tx0)) if duals != "value" else f64(x0)
        v = fwAD.make_dual(f64(v0), f64(tv0)) if duals != "self" else f64(v0)
        result = op(x, v)
        assert result is x
        tangent = fwAD.unpack_dual(x).tangent
    assert tangent is not None
    assert_close(tangent, expected(x0, tx0, v0, tv0), rtol=1e-12, atol=1e-12)


def test_inplace_op_on_itself():
    with fwAD.dual_level():
        x = fwAD.make_dual(f64([1.0, 2.0]), f64([1.0, 10.0]))
        x.mul_(x)                                    # d(x*x) = 2*x*tx
        assert_close(fwAD.unpack_dual(x).tangent, [2.0, 40.0])
        y = fwAD.make_dual(f64([1.0, 2.0]), f64([1.0, 10.0]))
        y.add_(y)
        assert_close(fwAD.unpack_dual(y).tangent, [2.0, 20.0])


@pytest.mark.parametrize("op", [lambda x: x.fill_(3.0), lambda x: x.zero_(),
                                lambda x: x.copy_(f64([5.0, 6.0]))])
def test_fill_zero_and_copy_of_a_constant_give_a_zero_tangent(op):
    with fwAD.dual_level():
        x = fwAD.make_dual(f64([1.0, 2.0]), f64([1.0, 1.0]))
        op(x)
        assert_close(fwAD.unpack_dual(x).tangent, [0.0, 0.0])
        plain = f64([1.0, 2.0])
        op(plain)
        assert fwAD.unpack_dual(plain).tangent is None


@pytest.mark.parametrize("index", [1, (slice(None), 0), [0, 0], (1, slice(1, 3))])
@pytest.mark.parametrize("duals", ["both", "self", "value"])
def test_setitem_replaces_the_indexed_part_of_the_tangent(index, duals, rng):
    x0, tx0 = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    shape = np.zeros((2, 3))[index].shape
    v0, tv0 = rng.standard_normal(shape), rng.standard_normal(shape)
    with fwAD.dual_level():
        x = fwAD.make_dual(f64(x0), f64(tx0)) if duals != "value" else f64(x0)
        v = fwAD.make_dual(f64(v0), f64(tv0)) if duals != "self" else f64(v0)
        x[index] = v
        tangent = fwAD.unpack_dual(x).tangent
    expected = tx0.copy() if duals != "value" else np.zeros((2, 3))
    expected[index] = tv0 if duals != "self" else 0.0
    assert_close(tangent, expected)
    primal = x0.copy()
    primal[index] = v0
    assert_close(x, primal)


def test_inplace_on_a_view_of_a_dual_reaches_the_base(rng):
    x0, tx0 = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    with fwAD.dual_level():
        x = fwAD.make_dual(f64(x0), f64(tx0))
        row = x[1]
        col = x[:, 2]                                # another view, taken before the change
        row.mul_(3.0)
        expected = tx0.copy()
        expected[1] *= 3.0
        assert_close(fwAD.unpack_dual(x).tangent, expected)
        assert_close(fwAD.unpack_dual(col).tangent, expected[:, 2])
        v = fwAD.make_dual(f64(np.ones(4)), f64(np.full(4, 7.0)))
        x.T[:, 0].copy_(v)                           # a view of a view
        expected[0] = 7.0
        assert_close(fwAD.unpack_dual(x).tangent, expected)
        assert_close(fwAD.unpack_dual(row).tangent, expected[1])


def test_inplace_dual_value_into_a_view_of_a_plain_tensor_gives_the_base_a_tangent():
    base = f64(np.zeros((2, 3)))
    with fwAD.dual_level():
        view = base[1]
        view.copy_(fwAD.make_dual(f64([1.0, 2.0, 3.0]), f64([4.0, 5.0, 6.0])))
        assert_close(fwAD.unpack_dual(view).tangent, [4.0, 5.0, 6.0])
        assert_close(fwAD.unpack_dual(base).tangent, [[0.0, 0.0, 0.0], [4.0, 5.0, 6.0]])
        base2 = f64(np.zeros((2, 3)))
        base2[:, 1] = fwAD.make_dual(f64([1.0, 2.0]), f64([8.0, 9.0]))
        assert_close(fwAD.unpack_dual(base2).tangent, [[0.0, 8.0, 0.0], [0.0, 9.0, 0.0]])


def test_inplace_errors_leave_primal_and_tangent_unchanged():
    with fwAD.dual_level():
        x = fwAD.make_dual(f64([1.0, 2.0]), f64([1.0, 1.0]))
        v = fwAD.make_dual(f64([1.0, 2.0, 3.0]), f64([5.0, 5.0, 5.0]))
        with pytest.raises(RuntimeError, match="shape"):
            x.add_(v)
        with pytest.raises(IndexError):
            x[5] = v[0]
        assert_close(x, [1.0, 2.0])
        assert_close(fwAD.unpack_dual(x).tangent, [1.0, 1.0])
        plain = f64([1.0, 2.0])
        with pytest.raises(RuntimeError):
            plain.add_(v)
        assert fwAD.unpack_dual(plain).tangent is None


def test_non_contiguous_and_zero_dim_inputs(rng):
    x0 = rng.standard_normal((4, 3))
    t0 = rng.standard_normal((4, 3))
    fn = lambda a: (a.exp() * a).sum(dim=0) + lucid.amax(a, dim=0)
    out, t = jvp(fn, (f64(x0).T,), (f64(t0).T,))
    assert_close(t, fd_jvp(fn, (f64(x0).T,), (f64(t0).T,)), rtol=1e-6, atol=1e-8)
    fn0 = lambda a: (a * a).reshape(1, 1).expand(2, 3)[1, 2] + lucid.stack([a, a]).sum()
    out, t = jvp(fn0, (f64(1.5),), (f64(2.0),))
    assert t.shape == ()
    assert_close(t, 2 * 1.5 * 2.0 + 2 * 2.0)


# -- custom Functions -------------------------------------------------------------------------------

class Cube(lucid.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3.0 * x * x

    @staticmethod
    def jvp(ctx, tx):
        (x,) = ctx.saved_tensors
        return tx * 3.0 * x * x


class NoJvp(lucid.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        return g * 2.0


class SplitAndArgmax(lucid.autograd.Function):
    """(x * y, x + y, argmax(x)) with the last output non-differentiable."""

    @staticmethod
    def forward(ctx, x, y, scale):
        ctx.scale = scale
        ctx.save_for_forward(x, y)
        idx = lucid.tensor(int(np.argmax(x.detach().numpy())))
        ctx.mark_non_differentiable(idx)
        return x * y * scale, x + y, idx

    @staticmethod
    def backward(ctx, g1, g2, g3):
        raise AssertionError("not used")

    @staticmethod
    def jvp(ctx, tx, ty, tscale):
        assert tscale is None
        x, y = ctx.saved_tensors
        first = None
        if tx is not None:
            first = tx * y * ctx.scale
        if ty is not None:
            first = ty * x * ctx.scale if first is None else first + ty * x * ctx.scale
        second = tx if ty is None else (ty if tx is None else tx + ty)
        return first, second, f64(1.0)


def test_function_with_jvp(rng):
    x0 = rng.standard_normal(4)
    assert lucid.autograd.gradcheck(Cube.apply, (f64(x0, requires_grad=True),),
                                    check_forward_ad=True)
    _, t = jvp(Cube.apply, (f64(x0),), (f64(np.ones(4)),))
    assert_close(t, 3 * x0 ** 2)


def test_function_without_jvp_raises_naming_it():
    with fwAD.dual_level():
        d = fwAD.make_dual(f64([1.0]), f64([1.0]))
        with pytest.raises(RuntimeError, match="NoJvp.*jvp"):
            NoJvp.apply(d)
        assert_close(NoJvp.apply(f64([1.0])), [2.0])        # no dual input: fine


def test_multi_output_function_and_non_differentiable_outputs():
    x0, y0 = np.array([1.0, 3.0]), np.array([2.0, 5.0])
    tx0 = np.array([1.0, -1.0])
    with fwAD.dual_level():
        x = fwAD.make_dual(f64(x0), f64(tx0))
        prod, total, idx = SplitAndArgmax.apply(x, f64(y0), 2.0)
        assert_close(fwAD.unpack_dual(prod).tangent, tx0 * y0 * 2.0)
        second = fwAD.unpack_dual(total).tangent
        assert_close(second, tx0)
        assert not np.shares_memory(second.numpy(), fwAD.unpack_dual(x).tangent.numpy())
        assert fwAD.unpack_dual(idx).tangent is None
        assert idx.item() == 1


def test_function_gradcheck_with_two_inputs(rng):
    fn = lambda x, y: SplitAndArgmax.apply(x, y, 1.5)[:2]
    x = f64(rng.standard_normal(3), requires_grad=True)
    y = f64(rng.standard_normal(3), requires_grad=True)
    assert lucid.autograd.gradcheck(fn, (x, y), check_forward_ad=True, check_backward_ad=False)


# -- forward and reverse composed ------------------------------------------------------------------

def _mlp(params, x):
    w1, b1, w2 = params
    h = lucid.tanh(x @ w1 + b1)
    return (h @ w2).sum() + (h * h).mean()


def _mlp_inputs(rng):
    x = f64(rng.standard_normal((5, 3)))
    params = [f64(rng.standard_normal((3, 4)) * 0.5), f64(rng.standard_normal(4) * 0.5),
              f64(rng.standard_normal((4, 2)) * 0.5)]
    vs = [rng.standard_normal(p.shape) for p in params]
    return x, params, vs


def _gradient(params, x):
    leaves = [p.detach().requires_grad_(True) for p in params]
    return [to_numpy(g) for g in lucid.autograd.grad(_mlp(leaves, x), leaves)]


def _fd_hvp(params, x, vs, eps=1e-5):
    plus = _gradient([f64(to_numpy(p) + eps * v) for p, v in zip(params, vs)], x)
    minus = _gradient([f64(to_numpy(p) - eps * v) for p, v in zip(params, vs)], x)
    return [(a - b) / (2 * eps) for a, b in zip(plus, minus)]


def test_forward_over_reverse_hvp_matches_finite_differences(rng):
    x, params, vs = _mlp_inputs(rng)
    expected = _fd_hvp(params, x, vs)
    leaves = [p.detach().requires_grad_(True) for p in params]
    with fwAD.dual_level():
        duals = [fwAD.make_dual(p, f64(v)) for p, v in zip(leaves, vs)]
        grads = lucid.autograd.grad(_mlp(duals, x), duals)
        hvp = [fwAD.unpack_dual(g).tangent for g in grads]
    for got, want in zip(hvp, expected):
        assert_close(got, want, rtol=1e-5, atol=1e-7)


def test_reverse_over_forward_matches_finite_differences(rng):
    # d/dp of the directional derivative jvp(p; v) = <grad f(p), v> is H v
    x, params, vs = _mlp_inputs(rng)
    expected = _fd_hvp(params, x, vs)
    leaves = [p.detach().requires_grad_(True) for p in params]
    with fwAD.dual_level():
        duals = [fwAD.make_dual(p, f64(v)) for p, v in zip(leaves, vs)]
        directional = fwAD.unpack_dual(_mlp(duals, x)).tangent
    assert directional.requires_grad
    hvp = lucid.autograd.grad(directional, leaves)
    for got, want in zip(hvp, expected):
        assert_close(got, want, rtol=1e-5, atol=1e-7)


def test_reverse_over_forward_through_tangents_that_require_grad(rng):
    # the tangent itself is a leaf: d<J v>/dv = J^T 1 for a linear-in-v jvp
    x0 = rng.standard_normal((3, 3))
    v = f64(rng.standard_normal((3, 3)), requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(f64(x0), v)
        out = (d @ d.T).amax(dim=1).sum() + lucid.cat([d, d[0:1]]).mean()
        tangent = fwAD.unpack_dual(out).tangent
    (g,) = lucid.autograd.grad(tangent, v)
    x = f64(x0, requires_grad=True)
    (expected,) = lucid.autograd.grad((x @ x.T).amax(dim=1).sum() +
                                      lucid.cat([x, x[0:1]]).mean(), x)
    assert_close(g, expected, rtol=1e-10, atol=1e-12)


def test_forward_over_reverse_through_index_and_select_backwards(rng):
    x0, v0 = rng.standard_normal(6), rng.standard_normal(6)
    f = lambda a: (a[[0, 0, 3]] ** 2).sum() + (lucid.maximum(a, 0.1) ** 3).sum() + \
        a.reshape(2, 3).amax(dim=0).exp().sum()
    leaf = f64(x0, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(leaf, f64(v0))
        (g,) = lucid.autograd.grad(f(d), d)
        hvp = fwAD.unpack_dual(g).tangent

    def grad_at(p):
        a = f64(p, requires_grad=True)
        return to_numpy(lucid.autograd.grad(f(a), a)[0])
    eps = 1e-6
    assert_close(hvp, (grad_at(x0 + eps * v0) - grad_at(x0 - eps * v0)) / (2 * eps),
                 rtol=1e-5, atol=1e-6)


def test_forward_over_reverse_with_saved_tensor_hooks(rng):
    x0, v0 = rng.standard_normal(4), rng.standard_normal(4)
    leaf = f64(x0, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(leaf, f64(v0))
        with lucid.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = (d * d * d).sum()
        (g,) = lucid.autograd.grad(y, d)
        assert_close(fwAD.unpack_dual(g).tangent, 6 * x0 * v0)


def test_once_differentiable_backward_passes_tangents_through(rng):
    class Square(lucid.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @lucid.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2.0 * x

        @staticmethod
        def jvp(ctx, tx):
            raise AssertionError("the primal is not a dual here")

    x0 = rng.standard_normal(3)
    leaf = f64(x0, requires_grad=True)
    y = Square.apply(leaf).sum()
    seed_leaf = f64(1.0, requires_grad=True)
    with fwAD.dual_level():
        seed = fwAD.make_dual(seed_leaf, f64(2.0))          # the gradient seed is a dual
        (g,) = lucid.autograd.grad(y, leaf, seed, create_graph=True)
        assert_close(fwAD.unpack_dual(g).tangent, 2.0 * 2.0 * x0)
        with pytest.raises(RuntimeError, match="once_differentiable"):
            lucid.autograd.grad(g.sum(), seed_leaf)


def test_numpy_ufuncs_on_duals_go_through_the_ops():
    with fwAD.dual_level():
        d = fwAD.make_dual(f64([1.0, 2.0]), f64([1.0, 1.0]))
        for out, expected in ((np.exp(d), np.exp([1.0, 2.0])), (np.ones(2) * d, [1.0, 1.0]),
                              (np.maximum(d, 1.5), [0.0, 1.0]), (np.float64(3.0) - d, [-1.0, -1.0])):
            assert isinstance(out, lucid.Tensor)
            assert_close(fwAD.unpack_dual(out).tangent, expected)


@pytest.mark.parametrize("op", [lucid.tanh, lucid.exp, lucid.sigmoid, lucid.sqrt])
def test_a_recorded_tangent_does_not_keep_its_output_alive(op):
    # a rule reading the output (tanh: t*(1 - y*y)) must not make y -> tangent -> node -> y
    import weakref
    leaf = f64([1.0, 2.0], requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(leaf, f64([1.0, 1.0], requires_grad=True))
        y = op(d)
        assert fwAD.unpack_dual(y).tangent.requires_grad
        ref = weakref.ref(y)
        del y
        assert ref() is None


def _inplace_program(x, y):
    z = x.clone()
    z.mul_(y)
    z[1] = y * 2.0
    z.div_(y * y + 3.0)
    z.sub_(x)
    z += y.exp()
    return z


def _inplace_view_program(x, y):
    z = x * 1.0
    with lucid.no_grad():                 # views changed in place (forward mode needs no graph)
        z[:, 1].mul_(y[0])
        z.T[2].copy_(y)
        z[0].add_(y)
    return z


@pytest.mark.parametrize("program", [_inplace_program, _inplace_view_program])
def test_programs_with_inplace_ops_match_finite_differences(program, rng):
    x = f64(rng.uniform(0.5, 2.0, (3, 3)), requires_grad=True)
    y = f64(rng.uniform(0.5, 2.0, 3), requires_grad=True)
    assert lucid.autograd.gradcheck(program, (x, y), check_forward_ad=True,
                                    check_backward_ad=program is _inplace_program)


def test_reverse_over_forward_through_inplace_ops(rng):
    x0, y0 = rng.uniform(0.5, 2.0, (3, 3)), rng.uniform(0.5, 2.0, 3)
    vx, vy = rng.standard_normal((3, 3)), rng.standard_normal(3)
    f = lambda x, y: (_inplace_program(x, y) ** 2).sum()
    x, y = f64(x0, requires_grad=True), f64(y0, requires_grad=True)
    with fwAD.dual_level():
        directional = fwAD.unpack_dual(f(fwAD.make_dual(x, f64(vx)),
                                         fwAD.make_dual(y, f64(vy)))).tangent
    gx, gy = lucid.autograd.grad(directional, (x, y))

    def grads_at(sign, eps=1e-6):
        a = f64(x0 + sign * eps * vx, requires_grad=True)
        b = f64(y0 + sign * eps * vy, requires_grad=True)
        return [to_numpy(g) for g in lucid.autograd.grad(f(a, b), (a, b))]
    plus, minus = grads_at(1), grads_at(-1)
    assert_close(gx, (plus[0] - minus[0]) / 2e-6, rtol=1e-5, atol=1e-6)
    assert_close(gy, (plus[1] - minus[1]) / 2e-6, rtol=1e-5, atol=1e-6)
