"""Raycast sensor (``IsaacRaycastSensor``, sensors.md §5): rays cast after every physics step.

:class:`RaycastSensor` follows the sensor protocol of :mod:`runtime.sensors.runtime`
(``bind(runtime)``, ``update(state)``, ``reading()``, ``reset()``). Every raycast sensor of a
:class:`~runtime.sensors.runtime.SensorRuntime` is evaluated by one :class:`RaycastBatch`:
all rays of all sensors go through one kernel call per step (ray generation, scene query and
outputs; with a scene other than the Numba BVH, its own cast between two kernels). The batch
keeps every ray's outputs in one persistent buffer and writes only the rows that change; a
sensor's :class:`RaycastReading` is a snapshot copied from it when first asked for after a
step (like the contact and IMU readings, which are built from their batch arrays on read).
The ray scene (:class:`~runtime.sensors.ray_scene.RayScene`) is built once from the stage's
colliders, with the Numba BVH by default; ``runtime.ray_backend =
"embreex"`` (set before the runtime binds) or an explicit ``scene`` selects another.

Configuration is read when bound and again at the first processed step, then frozen for the
run; the five checks of §5.2 then either pass or put the sensor in the error state: it is
disabled with the reference's message (logged once, ``disabled_reason``), its readings are
invalid, and the other sensors keep reading. :meth:`RaycastSensor.reset` (stop/start) clears
that state and reads the configuration again.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from runtime._jit import CompiledCall
from runtime.errors import SchemaError
from runtime.sensors.runtime import SensorBase
from runtime.sensors.state import PhysicsState

__all__ = [
    "RaycastBatch",
    "RaycastReading",
    "RaycastSensor",
    "create_raycast_sensor",
    "set_raycast_time_offsets",
    "sweep_window",
]

LOGGER = logging.getLogger("runtime.sensors")

# evaluation stamps of the batch layouts, unique over all layouts: a sensor's built reading is
# current iff its layout's stamp equals the one it was built at
_GENERATIONS = itertools.count(1)


def _empty_rows() -> np.ndarray:
    return np.zeros((0, 3), np.float32)


@dataclass(frozen=True)
class RaycastReading:
    """One raycast reading (sensors.md §5.5); arrays are float32 snapshots.

    Attributes:
        ray_count: ``numRays`` (0 when invalid).
        depths: distance from each ray origin [stage units], ``maxRange`` on a miss or when
            the ray did not fire this step, shape (N,), float32.
        hit_positions: hit points in the SENSOR or WORLD frame (per
            ``outputFrameOfReference``), zeros on a miss, shape (N, 3), float32.
        hit_normals: unit hit normals in the same frame, zeros on a miss, shape (N, 3).
        hit_prim_paths: USD path of the hit actor (rigid body, or the collider prim of a
            static collider) per ray, ``""`` on a miss; empty when ``reportHitPrimPaths``
            is false.
        ray_origins_world: ray origins, world, the sensor position for rays that did not
            fire, shape (N, 3), float32.
        ray_end_points_world: hit point, ``origin + direction * maxRange`` on a miss, the
            sensor position for rays that did not fire, shape (N, 3), float32.
        time: ``float32(t_k)`` of the producing step [s]; 0 when invalid.
        step: physics step counter of the producing step; 0 when invalid.
        is_valid: see sensors.md §2.7.
    """

    ray_count: int = 0
    depths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    hit_positions: np.ndarray = field(default_factory=_empty_rows)
    hit_normals: np.ndarray = field(default_factory=_empty_rows)
    hit_prim_paths: tuple[str, ...] = ()
    ray_origins_world: np.ndarray = field(default_factory=_empty_rows)
    ray_end_points_world: np.ndarray = field(default_factory=_empty_rows)
    time: float = 0.0
    step: int = 0
    is_valid: bool = False

    @classmethod
    def _make_valid(
        cls,
        ray_count: int,
        depths: np.ndarray,
        hit_positions: np.ndarray,
        hit_normals: np.ndarray,
        hit_prim_paths: tuple[str, ...],
        ray_origins_world: np.ndarray,
        ray_end_points_world: np.ndarray,
        time: float,
        step: int,
    ) -> RaycastReading:
        """A valid reading built without the frozen-dataclass field-by-field setattr cost."""
        reading = object.__new__(cls)
        reading.__dict__.update(
            ray_count=ray_count,
            depths=depths,
            hit_positions=hit_positions,
            hit_normals=hit_normals,
            hit_prim_paths=hit_prim_paths,
            ray_origins_world=ray_origins_world,
            ray_end_points_world=ray_end_points_world,
            time=time,
            step=step,
            is_valid=True,
        )
        return reading

    @property
    def hits(self) -> np.ndarray:
        """Rays that hit something (``depth < maxRange`` is the reference's only signal).

        Returns:
            Boolean mask, shape (N,).
        """
        if self.depths.size == 0:
            return np.zeros(0, bool)
        return np.linalg.norm(self.hit_normals, axis=1) > 0.0


def _rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    w, x, y, z = q
    r = np.array([x, y, z])
    c = np.cross(r, v) + w * v
    return v + 2.0 * np.cross(r, c)


def _quat_multiply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return np.array(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ]
    )


class RaycastSensor(SensorBase):
    """One ``IsaacRaycastSensor`` prim.

    Args:
        prim_path: USD path of the sensor prim.
        scene: a ray scene to cast into (shared by the batch); None builds one from the
            runtime's stage and body paths.
        backend: backend of a scene built by the batch: ``"numba"`` or ``"embreex"`` (None:
            ``runtime.ray_backend`` if set, else ``"numba"``).

    Attributes:
        config: the ``RaycastSensorConfig`` read from USD (None before binding).
        body_path: parent rigid body ("" for a static sensor).
    """

    kind = "raycast"
    type_name = "IsaacRaycastSensor"

    def __init__(self, prim_path: str, scene: Any = None, backend: str | None = None) -> None:
        super().__init__(prim_path)
        self.scene = scene
        self.backend = backend
        self.config: Any = None
        self.body_path = ""
        self._body = -1
        self._static_position = np.zeros(3)
        self._static_orientation = np.array([1.0, 0.0, 0.0, 0.0])
        self._batch: RaycastBatch | None = None
        self._deleted = False
        self._error: str | None = None
        self._first_done = False
        self._counter = 0
        # the latest reading, built from the buffers of ``_source`` (the layout that last
        # evaluated the sensor) at its generation ``_built``
        self._reading = RaycastReading()
        self._source: _Layout | None = None
        self._built = -1
        # True while nothing changed since the last evaluation (the batch's fast path)
        self._steady = False
        self._ranges = np.zeros(2)
        self._world_frame = 0
        self._period = np.float32(0.0)
        self._has_offsets = False
        self._directions = np.zeros((0, 3))
        self._origins = np.zeros((0, 3))
        self._offsets = np.zeros(0)

    # ------------------------------------------------------------------ configuration

    def bind(self, runtime: Any) -> None:
        """Resolve the prim and its parent body and read the configuration.

        Args:
            runtime: the owning :class:`~runtime.sensors.runtime.SensorRuntime` (or any
                object with ``stage`` and ``body_paths``).

        Raises:
            SchemaError: the prim is missing, is not an ``IsaacRaycastSensor``, or has
                malformed values (the runtime then disables the sensor).
        """
        self._runtime = runtime
        self._read_config()

    def _read_config(self) -> None:
        from runtime.schema.readers import read_raycast_sensor

        stage = self._runtime.stage  # type: ignore[union-attr]
        prim = stage.GetPrimAtPath(self.prim_path)
        if not prim or not prim.IsValid():
            raise SchemaError(self.prim_path, "", "prim does not exist", "an IsaacRaycastSensor")
        config = read_raycast_sensor(prim)
        self.config = config
        self._steady = False
        self.body_path = config.parent_body
        body_paths = tuple(getattr(self._runtime, "body_paths", ()))
        self._body = -1
        if config.parent_body:
            if config.parent_body in body_paths:
                self._body = body_paths.index(config.parent_body)
            else:
                LOGGER.warning(
                    "IsaacRaycastSensor '%s': parent body %s is not in the physics state; "
                    "using the USD pose",
                    self.prim_path,
                    config.parent_body,
                )
        if self._body < 0:
            self._static_position, self._static_orientation = _usd_world_pose(prim)

    def _validate(self) -> None:
        """First processed step: re-read, run the five checks of §5.2, derive arrays."""
        from runtime.schema.readers import validate_raycast

        self._read_config()
        c = self.config
        reason = validate_raycast(c)
        if reason is not None:
            self._error = reason
            self.disable(reason)
            return
        directions = np.asarray(c.ray_directions, np.float64).reshape(-1, 3)
        norms = np.linalg.norm(directions, axis=1)
        unit = np.tile(np.array([1.0, 0.0, 0.0]), (len(directions), 1))
        ok = norms > 1e-8
        unit[ok] = directions[ok] / norms[ok, None]
        self._directions = np.ascontiguousarray(unit)
        self._origins = np.ascontiguousarray(np.asarray(c.ray_origins, np.float64).reshape(-1, 3))
        offsets = np.asarray(c.ray_time_offsets, np.float64).reshape(-1)
        self._has_offsets = offsets.size > 0
        self._period = np.float32(offsets.max()) if offsets.size else np.float32(0.0)
        self._offsets = np.ascontiguousarray(
            offsets.astype(np.float32).astype(np.float64) if offsets.size else np.zeros(c.num_rays)
        )
        self._ranges = np.array([c.min_range, c.max_range], np.float64)
        self._world_frame = 1 if c.output_frame_of_reference == "WORLD" else 0
        if self._body >= 0:
            local = (c.translation_in_body, c.orientation_in_body)
        else:
            local = (self._static_position, self._static_orientation)
        self._local_pose = np.concatenate([np.asarray(v, np.float64).reshape(-1) for v in local])
        if self._batch is not None:
            self._batch._layouts = {}

    # ------------------------------------------------------------------ protocol

    def _is_active(self) -> bool:
        return bool(self._enabled and not self._deleted and self.disabled_reason is None)

    def _on_enabled_changed(self) -> None:
        """Disabling drops the outputs; readings stay invalid until the next processed step."""
        self._steady = False
        if not self._is_active():
            self._invalidate()

    def _invalidate(self) -> None:
        """Readings invalid until the sensor is evaluated again."""
        self._reading = RaycastReading()
        self._source = None
        self._steady = False

    def on_usd_changed(self) -> None:
        """USD edits: prim deletion makes readings invalid; config is frozen after step 1."""
        if self._runtime is None:
            return
        prim = self._runtime.stage.GetPrimAtPath(self.prim_path)
        self._steady = False
        self._deleted = not (prim and prim.IsValid())
        if self._deleted:
            self._invalidate()

    def update(self, state: PhysicsState) -> None:
        """Evaluate this sensor for one physics step (the runtime normally uses the batch).

        Args:
            state: the physics state after the step.
        """
        if self._batch is None:
            RaycastBatch(self._runtime, [self])
        self._batch.update(state, [self])  # type: ignore[union-attr]

    def reading(self) -> RaycastReading:
        """The latest reading (invalid when disabled, misconfigured, deleted or not stepped).

        Returns:
            The reading.
        """
        if not self._is_active():
            return RaycastReading()
        source = self._source
        if source is not None and self._built != source.generation:
            self._reading = source.reading(self)
            self._built = source.generation
        return self._reading

    def get_data(self) -> dict[str, Any]:
        """The reference's Python frame (sensors.md §5.5) of the latest reading.

        Returns:
            ``depths`` (N,) float32, ``hit_positions`` / ``hit_normals`` (N, 3) float32,
            ``hit_prim_paths`` (list of N strings, empty when paths are off), ``time``
            [s] and ``physics_step`` (int, the runtime's step count). Invalid readings give
            empty arrays of shapes (0,) and (0, 3), an empty list and time 0.0.
        """
        r = self.reading()
        runtime = self._runtime
        step = int(getattr(runtime, "step_count", r.step)) if runtime is not None else r.step
        return {
            "depths": r.depths,
            "hit_positions": r.hit_positions,
            "hit_normals": r.hit_normals,
            "hit_prim_paths": list(r.hit_prim_paths),
            "time": float(r.time),
            "physics_step": step,
        }

    def reset(self) -> None:
        """Stop/start: sweep counter 0, reading invalid, configuration read again."""
        self._counter = 0
        self._first_done = False
        self._invalidate()
        if self._error is not None and self.disabled_reason == self._error:
            self.disabled_reason = None
        self._error = None

    # ------------------------------------------------------------------ per step

    def _prepare(self, state: PhysicsState) -> bool:
        """Whether the sensor evaluates this step (advances its sweep counter if so)."""
        if not self._is_active() or self.config is None:
            return False
        if not self._first_done:
            self._first_done = True
            self._validate()
            if self.disabled_reason is not None:
                return False
        if not self.config.enabled:
            self._invalidate()
            return False
        if self._period > 0:
            self._counter += 1
        self._steady = True
        return True


def sweep_window(counter: int, dt: float, period: float) -> tuple[np.float32, np.float32, bool]:
    """Sweep window of sensors.md §5.3 step 3, in float32 arithmetic like the reference.

    Args:
        counter: processed-step counter ``c`` (1 at the first windowed step).
        dt: step size [s] (rounded to float32).
        period: sweep period ``P`` [s] (> 0; rounded to float32).

    Returns:
        ``(s, e, wrapped)``: window start and end (float32) and whether it wraps. A ray with
        offset ``tau`` fires iff ``wrapped ? (tau >= s or tau < e) : (s <= tau < e)``.
    """
    dt32 = np.float32(dt)
    p32 = np.float32(period)
    e = np.float32(np.fmod(np.float32(counter) * dt32, p32))
    s = np.float32(e - dt32)
    wrapped = bool(s < np.float32(0.0))
    if wrapped:
        s = np.float32(s + p32)
    return s, e, wrapped


def create_raycast_sensor(
    stage: Any,
    prim_path: str,
    origins: Any,
    directions: Any,
    *,
    min_range: float = 0.4,
    max_range: float = 100.0,
    output_frame_of_reference: str = "SENSOR",
    report_hit_prim_paths: bool = False,
    time_offsets: Any = None,
    translation: Any = None,
    position: Any = None,
    orientation: Any = None,
) -> Any:
    """Author an ``IsaacRaycastSensor`` prim (the reference's Python ``create`` defaults).

    Writes ``numRays = len(origins)``, ``minRange``, ``maxRange``, ``rayOrigins``,
    ``rayDirections``, ``outputFrameOfReference``, ``reportHitPrimPaths`` and
    ``rayTimeOffsets`` only when given.

    Args:
        stage: the ``Usd.Stage``.
        prim_path: path of the new sensor prim.
        origins: per-ray origins [stage units], shape (N, 3), sensor frame.
        directions: per-ray directions, shape (N, 3), sensor frame (need not be unit).
        min_range: ``minRange`` [stage units].
        max_range: ``maxRange`` [stage units].
        output_frame_of_reference: ``"SENSOR"`` or ``"WORLD"``.
        report_hit_prim_paths: ``reportHitPrimPaths``.
        time_offsets: optional per-ray ``rayTimeOffsets`` [s], shape (N,).
        translation: optional local translation (parent frame) [stage units], (3,).
        position: optional world position [stage units], (3,); exclusive with
            ``translation``.
        orientation: optional local orientation (w, x, y, z), (4,).

    Returns:
        The created ``Usd.Prim``.

    Raises:
        SchemaError: mismatched array lengths, ``position`` together with ``translation``,
            an unknown output frame, or non-finite values.
    """
    from pxr import Gf, Sdf, UsdGeom

    path = str(prim_path)
    o = np.asarray(origins, np.float64).reshape(-1, 3)
    d = np.asarray(directions, np.float64).reshape(-1, 3)
    if len(o) != len(d):
        raise SchemaError(path, "rayDirections", f"{len(d)} directions for {len(o)} origins",
                          "one direction per origin")  # fmt: skip
    if len(o) == 0:
        raise SchemaError(path, "rayOrigins", "no rays", "at least one ray")
    if position is not None and translation is not None:
        raise SchemaError(path, "xformOp:translate", "both position and translation given",
                          "position (world) or translation (local), not both")  # fmt: skip
    if output_frame_of_reference not in ("SENSOR", "WORLD"):
        raise SchemaError(path, "outputFrameOfReference", repr(output_frame_of_reference),
                          "SENSOR, WORLD")  # fmt: skip
    offsets = None if time_offsets is None else np.asarray(time_offsets, np.float64).reshape(-1)
    if offsets is not None and len(offsets) != len(o):
        raise SchemaError(path, "rayTimeOffsets", f"{len(offsets)} offsets for {len(o)} rays",
                          "one offset per ray")  # fmt: skip
    for name, values in (("rayOrigins", o), ("rayDirections", d)):
        if not np.all(np.isfinite(values)):
            raise SchemaError(path, name, "non-finite value", "finite numbers")
    prim = stage.DefinePrim(path, "IsaacRaycastSensor")
    prim.CreateAttribute("numRays", Sdf.ValueTypeNames.UInt).Set(len(o))
    prim.CreateAttribute("minRange", Sdf.ValueTypeNames.Float).Set(float(min_range))
    prim.CreateAttribute("maxRange", Sdf.ValueTypeNames.Float).Set(float(max_range))
    prim.CreateAttribute("rayOrigins", Sdf.ValueTypeNames.Float3Array).Set(
        [Gf.Vec3f(*map(float, row)) for row in o]
    )
    prim.CreateAttribute("rayDirections", Sdf.ValueTypeNames.Float3Array).Set(
        [Gf.Vec3f(*map(float, row)) for row in d]
    )
    prim.CreateAttribute("outputFrameOfReference", Sdf.ValueTypeNames.Token).Set(
        output_frame_of_reference
    )
    prim.CreateAttribute("reportHitPrimPaths", Sdf.ValueTypeNames.Bool).Set(
        bool(report_hit_prim_paths)
    )
    if offsets is not None:
        set_raycast_time_offsets(prim, offsets)
    xformable = UsdGeom.Xformable(prim)
    if position is not None:
        parent = UsdGeom.Xformable(prim.GetParent())
        parent_world = parent.ComputeLocalToWorldTransform(0.0) if parent else Gf.Matrix4d(1.0)
        translation = parent_world.GetInverse().Transform(Gf.Vec3d(*map(float, position)))
    if translation is not None:
        xformable.AddTranslateOp().Set(Gf.Vec3d(*map(float, translation)))
    if orientation is not None:
        w, x, y, z = map(float, orientation)
        xformable.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Quatd(w, x, y, z))
    return prim


def set_raycast_time_offsets(prim: Any, time_offsets: Any) -> None:
    """Author ``rayTimeOffsets`` on an existing ``IsaacRaycastSensor`` prim.

    Args:
        prim: the sensor prim.
        time_offsets: per-ray time offsets [s], one per ray (``numRays``).

    Raises:
        SchemaError: the prim is not a raycast sensor or the length differs from ``numRays``.
    """
    from pxr import Sdf

    path = str(prim.GetPath())
    if str(prim.GetTypeName()) != "IsaacRaycastSensor":
        raise SchemaError(path, "typeName", f"{str(prim.GetTypeName())!r}", "IsaacRaycastSensor")
    offsets = np.asarray(time_offsets, np.float64).reshape(-1)
    attr = prim.GetAttribute("numRays")
    value = attr.Get() if attr else None
    num_rays = int(value) if value is not None else 1
    if len(offsets) != num_rays:
        raise SchemaError(path, "rayTimeOffsets", f"{len(offsets)} offsets for {num_rays} rays",
                          "one offset per ray (numRays)")  # fmt: skip
    if not np.all(np.isfinite(offsets)):
        raise SchemaError(path, "rayTimeOffsets", "non-finite value", "finite numbers")
    prim.CreateAttribute("rayTimeOffsets", Sdf.ValueTypeNames.FloatArray).Set(
        [float(t) for t in offsets]
    )


def _usd_world_pose(prim: Any) -> tuple[np.ndarray, np.ndarray]:
    """World position (3,) and rotation-only orientation wxyz (4,) of a prim (default time)."""
    from pxr import Usd, UsdGeom

    from runtime.sensors.ray_scene import _column_matrix, _decompose, _quat_from_matrix

    matrix = _column_matrix(
        UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    )
    translation, rotation, _ = _decompose(matrix)
    return translation, _quat_from_matrix(rotation)


class RaycastBatch:
    """Every raycast sensor of a runtime, evaluated with one kernel call per step.

    With the Numba ray scene, :func:`~runtime.sensors._raycast_kernels.raycast_batch_step_kernel`
    poses the sensors, finds the firing rays, casts them and writes their outputs into the
    layout's persistent buffer, touching only the rows that change. With another scene
    (e.g. Embree) a prepare kernel writes the firing world rays, the scene casts them and an
    output kernel writes a fresh buffer. Static arrays are built once per set of evaluated
    sensors (and again after a sensor re-reads its configuration).

    Args:
        runtime: the owning runtime (``stage``, ``body_paths``; optional ``ray_backend``
            and ``ray_scene`` attributes).
        sensors: the raycast sensors, in order.

    Attributes:
        scene: the shared :class:`~runtime.sensors.ray_scene.RayScene` (built lazily at
            the first step that casts).
    """

    def __init__(self, runtime: Any, sensors: list[RaycastSensor]) -> None:
        from runtime.sensors import _raycast_kernels as kernels

        self._kernels = kernels
        # every layout's blocks have the same types: one compiled entry serves them all
        self._step_call = CompiledCall(kernels.raycast_batch_step_kernel)
        self.runtime = runtime
        self.sensors = list(sensors)
        self.scene: Any = getattr(runtime, "ray_scene", None)
        for sensor in self.sensors:
            sensor._batch = self
            if self.scene is None and sensor.scene is not None:
                self.scene = sensor.scene
        self._layouts: dict[tuple[int, ...], _Layout] = {}
        self._index = {id(s): i for i, s in enumerate(self.sensors)}
        self._path_table: tuple[str, ...] | None = None
        self._no_bodies = (np.zeros((0, 3)), np.zeros((0, 4)))
        # (layout, windowed sensors, uses body poses, uses velocities) of the last step
        # that evaluated every sensor with the Numba scene, while no sensor changed state
        self._fast: tuple[_Layout, list[RaycastSensor], bool, bool] | None = None

    def _ensure_scene(self) -> Any:
        if self.scene is None:
            from runtime.sensors.ray_scene import RayScene

            backend = next((s.backend for s in self.sensors if s.backend), None)
            backend = backend or getattr(self.runtime, "ray_backend", None) or "numba"
            self.scene = RayScene.from_stage(
                self.runtime.stage, tuple(self.runtime.body_paths), backend=backend
            )
        return self.scene

    def _layout(self, members: tuple[int, ...]) -> _Layout:
        layout = self._layouts.get(members)
        if layout is None:
            layout = _Layout(self, [self.sensors[i] for i in members])
            self._layouts = {members: layout}
        return layout

    def update(self, state: PhysicsState, only: list[RaycastSensor] | None = None) -> None:
        """Evaluate the sensors (all, or ``only``) for one physics step.

        Args:
            state: the physics state after the step (arrays as :class:`PhysicsState`
                documents: C-contiguous float64).
            only: restrict evaluation to these sensors of the batch.
        """
        fast = self._fast
        if only is None and fast is not None:
            lay, windowed, bodies, velocities = fast
            for sensor in lay.sensors:
                if not sensor._steady:
                    break
            else:
                # steady state: every sensor evaluates, nothing to re-check
                for sensor in windowed:
                    sensor._counter += 1
                no = self._no_bodies
                call = self._step_call
                step = (call.entry or call.record) if state.verified else call.kernel
                step(
                    *lay.fast_args,
                    state.dt,
                    state.body_positions if bodies else no[0],
                    state.body_orientations if bodies else no[1],
                    state.body_linear_velocities if velocities else no[0],
                    state.body_angular_velocities if velocities else no[0],
                )
                lay.generation = next(_GENERATIONS)
                lay.time = state.time
                lay.step = state.step
                return
        self._fast = None
        chosen = self.sensors if only is None else only
        members = []
        for sensor in chosen:
            try:
                evaluate = sensor._prepare(state)
            except Exception as error:  # noqa: BLE001 - one bad sensor must not stop the others
                message = str(error)
                if sensor.prim_path not in message:
                    message = f"{sensor.prim_path}: {message}"
                sensor.disable(f"RaycastSensor disabled: {message}")
                continue
            if evaluate:
                members.append(self._index[id(sensor)])
        if not members:
            return
        scene = self.scene if self.scene is not None else self._ensure_scene()
        lay = self._layout(tuple(members))
        sensors = lay.sensors
        if lay.scene is not scene:
            lay.bind_scene(scene)
        bodies = lay.uses_bodies or lay.scene_bodies > 0
        if bodies:
            positions = state.body_positions
            orientations = state.body_orientations
        else:
            positions, orientations = self._no_bodies
        if lay.uses_velocities:
            lin = state.body_linear_velocities
            ang = state.body_angular_velocities
        else:
            lin = ang = self._no_bodies[0]
        if lay.fused and (not lay.scene_bodies or positions.shape[0] == lay.scene_bodies):
            counters = lay.counters
            for j, sensor in enumerate(sensors):  # the kernel increments windowed counters
                counters[j] = sensor._counter - (1 if sensor._period > 0 else 0)
            call = self._step_call
            step = (call.entry or call.record) if state.verified else call.kernel
            step(*lay.fast_args, state.dt, positions, orientations, lin, ang)
            if len(sensors) == len(self.sensors):
                windowed = [s for s in sensors if s._period > 0]
                self._fast = (lay, windowed, bodies, lay.uses_velocities)
        else:
            lay.out = self._step_unfused(lay, scene, state, positions, orientations)
        lay.generation = next(_GENERATIONS)
        lay.time = state.time
        lay.step = state.step
        for sensor in sensors:
            sensor._source = lay

    def _step_unfused(
        self,
        lay: _Layout,
        scene: Any,
        state: PhysicsState,
        positions: np.ndarray,
        orientations: np.ndarray,
    ) -> np.ndarray:
        """Prepare kernel, the scene's own ``cast`` on the firing rays, output kernel.

        Returns:
            A fresh outputs buffer (layout of ``_Layout.out``).
        """
        k = self._kernels
        u = lay.unfused
        r = lay.ray_count
        counters = lay.counters
        for j, sensor in enumerate(lay.sensors):  # after this step's increment
            counters[j] = sensor._counter
        has_bodies = lay.scene_bodies > 0
        if lay.uses_velocities:
            lin = np.ascontiguousarray(state.body_linear_velocities, np.float64)
            ang = np.ascontiguousarray(state.body_angular_velocities, np.float64)
        else:
            lin = ang = self._no_bodies[0]
        positions = np.ascontiguousarray(positions, np.float64)
        orientations = np.ascontiguousarray(orientations, np.float64)
        k.raycast_prepare_kernel(
            counters, lay.periods, np.float32(state.dt), lay.bodies, lay.local_poses,
            lay.extrapolate, lay.ranges, positions, orientations, lin, ang, lay.ray_sensor,
            lay.origins, lay.directions, lay.offsets, lay.offset_order, lay.sorted_offsets,
            u["sensor_poses"], u["fired"], u["origins"], u["starts"], u["directions"],
            u["max_distances"], u["poses"], u["count"],
        )  # fmt: skip
        n = int(u["count"][0])
        if n:
            cast = getattr(scene, "cast_trusted", None) or scene.cast
            cast(
                u["starts"][:n],
                u["directions"][:n],
                u["max_distances"][:n],
                positions if has_bodies else None,
                orientations if has_bodies else None,
                u["distances"][:n],
                u["actors"][:n],
                u["normals"][:n],
            )
        out = lay.template.copy()
        k.raycast_outputs_kernel(
            lay.ray_sensor, u["fired"], u["count"], u["sensor_poses"], u["origins"],
            u["directions"], u["starts"], u["poses"], u["distances"], u["normals"],
            u["actors"], lay.ranges, lay.frames, lay.template_rows[7], lay.template_rows[10],
            out[:r], out[r : 4 * r].reshape(r, 3), out[4 * r : 7 * r].reshape(r, 3),
            out[7 * r : 10 * r].reshape(r, 3), out[10 * r :].reshape(r, 3), lay.hits,
            lay.hit_count,
        )  # fmt: skip
        return out

    def _hit_paths(self, lay: _Layout, j: int, a: int, b: int) -> tuple[str, ...]:
        """Hit paths of sensor ``j`` (rays ``a:b``): "" except its rays that hit this step.

        Tuples are immutable, so a step whose hits (``[ray, actor]`` rows) equal an earlier
        step's shares that step's tuple: sweeping sensors repeat their hit patterns, and
        building a tuple of N paths costs N reference increments.
        """
        scene = lay.scene if lay.scene is not None else self.scene
        table = self._path_table
        actor_paths = getattr(scene, "actor_paths", ())
        if table is None or len(table) != len(actor_paths):
            self._path_table = table = tuple(actor_paths)
            lay.path_cache.clear()
        hits = lay.hits[: int(lay.hit_count[0])]
        key = hits.tobytes()
        cache = lay.path_cache
        paths = cache.get((j, key))
        if paths is None:
            rows = [""] * (b - a)
            flat = hits.ravel().tolist()
            for k in range(0, len(flat), 2):
                ray = flat[k]
                if a <= ray < b:
                    rows[ray - a] = table[flat[k + 1]]
            paths = tuple(rows)
            if len(cache) >= lay.path_cache_size:
                cache.clear()
            cache[(j, key)] = paths
        return paths


def _block(arrays: list[np.ndarray], width: int, dtype: type) -> tuple[np.ndarray, list[list[int]]]:
    """Stack arrays as row ranges of one 2-D block; ``[first row, rows, columns]`` of each."""
    rows: list[list[int]] = []
    first = 0
    for array in arrays:
        array = np.asarray(array)
        n = int(array.shape[0]) if array.ndim else 1
        cols = int(np.prod(array.shape[1:])) if array.ndim > 1 else 1
        if cols > width:
            raise ValueError(f"array of {cols} columns does not fit a block of width {width}")
        rows.append([first, n, cols])
        first += n
    block = np.zeros((max(first, 1), width), dtype)
    for array, (o, n, c) in zip(arrays, rows, strict=True):
        block[o : o + n, :c] = np.asarray(array, dtype).reshape(n, c)
    return block, rows


def _solid_boxes(
    kinds: np.ndarray,
    positions: np.ndarray,
    orientations: np.ndarray,
    params: np.ndarray,
    bounds: np.ndarray,
) -> np.ndarray:
    """Group-frame box ``[lo(3), hi(3)]`` of each solid: exact for boxes, else its sphere.

    Returns:
        Shape (S, 6), float64, padded by ``1e-9 * (1 + max |corner|)``.
    """
    from runtime.sensors._bvh_kernels import SOLID_BOX

    positions = np.asarray(positions, np.float64).reshape(-1, 3)
    bounds = np.asarray(bounds, np.float64).reshape(-1, 4)
    centers = bounds[:, :3].copy()
    extents = np.repeat(bounds[:, 3:4], 3, axis=1)
    q = np.asarray(orientations, np.float64).reshape(-1, 4)
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    rotation = np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        1,
    )
    box = np.asarray(kinds) == SOLID_BOX
    half = np.asarray(params, np.float64).reshape(-1, 3)
    centers[box] = positions[box]
    extents[box] = np.einsum("nij,nj->ni", np.abs(rotation[box]), half[box])
    pad = 1e-9 * (1.0 + np.abs(centers).max(axis=1, initial=0.0) + extents.max(axis=1, initial=0.0))
    return np.concatenate([centers - extents - pad[:, None], centers + extents + pad[:, None]], 1)


class _Layout:
    """Static arrays and output buffers of one set of evaluated sensors.

    ``out`` holds every ray's outputs (depths (R,), hit positions, hit normals, origins and
    end points (R, 3) each, concatenated, float32); :meth:`reading` copies a sensor's rows.
    With the Numba scene (:meth:`bind_scene`), the scene's and the sensors' arrays are packed
    into the float64 and int64 blocks of
    :func:`~runtime.sensors._raycast_kernels.raycast_batch_step_kernel` and ``out`` persists
    between steps; with another scene each step writes a fresh ``out`` from ``template``.
    """

    def __init__(self, batch: RaycastBatch, sensors: list[RaycastSensor]) -> None:
        self.batch = batch
        self.sensors = sensors
        counts = [len(s._origins) for s in sensors]
        r = int(sum(counts))
        self.ray_count = r
        self.ray_sensor = np.repeat(np.arange(len(sensors), dtype=np.int64), counts)
        self.origins = np.ascontiguousarray(np.concatenate([s._origins for s in sensors]))
        self.directions = np.ascontiguousarray(np.concatenate([s._directions for s in sensors]))
        self.offsets = np.ascontiguousarray(np.concatenate([s._offsets for s in sensors]))
        self.bounds = [0, *np.cumsum(counts).tolist()]
        self.index = {id(s): j for j, s in enumerate(sensors)}
        # per sensor: its rays sorted by offset (the firing window is found by bisection)
        order = np.concatenate(
            [
                a + np.argsort(self.offsets[a:b], kind="stable")
                for a, b in zip(self.bounds[:-1], self.bounds[1:], strict=True)
            ]
            or [np.zeros(0, np.int64)]
        )
        self.offset_order = np.ascontiguousarray(order, np.int64)
        self.sorted_offsets = np.ascontiguousarray(self.offsets[self.offset_order])
        self.counters = np.zeros(len(sensors), np.int64)
        self.periods = np.array([s._period for s in sensors], np.float32)
        self.bodies = np.array([s._body for s in sensors], np.int64)
        self.local_poses = np.ascontiguousarray(np.array([s._local_pose for s in sensors]))
        self.extrapolate = np.array(
            [1 if (s._has_offsets and s._body >= 0) else 0 for s in sensors], np.int64
        )
        self.ranges = np.ascontiguousarray(np.array([s._ranges for s in sensors], np.float64))
        self.frames = np.array([s._world_frame for s in sensors], np.int64)
        self.uses_bodies = bool(np.any(self.bodies >= 0))
        self.uses_velocities = bool(np.any(self.extrapolate))
        # hit-path tuples by (sensor, hit rows), bounded to about 2**20 stored paths
        self.path_cache: dict[tuple[int, bytes], tuple[str, ...]] = {}
        self.path_cache_size = max(16, 2**20 // max(r, 1))
        # not-firing outputs (maxRange, zero hits, sensor positions: NaN until written)
        self.template = np.zeros(13 * r, np.float32)
        self.template[:r] = np.repeat(self.ranges[:, 1], counts).astype(np.float32)
        self.template[7 * r :] = np.nan
        self.template_rows = {
            7: self.template[7 * r : 10 * r].reshape(r, 3),
            10: self.template[10 * r :].reshape(r, 3),
        }
        self.out = self.template.copy()
        self.generation = 0  # from _GENERATIONS: unique over every layout
        self.time = 0.0
        self.step = 0
        self.scene: Any = None
        self.fused = False
        self.scene_bodies = 0
        self.hits = np.zeros((r, 2), np.int64)
        self.hit_count = np.zeros(1, np.int64)
        self.unfused: dict[str, np.ndarray] = {}

    def reading(self, sensor: RaycastSensor) -> RaycastReading:
        """A snapshot of ``sensor``'s rows of the latest step evaluated with this layout."""
        j = self.index[id(sensor)]
        a, b = self.bounds[j], self.bounds[j + 1]
        r = self.ray_count
        out = self.out
        if a == 0 and b == r:
            block = out.copy()
            depths = block[:r]
            hit_p, hit_n, o_w, e_w = block[r:].reshape(4, r, 3)
        else:
            depths = out[a:b].copy()
            hit_p, hit_n, o_w, e_w = out[r:].reshape(4, r, 3)[:, a:b].copy()
        paths: tuple[str, ...] = ()
        if sensor.config.report_hit_prim_paths:
            paths = self.batch._hit_paths(self, j, a, b)
        return RaycastReading._make_valid(
            b - a, depths, hit_p, hit_n, paths, o_w, e_w, float(np.float32(self.time)),
            int(self.step),
        )  # fmt: skip

    def _unfused_buffers(self) -> None:
        """Scratch arrays of the prepare / cast / outputs path (scenes other than Numba's)."""
        r, s = self.ray_count, len(self.sensors)
        self.unfused = {
            "sensor_poses": np.zeros((s, 7)),
            "fired": np.zeros(r, np.int64),
            "origins": np.zeros((r, 3)),
            "starts": np.zeros((r, 3)),
            "directions": np.zeros((r, 3)),
            "max_distances": np.zeros(r),
            "poses": np.zeros((r, 7)),
            "distances": np.zeros(r),
            "actors": np.zeros(r, np.int64),
            "normals": np.zeros((r, 3)),
            "count": np.zeros(1, np.int64),
        }

    def bind_scene(self, scene: Any) -> None:
        """Pack the scene's arrays with the sensors' for the one-call step (Numba scenes)."""
        from runtime.sensors import _raycast_kernels as k

        self.scene = scene
        self.scene_bodies = len(getattr(scene, "body_paths", ()))
        arguments = getattr(scene, "fused_arguments", None)
        fused = arguments(self.ray_count) if arguments is not None else None
        self.fused = fused is not None
        self.out = self.template.copy()
        if fused is None:
            self._unfused_buffers()
            return
        head, tail = fused
        (node_boxes, node_refs, triangles, triangle_ids, group_roots, group_local_boxes,
         group_body) = head  # fmt: skip
        (face_groups, face_actors, face_normals, _solid_groups, solid_kinds, solid_positions,
         solid_orientations, solid_params, solid_plane_ranges, planes, solid_bounds,
         solid_actors, group_solid_ranges, group_solid_boxes, double_sided, group_positions,
         group_orientations, _, _, _) = tail  # fmt: skip
        r, s, g = self.ray_count, len(self.sensors), len(group_roots)
        n_solids = len(solid_kinds)
        sensor_f = np.column_stack([self.local_poses.reshape(s, 7), self.ranges, self.periods])
        ray_f = np.column_stack([self.origins, self.directions, self.offsets, self.sorted_offsets])
        first_ray = np.asarray(self.bounds[:-1], np.int64)
        arrays = {
            k.L_NODE_BOXES: node_boxes,
            k.L_TRIANGLES: triangles,
            k.L_FACE_NORMALS: face_normals,
            k.L_PLANES: planes,
            k.L_GROUP_LOCAL_BOXES: np.column_stack([group_local_boxes, group_solid_boxes]),
            k.L_SOLID_POSITIONS: solid_positions,
            k.L_SOLID_ORIENTATIONS: solid_orientations,
            k.L_SOLID_PARAMS: solid_params,
            k.L_SOLID_BOXES: _solid_boxes(
                solid_kinds, solid_positions, solid_orientations, solid_params, solid_bounds
            ),
            k.L_SENSOR_F: sensor_f,
            k.L_RAY_F: ray_f,
            k.L_SENSOR_IO: np.full((s, 10), np.nan),
            k.L_GROUP_POSES: np.column_stack(
                [np.reshape(group_positions, (g, 3)), np.reshape(group_orientations, (g, 4))]
            ),
            k.L_GROUP_BOXES: np.zeros((g, 12)),
            k.L_GROUP_FLAGS: np.zeros((g, 3)),
            k.L_RAYS: np.full((r, 12), np.nan),
            k.L_RAY_POSES: np.zeros((r, 7)),
            k.L_SOLID_WORLD_BOXES: np.zeros((n_solids, 6)),
            k.L_NODE_REFS: node_refs,
            k.L_TRIANGLE_IDS: np.reshape(triangle_ids, (-1, 1)),
            k.L_FACE_I: np.column_stack([face_groups, face_actors]),
            k.L_GROUP_I: np.column_stack([group_roots, group_body, group_solid_ranges]),
            k.L_SOLID_I: np.column_stack([solid_kinds, solid_plane_ranges, solid_actors]),
            k.L_SENSOR_I: np.column_stack([self.bodies, self.extrapolate, self.frames, first_ray]),
            k.L_RAY_I: np.column_stack([self.ray_sensor, self.offset_order]),
            k.L_FLAGS: np.array([[1 if double_sided else 0, 1 if self.scene_bodies else 0]]),
            k.L_COUNTERS: np.zeros((s, 1), np.int64),
            k.L_FIRED: np.zeros((r, 1), np.int64),
            k.L_HITS: np.zeros((r, 2), np.int64),
            k.L_COUNTS: np.zeros((2, 2), np.int64),
            k.L_CANDIDATES: np.zeros((n_solids, 1), np.int64),
            k.L_CANDIDATE_GROUPS: np.zeros((n_solids, 1), np.int64),
        }
        assert sorted(arrays) == list(range(k.LAYOUT_ROWS))
        floats = [arrays[i] for i in k.F_ARRAYS]
        ints = [np.zeros((k.LAYOUT_ROWS, 3), np.int64)] + [
            arrays[i] for i in range(k.LAYOUT_ROWS) if i not in k.F_ARRAYS
        ]
        self.block_f, rows_f = _block(floats, k.F_WIDTH, np.float64)
        self.block_i, rows_i = _block(ints, k.I_WIDTH, np.int64)
        layout = self.block_i[: k.LAYOUT_ROWS, :3]
        for key, row in zip(k.F_ARRAYS, rows_f, strict=True):
            layout[key] = row
        int_keys = [i for i in range(k.LAYOUT_ROWS) if i not in k.F_ARRAYS]
        for key, row in zip(int_keys, rows_i[1:], strict=True):
            layout[key] = row
        self.layout = layout

        def rows(key: int) -> np.ndarray:
            first, n, c = layout[key]
            block = self.block_f if key in k.F_ARRAYS else self.block_i
            return block[first : first + n, :c]

        self.counters = rows(k.L_COUNTERS)[:, 0]
        self.hits = rows(k.L_HITS)
        self.hit_count = rows(k.L_COUNTS)[0, 1:2]
        self.fast_args = (self.block_f, self.block_i, self.out)


RaycastSensor.batch_type = RaycastBatch  # type: ignore[attr-defined]
