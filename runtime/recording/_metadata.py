"""Metadata documents (``zarr.json``) of a store, written without importing zarr.

A store's documents are the ones zarr-python 3 writes for the same group and arrays (a test
compares them byte for byte with what ``zarr.open_group`` / ``zarr.create_array`` write):
importing zarr costs a ``simrt run`` about 0.4 s, and creating 35 arrays through it about
0.13 s of CPU more (its asyncio pipeline, per array), which a batch worker pays on every
episode. zarr stays the reader of stores.

An array document depends on the array's shape, chunk shape, dtype, dimension names,
attributes and compression level only. The dtypes of Zarr v3's core data types are written
here; any other dtype gets the document zarr itself writes (zarr imported then).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from runtime._files import atomic_write_bytes, destination_mode
from runtime.recording._disk import make_durable

__all__ = [
    "CHUNK_SEPARATOR",
    "CORE_DTYPES",
    "ArrayDocument",
    "GroupDocument",
    "replace_documents",
]

CHUNK_SEPARATOR = "."
"""Chunk keys of the arrays a store creates: ``c.<row chunk>.0...`` beside the array's
``zarr.json`` (zarr's default key encoding with "." as its separator). With "/" each row
chunk of an array of rank 2 or more is a folder of its own: a ``mkdir`` per array per chunk,
which cost this project's file system up to 0.6 ms each. Stores written with "/" still
read."""

CORE_DTYPES = frozenset(
    ["bool"]
    + [f"{kind}{bits}" for kind in ("int", "uint") for bits in (8, 16, 32, 64)]
    + ["float16", "float32", "float64", "complex64", "complex128"]
)
"""Zarr v3 core data types: their documents are written here."""


def _dump(document: dict[str, Any]) -> bytes:
    """A document's bytes, as zarr writes them (2-space indent; NaN / Infinity allowed)."""
    return json.dumps(document, indent=2, allow_nan=True).encode()


# A row count that grows at every commit is a fixed-width field of its document (the number
# and trailing spaces, which JSON allows): the commit overwrites those bytes in place (one
# small write of the page cache, which a kill does not tear) instead of renaming a new
# document over the old one, which costs 2-3 ms per file on ext4 (it flushes the new file's
# data first). The closing update writes the document as zarr does.
_SLOT = 1234567890123456789
_SLOT_WIDTH = len(str(_SLOT))


def _slot_bytes(rows: int, width: int = _SLOT_WIDTH) -> bytes:
    return f"{int(rows):<{width}d}".encode()


def _with_slot(data: bytes, after: bytes, rows: int, width: int = _SLOT_WIDTH) -> tuple[bytes, int]:
    """``data`` (dumped with the sentinel row count) with ``rows`` in its slot; the offset.

    The slot is the first sentinel after ``after`` in ``data``.
    """
    at = data.index(str(_SLOT).encode(), data.index(after))
    return data[:at] + _slot_bytes(rows, width) + data[at + _SLOT_WIDTH :], at


def _overwrite(path: Path, offset: int, data: bytes) -> None:
    handle = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(handle, data, offset)
    finally:
        os.close(handle)


def _codecs(dtype: np.dtype, level: int, cname: str) -> list[dict[str, Any]]:
    codecs: list[dict[str, Any]] = [{"name": "bytes"}]
    if dtype.itemsize > 1:  # zarr names no byte order for one-byte types
        codecs[0]["configuration"] = {"endian": "little"}
    if level > 0:
        codecs.append(
            {
                "name": "blosc",
                "configuration": {
                    "typesize": dtype.itemsize,
                    "cname": cname,
                    "clevel": level,
                    "shuffle": "shuffle",
                    "blocksize": 0,
                },
            }
        )
    codecs.append({"name": "crc32c"})  # a flipped bit is an error, not data
    return codecs


def _fill_value(dtype: np.dtype) -> Any:
    if dtype.kind == "b":
        return False
    if dtype.kind in "iu":
        return 0
    if dtype.kind == "c":
        return [0.0, 0.0]
    return 0.0


def _core_document(dtype: np.dtype, rank: int, level: int, cname: str) -> dict[str, Any]:
    """The document of an array with a core data type (shape fields filled in later)."""
    return {
        "shape": [1] * (rank + 1),
        "data_type": dtype.name,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1] * (rank + 1)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": CHUNK_SEPARATOR}},
        "fill_value": _fill_value(dtype),
        "codecs": _codecs(dtype, level, cname),
        "attributes": {},
        "dimension_names": [f"d{i}" for i in range(rank + 1)],
        "zarr_format": 3,
        "node_type": "array",
        "storage_transformers": [],
    }


