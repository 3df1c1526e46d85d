"""The single Numba ``jit`` wrapper used by every kernel.

All kernels are compiled lazily in nopython mode with ``cache=True``. Set the environment
variable ``SIMRT_DISABLE_JIT=1`` (or Numba's own ``NUMBA_DISABLE_JIT=1``) to run kernels as
plain Python, e.g. for debugging or coverage.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Callable
from typing import Any, TypeVar

from runtime._compile import numba_compat as compat
from runtime._compile.kernel_digest import PACKAGE_DIR as _PACKAGE_DIR
from runtime._compile.kernel_digest import kernel_sources_digest

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
        options.update(compat.no_runtime_options())
    return numba.njit(cache=True, nogil=True, **options)(function)


def _import_numba() -> Any:
    """``import numba``, set up for fast warm starts and safe cache entries.

    Through :mod:`runtime._compile.numba_compat` (Numba's private surface):

    * every kernel file's cache stamp covers :func:`kernel_sources_digest`
      (:func:`_stamp_caches_with_kernel_sources`);
    * cached kernels load without Numba's compiler registries, and a simrt kernel the cache
      lacks is first looked up in the install-time seeds
      (:func:`runtime._compile.seeds.load_on_miss`);
    * a cache entry that cannot be written is skipped with one warning
      (:func:`_save_caches_best_effort`);
    * Numba's BLAS probe is answered without importing SciPy's linalg (SciPy is a
      dependency of simrt, so the answer is known).
    """
    import numba

    _stamp_caches_with_kernel_sources()
    compat.patch_cache_loader(_load_seed_on_miss)
    _save_caches_best_effort()
    if importlib.util.find_spec("scipy"):
        compat.answer_blas_probe()
    return numba


def _stamp_caches_with_kernel_sources() -> None:
    """A simrt kernel's cached machine code is reused only if no kernel source changed.

    Numba stamps a cache entry with its own source file's hash. A kernel also bakes in
    constants and functions imported from other kernel modules (``NODE_WIDTH`` from
    ``_simd.py``, helpers from ``rays/_traversal_kernels.py``): after an update that changes only
    those (a ``git pull`` into an editable install), the stale entry would be loaded and
    could crash the process. The stamp of every kernel file inside this package also covers
    :func:`kernel_sources_digest`, so any such change recompiles them all. Other packages'
    caches keep Numba's stamp.
    """
    compat.patch_source_stamp(lambda path: kernel_sources_digest() if _in_package(path) else None)


def _load_seed_on_miss(cache: Any, signature: Any, target_context: Any) -> Any:
    """A simrt kernel the cache lacks: its install-time seed, if any (else None: compile)."""
    function = compat.cache_function(cache)
    code = getattr(function, "__code__", None)
    if not _in_package(getattr(code, "co_filename", "") or ""):
        return None
    from runtime._compile import seeds as _seeds

    return _seeds.load_on_miss(cache, signature, target_context)


def _save_caches_best_effort() -> None:
    """A kernel whose cache entry cannot be written still runs (full disk, size limit).

    Numba writes a kernel's cache entry right after compiling it and lets an ``OSError``
    through: a full disk, a file-size limit or a cache folder gone read-only would end the
    run with a traceback although the compiled kernel is in memory. The entry is skipped
    instead (Numba removes its half-written temporary file), with one warning per process;
    the next run compiles the kernel again.
    """
    warned: list[bool] = []

    def on_error(function: Any, error: OSError) -> None:
        if not warned:
            warned.append(True)
            name = getattr(function, "__qualname__", "?")
            _LOG.warning(
                "Numba kernel cache not written (%s: %s): %s, and any other kernel "
                "whose cache entry cannot be written, compiles again in the next run",
                type(error).__name__, error.strerror or error, name,
            )  # fmt: skip

    compat.patch_cache_saver(on_error)


def _in_package(path: str) -> bool:
    return bool(path) and os.path.abspath(path).startswith(_PACKAGE_DIR + os.sep)


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
        compiled = compat.compiled_overload(kernel, args)
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
