"""The dataset of a batch: one recording store per episode and a Parquet manifest.

Layout of ``DATASET/``::

    dataset.json          format, the spec (JSON) and its fingerprint
    .lock                 held (flock) by the batch writing the dataset: one at a time
    manifest.parquet      one row per episode (below), rewritten atomically as episodes end (<= 1/s)
    episodes/000012.zarr  the complete recording of episode 12 (only complete ones)
    failed/               the store of the last failed attempt of an episode, if any
    .attempts/            stores being written (renamed into episodes/ when complete)

Manifest columns: ``episode`` (int64), ``scene``, ``log`` (replays), ``seed`` (int64),
``params`` (the drawn parameters as JSON text), ``status`` (``pending`` / ``done`` /
``failed``), ``attempts``, ``steps``, ``wall_time`` / ``cpu_time`` [s], ``error``, ``worker_host``,
``worker_pid``, ``startup`` (seconds until the engine was ready), ``reused`` (the worker's
cached engine served it), ``store`` (path relative to the dataset), ``finished_at`` (UTC).

Re-running a batch over an existing dataset skips episodes whose row is ``done`` and whose
store is a complete recording, and runs the others (failed, pending or killed with the
driver). A dataset made from another spec is refused.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.errors import SimrtError

__all__ = ["Dataset", "DatasetReader", "EpisodeEntry", "load_dataset"]

FORMAT = "simrt-dataset"
VERSION = 1
MANIFEST = "manifest.parquet"

_COLUMNS: tuple[tuple[str, str], ...] = (
    ("episode", "int64"),
    ("scene", "string"),
    ("log", "string"),
    ("seed", "int64"),
    ("params", "string"),
    ("status", "string"),
    ("attempts", "int32"),
    ("steps", "int64"),
    ("wall_time", "float64"),
    ("cpu_time", "float64"),
    ("error", "string"),
    ("worker_host", "string"),
    ("worker_pid", "int64"),
    ("startup", "float64"),
    ("reused", "bool"),
    ("store", "string"),
    ("finished_at", "string"),
)


def _pyarrow() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise SimrtError(
            "batch datasets need pyarrow for the Parquet manifest: pip install 'simrt[sim]'"
        ) from None
    return pa, pq


def _schema() -> Any:
    pa, _ = _pyarrow()
    types = {
        "int64": pa.int64(),
        "int32": pa.int32(),
        "string": pa.string(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
    }
    return pa.schema([(name, types[kind]) for name, kind in _COLUMNS])


def _read_manifest(path: Path) -> list[dict[str, Any]]:
    _, pq = _pyarrow()
    try:
        table = pq.read_table(path)
    except Exception as exc:  # noqa: BLE001 - any unreadable file: say which
        raise SimrtError(f"{path}: unreadable manifest: {exc}") from None
    missing = [name for name, _ in _COLUMNS if name not in table.column_names]
    if missing:
        raise SimrtError(f"{path}: not a simrt manifest (missing column {missing[0]!r})")
    return table.to_pylist()


def _store_complete(path: Path) -> bool:
    from runtime.recording import is_store, open_recording

    if not is_store(path):
        return False
    try:
        return bool(open_recording(path).complete)
    except Exception:  # noqa: BLE001 - a damaged store is simply re-run
        return False


class Dataset:
    """A dataset being written by a batch (driver side).

    Args:
        path: the dataset folder (created).
        spec_json: the batch spec as JSON data (``BatchSpec.to_json()``).
        fingerprint: the spec's fingerprint; an existing dataset must match it.

    Raises:
        SimrtError: the folder holds something else, or a dataset of another spec.
    """

    # the manifest is rewritten whole: at most once per this many seconds while episodes end
    # (and when the dataset closes), not once per episode (O(episodes) per write)
    SAVE_INTERVAL = 1.0

    def __init__(self, path: str | Path, spec_json: dict[str, Any], fingerprint: str) -> None:
        from runtime._files import atomic_write_stream

        self.path = Path(path)
        self._write = atomic_write_stream
        meta_path = self.path / "dataset.json"
        if meta_path.exists():
            try:
                meta = json.loads(meta_path.read_text())
            except (OSError, ValueError) as exc:
                raise SimrtError(f"{meta_path}: unreadable dataset metadata: {exc}") from None
            if not isinstance(meta, dict) or meta.get("format") != FORMAT:
                raise SimrtError(f"{meta_path}: not a simrt dataset")
            if meta.get("fingerprint") != fingerprint:
                old = meta.get("spec") or {}
                spec_json = json.loads(json.dumps(spec_json))  # (tuples as the file's lists)
                keys = sorted(
                    k for k in set(old) | set(spec_json) if old.get(k) != spec_json.get(k)
                )
                raise SimrtError(
                    f"{self.path}: this dataset was made from another spec (differs in "
                    f"{', '.join(keys) or 'content'}); use a new --out folder"
                )
        else:
            if self.path.exists() and not self.path.is_dir():
                raise SimrtError(f"{self.path}: exists and is not a folder")
            if self.path.exists() and any(self.path.iterdir()):
                raise SimrtError(f"{self.path}: exists, is not empty and is not a simrt dataset")
            self.path.mkdir(parents=True, exist_ok=True)
            meta = {
                "format": FORMAT,
                "version": VERSION,
                "fingerprint": fingerprint,
                "spec": spec_json,
            }
            text = json.dumps(meta, indent=2).encode()
            self._write(meta_path, lambda handle: handle.write(text))
        self._lock = open(self.path / ".lock", "a")  # noqa: SIM115 - held until close()
        try:
            import fcntl

            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # no fcntl (Windows): unlocked
            pass
        except OSError:
            self._lock.close()
            raise SimrtError(f"{self.path}: another simrt batch is writing this dataset") from None
        self.rows: dict[int, dict[str, Any]] = {}
        self._sync = False  # sync the file system before each manifest save
        self._unsaved = False  # rows changed since the manifest was last written
        self._saved_at = -math.inf
        manifest = self.path / MANIFEST
        if manifest.exists():
            for row in _read_manifest(manifest):
                self.rows[int(row["episode"])] = row

    def plan(self, tasks: Sequence[Any]) -> list[Any]:
        """Add rows for new episodes; return the tasks still to run (resume).

        Args:
            tasks: every episode of the batch (:class:`~runtime.batch.episode.EpisodeTask`).

        Returns:
            The tasks whose episode is not done with a complete store, in order.
        """
        todo = []
        for task in tasks:
            row = self.rows.get(task.episode)
            if (
                row is not None
                and row["status"] == "done"
                and _store_complete(self.path / str(row["store"]))
            ):
                continue
            attempts = int(row["attempts"]) if row is not None else 0
            self.rows[task.episode] = {
                "episode": task.episode,
                "scene": task.scene,
                "log": task.log or "",
                "seed": task.seed,
                "params": "" if row is None else row["params"],
                "status": "pending",
                "attempts": attempts,
                "steps": 0,
                "wall_time": 0.0,
                "cpu_time": 0.0,
                "error": "" if row is None else row["error"],
                "worker_host": "",
                "worker_pid": 0,
                "startup": 0.0,
                "reused": False,
                "store": "",
                "finished_at": "",
            }
            todo.append(task)
        self.save()
        return todo

    def record(self, outcome: dict[str, Any], *, final: bool) -> None:
        """Store an attempt's outcome in its row and rewrite the manifest.

        Args:
            outcome: :func:`runtime.batch.episode.execute`'s report (or the executor's for
                a killed worker).
            final: no retry follows (a failure is recorded as ``failed``; otherwise the row
                stays ``pending`` with the error of the attempt).
        """
        row = self.rows[int(outcome["episode"])]
        row["attempts"] = int(row["attempts"]) + 1
        done = outcome["status"] == "done"
        row["status"] = "done" if done else ("failed" if final else "pending")
        if outcome.get("params") is not None:
            row["params"] = json.dumps(outcome["params"])
        store = outcome.get("store")
        row.update(
            steps=int(outcome.get("steps", 0)),
            wall_time=float(outcome.get("wall_time", 0.0)),
            cpu_time=float(outcome.get("cpu_time", 0.0)),
            error=str(outcome.get("error", "")),
            worker_host=str(outcome.get("worker_host", "")),
            worker_pid=int(outcome.get("worker_pid", 0)),
            startup=float(outcome.get("startup", 0.0)),
            reused=bool(outcome.get("reused", False)),
            store=str(Path(store).relative_to(self.path.resolve())) if done and store else "",
            finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        self._unsaved = True
        if time.monotonic() - self._saved_at >= self.SAVE_INTERVAL:
            self.save()

    def close(self) -> None:
        """Write the manifest if rows changed since it was last written; release the lock."""
        try:
            if self._unsaved:
                self.save()
        finally:
            self._lock.close()

    def sync_before_save(self) -> bool:
        """From now on, sync the dataset's file system before every manifest save.

        Episode stores written without syncs of their own (``EpisodeTask.durable`` False)
        are then on disk before the manifest names them done. Syncs once now; returns False
        (and changes nothing) where the platform cannot sync a file system in one call.
        """
        from runtime.recording import sync_file_system

        self._sync = sync_file_system(self.path)
        return self._sync

    def save(self) -> None:
        """Write the manifest atomically (temp file + rename, mode kept).

        Raises:
            OSError: the file system reported a write error while syncing.
        """
        if self._sync:
            from runtime.recording import sync_file_system

            sync_file_system(self.path)
        pa, pq = _pyarrow()
        rows = [self.rows[k] for k in sorted(self.rows)]
        table = pa.Table.from_pylist(rows, schema=_schema())
        self._write(self.path / MANIFEST, lambda handle: pq.write_table(table, handle))
        self._unsaved = False
        self._saved_at = time.monotonic()


@dataclass(frozen=True)
class EpisodeEntry:
    """One episode of a dataset (a manifest row).

    Attributes:
        episode: episode id.
        status: ``done`` / ``failed`` / ``pending``.
        row: the manifest row.
        store: the recording store, or None when the episode is not done.
    """

    episode: int
    status: str
    row: dict[str, Any]
    store: Path | None
    folder: Path | None = None  # the dataset (for messages)

    @property
    def params(self) -> dict[str, Any]:
        """The episode's drawn parameters.

        Raises:
            SimrtError: the manifest's ``params`` of the episode is not a JSON object.
        """
        text = self.row.get("params") or ""
        try:
            params = json.loads(text) if text else {}
        except ValueError as error:
            params = error
        if not isinstance(params, dict):
            raise SimrtError(
                f"{(self.folder or Path()) / MANIFEST}: episode {self.episode}: params is not a "
                f"JSON object ({params})"
            )
        return params

    def open(self) -> Any:
        """The episode's :class:`~runtime.recording.RecordingReader` (chunk by chunk)."""
        from runtime.recording import open_recording

        if self.store is None:
            raise SimrtError(f"episode {self.episode} has no recording ({self.status})")
        return open_recording(self.store)

    def load(self) -> Any:
        """The episode's recording loaded into memory (:class:`~runtime.recording.Recording`)."""
        return self.open().load()


