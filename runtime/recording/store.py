"""The streaming recording store: a Zarr v3 group written chunk by chunk while a run steps.

Layout of a store directory (``out/run.zarr``), readable by any Zarr v3 reader (zarr-python,
xarray, Dask, ...):

- the group's ``zarr.json`` holds the run: ``attributes["simrt"]`` = ``{"format":
  "simrt-recording", "version": 2, "complete", "rows", "reason", "chunk_rows", "channels":
  [names in order], "run": {scene, robot, settings, disabled sensors, ...}, "versions"}``;
- arrays ``step`` (int64) and ``time`` (float64, s) of shape ``(rows,)`` and one array per
  channel of shape ``(rows, *channel_shape)``, named by :func:`~runtime.recording.channels.
  array_key`, with the channel description under ``attributes["simrt"]`` and
  ``dimension_names`` (``"row"`` first) so xarray opens the group as one Dataset;
- ``simrt/commits.jsonl`` (inside an empty group ``simrt``, so Zarr readers listing the
  store see only Zarr objects): the commit log, one JSON line appended (and fsynced) after each
  batch of rows is on disk: ``{"rows": N, "step": .., "time": .., "wall": unix time,
  "paths": {new hit-path table entries}, "chunk": index, "crc": each array's chunk
  checksum}`` (the first line also lists the ``arrays`` in checksum order). Readers trust
  only the rows of the last complete line (or of the closed group's attributes), and only
  chunk files whose checksum is the one the log names for that array and index;
- each array's ``shape`` (and the group's ``rows``) is rewritten atomically at each commit
  after the chunk files: a plain Zarr reader sees exactly the rows written.

Writing: rows are copied into preallocated chunk buffers (``chunk_rows`` rows per chunk,
all channels; about ``target_chunk_bytes`` per chunk). A full chunk is handed to a writer
thread, which compresses it (Blosc with LZ4 by default, GIL released: the writer must keep up
with the step loop on one core), writes one chunk file per array straight into place, makes
them durable (one ``syncfs``), then appends the commit line; a
chunk that takes longer than ``commit_interval`` seconds to fill is also written partially
(and rewritten when it is full: the only data ever rewritten is the tail chunk beyond the
last full one). At most
``max_pending`` chunks wait for the writer: when it falls behind the step loop waits (flat
memory), so a run holds ``max_pending + 1`` chunk buffers whatever its length.

Crash semantics: a killed process (SIGKILL, power cut) leaves every committed row loadable;
the rows lost are those not yet committed (the chunk being filled, at most about
``commit_interval`` seconds of steps, plus chunks still queued for the writer). Chunk files
are written in place (no temporary files; the writer thread makes the next chunk's files,
empty, ahead of their write); a chunk torn by a kill (or still empty) lies beyond the
committed rows or is the tail chunk, which the reader then drops. While the last expected
chunk is recorded, the writer also makes the (empty) temporary files with which closing
rewrites the documents; a kill then leaves them beside the documents, where readers
ignore them. :meth:`StoreWriter.close` (called
from ``finally`` blocks, also on Ctrl-C / SIGTERM; it writes the chunks the writer thread
has not started and the last one itself) commits every row, trims the arrays to the
rows written and records ``complete`` and the reason. A failed write (disk full, folder
removed) stops the run through :class:`RecordingError` naming the path and the rows safe on
disk.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import queue
import threading
import time as time_module
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from runtime.errors import SimrtError
from runtime.recording import _buffer_pool
from runtime.recording._chunks import ChunkEncoder, chunk_rows, compression, create_array
from runtime.recording._disk import (
    COMMIT_GROUP,
    COMMIT_LOG,
    RecordingError,
    _channel_json,
    _versions,
    check_store_path,
    is_store,
    make_durable,
    new_path_entries,
    put_back,
    remove_later,
    set_aside,
)
from runtime.recording._held_signals import stop_signals_held
from runtime.recording._metadata import ArrayDocument, GroupDocument, replace_documents
from runtime.recording.channels import (
    FORMAT_NAME,
    FORMAT_VERSION,
    RESERVED_NAMES,
    ChannelInfo,
    array_key,
    json_default,
)

__all__ = ["COMMIT_LOG", "RecordingError", "StoreWriter", "check_store_path", "is_store"]

_LOG = logging.getLogger(__name__)

_TARGET_CHUNK_BYTES = 32 << 20


class StoreWriter:
    """Writes one run's rows into a streaming store (see the module docstring).

    Usage::

        writer = StoreWriter("out/run.zarr", meta={"scene": ...}, expected_rows=steps)
        slot = writer.add_channel(ChannelInfo("imu.linear_acceleration", (3,), "float32"))
        for k in ...:
            buffers, row = writer.begin_row()
            buffers[slot][row] = a            # every channel (buffers are reused: write all)
            writer.end_row(step=k, time=t)
        writer.close(complete=True)

    Args:
        path: the store directory (created; an existing simrt store there is replaced).
        meta: JSON-serialisable run metadata (``attributes["simrt"]["run"]``).
        expected_rows: rows the run expects (caps the chunk size of short runs); 0: unknown.
            The arrays' documents claim only committed rows: each commit rewrites them.
        chunk_rows: rows per chunk (default: about ``target_chunk_bytes`` per chunk).
        commit_interval: write a partly filled chunk this many seconds after the last
            commit (bounds what a kill loses).
        max_pending: chunks that may wait for the writer thread before the loop waits (their
            buffers are made when first needed).
        durable: sync chunk files, documents and the commit log (survives a power cut).
        compressor: Blosc's compressor: ``"lz4"`` (default: about 19 us per 32 KB Panda row
            on one core, fast enough to keep up with the step loop) or ``"zstd"`` (about 15 %
            smaller stores, 2.3x the writer's time: for runs whose rows are small).
        compression_level: Blosc level (default: 5 for lz4, 1 for zstd; 0 disables
            compression, the checksum stays).
        target_chunk_bytes: uncompressed bytes of one chunk of all channels.
        background: compress and write chunks on a writer thread (default). False: in the
            caller's thread, at each chunk's end and at close (for processes that already
            keep every core busy, such as batch workers).

    Raises:
        SimrtError: the path cannot hold a store (see :func:`check_store_path`).
    """

    # tests: fill chunk buffers with 0xFF bytes, so a channel row left unwritten shows up
    _POISON_BUFFERS = False

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        meta: Mapping[str, Any] | None = None,
        expected_rows: int = 0,
        chunk_rows: int | None = None,
        commit_interval: float = 1.0,
        max_pending: int = 2,
        durable: bool = True,
        compressor: str = "lz4",
        compression_level: int | None = None,
        target_chunk_bytes: int = _TARGET_CHUNK_BYTES,
        background: bool = True,
    ) -> None:
        self.path = check_store_path(path)
        if chunk_rows is not None and int(chunk_rows) < 1:
            raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
        if not commit_interval > 0:
            raise ValueError(f"commit_interval must be > 0, got {commit_interval}")
        self._cname, self._level = compression(compressor, compression_level)
        self.meta: dict[str, Any] = dict(meta or {})
        self._channels: dict[str, ChannelInfo] = {}
        self._expected_rows = max(0, int(expected_rows))
        self._chunk_rows_arg = int(chunk_rows) if chunk_rows is not None else None
        self.commit_interval = float(commit_interval)
        self._max_pending = max(1, int(max_pending))
        self._durable = bool(durable)
        self._unsynced: list[Path] = []  # documents written since the last commit's sync
        self._target_bytes = max(1, int(target_chunk_bytes))
        self.chunk_rows = 0
        self._opened = False
        self._unready = True  # begin_row must open the store or take the next chunk's buffers
        self._prepare_set = False  # the writer thread prepares the second buffer set
        self._open_failed = False
        self._closed = False
        self._buffers: list[np.ndarray] = []  # current chunk, by slot (+ step, time last)
        self._steps = np.empty(0, np.int64)
        self._times = np.empty(0, np.float64)
        self._row = 0  # row inside the current chunk
        self._chunk_start = 0  # first row of the current chunk
        self._count = 0
        self._next_commit = math.inf
        self._queue: queue.Queue[Any] = queue.Queue()
        self._free: queue.Queue[list[np.ndarray]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._background = bool(background)
        self._partial_pending = threading.Event()
        self._error: BaseException | None = None
        self._error_reported = False
        self._committed = 0
        self._last_stamp: tuple[int, float] = (0, 0.0)
        self._arrays: list[ArrayDocument] = []
        self._encoders: list[ChunkEncoder] = []
        self._group: GroupDocument | None = None
        self._capacity = 0
        self._log_fd: int | None = None
        self._listed_arrays = False  # the commit log lists the arrays (in its first line)
        self._logged_paths: dict[str, int] = {}
        self.write_seconds = 0.0  # writer-thread time spent writing (compression included)
        self._observers, self.failed_observers, self._discarding = [], [], None
        self._aside: Path | None = None  # the previous store at the path, until a commit
        # derived channels (add_derived): descriptions, fill functions, the chunk's arrays
        self._derived: dict[str, ChannelInfo] = {}
        self._derived_fills: list[tuple[int, int, Callable[..., None]]] = []
        self._derived_buffers: list[np.ndarray] = []
        self._derived_arrays: list[ArrayDocument] = []
        self._derived_encoders: list[ChunkEncoder] = []
        self._derived_chunk, self._derived_done = -1, 0  # chunk index, its rows filled
        # the writer thread fills the derived rows of the chunk being recorded every
        # `_prefill_rows` rows (0: never), so that closing the store has few left to fill
        self._prefill_rows, self._prefilled = 0, 0
        self.wait_seconds = 0.0  # step-loop time spent waiting for the writer (backpressure)

    # ------------------------------------------------------------------ channels
    @property
    def channels(self) -> dict[str, ChannelInfo]:
        """Registered channels by name (insertion order)."""
        return dict(self._channels)

    @property
    def row_count(self) -> int:
        """Rows handed to the writer so far (committed or not)."""
        return self._count

    @property
    def committed_rows(self) -> int:
        """Rows on disk and named by the commit log."""
        return self._committed

    def add_channel(self, info: ChannelInfo) -> int:
        """Register a channel; must happen before the first row.

        Returns:
            The channel's slot: its index in the buffer list of :meth:`begin_row`.

        Raises:
            ValueError: duplicate or reserved name, or channels added after rows.
        """
        if self._opened:
            raise ValueError(f"channel {info.name!r} added after rows were recorded")
        self._check_name(info)
        self._channels[info.name] = info
        return len(self._channels) - 1

    def _check_name(self, info: ChannelInfo) -> None:
        names = self._channels.keys() | self._derived.keys()
        if info.name in RESERVED_NAMES or info.name in names:
            raise ValueError(f"channel name {info.name!r} is reserved or already used")
        key = array_key(info.name)
        if key in ("", ".", "..") or key.startswith("__") or "\0" in key:
            raise ValueError(f"channel name {info.name!r} cannot name a Zarr array")
        keys = {array_key(name) for name in names} | {COMMIT_GROUP, "step", "time"}
        if key in keys:
            raise ValueError(f"channel name {info.name!r} collides with another channel")
        np.dtype(info.dtype)

    def add_derived(
        self,
        infos: Sequence[ChannelInfo],
        fill: Callable[[list[np.ndarray], list[np.ndarray], int, int], None],
    ) -> None:
        """Register channels computed from the recorded ones, chunk by chunk (noisy readings).

        Derived channels are arrays of the store like any channel (named in the group's
        ``channels`` after the recorded ones) but have no slot: the step loop never writes
        them. ``fill(buffers, derived, first, stop)`` writes rows ``first:stop`` of the
        ``derived`` arrays (one per info, shape ``(chunk_rows, *shape)``) from the same
        rows of ``buffers`` (the chunk's buffers by slot, then ``step`` and ``time``). It
        is called once for every row, in row order, never concurrently, before the rows are
        written: on the writer thread, as each eighth of a chunk is recorded and at the
        chunk's write (in :meth:`close` for the rows not filled yet; in the caller's thread,
        at each write, without a writer thread). A fill that raises stops the run
        (:class:`RecordingError`, as a failed write).

        Raises:
            ValueError: a name already used, or derived channels added after rows.
        """
        if self._opened:
            raise ValueError("derived channels added after rows were recorded")
        infos = list(infos)
        for info in infos:
            self._check_name(info)
            self._derived[info.name] = info
        self._derived_fills.append((len(self._derived) - len(infos), len(infos), fill))

    def add_observer(self, observer: Any) -> None:
        """Call ``observer(start, rows, buffers)`` on the writer thread after each commit.

        Buffers by slot (valid during the call); one that raises is dropped (logged).
        """
        self._observers.append(observer)

    # ------------------------------------------------------------------ rows
    def begin_row(self) -> tuple[list[np.ndarray], int]:
        """The current chunk's channel buffers (by slot) and the row index to write.

        Every channel of the row must be written: buffers are reused between chunks.
        """
        if self._unready:  # not opened yet, or the next chunk's buffers not taken yet
            if not self._opened:
                self._open()
            else:
                self._take_buffers(self._next_buffers())
            self._unready = False
        return self._buffers, self._row

    def end_row(self, step: int, time: float) -> None:
        """Finish the row written in place after :meth:`begin_row`.

        Raises:
            RecordingError: the writer thread failed (the run must stop).
        """
        row = self._row
        self._steps[row] = step
        self._times[row] = time
        row += 1
        self._row = row
        self._count += 1
        if row == self.chunk_rows:
            self._hand_over(full=True)
        elif not self._count & 31 and time_module.perf_counter() >= self._next_commit:
            self._hand_over(full=False)
        elif self._prefill_rows and row - self._prefilled >= self._prefill_rows:
            self._prefill()
        if self._error is not None:
            self._raise_error()

    def end_rows(self, count: int) -> None:
        """Finish ``count`` rows written in place from :meth:`begin_row`'s row on.

        For a writer of several rows at once (a compiled step block) that wrote their
        ``step`` / ``time`` stamps too (the last two buffers) within the current chunk.

        Raises:
            ValueError: the rows overrun the chunk.
            RecordingError: the writer thread failed (the run must stop).
        """
        if count <= 0:
            return
        row = self._row + count
        if row > self.chunk_rows:
            raise ValueError(f"{count} rows overrun the chunk ({self.chunk_rows - self._row} left)")
        self._row = row
        self._count += count
        if row == self.chunk_rows:
            self._hand_over(full=True)
        elif time_module.perf_counter() >= self._next_commit:
            self._hand_over(full=False)
        elif self._prefill_rows and row - self._prefilled >= self._prefill_rows:
            self._prefill()
        if self._error is not None:
            self._raise_error()

    def append(self, step: int, time: float, values: Mapping[str, Any]) -> None:
        """Record one row from a mapping channel name -> value (missing channels: zeros).

        Reserved names (``step``, ``time``) in ``values`` are ignored: the arguments win.

        Raises:
            KeyError: an unknown channel name.
        """
        buffers, row = self.begin_row()
        unknown = set(values) - set(self._channels) - RESERVED_NAMES
        if unknown:
            raise KeyError(f"unknown channels {sorted(unknown)}")
        for slot, name in enumerate(self._channels):
            value = values.get(name)
            buffers[slot][row] = 0 if value is None else value
        self.end_row(step, time)

    # ------------------------------------------------------------------ store
    def _open(self) -> None:
        if self._open_failed:
            raise SimrtError(f"{self.path}: the store could not be created")
        self._open_failed = True  # until every step below succeeded
        self.chunk_rows = rows = chunk_rows(
            self.path,
            self._channels.values(),
            self._chunk_rows_arg,
            self._target_bytes,
            self._expected_rows,
        )
        self._capacity = 0  # rows the arrays' documents claim: the committed ones (see _claim_rows)
        try:
            # a previous store (check_store_path): kept aside until the first commit
            self._aside = set_aside(self.path)
            self._group = GroupDocument(self.path, {"simrt": self._attrs(False)})
            self._group.create(self._durable)
        except OSError as error:
            self._keep_previous()
            problem = error.strerror or str(error)
            raise SimrtError(f"{self.path}: cannot create the recording store: {problem}") from None
        self._sets = 1  # (the writer's buffer sets, at most max_pending: when first needed)
        self._take_buffers(self._new_buffers())
        # (a kept block of their size, or a new one touched here: not page by page by fills)
        self._derived_buffers = (
            _buffer_pool.take(self._derived.values(), self.chunk_rows, self._POISON_BUFFERS, 2)[:-2]
            if self._derived
            else []
        )
        if self._derived_fills and self._background:  # (8 fills a chunk, the last one's too)
            self._prefill_rows = max(1, rows // 8)
        # a run of more than one chunk needs a second set when the first is handed over:
        # the writer thread prepares it (touching new memory takes as long as many steps)
        self._prepare_set = self._background and self._expected_rows > rows
        if self._prepare_set:
            self._sets = 2
        self._next_commit = time_module.perf_counter() + self.commit_interval
        if self._background:
            # the arrays are created by the writer thread while the loop fills the first chunk
            self._thread = threading.Thread(
                target=self._writer_loop, name="simrt-store", daemon=True
            )
            self._thread.start()
        else:
            self._start_writing()
        self._opened, self._open_failed = True, False

    def _create_arrays(self) -> None:
        """Create every array and the commit log (the writer thread's first job)."""
        shapes = [(name, info.shape, info.dtype) for name, info in self._channels.items()]
        shapes += [("step", (), "int64"), ("time", (), "float64")]
        shapes += [(name, info.shape, info.dtype) for name, info in self._derived.items()]
        for number, (name, shape, dtype) in enumerate(shapes):
            document, encoder = create_array(
                self.path, name, self._channels.get(name) or self._derived.get(name), shape,
                dtype, self._capacity, self.chunk_rows, self._level, self._cname,
                self._expected_rows,
            )  # fmt: skip
            self._unsynced.append(document.folder / "zarr.json")
            derived = number >= len(self._channels) + 2
            (self._derived_arrays if derived else self._arrays).append(document)
            (self._derived_encoders if derived else self._encoders).append(encoder)
        GroupDocument(
            self.path / COMMIT_GROUP,
            {"about": "simrt commit log: commits.jsonl (rows durable)"},
        ).create(False)
        self._unsynced.append(self.path / COMMIT_GROUP / "zarr.json")
        self._log_fd = os.open(self.path / COMMIT_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        if 0 < self._expected_rows <= self.chunk_rows:  # (one chunk: the last one)
            self._make_spares()

    def _make_spares(self) -> None:
        """Make the temporary files of closing's document rewrite ahead.

        The writer's job while the loop records the last chunk it expects: closing then
        creates no file.
        """
        arrays = self._arrays + self._derived_arrays
        tables = self._path_tables()
        expected = self._expected_rows
        for node, table in [*zip(arrays, tables, strict=True), (self._group, None)]:
            # (the group's and path-table arrays' attributes change; a document whose
            # growing length the expected rows' digits fill needs no rewrite)
            if node is self._group or table is not None or not node.filled_by(expected):
                node.make_spare()

    def _path_tables(self) -> list[dict[str, Any] | None]:
        """Per array (in order), the closing attributes of a channel with a path table."""
        infos = [*self._channels.values(), None, None, *self._derived.values()]
        tables = []
        for info in infos:
            table = info is not None and info.attrs and info.attrs.get("path_table")
            tables.append({"simrt": _channel_json(info)} if isinstance(table, list) else None)
        return tables

    def _new_buffers(self) -> list[np.ndarray]:
        """A chunk buffer set: a closed writer's of this layout, or new (and touched)."""
        return _buffer_pool.take(self._channels.values(), self.chunk_rows, self._POISON_BUFFERS)

    def _take_buffers(self, buffers: list[np.ndarray]) -> None:
        self._buffers = buffers
        self._steps, self._times = buffers[-2], buffers[-1]
        self._row, self._prefilled = 0, 0

    def _prefill(self) -> None:
        """Have the writer thread fill the derived rows recorded so far of the current chunk.

        Those rows are final (the loop only writes rows past them) and the writer thread
        fills them after the chunks queued before (which use the derived buffers): rows and
        derived channels never change hands while one thread uses them.
        """
        self._prefilled = self._row
        self._queue.put((self._buffers, self._chunk_start, self._row, None))

    def _hand_over(self, *, full: bool) -> None:
        """Queue the current chunk's rows for the writer (a full chunk: take a fresh one)."""
        self._next_commit = time_module.perf_counter() + self.commit_interval
        if not full:
            if self._row and not self._partial_pending.is_set():
                self._partial_pending.set()
                self._queue.put((self._buffers, self._chunk_start, self._row, False))
                if not self._background:
                    self._drain()
            return
        self._queue.put((self._buffers, self._chunk_start, self._row, True))
        # the chunk belongs to the writer now: an interrupt while waiting below must not
        # let close() hand the same rows over again
        self._chunk_start += self._row
        self._row = 0
        # the next chunk's buffers are taken by the next begin_row (a run that ends here
        # takes none)
        self._buffers, self._unready = [], True
        if not self._background:
            self._drain()  # (its buffers come back free)

    def _next_buffers(self) -> list[np.ndarray]:
        """The next chunk's buffer set: a free one, a new one, or the writer's next free one."""
        try:
            return self._free.get_nowait()
        except queue.Empty:
            if self._background and self._sets <= self._max_pending:
                self._sets += 1
                return self._new_buffers()
            return self._wait_for_buffers()

    def _wait_for_buffers(self) -> list[np.ndarray]:
        """Wait while the writer is ``max_pending`` chunks behind (flat memory)."""
        began = time_module.perf_counter()
        while True:
            try:
                buffers = self._free.get(timeout=0.5)
                break
            except queue.Empty:
                if self._thread is None or not self._thread.is_alive():
                    buffers = self._new_buffers()
                    break
        self.wait_seconds += time_module.perf_counter() - began
        return buffers

    # ------------------------------------------------------------------ writer thread
    def _writer_loop(self) -> None:
        # the second buffer set first: the loop needs it when the first chunk is full,
        # whether or not the arrays exist by then (creating them takes longer than a chunk
        # of a Panda run's steps here: the loop used to wait for them)
        if self._prepare_set:
            self._free.put(self._new_buffers())
        self._start_writing()
        while True:
            item = self._queue.get()
            if item is None:
                return
            self._write_item(item)

    def _start_writing(self) -> None:
        try:
            self._create_arrays()
        except BaseException as error:  # noqa: BLE001 - reported on the loop's thread
            self._error = error

    def _drain(self) -> None:
        """Without a writer thread: write what was queued, here and now.

        A stop signal (SIGINT / SIGTERM / SIGHUP) arriving meanwhile is held back until the
        chunks are written and committed, as a writer thread would not be interrupted
        either: its handler then runs in the caller, with every handed-over row on disk.
        """
        with stop_signals_held():
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    self._write_item(item)

    def _write_item(self, item: tuple[list[np.ndarray], int, int, bool | None]) -> None:
        buffers, start, rows, full = item
        if full is None:  # (derived rows filled ahead: nothing written)
            try:
                if self._error is None:
                    self._fill_derived(buffers, start // self.chunk_rows, rows)
            except BaseException as error:  # noqa: BLE001 - reported on the loop's thread
                self._error = error
            return
        try:
            if self._error is None:
                began = time_module.perf_counter()
                self._write_rows(buffers, start, rows)
                self.write_seconds += time_module.perf_counter() - began
        except BaseException as error:  # noqa: BLE001 - reported on the loop's thread
            self._error = error
        finally:
            if full:
                self._free.put(buffers)
            else:
                self._partial_pending.clear()

    def _write_rows(self, buffers: list[np.ndarray], start: int, rows: int) -> None:
        stop = start + rows
        # chunk-aligned: `start` is a multiple of chunk_rows; a partial chunk is written whole
        # (rows past `stop` are stale and lie beyond the committed rows / the trimmed shape)
        index = start // self.chunk_rows
        if self._derived_fills:
            self._fill_derived(buffers, index, rows)
        pairs = list(zip(self._encoders, buffers, strict=True))
        pairs += zip(self._derived_encoders, self._derived_buffers, strict=True)
        written, identity = self._write_chunk(index, start, pairs)
        # the documents' shape grows to the rows written, after their chunk files: a plain
        # Zarr reader (zarr-python, xarray) never sees rows that were not written
        written += self._claim_rows(stop)
        if self._durable:  # every chunk file on disk before the commit line names its rows
            make_durable(self.path, self._unsynced + written)
            self._unsynced = []
        self._commit(stop, int(buffers[-2][rows - 1]), float(buffers[-1][rows - 1]), **identity)
        if self._aside is not None and self._discarding is None:  # rows of the new run are
            self._discarding = remove_later(self._aside)  # on disk: the previous store goes
        for observer in list(self._observers):
            try:
                observer(start, rows, buffers)
            except Exception as error:  # noqa: BLE001 - never the recording's failure
                _LOG.warning("%s: a recording observer failed and is dropped: %r", self.path, error)
                self._observers.remove(observer)
                self.failed_observers.append(observer)
        if rows == self.chunk_rows and stop < self._expected_rows:  # the next chunk's files
            for encoder in self._encoders + self._derived_encoders:
                encoder.prepare(index + 1)
            if stop + self.chunk_rows >= self._expected_rows:  # (the last chunk's: close's)
                self._make_spares()

    def _fill_derived(self, buffers: list[np.ndarray], index: int, rows: int) -> None:
        """Fill the derived channels' rows of chunk ``index`` not filled yet, up to ``rows``."""
        if index != self._derived_chunk:  # (a new chunk: its rows from the first)
            self._derived_chunk, self._derived_done = index, 0
        first = self._derived_done
        if rows <= first:
            return
        for begin, count, fill in self._derived_fills:
            fill(buffers, self._derived_buffers[begin : begin + count], first, rows)
        self._derived_done = rows

    def _write_chunk(
        self, index: int, start: int, pairs: list[tuple[ChunkEncoder, np.ndarray]]
    ) -> tuple[list[Path], dict[str, Any]]:
        """Encode chunk ``index`` of every array and write its files in place.

        Returns the files and the chunk's identity for its commit line: the chunk index and
        each array's chunk checksum (CRC32C, 8 hex digits, in the order of the ``arrays``
        the first line lists), so that a reader detects a chunk file swapped with another
        array's or another index's. A chunk that already holds committed rows (a partial
        chunk written again, grown) is first named in a ``pending`` line with its new
        checksums: after a kill between its files and its commit line, the new files (the
        same committed rows, and more) are still accepted.
        """
        data = [encoder.encode(buffer) for encoder, buffer in pairs]
        checksums = "".join(item[-4:].hex() for item in data)
        identity: dict[str, Any] = {"chunk": index, "crc": checksums}
        if not self._listed_arrays:
            identity["arrays"] = [encoder.key for encoder, _ in pairs]
            self._listed_arrays = True
        if start < self._committed:
            line = {"rows": self._committed, "pending": index, "crc": checksums}
            assert self._log_fd is not None
            os.write(self._log_fd, (json.dumps(line) + "\n").encode())
        written = [
            encoder.write_encoded(index, item)
            for (encoder, _), item in zip(pairs, data, strict=True)
        ]
        return written, identity

    def _claim_rows(self, rows: int) -> list[Path]:
        """Set every array's length (and the group's ``rows``) to ``rows`` on disk.

        Not synced: the commit's sync makes the documents durable with the chunk files.
        """
        if rows <= self._capacity:
            return []
        self._capacity = rows
        assert self._group is not None
        documents = [array.grow(rows) for array in self._arrays + self._derived_arrays]
        return [*documents, self._group.grow(rows)]

    def _commit(self, rows: int, step: int, time: float, **extra: Any) -> None:
        if self._durable and self._unsynced:  # a store closed before any chunk
            make_durable(self.path, self._unsynced)
            self._unsynced = []
        line: dict[str, Any] = {"rows": rows, "step": step, "time": time}
        line["wall"] = round(time_module.time(), 3)  # when the rows became durable
        paths = new_path_entries(self._channels, self._logged_paths)
        if paths:
            line["paths"] = paths
        line.update(extra)
        assert self._log_fd is not None
        os.write(self._log_fd, (json.dumps(line, default=json_default) + "\n").encode())
        if self._durable:
            os.fsync(self._log_fd)
        self._committed = max(self._committed, rows)
        self._last_stamp = (step, time)

    # ------------------------------------------------------------------ close
    def _raise_error(self) -> None:
        self._error_reported = True
        error = self._error
        if isinstance(error, RecordingError):
            raise error
        problem = error.strerror if isinstance(error, OSError) and error.strerror else error
        if isinstance(error, FileNotFoundError) or not self.path.is_dir():
            problem = "the output folder was removed"
        raise RecordingError(self.path, str(problem), self._committed) from error

    def close(self, *, complete: bool = True, reason: str | None = None) -> None:
        """Commit every row, trim the arrays, record ``complete`` / ``reason``; idempotent.

        Never raises for a writer failure that :meth:`end_row` already reported; raises
        :class:`RecordingError` for a failure found only now.
        """
        if self._closed:
            return
        self._closed = True
        if self._open_failed:
            return  # creating the store failed: that error is on its way already
        if not self._opened:
            self._open()  # a run without rows still leaves a loadable, empty store
        # the chunks the writer has not started, then the last one: written here, where the
        # loop has stopped (in the main thread Blosc compresses on every core: half the wait)
        stolen = []
        if self._background:
            assert self._thread is not None
            with contextlib.suppress(queue.Empty):  # (until the writer has taken the rest)
                while True:
                    stolen.append(self._queue.get_nowait())
            self._queue.put(None)
            self._thread.join()  # (the writer finishes the chunk it is writing, in order)
        else:
            self._drain()
        if self._row and self._error is None:
            stolen.append((self._buffers, self._chunk_start, self._row, False))
        with stop_signals_held():
            for item in stolen:
                self._write_item(item)  # (after an error: only hands the buffers back)
        failed = self._error is not None
        try:
            if not failed:
                rows = self._committed
                # every document as zarr writes it, trimmed (no chunk lies past the length:
                # chunks are written up to the last row only), synced together; a document
                # whose growing length its number fills already is (a run of the expected
                # rows' digits: most)
                documents = []
                for array, table in zip(self._arrays + self._derived_arrays,
                                        self._path_tables(), strict=True):  # fmt: skip
                    if table is not None:
                        documents.append(array.revise(rows=rows, attributes=table))
                    elif array.rows != rows or (array.growing and not array.as_zarr_writes):
                        documents.append(array.revise(rows=rows))
                attrs = self._attrs(complete)
                attrs["reason"] = reason
                documents.append(self._group.revise({"simrt": attrs}))
                nodes = [*self._arrays, *self._derived_arrays, self._group]
                spares = {node.folder / "zarr.json": node.spare for node in nodes}
                replace_documents(self.path, documents, durable=self._durable, spares=spares)
                for node in nodes:
                    node.spare = None  # (filled and renamed)
                self._commit(rows, *self._last_stamp, complete=bool(complete), reason=reason)
        except OSError as error:
            self._error = error
        finally:
            if self._log_fd is not None:
                os.close(self._log_fd)
                self._log_fd = None
            for encoder in self._encoders + self._derived_encoders:
                encoder.discard_ahead()  # (a chunk prepared for rows that never came)
            for node in [*self._arrays, *self._derived_arrays, self._group]:
                if node is not None:
                    node.drop_spare()  # (a close that failed before using it)
            sets = [self._buffers] if self._buffers and not failed else []
            if self._derived_buffers and not failed:
                sets.append(self._derived_buffers)
            while not self._free.empty():
                sets.append(self._free.get_nowait())
            if not self._POISON_BUFFERS:  # (the writer is done with them)
                _buffer_pool.give(sets)
            self._buffers, self._arrays, self._encoders = [], [], []
            self._derived_buffers, self._derived_arrays, self._derived_encoders = [], [], []
            if self._aside is not None and self._discarding is None:
                if complete and not failed:  # (a run asked for no rows: it replaces it)
                    self._discarding = remove_later(self._aside)
                else:
                    self._keep_previous()
            if self._discarding is not None:
                self._discarding.join()
        if self._error is not None and not self._error_reported:
            self._raise_error()

    def _keep_previous(self) -> None:
        """The run committed nothing: the previous store at the path is put back."""
        if self._aside is None:
            return
        try:
            put_back(self.path, self._aside)
        except OSError as error:
            _LOG.warning("%s: the previous store could not be put back (%s); it is in %s",
                         self.path, error.strerror or error, self._aside)  # fmt: skip
        else:
            _LOG.warning(
                "%s: the run recorded no step; the previous recording there is kept", self.path
            )
        self._aside = None

    def _attrs(self, complete: bool) -> dict[str, Any]:
        attrs = {
            "format": FORMAT_NAME, "version": FORMAT_VERSION, "complete": bool(complete),
            "rows": self._committed, "reason": None, "chunk_rows": self.chunk_rows,
            "channels": [*self._channels, *self._derived], "run": self.meta,
            "versions": dict(_versions()),
            # the arrays in the order of each commit line's chunk checksums
            "arrays": [*map(array_key, self._channels), "step", "time",
                       *map(array_key, self._derived)],
        }  # fmt: skip
        return json.loads(json.dumps(attrs, default=json_default))
