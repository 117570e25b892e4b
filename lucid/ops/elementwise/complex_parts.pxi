# A complex number's parts: conj, real, imag, angle, |z|, and the ops that build complex tensors
# (complex, polar, view_as_complex) or take them apart (view_as_real).
#
# Each backward follows Note [Complex gradients] (docs/design.md): the gradient of a complex
# tensor z = x + iy holds dL/dx + i dL/dy. Of a real result w(x, y) with gradient g the input's
# gradient is g*(dw/dx + i dw/dy); of a real input r to a complex result w = u + iv it is
# Re(g) du/dr + Im(g) dv/dr. A real-input op's tangent is its derivative applied to the input's
# tangent, so backward and jvp differ here (unlike the holomorphic ops, Note [Elementwise rules]).

cdef inline bint is_complex_array(object arr):
    return descr(arr).kind == b'c'


cdef inline cnp.dtype real_of(cnp.dtype dt):
    """The float dtype with complex dtype dt's precision (float32 for complex64)."""
    return float32 if dt.itemsize == 8 else float64


cdef Tensor safe_divisor(Tensor d):
    """d with its zeros shifted to ones (a constant added there): a divisor whose quotient the
    caller then zeroes at those places (select_grad), without NumPy's division warnings."""
    cdef object zero = d.data == 0
    if not zero.any():
        return d
    return add(d, wrap(zero.astype(d.data.dtype)))


cdef Tensor part_tangent(Tensor z, Tensor out, bint of_angle):
    """The tangent of |z| (re(conj(z)*t)/|z|) or of angle(z) (im(t/z)), exactly 0 at z == 0;
    None when z has none. out (|z|) is recorded already: its history is the tangent's."""
    cdef Tensor t = tangent_of(z)
    if t is None:
        return None
    cdef long level = suspend_fw()
    cdef Tensor r
    try:
        if of_angle:
            return select_grad(imag_part(div(t, safe_divisor(z))), z.data != 0)
        r = output_for_rule(out)
        return select_grad(div(real_part(mul(conj(z), t)), safe_divisor(r)), out.data != 0)
    finally:
        resume_fw(level)


# -- conj ---------------------------------------------------------------------------------------

cdef class ConjBackward(Node):
    """w = conj(z)  ->  gz = conj(g)"""
    cdef tuple apply(self, tuple grads):
        return (conj(grads[0]),)


cdef Tensor conjugated(Tensor t, object op):
    """x - iy for t = x + iy, in new memory; op (conj or conj_physical) for its tangent."""
    cdef Tensor out = wrap(as_array(np.conjugate(t.data)))
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(t, op, ()))
    if grad_enabled() and t.requires_grad_c():
        attach_output(out, record(ConjBackward.__new__(ConjBackward), t, None), 0)
    return out


cpdef Tensor conj(object input):
    """conj(x + iy) = x - iy; a real input is returned as it is."""
    cdef Tensor t = tensor_arg(input, "conj", "input")
    return conjugated(t, conj) if is_complex_array(t.data) else t
define_op(conj, POINTWISE, ANY)


def conj_physical(input):
    """conj(x + iy) = x - iy in new memory; a real input is returned as it is."""
    cdef Tensor t = tensor_arg(input, "conj_physical", "input")
    return conjugated(t, conj_physical) if is_complex_array(t.data) else t
define_op(conj_physical, POINTWISE, ANY)


# -- real and imag: views -----------------------------------------------------------------------

cdef class RealBackward(Node):
    """w = re(z)  ->  gz = g + 0i"""
    cdef cnp.dtype in_dtype

    cdef tuple apply(self, tuple grads):
        return (cast(grads[0], self.in_dtype),)


cdef class ImagBackward(Node):
    """w = im(z)  ->  gz = 0 + ig"""
    cdef tuple apply(self, tuple grads):
        return (mul(grads[0], 1j),)


