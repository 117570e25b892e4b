"""Selective checkpointing: a policy says, per tensor a checkpointed op saves, keep or recompute.

Note [Selective checkpointing]: lucid identifies an op by the node that saves the tensor: the
policy gets (ctx, op, tensor), where op is the registered op's function (lucid.matmul,
lucid.tanh, lucid.linalg.det: the node `MatmulBackward` is lucid.matmul's, matched by name
against lucid._core.registered_ops()) or, for a node of no registered op (a custom Function,
an internal node), the node's name string ("MyFunctionBackward"); tensor is the tensor being
saved. The policy runs during the forward pass only, once per saved tensor (an op saving two
tensors asks twice). What it saves (MUST_/PREFER_SAVE; the CPU-offload policies too, as
lucid's memory is host memory already) stays alive with the graph; the rest is recomputed
by the one re-run of the segment that backward starts when it first needs one of them.
"""
import contextlib
import enum
import threading

from .. import _core

__all__ = ["CheckpointPolicy", "SelectiveCheckpointContext",
           "create_selective_checkpoint_contexts"]


class CheckpointPolicy(enum.Enum):
    """What selective checkpointing does with a tensor an op saves (PyTorch's names)."""
    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


_SAVE = frozenset((CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE,
                   CheckpointPolicy.MUST_CPU_OFFLOAD, CheckpointPolicy.PREFER_CPU_OFFLOAD))


class SelectiveCheckpointContext:
    """What the policy function gets first: is_recompute is always False (the policy runs in
    the forward pass only, as PyTorch's now does)."""
    __slots__ = {"is_recompute": "False: the policy runs while forward records, never in a recompute."}

    def __init__(self, is_recompute=False):
        self.is_recompute = is_recompute


_active = threading.local()          # .policies: the policies of the entered forward contexts


def current_policy():
    """The innermost entered selective forward context's policy in this thread, or None."""
    policies = getattr(_active, "policies", None)
    return policies[-1] if policies else None


_OPS_BY_NODE = None


def op_of(node):
    """The registered op whose node `node` is (Note [Selective checkpointing]), else its name."""
    global _OPS_BY_NODE
    if _OPS_BY_NODE is None:
        table = {}
        for record in _core.registered_ops():
            key = record.name.rpartition(".")[2].replace("_", "").lower()
            table.setdefault(key, record.function)      # lucid.<op> before lucid.linalg.<op>
        _OPS_BY_NODE = table
    name = node.name() if node is not None else "unknown"
    base = name[:-len("Backward")] if name.endswith("Backward") else name
    return _OPS_BY_NODE.get(base.replace("_", "").lower(), name)


def should_save(policy, tensor):
    """Ask policy about the tensor being packed now; True for a saving policy."""
    op = op_of(_core._saving_node())
    decision = policy(SelectiveCheckpointContext(False), op, tensor)
    if not isinstance(decision, CheckpointPolicy):
        if isinstance(decision, bool):            # PyTorch's older policies return a bool
            return decision
        raise TypeError(f"create_selective_checkpoint_contexts: the policy returned "
                        f"{type(decision).__name__} for op {op!r}; it must return a "
                        "CheckpointPolicy")
    return decision in _SAVE


class _ForwardContext:
    """Entered around the checkpointed forward: the segment asks its policy per saved tensor."""
    __slots__ = ("policy",)

    def __init__(self, policy):
        self.policy = policy

    def __enter__(self):
        policies = getattr(_active, "policies", None)
        if policies is None:
            policies = _active.policies = []
        policies.append(self.policy)
        return self

    def __exit__(self, *exc):
        _active.policies.pop()
        return False


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """The (forward, recompute) context managers for checkpoint(context_fn=...): a policy
    function (ctx, op, tensor) -> CheckpointPolicy, or a list of ops to save (MUST_SAVE; every
    other op PREFER_RECOMPUTE)."""
    if isinstance(policy_fn_or_list, list):
        ops = list(policy_fn_or_list)
        for i, op in enumerate(ops):
            if not (callable(op) or isinstance(op, str)):
                raise TypeError(f"create_selective_checkpoint_contexts: ops[{i}] must be a "
                                f"lucid op or a node name, not {type(op).__name__}")

        def policy(ctx, op, *args):
            return (CheckpointPolicy.MUST_SAVE if any(op is o or op == o for o in ops)
                    else CheckpointPolicy.PREFER_RECOMPUTE)
    elif callable(policy_fn_or_list):
        policy = policy_fn_or_list
    else:
        raise TypeError("create_selective_checkpoint_contexts: policy_fn_or_list must be either a "
                        "function or a list of ops.")
    if not isinstance(allow_cache_entry_mutation, bool):
        raise TypeError("create_selective_checkpoint_contexts: allow_cache_entry_mutation must "
                        f"be a bool, not {type(allow_cache_entry_mutation).__name__}")
    if allow_cache_entry_mutation:
        raise ValueError("create_selective_checkpoint_contexts: allow_cache_entry_mutation=True "
                         "is not supported: a saved tensor changed in place makes backward raise "
                         "lucid's in-place error, as every saved tensor does")
    return _ForwardContext(policy), contextlib.nullcontext()
