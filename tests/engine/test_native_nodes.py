"""What a native node (a Cython Node subclass built outside lucid's core) returns from apply is
checked by the engine, at one place (Note [Native nodes], lucid/engine/engine.pxi): a tuple with one
entry per forward input, each None or a Tensor of the input's shape and a floating dtype (cast to
the input's dtype). A wrong result raises a RuntimeError naming the node's class and, in a note,
where the node was made; nothing is accumulated into any .grad. Cases that crashed the
interpreter (an ndarray or a list where a tensor or tuple belongs) run in a child process."""
import textwrap

import numpy as np
import pytest

import lucid
from support.child_process import run_child

pytest.importorskip("Cython", reason="building a native extension needs Cython")
from lucid.utils import cpp_extension  # noqa: E402

NAME = "lucid_test_native_checks"

# One node class per input count; `mode` picks what apply returns for input 0 (the other inputs
# get a correct gradient or None). "good" is the correct gradient 2*g (y = 2*x + ...).
SOURCE = textwrap.dedent('''\
    import numpy as np
    from lucid._core cimport Node, Tensor, wrap, record, attach_output, grad_enabled, mul
    from lucid._core cimport check_abi, ABI_VERSION
    check_abi(ABI_VERSION)


    cdef object bad_entry(str mode, Tensor g, object shape, object dtype):
        """Input 0's gradient for mode (the correct one is 2*g)."""
        if mode == "good":
            return wrap(2.0 * g.data)
        if mode == "none":
            return None
        if mode == "ndarray":
            return 2.0 * g.data
        if mode == "number":
            return 2.0
        if mode == "shape":
            return wrap(np.ones((1,) if shape != (1,) else (2,), dtype=dtype))
        if mode == "int64":
            return wrap(np.full(shape, 2, dtype=np.int64))
        if mode == "bool":
            return wrap(np.ones(shape, dtype=bool))
        if mode == "other float":
            other = np.float32 if np.dtype(dtype) == np.float64 else np.float64
            return wrap((2.0 * g.data).astype(other))
        raise ValueError(mode)


    cdef class BadBackward(Node):
        """y = 2*x (+ 3*w)  ->  gx from mode, gw = 3*g"""
        cdef str mode
        cdef object shape
        cdef object dtype

        cdef tuple apply(self, tuple grads):
            cdef Tensor g = grads[0]
            cdef object result
            if self.mode == "list":              # unchecked cast: a list where a tuple belongs
                return <tuple>[wrap(2.0 * g.data)] * self.num_inputs
            if self.mode == "checked list":       # Cython's own return type check raises
                result = [wrap(2.0 * g.data)] * self.num_inputs
                return result
            if self.mode == "None":
                return None
            if self.mode == "count":
                return (wrap(2.0 * g.data),) * (self.num_inputs + 1)
            first = bad_entry(self.mode, g, self.shape, self.dtype)
            if self.num_inputs == 1:
                return (first,)
            return (first,) + tuple(wrap(3.0 * g.data) if self.next_edges[i].node != NULL
                                    else None for i in range(1, self.num_inputs))


    def op(Tensor x, str mode, Tensor w=None):
        """2*x (+ 3*w) with a BadBackward node (edges through record)."""
        cdef Tensor y = wrap(2.0 * x.data if w is None else 2.0 * x.data + 3.0 * w.data)
        cdef BadBackward node
        if grad_enabled() and (x.requires_grad_c() or (w is not None and w.requires_grad_c())):
            node = BadBackward.__new__(BadBackward)
            node.mode = mode
            node.shape = x.data.shape
            node.dtype = x.data.dtype
            record(node, x, w)
            attach_output(y, node, 0)
        return y


    def op3(Tensor x, Tensor v, Tensor w, str mode):
        """2*x + 3*v + 3*w, edges set one by one (set_num_inputs / set_edge)."""
        cdef Tensor y = wrap(2.0 * x.data + 3.0 * v.data + 3.0 * w.data)
        cdef BadBackward node
        if grad_enabled():
            node = BadBackward.__new__(BadBackward)
            node.mode = mode
            node.shape = x.data.shape
            node.dtype = x.data.dtype
            node.set_num_inputs(3)
            node.set_edge(0, x)
            node.set_edge(1, v)
            node.set_edge(2, w)
            attach_output(y, node, 0)
        return y
''')


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("lucid_extensions")


@pytest.fixture(scope="module")
def ops(cache):
    return cpp_extension.load_inline(NAME, SOURCE, build_directory=cache)