cdef Tensor complex_part(Tensor t, bint imaginary, Node node, object op):
    """t's real or imaginary part as a view of its memory, recorded by node (unrecorded: None)."""
    cdef Tensor out = wrap_like_view(t.data.imag if imaginary else t.data.real, t)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(t, op, ()))
    if node is not None and grad_enabled() and t.requires_grad_c():
        attach_output(out, record(node, t, None), 0)
    return out


cpdef Tensor real_part(object input):
    """re(x + iy) = x, a view; a real input is returned as it is."""
    cdef Tensor t = tensor_arg(input, "real", "input")
    if not is_complex_array(t.data):
        return t
    cdef RealBackward node = RealBackward.__new__(RealBackward)
    node.in_dtype = descr(t.data)
    return complex_part(t, False, node, real_part)
define_op(real_part, POINTWISE, ANY, method="own", name="real")


cpdef Tensor imag_part(object input):
    """im(x + iy) = y, a view; RuntimeError for a real input (as PyTorch)."""
    cdef Tensor t = tensor_arg(input, "imag", "input")
    if not is_complex_array(t.data):
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return complex_part(t, True, ImagBackward.__new__(ImagBackward), imag_part)
define_op(imag_part, POINTWISE, COMPLEX_ONLY, method="own", name="imag")


# -- |z| and angle: real results of a complex input ----------------------------------------------

cdef class ComplexAbsBackward(Node):
    """r = |z|  ->  gz = g*z/|z|, exactly 0 at z == 0"""
    cdef SavedTensor saved_z
    cdef SavedTensor saved_r

    cdef void release_saved(self):
        self.saved_z = None
        self.saved_r = None

    cdef tuple apply(self, tuple grads):
        if self.saved_z is None:
            raise_freed_graph(self)
        r = self.saved_r.unpack(self)
        return (select_grad(mul(grads[0], div(self.saved_z.unpack(self), safe_divisor(r))),
                            r.data != 0),)


cdef Tensor complex_abs(Tensor z):
    """|x + iy| = sqrt(x^2 + y^2), real; its tangent re(conj(z)*t)/|z| (0 at z == 0)."""
    cdef Tensor out = wrap(as_array(np.abs(z.data)))
    cdef ComplexAbsBackward node = None
    if grad_enabled() and z.requires_grad_c():       # attached before the tangent, which reads
        node = ComplexAbsBackward.__new__(ComplexAbsBackward)     # out's history; saved after,
        record(node, z, None)                        # so out keeps its tangent (record_unary)
        attach_output(out, node, 0)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, part_tangent(z, out, False))
    if node is not None:
        node.saved_z = save_tensor(z, node, False)
        node.saved_r = save_tensor(out, node, True)
    return out


cdef class AngleBackward(Node):
    """theta = angle(z)  ->  gz = g*i/conj(z) = g*i*z/|z|^2, exactly 0 at z == 0 (a real z: 0)"""
    cdef SavedTensor saved_z

    cdef void release_saved(self):
        self.saved_z = None

    cdef tuple apply(self, tuple grads):
        cdef Tensor fused
        if self.saved_z is None:                     # a real input: angle is piecewise constant
            fused = table_grad(self, UN_ANGLE, grads[0], grads[0], 0.0, 0.0)
            return (zero_grad_like(grads[0]) if fused is None else fused,)
        z = self.saved_z.unpack(self)
        return (select_grad(div(mul(grads[0], 1j), safe_divisor(conj(z))), z.data != 0),)


