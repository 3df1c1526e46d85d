"""The single Numba ``jit`` wrapper used by every kernel.

All kernels are compiled lazily in nopython mode with ``cache=True``. Set the environment
variable ``SIMRT_DISABLE_JIT=1`` (or Numba's own ``NUMBA_DISABLE_JIT=1``) to run kernels as
plain Python, e.g. for debugging or coverage.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from runtime._kernel_digest import PACKAGE_DIR as _PACKAGE_DIR
from runtime._kernel_digest import kernel_sources_digest

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["jit", "CompiledCall", "compiled_entry", "JIT_DISABLED", "kernel_sources_digest"]

JIT_DISABLED = os.environ.get("SIMRT_DISABLE_JIT", "0") == "1"
_LOG = logging.getLogger(__name__)


def jit(function: F | None = None, *, inline: bool = False, nrt: bool = True) -> Any:
    """Compile ``function`` with Numba (nopython, cached), unless JIT is disabled.

    Used bare (``@jit``) or with options (``@jit(inline=True)``).

    Args:
        function: a module-level kernel working on flat NumPy arrays.
        inline: inline the function into every kernel that calls it (Numba's
            ``inline="always"``), for a small hot function whose call would cost more than
            its body, or whose callers need its loops optimised with theirs.
        nrt: compile with Numba's reference-counted runtime (the default). A per-step
            kernel that never allocates an array and returns none says False: every array
            view it takes then costs nothing, where the runtime's reference counting costs
            two calls per view (measured: half of a four-ray raycast step). Numba then
            refuses, when compiling, any allocation or returned view; helpers returning
            views into its arrays are ``inline=True``.

    Returns:
        The compiled dispatcher, or ``function`` itself when JIT is disabled (a decorator
        when ``function`` is None).
    """
    if function is None:
        return lambda f: jit(f, inline=inline, nrt=nrt)
    if JIT_DISABLED:
        return function
    numba = _import_numba()
    options: dict[str, Any] = {"inline": "always"} if inline else {}
    if not nrt:
        options["_nrt"] = False
    return numba.njit(cache=True, nogil=True, **options)(function)


def _import_numba() -> Any:
    """``import numba``, set up for fast warm starts (see the two helpers it calls).

    * Cached kernels load without Numba's compiler registries
      (:func:`_load_caches_without_refresh`).
    * Numba's BLAS probe is answered without importing SciPy's linalg
      (:class:`_BlasProbeAnswer`): the first compile imports Numba's lowering modules; one
      of them, ``numba.np.arraymath``, probes for BLAS by importing ``scipy.linalg``
      (0.15-0.2 s) to set a flag that only picks ``np.convolve``'s inner loop. SciPy is a
      dependency of simrt, so the answer is known: when (if ever) that module is imported,
      the probe answers "available" without the import and is put back right after (a
      kernel that really calls BLAS still imports SciPy when it is compiled).
    """
    import numba

    _stamp_caches_with_kernel_sources()
    _load_caches_without_refresh()
    _save_caches_best_effort()
    if "numba.np.arraymath" not in sys.modules and importlib.util.find_spec("scipy"):
        if not any(isinstance(finder, _BlasProbeAnswer) for finder in sys.meta_path):
            sys.meta_path.insert(0, _BlasProbeAnswer())
    return numba


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


def _stamp_caches_with_kernel_sources() -> None:
    """A simrt kernel's cached machine code is reused only if no kernel source changed.

    Numba stamps a cache entry with its own source file's hash. A kernel also bakes in
    constants and functions imported from other kernel modules (``NODE_WIDTH`` from
    ``_simd.py``, helpers from ``_bvh_kernels.py``): after an update that changes only
    those (a ``git pull`` into an editable install), the stale entry would be loaded and
    could crash the process. The stamp of every kernel file inside this package also covers
    :func:`kernel_sources_digest`, so any such change recompiles them all. Other packages'
    caches keep Numba's stamp.
    """
    try:
        from numba.core import caching
    except ImportError:  # pragma: no cover - a Numba without this module
        return

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def get_source_stamp(self: Any) -> Any:
            stamp = original(self)
            path = getattr(self, "_py_file", "")
            if path and os.path.abspath(path).startswith(_PACKAGE_DIR + os.sep):
                return (stamp, kernel_sources_digest())
            return stamp

        return get_source_stamp

    _replace_once(getattr(caching, "_SourceFileBackedLocatorMixin", None), "get_source_stamp", make)


def _load_caches_without_refresh() -> None:
    """Cached kernels load without importing Numba's compiler registries (a warm start).

    Before loading a kernel from its cache, Numba refreshes the target context: it imports
    every lowering and typing module (``numba.np.arraymath``, ``numba.typed``, ...) and
    installs their registries, 0.3 s of a 1.2 s warm run, which only compiling needs.
    Loading needs Numba's runtime (NRT: the allocation functions the machine code calls),
    which the refresh also initialises. This replaces ``Cache.load_overload`` once per
    process with the same load that initialises the runtime and skips the registries; a
    cache miss then compiles as before, and Numba's compiler refreshes the context itself
    (``CompilerBase`` does, whatever the cache did). Any other Numba layout keeps its own
    loader.
    """
    try:
        from numba.core import caching
        from numba.core.runtime import nrt
    except ImportError:  # pragma: no cover - a Numba without these modules
        return
    cache = getattr(caching, "Cache", None)
    runtime = getattr(nrt, "rtsys", None)
    needed = ("_load_overload", "_guard_against_spurious_io_errors")
    if not all(hasattr(cache, name) for name in needed):
        return
    if runtime is None or not callable(getattr(runtime, "initialize", None)):
        return

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def load_overload(self: Any, sig: Any, target_context: Any) -> Any:
            runtime.initialize(target_context)  # (idempotent; what the loaded code calls)
            with self._guard_against_spurious_io_errors():
                loaded = self._load_overload(sig, target_context)
                if loaded is None and _is_simrt_kernel(self):
                    from runtime import _seeds  # (a miss: the install-time compile's entry)

                    loaded = _seeds.load_on_miss(self, sig, target_context)
                return loaded
            return None  # an I/O error the guard swallowed: compile

        return load_overload

    _replace_once(cache, "load_overload", make)


def _save_caches_best_effort() -> None:
    """A kernel whose cache entry cannot be written still runs (full disk, size limit).

    Numba writes a kernel's cache entry right after compiling it and lets an ``OSError``
    through: a full disk, a file-size limit or a cache folder gone read-only would end the
    run with a traceback although the compiled kernel is in memory. The entry is skipped
    instead (Numba removes its half-written temporary file), with one warning per process;
    the next run compiles the kernel again.
    """
    try:
        from numba.core import caching
    except ImportError:  # pragma: no cover - a Numba without this module
        return
    warned: list[bool] = []

    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def save_overload(self: Any, sig: Any, data: Any) -> None:
            try:
                original(self, sig, data)
            except OSError as error:
                if not warned:
                    warned.append(True)
                    name = getattr(getattr(self, "_py_func", None), "__qualname__", "?")
                    _LOG.warning(
                        "Numba kernel cache not written (%s: %s): %s, and any other kernel "
                        "whose cache entry cannot be written, compiles again in the next run",
                        type(error).__name__, error.strerror or error, name,
                    )  # fmt: skip

        return save_overload

    _replace_once(getattr(caching, "Cache", None), "save_overload", make)


def _is_simrt_kernel(cache: Any) -> bool:
    code = getattr(getattr(cache, "_py_func", None), "__code__", None)
    path = getattr(code, "co_filename", "") or ""
    return os.path.abspath(path).startswith(_PACKAGE_DIR + os.sep)


def _replace_once(
    owner: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]
) -> None:
    """Replace ``owner.name`` by ``make(original)``, once per process (absent: nothing)."""
    original = getattr(owner, name, None) if owner is not None else None
    if original is None or getattr(original, "_simrt_replaced", False):
        return
    replacement = make(original)
    replacement._simrt_replaced = True  # type: ignore[attr-defined]
    replacement.__doc__ = original.__doc__
    setattr(owner, name, replacement)


def _blas_available() -> None:
    """Numba's ``ensure_blas`` for a machine with SciPy (see :func:`_import_numba`)."""


