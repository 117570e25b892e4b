"""vmap's machinery: batched tensors, the dispatcher and the batching rules (Note [Batch
dispatch], lucid/base/batch_dispatch.pxi). The public entry is lucid.func.vmap."""
from .. import _core
from .batched import BatchedTensor
from .dispatch import dispatch
from . import pointwise, reductions, dims, shapes, joins, matrices, indexing  # noqa: F401  (rules)
from . import methods  # noqa: F401  (BatchedTensor's methods and operators)
from .vmap import vmap
from .native import register_vmap_rule

_core._batch_install(dispatch, BatchedTensor)

__all__ = ["BatchedTensor", "vmap", "register_vmap_rule"]
