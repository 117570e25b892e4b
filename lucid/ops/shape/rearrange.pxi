# Rearranging a tensor: the views narrow, split, chunk, unbind, diagonal, movedim, mT, expand_as
# (they share memory and the version counter), and the copies flip, roll, repeat, tile, tril,
# triu, diag, trace, contiguous.

# -- narrow, split, chunk, unbind: views at a key of slices (Note [Ops as keys]) -------------------

cdef class NarrowBackward(IndexBackward):
    """y = narrow(x, d, s, n) = x[..., s:s+n]  ->  gx = index_backward(g, x.shape, key)"""


cdef class SplitBackward(IndexBackward):
    """y_i = split(x, ...)[i] = x[..., s_i:s_i+n_i]  ->  gx = index_backward(g_i, x.shape, key_i)"""


cdef class UnbindBackward(IndexBackward):
    """y_i = unbind(x, d)[i] = x[..., i]  ->  gx = index_backward(g_i, x.shape, key_i)"""


cdef void refuse_zero_dim_view(Tensor a, str op) except *:
    if ndim_of(a.data) == 0:
        raise RuntimeError(f"{op}: the input is 0-d; it needs at least one dim")


cdef inline tuple key_in_dim(Py_ssize_t dim, object part):
    return (slice(None),) * dim + (part,)


def narrow(input, dim, start, length):
    """input[..., start:start+length, ...] along dim (a view; start may be negative)."""
    cdef Tensor t = tensor_arg(input, "narrow", "input")
    refuse_zero_dim_view(t, "narrow")
    cdef Py_ssize_t d = normalize_dim(dim, ndim_of(t.data), "narrow")
    cdef Py_ssize_t size = t.data.shape[d]
    cdef Py_ssize_t s = int_arg(start, "narrow", "start"), n = int_arg(length, "narrow", "length")
    if s < -size or s > size:
        raise IndexError(f"narrow: start {s} is out of range for dim {d} of size {size} "
                         f"(shape {t.data.shape})")
    if s < 0:
        s += size
    if n < 0 or s + n > size:
        raise RuntimeError(f"narrow: start {s} + length {n} exceeds dim {d} of size {size} "
                           f"(shape {t.data.shape})")
    return take_at(t, key_in_dim(d, slice(s, s + n)), NarrowBackward, True)
define_op(narrow, DIMS, ANY)


def split(tensor, split_size_or_sections, dim=0):
    """tensor cut along dim into pieces of split_size (the last may be smaller), or of the given
    section sizes; a tuple of views."""
    cdef Tensor t = tensor_arg(tensor, "split", "tensor")
    refuse_zero_dim_view(t, "split")
    cdef Py_ssize_t d = normalize_dim(dim, ndim_of(t.data), "split")
    cdef Py_ssize_t size = t.data.shape[d], step, start = 0
    cdef list sizes
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = list(int_tuple(split_size_or_sections, "split", "split_size_or_sections"))
        if sum_ints(sizes) != size:
            raise RuntimeError(f"split: section sizes {tuple(sizes)} must be non-negative and "
                               f"add up to {size}, the size of dim {d} (shape "
                               f"{t.data.shape})")
    else:
        step = int_arg(split_size_or_sections, "split", "split_size_or_sections")
        if step < 0 or (step == 0 and size > 0):
            raise RuntimeError(f"split: split_size must be positive, got {step} (dim {d} has "
                               f"size {size})")
        sizes = [step if s + step <= size else size - s for s in range(0, size, step)] \
            if size > 0 else [0]
    cdef list pieces = []
    for n in sizes:
        pieces.append(take_at(t, key_in_dim(d, slice(start, start + n)), SplitBackward, True))
        start += n
    return tuple(pieces)
define_op(split, DIMS, ANY, method="own")


cdef Py_ssize_t sum_ints(list xs):
    """The sum of xs, or -1 when one is negative."""
    cdef Py_ssize_t total = 0, x
    for x in xs:
        if x < 0:
            return -1
        total += x
    return total


