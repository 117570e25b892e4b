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


def narrow(Tensor input, dim, start, length):
    """input[..., start:start+length, ...] along dim (a view; start may be negative)."""
    refuse_zero_dim_view(input, "narrow")
    cdef Py_ssize_t d = normalize_dim(dim, ndim_of(input.data))
    cdef Py_ssize_t size = input.data.shape[d]
    cdef Py_ssize_t s = start.__index__(), n = length.__index__()
    if s < -size or s > size:
        raise IndexError(f"narrow: start {s} is out of range for dim {d} of size {size} "
                         f"(shape {input.data.shape})")
    if s < 0:
        s += size
    if n < 0 or s + n > size:
        raise RuntimeError(f"narrow: start {s} + length {n} exceeds dim {d} of size {size} "
                           f"(shape {input.data.shape})")
    return take_at(input, key_in_dim(d, slice(s, s + n)), NarrowBackward, True)


def split(Tensor tensor, split_size_or_sections, dim=0):
    """tensor cut along dim into pieces of split_size (the last may be smaller), or of the given
    section sizes; a tuple of views."""
    refuse_zero_dim_view(tensor, "split")
    cdef Py_ssize_t d = normalize_dim(dim, ndim_of(tensor.data))
    cdef Py_ssize_t size = tensor.data.shape[d], step, start = 0
    cdef list sizes
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [int(s.__index__()) for s in split_size_or_sections]
        if sum_ints(sizes) != size:
            raise RuntimeError(f"split: section sizes {tuple(sizes)} must be non-negative and "
                               f"add up to {size}, the size of dim {d} (shape "
                               f"{tensor.data.shape})")
    else:
        step = split_size_or_sections.__index__()
        if step < 0 or (step == 0 and size > 0):
            raise RuntimeError(f"split: split_size must be positive, got {step} (dim {d} has "
                               f"size {size})")
        sizes = [step if s + step <= size else size - s for s in range(0, size, step)] \
            if size > 0 else [0]
    cdef list pieces = []
    for n in sizes:
        pieces.append(take_at(tensor, key_in_dim(d, slice(start, start + n)), SplitBackward, True))
        start += n
    return tuple(pieces)


cdef Py_ssize_t sum_ints(list xs):
    """The sum of xs, or -1 when one is negative."""
    cdef Py_ssize_t total = 0, x
    for x in xs:
        if x < 0:
            return -1
        total += x
    return total


