# In-place writes: add_ sub_ mul_ div_ copy_ fill_ zero_, += -= *= /=, x[idx] = v.
# Outside the graph they only write memory and bump the version counter.

cdef enum InplaceOp:
    INPLACE_ADD, INPLACE_SUB, INPLACE_MUL, INPLACE_DIV, INPLACE_COPY

cdef tuple INPLACE_NAMES = ("add_", "sub_", "mul_", "div_", "copy_")


cdef void check_inplace_allowed(Tensor self, Tensor value, str op) except *:
    """Raise before writing when the write would corrupt the graph."""
    if not grad_enabled():
        return
    if self._grad_fn is None and self._requires_grad:
        raise RuntimeError(f"{op}: a leaf tensor that requires grad can't be changed in place "
                           "while grad mode is on; do it under `with lucid.no_grad():`")
    if self.requires_grad_c() or (value is not None and value.requires_grad_c()):
        raise RuntimeError(f"{op}: in-place operations on tensors that are part of the graph "
                           "are not supported yet; use the out-of-place op")


cdef object write_error(str op, Tensor self, Tensor value, object error):
    if isinstance(error, TypeError):
        return RuntimeError(f"{op}: can't write {dtype_name(value.data.dtype)} values into a "
                            f"{dtype_name(self.data.dtype)} tensor in place")
    if not self.data.flags.writeable:
        return RuntimeError(f"{op}: this tensor is a read-only view (from expand); clone() it "
                            "before writing")
    return RuntimeError(f"{op}: a value of shape {value.data.shape} can't be written into a "
                        f"tensor of shape {self.data.shape}")


cdef Tensor inplace_binary(Tensor self, object other, int op):
    cdef str name = INPLACE_NAMES[op]
    cdef Tensor value = operand(other, name)
    check_inplace_allowed(self, value, name)
    try:
        if op == INPLACE_COPY:
            np.copyto(self.data, value.data, casting="unsafe")
        elif op == INPLACE_ADD:
            np.add(self.data, value.data, out=self.data)
        elif op == INPLACE_SUB:
            np.subtract(self.data, value.data, out=self.data)
        elif op == INPLACE_MUL:
            np.multiply(self.data, value.data, out=self.data)
        else:
            np.true_divide(self.data, value.data, out=self.data)
    except (ValueError, TypeError) as e:
        raise write_error(name, self, value, e) from None
    self.bump_version()
    return self


cdef void setitem(Tensor self, object index, object value) except *:
    """self[index] = value."""
    cdef Tensor v = operand(value, "setitem")
    check_inplace_allowed(self, v, "setitem")
    cdef object key = index_key(index)
    try:
        self.data[key] = v.data
    except IndexError as e:
        raise IndexError(f"index {index!r} is out of range for a tensor of shape "
                         f"{self.data.shape}: {e}") from None
    except (ValueError, TypeError) as e:
        raise write_error("setitem", self, v, e) from None
    self.bump_version()
