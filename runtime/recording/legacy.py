"""Single-file recordings: ``.npz`` (format version 1, and exports) and ``.parquet`` exports.

Both hold ``step``, ``time`` and one array (column) per channel plus JSON metadata
(``__meta__`` in an ``.npz``; the ``b"simrt"`` schema metadata of a Parquet file). Version-1
``.npz`` files written by an interrupted simrt 0.1 run may hold *segments*
(``"__seg%06d__/<name>"`` members listed by ``"segments"`` in the metadata), joined here.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from runtime.errors import SimrtError
from runtime.recording.channels import FORMAT_NAME, FORMAT_VERSION, ChannelInfo

__all__ = ["META_KEY", "SingleFile", "read_file"]

META_KEY = "__meta__"


class SingleFile:
    """Everything a single-file recording holds, checked (all rows in memory).

    :func:`runtime.recording.reader.open_recording` wraps it in a ``RecordingReader``.

    Attributes:
        rows: rows of every array.
        complete: the run finished all requested steps.
        run: run metadata.
        channels: channel name -> :class:`ChannelInfo` (file order).
        arrays: ``step``, ``time`` and every channel's array, by name.
        reason: why an incomplete run stopped (None if unknown).
    """

    def __init__(
        self,
        rows: int,
        complete: bool,
        run: dict[str, Any],
        channels: dict[str, ChannelInfo],
        arrays: dict[str, np.ndarray],
        reason: str | None,
    ) -> None:
        self.rows = rows
        self.complete = complete
        self.run = run
        self.channels = channels
        self.arrays = arrays
        self.reason = reason


def read_file(path: Path) -> SingleFile:
    """Read an ``.npz`` / ``.parquet`` recording (all rows into memory).

    Raises:
        SimrtError: not a readable simrt recording.
    """
    suffix = path.suffix.lower()
    if suffix == ".npz":
        meta, arrays = _read_npz(path)
    elif suffix == ".parquet":
        meta, arrays = _read_parquet(path)
    else:
        raise SimrtError(
            f"{path}: not a simrt recording (expected a store directory, .npz or .parquet)"
        )
    try:
        channels = {
            str(name): ChannelInfo.from_json(str(name), info)
            for name, info in dict(meta["channels"]).items()
        }
    except (KeyError, TypeError, ValueError) as error:
        raise SimrtError(f"{path}: recording metadata damaged (channels): {error}") from None
    missing = [name for name in ("step", "time", *channels) if name not in arrays]
    if missing:
        raise SimrtError(f"{path}: recording lacks arrays {missing}")
    step, time = np.asarray(arrays["step"]), np.asarray(arrays["time"])
    if step.ndim != 1:
        raise SimrtError(f"{path}: array 'step' has shape {step.shape}, not (rows,)")
    rows = int(step.shape[0])
    if time.shape != (rows,):
        raise SimrtError(f"{path}: array 'time' has shape {time.shape}, not ({rows},) as 'step'")
    for name, info in channels.items():
        array = arrays[name]
        if array.shape[0] != rows or tuple(array.shape[1:]) != info.shape:
            raise SimrtError(f"{path}: array {name!r} has shape {array.shape}, not ({rows}, ...)")
    return SingleFile(
        rows,
        bool(meta.get("complete", False)),
        dict(meta.get("run", {})),
        channels,
        arrays,
        meta.get("reason"),
    )


def _parse_meta(path: Path, text: str) -> dict[str, Any]:
    try:
        meta = json.loads(text)
    except ValueError as error:
        raise SimrtError(f"{path}: recording metadata is not valid JSON: {error}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        raise SimrtError(f"{path}: not a simrt recording (metadata format missing)")
    version = meta.get("version")
    if not isinstance(version, int) or not 1 <= version <= FORMAT_VERSION:
        raise SimrtError(f"{path}: recording format version {version!r} is not readable")
    if not isinstance(meta.get("channels"), dict):
        raise SimrtError(f"{path}: recording metadata damaged (channels)")
    return meta


def _read_npz(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    if not zipfile.is_zipfile(path):
        raise SimrtError(f"{path}: not a simrt recording (not an .npz / zip archive)")
    try:
        with np.load(path, allow_pickle=False) as npz:
            if META_KEY not in npz.files:
                raise SimrtError(f"{path}: not a simrt recording (no {META_KEY})")
            meta = _parse_meta(path, str(npz[META_KEY]))
            segments = meta.get("segments")
            if segments is None:
                arrays = {key: npz[key] for key in npz.files if key != META_KEY}
            else:
                arrays = _join_segments(path, npz, len(segments), meta)
    except SimrtError:
        raise
    except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as error:
        raise SimrtError(f"{path}: recording damaged ({type(error).__name__}: {error})") from None
    return meta, arrays


def _join_segments(path: Path, npz: Any, count: int, meta: Mapping[str, Any]) -> dict:
    arrays: dict[str, np.ndarray] = {}
    names = set(npz.files)
    for key in ("step", "time", *meta.get("channels", {})):
        parts = []
        for index in range(count):
            member = f"__seg{index:06d}__/{key}"
            if member not in names:
                raise SimrtError(f"{path}: recording lacks segment array {member!r}")
            parts.append(npz[member])
        if parts:
            arrays[key] = np.concatenate(parts) if len(parts) > 1 else parts[0]
    return arrays


def _read_parquet(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise SimrtError(
            f"{path}: reading .parquet needs 'pyarrow' (pip install pyarrow)"
        ) from None
    try:
        table = pq.read_table(path)
    except Exception as error:  # noqa: BLE001 - pyarrow raises ArrowInvalid, OSError, ...
        raise SimrtError(f"{path}: not a readable Parquet file ({error})") from None
    raw = (table.schema.metadata or {}).get(b"simrt")
    if raw is None:
        raise SimrtError(f"{path}: not a simrt recording (no simrt metadata)")
    meta = _parse_meta(path, raw.decode("utf-8", "replace"))
    arrays: dict[str, np.ndarray] = {}
    for name in table.column_names:
        column = table.column(name).combine_chunks()
        shape = tuple(meta["channels"].get(name, {}).get("shape", ()))
        if shape and name not in ("step", "time"):
            values = column.flatten().to_numpy(zero_copy_only=False)
            arrays[name] = values.reshape((len(table), *shape))
        else:
            arrays[name] = column.to_numpy(zero_copy_only=False)
    return meta, arrays
