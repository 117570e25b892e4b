"""lucid.utils.cpp_extension: load_inline/load build a native op against this lucid, cache it by
content hash, and report compile errors with the user's line."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import lucid
from lucid.autograd import gradcheck, gradgradcheck
from lucid.testing import OpCheckError, opcheck
from support.paths import ROOT

pytest.importorskip("Cython", reason="building a native extension needs Cython")
from lucid.utils import cpp_extension  # noqa: E402

# A native square: a Cython forward and a native backward node that records itself under
# create_graph (so it is twice differentiable).
SQUARE = textwrap.dedent('''\
    from lucid._core cimport (Node, Tensor, SavedTensor, save_tensor, wrap, record,
                              attach_output, grad_enabled, mul, check_abi, ABI_VERSION)
    check_abi(ABI_VERSION)


    cdef class SquareBackward(Node):
        """y = x*x  ->  gx = 2*g*x"""
        cdef SavedTensor x

        cdef void release_saved(self):
            self.x = None

        cdef tuple apply(self, tuple grads):
            cdef Tensor g = grads[0]
            cdef Tensor x = self.x.unpack(self)
            if grad_enabled():
                return (mul(mul(g, x), 2.0),)
            return (wrap(2.0 * g.data * x.data),)


    def square(Tensor x):
        """x*x."""
        cdef Tensor y = wrap(x.data * x.data)
        cdef SquareBackward node
        if grad_enabled() and x.requires_grad_c():
            node = SquareBackward.__new__(SquareBackward)
            record(node, x, None)
            node.x = save_tensor(x, node, False)
            attach_output(y, node, 0)
        return y
''')


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("lucid_extensions")


@pytest.fixture(scope="module")
def square_module(cache):
    built = cpp_extension.stats["built"]
    module = cpp_extension.load_inline("lucid_test_square", SQUARE, build_directory=cache)
    assert cpp_extension.stats["built"] == built + 1
    return module


def binary_of(cache, name):
    (folder,) = [p for p in cache.iterdir() if p.name.startswith(name + "-")]
    (binary,) = [p for p in folder.iterdir() if p.name.startswith(name + ".")
                 and p.suffix in (".so", ".pyd")]
    return binary


def test_native_square_in_a_graph(square_module):
    x = lucid.tensor([[-1.5, 0.5, 2.0], [1.0, -0.25, 3.0]], dtype=lucid.float64,
                     requires_grad=True)
    y = square_module.square(x)
    assert y.grad_fn.name() == "SquareBackward"
    np.testing.assert_allclose(y.detach().numpy(), x.detach().numpy() ** 2)
    w = lucid.tensor(np.linspace(-1, 1, 6).reshape(3, 2), dtype=lucid.float64,
                     requires_grad=True)
    graph = lambda x, w: (square_module.square(x @ w).tanh() * 3.0).sum()   # noqa: E731
    assert gradcheck(graph, (x, w))
    assert gradgradcheck(graph, (x, w))


def test_native_square_passes_opcheck(square_module):
    x = lucid.tensor(np.random.default_rng(0).standard_normal((3, 4)), dtype=lucid.float64)
    with pytest.raises(OpCheckError, match="square raised under vmap: TypeError") as info:
        opcheck(square_module.square, [(x,)])          # typed `Tensor x` and no batching rule
    report = info.value.report
    assert {r.check for r in report.failed()} == {"vmap"}, report
    assert report.status("forward_ad") == "skipped"            # no native jvp rule
    assert report.status("inplace_change_of_saved_input") == "passed"
    assert report.status("freed_after_backward") == "passed"


def test_native_square_under_vmap_through_register_vmap_rule(square_module):
    from lucid.func import grad, register_vmap_rule, vmap
    x = lucid.tensor(np.random.default_rng(1).standard_normal((4, 3)), dtype=lucid.float64)
    with pytest.raises(TypeError):                     # typed `Tensor x`: no batched tensors
        vmap(square_module.square)(x)
    levels = []

    def rule(info, in_dims, t):
        levels.append(info.batch_size)
        return square(t), in_dims[0]
    square = register_vmap_rule(square_module.square, rule)
    np.testing.assert_allclose(vmap(square)(x).numpy(), x.numpy() ** 2)
    np.testing.assert_allclose(vmap(vmap(square), in_dims=1)(x).numpy(), x.numpy().T ** 2)
    assert levels == [4, 4, 3]                          # once, then once per level
    per_row = vmap(grad(lambda r: square(r).sum()))(x)  # through the native backward node
    np.testing.assert_allclose(per_row.numpy(), 2 * x.numpy())
    assert gradcheck(lambda t: vmap(square)(t), (x.detach().requires_grad_(),))
    assert gradgradcheck(lambda t: vmap(square)(t), (x.detach().requires_grad_(),))


def test_second_call_is_served_from_memory(square_module, cache):
    binary = binary_of(cache, "lucid_test_square")
    stamp = binary.stat().st_mtime_ns
    built = cpp_extension.stats["built"]
    again = cpp_extension.load_inline("lucid_test_square", SQUARE, build_directory=cache)
    assert again is square_module
    assert cpp_extension.stats["built"] == built
    assert binary.stat().st_mtime_ns == stamp


def test_a_new_process_loads_the_cached_binary_without_building(square_module, cache, tmp_path):
    binary = binary_of(cache, "lucid_test_square")
    stamp = binary.stat().st_mtime_ns
    source = tmp_path / "lucid_test_square.pyx"
    source.write_text(SQUARE)
    # load() of a file with the same text and name has the same hash as the load_inline call
    code = textwrap.dedent(f"""
        import lucid
        from lucid.utils import cpp_extension
        m = cpp_extension.load("lucid_test_square", [{str(source)!r}])
        print(m.square(lucid.tensor([3.0])).tolist(), cpp_extension.stats)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONPATH=lucid.get_include(),
                                                LUCID_EXTENSIONS_DIR=str(cache)))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ("[9.0] {'built': 0, 'disk_cache_hits': 1, "
                                   "'memory_cache_hits': 0}")
    assert binary.stat().st_mtime_ns == stamp


