"""Where a run's recording goes when the user did not name a store: nothing else is touched.

- :func:`scratch_folder`: a run without ``--out`` records into a scratch store in
  ``$TMPDIR/simrt-scratch-UID/`` (mode 0700), one folder per run named after its process.
  The run removes it after its summary; a run that fails leaves it to its process's exit;
  folders of processes that no longer run (a SIGKILL) are removed by the next run that
  starts one.
- :func:`check_export_store`: ``--out FILE.npz`` records into ``FILE.zarr`` beside it; an
  existing ``FILE.zarr`` is replaced only when an earlier run recorded it for that same
  export (its run metadata names it), or with ``force``.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from pathlib import Path

from runtime.errors import SimrtError

__all__ = ["EXPORT_KEY", "check_export_store", "remove_scratch_folders", "scratch_folder"]

EXPORT_KEY = "export_to"
"""The run metadata naming the export file a store was recorded for."""


def _scratch_root() -> Path:
    root = Path(tempfile.gettempdir()) / f"simrt-scratch-{os.getuid()}"
    try:
        os.mkdir(root, 0o700)
    except FileExistsError:
        pass
    status = os.lstat(root)
    if not os.path.isdir(root) or os.path.islink(root) or status.st_uid != os.getuid():
        raise SimrtError(f"{root}: the scratch folder is not this user's own folder")
    if status.st_mode & 0o077:
        os.chmod(root, 0o700)
    return root


def _sweep(root: Path) -> None:
    """Remove the scratch folders of processes that no longer run."""
    for folder in root.glob("run-*"):
        try:
            pid = int(folder.name.split("-")[1])
            os.kill(pid, 0)
            continue  # (a live process's run)
        except ProcessLookupError:
            pass
        except (ValueError, IndexError, PermissionError):
            continue
        shutil.rmtree(folder, ignore_errors=True)


_MADE: list[Path] = []  # this process's scratch folders (removed at exit)


def scratch_folder() -> Path:
    """A new scratch folder for one run (see the module docstring); removed at exit."""
    root = _scratch_root()
    _sweep(root)
    folder = Path(tempfile.mkdtemp(prefix=f"run-{os.getpid()}-", dir=root))
    if not _MADE:
        atexit.register(remove_scratch_folders)
    _MADE.append(folder)
    return folder


def remove_scratch_folders() -> None:
    """Remove this process's scratch folders (at exit; ``simrt``'s fast exit calls it)."""
    while _MADE:
        shutil.rmtree(_MADE.pop(), ignore_errors=True)


def check_export_store(store: Path, export: Path, *, force: bool = False) -> None:
    """Refuse to replace an existing store at ``store`` that was not recorded for ``export``.

    Raises:
        SimrtError: ``store`` holds a recording of its own (not made for ``export``).
    """
    if force or not os.path.lexists(store):
        return
    if store.is_dir() and not store.is_symlink() and not any(store.iterdir()):
        return  # (an empty folder holds nothing to lose)
    recorded_for = None
    try:
        with open(store / "zarr.json", encoding="utf-8") as handle:
            run = json.load(handle)["attributes"]["simrt"]["run"]
        recorded_for = run.get(EXPORT_KEY)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    if recorded_for != export.name:
        raise SimrtError(
            f"{store}: exists and was not recorded for {export.name}; refusing to replace it "
            "(remove it, choose another --out, or pass --force)"
        )
