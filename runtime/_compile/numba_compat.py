"""Every use of Numba's private surface, in one module.

simrt relies on a few Numba internals that no public API offers. Each is named here and
nowhere else, and each has a test in ``tests/test_numba_compat.py`` that fails loudly when a
Numba release changes it (the range pyproject.toml allows is the one CI tests):

* **Compile option** ``_nrt=False`` (:func:`no_runtime_options`): a kernel compiled without
  Numba's reference-counted runtime.
* **Cache classes** of ``numba.core.caching``, patched once per process
  (:func:`patch_source_stamp`, :func:`patch_cache_loader`, :func:`patch_cache_saver`):
  the source stamp, the load of an entry, the save of an entry.
* **Cache files** (:func:`entry_key`, :func:`cache_index`, :func:`add_cache_entry`,
  :func:`drop_cache_entry`, :func:`cache_entry_bytes`, :func:`load_cache_entry`): a
  dispatcher's cache object, its index key (``_index_key``), its index file and data
  files, as the install-time seeds and the precompile read and write them.
* **BLAS probe** ``numba.np.linalg.ensure_blas`` (:func:`answer_blas_probe`): answered
  while ``numba.np.arraymath`` is first imported, so that import skips SciPy's linalg.
* **Compiled overloads** (:func:`compiled_overload`, :func:`native_address`): a
  dispatcher's compiled code for given arguments, its Python entry point and its native
  address (the address is called with Numba's native calling convention by
  ``runtime/_compile/_native.c`` and the fused step).
* **Array construction in an intrinsic** (:func:`build_array`):
  ``numba.np.arrayobj.populate_array``, an array over a raw pointer without the runtime.

Everything that returns a value here raises or returns None when the internal is missing;
the callers fall back to Numba's public behaviour (compile, dispatch) where they can.
This module is part of the kernels' cache stamp (:mod:`runtime._compile.kernel_digest`): the
compile option and :func:`build_array` shape the machine code.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from typing import Any

__all__ = [
    "add_cache_entry",
    "answer_blas_probe",
    "build_array",
    "cache_entry_bytes",
    "cache_function",
    "cache_index",
    "entry_key",
    "cache_of",
    "compiled_overload",
    "drop_cache_entry",
    "load_cache_entry",
    "native_address",
    "no_runtime_options",
    "patch_cache_loader",
    "patch_cache_saver",
    "patch_source_stamp",
]

# ---------------------------------------------------------------------------- compile option


def no_runtime_options() -> dict[str, Any]:
    """``njit`` options compiling a kernel without Numba's runtime (NRT).

    Numba then refuses, when compiling, any allocation or returned array; every array view
    the kernel takes costs nothing (no reference counting).
    """
    return {"_nrt": False}


# ---------------------------------------------------------------------------- cache classes


def _caching() -> Any:
    """``numba.core.caching``, or None for a Numba without it."""
    try:
        from numba.core import caching
    except ImportError:  # pragma: no cover - a Numba without this module
        return None
    return caching


def _replace_once(
    owner: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]
) -> bool:
    """Replace ``owner.name`` by ``make(original)``, once per process (absent: nothing).

    Returns:
        Whether ``owner.name`` is (now or already) the replacement.
    """
    original = getattr(owner, name, None) if owner is not None else None
    if original is None:
        return False
    if getattr(original, "_simrt_replaced", False):
        return True
    replacement = make(original)
    replacement._simrt_replaced = True  # type: ignore[attr-defined]
    replacement.__doc__ = original.__doc__
    setattr(owner, name, replacement)
    return True


def patch_source_stamp(stamp_of: Callable[[str], Any]) -> bool:
    """Extend the source stamp of cache entries: ``(Numba's stamp, stamp_of(path))``.

    Args:
        stamp_of: called with the kernel's source path; returns the extra part of the stamp,
            or None to keep Numba's stamp alone.

    Returns:
        Whether the stamp is extended (False: a Numba without the locator mixin).
    """
    caching = _caching()

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def get_source_stamp(self: Any) -> Any:
            stamp = original(self)
            extra = stamp_of(getattr(self, "_py_file", "") or "")
            return stamp if extra is None else (stamp, extra)

        return get_source_stamp

    owner = getattr(caching, "_SourceFileBackedLocatorMixin", None)
    return _replace_once(owner, "get_source_stamp", make)


def patch_cache_loader(on_miss: Callable[[Any, Any, Any], Any]) -> bool:
    """Load cache entries without Numba's compiler registries; ``on_miss`` fills a miss.

    Before loading a kernel from its cache, Numba refreshes the target context: it imports
    every lowering and typing module and installs their registries, which only compiling
    needs. Loading needs Numba's runtime (NRT: the allocation functions the machine code
    calls), which the refresh also initialises. ``Cache.load_overload`` is replaced once
    per process with the same load that initialises the runtime and skips the registries;
    a miss then compiles as before (Numba's compiler refreshes the context itself).

    Args:
        on_miss: ``on_miss(cache, signature, target_context)`` on a cache miss: the loaded
            overload or None (compile).

    Returns:
        Whether the loader is replaced (False: another Numba layout keeps its own).
    """
    caching = _caching()
    try:
        from numba.core.runtime import nrt
    except ImportError:  # pragma: no cover - a Numba without this module
        return False
    cache = getattr(caching, "Cache", None)
    runtime = getattr(nrt, "rtsys", None)
    needed = ("_load_overload", "_guard_against_spurious_io_errors")
    if not all(hasattr(cache, name) for name in needed):
        return False
    if runtime is None or not callable(getattr(runtime, "initialize", None)):
        return False

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def load_overload(self: Any, sig: Any, target_context: Any) -> Any:
            runtime.initialize(target_context)  # (idempotent; what the loaded code calls)
            with self._guard_against_spurious_io_errors():
                loaded = self._load_overload(sig, target_context)
                if loaded is None:
                    loaded = on_miss(self, sig, target_context)
                return loaded
            return None  # an I/O error the guard swallowed: compile

        return load_overload

    return _replace_once(cache, "load_overload", make)


def patch_cache_saver(on_error: Callable[[Any, OSError], None]) -> bool:
    """An ``OSError`` while saving a cache entry goes to ``on_error`` instead of the caller.

    Args:
        on_error: ``on_error(kernel function or None, error)``.

    Returns:
        Whether the saver is replaced.
    """
    caching = _caching()

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def save_overload(self: Any, sig: Any, data: Any) -> None:
            try:
                original(self, sig, data)
            except OSError as error:
                on_error(getattr(self, "_py_func", None), error)

        return save_overload

    return _replace_once(getattr(caching, "Cache", None), "save_overload", make)


# ---------------------------------------------------------------------------- cache files


def cache_of(dispatcher: Any) -> Any:
    """The cache object of a ``cache=True`` dispatcher (AttributeError without one)."""
    return dispatcher._cache


def cache_function(cache: Any) -> Any:
    """The Python function whose compiled code ``cache`` holds (None if unknown)."""
    return getattr(cache, "_py_func", None)


def entry_key(cache: Any, types: tuple[Any, ...], target_context: Any) -> Any:
    """The index key of the entry for argument ``types`` compiled here.

    It covers the argument types, the CPU (target triple, name and features) and the hash
    of the function's bytecode.
    """
    return cache._index_key(types, target_context.codegen())


def cache_index(cache: Any) -> dict[Any, str]:
    """The cache's index: entry key -> data file name (``{}`` when missing or stale)."""
    return cache._cache_file._load_index()


def add_cache_entry(cache: Any, key: Any, raw: bytes) -> bool:
    """Add one entry (its pickled bytes) to the cache under ``key``; False if it has it.

    Numba's own file layout and atomic writes: a new data file, then the index.
    """
    cache._impl.locator.ensure_cache_path()
    files = cache._cache_file
    overloads = files._load_index()
    if key in overloads:
        return False
    taken = set(overloads.values())
    name = next(n for n in map(files._data_name, itertools.count(1)) if n not in taken)
    with files._open_for_write(files._data_path(name)) as handle:
        handle.write(raw)
    overloads[key] = name
    files._save_index(overloads)
    return True


def drop_cache_entry(cache: Any, key: Any) -> bool:
    """Remove ``key`` from the cache's index (its data file stays, unreferenced)."""
    files = cache._cache_file
    overloads = files._load_index()
    if overloads.pop(key, None) is None:
        return False
    files._save_index(overloads)
    return True


def cache_entry_bytes(cache: Any, key: Any) -> bytes | None:
    """The stored bytes of the entry under ``key`` (None when the cache lacks it)."""
    files = cache._cache_file
    name = files._load_index().get(key)
    if name is None:
        return None
    with open(files._data_path(name), "rb") as data:
        return data.read()


def load_cache_entry(cache: Any, signature: Any, target_context: Any) -> Any:
    """Load the entry for ``signature`` from the cache as Numba does (None on a miss)."""
    return cache._load_overload(signature, target_context)


# ---------------------------------------------------------------------------- BLAS probe


def _blas_available() -> None:
    """Numba's ``ensure_blas`` for a machine with SciPy (see :func:`answer_blas_probe`)."""


class _BlasProbeAnswer:
    """A one-shot import hook: ``numba.np.arraymath`` imported with its BLAS probe answered.

    It finds the module's real spec and runs the module with ``numba.np.linalg.ensure_blas``
    answering "available"; then it puts the probe back (also the name arraymath imported)
    and removes itself. Any error, or any other module: the normal import path.
    """

    target = "numba.np.arraymath"

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != self.target:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)  # one shot (and no recursion below)
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(name, path)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: Any) -> None:
            import numba.np.linalg as linalg

            probe = linalg.ensure_blas
            linalg.ensure_blas = _blas_available
            try:
                run(module)
            finally:
                linalg.ensure_blas = probe
                if getattr(module, "ensure_blas", None) is _blas_available:
                    module.ensure_blas = probe

        loader.exec_module = exec_module  # (this spec's own loader instance)
        return spec


