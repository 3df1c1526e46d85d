"""Exports of a recording, streamed chunk by chunk (the run is never loaded whole).

``.npz``: one ``.npy`` member per array (``step``, ``time``, each channel by name) plus the
JSON ``__meta__`` member, written member by member with each array's header first and its
rows appended chunk by chunk (``numpy.load`` reads it; version 2 metadata). ``.parquet``:
one row per step, one row group per chunk; scalars as-is, arrays as fixed-size lists in C
order, the metadata under the schema's ``b"simrt"`` key. ``.mcap``: Foxglove's MCAP (see
:mod:`runtime.recording.export_mcap`). Each export is written to a temporary file beside the
destination and renamed over it (an existing destination keeps its permissions).
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from runtime._files import atomic_write_stream
from runtime.errors import SimrtError
from runtime.recording.channels import FORMAT_NAME, FORMAT_VERSION, json_default
from runtime.recording.reader import RecordingReader, open_recording

__all__ = ["EXPORT_SUFFIXES", "check_export_path", "export_recording"]

EXPORT_SUFFIXES = (".npz", ".parquet", ".mcap")


def check_export_path(path: str | os.PathLike[str]) -> str:
    """The export format of ``path`` (its suffix), checked before any work.

    Raises:
        SimrtError: unsupported suffix, or the package the format needs is missing.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in EXPORT_SUFFIXES:
        raise SimrtError(
            f"{path}: unsupported export format {suffix or '(no suffix)'!r} "
            f"(allowed: {', '.join(EXPORT_SUFFIXES)})"
        )
    needs = {".parquet": ("pyarrow", "pyarrow"), ".mcap": ("foxglove", "foxglove-sdk")}
    if suffix in needs:
        module, package = needs[suffix]
        try:
            __import__(module)
        except ImportError:
            raise SimrtError(
                f"{path}: exporting {suffix} needs the {package!r} package "
                f"(pip install 'simrt[export]')"
            ) from None
    return suffix


def export_recording(
    source: str | os.PathLike[str] | RecordingReader, destination: str | os.PathLike[str]
) -> Path:
    """Export a recording to ``.npz``, ``.parquet`` or ``.mcap`` (by suffix).

    Args:
        source: a recording path or an open reader.
        destination: the file to write (replaced atomically).

    Returns:
        The destination path.

    Raises:
        SimrtError: unsupported destination, missing package, an unreadable source, or the
            destination cannot be written (full disk, ...), naming it and the source.
    """
    destination = Path(destination)
    suffix = check_export_path(destination)
    reader = source if isinstance(source, RecordingReader) else open_recording(source)
    try:
        if suffix in (".npz", ".parquet"):
            write = _write_npz if suffix == ".npz" else _write_parquet
            atomic_write_stream(destination, lambda handle: _up_to_damage(write, reader, handle))
        else:
            from runtime.recording.export_mcap import export_mcap

            export_mcap(reader, destination)
    except OSError as error:  # (a full disk names neither file: say which)
        problem = error.strerror or str(error)
        raise SimrtError(
            f"{destination}: cannot write the export of {reader.path}: {problem} (the "
            "recording is unchanged)"
        ) from None
    return destination


def _up_to_damage(write: Any, reader: RecordingReader, handle: Any) -> None:
    """``write(reader, handle)``, written again while a damaged chunk lowers the rows.

    A file's row count and ``complete`` flag come first (array headers, the Parquet schema),
    so a recording whose readable rows end early is exported again with the rows before the
    damage, marked incomplete, its ``reason`` naming the damage.
    """
    while True:
        rows = reader.rows
        write(reader, handle)
        if reader.rows == rows:
            return
        handle.seek(0)
        handle.truncate()


def _meta(reader: RecordingReader, rows: int) -> dict[str, Any]:
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "complete": reader.complete and rows == reader.rows and reader.damage is None,
        "reason": reader.reason if reader.damage is None else reader.damage,
        "rows": rows,
        "channels": {name: info.to_json() for name, info in reader.channels.items()},
        "run": reader.run,
    }


def _write_npz(reader: RecordingReader, handle: Any) -> None:
    from numpy.lib import format as npy_format

    names = ["step", "time", *reader.channels]
    rows = reader.rows
    with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name in names:  # one pass per array: members are written one after another
            info = reader.channels.get(name)
            shape = (rows, *(info.shape if info else ()))
            dtype = np.dtype(info.dtype if info else ("int64" if name == "step" else "float64"))
            header = {"descr": npy_format.dtype_to_descr(dtype), "fortran_order": False}
            header["shape"] = shape
            written = 0
            with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                npy_format.write_array_header_2_0(member, header)
                for start, block in reader.iter_chunks([] if name in ("step", "time") else [name]):
                    data = np.ascontiguousarray(block[name], dtype=dtype)
                    member.write(data.tobytes())
                    written = start + data.shape[0]
            if written != rows:
                if reader.rows < rows:  # damage found: the file is written again, shorter
                    return
                raise SimrtError(f"{reader.path}: rows {written}.. of {name!r} are unreadable")
        meta = np.array(json.dumps(_meta(reader, rows), default=json_default))
        with zf.open("__meta__.npy", "w") as member:
            npy_format.write_array(member, meta, allow_pickle=False)


def _write_parquet(reader: RecordingReader, handle: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    def column(array: np.ndarray) -> Any:
        if array.ndim <= 1:
            return pa.array(array)
        width = int(np.prod(array.shape[1:]))
        flat = np.ascontiguousarray(array).reshape(-1)
        return pa.FixedSizeListArray.from_arrays(pa.array(flat), width)

    meta = json.dumps(_meta(reader, reader.rows), default=json_default).encode("utf-8")
    writer = None
    try:
        for _, block in reader.iter_chunks():
            table = pa.table({name: column(values) for name, values in block.items()})
            if writer is None:
                schema = table.schema.with_metadata({"simrt": meta})
                writer = pq.ParquetWriter(handle, schema, compression="zstd")
            writer.write_table(table.replace_schema_metadata({"simrt": meta}))
        if writer is None:  # no rows: an empty table with the full schema
            empty = {"step": np.zeros(0, np.int64), "time": np.zeros(0, np.float64)}
            for name, info in reader.channels.items():
                empty[name] = np.zeros((0, *info.shape), dtype=info.dtype)
            table = pa.table({name: column(values) for name, values in empty.items()})
            writer = pq.ParquetWriter(handle, table.schema.with_metadata({"simrt": meta}))
            writer.write_table(table.replace_schema_metadata({"simrt": meta}))
    finally:
        if writer is not None:
            writer.close()
