"""Chunk files of the store's arrays, encoded and written by the writer thread itself.

Each array of a store is a Zarr v3 array with a regular chunk grid, the default chunk-key
encoding (``c/<row chunk>/0/...``) and the codecs ``bytes`` (little endian) -> ``blosc``
(LZ4 or Zstd, byte shuffle, the dtype's size as typesize; left out at level 0) ->
``crc32c``. :class:`ChunkEncoder` produces exactly the bytes zarr-python's own codec
pipeline produces for that metadata (a test compares them), but with two calls that release
the GIL (Blosc compression in ``numcodecs``, and the file write) instead of zarr's asyncio
pipeline, which holds the GIL for most of a chunk write and so stalls the step loop
running beside the writer thread.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from runtime.errors import SimrtError
from runtime.recording import _disk
from runtime.recording._metadata import CHUNK_SEPARATOR, ArrayDocument
from runtime.recording.channels import ChannelInfo, array_key

__all__ = [
    "COMPRESSORS", "MAX_ROW_BYTES", "ChunkEncoder", "blosc_class", "chunk_rows", "compression",
    "create_array",
]  # fmt: skip

COMPRESSORS = {"lz4": 5, "zstd": 1}  # Blosc compressors and their default levels
MAX_ROW_BYTES = 1 << 28
"""Largest row (all channels, uncompressed) a store accepts: 256 MiB."""
_MAX_CHUNK_ROWS = 65536


def compression(compressor: str, level: int | None) -> tuple[str, int]:
    """``(compressor, level)`` checked, the compressor's default level for None.

    Raises:
        ValueError: an unknown compressor, or a level outside 0..9.
    """
    if compressor not in COMPRESSORS:
        known = sorted(COMPRESSORS)
        raise ValueError(f"compressor must be one of {known}, got {compressor!r}")
    checked = int(COMPRESSORS[compressor] if level is None else level)
    if not 0 <= checked <= 9:
        raise ValueError(f"compression_level must be 0..9, got {level}")
    return compressor, checked


def chunk_rows(
    path: Path,
    infos: Iterable[ChannelInfo],
    requested: int | None,
    target_bytes: int,
    expected_rows: int,
) -> int:
    """Rows per chunk of a store at ``path`` recording ``infos`` (plus step and time).

    ``requested`` rows, else about ``target_bytes`` of rows (at most 65,536); a run of
    ``expected_rows`` rows gets chunks of equal size (no mostly empty tail).

    Raises:
        SimrtError: one row would exceed :data:`MAX_ROW_BYTES` (the largest channel named).
    """
    infos = list(infos)

    def size(info: ChannelInfo) -> int:
        return int(np.prod(info.shape, dtype=np.int64)) * np.dtype(info.dtype).itemsize

    row_bytes = 16 + sum(size(info) for info in infos)
    if row_bytes > MAX_ROW_BYTES:
        largest = max(infos, key=size)
        raise SimrtError(
            f"{path}: one recorded step would take {row_bytes / 2**20:.0f} MiB "
            f"(limit {MAX_ROW_BYTES / 2**20:.0f} MiB); largest channel {largest.name!r} "
            f"with shape {largest.shape}"
        )
    rows = requested or min(_MAX_CHUNK_ROWS, max(1, target_bytes // row_bytes))
    if expected_rows:
        rows = min(rows, expected_rows)
        if requested is None:  # chunks of equal size: no mostly empty tail
            chunks = -(-expected_rows // max(1, rows))
            rows = -(-expected_rows // chunks)
    return max(1, rows)


def blosc_class() -> Any:
    """The ``Blosc`` codec of numcodecs, imported without numcodecs' entry-point scan.

    ``import numcodecs`` first lists the codecs that other installed distributions declare
    as entry points, which reads every distribution's metadata (``importlib.metadata``:
    35-50 ms of a warm run's start). The store writes and reads Blosc only, so the first
    import here sees no third-party entry points; numcodecs' own codecs are all there, and
    ``numcodecs.registry.run_entrypoints()`` lists the others for anyone who needs them.
    Once numcodecs is imported (by zarr, say) this is a plain import.
    """
    if "numcodecs" not in sys.modules:
        import importlib.metadata as metadata

        scan = metadata.entry_points
        metadata.entry_points = _no_entry_points  # type: ignore[assignment]
        try:
            import numcodecs.registry  # noqa: F401 - (its import-time scan)
        finally:
            metadata.entry_points = scan
    from numcodecs import Blosc

    return Blosc


def _no_entry_points(**_: Any) -> Any:
    from importlib.metadata import EntryPoints

    return EntryPoints(())


class ChunkEncoder:
    """Encodes and writes the chunks of one store array.

    Args:
        root: the store directory.
        key: the array's key inside the store (its folder).
        item_shape: the array's shape past the row axis.
        dtype: the array's dtype.
        level: Blosc compression level; 0 means no compression codec (the checksum stays).
        cname: Blosc's compressor (``"lz4"`` or ``"zstd"``).
    """

    TRIAL_BYTES = 64 << 10
    SAMPLE_BYTES = 256 << 10

    def __init__(
        self,
        root: Path,
        key: str,
        item_shape: tuple[int, ...],
        dtype: np.dtype,
        level: int,
        cname: str = "lz4",
    ) -> None:
        self.root = root
        self.key = key
        self._tail = f"{CHUNK_SEPARATOR}0" * len(item_shape)
        self._dtype = np.dtype(dtype)
        self._codec = None
        self._unshuffled = None  # (the first chunk decides between the two)
        self._ahead: int | None = None  # the chunk whose empty file prepare() made, unwritten
        self.document: ArrayDocument | None = None  # (renamed "noshuffle" when chosen)
        if level > 0:
            Blosc = blosc_class()  # noqa: N806 - the codec's class
            options = {"cname": cname, "clevel": level, "blocksize": 0}
            self._codec = Blosc(shuffle=Blosc.SHUFFLE, typesize=self._dtype.itemsize, **options)
            if self._dtype.itemsize > 1:
                self._unshuffled = Blosc(
                    shuffle=Blosc.NOSHUFFLE, typesize=self._dtype.itemsize, **options
                )

    def encode(self, chunk: np.ndarray) -> bytes:
        """The encoded bytes of one whole chunk (``chunk_rows`` rows)."""
        import google_crc32c

        data = np.ascontiguousarray(chunk)
        big = self._dtype.byteorder == ">" or (
            self._dtype.byteorder == "=" and sys.byteorder == "big"
        )
        if big:  # the bytes codec stores little endian
            data = data.astype(self._dtype.newbyteorder("<"))
        raw = data.view(np.uint8).reshape(-1)
        if self._codec is None:
            payload = raw.tobytes()
        elif self._unshuffled is not None:
            payload = self._choose_shuffle(raw)
        else:
            payload = self._codec.encode(raw)
        checksum = np.uint32(google_crc32c.value(payload)).astype("<u4").tobytes()
        return bytes(payload) + checksum

    def _choose_shuffle(self, raw: np.ndarray) -> bytes:
        """The first chunk, encoded with or without Blosc's byte shuffle, as a sample says.

        Its first ``SAMPLE_BYTES`` are encoded both ways: unshuffled unless shuffling saves
        a tenth of the bytes (and 256). Arrays of fewer than ``TRIAL_BYTES`` per chunk stay
        shuffled. The later chunks keep the choice, which the array's document names
        (rewritten before the first commit makes it durable). Measured on a Panda run's
        840-row chunk: the lidar's per-ray arrays (28 of its 34 KB per row) shrink alike
        both ways and encode 1.8x faster unshuffled; joint states and stamps shrink 20-90 %
        more shuffled.
        """
        plain, self._unshuffled = self._unshuffled, None
        if raw.nbytes >= self.TRIAL_BYTES:
            size = self.SAMPLE_BYTES - self.SAMPLE_BYTES % self._dtype.itemsize
            sample = raw[:size]
            if len(plain.encode(sample)) <= 1.1 * len(self._codec.encode(sample)) + 256:
                self._codec = plain
                if self.document is not None:
                    self.document.set_shuffle("noshuffle")
        return self._codec.encode(raw)

    def prepare(self, index: int) -> None:
        """Create the (empty) file of chunk ``index`` ahead of its write.

        The writer thread's job between chunks: a run's last chunk, written while the run
        waits, then only opens its files (creating a file took this project's file system
        20-400 us, opening one 10). The empty file lies past the committed rows, as a chunk
        torn by a kill would; :meth:`discard_ahead` removes it if the chunk is never
        written. Best effort: the write creates what is missing (and reports a removed
        store folder).
        """
        key = self._chunk_key(index)
        try:  # (beside the array's zarr.json: no folder to make)
            os.close(os.open(self.root / key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except OSError:
            return
        self._ahead = index

    def discard_ahead(self) -> None:
        """Remove the chunk file :meth:`prepare` made and no write filled.

        For a store closing before that chunk (a run stopped early); best effort.
        """
        index, self._ahead = self._ahead, None
        if index is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.root / self._chunk_key(index))

    def write(self, index: int, chunk: np.ndarray) -> Path:
        """Encode and write chunk ``index`` of the array in place, not synced.

        The commit makes its chunk files durable together.

        Returns:
            The chunk file's path.
        """
        return self.write_encoded(index, self.encode(chunk))

    def write_encoded(self, index: int, data: bytes) -> Path:
        """Write chunk ``index`` already encoded (:meth:`encode`) in place, not synced."""
        key = self._chunk_key(index)
        _disk._write_in_place(self.root, key, data)
        if index == self._ahead:
            self._ahead = None
        return self.root / key

    def _chunk_key(self, index: int) -> str:
        return f"{self.key}/c{CHUNK_SEPARATOR}{index}{self._tail}"


def create_array(
    root: Path,
    name: str,
    info: ChannelInfo | None,
    shape: tuple[int, ...],
    dtype: str,
    capacity: int,
    rows: int,
    level: int,
    cname: str,
    final_rows: int = 0,
) -> tuple[ArrayDocument, ChunkEncoder]:
    """Create one store array (its ``zarr.json``, not synced) and its first chunk's empty file.

    Args:
        root: the store folder.
        name: the channel's name (``step`` / ``time`` for the stamps: ``info`` None).
        info: the channel's description, or None.
        shape: the shape past the row axis.
        dtype: the dtype.
        capacity: the array's rows.
        rows: rows per chunk.
        level: Blosc level (0: none).
        cname: Blosc's compressor.
        final_rows: the rows the store expects (0: unknown): the width of the document's
            growing length (:meth:`ArrayDocument.create`).

    Returns:
        The array's document and the encoder of its chunks.
    """
    key = array_key(name)
    document = ArrayDocument(
        root,
        key,
        (capacity, *shape),
        (rows, *shape),
        np.dtype(dtype).name,
        ["row", *(f"{key}.{i}" for i in range(len(shape)))],
        {"simrt": _disk._channel_json(info) if info else {"name": name}},
        level,
        cname,
    )
    # made durable with the first commit's chunk files; its length a growing field at once
    # (the commits overwrite it in place; closing writes the document zarr writes)
    document.create(False, growing=True, final_rows=final_rows)
    encoder = ChunkEncoder(root, key, tuple(shape), np.dtype(dtype), level, cname)
    encoder.document = document
    encoder.prepare(0)  # (the writer thread's job, while the loop steps)
    return document, encoder
