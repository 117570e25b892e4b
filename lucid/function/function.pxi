# Custom Functions: FunctionCtx and PythonBackwardNode (Function.apply is function/apply.pxi).
#
# Note [Function ownership]: the node owns its ctx (strong); the ctx points back at its node
# with a borrowed pointer that the node clears when it dies, so no reference cycle forms. Saved
# outputs are kept as values + storage (Note [Saved outputs]); saved inputs as the tensors.
# The node is never cleared by the cyclic GC (no_gc_clear), so its ctx is still there when it
# dies and the back pointer is always reset. A ctx the user holds outlives its node with its
# attributes; only the saved tensors are freed. Function nodes, their ctx and their outputs stay GC-tracked
# (Note [GC tracking]): ctx attributes may hold anything.

cdef class FunctionCtx:
    """Per-call context shared by a Function's forward and backward."""
    cdef dict __dict__
    cdef object __weakref__
    cdef tuple _to_save                 # what save_for_backward got, until apply converts it
    cdef object _saved                  # after forward: the one SavedTensor, or a tuple of
                                        # SavedTensor (or None) per entry; None: not converted
    cdef bint _released
    cdef PyObject* _node                # borrowed: the node that owns this ctx (NULL if none)
    cdef tuple needs_input_grad                 # per forward input: does it need a gradient
    cdef tuple _non_differentiable
    cdef bint materialize_grads
    cdef tuple _for_forward             # what save_for_forward got (read back inside jvp)
    cdef tuple _dirty                   # inputs forward changed in place (mark_dirty)
    cdef bint _in_jvp                   # jvp is running: saved_tensors gives _for_forward

    def __cinit__(self):
        self.materialize_grads = True
        self._node = NULL

    def save_for_backward(self, *tensors):
        """Keep tensors (or None) for backward; a second call replaces the first."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward takes Tensors or None; argument {i} is "
                                f"{type(t).__name__} (store other values as ctx attributes)")
        self._to_save = tensors
        self._saved = None

    def save_for_forward(self, *tensors):
        """Keep tensors (or None) for jvp, where ctx.saved_tensors gives them back."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_forward takes Tensors or None; argument {i} is "
                                f"{type(t).__name__} (store other values as ctx attributes)")
        self._for_forward = tensors

    @property
    def saved_tensors(self):
        """The tensors given to save_for_backward (inside jvp: to save_for_forward), checked
        against in-place changes."""
        cdef Node node
        if self._in_jvp:
            return self._for_forward if self._for_forward is not None else ()
        if self._released:
            raise RuntimeError(
                f"Trying to backward through the graph a second time: saved_tensors of "
                f"{self.owner_name()} were freed by a backward pass run without "
                "retain_graph=True. Specify retain_graph=True in the first backward if you need "
                "to run backward through this graph again")
        if self._saved is None:
            return self._to_save if self._to_save is not None else ()
        node = <Node>self._node
        if isinstance(self._saved, SavedTensor):
            return ((<SavedTensor>self._saved).unpack(node),)
        return unpacked_all(<tuple>self._saved, node)

    @property
    def needs_input_grad(self):
        """Per forward input, a bool: does it need a gradient (a tensor that requires grad while
        grad mode is on)?"""
        return self.needs_input_grad

    def mark_dirty(self, *tensors):
        """These inputs were changed in place by forward and are returned as outputs: they
        come back as the same objects, with a bumped version and this call as their history."""
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(f"mark_dirty takes the input Tensors forward changed in place; "
                                f"argument {i} is {type(t).__name__}")
        self._dirty = tensors

    def mark_non_differentiable(self, *outputs):
        """These outputs get no grad_fn; their gradient in backward is zeros (or None)."""
        self._non_differentiable = outputs

    def set_materialize_grads(self, value):
        """True (default): gradients of outputs that got none arrive as zeros; False: None."""
        self.materialize_grads = bool(value)

    cdef str owner_name(self):
        return "this Function" if self._node == NULL else (<Node>self._node).name()

    cdef void release(self):
        self._released = True
        self._saved = None
        self._to_save = None


cdef tuple unpacked_all(tuple saved, Node node):
    """Each SavedTensor unpacked for node (None stays None)."""
    cdef Py_ssize_t n = len(saved), i
    cdef tuple out = PyTuple_New(n)
    for i in range(n):
        s = saved[i]
        t = None if s is None else (<SavedTensor>s).unpack(node)
        Py_INCREF(t)
        PyTuple_SET_ITEM(out, i, t)
    return out