def chunk(Tensor input, chunks, dim=0):
    """input cut along dim into at most chunks pieces of ceil(size/chunks); a tuple of views."""
    cdef Py_ssize_t c = chunks.__index__()
    if c <= 0:
        raise RuntimeError(f"chunk: chunks must be positive, got {c}")
    refuse_zero_dim_view(input, "chunk")
    cdef Py_ssize_t d = normalize_dim(dim, ndim_of(input.data))
    cdef Py_ssize_t size = input.data.shape[d]
    if size == 0:
        return split(input, [0] * c, d)
    return split(input, (size + c - 1) // c, d)


def unbind(Tensor input, dim=0):
    """The slices of input along dim, as a tuple of views (dim removed)."""
    refuse_zero_dim_view(input, "unbind")
    cdef Py_ssize_t d = normalize_dim(dim, ndim_of(input.data)), i
    return tuple([take_at(input, key_in_dim(d, i), UnbindBackward, True)
                  for i in range(input.data.shape[d])])


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
    cdef Py_ssize_t d1 = normalize_dim(dim1, nd), d2 = normalize_dim(dim2, nd)
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


cpdef Tensor diagonal(Tensor input, object offset=0, object dim1=0, object dim2=1):
    """The diagonal of input in dims dim1, dim2 (offset > 0: above), as a view in the last dim."""
    cdef tuple dims = diagonal_dims(input, dim1, dim2, "diagonal")
    cdef Py_ssize_t k = offset.__index__()
    cdef Tensor out = wrap_like_view(writable_diagonal(input.data, k, dims[0], dims[1]), input)
    if fw_active():
        set_tangent(out, linear_jvp(input, diagonal, (k, dims[0], dims[1])))
    cdef DiagonalBackward node
    if grad_enabled() and input.requires_grad_c():
        node = DiagonalBackward.__new__(DiagonalBackward)
        record(node, input, None)
        node.in_shape = input.data.shape
        node.offset = k
        node.dim1 = dims[0]
        node.dim2 = dims[1]
        attach_output(out, node, 0)
    return out


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


def diag(Tensor input, diagonal=0):
    """1-d input: a square matrix with input on diagonal `diagonal`; 2-d: that diagonal, copied."""
    cdef int nd = ndim_of(input.data)
    cdef Py_ssize_t k = diagonal.__index__(), n
    if nd == 1:
        n = input.data.shape[0] + (k if k >= 0 else -k)
        return diagonal_embed(input, (n, n), k, 0, 1)
    if nd == 2:
        return clone(diagonal_of(input, k))
    raise RuntimeError(f"diag: input must be 1-d or 2-d, got shape {input.data.shape}")


cdef class TraceBackward(Node):
    """y = trace(x)  ->  gx = diagonal_embed(expand(g, (k,)), x.shape, 0, 0, 1)"""
    cdef tuple in_shape

    cdef tuple apply(self, tuple grads):
        cdef Py_ssize_t rows = self.in_shape[0], cols = self.in_shape[1]
        cdef Py_ssize_t k = rows if rows < cols else cols
        return (diagonal_embed(expand(grads[0], (k,)), self.in_shape, 0, 0, 1),)


cpdef Tensor trace(Tensor input):
    """The sum of the main diagonal of a 2-d input."""
    if ndim_of(input.data) != 2:
        raise RuntimeError(f"trace: input must be 2-d, got shape {input.data.shape}")
    cdef Tensor out = wrap(as_array(np.trace(input.data)))
    if fw_active():
        set_tangent(out, linear_jvp(input, trace, ()))
    cdef TraceBackward node
    if grad_enabled() and input.requires_grad_c():
        node = TraceBackward.__new__(TraceBackward)
        record(node, input, None)
        node.in_shape = input.data.shape
        attach_output(out, node, 0)
    return out


# -- flip, roll -----------------------------------------------------------------------------------

cdef tuple distinct_dims(object dims, int nd, str op):
    """dims (an int or a sequence) as a tuple of distinct non-negative dims."""
    cdef tuple ds = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    cdef tuple out = tuple([normalize_dim(x, nd) for x in ds])
    if len(set(out)) != len(out):
        raise RuntimeError(f"{op}: dims {ds} name a dim more than once")
    return out


cdef class FlipBackward(Node):
    """y = flip(x, dims)  ->  gx = flip(g, dims)"""
    cdef tuple dims

    cdef tuple apply(self, tuple grads):
        return (flip(grads[0], self.dims),)


cpdef Tensor flip(Tensor input, object dims):
    """input reversed along each of dims (a copy)."""
    cdef int nd = ndim_of(input.data)
    cdef tuple ds = distinct_dims(dims, nd, "flip")
    cdef Tensor out = wrap(np.flip(input.data, ds).copy() if nd > 0 else
                           np.array(input.data, copy=True))
    if fw_active():
        set_tangent(out, linear_jvp(input, flip, (ds,)))
    cdef FlipBackward node
    if grad_enabled() and input.requires_grad_c():
        node = FlipBackward.__new__(FlipBackward)
        record(node, input, None)
        node.dims = ds
        attach_output(out, node, 0)
    return out


cdef class RollBackward(Node):
    """y = roll(x, shifts, dims)  ->  gx = roll(g, -shifts, dims)"""
    cdef tuple shifts
    cdef object dims

    cdef tuple apply(self, tuple grads):
        return (roll(grads[0], tuple([-s for s in self.shifts]), self.dims),)


cpdef Tensor roll(Tensor input, object shifts, object dims=None):
    """input's entries shifted cyclically by shifts along dims (dims None: over the flattened
    tensor, shape kept); a copy."""
    cdef int nd = ndim_of(input.data)
    cdef tuple sh = tuple([int(s.__index__()) for s in
                           (shifts if isinstance(shifts, (tuple, list)) else (shifts,))])
    cdef object ds = None
    if dims is None:
        if len(sh) != 1:
            raise RuntimeError(f"roll: without dims, shifts must be one int, got {sh}")
        arr = np.roll(input.data, sh[0])
    else:
        ds = tuple([normalize_dim(x, nd) for x in
                    (dims if isinstance(dims, (tuple, list)) else (dims,))])
        if len(ds) != len(sh):
            raise RuntimeError(f"roll: shifts {sh} and dims {ds} must have the same length")
        arr = np.roll(input.data, sh, ds) if nd > 0 else np.array(input.data, copy=True)
    cdef Tensor out = wrap(as_array(arr))
    if fw_active():
        set_tangent(out, linear_jvp(input, roll, (sh, ds)))
    cdef RollBackward node
    if grad_enabled() and input.requires_grad_c():
        node = RollBackward.__new__(RollBackward)
        record(node, input, None)
        node.shifts = sh
        node.dims = ds
        attach_output(out, node, 0)
    return out


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


def tile(Tensor input, dims):
    """input repeated dims[i] times along each dim (missing leading dims count as 1); a copy."""
    cdef tuple reps = as_shape(dims, "tile")
    cdef int nd = ndim_of(input.data)
    return repeat(input, (1,) * (nd - len(reps)) + reps if len(reps) < nd else reps)


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
        set_tangent(out, linear_jvp(a, triu if upper else tril, (k,)))
    cdef TriangleBackward node
    if grad_enabled() and a.requires_grad_c():
        node = TriuBackward.__new__(TriuBackward) if upper else TrilBackward.__new__(TrilBackward)
        record(node, a, None)
        node.diagonal = k
        node.upper = upper
        attach_output(out, node, 0)
    return out


def tril(Tensor input, diagonal=0):
    """input's lower triangle (on and below diagonal `diagonal` of the last two dims); a copy."""
    return triangle(input, diagonal.__index__(), False)


def triu(Tensor input, diagonal=0):
    """input's upper triangle (on and above diagonal `diagonal` of the last two dims); a copy."""
    return triangle(input, diagonal.__index__(), True)


# -- movedim, mT, expand_as, contiguous: the existing views and clone under PyTorch's names --------

def movedim(Tensor input, source, destination):
    """input with dims source moved to positions destination, the rest in order (a view)."""
    cdef int nd = ndim_of(input.data)
    cdef tuple src = distinct_dims(source, nd, "movedim")
    cdef tuple dst = distinct_dims(destination, nd, "movedim")
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: source {src} and destination {dst} must have the same "
                           "number of dims")
    cdef list order = [d for d in range(nd) if d not in src]
    for s, t in sorted(zip(dst, src)):
        order.insert(s, t)
    return permute(input, tuple(order) if nd > 0 else ())


cdef Tensor matrix_transpose(Tensor a):
    """a with its last two dims swapped (a view)."""
    cdef int nd = ndim_of(a.data)
    if nd < 2:
        raise RuntimeError(f"mT: needs a matrix or a batch of matrices, got shape {a.data.shape}")
    return transpose(a, nd - 2, nd - 1)


cdef Tensor expand_as(Tensor a, object other):
    """a expanded to other's shape (a view)."""
    if not isinstance(other, Tensor):
        raise TypeError(f"expand_as: other must be a Tensor, not {type(other).__name__}")
    return expand(a, (<Tensor>other).data.shape)


cdef Tensor contiguous(Tensor a):
    """a when its memory is already C-contiguous, else a C-contiguous copy (like clone)."""
    if a.data.flags.c_contiguous:
        return a
    cdef Tensor out = wrap(np.ascontiguousarray(a.data))
    if fw_active():
        set_tangent(out, linear_jvp(a, clone, ()))
    if grad_enabled() and a.requires_grad_c():
        attach_output(out, record(CloneBackward.__new__(CloneBackward), a, None), 0)
    return out
