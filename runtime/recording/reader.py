"""Reading recordings: the streaming store chunk by chunk, or all at once.

:func:`open_recording` opens a store (or an ``.npz`` / ``.parquet`` recording) and returns a
:class:`RecordingReader` that trusts only committed rows: the rows named by the store's
commit log (or by the closed store's attributes). Rows of a chunk that cannot be read (torn
by a kill, deleted, bit-flipped) end the readable data there, with a logged warning.
:func:`load_recording` loads every readable row into a :class:`Recording`. Anything that is
not a readable recording raises one :class:`~runtime.errors.SimrtError` naming the path and
the problem, never a library traceback.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from runtime.errors import SimrtError
from runtime.recording._stored import StoredArray
from runtime.recording.channels import FORMAT_NAME, FORMAT_VERSION, ChannelInfo, array_key
from runtime.recording.legacy import read_file
from runtime.recording.store import COMMIT_LOG

__all__ = ["Recording", "RecordingReader", "load_recording", "open_recording"]

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Recording:
    """A recording loaded into memory.

    Attributes:
        step: physics step counters, shape (N,), int64.
        time: simulation times [s], shape (N,), float64.
        data: channel name -> array of shape (N, *channel_shape).
        channels: channel name -> :class:`ChannelInfo`.
        complete: True when the run finished all requested steps.
        run: run-level metadata (scene, dt, robot, disabled sensors, ...).
        reason: why an incomplete run stopped (None when unknown or complete).
        damage: what ended the readable rows before the committed ones (None: nothing).
    """

    step: np.ndarray
    time: np.ndarray
    data: dict[str, np.ndarray]
    channels: dict[str, ChannelInfo]
    complete: bool
    run: dict[str, Any]
    reason: str | None = None
    damage: str | None = None

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


class RecordingReader:
    """Committed rows of one recording, read chunk by chunk.

    Attributes:
        path: the recording.
        rows: readable rows (committed, and every chunk up to them readable as far as
            checked: :meth:`iter_chunks` may end earlier at a damaged chunk).
        complete: the run finished all requested steps (False once damage ended the rows).
        damage: what ended the readable rows early (None: nothing so far).
        reason: why an incomplete run stopped (None if unknown).
        run: run metadata.
        channels: channel name -> :class:`ChannelInfo` (recording order).
        chunk_rows: rows per stored chunk (the natural read unit).
    """

    def __init__(
        self,
        path: Path,
        rows: int,
        complete: bool,
        run: Mapping[str, Any],
        channels: Mapping[str, ChannelInfo],
        chunk_rows: int,
        arrays: Mapping[str, Any],
        reason: str | None = None,
    ) -> None:
        self.path = path
        self.rows = int(rows)
        self.complete = bool(complete)
        self.reason = reason
        self.run = dict(run)
        self.channels = dict(channels)
        self.chunk_rows = max(1, int(chunk_rows))
        self._arrays = dict(arrays)  # name (incl. step/time) -> store array or ndarray
        # array key -> chunk index -> accepted checksums (the commit log's; stores only)
        self._checksums: dict[str, dict[int, set[str]]] = {}
        self.damage: str | None = None  # what ended the readable rows early, if anything

    @property
    def meta(self) -> dict[str, Any]:
        """The run metadata (alias of :attr:`run`)."""
        return self.run

    def __len__(self) -> int:
        return self.rows

    def iter_chunks(
        self, names: Sequence[str] | None = None, chunk_rows: int | None = None
    ) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
        """Yield ``(first_row, {"step", "time", name: rows})`` block by block.

        Args:
            names: channels to read (default all); ``step`` and ``time`` always come.
            chunk_rows: rows per block (default: the store's chunk size).

        A block that cannot be read ends the iteration (a warning names the rows lost) and
        lowers :attr:`rows` to the rows read.
        """
        wanted = ["step", "time", *(self.channels if names is None else names)]
        for name in wanted:
            if name not in self._arrays:
                raise KeyError(f"{self.path}: no channel {name!r}")
        block = max(1, int(chunk_rows or self.chunk_rows))
        start = 0
        previous = None
        while start < self.rows:
            stop = min(self.rows, start + block)
            try:
                out = {name: self._read_block(name, start, stop) for name in wanted}
                previous = _check_steps(out["step"], start, previous)
            except _DamagedChunk as damage:
                _LOG.warning(
                    "%s: rows %d.. unreadable (%s); %d of %d committed rows kept",
                    self.path,
                    start,
                    damage,
                    start,
                    self.rows,
                )
                # what is read is not the whole run: never called complete
                self.damage = f"rows {start}.. of {self.rows} unreadable ({damage})"
                self.rows, self.complete = start, False
                return
            yield start, out
            start = stop

    def read(self, name: str, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Rows ``[start, stop)`` of one channel (or ``step`` / ``time``).

        Raises:
            KeyError: no such channel.
            SimrtError: the rows are damaged.
        """
        if name not in self._arrays:
            raise KeyError(f"{self.path}: no channel {name!r}")
        stop = self.rows if stop is None else min(int(stop), self.rows)
        start = max(0, min(int(start), stop))
        try:
            return self._read_block(name, start, stop)
        except _DamagedChunk as damage:
            raise SimrtError(f"{self.path}: channel {name!r} unreadable: {damage}") from None

    def load(self, names: Sequence[str] | None = None, every: int = 1) -> Recording:
        """Every readable row in memory (of ``names``, default all channels).

        Args:
            names: channels to load (default all).
            every: keep rows 0, every, 2 * every, ... (subsampling long runs).
        """
        selected = list(self.channels if names is None else names)
        every = max(1, int(every))
        parts: dict[str, list[np.ndarray]] = {name: [] for name in ["step", "time", *selected]}
        for start, block in self.iter_chunks(selected):
            first = (-start) % every
            for name, rows in block.items():
                parts[name].append(rows[first::every] if every > 1 else rows)
        arrays = {
            name: np.concatenate(chunks) if chunks else self._empty(name)
            for name, chunks in parts.items()
        }
        return Recording(
            step=arrays.pop("step").astype(np.int64, copy=False),
            time=arrays.pop("time").astype(np.float64, copy=False),
            data=arrays,
            channels={name: self.channels[name] for name in selected},
            complete=self.complete,
            run=self.run,
            reason=self.damage
            if self.reason is None
            else f"{self.damage}; {self.reason}"
            if self.damage is not None
            else self.reason,
            damage=self.damage,
        )

    def _empty(self, name: str) -> np.ndarray:
        info = self.channels.get(name)
        if info is None:
            return np.zeros(0, np.int64 if name == "step" else np.float64)
        return np.zeros((0, *info.shape), dtype=info.dtype)

    def _read_block(self, name: str, start: int, stop: int) -> np.ndarray:
        source = self._arrays[name]
        if isinstance(source, np.ndarray):
            return source[start:stop]
        key = array_key(name)
        # (the log's checksums are of the writer's chunks: arrays it wrote, as it wrote them)
        ours = isinstance(source, StoredArray) and source.chunks[0] == self.chunk_rows
        checksums = self._checksums.get(key) if ours else None
        _check_chunk_files(self.path, key, source, start, stop, checksums)
        try:
            return np.asarray(source[start:stop])
        except Exception as error:  # noqa: BLE001 - any codec / IO failure is damage
            raise _DamagedChunk(f"{type(error).__name__}: {error}") from None


class _DamagedChunk(Exception):
    pass


def _check_steps(steps: np.ndarray, start: int, previous: int | None) -> int | None:
    """The last step of a block whose steps increase (from ``previous``), else damage."""
    if not len(steps):
        return previous
    values = steps.astype(np.int64, copy=False)
    down = np.nonzero(np.diff(values) <= 0)[0]
    if previous is not None and values[0] <= previous:
        raise _DamagedChunk(f"step {values[0]} at row {start} does not follow step {previous}")
    if len(down):
        at = int(down[0]) + 1
        raise _DamagedChunk(
            f"step {values[at]} at row {start + at} does not follow step {values[at - 1]}"
        )
    return int(values[-1])


def _check_chunk_files(
    root: Path,
    key: str,
    array: Any,
    start: int,
    stop: int,
    checksums: dict[int, set[str]] | None = None,
) -> None:
    """Raise :class:`_DamagedChunk` when a chunk file of rows [start, stop) is not the one.

    The file must exist and be the one the commit log names for this array and index.

    Zarr reads a missing chunk as its fill value, which would pass zeros off as data; the
    writer writes every chunk (empty ones too), so a missing file is damage. A file with a
    valid checksum of its own may still be another array's or another index's (swapped,
    copied): its checksum must be one ``checksums`` accepts for its index.
    """
    if 0 in tuple(array.shape[1:]):
        return  # rows of zero size have no chunk files
    rows = array.chunks[0]
    tail = (0,) * (len(array.shape) - 1)
    # (arrays read through zarr name their chunk files by their own key encoding)
    metadata = None if isinstance(array, StoredArray) else getattr(array, "metadata", None)
    encode = getattr(metadata, "encode_chunk_key", None)
    for index in range(start // rows, (max(stop, start + 1) - 1) // rows + 1):
        if encode is not None:
            name = encode((index, *tail))
        else:
            name = array.chunk_name(index)
        if not os.path.exists(root / key / name):
            raise _DamagedChunk(f"chunk file {key}/{name} is missing")
        if checksums and index not in checksums:  # (every chunk written is logged)
            raise _DamagedChunk(f"chunk file {key}/{name} has no checksum in the commit log")
        if checksums:
            with open(root / key / name, "rb") as handle:
                handle.seek(0, os.SEEK_END)
                handle.seek(max(0, handle.tell() - 4))
                found = handle.read(4).hex()
            if found not in checksums[index]:
                raise _DamagedChunk(
                    f"chunk file {key}/{name} is not the chunk the commit log names for it "
                    "(swapped, copied or replaced)"
                )


def open_recording(path: str | os.PathLike[str]) -> RecordingReader:
    """Open a recording for reading: a store directory, an ``.npz`` or a ``.parquet``.

    Raises:
        SimrtError: the path does not exist or is not a readable simrt recording (the
            message names the file and what is wrong).
    """
    path = Path(path)
    if not path.exists():
        raise SimrtError(f"{path}: no such recording")
    if path.is_dir():
        return _open_store(path)
    single = read_file(path)  # .npz / .parquet
    return RecordingReader(
        path,
        single.rows,
        single.complete,
        single.run,
        single.channels,
        max(1, single.rows),
        single.arrays,
        single.reason,
    )


def load_recording(path: str | os.PathLike[str]) -> Recording:
    """Load every readable row of a recording (see :func:`open_recording`).

    Raises:
        SimrtError: not a readable recording.
    """
    return open_recording(path).load()


def _open_store(path: Path) -> RecordingReader:
    if not (path / "zarr.json").is_file():
        raise SimrtError(f"{path}: not a simrt recording (no zarr.json: not a Zarr store)")
    try:
        document = _document(path)
        if document.get("zarr_format") != 3 or document.get("node_type") != "group":
            raise ValueError("not a Zarr v3 group")
        attrs = dict(document.get("attributes") or {})
    except Exception as error:  # noqa: BLE001 - any unreadable document is one error
        raise SimrtError(f"{path}: recording metadata unreadable ({error})") from None
    simrt = attrs.get("simrt")
    if not isinstance(simrt, dict) or simrt.get("format") != FORMAT_NAME:
        raise SimrtError(f"{path}: not a simrt recording (no simrt metadata in zarr.json)")
    version = simrt.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION or version < 2:
        raise SimrtError(
            f"{path}: recording format version {version!r} is not readable by this simrt "
            f"(reads versions 1-{FORMAT_VERSION})"
        )
    names = simrt.get("channels")
    run = simrt.get("run", {})
    if not isinstance(names, list) or not isinstance(run, dict):
        raise SimrtError(f"{path}: recording metadata damaged (channels / run)")
    hint = simrt.get("arrays")
    log = _read_commit_log(path, hint if isinstance(hint, list) else None)
    committed, complete, reason, paths = log.rows, log.complete, log.reason, log.paths
    unchecked = None  # why the chunks cannot be checked against the log (never complete)
    if committed is None:
        committed = _rows_without_log(path, simrt)
        if committed:
            unchecked = "the commit log is missing: chunks not checked against it"
    elif log.unverified:
        unchecked = "commit log lines damaged: chunks not checked against it"
        _LOG.warning("%s: %s", path, unchecked)
    if complete is None:  # (no closing line in the log: the group's word, for its rows only)
        complete = bool(simrt.get("complete")) and simrt.get("rows") == committed
    reason = simrt.get("reason") if reason is None else reason
    rows = committed or 0
    arrays: dict[str, Any] = {}
    channels: dict[str, ChannelInfo] = {}
    for name in ["step", "time", *names]:
        try:
            array = _open_array(path, array_key(str(name)))
        except Exception as error:  # noqa: BLE001 - missing or unreadable array metadata
            raise SimrtError(f"{path}: channel {name!r} missing or unreadable ({error})") from None
        arrays[name] = array
        rows = min(rows, int(array.shape[0]))
        described = dict(array.attrs).get("simrt")
        named = described.get("name") if isinstance(described, dict) else None
        if named is not None and named != name:  # (another array's document in its folder)
            raise SimrtError(f"{path}: the document of {name!r} describes {named!r}")
        if name in ("step", "time") and (array.dtype.kind != ("i" if name == "step" else "f")):
            raise SimrtError(f"{path}: {name!r} has dtype {array.dtype}")
        if name not in ("step", "time"):
            try:
                info = ChannelInfo.from_json(str(name), dict(array.attrs).get("simrt", {}))
            except (TypeError, ValueError) as error:
                raise SimrtError(f"{path}: channel {name!r} metadata damaged: {error}") from None
            if tuple(array.shape[1:]) != info.shape:
                raise SimrtError(f"{path}: channel {name!r} shape differs from its metadata")
            if name in paths:
                table = list(info.attrs.get("path_table") or [])
                if len(paths[name]) > len(table):
                    info = _with_table(info, paths[name])
            channels[str(name)] = info
    reader = RecordingReader(
        path,
        rows,
        bool(complete) and rows == committed and unchecked is None,
        run,
        channels,
        int(simrt.get("chunk_rows") or 1024),
        arrays,
        reason if unchecked is None else unchecked,
    )
    reader._checksums = {} if log.unverified else log.checksums
    return reader


def _rows_without_log(path: Path, simrt: dict[str, Any]) -> int | None:
    """The rows of a store whose commit log is missing: the group's ``rows``, reported."""
    rows = simrt.get("rows")
    if not isinstance(rows, int) or rows < 0:
        return None
    if rows or not simrt.get("complete"):
        _LOG.warning(
            "%s: the commit log %s is missing; %d rows from the group's attributes, their "
            "chunks not checked against it",
            path,
            COMMIT_LOG,
            rows,
        )
    return rows


def _document(folder: Path) -> dict[str, Any]:
    """The parsed ``zarr.json`` of a store node (ValueError when it is not an object)."""
    with open(folder / "zarr.json", "rb") as handle:
        document = json.loads(handle.read())
    if not isinstance(document, dict):
        raise ValueError("zarr.json is not a JSON object")
    return document


def _open_array(path: Path, key: str) -> Any:
    """One array of a store: read directly when the writer wrote it, else through zarr."""
    folder = path / key
    array = StoredArray.open(folder, _document(folder))
    if array is None:
        import zarr  # a document the writer does not write (e.g. a store rewritten by zarr)

        array = zarr.open_array(folder, mode="r", zarr_format=3)
    shape, chunks = tuple(array.shape), tuple(array.chunks)
    if not shape or any(n < 0 for n in shape) or len(chunks) != len(shape):
        raise ValueError(f"{key}/zarr.json: invalid shape {list(shape)}")
    if chunks[0] < 1 or any(n < 0 for n in chunks[1:]):  # (rows of a zero-size channel: 0)
        raise ValueError(f"{key}/zarr.json: invalid chunk shape {list(chunks)}")
    return array


def _with_table(info: ChannelInfo, table: list[str]) -> ChannelInfo:
    attrs = dict(info.attrs)
    attrs["path_table"] = list(table)
    return ChannelInfo(
        info.name,
        info.shape,
        info.dtype,
        info.sensor,
        info.kind,
        info.field,
        info.unit,
        attrs,
        info.frame,
    )


class _CommitLog:
    """What a store's commit log says (see :mod:`runtime.recording.store`).

    Attributes:
        rows: rows of the last complete line (None: no log).
        complete / reason: from the closing line, if any.
        paths: hit-path table entries added per channel.
        checksums: array key -> chunk index -> the chunk checksums accepted (8 hex digits:
            the committed one, and those of a rewrite named ``pending`` after it). Empty
            for stores written before chunk identities were logged.
    """

    def __init__(self) -> None:
        self.rows: int | None = None
        self.complete: bool | None = None
        self.reason: str | None = None
        self.paths: dict[str, list[str]] = {}
        self.checksums: dict[str, dict[int, set[str]]] = {}
        self.arrays: list[str] = []
        self.unverified = False  # chunk checksums logged that cannot be assigned to arrays

    def add_checksums(self, line: dict[str, Any], pending: bool) -> bool:
        index = line.get("pending" if pending else "chunk")
        text = line.get("crc")
        if not isinstance(index, int) or not isinstance(text, str):
            return not pending and "chunk" not in line  # (a line without a chunk is fine)
        if len(text) != 8 * len(self.arrays):  # (the arrays' line was lost: rows still count)
            self.unverified = True
            return True
        for number, key in enumerate(self.arrays):
            crc = text[8 * number : 8 * number + 8]
            chunks = self.checksums.setdefault(key, {})
            if pending:
                chunks.setdefault(index, set()).add(crc)
            else:
                chunks[index] = {crc}
        return True


def _read_commit_log(path: Path, arrays: list[str] | None = None) -> _CommitLog:
    """Rows, complete, reason, hit-path tables and chunk checksums of a store's commit log.

    ``arrays``: the checksums' array order as the group's attributes name it (the log's
    first line names it too).
    """
    log = _CommitLog()
    log.arrays = [str(key) for key in arrays or ()]
    try:
        with open(path / COMMIT_LOG, "rb") as handle:
            text = handle.read()
    except FileNotFoundError:
        return log
    except OSError as error:
        raise SimrtError(f"{path}: commit log unreadable: {error}") from None
    for raw in text.split(b"\n")[:-1]:  # a last line without newline is torn: ignored
        try:
            line = json.loads(raw)
        except ValueError:
            _LOG.warning("%s: damaged line in %s ignored", path, COMMIT_LOG)
            continue
        if not isinstance(line, dict) or not isinstance(line.get("rows"), int) or line["rows"] < 0:
            _LOG.warning("%s: damaged line in %s ignored", path, COMMIT_LOG)
            continue
        arrays = line.get("arrays")
        if isinstance(arrays, list) and all(isinstance(key, str) for key in arrays):
            log.arrays = list(arrays)
        if not log.add_checksums(line, "pending" in line):
            _LOG.warning("%s: damaged line in %s ignored", path, COMMIT_LOG)
            continue
        if "pending" in line:
            continue
        log.rows = max(log.rows or 0, int(line["rows"]))
        for name, added in (line.get("paths") or {}).items():
            if isinstance(added, list):
                log.paths.setdefault(name, []).extend(str(p) for p in added)
        if "complete" in line:
            log.complete, log.reason = bool(line["complete"]), line.get("reason")
    return log
