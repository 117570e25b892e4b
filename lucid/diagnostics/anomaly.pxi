# Anomaly mode: nodes remember the forward traceback that made them; backward failures show it.

import traceback as _traceback

cdef int anomaly_enabled = 0
cdef bint anomaly_check_nan = True      # detect_anomaly(check_nan=...): NaN gradients raise


def _set_anomaly_enabled(bint on):
    """Turn anomaly detection on or off (process-wide); returns the previous setting."""
    global anomaly_enabled
    cdef bint previous = anomaly_enabled != 0
    anomaly_enabled = 1 if on else 0
    return previous


def _set_anomaly_check_nan(bint on):
    """Whether anomaly mode checks gradients for NaN (process-wide); returns the previous one."""
    global anomaly_check_nan
    cdef bint previous = anomaly_check_nan
    anomaly_check_nan = on
    return previous


def is_anomaly_check_nan_enabled():
    return anomaly_check_nan


def is_anomaly_enabled():
    return anomaly_enabled != 0


cdef void init_identity(Node node):
    """A new node's sequence number, and its forward traceback in anomaly mode."""
    node.sequence_nr = next_sequence_nr()
    gc_untrack(node)                    # Note [GC tracking]
    if creation_sites_on:
        note_creation_site(node)
    if anomaly_enabled:
        # called from compiled code: the innermost Python frame is the caller of the op
        node.get_extra().anomaly_trace = "".join(_traceback.format_stack())


cdef void note_forward_trace(BaseException error, Node node):
    if node.extra is not None and node.extra.anomaly_trace is not None:
        error.add_note(f"lucid anomaly mode: {node.name()} was created by this forward call:\n"
                       f"{node.extra.anomaly_trace}")


cdef void check_nan_gradients(Node node, tuple outs) except *:
    """In anomaly mode: a node that produced NaN gradients is an error (the engine notes the
    node's forward traceback on it, note_raised). The message holds PyTorch's phrase."""
    if not anomaly_check_nan:
        return
    for i in range(len(outs)):
        g = outs[i]
        if g is not None and (<Tensor>g).data.dtype.kind == "f" and \
                np.isnan((<Tensor>g).data).any():
            raise RuntimeError(f"{describe(node)} returned NaN values in its gradient for "
                               f"input {i} (Function '{node.name()}' returned nan values in its "
                               f"{i}th output.)")