@cython.no_gc_clear
cdef class PythonBackwardNode(Node):
    """The node of one Function call: re-enters Python to run the Function's backward."""
    cdef FunctionCtx ctx                      # the ctx the Function's forward filled
    cdef object function                      # the Function subclass
    cdef object backward_fn                   # its backward (None if it has none)
    cdef tuple input_meta                     # per input (shape, dtype) or None: checks gradients
    cdef tuple output_meta                    # per output (shape, dtype) or None: zero gradients

    def __dealloc__(self):
        if self.ctx is not None:
            self.ctx._node = NULL
            self.ctx.release()

    @property
    def ctx(self):
        """The ctx the Function's forward filled."""
        return self.ctx

    @property
    def function(self):
        """The Function subclass this node is a call of."""
        return self.function

    cdef void release_saved(self):
        """After a backward without retain_graph: free the saved tensors, and the attributes
        too when nothing but this node holds the ctx (no one could read them again)."""
        if self.ctx is None:
            return
        self.ctx.release()
        if lucid_refcount(<PyObject*>self.ctx) == 1:
            attributes = (<object>self.ctx).__dict__
            if attributes:
                attributes.clear()

    cdef tuple apply(self, tuple grads):
        cdef FunctionCtx ctx = self.ctx
        if ctx is None or ctx._released:
            raise_freed_graph(self)
        if self.backward_fn is None:
            raise NotImplementedError(f"Function {self.function.__name__} does not implement "
                                      "backward(ctx, *grad_outputs)")
        if ctx.materialize_grads:
            grads = self.materialized(grads)
        cdef int64_t start = now_ns() if profiling else 0
        try:
            result = call_with_first(self.backward_fn, ctx, grads)
        except BaseException as e:
            note_raised(e, self, f"in Function {self.function.__name__}.backward, the backward of")
            raise
        finally:
            if profiling:
                note_python_call(self, "python", start, self.function)
        return self.checked_gradients(result)

    def _backward_without_gradients(self):
        """This node's backward called with no gradient for any output (None each, or zeros
        when its ctx materializes them), as lucid's engine never calls it (a node no gradient
        reaches is skipped) and PyTorch's does: gradcheck's check_undefined_grad runs it so.
        Returns the input gradients, checked."""
        return self.apply((None,) * self.num_outputs)

    cdef tuple materialized(self, tuple grads):
        """grads with zeros for the outputs that got none (grads itself when all have one)."""
        cdef Py_ssize_t i, n = self.num_outputs
        if len(grads) == n:
            for i in range(n):
                if grads[i] is None and self.output_meta[i] is not None:
                    break
            else:
                return grads
        cdef tuple out = PyTuple_New(n)
        for i in range(n):
            g = grads[i]
            meta = self.output_meta[i]
            if g is None and meta is not None:
                g = wrap(np.zeros(meta[0], dtype=meta[1]))
            Py_INCREF(g)
            PyTuple_SET_ITEM(out, i, g)
        return out

    cdef tuple checked_gradients(self, object result):
        """What backward returned, as one gradient (or None) per forward input."""
        cdef tuple got
        if self.num_inputs == 1 and isinstance(result, Tensor):    # the common case, no tuple
            return (self.checked_gradient(result, 0),)
        if result is None or isinstance(result, Tensor):
            got = (result,)
        elif isinstance(result, tuple):
            got = <tuple>result
        elif isinstance(result, list):
            got = tuple(result)
        else:
            raise RuntimeError(f"Function {self.function.__name__}.backward returned "
                               f"{type(result).__name__}; it must return a Tensor, None, or a "
                               "tuple with one entry per forward input")
        cdef Py_ssize_t n = self.num_inputs, i
        cdef bint extra = False
        for i in range(n, len(got)):
            extra = extra or got[i] is not None
        if len(got) < n or extra:
            raise RuntimeError(f"Function {self.function.__name__}.backward returned {len(got)} "
                               f"gradients, expected {n} (one per forward input, None for those "
                               "without one)")
        cdef tuple out = PyTuple_New(n)
        cdef Tensor t
        for i in range(n):
            g = got[i]
            if g is not None:
                g = self.checked_gradient(g, i)
            Py_INCREF(g)
            PyTuple_SET_ITEM(out, i, g)
        return out

    cdef object checked_gradient(self, object g, Py_ssize_t i):
        """Backward's gradient for input i, checked (type, shape) and cast to the input's dtype
        (the checks the engine makes of a native node's gradients: Note [Native nodes])."""
        meta = self.input_meta[i]
        cdef Tensor t = checked_gradient_form(self, g, meta, i)
        if not needs(self, i):
            return None
        return gradient_in_dtype(self, t, (<tuple>meta)[1], i)
