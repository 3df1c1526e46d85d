"""Chunk buffer sets kept from one store writer for the next of the same layout.

A writer's chunk buffers are large (up to ``target_chunk_bytes`` per set, a few sets per
writer) and are touched page by page when first written: in a process that records run
after run (batch workers, a benchmark), that first touch costs as much as a short run's
steps. A closed writer hands its sets back here; the next writer with the same channels and
chunk rows takes them instead of allocating. Sets of one layout only are kept, at most
:data:`LIMIT` bytes; a pooled set holds the last run's rows until it is overwritten (every
row of every channel is written before a chunk is handed over).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["give", "take"]

LIMIT = 256 << 20  # bytes of buffer sets kept between writers
_LOCK = threading.Lock()
_POOL: dict[tuple, list[list[np.ndarray]]] = {}


def _key(channels: Iterable[Any], rows: int) -> tuple:
    return (rows, *((tuple(c.shape), str(np.dtype(c.dtype))) for c in channels))


def _make(channels: Iterable[Any], rows: int, poison: bool) -> list[np.ndarray]:
    buffers = [np.empty((rows, *c.shape), dtype=c.dtype) for c in channels]
    buffers += [np.empty(rows, np.int64), np.empty(rows, np.float64)]
    for buffer in buffers:  # touched now, not page by page by the step loop's writes
        buffer.view(np.uint8).fill(0xFF if poison else 0)
    return buffers


def take(channels: Iterable[Any], rows: int, poison: bool = False) -> list[np.ndarray]:
    """A buffer set for ``channels`` (``ChannelInfo``) and ``rows`` rows per chunk.

    A kept set of this layout, else a new one touched with zero bytes (``poison``: 0xFF
    bytes and never a kept set, so that a row left unwritten shows).
    """
    channels = list(channels)
    if not poison:
        with _LOCK:
            sets = _POOL.get(_key(channels, rows))
            if sets:
                return sets.pop()
    return _make(channels, rows, poison)


def give(channels: Iterable[Any], rows: int, sets: list[list[np.ndarray]]) -> None:
    """Keep ``sets`` (a closed writer's buffer sets) for the next writer of this layout."""
    key = _key(channels, rows)
    with _LOCK:
        kept = _POOL.pop(key, [])
        _POOL.clear()  # (one layout kept: the process's current scene)
        size = sum(b.nbytes for s in kept for b in s)
        seen = {id(s) for s in kept}
        for buffers in sets:
            nbytes = sum(b.nbytes for b in buffers)
            if id(buffers) in seen or size + nbytes > LIMIT:
                continue
            kept.append(buffers)
            seen.add(id(buffers))
            size += nbytes
        if kept:
            _POOL[key] = kept
