"""Recording of per-step sensor readings to ``.npz`` (or ``.parquet`` with pyarrow).

A recording holds one row per recorded physics step: the step counter ``step`` (int64),
the simulation time ``time`` (float64, seconds) and any number of named *channels*, each
a fixed-shape array per step (e.g. ``"/World/robot/hand/imu.linear_acceleration"`` with
shape ``(3,)``). Channel metadata (sensor path, sensor kind, field, unit) and run-level
metadata are stored as JSON next to the arrays.

Crash safety: the file on disk is always a complete, loadable recording. Rows are kept in
memory and the whole file is rewritten every ``flush_every`` rows (and on :meth:`close`)
into a temporary file in the destination directory, which then atomically replaces the
destination (``os.replace``). An interrupted run (exception, Ctrl-C) therefore leaves the
rows of the last flush; :meth:`Recorder.close` is called from ``finally`` blocks by the run
loop, so in practice all completed steps are on disk, marked ``complete = False``.

File layout (``.npz``): arrays ``step`` (N,), ``time`` (N,), one array per channel with
shape ``(N, *channel_shape)``, and ``__meta__``: a 0-d unicode array holding JSON. Load it
with :func:`load_recording` (or ``numpy.load`` directly; no pickling is involved).

Parquet layout: one row per step, columns ``step``, ``time`` and one column per channel
(scalars as-is, arrays flattened to fixed-size lists in C order); the JSON metadata and each
channel's shape are stored in the schema metadata under ``b"simrt"``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tempfile
import time as time_module
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from runtime.errors import SimrtError

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "ChannelInfo",
    "check_recording_path",
    "Recorder",
    "Recording",
    "load_recording",
]

FORMAT_NAME = "simrt-recording"
FORMAT_VERSION = 1
_META_KEY = "__meta__"
_RESERVED = frozenset({"step", "time", _META_KEY})
_SUFFIXES = (".npz", ".parquet")
_PREALLOCATE_BYTES = 256 * 1024 * 1024  # cap of the up-front buffer allocation


@dataclass(frozen=True)
class ChannelInfo:
    """Description of one recorded channel.

    Attributes:
        name: channel key in the file, e.g. ``"/World/robot/hand/imu.angular_velocity"``.
        shape: per-step shape, e.g. ``(3,)``; ``()`` for scalars.
        dtype: NumPy dtype name (``"float32"``, ``"float64"``, ``"bool"``, ``"int64"``).
        sensor: USD path of the sensor (or body/robot) the channel belongs to ("" if none).
        kind: sensor kind: ``"contact"``, ``"imu"``, ``"raycast"``, ``"joint_state"``,
            ``"effort"``, ``"body"``, ``"command"`` or ``""``.
        field: reading field name, e.g. ``"force"``.
        unit: unit string, free text (e.g. ``"stage_units/s^2"``).
        attrs: extra JSON-serialisable facts (e.g. a raycast sensor's ``max_range``).
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    sensor: str = ""
    kind: str = ""
    field: str = ""
    unit: str = ""
    attrs: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Return the JSON-serialisable form used in the file metadata."""
        return {
            "shape": list(self.shape),
            "dtype": self.dtype,
            "sensor": self.sensor,
            "kind": self.kind,
            "field": self.field,
            "unit": self.unit,
            "attrs": dict(self.attrs),
        }

    @classmethod
    def from_json(cls, name: str, data: Mapping[str, Any]) -> ChannelInfo:
        """Inverse of :meth:`to_json`."""
        return cls(
            name=name,
            shape=tuple(int(n) for n in data.get("shape", ())),
            dtype=str(data.get("dtype", "float64")),
            sensor=str(data.get("sensor", "")),
            kind=str(data.get("kind", "")),
            field=str(data.get("field", "")),
            unit=str(data.get("unit", "")),
            attrs=dict(data.get("attrs", {})),
        )


def check_recording_path(path: str | os.PathLike[str]) -> str:
    """Validate a recording destination before a run starts.

    Args:
        path: the destination file.

    Returns:
        The format suffix (``".npz"`` or ``".parquet"``).

    Raises:
        SimrtError: unsupported suffix, or ``.parquet`` without pyarrow installed.
    """
    return _check_suffix(Path(path))


def _check_suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in _SUFFIXES:
        raise SimrtError(
            f"{path}: unsupported recording format {suffix or '(no suffix)'!r} "
            f"(allowed: {', '.join(_SUFFIXES)})"
        )
    if suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError as exc:
            raise SimrtError(
                f"{path}: writing .parquet needs the 'pyarrow' package, which is not "
                "installed (pip install pyarrow), or use an .npz output"
            ) from exc
    return suffix


class Recorder:
    """Collects per-step rows and keeps an atomically rewritten file on disk.

    Usage::

        rec = Recorder("out/run.npz", flush_every=250, meta={"scene": "..."})
        rec.add_channel(ChannelInfo("imu.linear_acceleration", (3,), "float32", ...))
        for k in ...:
            rec.append(step=k, time=t, values={"imu.linear_acceleration": a})
        rec.close(complete=True)

    Args:
        path: destination file (``.npz`` or ``.parquet``); its directory is created.
            None keeps the rows in memory only (:meth:`flush` writes nothing).
        flush_every: rewrite the file every this many appended rows (>= 1).
        meta: JSON-serialisable run metadata stored in the file.
        min_flush_interval: skip a periodic flush when the previous one was less than this
            many wall-clock seconds ago, or less than 9x the previous flush's duration (keeps
            the rewrite cost of long runs near 10 % of the wall time; the final
            :meth:`close` always writes everything). 0 flushes strictly every
            ``flush_every`` rows.
        expected_rows: rows to preallocate for (avoids regrowing the buffers; capped at
            256 MB up front); more rows still work.

    Raises:
        SimrtError: unsupported suffix, or ``.parquet`` without pyarrow installed.
        ValueError: ``flush_every < 1``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        flush_every: int = 250,
        meta: Mapping[str, Any] | None = None,
        min_flush_interval: float = 0.0,
        expected_rows: int = 0,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self._format = _check_suffix(self.path) if self.path is not None else ""
        if int(flush_every) < 1:
            raise ValueError(f"flush_every must be >= 1, got {flush_every}")
        self.flush_every = int(flush_every)
        self.meta: dict[str, Any] = dict(meta or {})
        self._channels: dict[str, ChannelInfo] = {}
        self._buffers: dict[str, np.ndarray] = {}
        self._step = np.zeros(0, dtype=np.int64)
        self._time = np.zeros(0, dtype=np.float64)
        self._count = 0
        self._expected_rows = max(int(expected_rows), 0)
        self._since_flush = 0
        self._closed = False
        self.flush_count = 0
        self.min_flush_interval = float(min_flush_interval)
        self._last_flush = -math.inf
        self._flush_seconds = 0.0
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------------ channels
    @property
    def channels(self) -> dict[str, ChannelInfo]:
        """Registered channels by name (insertion order)."""
        return dict(self._channels)

    @property
    def row_count(self) -> int:
        """Number of rows appended so far."""
        return self._count

    def add_channel(self, info: ChannelInfo) -> None:
        """Register a channel; must happen before the first :meth:`append`.

        Raises:
            ValueError: duplicate or reserved name, or channels added after rows.
        """
        if self._count:
            raise ValueError(f"channel {info.name!r} added after rows were recorded")
        if info.name in _RESERVED or info.name in self._channels:
            raise ValueError(f"channel name {info.name!r} is reserved or already used")
        np.dtype(info.dtype)  # validates the dtype name
        self._channels[info.name] = info
        self._buffers[info.name] = np.zeros((0, *info.shape), dtype=info.dtype)

    # ------------------------------------------------------------------ rows
    def _grow(self, needed: int) -> None:
        capacity = self._step.shape[0]
        if needed <= capacity:
            return
        row_bytes = 16 + sum(
            buffer.dtype.itemsize * int(np.prod(buffer.shape[1:]))
            for buffer in self._buffers.values()
        )
        preallocate = min(self._expected_rows, _PREALLOCATE_BYTES // max(row_bytes, 1))
        new_capacity = max(needed, 2 * capacity, 64, preallocate)

        def grown(array: np.ndarray) -> np.ndarray:
            out = np.zeros((new_capacity, *array.shape[1:]), dtype=array.dtype)
            out[: self._count] = array[: self._count]
            return out

        self._step = grown(self._step)
        self._time = grown(self._time)
        for name, buffer in self._buffers.items():
            self._buffers[name] = grown(buffer)

    def append(self, step: int, time: float, values: Mapping[str, Any]) -> None:
        """Append one row.

        Args:
            step: physics step counter of the row.
            time: simulation time of the row [s].
            values: channel name -> value broadcastable to the channel shape. Channels
                missing from ``values`` are recorded as zeros (False).

        Raises:
            KeyError: a value for an unregistered channel.
            ValueError: recorder closed, or a value of the wrong shape.
        """
        if self._closed:
            raise ValueError("recorder is closed")
        for name in values:
            if name not in self._channels:
                raise KeyError(f"unknown channel {name!r}")
        self._grow(self._count + 1)
        row = self._count
        self._step[row] = int(step)
        self._time[row] = float(time)
        for name, value in values.items():
            buffer = self._buffers[name]
            try:
                buffer[row] = value
            except ValueError as exc:
                raise ValueError(
                    f"channel {name!r}: value of shape {np.shape(value)} does not fit "
                    f"{self._channels[name].shape}"
                ) from exc
        self._count += 1
        self._since_flush += 1
        if self._since_flush >= self.flush_every and (
            self.min_flush_interval <= 0.0
            or time_module.monotonic() - self._last_flush
            >= max(self.min_flush_interval, 9.0 * self._flush_seconds)
        ):
            self.flush()

    # ------------------------------------------------------------------ output
    def _meta_json(self, complete: bool) -> str:
        meta = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "complete": bool(complete),
            "rows": self._count,
            "channels": {name: info.to_json() for name, info in self._channels.items()},
            "run": self.meta,
        }
        return json.dumps(meta, default=_json_default)

    def flush(self, *, complete: bool = False, final: bool = False) -> None:
        """Atomically rewrite the destination with all rows recorded so far.

        Args:
            complete: mark the recording complete (the run reached its last step).
            final: last write of the run: compressed and fsync'ed (periodic flushes are
                written uncompressed, which is much faster for long runs).
        """
        self._since_flush = 0
        started = time_module.monotonic()
        self._last_flush = started
        if self.path is None:
            return
        n = self._count
        arrays: dict[str, np.ndarray] = {
            "step": self._step[:n],
            "time": self._time[:n],
        }
        for name, buffer in self._buffers.items():
            arrays[name] = buffer[:n]
        meta_json = self._meta_json(complete)
        if self._format == ".npz":
            _write_npz_atomic(self.path, arrays, meta_json, final=final)
        else:
            _write_parquet_atomic(self.path, arrays, self._channels, meta_json)
        self._since_flush = 0
        self.flush_count += 1
        self._flush_seconds = time_module.monotonic() - started

    def snapshot(self, *, complete: bool = False) -> Recording:
        """The rows recorded so far as a :class:`Recording` (copies; no file I/O)."""
        n = self._count
        return Recording(
            step=self._step[:n].copy(),
            time=self._time[:n].copy(),
            data={name: buffer[:n].copy() for name, buffer in self._buffers.items()},
            channels=dict(self._channels),
            complete=complete,
            run=json.loads(json.dumps(self.meta, default=_json_default)),
        )

    def close(self, *, complete: bool = True) -> None:
        """Final flush (``complete`` marks a run that reached its last step); idempotent."""
        if self._closed:
            return
        self.flush(complete=complete, final=True)
        self._closed = True


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _umask_mode() -> int:
    """Permissions of a newly created regular file under the current umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def temp_path_beside(path: Path, suffix: str) -> Path:
    """A new empty temp file in ``path``'s directory with normal file permissions.

    ``mkstemp`` creates mode 0600; the file is re-moded to what ``open()`` would give so
    the final ``os.replace`` leaves an ordinary file.

    Args:
        path: the destination the temp file will replace.
        suffix: temp file suffix.

    Returns:
        The temp file path.
    """
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    os.close(handle)
    os.chmod(name, _umask_mode())
    return Path(name)


def _write_npz_atomic(
    path: Path, arrays: Mapping[str, np.ndarray], meta_json: str, final: bool = True
) -> None:
    tmp = temp_path_beside(path, ".tmp.npz")
    try:
        with open(tmp, "wb") as stream:
            save = np.savez_compressed if final else np.savez
            save(stream, **arrays, **{_META_KEY: np.array(meta_json)})
            stream.flush()
            if final:  # durability against power loss; atomicity comes from os.replace
                os.fsync(stream.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _write_parquet_atomic(
    path: Path,
    arrays: Mapping[str, np.ndarray],
    channels: Mapping[str, ChannelInfo],
    meta_json: str,
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns: dict[str, Any] = {}
    for name, array in arrays.items():
        if array.ndim <= 1:
            columns[name] = pa.array(array)
        else:
            width = int(np.prod(array.shape[1:]))
            flat = np.ascontiguousarray(array).reshape(-1)
            columns[name] = pa.FixedSizeListArray.from_arrays(pa.array(flat), width)
    table = pa.table(columns)
    table = table.replace_schema_metadata({b"simrt": meta_json.encode("utf-8")})
    tmp = temp_path_beside(path, ".tmp.parquet")
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class Recording:
    """A loaded recording.

    Attributes:
        step: physics step counters, shape (N,), int64.
        time: simulation times [s], shape (N,), float64.
        data: channel name -> array of shape (N, *channel_shape).
        channels: channel name -> :class:`ChannelInfo`.
        complete: True when the run finished all requested steps.
        run: run-level metadata (scene, dt, summary, ...).
    """

    step: np.ndarray
    time: np.ndarray
    data: dict[str, np.ndarray]
    channels: dict[str, ChannelInfo]
    complete: bool
    run: dict[str, Any]

    def __len__(self) -> int:
        return int(self.step.shape[0])

    def channels_of_kind(self, kind: str) -> dict[str, list[ChannelInfo]]:
        """Group the channels of one sensor kind by sensor path (file order kept)."""
        grouped: dict[str, list[ChannelInfo]] = {}
        for info in self.channels.values():
            if info.kind == kind:
                grouped.setdefault(info.sensor, []).append(info)
        return grouped

    def field(self, sensor: str, field_name: str) -> np.ndarray:
        """Array of one field of one sensor.

        Raises:
            KeyError: no such channel.
        """
        for info in self.channels.values():
            if info.sensor == sensor and info.field == field_name:
                return self.data[info.name]
        raise KeyError(f"no channel for sensor {sensor!r} field {field_name!r}")


def _parse_meta(path: Path, text: str) -> dict[str, Any]:
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SimrtError(f"{path}: recording metadata is not valid JSON: {exc}") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        raise SimrtError(f"{path}: not a simrt recording (metadata format missing)")
    return meta


def load_recording(path: str | os.PathLike[str]) -> Recording:
    """Load a recording written by :class:`Recorder`.

    Args:
        path: ``.npz`` or ``.parquet`` file.

    Returns:
        The recording.

    Raises:
        SimrtError: unsupported suffix, missing pyarrow for parquet, or not a recording.
        OSError: the file cannot be read.
    """
    path = Path(path)
    suffix = _check_suffix(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if suffix == ".npz":
        try:
            with np.load(path, allow_pickle=False) as npz:
                if _META_KEY not in npz.files:
                    raise SimrtError(f"{path}: not a simrt recording (no {_META_KEY})")
                meta = _parse_meta(path, str(npz[_META_KEY]))
                arrays = {key: npz[key] for key in npz.files if key != _META_KEY}
        except (ValueError, OSError) as exc:
            if isinstance(exc, SimrtError):
                raise
            raise SimrtError(f"{path}: cannot read recording: {exc}") from exc
    else:
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        raw = (table.schema.metadata or {}).get(b"simrt")
        if raw is None:
            raise SimrtError(f"{path}: not a simrt recording (no simrt metadata)")
        meta = _parse_meta(path, raw.decode("utf-8"))
        arrays = {}
        for name in table.column_names:
            column = table.column(name).combine_chunks()
            if hasattr(column, "flatten") and name not in ("step", "time"):
                shape = tuple(meta["channels"].get(name, {}).get("shape", ()))
                if shape:
                    values = column.flatten().to_numpy(zero_copy_only=False)
                    arrays[name] = values.reshape((len(table), *shape))
                    continue
            arrays[name] = column.to_numpy(zero_copy_only=False)
    channels = {
        name: ChannelInfo.from_json(name, info) for name, info in meta["channels"].items()
    }
    missing = [name for name in ("step", "time", *channels) if name not in arrays]
    if missing:
        raise SimrtError(f"{path}: recording lacks arrays {missing}")
    return Recording(
        step=np.asarray(arrays["step"], dtype=np.int64),
        time=np.asarray(arrays["time"], dtype=np.float64),
        data={name: arrays[name] for name in channels},
        channels=channels,
        complete=bool(meta.get("complete", False)),
        run=dict(meta.get("run", {})),
    )