class DatasetReader:
    """A finished (or partly finished) dataset: its manifest and its episodes.

    Attributes:
        path: the dataset folder.
        spec: the batch spec it was made from (JSON data).
    """

    def __init__(self, path: Path, spec: dict[str, Any], rows: list[dict[str, Any]]) -> None:
        self.path = path
        self.spec = spec
        self._rows = {int(r["episode"]): r for r in rows}

    @property
    def manifest(self) -> Any:
        """The manifest as a ``pyarrow.Table`` (``.to_pandas()`` for a data frame)."""
        pa, _ = _pyarrow()
        return pa.Table.from_pylist([self._rows[k] for k in sorted(self._rows)], schema=_schema())

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, episode: int) -> EpisodeEntry:
        row = self._rows.get(int(episode))
        if row is None:
            raise KeyError(f"{self.path}: no episode {episode}")
        store = self.path / row["store"] if row["status"] == "done" and row["store"] else None
        return EpisodeEntry(int(row["episode"]), str(row["status"]), row, store, self.path)

    def __iter__(self) -> Iterator[EpisodeEntry]:
        for episode in sorted(self._rows):
            yield self[episode]

    def done(self) -> Iterator[EpisodeEntry]:
        """The episodes with a complete recording, in id order."""
        return (entry for entry in self if entry.store is not None)


def load_dataset(path: str | Path) -> DatasetReader:
    """Open a batch dataset.

    Args:
        path: the dataset folder (``simrt batch ... --out PATH``).

    Returns:
        The :class:`DatasetReader`: ``.manifest`` (Parquet table), iteration over episodes.

    Raises:
        SimrtError: not a simrt dataset, or an unreadable manifest.
    """
    path = Path(path)
    meta_path = path / "dataset.json"
    try:
        meta = json.loads(meta_path.read_text())
    except FileNotFoundError:
        raise SimrtError(f"{path}: not a simrt dataset (no dataset.json)") from None
    except (OSError, ValueError) as exc:
        raise SimrtError(f"{meta_path}: unreadable dataset metadata: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise SimrtError(f"{meta_path}: not a simrt dataset")
    manifest = path / MANIFEST
    rows = _read_manifest(manifest) if manifest.exists() else []
    return DatasetReader(path, dict(meta.get("spec") or {}), rows)
