# Storage: the version counter shared by all tensors that view the same memory.

cdef class Storage:
    """The version counter shared by a tensor and its views (it does not hold their memory:
    a saved tensor packed by a hook keeps the counter, not the bytes)."""

    def __init__(self):
        raise TypeError("Storage objects are made by lucid's core, not directly")

    @property
    def version(self):
        """Bumped by every in-place change of the memory."""
        return self.version

    @property
    def graph_version(self):
        """Bumped by the in-place changes recorded in the graph."""
        return self.graph_version

    @property
    def last_op(self):
        """The lucid op that last changed the memory in place (None before any)."""
        return self.last_op

    def __repr__(self):
        return f"<lucid.Storage version={self.version}>"


cdef Storage new_storage():
    cdef Storage s = Storage.__new__(Storage)
    gc_untrack(s)                        # Note [GC tracking]: it holds no Python objects of users
    s.version = 0
    return s
