"""What a store is on disk: the commit-log location, path checks, in-place chunk files.

Shared by the writer (:mod:`runtime.recording.store`) and the readers; never imports zarr.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import json
import os
import shutil
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runtime.errors import SimrtError
from runtime.recording.channels import FORMAT_NAME, ChannelInfo, json_default

__all__ = ["COMMIT_GROUP", "COMMIT_LOG", "RecordingError", "check_store_path", "is_store"]

COMMIT_GROUP = "simrt"
COMMIT_LOG = "simrt/commits.jsonl"
"""The commit log inside a store (in the empty group ``simrt``)."""


class RecordingError(SimrtError):
    """Writing the recording failed (disk full, folder removed, ...).

    Attributes:
        path: the store.
        safe_rows: rows committed to disk before the failure (they load).
    """

    def __init__(self, path: Path, problem: str, safe_rows: int) -> None:
        self.path = path
        self.safe_rows = safe_rows
        where = (
            f"{safe_rows} steps are safe on disk and load"
            if path.is_dir() and safe_rows
            else "no step could be kept"
        )
        super().__init__(f"{path}: {problem} while writing the recording; {where}")


def is_store(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a directory holding a simrt recording store."""
    meta = Path(path) / "zarr.json"
    try:
        with open(meta, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return False
    attrs = data.get("attributes", {}) if isinstance(data, dict) else {}
    simrt = attrs.get("simrt") if isinstance(attrs, dict) else None
    return isinstance(simrt, dict) and simrt.get("format") == FORMAT_NAME


def check_store_path(path: str | os.PathLike[str]) -> Path:
    """Validate a store destination before a run starts.

    Args:
        path: the store directory to create (conventionally ``*.zarr``).

    Returns:
        The path.

    Raises:
        SimrtError: the path is an existing file, or a non-empty directory that is not a
            simrt recording (never overwritten), or its parent cannot be created.
    """
    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise SimrtError(f"{path}: exists and is not a recording store (a directory)")
        if any(path.iterdir()) and not is_store(path):
            raise SimrtError(
                f"{path}: exists, is not empty and is not a simrt recording; "
                "refusing to overwrite it"
            )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SimrtError(f"{path.parent}: cannot create the output folder: {exc}") from exc
    return path


def _write_in_place(root: Path, key: str, data: bytes) -> None:
    """Write one chunk file in place, creating its folders; not synced.

    A commit makes its chunk files durable together (:func:`make_durable`).

    No temporary file: nothing reads a chunk before the commit log names its rows.
    """
    path = root / key
    try:
        handle = open(path, "wb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        make_parents(root, key)
        handle = open(path, "wb")  # noqa: SIM115 - closed below
    with handle:
        handle.write(data)


def make_parents(root: Path, key: str) -> None:
    """Create the folders of ``key`` (a file's key) inside the store folder ``root``.

    Never ``mkdir -p``: a store folder someone removed stays removed.

    Raises:
        FileNotFoundError: ``root`` is gone ("the output folder was removed").
        OSError: a folder could not be made.
    """
    if not root.is_dir():
        raise FileNotFoundError(errno.ENOENT, "the output folder was removed", str(root))
    folder = root
    for part in Path(key).parent.parts:
        folder = folder / part
        try:
            os.mkdir(folder)
        except FileExistsError:
            pass


def _channel_json(info: ChannelInfo) -> dict[str, Any]:
    return json.loads(json.dumps(info.to_json(), default=json_default))


@functools.lru_cache(maxsize=1)
def _versions() -> dict[str, str]:
    from importlib import metadata

    versions = {}
    for name in ("simrt", "zarr", "numpy", "mujoco", "usd-core"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def sync_file_system(root: Path) -> bool:
    """One ``syncfs(2)`` of the file system holding ``root``; False where there is none.

    Raises:
        OSError: the file system reported a write error.
    """
    if _syncfs() is None:
        return False
    make_durable(root, [])
    return True


UNWRITTEN_LIMIT = 64 << 20


def _little_unwritten() -> bool:
    """Whether the machine holds at most :data:`UNWRITTEN_LIMIT` bytes of dirty pages."""
    try:
        with open("/proc/meminfo", "rb") as handle:
            for line in handle:
                if line.startswith(b"Dirty:"):
                    return int(line.split()[1]) * 1024 <= UNWRITTEN_LIMIT
    except (OSError, ValueError, IndexError):
        pass
    return True  # (unknown: syncfs, as before)


@functools.cache
def _syncfs() -> Any:
    """The C library's ``syncfs`` (Linux), or None."""
    try:
        function = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError, TypeError):  # no such call, or no C library handle
        return None
    function.argtypes = [ctypes.c_int]
    function.restype = ctypes.c_int
    return function


def make_durable(root: Path, paths: list[Path]) -> None:
    """Make files just written under ``root`` durable (survive a power cut).

    One ``syncfs(2)`` of the file system holding ``root`` where the C library has it (a
    store commit writes dozens of chunk files: one journal commit instead of one per file),
    else an ``fsync`` per file. ``syncfs`` writes back every dirty page of the file system,
    other programs' too: while the machine holds more than :data:`UNWRITTEN_LIMIT` bytes
    not yet written (``Dirty`` in ``/proc/meminfo``) the files are synced one by one
    instead (measured: 800 MB of another program's data made a commit's ``syncfs`` take
    0.38 s, 35 ``fsync`` calls took 4 ms). ``paths`` empty: ``syncfs`` in any case.

    Raises:
        OSError: the file system reported a write error.
    """
    syncfs = _syncfs()
    if syncfs is not None and (not paths or _little_unwritten()):
        fd = os.open(root, os.O_RDONLY)
        try:
            if syncfs(fd) != 0:
                code = ctypes.get_errno() or errno.EIO
                raise OSError(code, os.strerror(code), str(root))
        finally:
            os.close(fd)
        return
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def new_path_entries(
    channels: Mapping[str, ChannelInfo], logged: dict[str, int]
) -> dict[str, list[str]]:
    """Hit-path table entries not in ``logged`` (entries per channel, updated), by channel."""
    new: dict[str, list[str]] = {}
    for name, info in channels.items():
        table = info.attrs.get("path_table") if info.attrs else None
        if isinstance(table, list):
            done = logged.get(name, 0)
            if len(table) > done:
                new[name] = [str(p) for p in table[done:]]
                logged[name] = done + len(new[name])
    return new


def discard_later(path: Path) -> threading.Thread | None:
    """Move the previous store at ``path`` aside and remove it in a thread; join it later.

    Removing a long run's store (thousands of chunk files) took as long as the new run's
    first hundreds of steps; renamed aside (``.NAME.replaced-PID-N`` beside it), it is
    removed while the new run steps. Such folders left beside it by a killed process are
    removed here too. Returns the removing thread, or None (nothing there, or removed in place
    because it could not be renamed).
    """
    aside = set_aside(path)
    return remove_later(aside) if aside is not None else None


def set_aside(path: Path) -> Path | None:
    """Rename the previous store at ``path`` aside (``.NAME.replaced-PID-N`` beside it).

    Folders set aside by a process that no longer runs are removed first. Returns the
    folder set aside, or None (nothing there, or removed in place because it could not be
    renamed). The caller removes it (:func:`remove_later`) or puts it back
    (:func:`put_back`).
    """
    if not path.exists():  # (a new path: no listing of its folder, which may hold thousands)
        return None
    if path.is_symlink():  # never moved nor removed through: shutil's error, as before
        shutil.rmtree(path)
    _sweep_replaced(path)
    aside = path.with_name(f".{path.name}.replaced-{os.getpid()}-{time.monotonic_ns()}")
    try:
        os.rename(path, aside)
    except OSError:
        shutil.rmtree(path)
        return None
    return aside


def remove_later(aside: Path) -> threading.Thread:
    """Remove a folder set aside in a thread (returned: join it)."""
    thread = threading.Thread(
        target=shutil.rmtree, args=(aside,), kwargs={"ignore_errors": True},
        name="simrt-discard", daemon=True,
    )  # fmt: skip
    thread.start()
    return thread


def put_back(path: Path, aside: Path) -> None:
    """Remove the new store at ``path`` and rename the previous one (``aside``) back."""
    shutil.rmtree(path, ignore_errors=True)
    os.rename(aside, path)


def _sweep_replaced(path: Path) -> None:
    """Remove stores that a process no longer running set aside (:func:`discard_later`)."""
    try:
        leftovers = list(path.parent.glob(f".{path.name}.replaced-*"))
    except OSError:
        return
    for aside in leftovers:
        try:
            pid = int(aside.name.rsplit("-", 2)[-2])
            os.kill(pid, 0)
            continue  # (its process is alive: its own thread removes it)
        except ProcessLookupError:
            pass
        except (ValueError, IndexError, OSError):
            continue
        if aside.is_dir() and (is_store(aside) or not any(aside.iterdir())):
            shutil.rmtree(aside, ignore_errors=True)