@functools.lru_cache(maxsize=16)
def _zarr_template(dtype: str, rank: int, level: int, cname: str) -> str:
    """The ``zarr.json`` zarr writes for an array of this (non-core) dtype, rank, codec."""
    import zarr
    from zarr.codecs import BloscCodec, Crc32cCodec

    compressors: list[Any] = [Crc32cCodec()]
    if level > 0:
        compressors.insert(0, BloscCodec(cname=cname, clevel=level, shuffle="shuffle"))
    with tempfile.TemporaryDirectory(prefix="simrt-zarr-template-") as folder:
        zarr.create_array(
            store=folder,
            shape=(1,) * (rank + 1),
            chunks=(1,) * (rank + 1),
            dtype=dtype,
            fill_value=0,
            compressors=compressors,
            dimension_names=[f"d{i}" for i in range(rank + 1)],
            attributes={},
            chunk_key_encoding={"name": "default", "separator": CHUNK_SEPARATOR},
            config={"write_empty_chunks": True},
            zarr_format=3,
        )
        return (Path(folder) / "zarr.json").read_text(encoding="utf-8")


def _array_template(dtype: str, rank: int, level: int, cname: str) -> dict[str, Any]:
    """A fresh array document for this dtype, rank, compression level and compressor."""
    if dtype in CORE_DTYPES:
        return _core_document(np.dtype(dtype), rank, level, cname)
    return json.loads(_zarr_template(dtype, rank, level, cname))  # json.loads: a fresh copy


class _Document:
    """A ``zarr.json`` of a store, and the spare temporary file of its next rewrite."""

    folder: Path
    spare: str | None = None  # an empty temporary file for the closing rewrite

    def make_spare(self) -> None:
        """Make, ahead, the empty temporary file :func:`replace_documents` fills next.

        Creating a file took this project's file system 20-400 us (opening one 10): a store
        makes its documents' spares while its last chunk is recorded, so that closing only
        fills and renames them. A process killed meanwhile leaves them, empty, beside
        the documents (as a kill during :func:`replace_documents` leaves its temporary
        files): Zarr readers ignore them. Best effort (None: none made).
        """
        if self.spare is None:
            with contextlib.suppress(OSError):
                handle, self.spare = _temporary(self.folder / "zarr.json")
                os.close(handle)

    def drop_spare(self) -> None:
        """Remove the spare temporary file (a store closed without using it); best effort."""
        spare, self.spare = self.spare, None
        if spare is not None:
            with contextlib.suppress(OSError):
                os.unlink(spare)


