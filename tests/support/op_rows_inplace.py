"""Op-table rows for the in-place ops (ops/elementwise/inplace.pxi): add_ sub_ mul_ div_ (with a tensor or a
number, alpha, and the operators += -= *= /=), copy_ fill_ zero_ and setitem.

Each row writes into a copy of its first input (``x.clone()``: a non-leaf, so the write is
recorded, as it is on any intermediate value) and returns it; so every table-driven check (values,
gradcheck, gradgradcheck, forward mode, float32, strided inputs) and the random programs of
tests/reliability/test_property.py (plain, forward-over-reverse and reverse-over-forward) run through the
in-place nodes. The binary rows have ``inplace`` set: the other input broadcasts to the first's
shape, which is the result's. The in-place forms made from out-of-place ops
(exp_, clamp_, masked_fill_, t_, unsqueeze_, ...: Note [In-place forms]) have rows too.
setitem has no expression form; its rows write
``(lambda c: c.__setitem__(key, y) or c)(x.clone())``, which prints and runs as it is.
"""
import numpy as np

import lucid
from .op_spec import ANY, CLAMP, HI, LO, NONZERO, POS, UNARY_SHAPES, Rows

ROWS = Rows()
_row, _elementwise = ROWS.op, ROWS.elementwise

# the second input broadcasts to the first's shape (never the other way)
INTO_SHAPES = (
    ((3, 4), (3, 4)),
    ((3, 4), (4,)),
    ((3, 4), (3, 1)),
    ((2, 3), ()),
    ((), ()),
    ((2, 1, 3), (1, 3)),
)


def _into(ref):
    """ref(a, b) broadcast to a's shape (what an in-place write into a gives)."""
    return lambda a, b: np.broadcast_to(ref(a, b), np.shape(a)).copy()


def _setitem_ref(key):
    def ref(a, b):
        out = np.array(a, copy=True)
        out[key] = b
        return out
    return ref


_elementwise("add_", lambda x, y: x.clone().add_(y), _into(np.add), INTO_SHAPES, (ANY, ANY),
             inplace=True)
_elementwise("add_alpha", lambda x, y: x.clone().add_(y, alpha=2.5),
             _into(lambda a, b: a + 2.5 * b), INTO_SHAPES, (ANY, ANY), inplace=True)
_elementwise("sub_", lambda x, y: x.clone().sub_(y), _into(np.subtract), INTO_SHAPES, (ANY, ANY),
             inplace=True)
_elementwise("sub_alpha", lambda x, y: x.clone().sub_(y, alpha=0.5),
             _into(lambda a, b: a - 0.5 * b), INTO_SHAPES, (ANY, ANY), inplace=True)
_elementwise("mul_", lambda x, y: x.clone().mul_(y), _into(np.multiply), INTO_SHAPES, (ANY, ANY),
             inplace=True)
_elementwise("div_", lambda x, y: x.clone().div_(y), _into(np.divide), INTO_SHAPES,
             (ANY, NONZERO), inplace=True)
_elementwise("iadd", lambda x, y: x.clone().__iadd__(y), _into(np.add), INTO_SHAPES[:3],
             (ANY, ANY), inplace=True)
_elementwise("isub", lambda x, y: x.clone().__isub__(y), _into(np.subtract), INTO_SHAPES[:3],
             (ANY, ANY), inplace=True)
_elementwise("imul", lambda x, y: x.clone().__imul__(y), _into(np.multiply), INTO_SHAPES[:3],
             (ANY, ANY), inplace=True)
_elementwise("itruediv", lambda x, y: x.clone().__itruediv__(y), _into(np.divide),
             INTO_SHAPES[:3], (ANY, NONZERO), inplace=True)
_elementwise("copy_", lambda x, y: x.clone().copy_(y), _into(lambda a, b: b + 0.0 * a),
             INTO_SHAPES, (ANY, ANY), inplace=True)
_elementwise("mul_self_", lambda x: (lambda c: c.mul_(c))(x.clone()), lambda a: a * a,
             UNARY_SHAPES, (ANY,))
_elementwise("div_self_view_", lambda x: (lambda c: c.div_(c[..., :1]))(x.clone()),
             lambda a: a / a[..., :1], (((3,),), ((2, 3),)), (NONZERO,))
_elementwise("mul_scalar_", lambda x: x.clone().mul_(-1.5), lambda a: a * -1.5, UNARY_SHAPES,
             (ANY,))
_elementwise("div_scalar_", lambda x: x.clone().div_(4.0), lambda a: a / 4.0, UNARY_SHAPES,
             (ANY,))
_elementwise("fill_", lambda x: x.clone().fill_(0.5), lambda a: np.full(np.shape(a), 0.5),
             UNARY_SHAPES, (ANY,))
_elementwise("zero_", lambda x: x.clone().zero_(), lambda a: np.zeros(np.shape(a)), UNARY_SHAPES,
             (ANY,))
_elementwise("inplace_chain", lambda x, y: x.clone().add_(y).mul_(y).sub_(1.0),
             _into(lambda a, b: (a + b) * b - 1.0), INTO_SHAPES, (ANY, ANY), inplace=True)
