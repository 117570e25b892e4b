# Devices. lucid's tensors live on the CPU: "cpu" (or "cpu:N", whose index PyTorch ignores on the
# CPU) passes every device= argument; anything else is a RuntimeError naming the device.

# the device types PyTorch's device() knows; lucid.device names any of them, tensors take "cpu"
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
                "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                "privateuseone")


cdef bint is_device_index(str index):
    """Is index a device index as PyTorch writes one (digits, no leading zero)?"""
    return index.isdigit() and index.isascii() and (len(index) == 1 or index[0] != "0")


cdef tuple parse_device(str name):
    """("type", index or None) of "type" or "type:index"; RuntimeError for anything else."""
    kind, colon, index = name.partition(":")
    if kind not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of "
                           f"device string: {name}")
    if not colon:
        return kind, None
    if not is_device_index(index):
        raise RuntimeError(f"Invalid device string: {name!r}")
    return kind, int(index)


class device(str):
    """A device, as torch.device: a string equal to its name ("cpu", "cpu:0") with .type and
    .index; lucid's tensors are on "cpu"."""
    __slots__ = ()

    def __new__(cls, kind, index=None):
        if isinstance(kind, device) and index is None:
            return kind
        if not isinstance(kind, str):
            raise TypeError(f"device(): expected a string such as 'cpu', not {type(kind).__name__}")
        parsed = parse_device(kind)
        if index is not None:
            if parsed[1] is not None:
                raise RuntimeError(f"device(): type (string) must not include an index because "
                                   f"index was passed explicitly: {kind}")
            try:
                number = index.__index__() if is_integer(index) else -1
            except (TypeError, ValueError):
                number = -1
            if number < 0:
                raise RuntimeError(f"device(): the index must be a non-negative int, got "
                                   f"{type(index).__name__}")
            parsed = (parsed[0], number)
        return str.__new__(cls, parsed[0] if parsed[1] is None else f"{parsed[0]}:{parsed[1]}")

    @property
    def type(self):
        """The device type: "cpu", "cuda", ..."""
        return str.partition(self, ":")[0]

    @property
    def index(self):
        """The device index, or None when the name has none."""
        return parse_device(str(self))[1]

    def __repr__(self):
        kind, index = parse_device(str(self))
        return f"device(type={kind!r})" if index is None else \
            f"device(type={kind!r}, index={index})"


_CPU = device("cpu")


cdef void check_device(object device, str op) except *:
    """lucid has one device, the CPU: None, "cpu", "cpu:N" or an object whose str is one of those
    passes; anything else raises RuntimeError naming it."""
    if device is None:
        return
    cdef str name = str(device)
    if name == "cpu" or (name.startswith("cpu:") and is_device_index(name[4:])):
        return
    raise RuntimeError(f"{op}: lucid tensors live on the CPU only; device {name!r} is not "
                       "available (use 'cpu')")


def check_device_arg(device, str op):
    """Constructor op's device= argument: nothing for the CPU, RuntimeError naming any other."""
    check_device(device, op)
