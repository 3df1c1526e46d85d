"""Recording of per-step sensor readings to ``.npz`` (or ``.parquet`` with pyarrow).

A recording holds one row per recorded physics step: the step counter ``step`` (int64),
the simulation time ``time`` (float64, seconds) and any number of named *channels*, each
a fixed-shape array per step (e.g. ``"/World/robot/hand/imu.linear_acceleration"`` with
shape ``(3,)``). Channel metadata (sensor path, sensor kind, field, unit) and run-level
metadata are stored as JSON next to the arrays.

Recording cost: each appended row is copied into preallocated per-channel chunk buffers
(:data:`CHUNK_ROWS` rows per chunk), so a step costs about a ``memcpy`` of its arrays; no
buffer is ever regrown or copied while recording. :meth:`Recorder.begin_row` /
:meth:`Recorder.end_row` let a writer copy each value straight into its channel's buffer
(no per-row dict), and with ``background_flush`` the periodic flushes run on a helper
thread beside the caller's loop.

Crash safety: the file on disk is always a complete, loadable recording, replaced
atomically (temp file in the destination directory, then ``os.replace``). Every
``flush_every`` rows (rate-limited by ``min_flush_interval``) an ``.npz`` gets the rows since
the previous flush as one new *segment*: the new file is the previous file's array members
copied byte for byte (in-kernel ``copy_file_range`` where available, no re-encoding) plus the
segment's members and fresh metadata, so a flush costs a file copy plus the new rows rather
than a re-serialisation of the whole run (one flush at a time; with ``background_flush`` the
file is the last completed flush while the next one is written). :meth:`Recorder.close` is
called from ``finally`` blocks by the run loop and writes the final, consolidated file, so
in practice all completed steps are on disk, marked ``complete = False`` after an
interruption.

File layout (``.npz``): arrays ``step`` (N,), ``time`` (N,), one array per channel with
shape ``(N, *channel_shape)``, and ``__meta__``: a 0-d unicode array holding JSON (deflate
compressed after :meth:`Recorder.close`). An interrupted run's file may instead hold
segments: the metadata lists ``"segments": [[row_start, row_stop], ...]`` and segment ``i``
stores each array under ``"__seg%06d__/<name>"``; :func:`load_recording` concatenates them,
so either layout loads to the same :class:`Recording` (``numpy.load`` reads both; no
pickling is involved).

Parquet layout: one row per step, columns ``step``, ``time`` and one column per channel
(scalars as-is, arrays flattened to fixed-size lists in C order); the JSON metadata and each
channel's shape are stored in the schema metadata under ``b"simrt"``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import tempfile
import threading
import time as time_module
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from runtime.errors import SimrtError

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "CHUNK_ROWS",
    "ChannelInfo",
    "check_recording_path",
    "Recorder",
    "Recording",
    "load_recording",
]

_LOG = logging.getLogger(__name__)
# (segments, rows flushed, members written, bytes reused by the next flush)
_SegmentResult = tuple[list[tuple[int, int]], int, list[zipfile.ZipInfo], int]

FORMAT_NAME = "simrt-recording"
FORMAT_VERSION = 1
_META_KEY = "__meta__"
_RESERVED = frozenset({"step", "time", _META_KEY})
_SUFFIXES = (".npz", ".parquet")
_SEGMENT_PREFIX = "__seg"
CHUNK_ROWS = 256
"""Rows per in-memory chunk buffer of :class:`Recorder`."""
_PAGE_BYTES = 4096  # touch stride of prepared chunks (pages are at least this large)
FINAL_COMPRESS_LEVEL = 1
"""zlib level of the final ``.npz`` (1: ~5x faster than numpy's default 6, similar size)."""


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
    """Collects per-step rows in preallocated chunks and keeps a valid file on disk.

    Usage::

        rec = Recorder("out/run.npz", flush_every=250, meta={"scene": "..."})
        rec.add_channel(ChannelInfo("imu.linear_acceleration", (3,), "float32", ...))
        for k in ...:
            rec.append(step=k, time=t, values={"imu.linear_acceleration": a})
        rec.close(complete=True)

    or, without a dict per row, write each channel's row in place (``slot`` is what
    :meth:`add_channel` returned)::

        buffers, row = rec.begin_row()
        buffers[slot][row] = a  # every channel, zeros where there is no value
        rec.end_row(step=k, time=t)

    Rows are copied into per-channel chunk buffers of ``chunk_rows`` rows each (allocated
    once per chunk, never regrown or copied). A periodic flush of an ``.npz`` appends only
    the rows since the previous flush as one *segment* (see the module docstring); the
    final :meth:`close` writes the consolidated, compressed file.

    Args:
        path: destination file (``.npz`` or ``.parquet``); its directory is created.
            None keeps the rows in memory only (:meth:`flush` writes nothing).
        flush_every: flush the file every this many appended rows (>= 1).
        meta: JSON-serialisable run metadata stored in the file.
        min_flush_interval: skip a periodic flush when the previous one was less than this
            many wall-clock seconds ago, or less than 9x the previous flush's duration (keeps
            the flush cost of long runs near 10 % of the wall time; the final
            :meth:`close` always writes everything). 0 flushes strictly every
            ``flush_every`` rows.
        expected_rows: rows the run expects; only caps the first chunk's size for short
            runs (0: unknown).
        chunk_rows: rows per in-memory chunk buffer (>= 1).
        background_flush: write the periodic segments of an ``.npz`` on a helper thread
            (one at a time; a due flush waits while the previous one is written) instead
            of inside :meth:`end_row` / :meth:`append`. The file on disk is always the
            last completed flush; :meth:`flush` and :meth:`close` wait for a pending
            segment first. A failed background write is raised by the next row.
        prepare_chunks: allocate the next chunk buffer on a helper thread while the
            current one fills, its memory pages already mapped (keeps first-touch page
            faults off the caller's thread; costs one spare chunk of memory; none past
            ``expected_rows``).

    Raises:
        SimrtError: unsupported suffix, or ``.parquet`` without pyarrow installed.
        ValueError: ``flush_every < 1`` or ``chunk_rows < 1``.
    """

    # tests: fill new chunk buffers with 0xFF bytes, so that a channel row left unwritten
    # (instead of zeroed) shows up as NaN / -1 / True rather than as zeros by chance
    _POISON_NEW_CHUNKS = False

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        *,
        flush_every: int = 250,
        meta: Mapping[str, Any] | None = None,
        min_flush_interval: float = 0.0,
        expected_rows: int = 0,
        chunk_rows: int = CHUNK_ROWS,
        background_flush: bool = False,
        prepare_chunks: bool = False,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self._format = _check_suffix(self.path) if self.path is not None else ""
        if int(flush_every) < 1:
            raise ValueError(f"flush_every must be >= 1, got {flush_every}")
        if int(chunk_rows) < 1:
            raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
        self.flush_every = int(flush_every)
        self.meta: dict[str, Any] = dict(meta or {})
        self._channels: dict[str, ChannelInfo] = {}
        self._chunk_rows = int(chunk_rows)
        expected = int(expected_rows)
        self._first_chunk_rows = min(self._chunk_rows, expected) if expected > 0 else None
        # chunk list: each chunk maps "step", "time" and every channel to (rows, *shape)
        self._chunks: list[dict[str, np.ndarray]] = []
        self._chunk_starts: list[int] = []
        self._current: dict[str, np.ndarray] | None = None
        self._buffers: list[np.ndarray] = []  # the current chunk's channel buffers by slot
        self._background = bool(background_flush)
        self._prepare_chunks = bool(prepare_chunks)
        self._expected_rows = int(expected_rows)
        self._spare: tuple[threading.Thread, dict[str, Any]] | None = None
        self._writer: tuple[threading.Thread, dict[str, Any]] | None = None
        self._current_row = 0
        self._current_len = 0
        self._count = 0
        self._since_flush = 0
        self._closed = False
        self.flush_count = 0
        self.min_flush_interval = float(min_flush_interval)
        self._last_flush = -math.inf
        self._flush_seconds = 0.0
        # incremental .npz state: rows on disk, their segments, the members written so far
        # and the byte offset of the metadata member (everything before it is reused)
        self._flushed_rows = 0
        self._segments: list[tuple[int, int]] = []
        self._members: list[zipfile.ZipInfo] = []
        self._reuse_bytes = 0
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

    def add_channel(self, info: ChannelInfo) -> int:
        """Register a channel; must happen before the first row.

        Returns:
            The channel's slot: its index in the buffer list of :meth:`begin_row`.

        Raises:
            ValueError: duplicate or reserved name, or channels added after rows.
        """
        if self._count or self._chunks:
            raise ValueError(f"channel {info.name!r} added after rows were recorded")
        if info.name in _RESERVED or info.name in self._channels:
            raise ValueError(f"channel name {info.name!r} is reserved or already used")
        np.dtype(info.dtype)  # validates the dtype name
        self._channels[info.name] = info
        return len(self._channels) - 1

    # ------------------------------------------------------------------ rows
    def _allocate_chunk(self, rows: int) -> dict[str, np.ndarray]:
        # np.empty: no up-front zeroing pass over the chunk; every row of every channel is
        # written (values, or zeros for channels without one) before it can be read, and
        # rows past the last appended one are never read
        chunk = {
            "step": np.empty(rows, dtype=np.int64),
            "time": np.empty(rows, dtype=np.float64),
        }
        for name, info in self._channels.items():
            chunk[name] = np.empty((rows, *info.shape), dtype=info.dtype)
        return chunk

    def _new_chunk(self) -> None:
        rows = self._chunk_rows
        if not self._chunks and self._first_chunk_rows is not None:
            rows = self._first_chunk_rows
        chunk = self._take_spare(rows)
        if chunk is None:
            chunk = self._allocate_chunk(rows)
        if self._POISON_NEW_CHUNKS:
            for buffer in chunk.values():
                buffer.view(np.uint8).fill(0xFF)
        self._buffers = [chunk[name] for name in self._channels]
        self._chunks.append(chunk)
        self._chunk_starts.append(self._count)
        self._current = chunk
        self._current_row = 0
        self._current_len = rows
        if self._prepare_chunks and (
            self._expected_rows <= 0 or self._count + rows < self._expected_rows
        ):
            self._start_spare(self._chunk_rows)

    def _start_spare(self, rows: int) -> None:
        """Allocate the next chunk on a helper thread and touch each of its memory pages.

        A fresh chunk's first writes would otherwise each take a page fault on the
        caller's thread (several times the cost of the copy itself).
        """
        box: dict[str, Any] = {}

        def run() -> None:
            chunk = self._allocate_chunk(rows)
            for buffer in chunk.values():
                flat = buffer.reshape(-1).view(np.uint8)
                flat[::_PAGE_BYTES] = 0  # one write per page: the kernel maps it now
            box["chunk"] = chunk

        thread = threading.Thread(target=run, name="simrt-recorder-chunk")
        thread.start()
        self._spare = (thread, box)

    def _take_spare(self, rows: int) -> dict[str, np.ndarray] | None:
        """The chunk prepared by :meth:`_start_spare` (None: none, or of another size)."""
        if self._spare is None:
            return None
        thread, box = self._spare
        thread.join()
        self._spare = None
        chunk = box.get("chunk")
        if chunk is None or chunk["step"].shape[0] != rows:
            return None
        return chunk

    def append(self, step: int, time: float, values: Mapping[str, Any]) -> None:
        """Append one row (copies the values into the current chunk buffers).

        Args:
            step: physics step counter of the row.
            time: simulation time of the row [s].
            values: channel name -> value broadcastable to the channel shape. Channels
                missing from ``values`` are recorded as zeros (False).

        Raises:
            KeyError: a value for an unregistered channel.
            ValueError: recorder closed, or a value of the wrong shape.
        """
        self.begin_row()
        chunk = self._current
        assert chunk is not None
        row = self._current_row
        name = ""
        try:
            for name, value in values.items():
                chunk[name][row] = value
        except (KeyError, ValueError, TypeError) as exc:
            for buffer in chunk.values():  # a failed row leaves no stale values behind
                buffer[row] = 0
            if name not in self._channels:
                raise KeyError(f"unknown channel {name!r}") from None
            raise ValueError(
                f"channel {name!r}: value of shape {np.shape(value)} does not fit "
                f"{self._channels[name].shape}"
            ) from exc
        if len(values) != len(self._channels) or "step" in values or "time" in values:
            for name, buffer in chunk.items():  # channels missing from the row: zeros
                if name not in values:
                    buffer[row] = 0
        self.end_row(step, time)

    def begin_row(self) -> tuple[list[np.ndarray], int]:
        """Buffers to write the next row into in place (the run loop's path; no dict).

        Usage: ``buffers, row = rec.begin_row()``, then ``buffers[slot][row] = value`` for
        every channel (``slot`` as returned by :meth:`add_channel`; write zeros for a
        channel without a value: the buffers are not pre-zeroed), then
        :meth:`end_row`. A row that is not ended (e.g. an error while writing it) is not
        recorded; the next row overwrites it.

        Returns:
            ``(buffers, row)``: the current chunk's buffer of every channel in slot order
            (shape ``(chunk_rows, *channel_shape)``) and the row index to write.

        Raises:
            ValueError: recorder closed.
        """
        if self._closed:
            raise ValueError("recorder is closed")
        if self._current is None or self._current_row >= self._current_len:
            self._new_chunk()
        return self._buffers, self._current_row

    def end_row(self, step: int, time: float) -> None:
        """Record the row written in place after :meth:`begin_row` (may flush the file).

        Args:
            step: physics step counter of the row.
            time: simulation time of the row [s].
        """
        chunk = self._current
        assert chunk is not None, "end_row() without begin_row()"
        row = self._current_row
        chunk["step"][row] = step
        chunk["time"][row] = time
        self._current_row = row + 1
        self._count += 1
        self._since_flush += 1
        if self._since_flush < self.flush_every:
            return
        if self._writer is not None:
            if self._writer[0].is_alive():
                return  # the previous segment is still being written: try again next row
            self._wait_for_writer()
        if self.min_flush_interval <= 0.0 or time_module.monotonic() - self._last_flush >= max(
            self.min_flush_interval, 9.0 * self._flush_seconds
        ):
            if self._background and self.path is not None and self._format == ".npz":
                self._start_background_segment()
            else:
                self.flush()

    def _rows(self, key: str, start: int, stop: int) -> np.ndarray:
        """Rows ``[start, stop)`` of one array (a view when they lie in one chunk)."""
        parts = self._parts(key, start, stop)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _parts(self, key: str, start: int, stop: int) -> list[np.ndarray]:
        """Rows ``[start, stop)`` of one array as views into the chunk buffers, in order.

        An empty range gives one empty array.
        """
        parts = []
        for chunk, first in zip(self._chunks, self._chunk_starts, strict=True):
            last = first + chunk[key].shape[0]
            if last <= start or first >= stop:
                continue
            parts.append(chunk[key][max(start, first) - first : min(stop, last) - first])
        if parts:
            return parts
        if key == "step":
            return [np.zeros(0, dtype=np.int64)]
        if key == "time":
            return [np.zeros(0, dtype=np.float64)]
        info = self._channels[key]
        return [np.zeros((0, *info.shape), dtype=info.dtype)]

    def _arrays(self, start: int, stop: int) -> dict[str, np.ndarray]:
        keys = ("step", "time", *self._channels)
        return {key: self._rows(key, start, stop) for key in keys}

    def _array_parts(self, start: int, stop: int) -> dict[str, list[np.ndarray]]:
        keys = ("step", "time", *self._channels)
        return {key: self._parts(key, start, stop) for key in keys}

    # ------------------------------------------------------------------ output
    def _meta_json(self, complete: bool, segments: list[tuple[int, int]] | None = None) -> str:
        meta: dict[str, Any] = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "complete": bool(complete),
            "rows": self._count if segments is None else (segments[-1][1] if segments else 0),
            "channels": {name: info.to_json() for name, info in self._channels.items()},
            "run": self.meta,
        }
        if segments is not None:
            meta["segments"] = [list(s) for s in segments]
        return json.dumps(meta, default=_json_default)

    def flush(self, *, complete: bool = False, final: bool = False) -> None:
        """Write the rows recorded so far to the destination, atomically.

        A periodic ``.npz`` flush writes a new file made of the previous file's array
        members (copied byte for byte, without re-encoding) plus one segment holding the
        rows since the previous flush; the ``final`` flush writes one consolidated,
        compressed array per channel. ``.parquet`` files are rewritten whole.

        Args:
            complete: mark the recording complete (the run reached its last step).
            final: last write of the run: consolidated, compressed and fsync'ed.

        Raises:
            OSError: the write failed (for a non-final flush: also a failed background
                segment write; the final write supersedes one, which is only logged).
        """
        self._wait_for_writer(raise_errors=not final)
        self._since_flush = 0
        started = time_module.monotonic()
        self._last_flush = started
        if self.path is None:
            return
        if self._format == ".npz" and not final:
            self._flush_segment(complete)
        elif self._format == ".npz":
            arrays = self._array_parts(0, self._count)
            _write_npz_atomic(self.path, arrays, self._meta_json(complete), final=True)
            # the file no longer has segments: a later periodic flush starts over
            self._flushed_rows, self._segments = 0, []
            self._members, self._reuse_bytes = [], 0
        else:
            arrays = self._arrays(0, self._count)
            meta_json = self._meta_json(complete)
            _write_parquet_atomic(self.path, arrays, self._channels, meta_json)
        self.flush_count += 1
        self._flush_seconds = time_module.monotonic() - started

    def _flush_segment(self, complete: bool) -> None:
        self._apply_segment(*self._segment_job(complete)())

    def _segment_job(self, complete: bool) -> Callable[[], _SegmentResult]:
        """Prepare the next segment write; the returned call does the file I/O.

        Everything the write needs is taken now (row views of the chunk buffers, which
        are never written again, the metadata JSON and the reused members), so the call
        may run on another thread while rows keep being appended.
        """
        assert self.path is not None
        start, stop = self._flushed_rows, self._count
        segments = list(self._segments)
        new_arrays: dict[str, Any] = {}
        if stop > start or not segments:
            index = len(segments)
            segments.append((start, stop))
            new_arrays = {
                _segment_key(index, key): parts
                for key, parts in self._array_parts(start, stop).items()
            }
        meta_json = self._meta_json(complete, segments)
        path, reuse_bytes, members = self.path, self._reuse_bytes, self._members
        source = path if reuse_bytes else None

        def write() -> _SegmentResult:
            written, reuse = _write_npz_appended(
                path, source, reuse_bytes, members, new_arrays, meta_json
            )
            return segments, stop, written, reuse

        return write

    def _apply_segment(
        self,
        segments: list[tuple[int, int]],
        stop: int,
        members: list[zipfile.ZipInfo],
        reuse: int,
    ) -> None:
        self._members, self._reuse_bytes = members, reuse
        self._segments = segments
        self._flushed_rows = stop

    def _start_background_segment(self) -> None:
        """Periodic ``.npz`` flush on a helper thread (the run loop keeps stepping)."""
        self._since_flush = 0
        started = time_module.monotonic()
        self._last_flush = started
        write = self._segment_job(complete=False)
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["result"] = write()
            except BaseException as exc:  # noqa: BLE001 - re-raised on the owner's thread
                box["error"] = exc
            box["seconds"] = time_module.monotonic() - started

        thread = threading.Thread(target=run, name="simrt-recorder-flush")
        thread.start()
        self._writer = (thread, box)

    def _wait_for_writer(self, raise_errors: bool = True) -> None:
        """Join a background segment write and take over its result (or its error)."""
        if self._writer is None:
            return
        thread, box = self._writer
        thread.join()
        self._writer = None
        self._flush_seconds = float(box.get("seconds", 0.0))
        error = box.get("error")
        if error is None:
            self._apply_segment(*box["result"])
            self.flush_count += 1
        elif raise_errors:
            raise error
        else:
            _LOG.warning(
                "%s: background flush failed (%s); writing the file again", self.path, error
            )

    def snapshot(
        self, *, complete: bool = False, channels: Iterable[str] | None = None
    ) -> Recording:
        """The rows recorded so far as a :class:`Recording` (copies; no file I/O).

        Args:
            complete: value of the recording's ``complete`` flag.
            channels: only these channels (default: all), e.g. what a summary reads.

        Returns:
            The recording.
        """
        names = list(self._channels) if channels is None else list(channels)

        def copy(key: str) -> np.ndarray:
            parts = self._parts(key, 0, self._count)
            return parts[0].copy() if len(parts) == 1 else np.concatenate(parts)

        return Recording(
            step=copy("step"),
            time=copy("time"),
            data={name: copy(name) for name in names},
            channels={name: self._channels[name] for name in names},
            complete=complete,
            run=json.loads(json.dumps(self.meta, default=_json_default)),
        )

    def close(self, *, complete: bool = True) -> None:
        """Final flush (``complete`` marks a run that reached its last step); idempotent."""
        if self._closed:
            return
        self._take_spare(0)  # a chunk being prepared: not needed any more
        self.flush(complete=complete, final=True)
        self._closed = True


