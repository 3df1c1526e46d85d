"""The content of a dataset's scenes, recorded with it and checked before it is reused.

Recorded when the dataset is made; checked when it is resumed or one of its episodes is
run again (``simrt run --episode``).

``dataset.json`` holds ``scenes``: per scene path of the spec, the SHA-256 of every layer
file its stage uses (``runtime.run.scene_cache.layer_digests``: sublayers, references,
payloads). A resume or an ``--episode`` whose scene's files differ is refused with one line
naming the first changed file, unless the caller allows it (``--allow-changed-scene``);
then ``dataset.json`` gets a ``scene_changes`` entry (time, what changed, by which command)
and an episode run again records the change in its run metadata.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from runtime.errors import SimrtError

__all__ = ["check_dataset_scenes", "check_episode_scene", "scene_changes", "scene_digests"]

_KEY = "scenes"


def scene_digests(scene: str) -> dict[str, str]:
    """SHA-256 of every layer file the stage of ``scene`` uses, by path.

    Raises:
        SimrtError / FileNotFoundError: the scene cannot be opened.
    """
    from runtime.run.scene_cache import layer_digests
    from runtime.schema import open_stage

    return layer_digests(open_stage(str(scene)))


def scene_changes(recorded: dict[str, str], current: dict[str, str]) -> list[str]:
    """One phrase per difference: ``FILE changed`` / ``FILE no longer used`` / ``FILE added``."""
    changes = []
    for path, digest in recorded.items():
        if path not in current:
            changes.append(f"{path} no longer used")
        elif current[path] != digest:
            changes.append(f"{path} changed")
    changes += [f"{path} added" for path in current if path not in recorded]
    return changes


def _read(meta_path: Path) -> dict[str, Any]:
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError) as error:
        raise SimrtError(f"{meta_path}: unreadable dataset metadata: {error}") from None
    if not isinstance(meta, dict):
        raise SimrtError(f"{meta_path}: not a simrt dataset")
    return meta


def _write(meta_path: Path, meta: dict[str, Any]) -> None:
    from runtime._files import atomic_write_text

    atomic_write_text(meta_path, json.dumps(meta, indent=2))


def _refusal(where: str, scene: str, changes: list[str], what: str) -> SimrtError:
    more = f" (and {len(changes) - 1} more)" if len(changes) > 1 else ""
    return SimrtError(
        f"{where}: scene {scene}: {changes[0]}{more} since the dataset was made; {what} would "
        "mix scene versions (use a new --out folder, or --allow-changed-scene to run anyway "
        "and record it)"
    )


def check_dataset_scenes(
    dataset: str | Path, scenes: list[str], *, allow_changed: bool = False
) -> list[str]:
    """Record the scenes' content in a new dataset, or check it against a resumed one.

    Args:
        dataset: the dataset folder (its ``dataset.json`` exists; the caller holds its lock).
        scenes: the spec's scene paths.
        allow_changed: run a resume whose scenes changed (recorded in ``scene_changes``).

    Returns:
        The changes allowed (empty when the scenes are as recorded).

    Raises:
        SimrtError: a scene changed (and not ``allow_changed``), or cannot be opened.
    """
    meta_path = Path(dataset) / "dataset.json"
    meta = _read(meta_path)
    current = {scene: scene_digests(scene) for scene in dict.fromkeys(scenes)}
    recorded = meta.get(_KEY)
    if not isinstance(recorded, dict):  # a new dataset (or one made before digests)
        meta[_KEY] = current
        _write(meta_path, meta)
        return []
    allowed = []
    for scene, digests in current.items():
        old = recorded.get(scene)
        changes = scene_changes(old, digests) if isinstance(old, dict) else []
        if changes and not allow_changed:
            raise _refusal(str(dataset), scene, changes, "resuming")
        allowed += [f"{scene}: {change}" for change in changes]
    if allowed:
        history = meta.setdefault("scene_changes", [])
        history.append({"at": time.time(), "by": "batch resume", "changes": allowed})
        for scene, digests in current.items():  # the content the next episodes use
            recorded[scene] = digests
        _write(meta_path, meta)
    return allowed


def check_episode_scene(
    dataset: str | Path, scene: str, *, allow_changed: bool = False
) -> list[str]:
    """Check the scene of an episode run again (``simrt run --episode``) against its dataset.

    Returns:
        The changes allowed (empty when the scene is as recorded, or the dataset predates
        content digests).

    Raises:
        SimrtError: the scene changed and not ``allow_changed``.
    """
    meta = _read(Path(dataset) / "dataset.json")
    recorded = (meta.get(_KEY) or {}).get(scene)
    if not isinstance(recorded, dict):
        return []
    changes = scene_changes(recorded, scene_digests(scene))
    if changes and not allow_changed:
        raise _refusal(f"--episode {dataset}", scene, changes, "running the episode again")
    return changes
