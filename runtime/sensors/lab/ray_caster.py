"""Isaac Lab's ray caster and ray-caster camera over simrt's ray scene.

Rays are cast with :meth:`runtime.rays.scene.RayScene.cast_trusted` against the
collision geometry of the stage: static colliders and the moving bodies at their current
MuJoCo poses (each world its own poses), with the hit collider's id per ray
(``ray_hit_ids``, an index into :attr:`RayCaster.actor_paths`). ``mesh_prim_paths`` limits
the colliders a sensor sees (a height scan sees the ground, not the robot): the sensor then
casts against a scene built from a view of the stage where every other collider is
disabled (the stage itself is not edited).

Alignment (``ray_alignment``): ``"base"`` turns starts and directions with the sensor;
``"yaw"`` turns the starts by the sensor's heading only and keeps the directions (a height
scan stays level); ``"world"`` only translates the starts. ``drift_range`` moves the sensor
by a per-world offset drawn at reset (uniform, each axis); ``ray_cast_drift_range`` moves
the starts in x / y (in the aligned frame) and the hits in z. Hits beyond
``max_distance`` are misses (``inf``).

A sensor whose colliders are only static world-aligned boxes (a height scan of the ground
box: :func:`runtime.rays.box_scene_rows`) updates every due world in one kernel call
without the BVH, reading each world's body pose at its address in the ``MjData``; the
results equal the general path's (frame kernel, ``cast_trusted``, hits kernel) bit for bit.
Over a scene with moving geometry and fewer than ``PARALLEL_MIN_RAYS`` rays, every due world
is one kernel call too (the bodies' poses read in each ``MjData``, the scene's own cast).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from runtime._compile.jit import JIT_DISABLED, compiled_entry
from runtime.rays import PARALLEL_MIN_RAYS, box_scene_rows
from runtime.sensors.lab._lab_kernels import (
    ray_caster_boxes_at_kernel,
    ray_caster_scene_kernel,
    ray_frame_kernel,
    ray_hits_kernel,
)
from runtime.sensors.lab.base import LabSensor
from runtime.sensors.lab.bodies import compile_path_expression
from runtime.sensors.lab.imu import check_offset
from runtime.sensors.lab.patterns import pattern_rays

__all__ = [
    "RayCaster",
    "RayCasterData",
    "build_ray_scene",
]

_ALIGNMENTS = {"base": 0, "yaw": 1, "world": 2}


def build_ray_scene(stage: Any, body_paths: Sequence[str], mesh_prim_paths: Sequence[str] = ()):
    """A :class:`~runtime.rays.scene.RayScene` of the colliders ``mesh_prim_paths`` name.

    Args:
        stage: the ``Usd.Stage``.
        body_paths: the engine's ``body_paths`` (poses are passed in that order).
        mesh_prim_paths: path expressions (full match, a collider or an ancestor); empty:
            every collider.

    Returns:
        The scene (colliders not named are disabled in a private view of the stage).

    Raises:
        ValueError: an expression is not a regex, or names no collider.
    """
    from runtime.rays.scene import RayScene

    if not mesh_prim_paths:
        return RayScene.from_stage(stage, body_paths)
    from pxr import Sdf, Usd, UsdPhysics

    patterns = [compile_path_expression(e) for e in mesh_prim_paths]
    view = Usd.Stage.Open(stage.GetRootLayer(), Sdf.Layer.CreateAnonymous("lab_view"))
    view.SetEditTarget(view.GetSessionLayer())
    kept = 0
    for prim in view.Traverse():
        if not prim.HasAPI(UsdPhysics.CollisionAPI):
            continue
        path = prim.GetPath()
        named = False
        while not named and path != Sdf.Path.absoluteRootPath:
            named = any(p.fullmatch(str(path)) for p in patterns)
            path = path.GetParentPath()
        if named:
            kept += 1
        else:
            prim.CreateAttribute("physics:collisionEnabled", Sdf.ValueTypeNames.Bool).Set(False)
    if kept == 0:
        raise ValueError(f"{list(mesh_prim_paths)!r} names no collider of the stage")
    return RayScene.from_stage(view, body_paths)


@dataclass
class RayCasterData:
    """Ray-caster readings of N worlds and R rays (world frame, metres).

    Attributes:
        pos_w: sensor position (drift included), (N, 3).
        quat_w: sensor orientation (w, x, y, z), (N, 4).
        ray_hits_w: hit points, ``inf`` for misses, (N, R, 3).
        ray_distances: distance along each ray, ``inf`` for misses, (N, R) (ours).
        ray_hit_ids: index of the hit collider in ``actor_paths``, -1 for misses, (N, R).
    """

    pos_w: np.ndarray
    quat_w: np.ndarray
    ray_hits_w: np.ndarray
    ray_distances: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    ray_hit_ids: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))


class RayCaster(LabSensor):
    """Rays of a pattern cast from a body (``config.prim_path``, one body) each update.

    Args:
        source: ``MujocoEngine`` (its stage gives the colliders) or ``mujoco.MjModel``
            (then ``ray_scene`` is required, its ``body_paths`` MuJoCo body names).
        config: :class:`~runtime.sensors.lab.config.RayCasterConfig`.
        num_envs: worlds per :meth:`update`.
        ray_scene: a scene to cast against instead of one built from the engine's stage
            (``mesh_prim_paths`` is then not applied).

    Attributes:
        ray_starts: (R, 3) pattern starts [m], sensor frame.
        ray_directions: (R, 3) pattern directions, sensor frame.
        actor_paths: collider paths ``ray_hit_ids`` index.
        ray_scene: the scene cast against.
        data: :class:`RayCasterData` (:class:`~runtime.sensors.lab.camera.RayCasterCameraData` for
            cameras).
    """

    kind = "ray_caster"
    _history_fields = ("ray_hits_w",)

    def __init__(
        self, source: Any, config: Any, num_envs: int = 1, ray_scene: Any | None = None
    ) -> None:
        self._source = source
        self.ray_scene = ray_scene
        super().__init__(source, config, num_envs)

    # ------------------------------------------------------------------ setup

    def _setup(self) -> None:
        cfg = self.config
        if cfg.prim_path is None:
            raise self.fail("prim_path", "is required")
        try:
            found = self.bodies.match(cfg.prim_path)
        except ValueError as error:
            raise self.fail("prim_path", str(error)) from None
        if len(found) != 1:
            raise self.fail("prim_path", f"must match exactly one body, matches {len(found)}")
        self._entity = found[0]
        self._static = bool(self.bodies.is_static[found[0]])
        self._body = int(self.bodies.body_ids[found[0]])
        self.body_path = self.bodies.paths[found[0]]
        self._offset_pos, self._offset_rot = check_offset(self, cfg.offset)
        self._setup_alignment()
        distance = cfg.max_distance
        if isinstance(distance, bool) or not np.isfinite(distance) or distance <= 0.0:
            raise self.fail("max_distance", f"must be finite and > 0, got {distance!r}")
        self._drift_range = self._range(cfg.drift_range, "drift_range")
        drift = cfg.ray_cast_drift_range or {}
        self._cast_drift_ranges = [
            self._range(drift.get(axis, (0.0, 0.0)), f"ray_cast_drift_range[{axis!r}]")
            for axis in "xyz"
        ]
        self._setup_pattern()
        self._setup_scene()
        r = self.ray_starts.shape[0]
        # a scene without moving geometry casts every world's rays in one call
        self._batched = self._scene_rows.size == 0
        worlds = self.num_envs if self._batched else 1
        self._all = (
            np.zeros((worlds * r, 3)),
            np.zeros((worlds * r, 3)),
            np.zeros(worlds * r),
            np.zeros(worlds * r, np.int64),
            np.zeros((worlds * r, 3)),
        )
        self._max_all = np.full(worlds * r, float(distance))
        self._max = self._max_all[:r]
        # per world: views (origins, directions, distances, hit ids, normals, max distances)
        self._buffers = [
            (*(a[w * r : (w + 1) * r] for a in self._all), self._max_all[w * r : (w + 1) * r])
            for w in range(worlds)
        ]
        self._rng = np.random.default_rng(int(cfg.seed))
        # per world: drift x y z [m], ray-start drift x y [m], hit z drift [m]
        self._drift = np.zeros((self.num_envs, 6))
        self._allocate_data(r)
        for env in range(self.num_envs):
            self._reset_world(env)
        # a scene of static world-aligned boxes only (a ground box): one call per update
        # casts every due world's rays without the BVH (runtime.rays.box_scenes)
        self._boxes = None
        if self._batched:
            _, positions, orientations = self.group_poses()
            self._boxes = box_scene_rows(self.ray_scene, positions, orientations)
        self._all_envs = np.arange(self.num_envs, dtype=np.int64)
        self._body_poses = (
            np.tile(self.bodies.static_positions[self._entity], (self.num_envs, 1)),
            np.tile(self.bodies.static_orientations[self._entity], (self.num_envs, 1)),
        )
        self._max_distance = float(distance)
        if self._boxes is not None:
            out = self._ray_data
            self._boxes_arguments = (
                *self._body_poses, self._offset_pos, self._offset_rot, self._drift,
                self._alignment, self.ray_starts, self.ray_directions, self._max_distance,
                *self._boxes, out.pos_w, out.quat_w, out.ray_hits_w, out.ray_distances,
                out.ray_hit_ids,
            )  # fmt: skip
        self._boxes_entry = None
        self._no_addresses = np.zeros(0, np.int64)
        self._pose_addresses = np.zeros(2 * self.num_envs, np.int64)
        self._world_addresses = np.zeros(2 * self.num_envs, np.int64)
        self._address_worlds: tuple = ()
        self._setup_scene_call()

    def _setup_alignment(self) -> None:
        alignment = self.config.ray_alignment
        if alignment not in _ALIGNMENTS:
            raise self.fail(
                "ray_alignment", f"must be one of {list(_ALIGNMENTS)}, got {alignment!r}"
            )
        self._alignment = _ALIGNMENTS[alignment]

    def _setup_pattern(self) -> None:
        if self.config.pattern_cfg is None:
            raise self.fail("pattern_cfg", "is required")
        try:
            self.ray_starts, self.ray_directions = pattern_rays(self.config.pattern_cfg)
        except ValueError as error:
            raise self.fail(_pattern_field(error), str(error)) from None

    def _range(self, value: Any, name: str) -> tuple[float, float]:
        try:
            low, high = (float(v) for v in value)
        except (TypeError, ValueError):
            raise self.fail(name, f"must be (low, high), got {value!r}") from None
        if not (np.isfinite(low) and np.isfinite(high)) or high < low:
            raise self.fail(name, f"must be finite with low <= high, got {value!r}")
        return low, high

    def _setup_scene(self) -> None:
        scene = self.ray_scene
        if scene is None:
            stage = getattr(self._source, "stage", None)
            if stage is None:
                raise self.fail("ray_scene", "a plain MjModel needs a ray_scene to cast against")
            try:
                scene = build_ray_scene(
                    stage, self.bodies.paths, list(self.config.mesh_prim_paths or [])
                )
            except ValueError as error:
                raise self.fail("mesh_prim_paths", str(error)) from None
        self.ray_scene = scene
        self.actor_paths = scene.actor_paths
        index = {p: i for i, p in enumerate(self.bodies.paths)}
        missing = [p for p in scene.body_paths if p not in index]
        if missing:
            raise self.fail("ray_scene", f"bodies unknown to the model: {missing[:3]}")
        entities = np.array([index[p] for p in scene.body_paths], np.int64)
        # poses are passed only when a moving body owns collision geometry of the scene
        owners = set(scene.group_paths)
        moving = ~self.bodies.is_static[entities] & np.array(
            [p in owners for p in scene.body_paths], bool
        )
        self._scene_rows = np.ascontiguousarray(np.flatnonzero(moving))
        self._scene_ids = np.ascontiguousarray(self.bodies.body_ids[entities[moving]])
        if self._scene_rows.size:  # every moving body's row is filled each cast
            rows = np.flatnonzero(~self.bodies.is_static[entities])
            self._scene_rows = np.ascontiguousarray(rows)
            self._scene_ids = np.ascontiguousarray(self.bodies.body_ids[entities[rows]])
        self._scene_pos = np.ascontiguousarray(self.bodies.static_positions[entities])
        self._scene_quat = np.ascontiguousarray(self.bodies.static_orientations[entities])

    _scene_call_allowed = True
    """Whether the one-call path over the general scene may replace the per-world calls
    (not for cameras, whose images need each world's normals)."""

    def _setup_scene_call(self) -> None:
        """Arguments of :func:`ray_caster_scene_kernel` (moving geometry, Numba scene).

        Only for fewer rays than :data:`~runtime.rays.PARALLEL_MIN_RAYS` per world (the
        kernel casts on the calling thread; larger casts keep ``cast_trusted``'s threads).
        """
        self._scene_arguments = None
        self._scene_entry = None
        scene = self.ray_scene
        if not self._scene_call_allowed or self._boxes is not None or self._batched:
            return
        if JIT_DISABLED or not hasattr(scene, "fused_arguments"):
            return
        r = self.ray_starts.shape[0]
        if r >= PARALLEL_MIN_RAYS:  # (large casts keep cast_trusted's threads)
            return
        fused = scene.fused_arguments(r)
        if fused is None:
            return
        head, tail = fused
        b = scene.backend
        origins, directions, distances, hit_ids, normals, max_distances = self._buffers[0]
        out = self._ray_data
        self._scene_arguments = (
            self._body, self._static, self._scene_rows, self._scene_ids, self._scene_pos,
            self._scene_quat, *self._body_poses, self._offset_pos, self._offset_rot,
            self._drift, self._alignment, self.ray_starts, self.ray_directions,
            max_distances, origins, directions, distances, hit_ids, normals,
            np.zeros(r, np.int64), np.zeros(r, np.int64), b.wide_nodes, b.leaf_triangles,
            b.leaf_ids, head[4], head[5], head[6], *tail[:15], tail[15].copy(),
            tail[16].copy(), tail[17].copy(), out.pos_w, out.quat_w,
            out.ray_hits_w, out.ray_distances, out.ray_hit_ids,
        )  # fmt: skip

    def group_poses(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Which scene groups move, and the poses of those that do not.

        Returns:
            ``(rows, positions, orientations)``: per scene group the MuJoCo body id of
            its moving body or -1, shape (G,), int64; the pose of each group that does not
            move (the scene's fixed pose, or its static body's), (G, 3) and (G, 4)
            (rows of moving groups: the scene's default).
        """
        scene = self.ray_scene
        positions, orientations = (a.copy() for a in scene.group_poses(None, None))
        rows = np.full(scene.group_count, -1, np.int64)
        index = {p: i for i, p in enumerate(self.bodies.paths)}
        for g, path in enumerate(scene.group_paths):
            entity = index.get(path, -1) if path else -1
            if entity < 0:
                continue  # the static world group, or a body the model does not know
            if self.bodies.is_static[entity]:
                positions[g] = self.bodies.static_positions[entity]
                orientations[g] = self.bodies.static_orientations[entity]
            else:
                rows[g] = self.bodies.body_ids[entity]
        return rows, positions, orientations

    def _allocate_data(self, r: int) -> None:
        n = self.num_envs
        self.data = RayCasterData(
            pos_w=np.zeros((n, 3)),
            quat_w=np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)),
            ray_hits_w=np.full((n, r, 3), np.inf),
            ray_distances=np.full((n, r), np.inf),
            ray_hit_ids=np.full((n, r), -1, np.int64),
        )

    def _setup_disabled(self) -> None:
        self._batched = False
        self._boxes = None
        self._scene_arguments = None
        self.ray_starts = self.ray_directions = np.zeros((0, 3))
        self.actor_paths = ()
        self.body_path = ""
        self._allocate_data(0)

    def _reset_world(self, env: int) -> None:
        low, high = self._drift_range
        self._drift[env, :3] = self._rng.uniform(low, high, 3) if high > low else low
        for axis, (low, high) in enumerate(self._cast_drift_ranges):
            self._drift[env, 3 + axis] = self._rng.uniform(low, high) if high > low else low

    # ------------------------------------------------------------------ update

    def _frame(self, env: int, data: Any, buffers: tuple) -> None:
        """World ``env``'s sensor pose (into :attr:`_ray_data`) and world rays."""
        if self._static:
            position = self.bodies.static_positions[self._entity]
            orientation = self.bodies.static_orientations[self._entity]
        else:
            position = data.xpos[self._body]
            orientation = data.xquat[self._body]
        out = self._ray_data
        ray_frame_kernel(
            env, position, orientation, self._offset_pos, self._offset_rot, self._drift[env],
            self._alignment, self.ray_starts, self.ray_directions, out.pos_w, out.quat_w,
            buffers[0], buffers[1],
        )  # fmt: skip

    def _cast_buffers(self, data: Any, buffers: tuple) -> None:
        """Cast the rays of ``buffers`` with the body poses of ``data``."""
        if self._scene_rows.size:
            self._scene_pos[self._scene_rows] = data.xpos[self._scene_ids]
            self._scene_quat[self._scene_rows] = data.xquat[self._scene_ids]
            poses = (self._scene_pos, self._scene_quat)
        else:
            poses = (None, None)
        origins, directions, distances, hit_ids, normals, max_distances = buffers
        self.ray_scene.cast_trusted(
            origins, directions, max_distances, *poses, distances, hit_ids, normals
        )

    def _finish(self, env: int, buffers: tuple) -> None:
        """Hit points, distances and ids of world ``env`` from its cast buffers."""
        out = self._ray_data
        ray_hits_kernel(
            env, buffers[0], buffers[1], buffers[2], buffers[3], float(self._drift[env, 5]),
            out.ray_hits_w, out.ray_distances, out.ray_hit_ids,
        )  # fmt: skip

    @property
    def _ray_data(self) -> Any:
        return self.data

    def _update_world(self, env: int, data: Any) -> None:
        buffers = self._buffers[env if self._batched else 0]
        self._frame(env, data, buffers)
        self._cast_buffers(data, buffers)
        self._finish(env, buffers)

    def _update_boxes(self, envs: Sequence[int], datas: Sequence[Any]) -> None:
        """Every due world over a box scene: one kernel call (pose, cast, hits).

        A moving sensor's body pose is read by the kernel at its address in each world's
        ``MjData`` (the addresses are taken again whenever the worlds are other objects;
        the sensor keeps them alive meanwhile); without the compiled kernels it is copied
        here.
        """
        addresses = self._no_addresses
        if not self._static:
            if JIT_DISABLED:
                positions, orientations = self._body_poses
                for env in envs:
                    positions[env] = datas[env].xpos[self._body]
                    orientations[env] = datas[env].xquat[self._body]
            else:
                worlds = tuple(datas)
                if worlds != self._address_worlds:  # (identity first: cheap when the same)
                    self._bind_addresses(worlds)
                addresses = self._pose_addresses
        rows = self._all_envs if len(envs) == self.num_envs else np.asarray(envs, np.int64)
        args = (rows, addresses, *self._boxes_arguments)
        entry = self._boxes_entry
        if entry is None:  # (the first call compiles or loads, then its entry point is kept)
            ray_caster_boxes_at_kernel(*args)
            self._boxes_entry = compiled_entry(ray_caster_boxes_at_kernel, args)
        else:
            entry(*args)

    def _bind_addresses(self, worlds: tuple) -> None:
        """The addresses of each world's ``xpos`` / ``xquat`` and of the sensor body's rows."""
        body = self._body
        for env, data in enumerate(worlds):
            xpos, xquat = data.xpos, data.xquat
            if (
                xpos.dtype != np.float64
                or xquat.dtype != np.float64
                or not (xpos.flags.c_contiguous and xquat.flags.c_contiguous)
                or xpos.shape != (self.model.nbody, 3)
                or xquat.shape != (self.model.nbody, 4)
            ):
                raise ValueError(f"{self._prefix}: world {env}: unexpected MjData xpos / xquat")
            self._pose_addresses[2 * env] = xpos[body].ctypes.data
            self._pose_addresses[2 * env + 1] = xquat[body].ctypes.data
            self._world_addresses[2 * env] = xpos.ctypes.data
            self._world_addresses[2 * env + 1] = xquat.ctypes.data
        self._address_worlds = worlds  # (kept alive: the addresses stay valid)

    def _update_scene(self, envs: Sequence[int], datas: Sequence[Any]) -> None:
        """Every due world over a scene with moving geometry: one kernel call.

        The poses are read at their addresses in each world's ``MjData`` (taken again
        whenever the worlds are other objects; the sensor keeps them alive meanwhile).
        """
        worlds = tuple(datas)
        if worlds != self._address_worlds:  # (identity first: cheap when the same)
            self._bind_addresses(worlds)
        rows = self._all_envs if len(envs) == self.num_envs else np.asarray(envs, np.int64)
        args = (rows, self._world_addresses, *self._scene_arguments)
        entry = self._scene_entry
        if entry is None:  # (the first call compiles or loads, then its entry point is kept)
            ray_caster_scene_kernel(*args)
            self._scene_entry = compiled_entry(ray_caster_scene_kernel, args)
        else:
            entry(*args)

    def _update_worlds(self, envs: Sequence[int], datas: Sequence[Any]) -> None:
        if self._boxes is not None:
            self._update_boxes(envs, datas)
            return
        if self._scene_arguments is not None:
            self._update_scene(envs, datas)
            return
        if not self._batched or len(envs) != self.num_envs or self.num_envs == 1:
            for env in envs:
                self._update_world(env, datas[env])
            return
        for env in envs:  # every world: one cast of all their rays
            self._frame(env, datas[env], self._buffers[env])
        self._cast_buffers(datas[0], (*self._all, self._max_all))
        for env in envs:
            self._finish(env, self._buffers[env])

    def hit_paths(self, env: int = 0) -> list[str | None]:
        """Path of the collider each ray of world ``env`` hit (None: a miss)."""
        return [self.actor_paths[i] if i >= 0 else None for i in self.data.ray_hit_ids[env]]


def _pattern_field(error: ValueError) -> str:
    """``pattern_cfg.<field>`` of a pattern error (``"field: message"``)."""
    text = str(error)
    return f"pattern_cfg.{text.split(':')[0]}" if ":" in text else "pattern_cfg"