def _segment_key(index: int, key: str) -> str:
    """Member name of one array of one segment of an incremental ``.npz``."""
    return f"{_SEGMENT_PREFIX}{index:06d}/{key}"


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _umask_mode() -> int:
    """Permissions of a newly created regular file under the current umask.

    Linux reports the umask in ``/proc/self/status``; reading it there leaves the
    process-wide umask alone, which matters while a background flush runs beside the
    caller's thread. Elsewhere the umask is set and restored.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
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


def _write_member(zf: zipfile.ZipFile, key: str, array: Any) -> None:
    """One ``.npy`` member (compression as set on ``zf``).

    ``array`` is an array or a list of row blocks (same dtype and row shape, C-contiguous
    views into the chunk buffers) written one after another as one array, without joining
    them in memory first.
    """
    with zf.open(key + ".npy", "w", force_zip64=True) as stream:
        if not isinstance(array, list):
            np.lib.format.write_array(stream, np.asarray(array), allow_pickle=False)
            return
        first = array[0]
        header = {
            "descr": np.lib.format.dtype_to_descr(first.dtype),
            "fortran_order": False,
            "shape": (sum(int(part.shape[0]) for part in array), *first.shape[1:]),
        }
        np.lib.format.write_array_header_1_0(stream, header)
        for part in array:
            if part.size:
                stream.write(memoryview(np.ascontiguousarray(part)).cast("B"))


def _hold_replaced(path: Path) -> int | None:
    """Open ``path`` (about to be replaced) so its blocks are not freed by ``os.replace``."""
    if os.name != "posix":  # replacing an open file is a POSIX guarantee
        return None
    try:
        return os.open(path, os.O_RDONLY)
    except OSError:
        return None


def _release_in_background(fd: int | None) -> None:
    """Close a held, replaced file on a helper thread.

    The kernel frees a large unlinked file's blocks at its last close, which would otherwise
    stall the step loop.
    """
    if fd is not None:
        threading.Thread(
            target=os.close, args=(fd,), name="simrt-recorder-release", daemon=True
        ).start()


def _copy_prefix(source: Path, target: Any, count: int) -> None:
    """Copy the first ``count`` bytes of ``source`` to offset 0 of the open ``target``."""
    with open(source, "rb") as src:
        copied = 0
        try:
            while copied < count:
                n = os.copy_file_range(
                    src.fileno(), target.fileno(), count - copied, copied, copied
                )
                if n <= 0:
                    break
                copied += n
        except (AttributeError, OSError):
            pass  # no in-kernel copy here: fall back to read/write
        if copied < count:
            src.seek(copied)
            target.seek(copied)
            while copied < count:
                block = src.read(min(count - copied, 16 << 20))
                if not block:
                    raise OSError(f"{source}: shorter than expected ({copied} < {count} bytes)")
                target.write(block)
                copied += len(block)
            target.flush()
    target.seek(count)


def _write_npz_appended(
    path: Path,
    source: Path | None,
    reuse_bytes: int,
    members: list[zipfile.ZipInfo],
    arrays: Mapping[str, Any],
    meta_json: str,
) -> tuple[list[zipfile.ZipInfo], int]:
    """Write ``source``'s reused members plus ``arrays`` and new metadata to ``path``.

    The first ``reuse_bytes`` bytes of ``source`` (the local headers and data of
    ``members``, written by a previous call) are copied unchanged to the same offsets of a
    temp file; the new members, the metadata member and a central directory listing every
    member follow; the temp file then atomically replaces ``path``.

    Returns:
        ``(members, reuse_bytes)`` for the next call: every array member written so far
        and the offset of the metadata member in the new file.
    """
    tmp = temp_path_beside(path, ".tmp.npz")
    try:
        with open(tmp, "r+b") as stream:
            if source is not None and reuse_bytes:
                _copy_prefix(source, stream, reuse_bytes)
            with zipfile.ZipFile(stream, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
                for info in members:  # reused members: central directory entries only
                    zf.filelist.append(info)
                    zf.NameToInfo[info.filename] = info
                for key, array in arrays.items():
                    _write_member(zf, key, array)
                _write_member(zf, _META_KEY, np.array(meta_json))
                meta_info = zf.getinfo(_META_KEY + ".npy")
                written = [info for info in zf.infolist() if info is not meta_info]
        held = _hold_replaced(path)
        try:
            os.replace(tmp, path)
        finally:
            _release_in_background(held)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return written, meta_info.header_offset


def _write_npz_atomic(
    path: Path, arrays: Mapping[str, Any], meta_json: str, final: bool = True
) -> None:
    """Write one array member per key plus the metadata (deflated when ``final``)."""
    tmp = temp_path_beside(path, ".tmp.npz")
    compression = zipfile.ZIP_DEFLATED if final else zipfile.ZIP_STORED
    level = FINAL_COMPRESS_LEVEL if final else None
    try:
        with open(tmp, "r+b") as stream:
            with zipfile.ZipFile(
                stream, "w", compression, allowZip64=True, compresslevel=level
            ) as zf:
                for key, array in arrays.items():
                    _write_member(zf, key, array)
                _write_member(zf, _META_KEY, np.array(meta_json))
            stream.flush()
            if final:  # durability against power loss; atomicity comes from os.replace
                os.fsync(stream.fileno())
        held = _hold_replaced(path)
        try:
            os.replace(tmp, path)
        finally:
            _release_in_background(held)
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


def _join_segments(path: Path, npz: Any, count: int, meta: Mapping[str, Any]) -> dict:
    """Concatenate the per-segment arrays of an incremental ``.npz``."""
    arrays: dict[str, np.ndarray] = {}
    names = set(npz.files)
    for key in ("step", "time", *meta.get("channels", {})):
        parts = []
        for index in range(count):
            member = _segment_key(index, key)
            if member not in names:
                raise SimrtError(f"{path}: recording lacks segment array {member!r}")
            parts.append(npz[member])
        if parts:
            arrays[key] = np.concatenate(parts) if len(parts) > 1 else parts[0]
    return arrays


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
                segments = meta.get("segments")
                if segments is None:
                    arrays = {key: npz[key] for key in npz.files if key != _META_KEY}
                else:
                    arrays = _join_segments(path, npz, len(segments), meta)
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
    channels = {name: ChannelInfo.from_json(name, info) for name, info in meta["channels"].items()}
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
