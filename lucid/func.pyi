# Types of lucid.func (lucid/func.py): a transform keeps the parameters of the function it wraps
# (ParamSpec), so a call of grad(f) is checked against f's own signature. What a transform returns
# follows argnums (an int: one tensor; a tuple: a tuple, one per position), has_aux (Literal True:
# a pair with the function's aux) and, for the Jacobians, whether f returns one tensor or a tuple;
# a call that typing cannot tell apart (has_aux a plain bool) falls back to Any.
from collections.abc import Callable, Sequence
from typing import Any, Literal, ParamSpec, Protocol, TypeVar, overload

from ._core import Tensor

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap",
           "register_vmap_rule", "linearize"]

_P = ParamSpec("_P")
_Aux = TypeVar("_Aux")
_Out = TypeVar("_Out")
_Tensors = tuple[Tensor, ...]

class _VjpFn(Protocol):
    """vjp's second result: v^T J for cotangents shaped like the outputs, one tensor per primal."""
    def __call__(self, cotangents: Tensor | Sequence[Tensor], retain_graph: bool = True,
                 create_graph: bool | None = None) -> _Tensors: ...

# -- grad, grad_and_value ----------------------------------------------------------------------
@overload
def grad(func: Callable[_P, Tensor], argnums: int = 0,
         has_aux: Literal[False] = False) -> Callable[_P, Tensor]: ...
@overload
def grad(func: Callable[_P, Tensor], argnums: tuple[int, ...],
         has_aux: Literal[False] = False) -> Callable[_P, _Tensors]: ...
@overload
def grad(func: Callable[_P, tuple[Tensor, _Aux]], argnums: int = 0, *,
         has_aux: Literal[True]) -> Callable[_P, tuple[Tensor, _Aux]]: ...
@overload
def grad(func: Callable[_P, tuple[Tensor, _Aux]], argnums: tuple[int, ...], *,
         has_aux: Literal[True]) -> Callable[_P, tuple[_Tensors, _Aux]]: ...
@overload
def grad(func: Callable[_P, Any], argnums: int | tuple[int, ...] = 0,
         has_aux: bool = False) -> Callable[_P, Any]: ...

@overload
def grad_and_value(func: Callable[_P, Tensor], argnums: int = 0,
                   has_aux: Literal[False] = False) -> Callable[_P, tuple[Tensor, Tensor]]: ...
@overload
def grad_and_value(func: Callable[_P, Tensor], argnums: tuple[int, ...],
                   has_aux: Literal[False] = False) -> Callable[_P, tuple[_Tensors, Tensor]]: ...
@overload
def grad_and_value(func: Callable[_P, tuple[Tensor, _Aux]], argnums: int = 0, *,
                   has_aux: Literal[True]
                   ) -> Callable[_P, tuple[Tensor, tuple[Tensor, _Aux]]]: ...
@overload
def grad_and_value(func: Callable[_P, tuple[Tensor, _Aux]], argnums: tuple[int, ...], *,
                   has_aux: Literal[True]
                   ) -> Callable[_P, tuple[_Tensors, tuple[Tensor, _Aux]]]: ...
@overload
def grad_and_value(func: Callable[_P, Any], argnums: int | tuple[int, ...] = 0,
                   has_aux: bool = False) -> Callable[_P, tuple[Any, Any]]: ...

# -- vjp, jvp: the value and the jvp have the structure of func's output -----------------------
@overload
def vjp(func: Callable[..., _Out], *primals: Tensor,
        has_aux: Literal[False] = False) -> tuple[_Out, _VjpFn]: ...
@overload
def vjp(func: Callable[..., tuple[_Out, _Aux]], *primals: Tensor,
        has_aux: Literal[True]) -> tuple[_Out, _VjpFn, _Aux]: ...
@overload
def vjp(func: Callable[..., Any], *primals: Tensor, has_aux: bool = False) -> tuple[Any, ...]: ...

@overload
def jvp(func: Callable[..., _Out], primals: Sequence[Tensor], tangents: Sequence[Tensor],
        has_aux: Literal[False] = False) -> tuple[_Out, _Out]: ...
@overload
def jvp(func: Callable[..., tuple[_Out, _Aux]], primals: Sequence[Tensor],
        tangents: Sequence[Tensor], has_aux: Literal[True]) -> tuple[_Out, _Out, _Aux]: ...
@overload
def jvp(func: Callable[..., Any], primals: Sequence[Tensor], tangents: Sequence[Tensor],
        has_aux: bool = False) -> tuple[Any, ...]: ...

# -- Jacobians: one tensor for one output and an int argnums, tuples otherwise ------------------
@overload
def jacrev(func: Callable[_P, Tensor], argnums: int = 0,
           has_aux: Literal[False] = False) -> Callable[_P, Tensor]: ...
@overload
def jacrev(func: Callable[_P, Tensor], argnums: tuple[int, ...],
           has_aux: Literal[False] = False) -> Callable[_P, _Tensors]: ...
@overload
def jacrev(func: Callable[_P, tuple[Tensor, _Aux]], argnums: int = 0, *,
           has_aux: Literal[True]) -> Callable[_P, tuple[Tensor, _Aux]]: ...
@overload
def jacrev(func: Callable[_P, Any], argnums: int | tuple[int, ...] = 0,
           has_aux: bool = False) -> Callable[_P, Any]: ...

@overload
def jacfwd(func: Callable[_P, Tensor], argnums: int = 0,
           has_aux: Literal[False] = False) -> Callable[_P, Tensor]: ...
@overload
def jacfwd(func: Callable[_P, Tensor], argnums: tuple[int, ...],
           has_aux: Literal[False] = False) -> Callable[_P, _Tensors]: ...
@overload
def jacfwd(func: Callable[_P, tuple[Tensor, _Aux]], argnums: int = 0, *,
           has_aux: Literal[True]) -> Callable[_P, tuple[Tensor, _Aux]]: ...
@overload
def jacfwd(func: Callable[_P, Any], argnums: int | tuple[int, ...] = 0,
           has_aux: bool = False) -> Callable[_P, Any]: ...

@overload
def hessian(func: Callable[_P, Tensor], argnums: int = 0) -> Callable[_P, Tensor]: ...
@overload
def hessian(func: Callable[_P, Tensor],
            argnums: tuple[int, ...]) -> Callable[_P, tuple[_Tensors, ...]]: ...


_InDims = int | None | tuple[Any, ...]


def vmap(func: Callable[_P, _Out], in_dims: _InDims = 0, out_dims: Any = 0,
         randomness: Literal["error", "different", "same"] = "error", *,
         chunk_size: int | None = None) -> Callable[_P, _Out]: ...

# register_vmap_rule: rule(info, in_dims, *args, **kwargs) -> (outputs, out_dims) batches op
def register_vmap_rule(op: Callable[_P, _Out],
                       rule: Callable[..., tuple[Any, Any]]) -> Callable[_P, _Out]: ...

# linearize: (func(*primals), jvp_fn); jvp_fn(*tangents) is J(primals) @ tangents, shaped like
# func's output (a Tensor or a pytree of them)
def linearize(func: Callable[..., _Out], *primals: Any) -> tuple[_Out, Callable[..., _Out]]: ...