class ArrayDocument(_Document):
    """The metadata document of one store array.

    Args:
        root: the store directory (must exist; never created here).
        key: the array's key (its folder inside the store).
        shape: the array's shape (rows first).
        chunks: the chunk shape.
        dtype: the array's dtype name.
        dimension_names: one name per axis.
        attributes: the array's attributes (JSON-ready).
        level: Blosc compression level (0: checksum only).
        cname: Blosc's compressor (``"lz4"`` or ``"zstd"``).
    """

    def __init__(
        self,
        root: Path,
        key: str,
        shape: tuple[int, ...],
        chunks: tuple[int, ...],
        dtype: str,
        dimension_names: list[str],
        attributes: dict[str, Any],
        level: int,
        cname: str = "lz4",
    ) -> None:
        self.folder = root / key
        self.document = _array_template(dtype, len(shape) - 1, level, cname)
        self.document["shape"] = [int(n) for n in shape]
        self.document["chunk_grid"]["configuration"]["chunk_shape"] = [int(n) for n in chunks]
        self.document["dimension_names"] = list(dimension_names)
        self.document["attributes"] = attributes
        self._slot: int | None = None  # the row count's offset while it is a growing field
        self._width = _SLOT_WIDTH  # and its width

    @property
    def growing(self) -> bool:
        """The document holds its row count as a growing field (:meth:`grow`)."""
        return self._slot is not None

    def grow(self, rows: int) -> Path:
        """Set the array's length to ``rows``, not synced (a commit's sync makes it durable).

        The first call rewrites the document (atomically) with the length as a fixed-width
        field; later calls overwrite that field in place. :meth:`update` writes the plain
        document again.

        Returns:
            The document's path.
        """
        path = self.folder / "zarr.json"
        self.document["shape"][0] = int(rows)
        if self._slot is not None and len(str(int(rows))) <= self._width:
            _overwrite(path, self._slot, _slot_bytes(rows, self._width))
            return path
        data, slot = self._growing_bytes(rows, _SLOT_WIDTH)  # (a field of any int64)
        atomic_write_bytes(path, data, durable=False)
        self._slot, self._width = slot, _SLOT_WIDTH
        return path

    def _growing_bytes(self, rows: int, width: int) -> tuple[bytes, int]:
        """The document with ``rows`` as a growing field of ``width``, and its offset."""
        self.document["shape"][0] = _SLOT
        try:
            data = _dump(self.document)
        finally:
            self.document["shape"][0] = int(rows)
        return _with_slot(data, b'"shape"', rows, width)

    @property
    def as_zarr_writes(self) -> bool:
        """Whether the document on disk is the one zarr writes (closing need not rewrite it).

        So it is when its length fills its growing field (no padding).
        """
        return self.filled_by(self.rows)

    def filled_by(self, rows: int) -> bool:
        """Whether a length of ``rows`` fills the growing field (see :attr:`as_zarr_writes`)."""
        return self._slot is not None and len(str(int(rows))) == self._width

    @property
    def rows(self) -> int:
        """The array's length along the row axis."""
        return int(self.document["shape"][0])

    def _bytes(self) -> bytes:
        return _dump(self.document)

    def create(self, durable: bool, *, growing: bool = False, final_rows: int = 0) -> None:
        """Create the array's folder and document (the folder must not exist yet).

        ``growing``: the document holds its length as a growing field from the start (its
        first :meth:`grow` then overwrites it in place instead of writing a new file), as
        wide as ``final_rows``' digits (0: any int64): a length of that many digits then
        fills it, and the document is the one zarr writes (:attr:`as_zarr_writes`); a
        longer one makes :meth:`grow` rewrite it with a field of any int64.
        """
        if not growing:
            _create(self.folder, self._bytes(), durable)
            return
        width = len(str(int(final_rows))) if final_rows > 0 else _SLOT_WIDTH
        width = max(width, len(str(self.rows)))
        data, slot = self._growing_bytes(self.rows, width)
        _create(self.folder, data, durable)
        self._slot, self._width = slot, width

    def set_shuffle(self, shuffle: str) -> None:
        """Name Blosc's ``shuffle`` in the document, rewritten atomically but not synced.

        (A document the next commit makes durable.) A growing document stays one, with its
        field's width.
        """
        for codec in self.document["codecs"]:
            if codec.get("name") == "blosc":
                codec["configuration"]["shuffle"] = shuffle
        if self._slot is None:
            data = self._bytes()
        else:
            data, self._slot = self._growing_bytes(self.rows, self._width)
        atomic_write_bytes(self.folder / "zarr.json", data, durable=False)

    def update(
        self,
        *,
        rows: int | None = None,
        attributes: dict[str, Any] | None = None,
        shuffle: str | None = None,
        durable: bool = True,
    ) -> None:
        """Rewrite the document (atomically) with a new length, attributes, Blosc shuffle.

        ``durable=False``: not synced (a document the next commit makes durable).
        """
        path, data = self.revise(rows=rows, attributes=attributes, shuffle=shuffle)
        atomic_write_bytes(path, data, durable=durable)

    def revise(
        self,
        *,
        rows: int | None = None,
        attributes: dict[str, Any] | None = None,
        shuffle: str | None = None,
    ) -> tuple[Path, bytes]:
        """Change the document in memory as :meth:`update` does; its path and new bytes.

        For :func:`replace_documents`, which writes them (the document is no longer a
        growing one: write it before the next :meth:`grow`).
        """
        if shuffle is not None:
            for codec in self.document["codecs"]:
                if codec.get("name") == "blosc":
                    codec["configuration"]["shuffle"] = shuffle
        if rows is not None:
            self.document["shape"][0] = int(rows)
        if attributes is not None:
            self.document["attributes"] = attributes
        self._slot = None
        return self.folder / "zarr.json", self._bytes()


