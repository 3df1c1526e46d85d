"""What one worker process keeps between episodes, and where its attempts record.

**Worker cache.** A worker opens each scene's stage once and builds each engine once (per
robot, dt and accelerations flag): :data:`WORKER_CACHE`, a :class:`WorkerCache`. Before
every later episode the engine's randomized model arrays are restored
(:class:`~runtime.batch.randomize.ModelSnapshot`) and ``MujocoEngine.reset()``
(``mj_resetData`` + authored state) puts it back to its state right after the build, so the
episode steps bit for bit like a freshly built one. Ray scenes and IK chains are memoised
per scene too (the worker never edits its stages). (The on-disk cache of compiled scenes,
keyed by layer content, is :class:`runtime.run.scene_cache.SceneCache`; a worker's first
build of a scene reads it.)

**Attempts.** An attempt records into ``<dataset>/.attempts/<id>-<host>-<pid>.zarr``
(:func:`attempt_path`) and is renamed onto its final path once complete, or into
``<dataset>/failed/`` when it fails (:func:`move_over`). Simulated episodes
(:mod:`runtime.batch.episode`) and replayed logs (:mod:`runtime.batch.replay`) share both.
"""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path
from typing import Any

from runtime.batch.randomize import ModelSnapshot

__all__ = ["WORKER_CACHE", "WorkerCache", "attempt_path", "failed_path", "move_over"]


class WorkerCache:
    """Stages, scene settings and engines of this process, built once each."""

    def __init__(self) -> None:
        self.stages: dict[str, tuple[Any, dict[str, Any]]] = {}
        self.engines: dict[tuple[Any, ...], tuple[Any, ModelSnapshot]] = {}
        self.ray_scenes: dict[str, dict[tuple[str, ...], Any]] = {}  # by scene, body paths
        self.ik_chains: dict[str, dict[tuple[str, str], Any]] = {}  # by scene, (root, link)
        self.builds = 0  # engines built by this process
        self.episodes = 0  # episodes started by this process

    def stage(self, scene: str) -> tuple[Any, dict[str, Any]]:
        """The open stage of ``scene`` and its run settings."""
        entry = self.stages.get(scene)
        if entry is None:
            from runtime.run.config import read_scene_settings
            from runtime.run.scene import open_scene_stage

            stage = open_scene_stage(scene)
            entry = self.stages[scene] = (stage, read_scene_settings(stage))
        return entry

    def engine(
        self, scene: str, robot: str | None, dt: float | None, accelerations: bool
    ) -> tuple[Any, bool]:
        """A cached engine in its authored state, and whether it was reused.

        Returns:
            ``(engine, reused)``.
        """
        key = (scene, robot, dt, bool(accelerations))
        entry = self.engines.get(key)
        if entry is not None:
            engine, snapshot = entry
            snapshot.restore()
            engine.reset()
            return engine, True
        from runtime.run.build import build_engine, open_scene_cache
        from runtime.run.scene import find_robot

        stage, settings = self.stage(scene)
        robot_prim = find_robot(stage, robot)
        # through the scene cache, like `simrt run`: a worker's first episode reads the
        # compiled model instead of building it (no mesh hulls, no trimesh / SciPy import)
        cache = open_scene_cache(stage, dt, bool(settings.get("cache", True)))
        engine = build_engine(
            stage,
            cache,
            robot_prim=robot_prim,
            dt=dt,
            compute_accelerations=bool(accelerations),
        )
        if robot_prim is not None and getattr(engine, "dof_table", None) is None:
            from runtime.schema.dof import build_dof_table

            engine.dof_table = build_dof_table(stage, robot_prim)  # read by run_scene
        self.engines[key] = (engine, ModelSnapshot(engine.model))
        self.builds += 1
        return engine, False


WORKER_CACHE = WorkerCache()
"""This process's cache (one per worker process)."""


def attempt_path(out: str | os.PathLike[str]) -> Path:
    """Where this process records an attempt at the episode whose final store is ``out``."""
    out = Path(out)
    host = socket.gethostname().replace("/", "_")
    return out.parent.parent / ".attempts" / f"{out.stem}-{host}-{os.getpid()}.zarr"


def failed_path(out: str | os.PathLike[str], attempt: Path) -> Path:
    """Where a failed ``attempt`` at the episode whose final store is ``out`` is kept."""
    return Path(out).parent.parent / "failed" / attempt.name


def move_over(source: Path, destination: Path) -> None:
    """Rename a store directory onto ``destination`` (replacing an older one)."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    if destination.exists():
        trash = source.parent / f".old-{destination.name}-{os.getpid()}"
        os.rename(destination, trash)
        shutil.rmtree(trash, ignore_errors=True)
    os.rename(source, destination)