def answer_blas_probe() -> bool:
    """Answer Numba's BLAS probe "available" when ``numba.np.arraymath`` is first imported.

    The first compile imports Numba's lowering modules; ``numba.np.arraymath`` probes for
    BLAS by importing ``scipy.linalg`` (0.15-0.2 s) to set a flag that only picks
    ``np.convolve``'s inner loop. Call only where SciPy is installed (the answer is then
    known); a kernel that really calls BLAS still imports SciPy when it is compiled.

    Returns:
        Whether the hook is installed (False: the module is imported already).
    """
    if "numba.np.arraymath" in sys.modules:
        return False
    if not any(isinstance(finder, _BlasProbeAnswer) for finder in sys.meta_path):
        sys.meta_path.insert(0, _BlasProbeAnswer())
    return True


# ---------------------------------------------------------------------------- compiled code


def compiled_overload(dispatcher: Any, args: tuple, compile: bool = False) -> Any:
    """The dispatcher's compiled overload for the types of ``args`` (None if not compiled).

    Args:
        dispatcher: a Numba dispatcher.
        args: example arguments (their Numba types select the overload).
        compile: compile the overload when missing.

    Returns:
        The compiled overload (``entry_point``: its Python-callable entry, ``signature``:
        its Numba signature), or None.
    """
    signature = tuple(dispatcher.typeof_pyval(a) for a in args)
    compiled = dispatcher.overloads.get(signature)
    if compiled is None and compile:
        dispatcher.compile(signature)
        compiled = dispatcher.overloads.get(signature)
    return compiled