DTYPES = [lucid.float64, lucid.float32]


def _inputs(shape, dtype, layout="contiguous"):
    """A leaf that requires grad, of shape and dtype (strided: a view of a wider array)."""
    values = np.random.default_rng(0).standard_normal(shape)
    if layout == "strided" and len(shape) >= 1:
        values = np.repeat(values, 2, axis=-1)[..., ::2]
    return lucid.from_numpy(values.astype(np.float64 if dtype == lucid.float64 else np.float32)
                            ).requires_grad_()


def _raises_naming_the_node(fn, node, match):
    """fn() raises a RuntimeError whose message names BadBackward and match, with a note naming
    where node was made."""
    site = node.creation_site
    assert node.name() == "BadBackward" and site is not None and site.startswith(__file__)
    with pytest.raises(RuntimeError, match=match) as info:
        fn()
    assert "BadBackward" in str(info.value) and "AccumulateGrad" not in str(info.value)
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert f"BadBackward (created at {site})" in notes, notes
    return info.value


INPUTS = {          # what the native op is given, made from the leaf x
    "a leaf": lambda x: x,
    "a MulBackward": lambda x: x * 5.0,
    "a view": lambda x: x.reshape(-1),
}


@pytest.mark.parametrize("given", list(INPUTS))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3,), (2, 3), ()])
def test_a_gradient_of_the_wrong_shape_names_the_native_node(ops, given, dtype, shape):
    """Bug (repro_N b, c): reported at AccumulateGrad, naming neither the node nor the line."""
    x = _inputs(shape, dtype, "strided")
    inp = INPUTS[given](x)
    y = ops.op(inp, "shape")
    error = _raises_naming_the_node(lambda: (y * 2.0).sum().backward(), y.grad_fn,
                                    "returned a gradient of shape")
    assert f"expected shape {tuple(inp.shape)}" in str(error)
    assert x.grad is None


@pytest.mark.parametrize("mode, match", [
    ("int64", "returned a gradient of dtype lucid.int64 for input 0; expected lucid.float"),
    ("bool", "returned a gradient of dtype lucid.bool for input 0; expected lucid.float"),
    ("count", "returned 2 gradients for 1 inputs"),
])
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_wrong_entry_or_count_names_the_native_node(ops, mode, match, dtype):
    x = _inputs((2, 3), dtype, "strided")
    x.grad = lucid.ones(2, 3, dtype=dtype)
    y = ops.op(x, mode)
    _raises_naming_the_node(lambda: lucid.autograd.backward(y, lucid.ones(2, 3, dtype=dtype)),
                            y.grad_fn, match)
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3)))    # nothing accumulated


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_checks_see_edges_set_one_by_one(ops, dtype):
    """A node whose edges the op sets with set_num_inputs/set_edge (more than two inputs)."""
    x, v, w = (_inputs((4,), dtype) for _ in range(3))
    y = ops.op3(x, v, w, "shape")
    _raises_naming_the_node(lambda: y.sum().backward(), y.grad_fn, "returned a gradient of shape")
    assert x.grad is None and v.grad is None and w.grad is None
    y = ops.op3(x, v, w, "count")
    _raises_naming_the_node(lambda: y.sum().backward(), y.grad_fn,
                            "returned 4 gradients for 3 inputs")


@pytest.mark.parametrize("dtype", DTYPES)
def test_correct_gradients_pass_and_another_float_dtype_is_cast(ops, dtype):
    """Guard: what a correct native node returns reaches the leaves unchanged; a gradient in the
    other float dtype is cast to the input's (as a Function's is); None is no gradient."""
    for mode in ("good", "other float"):
        x, w = _inputs((2, 3), dtype, "strided"), _inputs((2, 3), dtype)
        (ops.op(x, mode, w) * 1.5).sum().backward()
        assert x.grad.dtype == dtype and w.grad.dtype == dtype
        np.testing.assert_allclose(x.grad.numpy(), np.full((2, 3), 3.0))
        np.testing.assert_allclose(w.grad.numpy(), np.full((2, 3), 4.5))
    x, w = _inputs((3,), dtype), _inputs((3,), dtype)
    ops.op(x, "none", w).sum().backward()
    assert x.grad is None
    np.testing.assert_allclose(w.grad.numpy(), np.full(3, 3.0))
    x = lucid.tensor(np.zeros((0, 2)), dtype=dtype, requires_grad=True)
    ops.op(x, "good").sum().backward()
    assert x.grad.shape == (0, 2)
    x = _inputs((3,), lucid.float64)
    assert lucid.autograd.gradcheck(lambda a: ops.op(a, "good").tanh(), (x,))


