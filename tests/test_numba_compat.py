"""Numba's private surface (runtime._compile.numba_compat): one test per internal simrt relies on.

Each test fails, naming the internal, when a Numba release changes it: the option or class
or function is gone, or it no longer does what simrt assumes. The kernels compiled here
are the tests' own (a module written to a temporary folder, with its own Numba cache).
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import numpy as np
import pytest

from runtime._compile import numba_compat as compat
from runtime._compile.jit import JIT_DISABLED

pytestmark = pytest.mark.skipif(JIT_DISABLED, reason="Numba internals are not used without JIT")

TOY = """
import numba
import numpy as np


@numba.njit(cache=True)
def add(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] + b[i]


@numba.njit(cache=True)
def total(a):
    return a.sum()
"""


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """A module of cached kernels in a temporary folder (its cache beside it)."""
    name = f"simrt_toy_kernels_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(name)
    yield module
    sys.modules.pop(name, None)


def _compiled_add(toy):
    a = np.arange(4.0)
    out = np.zeros(4)
    toy.add(a, a, out)
    return a, out


def test_no_runtime_option_is_honoured():
    """``_nrt=False``: accepted by njit, and an allocation is refused when compiling."""
    options = compat.no_runtime_options()
    assert options == {"_nrt": False}

    def allocates(n):
        return np.zeros(n)

    def views(a, out):
        view = a[1:3]
        for i in range(view.shape[0]):
            out[i] = view[i]

    no_rt = numba.njit(**options)
    a, out = np.arange(4.0), np.zeros(2)
    no_rt(views)(a, out)  # a view costs nothing without the runtime
    assert out.tolist() == [1.0, 2.0]
    with pytest.raises(Exception, match="(?i)nrt|runtime|allocat"):
        no_rt(allocates)(3)  # Numba refuses the allocation: the option took effect
    assert numba.njit(allocates)(3).tolist() == [0.0, 0.0, 0.0]


def test_source_stamp_patch():
    """``numba.core.caching._SourceFileBackedLocatorMixin.get_source_stamp``."""
    from numba.core import caching

    mixin = caching._SourceFileBackedLocatorMixin
    assert callable(mixin.get_source_stamp)
    import runtime._compile.jit  # noqa: F401  (kernels' import patches it)
    from runtime._compile import jit as _jit
    from runtime._compile.kernel_digest import kernel_sources_digest

    _jit._import_numba()
    assert getattr(mixin.get_source_stamp, "_simrt_replaced", False)
    assert compat.patch_source_stamp(lambda path: None)  # already replaced: kept
    from runtime.kinematics import _kernels

    kernel = next(v for v in vars(_kernels).values() if hasattr(v, "_cache"))
    stamp = compat.cache_of(kernel)._impl.locator.get_source_stamp()
    assert isinstance(stamp, tuple) and stamp[1] == kernel_sources_digest(), stamp


def test_cache_loader_patch(toy):
    """``Cache.load_overload`` / ``_load_overload`` / ``_guard_against_spurious_io_errors``
    and ``numba.core.runtime.nrt.rtsys.initialize``: a cached kernel loads through the
    replacement, a miss goes to ``on_miss``."""
    from numba.core import caching
    from numba.core.runtime import nrt

    for name in ("load_overload", "_load_overload", "_guard_against_spurious_io_errors"):
        assert callable(getattr(caching.Cache, name, None)), f"Cache.{name} gone"
    assert callable(nrt.rtsys.initialize)
    from runtime._compile import jit as _jit

    _jit._import_numba()
    assert getattr(caching.Cache.load_overload, "_simrt_replaced", False)
    a, out = _compiled_add(toy)
    cache = compat.cache_of(toy.add)
    signature = toy.add.nopython_signatures[0].args
    loaded = cache.load_overload(signature, toy.add.targetctx)
    assert loaded is not None  # from the cache file the first call wrote
    assert compat.load_cache_entry(cache, signature, toy.add.targetctx) is not None
    other = numba.typeof(np.zeros(2, np.float32))
    assert cache.load_overload((other, other, other), toy.add.targetctx) is None


def test_cache_saver_patch(toy):
    """``Cache.save_overload``: an OSError while saving reaches ``on_error``."""
    from numba.core import caching

    from runtime._compile import jit as _jit

    _jit._import_numba()
    saver = caching.Cache.save_overload
    assert getattr(saver, "_simrt_replaced", False)
    cache = compat.cache_of(toy.total)
    original = cache._save_overload

    def full(*_args):
        raise OSError(28, "No space left on device")

    cache._save_overload = full
    try:
        # the replacement swallows the error (logged once by runtime._compile.jit)
        cache.save_overload(toy.total.nopython_signatures or (numba.float64[::1],), object())
    finally:
        cache._save_overload = original


def test_cache_files(toy):
    """``Cache._index_key``, ``_cache_file`` (``_load_index``, ``_save_index``,
    ``_data_name``, ``_data_path``, ``_open_for_write``), ``_impl.locator``, ``_py_func``:
    the key of a compiled entry is in the index, its bytes can be read, written under
    another key and dropped again."""
    _compiled_add(toy)
    cache = compat.cache_of(toy.add)
    assert compat.cache_function(cache) is toy.add.py_func
    signature = toy.add.nopython_signatures[0]
    key = compat.entry_key(cache, signature.args, toy.add.targetctx)
    index = compat.cache_index(cache)
    assert key in index, "the entry key computed here is not the one Numba stored"
    raw = compat.cache_entry_bytes(cache, key)
    assert isinstance(raw, bytes) and raw
    other = (key[0], ("another", "cpu"), key[2])
    assert compat.add_cache_entry(cache, other, raw)
    assert not compat.add_cache_entry(cache, other, raw)  # has it already
    assert compat.cache_entry_bytes(cache, other) == raw
    assert compat.drop_cache_entry(cache, other)
    assert not compat.drop_cache_entry(cache, other)
    assert other not in compat.cache_index(cache) and key in compat.cache_index(cache)


def test_blas_probe_answer():
    """``numba.np.linalg.ensure_blas`` and ``numba.np.arraymath``'s use of it."""
    code = textwrap.dedent(
        """
        import sys
        from runtime._compile import numba_compat as compat
        assert compat.answer_blas_probe()
        import numba.np.arraymath as am, numba.np.linalg as la
        assert "scipy.linalg" not in sys.modules, "arraymath imported scipy.linalg"
        assert am._HAVE_BLAS is True
        assert am.ensure_blas is la.ensure_blas, "the probe was not put back"
        assert not compat.answer_blas_probe()  # imported already: nothing to answer
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_compiled_overload_and_native_address():
    """``Dispatcher.typeof_pyval``, ``overloads``, ``entry_point``, ``library``,
    ``fndesc.llvm_func_name``: the compiled code of a call, callable at its entry point and
    at its native address (Numba's native calling convention, as runtime/_compile/_native.c calls
    it)."""
    import ctypes

    @numba.njit
    def scale(a, out):
        for i in range(a.shape[0]):
            out[i] = 2.0 * a[i]

    a, out = np.arange(3.0), np.zeros(3)
    assert compat.compiled_overload(scale, (a, out)) is None  # not compiled yet
    compiled = compat.compiled_overload(scale, (a, out), compile=True)
    assert compiled is not None and compiled.signature.args[0] == numba.typeof(a)
    compiled.entry_point(a, out)
    assert out.tolist() == [0.0, 2.0, 4.0]
    address = compat.native_address(compiled)
    assert address > 0
    # int32 f(void **retptr, void **excinfo, 5 + 2 words per 1-D array)
    words = [ctypes.c_int64] * 14
    entry = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, *words)(address)
    result, excinfo = ctypes.c_void_p(), ctypes.c_void_p()
    b, into = np.array([1.5, -1.0, 4.0]), np.zeros(3)

    def flat(array):
        return [0, 0, array.size, array.itemsize, array.ctypes.data, array.shape[0], 8]

    status = entry(ctypes.byref(result), ctypes.byref(excinfo), *flat(b), *flat(into))
    assert status == 0
    assert into.tolist() == [3.0, -2.0, 8.0]


def test_build_array_in_an_intrinsic():
    """``numba.np.arrayobj.make_array`` / ``populate_array``: an array over another array's
    raw data pointer (no meminfo), taken by a kernel compiled without the runtime."""
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def as_rows(typingctx, flat, rows):
        """``flat`` (n,) float64 seen as (rows, n // rows), over the same memory."""
        array_type = types.Array(types.float64, 2, "C")

        def codegen(context, builder, sig, args):
            intp = context.get_value_type(types.intp)
            source = context.make_array(sig.args[0])(context, builder, args[0])
            n = builder.extract_value(source.shape, 0)
            r = context.cast(builder, args[1], sig.args[1], types.intp)
            columns = builder.sdiv(n, r)
            strides = [builder.mul(columns, intp(8)), intp(8)]
            return compat.build_array(
                context, builder, array_type, source.data, [r, columns], strides, intp(8)
            )

        return array_type(flat, rows), codegen

    @numba.njit(**compat.no_runtime_options())
    def row_sums(flat, rows, out):
        table = as_rows(flat, rows)
        for i in range(table.shape[0]):
            total = 0.0
            for j in range(table.shape[1]):
                total += table[i, j]
            out[i] = total
        table[0, 0] = -1.0  # writes through to ``flat``

    flat = np.arange(6.0)
    out = np.zeros(2)
    row_sums(flat, 2, out)
    assert out.tolist() == [3.0, 12.0]
    assert flat[0] == -1.0


def test_no_private_name_outside_the_compat_module():
    """The acceptance grep: Numba's private names appear only in the compat module.

    That is runtime/_compile/numba_compat.py.
    """
    root = Path(__file__).resolve().parent.parent / "runtime"
    names = ("numba.core.caching", "_nrt", "populate_array", "ensure_blas", "_index_key")
    names += ("_cache_file", "get_pointer_to_function", "fndesc", "_load_overload")
    found = [
        f"{path.relative_to(root.parent)}: {name}"
        for path in sorted(root.rglob("*.py"))
        if path.relative_to(root) != Path("_compile", "numba_compat.py")
        for name in names
        if name in path.read_text(encoding="utf-8")
    ]
    assert not found, found
