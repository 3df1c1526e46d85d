"""Kernels compiled when the package is built, planted into the Numba cache at a first run.

Compiling a run's kernels takes about 40 CPU-seconds of Numba work, which no parallelism
hides on a two-core machine. So the package build (``tools/build_backend``, the PEP 517
backend ``pip install`` calls) compiles the kernels of :mod:`runtime._compile.kernel_manifest` once
(:func:`runtime._compile.precompile.build_seeds`) and stores their cache entries in
``runtime/_compile/kernel_seeds/kernels.seed``.
A run whose Numba cache lacks a kernel (:mod:`runtime._compile.precompile`) copies the seed's entry
into the cache (:func:`plant`) instead of compiling it; from there Numba loads it as any
cache entry.

Nothing is trusted blindly. A seed is used only when

* the seed file's Numba version, Python version and kernel-source digest
  (:func:`runtime._compile.kernel_digest.kernel_sources_digest`) equal this process's, and
* an entry's Numba index key equals the key this process computes for the kernel: the
  argument types, the CPU (target triple, CPU name and features) and the hash of the
  kernel's bytecode.

So a wheel built for another CPU, an edited kernel source or another Numba release
compiles as without seeds. An entry that does not load is removed from the cache again
(the kernel then compiles when first called). ``SIMRT_SEEDS=0`` turns planting off;
``SIMRT_SEED_FILE`` names another seed file.

Seeds are planted in two places: :mod:`runtime._compile.precompile` plants a run's kernels before
it decides what to compile, and :mod:`runtime._compile.jit`'s cache loader plants any simrt kernel
on a cache miss (:func:`load_on_miss`): the kinematics API's kernels (``API_KERNELS`` of
the manifest) load from the install-time compile too.

The seed file is a pickle, as Numba's own cache files are: it is part of the installed
package and is trusted as its code is.
"""

from __future__ import annotations

import functools
import logging
import os
import pickle
import sys
from typing import Any

from runtime._compile import numba_compat as compat

__all__ = [
    "SEED_PATH",
    "dispatcher_of",
    "index_key",
    "load_on_miss",
    "numba_types",
    "plant",
    "seed_header",
]

_LOG = logging.getLogger(__name__)

SEED_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel_seeds", "kernels.seed")
_FORMAT = 1


def seed_header() -> dict[str, Any]:
    """What a seed file must have been built with to be used by this process."""
    import numba

    from runtime._compile.kernel_digest import kernel_sources_digest

    return {
        "format": _FORMAT,
        "numba": numba.__version__,
        "python": tuple(sys.version_info[:2]),
        "digest": kernel_sources_digest().hex(),
    }


@functools.lru_cache(maxsize=1)
def _read(path: str) -> dict[tuple[str, str], list[tuple[Any, bytes]]]:
    """The seed entries by (module, kernel); empty when the file is absent or does not fit."""
    try:
        with open(path, "rb") as handle:
            header = pickle.load(handle)
            if header != seed_header():
                _LOG.debug(
                    "kernel seeds not used: built for %s, this process is %s", header, seed_header()
                )
                return {}
            entries = pickle.load(handle)
        if not _well_formed(entries):
            raise ValueError("not a seed table")
    except FileNotFoundError:
        return {}
    except Exception as error:  # noqa: BLE001 - a damaged file: compile as without seeds
        _LOG.warning("kernel seeds %s unreadable (%s); kernels compile at first use", path, error)
        return {}
    return entries


def _well_formed(entries: Any) -> bool:
    """Whether ``entries`` is ``{(module, kernel): [(key, bytes), ...]}`` (the build's)."""
    return isinstance(entries, dict) and all(
        isinstance(name, tuple)
        and len(name) == 2
        and all(isinstance(part, str) for part in name)
        and isinstance(offered, list)
        and all(
            isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], bytes)
            for item in offered
        )
        for name, offered in entries.items()
    )


def dispatcher_of(module: str, name: str) -> Any:
    """The kernel ``name`` of ``module`` (its Numba dispatcher)."""
    import importlib

    return getattr(importlib.import_module(module), name)


def numba_types(signature: tuple[str, ...]) -> tuple[Any, ...]:
    """Numba types from the manifest's type expressions."""
    from numba.core import types

    return tuple(eval(text, {}, dict(vars(types))) for text in signature)  # noqa: S307


