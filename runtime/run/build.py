"""Building a scene for a run: the MuJoCo engine and the ray scene, through the scene cache.

:func:`build_engine` returns a :class:`~runtime.engine.mujoco_engine.MujocoEngine` whose
builder output (compiled model + USD bookkeeping) comes from the scene cache when the
stage's layers, ``dt`` and the versions match, else from the builder (then stored).
:func:`cached_ray_scene` / :func:`store_ray_scene` do the same for the ray scene (its
tessellation and BVHs), which the raycast sensors otherwise build at their first step.
"""

from __future__ import annotations

import importlib
import io
import logging
import pickle
import types
from pathlib import Path
from typing import Any

from runtime.run.scene_cache import SceneCache, pickle_reader, pickle_writer, scene_key

__all__ = ["build_engine", "cached_ray_scene", "open_scene_cache", "store_ray_scene"]

_LOG = logging.getLogger(__name__)
_BUILT_FIELDS_SKIPPED = ("spec", "model")


def open_scene_cache(stage: Any, dt: float | None, enabled: bool) -> SceneCache:
    """The cache entry of ``stage`` built with step ``dt`` (disabled: always misses)."""
    if not enabled:
        return SceneCache("0" * 64, enabled=False)
    try:
        key = scene_key(stage, dt=dt)
    except Exception as error:  # noqa: BLE001 - an unhashable stage just is not cached
        _LOG.warning("scene cache disabled for this stage: %s", error)
        return SceneCache("0" * 64, enabled=False)
    return SceneCache(key)


def build_engine(
    stage: Any,
    cache: SceneCache,
    *,
    robot_prim: Any,
    dt: float | None,
    compute_accelerations: bool,
) -> Any:
    """A MuJoCo engine for ``stage``, its model from ``cache`` when the entry is valid."""
    import mujoco

    from runtime.engine import physics_attrs
    from runtime.engine.mujoco_engine import MujocoEngine

    build_log = logging.getLogger("runtime.engine")  # (the builder's log, _build_base.LOG)

    def read_model(path: Path) -> Any:
        return mujoco.MjModel.from_binary_path(str(path))

    built = None
    model = cache.load("model.mjb", read_model) if cache.enabled else None
    fields = cache.load("built.pkl", pickle_reader) if model is not None else None
    if fields is not None:
        from runtime.engine._build_types import BuiltModel

        built = BuiltModel(spec=None, model=model, **fields)  # type: ignore[arg-type]
    if built is not None:
        for text in built.warnings:  # what the builder would have logged
            build_log.warning(text)
        physics_attrs.report_ignored_attributes(stage, build_log)
    else:
        from runtime.engine.builder import build_model  # (a cache miss only)

        built = build_model(stage, dt)
        if cache.enabled:
            fields = {
                name: value
                for name, value in vars(built).items()
                if name not in _BUILT_FIELDS_SKIPPED
            }
            cache.store(
                {
                    "model.mjb": lambda path: mujoco.mj_saveModel(built.model, str(path), None),
                    "built.pkl": pickle_writer(fields),
                }
            )
    return MujocoEngine(
        stage,
        robot_prim=robot_prim,
        dt=dt,
        compute_accelerations=compute_accelerations,
        built=built,
    )


def cached_ray_scene(cache: SceneCache, body_paths: tuple[str, ...]) -> Any:
    """The cached ray scene of these bodies (numba backend), or None."""
    if not cache.enabled:
        return None

    def read(path: Path) -> Any:
        from runtime.sensors import _bvh_kernels
        from runtime.sensors.ray_scene import RayScene

        with open(path, "rb") as handle:
            paths, state = _ModuleUnpickler(handle).load()
        if tuple(paths) != tuple(body_paths):
            raise ValueError("ray scene of other bodies")
        scene = RayScene.__new__(RayScene)
        scene.__dict__.update(state)
        scene._kernels = _bvh_kernels
        return scene

    return cache.load("rayscene.pkl", read)


def store_ray_scene(cache: SceneCache, scene: Any) -> None:
    """Keep a built ray scene in ``cache`` (numba backend only; others are rebuilt)."""
    if not cache.enabled or scene is None or "rayscene.pkl" in cache.hits:
        return
    if type(getattr(scene, "backend", None)).__name__ != "NumbaBvhBackend":
        return
    state = {k: v for k, v in vars(scene).items() if k != "_kernels"}
    buffer = io.BytesIO()
    try:
        _ModulePickler(buffer).dump((tuple(scene.body_paths), state))
    except Exception as error:  # noqa: BLE001 - an unpicklable scene is rebuilt each run
        _LOG.debug("ray scene not cached: %s", error)
        return
    cache.store({"rayscene.pkl": lambda path: path.write_bytes(buffer.getvalue())})


class _ModulePickler(pickle.Pickler):
    """Pickles references to modules (kernel modules held by backends) by name."""

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, types.ModuleType):
            return ("module", obj.__name__)
        return None


class _ModuleUnpickler(pickle.Unpickler):
    def persistent_load(self, pid: Any) -> Any:
        kind, name = pid
        if kind != "module" or not str(name).startswith("runtime."):
            raise pickle.UnpicklingError(f"unexpected reference {pid!r}")
        return importlib.import_module(name)
