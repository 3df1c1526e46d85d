"""Chunk buffer memory kept from one store writer for the next, whatever its layout.

A writer's chunk buffers are large (up to ``target_chunk_bytes`` per set, a few sets per
writer) and a new set must be touched page by page before the step loop writes into it: on
this kind of machine 6-130 ms for 27 MiB, as much as hundreds of steps. In a process that
records run after run (batch workers, a benchmark) runs differ in their chunk rows (a run's
chunks are sized from its expected rows) and in their channels, so sets are kept as raw
memory blocks: a closed writer hands its blocks back here, and the next writer carves its
buffers (64-byte aligned, C order) out of the smallest kept block that is large enough.
At most :data:`LIMIT` bytes are kept, the most recently returned first. A kept block holds
the last run's bytes until they are overwritten (every row of every channel is written
before a chunk is handed over; rows past a store's last row lie beyond its trimmed arrays).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["give", "nbytes", "take"]

LIMIT = 256 << 20  # bytes of blocks kept between writers
_ALIGN = 64  # every buffer starts on a cache line
_LOCK = threading.Lock()
_BLOCKS: list[np.ndarray] = []  # uint8 blocks, oldest first


def _specs(channels: Iterable[Any], rows: int) -> list[tuple[tuple[int, ...], np.dtype]]:
    specs = [((rows, *c.shape), np.dtype(c.dtype)) for c in channels]
    return [*specs, ((rows,), np.dtype(np.int64)), ((rows,), np.dtype(np.float64))]


def _offsets(specs: list[tuple[tuple[int, ...], np.dtype]]) -> tuple[list[int], int]:
    offsets, end = [], 0
    for shape, dtype in specs:
        offsets.append(end)
        size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        end += -(-size // _ALIGN) * _ALIGN
    return offsets, end


def nbytes(channels: Iterable[Any], rows: int) -> int:
    """Bytes of one buffer set for ``channels`` and ``rows`` rows (alignment included)."""
    return _offsets(_specs(channels, rows))[1] + _ALIGN


def take(
    channels: Iterable[Any], rows: int, poison: bool = False, waste: float | None = None
) -> list[np.ndarray]:
    """A buffer set for ``channels`` (``ChannelInfo``) and ``rows`` rows per chunk.

    One array per channel (``(rows, *shape)``), then the step (int64) and time (float64)
    arrays, carved from a kept block, else from a new one touched with zero bytes
    (``poison``: 0xFF bytes and never a kept block, so that a row left unwritten shows).
    ``waste``: a kept block at most this many times the set's size (a small set leaves the
    large blocks to the sets that need them).
    """
    specs = _specs(channels, rows)
    offsets, size = _offsets(specs)
    size += _ALIGN
    block = None
    largest = np.inf if waste is None else waste * size
    if not poison:
        with _LOCK:
            fitting = [k for k, kept in enumerate(_BLOCKS) if size <= kept.nbytes <= largest]
            if fitting:
                block = _BLOCKS.pop(min(fitting, key=lambda k: _BLOCKS[k].nbytes))
    if block is None:
        block = np.empty(size, np.uint8)
        block.fill(0xFF if poison else 0)  # touched now, not page by page by the step loop
    start = -block.ctypes.data % _ALIGN
    buffers = []
    for (shape, dtype), offset in zip(specs, offsets, strict=True):
        count = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if not count:  # an empty channel (no rays): numpy's own empty array and strides
            buffers.append(np.empty(shape, dtype))
            continue
        begin = start + offset
        buffers.append(block[begin : begin + count].view(dtype).reshape(shape))
    return buffers


def _block(buffers: list[np.ndarray]) -> np.ndarray | None:
    """The block a set was carved from (None: not one of ours)."""
    base = buffers[-1].base if buffers else None
    if isinstance(base, np.ndarray) and base.dtype == np.uint8 and base.base is None:
        return base
    return None


def give(sets: list[list[np.ndarray]]) -> None:
    """Keep the blocks of ``sets`` (a closed writer's buffer sets) for the next writers."""
    with _LOCK:
        for buffers in sets:
            block = _block(buffers)
            if block is None or any(kept is block for kept in _BLOCKS):
                continue
            _BLOCKS.append(block)
        total = sum(b.nbytes for b in _BLOCKS)
        while _BLOCKS and total > LIMIT:  # the oldest go first
            total -= _BLOCKS.pop(0).nbytes
