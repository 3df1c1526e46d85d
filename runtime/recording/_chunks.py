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

import os
import sys
from pathlib import Path

import numpy as np

from runtime.recording import _disk

__all__ = ["ChunkEncoder"]


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
        self._tail = "/0" * len(item_shape)
        self._dtype = np.dtype(dtype)
        self._codec = None
        if level > 0:
            from numcodecs import Blosc

            self._codec = Blosc(
                cname=cname,
                clevel=level,
                shuffle=Blosc.SHUFFLE,
                blocksize=0,
                typesize=self._dtype.itemsize,
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
        payload = self._codec.encode(raw) if self._codec is not None else raw.tobytes()
        checksum = np.uint32(google_crc32c.value(payload)).astype("<u4").tobytes()
        return bytes(payload) + checksum

    def prepare(self, index: int) -> None:
        """Create the folders of chunk ``index`` ahead of its write.

        The writer thread's job between chunks: a run's last chunk, written while the run
        waits, then only opens its files. Best effort: the write creates what is missing.
        """
        folder = self.root / self.key
        if not folder.is_dir():  # never recreate a store folder someone removed
            return
        for part in f"c/{index}{self._tail}".split("/")[:-1]:
            folder = folder / part
            try:
                os.mkdir(folder)
            except FileExistsError:
                pass
            except OSError:
                return

    def write(self, index: int, chunk: np.ndarray) -> Path:
        """Encode and write chunk ``index`` of the array in place, not synced.

        The commit makes its chunk files durable together.

        Returns:
            The chunk file's path.
        """
        key = f"{self.key}/c/{index}{self._tail}"
        _disk._write_in_place(self.root, key, self.encode(chunk))
        return self.root / key