def angle(input):
    """The argument atan2(y, x) of x + iy; of a real input 0 or pi (its gradient 0)."""
    cdef Tensor z = tensor_arg(input, "angle", "input")
    cdef bint cplx = is_complex_array(z.data)
    cdef object arr = None
    if cplx:
        arr = as_array(np.angle(z.data))
    elif is_float_dtype(descr(z.data)):  # pi where x < 0 (not at -0.0), NaN stays NaN, as PyTorch
        arr = table_forward(UN_ANGLE, z, 0.0, 0.0)
    if arr is None:
        arr = as_array(np.where(z.data < 0, np.pi, 0.0 * z.data)).astype(
            z.data.dtype if is_float_dtype(descr(z.data)) else default_float_dtype(), copy=False)
    cdef Tensor out = wrap(arr)
    cdef AngleBackward node
    if fw_active() and cplx:             # (of a real input: no tangent, the angle is constant)
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, part_tangent(z, out, True))
    if grad_enabled() and z.requires_grad_c() and is_float_dtype(descr(out.data)):
        node = AngleBackward.__new__(AngleBackward)
        record(node, z, None)
        attach_output(out, node, 0)
        if cplx:
            node.saved_z = save_tensor(z, node, False)
    return out
define_op(angle, POINTWISE, FLOAT)


# -- building complex tensors -------------------------------------------------------------------

cdef class ComplexBackward(BinaryBackward):
    """z = complex(x, y) = x + iy  ->  gx = re(g), gy = im(g)"""
    cdef tuple apply(self, tuple grads):
        g = grads[0]
        return self.reduced(real_part(g) if needs(self, 0) else None,
                            imag_part(g) if needs(self, 1) else None)


cdef Tensor complex_rule_x(Tensor t, Tensor x, Tensor y):
    """t + 0i"""
    return cast(t, complex_of(descr(t.data)))


cdef Tensor complex_rule_y(Tensor t, Tensor x, Tensor y):
    """0 + it"""
    return mul(t, 1j)


# PyTorch's names of the scalar types, for errors in its words
cdef dict SCALAR_TYPE_NAMES = {"float32": "Float", "float64": "Double", "int64": "Long",
                               "int32": "Int", "bool": "Bool", "complex64": "ComplexFloat",
                               "complex128": "ComplexDouble"}


cdef str scalar_type_name(object dtype):
    return SCALAR_TYPE_NAMES.get(str(dtype), str(dtype))


cdef void check_parts(Tensor a, Tensor b, str op) except *:
    """a and b: the real parts of complex numbers, of one float dtype (as PyTorch)."""
    cdef str na = scalar_type_name(a.data.dtype), nb = scalar_type_name(b.data.dtype)
    if a.data.dtype.kind != "f" or b.data.dtype.kind != "f":
        raise RuntimeError(f"{op}: Expected both inputs to be Half, Float or Double tensors but "
                           f"got {na} and {nb}")
    if a.data.dtype != b.data.dtype:
        raise RuntimeError(f"{op}: Expected object of scalar type {na} but got scalar type {nb} "
                           "for second argument")


def complex_from_parts(real, imag):
    """real + i imag, for float tensors of one dtype (broadcast)."""
    cdef Tensor a = tensor_arg(real, "complex", "real")
    cdef Tensor b = tensor_arg(imag, "complex", "imag")
    check_parts(a, b, "complex")
    cdef tuple shape
    try:
        shape = np.broadcast_shapes(a.data.shape, b.data.shape)
    except ValueError:
        raise RuntimeError(f"complex: the shapes {tuple(a.data.shape)} and "
                           f"{tuple(b.data.shape)} cannot be broadcast together") from None
    cdef object arr = np.empty(shape, complex_of(descr(a.data)))
    arr.real = a.data
    arr.imag = b.data
    note_complex()
    cdef Tensor out = wrap(arr)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, rules_jvp(complex_rule_x, complex_rule_y, a, b, out))
    cdef ComplexBackward node
    if grad_enabled() and (a.requires_grad_c() or b.requires_grad_c()):
        node = ComplexBackward.__new__(ComplexBackward)
        record_broadcast(node, a, b, out)
        attach_output(out, node, 0)
    return out
define_op(complex_from_parts, POINTWISE, FLOAT_ONLY, method="none", name="complex")


