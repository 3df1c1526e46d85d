"""The digest of simrt's kernel sources: what a compiled kernel's validity depends on.

Kept apart from :mod:`runtime._compile.jit` (which stamps Numba's cache entries with it) so that
:mod:`runtime._compile.seeds` (which checks seeds against it) needs neither the other.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import os

__all__ = ["PACKAGE_DIR", "kernel_sources_digest"]

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""The ``runtime`` package's folder (this module is in ``runtime/_compile/``)."""


@functools.lru_cache(maxsize=1)
def kernel_sources_digest() -> bytes:
    """SHA-256 of the files that define kernels or intrinsics, in path order.

    Those are ``_*kernels.py``, ``rays/_simd.py``, ``_compile/jit.py`` (the compile options)
    and ``_compile/numba_compat.py`` (the no-runtime option, the array an intrinsic builds);
    the digest is part of each simrt kernel's Numba cache stamp
    (``runtime._compile.jit._stamp_caches_with_kernel_sources``).
    """
    digest = hashlib.sha256()
    paths = glob.glob(os.path.join(PACKAGE_DIR, "**", "_*kernels.py"), recursive=True)
    paths.append(os.path.join(PACKAGE_DIR, "rays", "_simd.py"))
    paths.append(os.path.join(PACKAGE_DIR, "_compile", "jit.py"))  # (the compile options)
    paths.append(os.path.join(PACKAGE_DIR, "_compile", "numba_compat.py"))  # (intrinsics)
    for path in sorted(paths):
        digest.update(os.path.relpath(path, PACKAGE_DIR).encode())
        try:
            with open(path, "rb") as source:
                digest.update(source.read())
        except OSError:  # (e.g. a package inside a zip file: its own stamps only)
            return b""
    return digest.digest()