def chunk(input, chunks, dim=0):
    """input cut along dim into at most chunks pieces of ceil(size/chunks); a tuple of views."""
    cdef Tensor t = tensor_arg(input, "chunk", "input")
    cdef Py_ssize_t c = int_arg(chunks, "chunk", "chunks")
    if c <= 0:
        raise RuntimeError(f"chunk: chunks must be positive, got {c}")
    refuse_zero_dim_view(t, "chunk")
    cdef Py_ssize_t d = normalize_dim(dim, ndim_of(t.data), "chunk")
    cdef Py_ssize_t size = t.data.shape[d]
    if size == 0:
        return split(t, [0] * c, d)
    return split(t, (size + c - 1) // c, d)
define_op(chunk, DIMS, ANY)


def unbind(input, dim=0):
    """The slices of input along dim, as a tuple of views (dim removed)."""
    cdef Tensor t = tensor_arg(input, "unbind", "input")
    refuse_zero_dim_view(t, "unbind")
    cdef Py_ssize_t d = normalize_dim(dim, ndim_of(t.data), "unbind"), i
    return tuple([take_at(t, key_in_dim(d, i), UnbindBackward, True)
                  for i in range(t.data.shape[d])])
define_op(unbind, DIMS, ANY)


# -- diagonal and its reverse, diagonal_embed -----------------------------------------------------

cdef object writable_diagonal(object arr, Py_ssize_t offset, Py_ssize_t d1, Py_ssize_t d2):
    """arr's diagonal as a view (NumPy returns it read-only; it is writable when arr is)."""
    cdef object out = np.diagonal(arr, offset, d1, d2)
    if arr.flags.writeable:
        out.flags.writeable = True
    return out


cdef tuple diagonal_dims(Tensor a, object dim1, object dim2, str op):
    cdef int nd = ndim_of(a.data)
    if nd < 2:
        raise RuntimeError(f"{op}: needs at least 2 dims, got shape {a.data.shape}")
    cdef Py_ssize_t d1 = normalize_dim(dim1, nd, op), d2 = normalize_dim(dim2, nd, op)
    if d1 == d2:
        raise RuntimeError(f"{op}: dim1 and dim2 must differ, both are {d1}")
    return (d1, d2)


cdef class DiagonalBackward(Node):
    """y = diagonal(x, k, d1, d2)  ->  gx = diagonal_embed(g, x.shape, k, d1, d2)"""
    cdef tuple in_shape
    cdef Py_ssize_t offset
    cdef Py_ssize_t dim1
    cdef Py_ssize_t dim2

    cdef tuple apply(self, tuple grads):
        return (diagonal_embed(grads[0], self.in_shape, self.offset, self.dim1, self.dim2),)


cpdef Tensor diagonal(input, object offset=0, object dim1=0, object dim2=1):
    """The diagonal of input in dims dim1, dim2 (offset > 0: above), as a view in the last dim."""
    cdef Tensor t = tensor_arg(input, "diagonal", "input")
    cdef tuple dims = diagonal_dims(t, dim1, dim2, "diagonal")
    cdef Py_ssize_t k = int_arg(offset, "diagonal", "offset")
    cdef Tensor out = wrap_like_view(writable_diagonal(t.data, k, dims[0], dims[1]), t)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(t, diagonal, (k, dims[0], dims[1])))
    cdef DiagonalBackward node
    if grad_enabled() and t.requires_grad_c():
        node = DiagonalBackward.__new__(DiagonalBackward)
        record(node, t, None)
        node.in_shape = t.data.shape
        node.offset = k
        node.dim1 = dims[0]
        node.dim2 = dims[1]
        attach_output(out, node, 0)
    return out
define_op(diagonal, DIMS, ANY)


cdef class DiagonalEmbedBackward(Node):
    """z = diagonal_embed(g, s, k, d1, d2)  ->  gg = diagonal(gz, k, d1, d2)"""
    cdef Py_ssize_t offset
    cdef Py_ssize_t dim1
    cdef Py_ssize_t dim2

    cdef tuple apply(self, tuple grads):
        return (diagonal(grads[0], self.offset, self.dim1, self.dim2),)


