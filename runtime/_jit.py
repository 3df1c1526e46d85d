"""The single Numba ``jit`` wrapper used by every kernel.

All kernels are compiled lazily in nopython mode with ``cache=True``. Set the environment
variable ``SIMRT_DISABLE_JIT=1`` (or Numba's own ``NUMBA_DISABLE_JIT=1``) to run kernels as
plain Python, e.g. for debugging or coverage.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["jit", "CompiledCall", "compiled_entry", "JIT_DISABLED"]

JIT_DISABLED = os.environ.get("SIMRT_DISABLE_JIT", "0") == "1"


def jit(function: F | None = None, *, inline: bool = False) -> Any:
    """Compile ``function`` with Numba (nopython, cached), unless JIT is disabled.

    Used bare (``@jit``) or with options (``@jit(inline=True)``).

    Args:
        function: a module-level kernel working on flat NumPy arrays.
        inline: inline the function into every kernel that calls it (Numba's
            ``inline="always"``), for a small hot function whose call would cost more than
            its body, or whose callers need its loops optimised with theirs.

    Returns:
        The compiled dispatcher, or ``function`` itself when JIT is disabled (a decorator
        when ``function`` is None).
    """
    if function is None:
        return lambda f: jit(f, inline=inline)
    if JIT_DISABLED:
        return function
    numba = _import_numba()
    options = {"inline": "always"} if inline else {}
    return numba.njit(cache=True, nogil=True, **options)(function)


def _import_numba() -> Any:
    """``import numba``, without the SciPy import Numba's BLAS probe would cost.

    The first kernel call (a compile, or a load from the cache) imports Numba's lowering
    modules; one of them, ``numba.np.arraymath``, probes for BLAS by importing
    ``scipy.linalg`` (0.15-0.2 s, a fifth of a warm start) to set a flag that only picks
    ``np.convolve``'s inner loop. SciPy is a dependency of simrt, so the probe's answer is
    known: the module is imported here with the probe answering "available" without the
    import, then the probe is put back (a kernel that really calls BLAS still imports SciPy
    when it is compiled).
    """
    import numba

    if "numba.np.arraymath" in sys.modules or importlib.util.find_spec("scipy") is None:
        return numba
    import numba.np.linalg as linalg

    probe = linalg.ensure_blas
    linalg.ensure_blas = _blas_available
    try:
        import numba.np.arraymath as arraymath
    except Exception:  # noqa: BLE001 - an unexpected Numba layout: its own import path
        return numba
    finally:
        linalg.ensure_blas = probe
    if getattr(arraymath, "ensure_blas", None) is _blas_available:
        arraymath.ensure_blas = probe
    return numba


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
