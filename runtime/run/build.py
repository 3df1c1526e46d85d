"""Building a scene for a run: the MuJoCo engine and the ray scene, through the scene cache.

:func:`build_engine` returns a :class:`~runtime.engine.mujoco_engine.MujocoEngine` whose
builder output (compiled model + USD bookkeeping) comes from the scene cache when the
stage's layers, ``dt`` and the versions match, else from the builder (then stored).
:func:`cached_ray_scene` / :func:`store_ray_scene` do the same for the ray scene (its
tessellation and BVHs), which the raycast sensors otherwise build at their first step.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

import numpy as np

from runtime.run._plain_data import read_plain, write_plain
from runtime.run.scene_cache import SceneCache, scene_key

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
    fields = cache.load("built.npz", _read_built(cache.key)) if model is not None else None
    if fields is not None:
        from runtime.engine import BuiltModel

        built = BuiltModel(spec=None, model=model, **fields)  # type: ignore[arg-type]
        why = _mismatch(built, stage, dt)
        if why:
            cache.discard(why)
            built = None
    engine = None
    if built is not None:
        try:
            engine = MujocoEngine(
                stage,
                robot_prim=robot_prim,
                dt=dt,
                compute_accelerations=compute_accelerations,
                built=built,
            )
        except Exception as error:  # noqa: BLE001 - a cached build that fails: rebuild it
            cache.discard(f"unusable ({type(error).__name__}: {error})")
            built = None
    if built is not None:
        for text in built.warnings:  # what the builder would have logged
            build_log.warning(text)
        physics_attrs.report_ignored_attributes(stage, build_log)
        return engine
    from runtime.engine.builder import build_model  # (a cache miss only)

    built = build_model(stage, dt)
    if cache.enabled:
        fields = {
            name: value for name, value in vars(built).items() if name not in _BUILT_FIELDS_SKIPPED
        }
        cache.store(
            {
                "model.mjb": lambda path: mujoco.mj_saveModel(built.model, str(path), None),
                "built.npz": lambda path: write_plain(
                    path, fields, _built_classes(), key=cache.key
                ),
            }
        )
    return MujocoEngine(
        stage,
        robot_prim=robot_prim,
        dt=dt,
        compute_accelerations=compute_accelerations,
        built=built,
    )


def _built_classes() -> tuple[type, ...]:
    from runtime.engine import DofBinding

    return (DofBinding,)


def _read_built(key: str) -> Any:
    def read(path: Path) -> dict[str, Any]:
        fields, meta = read_plain(path, _built_classes())
        if meta.get("key") != key or not isinstance(fields, dict):
            raise ValueError("built data of another scene key")
        return fields

    return read


def _scene_steps(stage: Any, dt: float | None) -> set[float]:
    """The time steps the builder may choose for ``stage`` (``dt``: the run's override)."""
    if dt is not None:
        return {float(dt)}
    from pxr import UsdPhysics

    steps = set()
    for prim in stage.Traverse():
        if not prim.IsA(UsdPhysics.Scene):
            continue
        value = None
        for name in (
            "mjc:option:timestep",
            "physxScene:timeStepsPerSecond",
            "newton:timeStepsPerSecond",
        ):
            attribute = prim.GetAttribute(name)
            if attribute and attribute.HasAuthoredValue():
                value = float(attribute.Get())
                value = value if name == "mjc:option:timestep" else 1.0 / value
                break
        steps.add(1.0 / 60.0 if value is None else value)
    return steps or {1.0 / 60.0}


def _mismatch(built: Any, stage: Any, dt: float | None) -> str:
    """Why a cached build cannot be used for ``stage``, or "" when it may.

    Its model must have the time step the scene asks for and agree with its own bookkeeping
    (sizes, indices, prims that exist), so that a forged or swapped entry is rebuilt.
    """
    model = built.model
    step = float(model.opt.timestep)
    if step != float(built.dt) or step not in _scene_steps(stage, dt):
        return f"time step {step} is not the scene's"
    if not np.array_equal(np.asarray(model.opt.gravity), np.asarray(built.gravity)):
        return "gravity differs from its bookkeeping"
    sizes = (
        (built.body_ids, len(built.body_paths)),
        (built.static_positions, len(built.body_paths)),
        (built.static_orientations, len(built.body_paths)),
        (built.is_static, len(built.body_paths)),
        (built.geom_body_index, model.ngeom),
        (built.initial_qpos, model.nq),
    )
    if any(np.asarray(array).shape[:1] != (size,) for array, size in sizes):
        return "bookkeeping of another model"
    if built.initial_ctrl is not None and len(built.initial_ctrl) != model.nu:
        return "bookkeeping of another model"
    if built.initial_qvel is not None and len(built.initial_qvel) != model.nv:
        return "bookkeeping of another model"
    if len(built.body_ids) and not (
        0 <= int(np.min(built.body_ids)) <= int(np.max(built.body_ids)) < model.nbody
    ):
        return "bookkeeping of another model"
    for dof in built.dofs:
        if not (
            0 <= dof.mj_joint < model.njnt
            and 0 <= dof.qpos_adr < model.nq
            and 0 <= dof.dof_adr < model.nv
            and -1 <= dof.actuator < model.nu
        ):
            return f"DOF {dof.name} outside the model"
        if not stage.GetPrimAtPath(dof.joint_path):
            return f"joint {dof.joint_path} not in the scene"
    for path in built.body_paths:
        if not stage.GetPrimAtPath(path):
            return f"body {path} not in the scene"
    if not all(math.isfinite(float(v)) for v in np.asarray(built.initial_qpos).ravel()):
        return "non-finite initial state"
    return ""


def _ray_classes() -> tuple[type, ...]:
    from runtime.rays import NumbaBvhBackend, SolidShape

    return (NumbaBvhBackend, SolidShape)


def cached_ray_scene(cache: SceneCache, body_paths: tuple[str, ...]) -> Any:
    """The cached ray scene of these bodies (numba backend), or None."""
    if not cache.enabled:
        return None

    def read(path: Path) -> Any:
        from runtime.rays import RayScene

        state, meta = read_plain(path, _ray_classes())
        if meta.get("key") != cache.key:
            raise ValueError("ray scene of another scene key")
        if tuple(meta.get("body_paths", ())) != tuple(body_paths):
            raise ValueError("ray scene of other bodies")
        if not isinstance(state, dict) or tuple(state.get("body_paths", ())) != tuple(body_paths):
            raise ValueError("ray scene of other bodies")
        return RayScene.from_state(state)

    return cache.load("rayscene.npz", read)


def store_ray_scene(cache: SceneCache, scene: Any) -> None:
    """Keep a built ray scene in ``cache`` (numba backend only; others are rebuilt)."""
    if not cache.enabled or scene is None or "rayscene.npz" in cache.hits:
        return
    if type(getattr(scene, "backend", None)).__name__ != "NumbaBvhBackend":
        return
    state = scene.plain_state()
    paths = list(scene.body_paths)

    def write(path: Path) -> None:
        write_plain(path, state, _ray_classes(), key=cache.key, body_paths=paths)

    cache.store({"rayscene.npz": write})