cpdef Tensor diagonal_embed(Tensor src, tuple shape, Py_ssize_t offset, Py_ssize_t dim1,
                            Py_ssize_t dim2):
    """zeros(shape) with src on its diagonal (offset, dim1, dim2): diagonal's reverse."""
    cdef object arr = np.zeros(shape, dtype=src.data.dtype)
    writable_diagonal(arr, offset, dim1, dim2)[...] = src.data
    cdef Tensor out = wrap(arr)
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(src, diagonal_embed, (shape, offset, dim1, dim2)))
    cdef DiagonalEmbedBackward node
    if grad_enabled() and src.requires_grad_c():
        node = DiagonalEmbedBackward.__new__(DiagonalEmbedBackward)
        record(node, src, None)
        node.offset = offset
        node.dim1 = dim1
        node.dim2 = dim2
        attach_output(out, node, 0)
    return out


cdef Tensor diagonal_of(Tensor a, Py_ssize_t k):
    """a's diagonal k (for diag, whose argument hides the name diagonal)."""
    return diagonal(a, k, 0, 1)


def diag(input, diagonal=0):
    """1-d input: a square matrix with input on diagonal `diagonal`; 2-d: that diagonal, copied."""
    cdef Tensor t = tensor_arg(input, "diag", "input")
    cdef int nd = ndim_of(t.data)
    cdef Py_ssize_t k = int_arg(diagonal, "diag", "diagonal"), n
    if nd == 1:
        n = t.data.shape[0] + (k if k >= 0 else -k)
        return diagonal_embed(t, (n, n), k, 0, 1)
    if nd == 2:
        return clone(diagonal_of(t, k))
    raise RuntimeError(f"diag: input must be 1-d or 2-d, got shape {t.data.shape}")
define_op(diag, CUSTOM, ANY)


cdef class TraceBackward(Node):
    """y = trace(x)  ->  gx = diagonal_embed(expand(g, (k,)), x.shape, 0, 0, 1)"""
    cdef tuple in_shape

    cdef tuple apply(self, tuple grads):
        cdef Py_ssize_t rows = self.in_shape[0], cols = self.in_shape[1]
        cdef Py_ssize_t k = rows if rows < cols else cols
        return (diagonal_embed(expand(grads[0], (k,)), self.in_shape, 0, 0, 1),)


cpdef Tensor trace(input):
    """The sum of the main diagonal of a 2-d input."""
    cdef Tensor t = tensor_arg(input, "trace", "input")
    if ndim_of(t.data) != 2:
        raise RuntimeError(f"trace: input must be 2-d, got shape {t.data.shape}")
    cdef Tensor out = wrap(as_array(np.trace(t.data)))
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(t, trace, ()))
    cdef TraceBackward node
    if grad_enabled() and t.requires_grad_c():
        node = TraceBackward.__new__(TraceBackward)
        record(node, t, None)
        node.in_shape = t.data.shape
        attach_output(out, node, 0)
    return out
define_op(trace, CUSTOM, ANY)


# -- flip, roll -----------------------------------------------------------------------------------

cdef tuple distinct_dims(object dims, int nd, str op):
    """dims (an int or a sequence) as a tuple of distinct non-negative dims."""
    cdef tuple ds = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    cdef tuple out = tuple([normalize_dim(x, nd, op) for x in ds])
    if len(set(out)) != len(out):
        raise RuntimeError(f"{op}: dims {ds} name a dim more than once")
    return out


cdef class FlipBackward(Node):
    """y = flip(x, dims)  ->  gx = flip(g, dims)"""
    cdef tuple dims

    cdef tuple apply(self, tuple grads):
        return (flip(grads[0], self.dims),)


cpdef Tensor flip(input, object dims):
    """input reversed along each of dims (a copy)."""
    cdef Tensor t = tensor_arg(input, "flip", "input")
    cdef int nd = ndim_of(t.data)
    cdef tuple ds = distinct_dims(dims, nd, "flip")
    cdef Tensor out = wrap(np.flip(t.data, ds).copy() if nd > 0 else
                           np.array(t.data, copy=True))
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(t, flip, (ds,)))
    cdef FlipBackward node
    if grad_enabled() and t.requires_grad_c():
        node = FlipBackward.__new__(FlipBackward)
        record(node, t, None)
        node.dims = ds
        attach_output(out, node, 0)
    return out