class GroupDocument(_Document):
    """The metadata document of a store group (the store itself, or a group inside it).

    Args:
        folder: the group's folder.
        attributes: the group's attributes (JSON-ready).
    """

    def __init__(self, folder: Path, attributes: dict[str, Any]) -> None:
        self.folder = folder
        self.attributes = attributes
        self._slot: int | None = None

    def grow(self, rows: int) -> Path:
        """Set ``attributes["simrt"]["rows"]`` to ``rows`` as :meth:`ArrayDocument.grow` does.

        Returns:
            The document's path.
        """
        path = self.folder / "zarr.json"
        simrt = self.attributes["simrt"]
        simrt["rows"] = int(rows)
        if self._slot is not None:
            _overwrite(path, self._slot, _slot_bytes(rows))
            return path
        simrt["rows"] = _SLOT
        try:
            data = self._bytes()
        finally:
            simrt["rows"] = int(rows)
        data, slot = _with_slot(data, b'"rows"', rows)
        atomic_write_bytes(path, data, durable=False)
        self._slot = slot
        return path

    def _bytes(self) -> bytes:
        return _dump({"attributes": self.attributes, "zarr_format": 3, "node_type": "group"})

    def create(self, durable: bool) -> None:
        """Create the group's folder and document (the folder must not exist yet)."""
        _create(self.folder, self._bytes(), durable)

    def update(self, attributes: dict[str, Any], *, durable: bool = True) -> None:
        """Rewrite the document (atomically) with new attributes.

        ``durable=False``: not synced (a document the next commit makes durable).
        """
        path, data = self.revise(attributes)
        atomic_write_bytes(path, data, durable=durable)

    def revise(self, attributes: dict[str, Any]) -> tuple[Path, bytes]:
        """Change the attributes in memory as :meth:`update` does; the path and new bytes."""
        self.attributes = attributes
        self._slot = None
        return self.folder / "zarr.json", self._bytes()


def replace_documents(
    root: Path,
    documents: Sequence[tuple[Path, bytes]],
    *,
    durable: bool = True,
    spares: Mapping[Path, str | None] | None = None,
) -> None:
    """Replace each ``(path, data)`` document of the store ``root`` atomically, synced once.

    As one durable :func:`~runtime._files.atomic_write_bytes` per document (each new content
    is on disk before its rename; each file keeps its mode), but the temporary files are
    made durable together (:func:`~runtime.recording._disk.make_durable`: one ``syncfs``
    where the machine holds little unwritten data) before the renames, instead of one
    ``fsync`` (a journal commit) each: a store closes all its array documents at once
    (measured on a Panda run's 40 documents: 17.7 ms one by one). ``durable=False``: no
    sync (a store that is not durable). ``spares``: a document's temporary file made ahead
    (:meth:`ArrayDocument.make_spare`), by its path, filled instead of a new one (the
    spares of no document are removed).

    Raises:
        OSError: a write, the sync or a rename failed (the temporary files are removed).
    """
    staged: list[tuple[str, Path]] = []
    spares = dict(spares or {})
    try:
        for path, data in documents:
            mode = destination_mode(path)
            handle, tmp = -1, spares.pop(path, None)
            if tmp is not None:
                try:
                    handle = os.open(tmp, os.O_WRONLY | os.O_TRUNC)
                except OSError:  # (gone: a new one)
                    tmp = None
            if tmp is None:
                handle, tmp = _temporary(path)
            staged.append((tmp, path))
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
            os.chmod(tmp, mode)
        if durable:
            make_durable(root, [Path(tmp) for tmp, _ in staged])
        for tmp, path in staged:
            os.replace(tmp, path)
        for tmp in spares.values():  # (spares of no document: not needed any more)
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
    except BaseException:
        for tmp, _ in staged:  # (a renamed one is gone already)
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise


def _temporary(path: Path) -> tuple[int, str]:
    """A new temporary file beside ``path`` (as :func:`~runtime._files.atomic_write` names it)."""
    return tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=path.parent)


def _create(folder: Path, data: bytes, durable: bool) -> None:
    os.mkdir(folder)  # never mkdir -p: a removed store stays removed
    with open(folder / "zarr.json", "wb") as handle:
        handle.write(data)
        if durable:
            handle.flush()
            os.fsync(handle.fileno())
