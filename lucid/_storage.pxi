# Storage: the version counter shared by all tensors that view the same memory.

cdef class Storage:
    """Version counter and memory owner shared by a tensor and its views."""

    def __init__(self):
        raise TypeError("Storage objects are made by lucid's core, not directly")

    def __repr__(self):
        return f"<lucid.Storage version={self.version}>"


cdef Storage new_storage(object base):
    cdef Storage s = Storage.__new__(Storage)
    gc_untrack(s)                        # Note [GC tracking]: it holds no Python objects of users
    s.version = 0
    s.base = base
    return s