define_op(flip, DIMS, ANY, method="own")


cdef class RollBackward(Node):
    """y = roll(x, shifts, dims)  ->  gx = roll(g, -shifts, dims)"""
    cdef tuple shifts
    cdef object dims

    cdef tuple apply(self, tuple grads):
        return (roll(grads[0], tuple([-s for s in self.shifts]), self.dims),)


cpdef Tensor roll(input, object shifts, object dims=None):
    """input's entries shifted cyclically by shifts along dims (dims None: over the flattened
    tensor, shape kept); a copy."""
    cdef Tensor t = tensor_arg(input, "roll", "input")
    cdef int nd = ndim_of(t.data)
    cdef tuple sh = int_tuple(shifts if isinstance(shifts, (tuple, list)) else (shifts,), "roll",
                              "shifts")
    cdef object ds = None
    if dims is None:
        if len(sh) != 1:
            raise RuntimeError(f"roll: without dims, shifts must be one int, got {sh}")
        arr = np.roll(t.data, sh[0])
    else:
        ds = tuple([normalize_dim(x, nd, "roll") for x in
                    (dims if isinstance(dims, (tuple, list)) else (dims,))])
        if len(ds) != len(sh):
            raise RuntimeError(f"roll: shifts {sh} and dims {ds} must have the same length")
        arr = np.roll(t.data, sh, ds) if nd > 0 else np.array(t.data, copy=True)
    cdef Tensor out = wrap(as_array(arr))
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(t, roll, (sh, ds)))
    cdef RollBackward node
    if grad_enabled() and t.requires_grad_c():
        node = RollBackward.__new__(RollBackward)
        record(node, t, None)
        node.shifts = sh
        node.dims = ds
        attach_output(out, node, 0)
    return out
define_op(roll, DIMS, ANY)


# -- repeat, tile ---------------------------------------------------------------------------------

cdef class RepeatBackward(Node):
    """y = repeat(x, r)  ->  gx = sum of g's r_i blocks: reshape(g, (r0, n0, r1, n1, ...))
    summed over the r axes, reshaped to x.shape"""
    cdef tuple in_shape
    cdef tuple padded            # x's shape with leading 1s, one per repeat
    cdef tuple repeats

    cdef tuple apply(self, tuple grads):
        cdef list blocks = []
        cdef Py_ssize_t i
        for i in range(len(self.repeats)):
            blocks.append(self.repeats[i])
            blocks.append(self.padded[i])
        cdef Tensor g = reshape(grads[0], tuple(blocks))
        g = reduce_op(g, tuple(range(0, 2 * len(self.repeats), 2)), False, False)
        return (reshape(g, self.in_shape),)


cpdef Tensor repeat(Tensor input, tuple sizes):
    """input tiled sizes[i] times along each dim (sizes may add leading dims); a copy."""
    cdef int nd = ndim_of(input.data)
    cdef tuple reps = as_shape(sizes, "repeat")
    if len(reps) < nd:
        raise RuntimeError(f"repeat: {len(reps)} repeat sizes {reps} for a tensor of {nd} dims "
                           f"(shape {input.data.shape}); give at least one per dim")
    if reps and sorted(reps)[0] < 0:
        raise RuntimeError(f"repeat: repeat sizes must be non-negative, got {reps}")
    cdef tuple padded = (1,) * (len(reps) - nd) + input.data.shape
    cdef Tensor out = wrap(np.tile(input.data.reshape(padded), reps) if reps else
                           np.array(input.data, copy=True))
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(input, repeat, (reps,)))
    cdef RepeatBackward node
    if grad_enabled() and input.requires_grad_c():
        node = RepeatBackward.__new__(RepeatBackward)
        record(node, input, None)
        node.in_shape = input.data.shape
        node.padded = padded
        node.repeats = reps
        attach_output(out, node, 0)
    return out


def tile(input, dims):
    """input repeated dims[i] times along each dim (missing leading dims count as 1); a copy."""
    cdef Tensor t = tensor_arg(input, "tile", "input")
    cdef tuple reps = as_shape(dims, "tile")
    cdef int nd = ndim_of(t.data)
    return repeat(t, (1,) * (nd - len(reps)) + reps if len(reps) < nd else reps)
