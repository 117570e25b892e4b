# The ABI guard of native ops: a module built against another C layout of the core is refused at
# import with an ImportError naming both versions (ABI_VERSION in _core.pxd).

cdef int check_abi(int built_against) except -1:
    """Raise ImportError unless a native op was built against this lucid's C layout."""
    if built_against != ABI_VERSION:
        raise ImportError(
            f"this extension was built against lucid ABI version {built_against}, but the "
            f"installed lucid has ABI version {ABI_VERSION}: rebuild the extension against the "
            "installed lucid (pip install --no-build-isolation --force-reinstall <its folder>)")
    return 0


def _abi_version():
    """The C layout version of lucid's core (see lucid/_core.pxd)."""
    return ABI_VERSION
