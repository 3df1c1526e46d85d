"""Atomic file writing that keeps the destination's permissions.

Every file simrt writes goes through :func:`atomic_write`: the content is written to a
temporary file in the destination's directory, flushed to disk, given the mode the
destination should have, and moved over the destination with ``os.replace``. A reader never
sees a half-written file, and a crash leaves the old file intact.

``tempfile.mkstemp`` creates its file with mode 0600; renaming it over ``panda.usda`` would
silently turn a user's 0644 asset into 0600. So the temporary file is given the existing
destination's mode, or, for a new file, what ``open(path, "w")`` would have given
(0666 minus the process umask).
"""

from __future__ import annotations

import os
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

__all__ = [
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_stream",
    "atomic_write_text",
    "destination_mode",
]

_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process umask (read by setting and restoring it, under a lock)."""
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def destination_mode(path: str | os.PathLike[str]) -> int:
    """The permission bits a file written at ``path`` should get.

    Args:
        path: the destination.

    Returns:
        The existing file's permission bits (including setuid/setgid/sticky), or
        ``0o666 & ~umask`` when it does not exist.
    """
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return 0o666 & ~_umask()


def atomic_write(
    path: str | os.PathLike[str],
    write: Callable[[str], None],
    *,
    suffix: str | None = None,
    durable: bool = True,
) -> Path:
    """Write ``path`` atomically through a temporary file, keeping the destination's mode.

    Args:
        path: the destination file. Its directory must exist.
        write: called with the temporary file's path; writes the whole content there (e.g.
            ``layer.Export``). It may raise; the temporary file is then removed.
        suffix: the temporary file's suffix (default: the destination's, so writers that
            pick a format by suffix, like USD's, see the right one).
        durable: flush the content to disk before the rename (False: a file that a later
            sync makes durable, such as a recording store's documents before its commit).

    Returns:
        The destination path.

    Raises:
        OSError: the directory is not writable, or the write or rename failed.
    """
    target = Path(path)
    mode = destination_mode(target)
    directory = target.parent if str(target.parent) else Path(".")
    handle, tmp = tempfile.mkstemp(
        prefix=f".{target.name}.",
        suffix=target.suffix if suffix is None else suffix,
        dir=directory,
    )
    os.close(handle)
    try:
        write(tmp)
        if durable:
            with open(tmp, "rb+") as stream:
                os.fsync(stream.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return target


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, durable: bool = True) -> Path:
    """Write ``data`` to ``path`` atomically, keeping the destination's mode.

    Args:
        path: the destination file.
        data: the complete content.
        durable: see :func:`atomic_write`.

    Returns:
        The destination path.
    """

    def write(tmp: str) -> None:
        with open(tmp, "wb") as stream:
            stream.write(data)

    return atomic_write(path, write, durable=durable)


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically, keeping the destination's mode.

    Args:
        path: the destination file.
        text: the complete content.
        encoding: text encoding.

    Returns:
        The destination path.
    """
    return atomic_write_bytes(path, text.encode(encoding))


def atomic_write_stream(path: str | os.PathLike[str], write: Callable[[IO[bytes]], None]) -> Path:
    """Call ``write(binary file)`` on a temporary file beside ``path``, then rename it over it.

    For writers that stream into an open file (exports, figures, manifests). The directory
    is created when missing; otherwise as :func:`atomic_write` (the result keeps an existing
    destination's mode, a new file gets the umask default; the temporary file, suffix
    ``.tmp``, is removed on any failure).

    Args:
        path: the destination file.
        write: writes the whole content to the binary file it is given.

    Returns:
        The destination path.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)

    def to_file(tmp: str) -> None:
        with open(tmp, "wb") as handle:
            write(handle)

    return atomic_write(target, to_file, suffix=".tmp")