def polar(abs, angle):
    """abs*(cos(angle) + i sin(angle)), for float tensors of one dtype (broadcast)."""
    cdef Tensor r = tensor_arg(abs, "polar", "abs")
    cdef Tensor theta = tensor_arg(angle, "polar", "angle")
    check_parts(r, theta, "polar")
    return complex_from_parts(mul(r, cos(theta)), mul(r, sin(theta)))
define_op(polar, POINTWISE, FLOAT_ONLY, method="none")


# -- view_as_real and view_as_complex -----------------------------------------------------------

cdef class ViewAsRealBackward(Node):
    """v = view_as_real(z) = [x, y] on a last dim  ->  gz = g[..., 0] + i g[..., 1]"""
    cdef tuple apply(self, tuple grads):
        return (_pair_as_complex(grads[0]),)


cdef class ViewAsComplexBackward(Node):
    """z = view_as_complex(v) = v[..., 0] + i v[..., 1]  ->  gv = view_as_real(g)"""
    cdef tuple apply(self, tuple grads):
        return (view_as_real(grads[0]),)


def _pair_as_complex(v):
    """v[..., 0] + i v[..., 1] in new memory, for any layout of v (a gradient, a tangent)."""
    return complex_from_parts(v[..., 0], v[..., 1])


cdef Tensor reinterpreted(Tensor t, object arr, Node node, object jvp_op):
    """arr, a view of t's memory with another dtype, recorded by node."""
    cdef Tensor out = wrap_like_view(arr, t)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(t, jvp_op, ()))
    if grad_enabled() and t.requires_grad_c():
        attach_output(out, record(node, t, None), 0)
    return out


cpdef Tensor view_as_real(object input):
    """x + iy as the pair [x, y] on a new last dim: a real view of the same memory."""
    cdef Tensor t = tensor_arg(input, "view_as_real", "input")
    if not is_complex_array(t.data):
        raise RuntimeError("view_as_real is only supported for complex tensors")
    cdef object arr = t.data[..., None].view(real_of(descr(t.data)))
    return reinterpreted(t, arr, ViewAsRealBackward.__new__(ViewAsRealBackward), view_as_real)
define_op(view_as_real, CUSTOM, COMPLEX_ONLY, method="none")


def view_as_complex(input):
    """The pairs [x, y] on input's last dim as x + iy: a complex view of the same memory."""
    cdef Tensor t = tensor_arg(input, "view_as_complex", "input")
    cdef object a = t.data
    if a.dtype.kind != "f":
        raise RuntimeError(f"view_as_complex is only supported for half, float and double "
                           f"tensors, but got a tensor of scalar type: {scalar_type_name(a.dtype)}")
    if a.ndim == 0:
        raise RuntimeError("view_as_complex: Input tensor must have one or more dimensions")
    if a.shape[a.ndim - 1] != 2:
        raise RuntimeError("view_as_complex: Tensor must have a last dimension of size 2")
    if a.size == 0:      # NumPy gives a 0-size array any strides (often 0): no layout to check
        pass
    elif a.strides[a.ndim - 1] != a.itemsize:
        raise RuntimeError("view_as_complex: Tensor must have a last dimension with stride 1")
    for d in range(a.ndim - 1 if a.size else 0):
        if a.strides[d] % (2 * a.itemsize):
            raise RuntimeError("view_as_complex: Tensor must have a stride divisible by 2 for "
                               "all but last dimension")
    if a.size and element_offset(a) % 2:
        raise RuntimeError("view_as_complex: Tensor must have a storage_offset divisible by 2")
    note_complex()
    return reinterpreted(t, a.view(complex_of(descr(a)))[..., 0],
                         ViewAsComplexBackward.__new__(ViewAsComplexBackward), _pair_as_complex)
define_op(view_as_complex, CUSTOM, FLOAT_ONLY, method="none")