define_op(tile, SHAPE, ANY, method="own")


# -- tril, triu -----------------------------------------------------------------------------------

cdef class TriangleBackward(Node):
    """y = tril(x, k) (or triu)  ->  gx = tril(g, k) (or triu): the same selection"""
    cdef Py_ssize_t diagonal
    cdef bint upper

    cdef tuple apply(self, tuple grads):
        return (triangle(grads[0], self.diagonal, self.upper),)


cdef class TrilBackward(TriangleBackward):
    """y = tril(x, k)  ->  gx = tril(g, k)"""


cdef class TriuBackward(TriangleBackward):
    """y = triu(x, k)  ->  gx = triu(g, k)"""


cdef Tensor triangle(Tensor a, Py_ssize_t k, bint upper):
    """a's lower (upper) triangle from diagonal k in its last two dims, zeros elsewhere."""
    cdef str op = "triu" if upper else "tril"
    if ndim_of(a.data) < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dims, got shape {a.data.shape}")
    cdef Tensor out = wrap(np.triu(a.data, k) if upper else np.tril(a.data, k))
    if fw_active():
        for _fw_lv in fw_levels():      # Note [Nested forward mode]
            set_tangent(out, linear_jvp(a, triu if upper else tril, (k,)))
    cdef TriangleBackward node
    if grad_enabled() and a.requires_grad_c():
        node = TriuBackward.__new__(TriuBackward) if upper else TrilBackward.__new__(TrilBackward)
        record(node, a, None)
        node.diagonal = k
        node.upper = upper
        attach_output(out, node, 0)
    return out


def tril(input, diagonal=0):
    """input's lower triangle (on and below diagonal `diagonal` of the last two dims); a copy."""
    cdef Tensor t = tensor_arg(input, "tril", "input")
    return triangle(t, int_arg(diagonal, "tril", "diagonal"), False)
define_op(tril, BATCHED_MATRIX, ANY)


def triu(input, diagonal=0):
    """input's upper triangle (on and above diagonal `diagonal` of the last two dims); a copy."""
    cdef Tensor t = tensor_arg(input, "triu", "input")
    return triangle(t, int_arg(diagonal, "triu", "diagonal"), True)
define_op(triu, BATCHED_MATRIX, ANY)


# -- movedim: the existing permute under PyTorch's name (mT, expand_as and contiguous, which
#    Tensor's own methods call, are in ops/shape/shape.pxi) -----------------------------------

def movedim(input, source, destination):
    """input with dims source moved to positions destination, the rest in order (a view)."""
    cdef Tensor x = tensor_arg(input, "movedim", "input")
    cdef int nd = ndim_of(x.data)
    cdef tuple src = distinct_dims(source, nd, "movedim")
    cdef tuple dst = distinct_dims(destination, nd, "movedim")
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: source {src} and destination {dst} must have the same "
                           "number of dims")
    cdef list order = [d for d in range(nd) if d not in src]
    for s, t in sorted(zip(dst, src)):
        order.insert(s, t)
    return permute(x, tuple(order) if nd > 0 else ())
define_op(movedim, DIMS, ANY)


# -- the family's Tensor methods with their own signatures (t.flip(0, 1), t.split(2, dim=1)) ----

def _tensor_flip(Tensor self, *dims):
    """self reversed along each of dims, a copy (lucid.flip)."""
    return flip(self, shape_arg(dims))


def _tensor_repeat(Tensor self, *sizes):
    """self repeated sizes[i] times along each dim (extra leading sizes add dims), a copy."""
    return repeat(self, shape_arg(sizes))


def _tensor_tile(Tensor self, *dims):
    """self repeated dims[i] times along each dim, missing leading dims as 1 (lucid.tile)."""
    return tile(self, shape_arg(dims))


def _tensor_split(Tensor self, split_size, dim=0):
    """self cut along dim into pieces of split_size or the given sizes (lucid.split)."""
    return split(self, split_size, dim)


install_methods(Tensor, {"flip": _tensor_flip, "repeat": _tensor_repeat, "tile": _tensor_tile,
                         "split": _tensor_split})