def compiled_entry(kernel: Any, args: tuple) -> Callable[..., Any] | None:
    """The compiled entry point of ``kernel`` for the types of ``args``, if compiled.

    Calling it skips Numba's per-call type resolution (about 0.03 us per argument), but it
    converts arguments without checking array layouts or dimensions: call it only with
    arguments of exactly the types of ``args`` (same dtypes, dimensions, C-contiguity).

    Args:
        kernel: a dispatcher from :func:`jit`, already called with arguments like ``args``.
        args: example arguments.

    Returns:
        The entry point, or None (JIT disabled, no such compiled signature, or a Numba
        version without these internals).
    """
    if JIT_DISABLED:
        return None
    try:
        signature = tuple(kernel.typeof_pyval(a) for a in args)
        compiled = kernel.overloads.get(signature)
    except Exception:  # noqa: BLE001 - any Numba internals mismatch: use the dispatcher
        return None
    return getattr(compiled, "entry_point", None)


class CompiledCall:
    """A kernel and, once recorded, its compiled entry point for one set of argument types.

    Hot call sites pick the callable themselves, so the fast path adds no Python frame::

        if verified:                      # the caller vouches for the argument types
            (call.entry or call.record)(*args)
        else:
            call.kernel(*args)

    ``verified`` must mean that every such call passes arguments of the types of the
    recorded call (e.g. states whose ``PhysicsState.verified`` guarantees dtypes, dimensions
    and C-contiguity): the entry point converts arguments without checking them.

    Args:
        kernel: a dispatcher from :func:`jit` (or a plain function when JIT is disabled).
    """

    __slots__ = ("kernel", "entry")

    def __init__(self, kernel: Callable[..., Any]) -> None:
        self.kernel = kernel
        self.entry: Callable[..., Any] | None = None

    def record(self, *args: Any) -> Any:
        """``kernel(*args)`` through the dispatcher, then keep the entry for these types."""
        result = self.kernel(*args)
        self.entry = compiled_entry(self.kernel, args)
        return result
