"""Op-table rows for PyTorch's other spellings of views and shape ops (ops/shape/views.pxi): select,
t, swapaxes/swapdims, broadcast_to, broadcast_tensors, meshgrid, unflatten, split_with_sizes,
as_strided; and the method spellings clamp_min/clamp_max and add/sub with alpha.

Each row is an ``op_spec.OpSpec`` made by ``Rows.op``; the ops returning several tensors
(broadcast_tensors, meshgrid, split_with_sizes) are ``multi_output``; meshgrid's inputs
share a dtype (``same_dtype``: it raises otherwise, as PyTorch does). as_strided's rows read a
contiguous input's memory with other sizes and strides, overlapping ones included (repeated
places must add up in the gradient).
"""
import numpy as np

import lucid
from .op_spec import ANY, BINARY_SHAPES, CLAMP, HI, LO, NONZERO, UNARY_SHAPES, Rows

ROWS = Rows()
_row, _elementwise = ROWS.op, ROWS.elementwise


def _strided_ref(size, stride, offset):
    def ref(a):
        flat = np.ascontiguousarray(a).reshape(-1)
        pos = np.full(size, offset)
        for k, (n, st) in enumerate(zip(size, stride)):
            pos = pos + (np.arange(n) * st).reshape((1,) * k + (n,) + (1,) * (len(size) - k - 1))
        return flat[pos]
    return ref


_row("select", lambda x: x.select(1, -1), lambda a: a[:, -1], (((3, 4),), ((2, 3, 4),)), (ANY,))
_row("lucid.select_dim0", lambda x: lucid.select(x, 0, 1), lambda a: a[1], (((3, 4),), ((2,),)),
     (ANY,))
_row("t", lambda x: x.t(), lambda a: a.T, (((3, 4),), ((4,),), ((),)), (ANY,))
_row("lucid.t", lambda x: lucid.t(x), lambda a: a.T, (((2, 3),),), (ANY,))
_row("swapaxes", lambda x: x.swapaxes(0, -1), lambda a: np.swapaxes(a, 0, -1),
     (((2, 3, 4),),), (ANY,))
_row("lucid.swapdims", lambda x: lucid.swapdims(x, 1, 0), lambda a: np.swapaxes(a, 1, 0),
     (((3, 4),),), (ANY,))
_row("broadcast_to", lambda x: x.broadcast_to((2, 3, 4)), lambda a: np.broadcast_to(a, (2, 3, 4)),
     (((3, 1),), ((4,),), ((),)), (ANY,))
_row("lucid.broadcast_tensors", lambda x, y: lucid.broadcast_tensors(x, y),
     lambda a, b: tuple(np.broadcast_arrays(a, b)), (((3, 1), (4,)), ((), (2, 3))), (ANY, ANY),
     multi_output=True)
_row("lucid.broadcast_tensors_list", lambda x, y, z: lucid.broadcast_tensors([x, y, z]),
     lambda a, b, c: tuple(np.broadcast_arrays(a, b, c)), (((2, 1, 3), (4, 1), ()),),
     (ANY, ANY, ANY), multi_output=True)
_row("lucid.meshgrid_ij", lambda x, y: lucid.meshgrid(x, y, indexing="ij"),
     lambda a, b: tuple(np.meshgrid(a, b, indexing="ij")), (((3,), (4,)), ((), (2,))), (ANY, ANY),
     multi_output=True, same_dtype=True)
_row("lucid.meshgrid_xy", lambda x, y, z: lucid.meshgrid(x, y, z, indexing="xy"),
     lambda a, b, c: tuple(np.meshgrid(a, b, c, indexing="xy")), (((3,), (2,), (4,)),),
     (ANY, ANY, ANY), multi_output=True, same_dtype=True)
_row("unflatten", lambda x: x.unflatten(1, (2, -1)), lambda a: a.reshape(3, 2, 3),
     (((3, 6),),), (ANY,))
_row("lucid.unflatten_last", lambda x: lucid.unflatten(x, -1, (1, 4, 1)),
     lambda a: a.reshape(a.shape[:-1] + (1, 4, 1)), (((4,),), ((2, 4),)), (ANY,))
_row("split_with_sizes", lambda x: x.split_with_sizes([1, 3], dim=1),
     lambda a: (a[:, :1], a[:, 1:]), (((2, 4),),), (ANY,), multi_output=True)
_row("lucid.split_with_sizes_dim0", lambda x: lucid.split_with_sizes(x, (2, 0, 1)),
     lambda a: (a[:2], a[2:2], a[2:]), (((3, 2),),), (ANY,), multi_output=True)
_row("as_strided", lambda x: x.contiguous().as_strided((2, 2), (1, 4), 1),
     _strided_ref((2, 2), (1, 4), 1), (((3, 4),),), (ANY,))
_row("lucid.as_strided_overlapping", lambda x: lucid.as_strided(x.contiguous(), (3, 3), (1, 1)),
     _strided_ref((3, 3), (1, 1), 0), (((6,),), ((2, 3),)), (ANY,))
_row("lucid.as_strided_repeat", lambda x: lucid.as_strided(x.contiguous(), (2, 3), (0, 1), 2),
     _strided_ref((2, 3), (0, 1), 2), (((5,),),), (ANY,))
# method spellings of section 2
_elementwise("lucid.clamp_min_fn", lambda x: lucid.clamp_min(x, LO), lambda a: np.maximum(a, LO),
             UNARY_SHAPES, (CLAMP,))
_elementwise("clamp_max_method", lambda x: x.clamp_max(HI), lambda a: np.minimum(a, HI),
             UNARY_SHAPES, (CLAMP,))
_elementwise("add_with_alpha", lambda x, y: x.add(y, alpha=-1.5), lambda a, b: a - 1.5 * b,
             BINARY_SHAPES, (ANY, ANY))
_elementwise("lucid.sub_with_alpha", lambda x, y: lucid.sub(x, y, alpha=2),
             lambda a, b: a - 2 * b, BINARY_SHAPES, (ANY, ANY))
_elementwise("where_method", lambda x, y: x.where(x > 0.0, y), lambda a, b: np.where(a > 0, a, b),
             BINARY_SHAPES, (NONZERO, ANY))
