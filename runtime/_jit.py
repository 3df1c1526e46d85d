"""The single Numba ``jit`` wrapper used by every kernel.

All kernels are compiled lazily in nopython mode with ``cache=True``. Set the environment
variable ``SIMRT_DISABLE_JIT=1`` (or Numba's own ``NUMBA_DISABLE_JIT=1``) to run kernels as
plain Python, e.g. for debugging or coverage.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["jit", "JIT_DISABLED"]

JIT_DISABLED = os.environ.get("SIMRT_DISABLE_JIT", "0") == "1"


def jit(function: F) -> F:
    """Compile ``function`` with Numba (nopython, cached), unless JIT is disabled.

    Args:
        function: a module-level kernel working on flat NumPy arrays.

    Returns:
        The compiled dispatcher, or ``function`` itself when JIT is disabled.
    """
    if JIT_DISABLED:
        return function
    import numba

    return numba.njit(cache=True, nogil=True)(function)  # type: ignore[no-any-return]