def native_address(compiled: Any) -> int:
    """The native address of a compiled overload's code (Numba's native calling convention).

    ``int32 status = f(void **retptr, void **excinfo, <flattened arguments>)``, an array
    argument of ndim d flattened into meminfo, parent, nitems, itemsize, data, shape[d],
    strides[d].
    """
    return int(compiled.library.get_pointer_to_function(compiled.fndesc.llvm_func_name))


# ---------------------------------------------------------------------------- intrinsics


def build_array(
    context: Any,
    builder: Any,
    array_type: Any,
    data: Any,
    shape: list[Any],
    strides: list[Any],
    itemsize: Any,
) -> Any:
    """Inside an intrinsic's codegen: an array value over ``data`` that owns nothing.

    No meminfo (the runtime's reference counting skips it), so kernels compiled without
    the runtime can take it.

    Args:
        context: the codegen's target context.
        builder: the codegen's IR builder.
        array_type: the Numba array type.
        data: the data pointer (IR value).
        shape: per dimension, an ``intp`` IR value.
        strides: per dimension, an ``intp`` IR value (bytes).
        itemsize: an ``intp`` IR value.

    Returns:
        The array's IR value.
    """
    from numba.np.arrayobj import make_array, populate_array

    array = make_array(array_type)(context, builder)
    populate_array(array, data=data, shape=shape, strides=strides, itemsize=itemsize, meminfo=None)
    return array._getvalue()
