"""The scene cache: what building a scene produces, kept on disk for the next run.

Building a scene costs seconds (USD physics parsing, convex hulls, MuJoCo compilation, the
ray scene's tessellation and BVHs); a run of 200 steps costs less. The cache keeps, per
scene, the compiled ``MjModel`` (``model.mjb``), the builder's bookkeeping (body paths,
DOF bindings, initial state, warnings) and the ray scene, under a key made of:

- the content (SHA-256) of every USD layer the stage uses (sublayers, references,
  payloads; anonymous layers by their text), so editing any file of the scene misses;
- the run parameters that change the build (``dt``, the backend);
- the simrt, MuJoCo, usd-core, NumPy and Numba versions and a fingerprint of simrt's own
  source files (their paths, sizes and modification times).

Entries live under ``$SIMRT_CACHE_DIR`` or the user cache folder (``platformdirs``), one
folder per key, written to a temp folder and renamed into place (a reader never sees half
an entry). Each file's SHA-256 is stored with it and checked on load: a corrupt, partial or
foreign entry is logged, removed and rebuilt, never used. ``cache=False`` (``simrt run
--no-cache``) bypasses it.

Trust (docs/guides/integrity.md): entries are plain data (MuJoCo's ``.mjb``, NumPy arrays
without objects, JSON; ``runtime.run._plain_data``), never pickles, so no entry can run
code. The cache folder is created with mode 0700 and its files 0600; a cache folder, entry
folder or file that is not owned by this user, is writable by group or others, or is a
symbolic link is refused with one warning line (the scene is built as without a cache).
What an entry holds is then checked against what the scene asks before it is used (see
``runtime.run.build``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["SceneCache", "cache_root", "layer_digests", "scene_key"]

_LOG = logging.getLogger(__name__)
_ENTRY_VERSION = 3  # 2: plain-data entries (1 held pickles); 3: arrays packed in one member


def cache_root() -> Path:
    """The cache folder: ``$SIMRT_CACHE_DIR``, else the user cache dir + ``/scenes``."""
    override = os.environ.get("SIMRT_CACHE_DIR")
    if override:
        return Path(override)
    try:
        import platformdirs

        return Path(platformdirs.user_cache_dir("simrt")) / "scenes"
    except ImportError:
        return Path.home() / ".cache" / "simrt" / "scenes"


@functools.lru_cache(maxsize=1)
def _installed_versions() -> tuple[tuple[str, str], ...]:
    """Package versions read once per process, from the modules (a run imports them all).

    ``importlib.metadata`` lookups would cost ~0.1 s per run.
    """
    import mujoco
    import numba
    import numpy
    from pxr import Usd

    import runtime

    return (
        ("entry", str(_ENTRY_VERSION)),
        ("simrt", str(runtime.__version__)),
        ("mujoco", str(mujoco.__version__)),
        ("usd-core", ".".join(str(part) for part in Usd.GetVersion())),
        ("numpy", str(numpy.__version__)),
        ("numba", str(numba.__version__)),
    )


def _versions() -> dict[str, str]:
    return dict(_installed_versions())


_CODE: list[str] = []


def _code_fingerprint() -> str:
    """SHA-256 of simrt's own source files (a build made by other code is never reused).

    Over each file's path, size and modification time (nanoseconds): an edit changes them,
    and stat-ing the package's files costs a tenth of reading them all at every start.
    """
    if not _CODE:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        files = []
        for folder, _, names in os.walk(root):
            for name in names:
                if name.endswith(".py"):
                    status = os.stat(os.path.join(folder, name))
                    relative = os.path.relpath(os.path.join(folder, name), root)
                    files.append(f"{relative}:{status.st_size}:{status.st_mtime_ns}")
        _CODE.append(hashlib.sha256("\n".join(sorted(files)).encode()).hexdigest())
    return _CODE[0]


def _layer_contents(stage: Any) -> list[tuple[str, str, str]]:
    """``(identifier, content, file)`` per layer the stage uses.

    A file's content is its SHA-256 and ``file`` its path; a layer without a file (or edited
    in memory) has its text and "".
    """
    layers = []
    for layer in stage.GetUsedLayers():
        path = layer.realPath
        if path and os.path.isfile(path) and not layer.dirty:  # (an edited layer: its text)
            with open(path, "rb") as handle:
                content = hashlib.sha256(handle.read()).hexdigest()
            layers.append((layer.identifier, content, path))
        else:
            text = layer.ExportToString()
            name = layer.identifier if not layer.anonymous else "<anonymous>"
            layers.append((name, text, ""))
    return layers


def layer_digests(stage: Any) -> dict[str, str]:
    """SHA-256 of every layer file ``stage`` uses, by file path (the scene's content).

    Layers without a file (anonymous ones) and layers edited in memory are left out: they
    are not something a later run can read again.
    """
    return {path: content for _, content, path in _layer_contents(stage) if path}


def scene_key(stage: Any, **params: Any) -> str:
    """The cache key of ``stage`` built with ``params`` (see the module docstring)."""
    digest = hashlib.sha256()
    layers = [(name, content) for name, content, _ in _layer_contents(stage)]
    payload = {
        "layers": sorted(layers),
        "params": params,
        "versions": _versions(),
        "code": _code_fingerprint(),
    }
    digest.update(json.dumps(payload, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def _sha(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


class SceneCache:
    """One scene's cache entry: load what is there, store what was built.

    Args:
        key: :func:`scene_key` of the stage and its build parameters.
        root: the cache folder (default :func:`cache_root`).
        enabled: False makes every lookup miss and every store a no-op.
    """

    def __init__(self, key: str, root: Path | None = None, enabled: bool = True) -> None:
        self.key = key
        self.enabled = bool(enabled)
        self.root = root or cache_root()
        self.folder = self.root / key[:2] / key
        self.hits: list[str] = []
        self.misses: list[str] = []
        self._trusted: bool | None = None

    def _refuse(self, path: Path, why: str) -> bool:
        _LOG.warning(
            "scene cache %s refused: %s (a cache folder must be private to its user); "
            "building without it",
            path,
            why,
        )
        self._trusted = False
        return False

    def _private(self, path: Path) -> bool:
        """True when ``path`` is absent, or is ours, not a link, and not writable by others."""
        try:
            status = os.lstat(path)
        except FileNotFoundError:
            return True
        except OSError as error:
            return self._refuse(path, f"cannot inspect ({error.strerror})")
        if stat.S_ISLNK(status.st_mode):
            return self._refuse(path, "a symbolic link")
        if status.st_uid != os.getuid():
            return self._refuse(path, f"owned by uid {status.st_uid}, not {os.getuid()}")
        if status.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return self._refuse(
                path, f"writable by group or others (mode {status.st_mode & 0o777:o})"
            )
        return True

    def trusted(self) -> bool:
        """The cache folder, this entry's folders and files are private (checked once)."""
        if self._trusted is None:
            self._trusted = all(
                self._private(path) for path in (self.root, self.folder.parent, self.folder)
            )
            if self._trusted and self.folder.is_dir():
                self._trusted = all(self._private(path) for path in self.folder.iterdir())
        return self._trusted

    def trusted_now(self) -> bool:
        """:meth:`trusted` checked again (after this process created folders)."""
        self._trusted = None
        return self.trusted()

    def _manifest(self) -> dict[str, str] | None:
        if not self.trusted():
            return None
        try:
            manifest = json.loads((self.folder / "manifest.json").read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as error:
            self._discard(f"manifest unreadable ({error})")
            return None
        if not isinstance(manifest, dict) or manifest.get("key") != self.key:
            self._discard("manifest of another scene")
            return None
        files = manifest.get("files")
        return files if isinstance(files, dict) else None

    def _discard(self, why: str) -> None:
        self.discard(why)

    def discard(self, why: str) -> None:
        """Remove this entry (one warning line saying why); the scene is rebuilt."""
        _LOG.warning("scene cache entry %s: %s; rebuilding it", self.folder, why)
        if self._trusted:
            shutil.rmtree(self.folder, ignore_errors=True)

    def load(self, name: str, read: Callable[[Path], Any]) -> Any | None:
        """The cached item ``name`` read by ``read(path)``, or None (miss / bad entry)."""
        if not self.enabled:
            return None
        files = self._manifest()
        if files is None or name not in files:
            self.misses.append(name)
            return None
        path = self.folder / name
        try:
            if _sha(path) != files[name]:
                raise ValueError("checksum mismatch")
            value = read(path)
        except Exception as error:  # noqa: BLE001 - any failure means: rebuild
            self._discard(f"{name} unusable ({type(error).__name__}: {error})")
            self.misses.append(name)
            return None
        self.hits.append(name)
        return value

    def store(self, items: dict[str, Callable[[Path], None]]) -> None:
        """Write items (``name -> write(path)``) as a new entry, atomically.

        Items already in the entry are kept; a failure only logs (the run goes on).
        """
        if not self.enabled or not items:
            return
        old = self._manifest() or {}
        if not self.trusted():
            return
        try:
            for folder in (self.root, self.folder.parent):
                if not folder.is_dir():
                    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
                    os.chmod(folder, 0o700)
            if not self.trusted_now():
                return
            tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=self.folder.parent))
            try:
                files = {}
                for name, sha in old.items():
                    if name not in items and (self.folder / name).is_file():
                        shutil.copyfile(self.folder / name, tmp / name)
                        files[name] = sha
                for name, write in items.items():
                    write(tmp / name)
                    files[name] = _sha(tmp / name)
                manifest = {"key": self.key, "files": files, "versions": _versions()}
                (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
                for path in tmp.iterdir():
                    os.chmod(path, 0o600)
                shutil.rmtree(self.folder, ignore_errors=True)
                os.replace(tmp, self.folder)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        except Exception as error:  # noqa: BLE001 - a cache must never fail a run
            _LOG.warning("scene cache %s not written: %s", self.folder, error)