_row("setitem_row", lambda x, y: (lambda c: c.__setitem__(0, y) or c)(x.clone()),
     _setitem_ref(0), (((2, 3), (3,)), ((2, 3), ()), ((3, 2, 2), (2, 2))), (ANY, ANY))
_row("setitem_slice", lambda x, y: (lambda c: c.__setitem__((slice(None), slice(1, None)), y)
                                    or c)(x.clone()),
     _setitem_ref((slice(None), slice(1, None))), (((2, 3), (2, 2)), ((2, 3), (2,))), (ANY, ANY))
_row("setitem_list", lambda x, y: (lambda c: c.__setitem__([2, 0], y) or c)(x.clone()),
     _setitem_ref([2, 0]), (((4,), (2,)), ((3, 2), (2, 2))), (ANY, ANY))

# in-place forms made from the out-of-place ops (Note [In-place forms])
_UNARY_FORMS = {"exp_": (np.exp, ANY), "log_": (np.log, POS), "sqrt_": (np.sqrt, POS),
                "tanh_": (np.tanh, ANY), "sigmoid_": (lambda a: 1 / (1 + np.exp(-a)), ANY),
                "relu_": (lambda a: np.maximum(a, 0.0), NONZERO), "neg_": (np.negative, ANY),
                "abs_": (np.abs, NONZERO), "sin_": (np.sin, ANY), "cos_": (np.cos, ANY),
                "reciprocal_": (np.reciprocal, NONZERO), "square_": (np.square, ANY)}
for _name, (_ref, _domain) in _UNARY_FORMS.items():
    _elementwise(_name, (lambda n: lambda x: getattr(x.clone(), n)())(_name), _ref, UNARY_SHAPES,
                 (_domain,))
_elementwise("clamp_", lambda x: x.clone().clamp_(LO, HI), lambda a: np.clip(a, LO, HI),
             UNARY_SHAPES, (CLAMP,))
_elementwise("clamp_min_", lambda x: x.clone().clamp_min_(LO), lambda a: np.maximum(a, LO),
             UNARY_SHAPES, (CLAMP,))
_elementwise("clamp_max_", lambda x: x.clone().clamp_max_(HI), lambda a: np.minimum(a, HI),
             UNARY_SHAPES, (CLAMP,))
_elementwise("pow_", lambda x, y: x.clone().pow_(y), _into(np.power), INTO_SHAPES, (POS, ANY),
             inplace=True)
_elementwise("pow_scalar_", lambda x: x.clone().pow_(3), lambda a: a ** 3, UNARY_SHAPES, (ANY,))
_elementwise("exp_then_mul_", lambda x, y: x.clone().exp_().mul_(y).tanh_(),
             _into(lambda a, b: np.tanh(np.exp(a) * b)), INTO_SHAPES, (ANY, ANY), inplace=True)
_MASK = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])
_row("masked_fill_", lambda x, v: x.clone().masked_fill_(lucid.tensor(_MASK), v),
     lambda a, v: np.where(_MASK, v, a), (((3, 4), ()),), (ANY, ANY))
_S_IDX = np.array([[0, 0, 2, 1], [2, 0, 2, 2]])


def _scatter_add_ref(a, s):
    out = a.copy()
    np.add.at(out, (_S_IDX, np.arange(4)[None, :]), s)
    return out


_row("scatter_add_", lambda x, s: x.clone().scatter_add_(0, lucid.tensor(_S_IDX), s),
     _scatter_add_ref, (((3, 4), (2, 4)),), (ANY, ANY), same_dtype=True)
_SC_IDX = np.array([[0, 2, 1, 2], [1, 0, 2, 0]])          # unique per column: gradients are defined


def _scatter_ref(a, s):
    out = a.copy()
    out[_SC_IDX, np.arange(4)[None, :]] = s
    return out


_row("scatter_", lambda x, s: x.clone().scatter_(0, lucid.tensor(_SC_IDX), s),
     _scatter_ref, (((3, 4), (2, 4)),), (ANY, ANY), same_dtype=True)
_IA_IDX = np.array([2, 0, 2])


def _index_add_ref(a, s):
    out = a.copy()
    np.add.at(out, (slice(None), _IA_IDX), -1.5 * s)
    return out


_row("index_add_", lambda x, s: x.clone().index_add_(1, lucid.tensor(_IA_IDX), s, alpha=-1.5),
     _index_add_ref, (((2, 4), (2, 3)),), (ANY, ANY), same_dtype=True)
# the view forms: the tensor becomes a view of its own memory
_row("t_", lambda x: x.clone().t_(), lambda a: a.T, (((3, 4),), ((4,),)), (ANY,))
_row("unsqueeze_", lambda x: x.clone().unsqueeze_(1), lambda a: np.expand_dims(a, 1),
     (((3, 4),), ((2,),)), (ANY,))
_row("squeeze_", lambda x: x.clone().squeeze_(), lambda a: np.squeeze(a),
     (((3, 1, 4),), ((1,),)), (ANY,))
_row("transpose_", lambda x: x.clone().transpose_(0, 2), lambda a: np.swapaxes(a, 0, 2),
     (((2, 3, 4),),), (ANY,))
_row("swapdims_then_exp_", lambda x: x.clone().swapdims_(0, 1).exp_(), lambda a: np.exp(a.T),
     (((2, 3),),), (ANY,))
