"""Store arrays read back without zarr: the arrays :mod:`runtime.recording._chunks` writes.

The writer's arrays have one fixed form (see :class:`StoredArray`), so reading them needs
no zarr: each chunk file is checked against its CRC32C, decompressed by numcodecs' Blosc
when the array is compressed, and viewed as the array's dtype. A ``simrt run`` reading its
summary back from the store thus imports no zarr (about 0.3-0.4 s); the reader opens any
other array with zarr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from runtime.recording._metadata import CORE_DTYPES

__all__ = ["StoredArray"]


class StoredArray:
    """A store array read without zarr: one whose document only this module's codecs name.

    :meth:`open` accepts exactly the documents the writer writes (any core dtype, chunks
    along the row axis only, ``bytes`` (little endian) -> optional ``blosc`` -> ``crc32c``,
    zero fill value) and returns None for any other, which the reader then opens with zarr.
    Rows read are what zarr-python reads for the same files (a test compares them): a chunk
    whose checksum does not match, that does not decompress, or has the wrong size raises
    ValueError; a missing chunk file reads as the fill value (zeros), as in zarr.

    Attributes:
        shape: the array's shape (rows first).
        chunks: the chunk shape.
        dtype: the array's dtype.
        attrs: the array's attributes.
    """

    def __init__(
        self,
        folder: Path,
        shape: tuple[int, ...],
        chunks: tuple[int, ...],
        dtype: np.dtype,
        attrs: dict,
        compressed: bool,
        separator: str = "/",
    ) -> None:
        self.folder = folder
        self.shape = shape
        self.chunks = chunks
        self.dtype = dtype
        self.attrs = attrs
        self._compressed = compressed
        self._separator = separator
        self._tail = f"{separator}0" * (len(shape) - 1)

    @classmethod
    def open(cls, folder: Path, document: Any) -> StoredArray | None:
        """The array of ``document`` (its parsed ``zarr.json``), or None when not ours."""
        try:
            dtype = np.dtype(document["data_type"])
            shape = tuple(int(n) for n in document["shape"])
            grid = document["chunk_grid"]
            chunks = tuple(int(n) for n in grid["configuration"]["chunk_shape"])
            codecs = document["codecs"]
            ours = (
                document["zarr_format"] == 3
                and document["node_type"] == "array"
                and document["data_type"] in CORE_DTYPES
                and not document.get("storage_transformers")
                and grid["name"] == "regular"
                and len(chunks) == len(shape) >= 1
                and chunks[0] >= 1
                and chunks[1:] == shape[1:]
                and document["chunk_key_encoding"]["name"] == "default"
                and document["chunk_key_encoding"]["configuration"]["separator"] in ("/", ".")
                and document["fill_value"] in (0, [0.0, 0.0])
                and codecs[0] in _bytes_codecs(dtype)
                and codecs[-1] == {"name": "crc32c"}
                and 2 <= len(codecs) <= 3
                and all(c.get("name") == "blosc" for c in codecs[1:-1])
            )
            attrs = dict(document.get("attributes") or {})
        except (KeyError, TypeError, ValueError, AttributeError):
            return None
        if not ours:
            return None
        separator = document["chunk_key_encoding"]["configuration"]["separator"]
        return cls(folder, shape, chunks, dtype, attrs, len(codecs) == 3, separator)

    def chunk_name(self, index: int) -> str:
        """The file name of row chunk ``index`` inside the array's folder."""
        return f"c{self._separator}{index}{self._tail}"

    def __getitem__(self, rows: slice) -> np.ndarray:
        """Rows ``[start, stop)`` (a slice with step 1)."""
        start, stop, step = rows.indices(self.shape[0])
        if step != 1:
            raise ValueError("only row slices with step 1 are read")
        stop = max(start, stop)
        out = np.empty((stop - start, *self.shape[1:]), dtype=self.dtype)
        if not out.size:  # rows of zero size have no chunks to read
            return out
        size = self.chunks[0]
        for index in range(start // size, -(-stop // size)):
            first = index * size
            lo, hi = max(start, first), min(stop, first + size)
            out[lo - start : hi - start] = self._chunk(index)[lo - first : hi - first]
        return out

    def _chunk(self, index: int) -> np.ndarray:
        import google_crc32c

        try:
            data = (self.folder / self.chunk_name(index)).read_bytes()
        except FileNotFoundError:
            return np.zeros(self.chunks, dtype=self.dtype)
        if len(data) < 4:
            raise ValueError(f"chunk {index} is shorter than its checksum")
        payload, stored = data[:-4], data[-4:]
        if google_crc32c.value(payload) != int.from_bytes(stored, "little"):
            raise ValueError(f"chunk {index}: stored and computed checksum do not match")
        if self._compressed:
            from runtime.recording._chunks import blosc_class

            payload = bytes(blosc_class()().decode(payload))
        values = np.frombuffer(payload, dtype=self.dtype.newbyteorder("<"))
        if values.size != int(np.prod(self.chunks)):
            raise ValueError(f"chunk {index} holds {values.size} values, not {self.chunks}")
        return values.reshape(self.chunks)


def _bytes_codecs(dtype: np.dtype) -> list[dict[str, Any]]:
    little = {"name": "bytes", "configuration": {"endian": "little"}}
    return [{"name": "bytes"}, little] if dtype.itemsize == 1 else [little]