def index_key(dispatcher: Any, signature: tuple[str, ...]) -> Any:
    """The Numba cache index key of ``dispatcher`` compiled for ``signature`` here."""
    return compat.entry_key(
        compat.cache_of(dispatcher), numba_types(signature), dispatcher.targetctx
    )


def plant(entries: list[tuple[str, str, float, tuple[str, ...], str]]) -> int:
    """Copy the seeds of manifest ``entries`` that the Numba cache lacks into the cache.

    Args:
        entries: rows of :func:`runtime._compile.precompile._entries` (module, kernel, seconds,
            signature, phase).

    Returns:
        How many kernels were planted and loaded.
    """
    if not _enabled() or not entries:
        return 0
    seeds = _read(_seed_file())
    if not seeds:
        return 0
    planted = 0
    for module, name, _, signature, _ in entries:
        if (module, name) not in seeds:
            continue
        try:
            dispatcher = dispatcher_of(module, name)
            key = index_key(dispatcher, signature)
            if not _plant(compat.cache_of(dispatcher), (module, name), key):
                continue
        except Exception as error:  # noqa: BLE001 - other Numba internals: compile instead
            _LOG.debug("seed %s.%s not planted: %s", module, name, error)
            continue
        if _load(dispatcher, signature):
            planted += 1
        else:  # it did not load: out of the cache again, compiled when first called
            _drop(compat.cache_of(dispatcher), key)
    if planted:
        _LOG.info("%d kernels loaded from the install-time compile", planted)
    return planted


def _enabled() -> bool:
    return (
        os.environ.get("SIMRT_SEEDS", "1") != "0"
        and os.environ.get("SIMRT_DISABLE_JIT", "0") != "1"
        and os.path.exists(_seed_file())
    )


def _seed_file() -> str:
    """The seed file: the package's, or ``SIMRT_SEED_FILE`` (tests, other builds)."""
    return os.environ.get("SIMRT_SEED_FILE") or SEED_PATH


def load_on_miss(cache: Any, signature: Any, target_context: Any) -> Any:
    """A kernel the Numba cache lacks, from the seeds: planted, then loaded (else None).

    Called by :mod:`runtime._compile.jit`'s cache loader on a miss, for any simrt kernel: the
    kinematics API's kernels (``API_KERNELS``) and those a run calls outside the
    precompile's list load from the install-time compile too.
    """
    function = compat.cache_function(cache)
    if function is None or not _enabled():
        return None
    name = (function.__module__, function.__qualname__)
    try:
        if name not in _read(_seed_file()):
            return None
        key = compat.entry_key(cache, signature, target_context)
        if not _plant(cache, name, key):
            return None
    except Exception as error:  # noqa: BLE001 - other Numba internals, an unwritable cache
        _LOG.debug("seed of %s not planted: %s", function.__qualname__, error)
        return None
    try:
        return compat.load_cache_entry(cache, signature, target_context)
    except Exception as error:  # noqa: BLE001 - a damaged entry: dropped, compiled instead
        _LOG.warning("a seeded kernel did not load (%s); it compiles now", error)
        _drop(cache, key)
        return None


def _plant(cache: Any, name: tuple[str, str], key: Any) -> bool:
    """Write the seed of kernel ``name`` whose index key is ``key`` into its Numba cache.

    False when the seeds hold no such entry or the cache already has the key.
    """
    offered = _read(_seed_file()).get(name, ())
    raw = next((data for seed_key, data in offered if seed_key == key), None)
    return raw is not None and compat.add_cache_entry(cache, key, raw)


def _drop(cache: Any, key: Any) -> None:
    try:
        compat.drop_cache_entry(cache, key)
    except Exception as error:  # noqa: BLE001
        _LOG.debug("seed entry not removed: %s", error)


def _load(dispatcher: Any, signature: tuple[str, ...]) -> bool:
    """Load a planted entry (``compile`` finds it in the cache); False if it did not load."""
    types = numba_types(signature)
    try:
        dispatcher.compile(types)
    except Exception as error:  # noqa: BLE001 - a damaged entry: dropped, compiled later
        _LOG.warning("a seeded kernel did not load (%s); it compiles when first called", error)
        return False
    return tuple(types) in dispatcher.overloads  # (public: the compiled signatures)