def test_syntax_error_shows_the_line(cache):
    source = "def ok(x):\n    return x\n\ndef broken(x)\n    return x\n"
    with pytest.raises(cpp_extension.ExtensionBuildError) as info:
        cpp_extension.load_inline("lucid_test_syntax", source, build_directory=cache)
    message = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "line 4" in message and "4 | def broken(x)" in message
    assert "Expected ':'" in message                            # Cython's own text
    assert not any(p.name.startswith("lucid_test_syntax") for p in cache.iterdir())


def test_the_key_covers_source_flags_and_name():
    key = cpp_extension._build_key
    base = key("m", {"m.pyx": "x = 1\n"}, [])
    assert base == key("m", {"m.pyx": "x = 1\n"}, [])
    assert len({base, key("m", {"m.pyx": "x = 2\n"}, []), key("m", {"m.pyx": "x = 1\n"}, ["-O0"]),
                key("n", {"m.pyx": "x = 1\n"}, [])}) == 4


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("LUCID_EXTENSIONS_DIR", str(tmp_path))
    assert cpp_extension.cache_root() == tmp_path
    monkeypatch.delenv("LUCID_EXTENSIONS_DIR")
    assert cpp_extension.cache_root().parts[-2:] == (".cache", "lucid_extensions")


def test_bad_arguments_are_rejected(tmp_path):
    with pytest.raises(ValueError, match="identifier"):
        cpp_extension.load_inline("not-a-name", "x = 1\n", build_directory=tmp_path)
    header = tmp_path / "a.pxd"
    header.write_text("")
    with pytest.raises(ValueError, match="exactly one .pyx"):
        cpp_extension.load("m", [header], build_directory=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pxd"]


def test_the_package_module_of_the_docs_builds_and_passes_opcheck(cache, tmp_path):
    """docs/native_ops.md's lucid_cube.pyx, copied out of the page, through load()."""
    import re
    page = ROOT / "docs" / "native_ops.md"
    blocks = re.findall(r"^```cython\n(.*?)^```", page.read_text(encoding="utf-8"), re.S | re.M)
    (source,) = [b for b in blocks if "def cube(" in b]
    path = tmp_path / "lucid_cube.pyx"
    path.write_text(source)
    module = cpp_extension.load("lucid_cube", [path], build_directory=cache)
    x = lucid.tensor(np.linspace(-2, 2, 12).reshape(3, 4), dtype=lucid.float64)
    samples = [(x,), (lucid.tensor(0.7, dtype=lucid.float64),)]
    with pytest.raises(OpCheckError, match="cube raised under vmap: TypeError"):
        opcheck(module.cube, samples)                  # no batching rule yet
    from lucid.func import register_vmap_rule
    cube = register_vmap_rule(module.cube, lambda info, in_dims, t: (cube(t), in_dims[0]))
    report = opcheck(cube, samples)                    # with its rule (the page's section 6b)
    assert report.status("forward_ad") == "skipped"
    assert all(report.status(c) == "passed" for c in ("gradcheck", "gradgradcheck", "vmap",
                                                      "float32_matches_float64",
                                                      "inplace_change_of_saved_input"))


# -- the module is the caller's: sys.modules is left alone ---------------------------------------

TRIPLE = "def triple(x):\n    return x * 3\n"
QUADRUPLE = "def quadruple(x):\n    return x * 4\n"


def test_load_inline_leaves_sys_modules_alone_even_for_an_imported_name(cache, square_module):
    import json
    modules_before = dict(sys.modules)
    ext = cpp_extension.load_inline("json", TRIPLE, build_directory=cache)
    assert ext.triple(2) == 6 and ext.__name__ == "json" and ext is not json
    assert sys.modules["json"] is json and json.dumps([1]) == "[1]"
    import json as again                                   # import still gives the stdlib one
    assert again is json
    assert {k: v for k, v in sys.modules.items() if k in modules_before} == modules_before
    assert "lucid_test_square" not in sys.modules          # the fixture's build, too
    assert square_module.square(lucid.tensor([2.0])).tolist() == [4.0]


def test_the_same_name_loads_twice_with_the_same_and_with_other_source(cache):
    import json
    first = cpp_extension.load_inline("json", TRIPLE, build_directory=cache)
    built = cpp_extension.stats["built"]
    assert cpp_extension.load_inline("json", TRIPLE, build_directory=cache) is first
    other = cpp_extension.load_inline("json", QUADRUPLE, build_directory=cache)
    assert cpp_extension.stats["built"] == built + 1
    assert other is not first and other.quadruple(2) == 8 and first.triple(2) == 6
    assert not hasattr(other, "triple")
    assert sys.modules["json"] is json


# -- an extension cache that can't be written --------------------------------------------------

def assert_cache_error(error, folder, setting):
    message = str(error)
    assert isinstance(error, OSError) and isinstance(error, cpp_extension.ExtensionCacheError)
    assert str(folder) in message and setting in message
    assert "LUCID_EXTENSIONS_DIR" in message and "build_directory=" in message
    assert isinstance(error.__cause__, OSError)             # chained from what failed
    assert ".ro_op-" not in message                        # no internal temporary path


def test_an_unwritable_cache_from_the_environment_names_it_and_the_ways_out(monkeypatch):
    monkeypatch.setenv("LUCID_EXTENSIONS_DIR", "/proc/lucid_extension_cache")
    built = cpp_extension.stats["built"]
    with pytest.raises(cpp_extension.ExtensionCacheError) as info:
        cpp_extension.load_inline("ro_op", "def f():\n    return 1\n")
    assert_cache_error(info.value, "/proc/lucid_extension_cache", "LUCID_EXTENSIONS_DIR is")
    assert cpp_extension.stats["built"] == built


def test_an_unwritable_build_directory_names_it(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    target = blocker / "cache"
    with pytest.raises(cpp_extension.ExtensionCacheError) as info:
        cpp_extension.load_inline("ro_op", "def f():\n    return 1\n", build_directory=target)
    assert_cache_error(info.value, target, "build_directory=")
    assert blocker.read_text() == "not a folder"


def test_the_cython_api_names_no_header_of_lucids_own():
    """A native op cimports lucid._core: _core.pxd and the _core_internal.pxi it includes are
    read from the installed package, which ships no C headers of lucid's kernels (a `cdef
    extern from "kernels/..."` there broke every native build outside the source tree)."""
    for name in ("_core.pxd", "_core_internal.pxi"):
        text = (ROOT / "lucid" / name).read_text()
        assert 'extern from "' not in text, f"lucid/{name} names a header file"
