# Storage: the version counter shared by all tensors that view the same memory.

cdef class Storage:
    """The version counter shared by a tensor and its views (it does not hold their memory:
    a saved tensor packed by a hook keeps the counter, not the bytes)."""

    def __init__(self):
        raise TypeError("Storage objects are made by lucid's core, not directly")

    def __repr__(self):
        return f"<lucid.Storage version={self.version}>"


cdef Storage new_storage():
    cdef Storage s = Storage.__new__(Storage)
    gc_untrack(s)                        # Note [GC tracking]: it holds no Python objects of users
    s.version = 0
    return s
