"""register_multi_grad_hook: one hook over the gradients of several tensors, per backward."""
import threading

from .. import _core

__all__ = ["register_multi_grad_hook"]

_MODES = ("all", "any")


class _MultiHandle:
    """The handle of a multi-grad hook: remove() unregisters it from every tensor."""

    def __init__(self, handles):
        self._handles = tuple(handles)

    def remove(self):
        """Unregister the hook from each tensor (a second call does nothing)."""
        for handle in self._handles:
            handle.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _task_id():
    task = _core._current_graph_task_id()
    if task == -1:
        raise RuntimeError("register_multi_grad_hook: a gradient hook ran outside a backward")
    return task


def _forget_ended(per_task):
    """Drop the state of backwards that ended (e.g. raised) before every gradient came."""
    for task in [t for t in per_task if not _core._graph_task_active(t)]:
        del per_task[task]


def _all_mode(tensors, fn):
    """fn(grads) once per backward, after the gradient of each tensor that backward computes;
    None for the others (not in its graph, or not needed for its inputs)."""
    nodes = [_core._grad_accumulator(t) for t in tensors]
    lock = threading.Lock()
    pending = {}             # task id -> [gradients still to come, gradients so far]

    def inner_hook(index):
        def hook(grad):
            task = _task_id()
            with lock:
                state = pending.get(task)
                if state is None:
                    _forget_ended(pending)
                    expected = sum(map(_core._will_engine_execute_node, nodes))
                    state = pending[task] = [expected, [None] * len(nodes)]
                state[0] -= 1
                state[1][index] = grad
                ready = state[0] == 0
                if ready:
                    del pending[task]
            if ready:
                fn(state[1])
        return hook

    return [t.register_hook(inner_hook(i)) for i, t in enumerate(tensors)]


def _any_mode(tensors, fn):
    """fn(grad) once per backward, with the first gradient of any of tensors it computes."""
    lock = threading.Lock()
    ran = {}                 # task id -> True, for the backwards that ran fn

    def hook(grad):
        task = _task_id()
        with lock:
            if task in ran:
                return
            _forget_ended(ran)
            ran[task] = True
        fn(grad)

    return [t.register_hook(hook) for t in tensors if t.requires_grad]


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Call fn with the gradients of tensors in each backward: mode "all" once they are all
    computed (fn(grads), None for those the backward does not compute), mode "any" with the
    first one computed (fn(grad)). Returns a handle whose remove() unregisters it."""
    if mode not in _MODES:
        raise ValueError(f"register_multi_grad_hook: mode must be one of {_MODES}, got {mode!r}")
    if not callable(fn):
        raise TypeError(f"register_multi_grad_hook: fn must be callable, not {type(fn).__name__}")
    if isinstance(tensors, _core.Tensor) or not isinstance(tensors, (tuple, list)):
        raise TypeError("register_multi_grad_hook: tensors must be a sequence of Tensors, not "
                        f"{type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not isinstance(t, _core.Tensor):
            raise TypeError(f"register_multi_grad_hook: tensors[{i}] is {type(t).__name__}, "
                            "not a Tensor")
    if mode == "all":
        for i, t in enumerate(tensors):
            if not t.requires_grad:
                raise RuntimeError(f"register_multi_grad_hook: tensors[{i}] does not require "
                                   "grad, so no gradient hook can be registered on it (mode "
                                   "\"any\" skips such tensors)")
        return _MultiHandle(_all_mode(tuple(tensors), fn))
    return _MultiHandle(_any_mode(tuple(tensors), fn))