def test_a_wrong_entry_for_an_input_that_needs_no_gradient_is_still_refused(ops):
    x = _inputs((3,), lucid.float64)
    w = lucid.ones(3, dtype=lucid.float64)                 # no gradient: no edge
    y = ops.op(w, "number", x)          # input 0 (w) has no edge; its entry is a float
    _raises_naming_the_node(lambda: y.sum().backward(), y.grad_fn, "returned float as the gradient")
    assert x.grad is None


# The cases that crashed the interpreter: each in a child process, which loads the module
# built above from the cache (no second build).
CHILD = """
import contextlib, sys
import numpy as np
import lucid
from lucid.utils import cpp_extension
ops = cpp_extension.load_inline({name!r}, {source!r}, build_directory={cache!r})
mode, given, dtype, anomaly = sys.argv[1], sys.argv[2], getattr(lucid, sys.argv[3]), sys.argv[4]
x = lucid.tensor(np.arange(6.0).reshape(2, 3), dtype=dtype, requires_grad=True)
try:
    with lucid.autograd.detect_anomaly() if anomaly == "1" else contextlib.nullcontext():
        y = ops.op(x * 5.0 if given == "a MulBackward" else x, mode)
        node = y.grad_fn
        (y * 1.0).sum().backward()
except Exception as e:
    print("RAISED", type(e).__name__, str(e).replace("\\n", " "))
    print("NOTES", " | ".join(getattr(e, "__notes__", [])).replace("\\n", " "))
    print("SITE", node.creation_site)
    print("GRAD", x.grad)
    sys.exit(0)
print("NO ERROR")
"""


@pytest.mark.parametrize("mode, match", [
    ("ndarray", "BadBackward.apply returned ndarray as the gradient of input 0; expected a "
                "Tensor or None"),
    ("number", "BadBackward.apply returned float as the gradient of input 0; expected a "
               "Tensor or None"),
    ("list", "BadBackward.apply returned list; it must return a tuple of 1 gradients"),
    ("None", "BadBackward.apply returned NoneType; it must return a tuple of 1 gradients"),
])
@pytest.mark.parametrize("given", ["a leaf", "a MulBackward"])
def test_a_result_that_is_not_a_tensor_tuple_raises_instead_of_crashing(ops, cache, mode, match,
                                                                        given):
    """Bug (repro_N a): an ndarray (or a number) where a Tensor belongs segfaulted the
    interpreter (and a list cast to a tuple was read as a tuple)."""
    for dtype, anomaly in (("float64", "0"), ("float32", "1")):
        out = run_child(CHILD.format(name=NAME, source=SOURCE, cache=str(cache)),
                        [mode, given, dtype, anomaly])
        lines = dict(line.split(" ", 1) for line in out.strip().splitlines() if " " in line)
        assert lines.get("RAISED", "").startswith("RuntimeError " + match), out
        assert f"BadBackward (created at {lines['SITE']})" in lines["NOTES"], out
        assert lines["GRAD"] == "None", out


def test_a_list_caught_by_cythons_own_check_still_names_the_node(ops):
    x = _inputs((3,), lucid.float32)
    y = ops.op(x, "checked list")
    site = y.grad_fn.creation_site
    with pytest.raises(TypeError, match="Expected tuple, got list") as info:
        y.sum().backward()
    assert f"BadBackward (created at {site})" in "\n".join(info.value.__notes__)
    assert x.grad is None


def _node_classes(module):
    """Every Node subclass (Node included) whose class is defined by module."""
    pending, found = [lucid._core.Node], []
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__module__ == module:
            found.append(cls)
    return found


@pytest.mark.parametrize("module", ["lucid._core", "lucid._linalg", "lucid._ops"])
def test_every_node_class_of_lucids_own_modules_is_trusted(module):
    classes = _node_classes(module)
    assert len(classes) > 5, classes            # the module defines its node classes
    untrusted = [c.__name__ for c in classes if not lucid._core._debug_trusted_node_class(c)]
    assert untrusted == []


def test_a_native_node_class_is_not_trusted(ops):
    classes = _node_classes(ops.__name__)
    assert classes
    assert not any(lucid._core._debug_trusted_node_class(c) for c in classes)

