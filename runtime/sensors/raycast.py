"""Raycast sensor (``IsaacRaycastSensor``): rays cast after every physics step.

See docs/sensors/raycast.md.

:class:`RaycastSensor` follows the sensor protocol of :mod:`runtime.sensors.runtime`
(``bind(runtime)``, ``update(state)``, ``reading()``, ``reset()``). Every raycast sensor of a
:class:`~runtime.sensors.runtime.SensorRuntime` is evaluated by one :class:`RaycastBatch`:
all rays of all sensors go through one kernel call per step (ray generation, scene query and
outputs; with a scene other than the Numba BVH, its own cast between two kernels). The batch
keeps every ray's outputs in one persistent buffer and writes only the rows that change; a
sensor's :class:`RaycastReading` is a snapshot copied from it when first asked for after a
step (like the contact and IMU readings, which are built from their batch arrays on read).
The ray scene (:class:`~runtime.rays.scene.RayScene`) is built once from the stage's
colliders, with the Numba BVH by default; ``runtime.ray_backend =
"embreex"`` (set before the runtime binds) or an explicit ``scene`` selects another.

Configuration is read when bound and again at the first processed step, then frozen for the
run; the five checks of §5.2 then either pass or put the sensor in the error state: it is
disabled with the reference's message (logged once, ``disabled_reason``), its readings are
invalid, and the other sensors keep reading. :meth:`RaycastSensor.reset` (stop/start) clears
that state and reads the configuration again.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from runtime._compile.jit import CompiledCall
from runtime.errors import SchemaError
from runtime.rays.scene import usd_world_pose
from runtime.sensors._raycast_authoring import (
    create_raycast_sensor,
    set_raycast_time_offsets,
)
from runtime.sensors._raycast_layout import _GENERATIONS, _Layout
from runtime.sensors._raycast_reading import RaycastReading
from runtime.sensors.base import SensorBase
from runtime.sensors.kinds import FusedPart
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
            self._static_position, self._static_orientation = usd_world_pose(prim)

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

    def fused_row(self, fused: Any, tap: Any) -> Any:
        """The sensor's recording row in the compiled step (the ray-cast part's writer)."""
        return fused.builtin_row("ray", self, tap)

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
        """The reference's Python frame (docs/sensors/raycast.md#outputs) of the latest reading.

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
    """Sweep window of docs/sensors/raycast.md#each-step, in float32 arithmetic like the reference.

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
        scene: the shared :class:`~runtime.rays.scene.RayScene` (built lazily at
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
        self._path_source: Any = None  # the scene's actor path list the table was made from
        self._no_bodies = (np.zeros((0, 3)), np.zeros((0, 4)))
        # (layout, windowed sensors, uses body poses, uses velocities) of the last step
        # that evaluated every sensor with the Numba scene, while no sensor changed state
        self._fast: tuple[_Layout, list[RaycastSensor], bool, bool] | None = None
        self._fused = self._fast  # the state the compiled step took (fused_part)

    def fused_part(self, fused: Any) -> FusedPart | None:
        """The batch's part of the compiled step: the built-in ray-cast part.

        Silent when no sensor evaluates in the run (disabled, or ``enabled`` off: only a USD
        edit could change that, and an edit ends the compiled step); None until the batch
        is in its steady state (every sensor evaluated by one step of its layout).
        """
        if all(map(_never_evaluates, self.sensors)):
            return FusedPart("ray", self, silent=True)
        fast = self._fast
        if fast is None:
            return None
        lay = fast[0]
        if not all(s._steady and s._source is lay for s in lay.sensors):
            return None
        self._fused = fast
        return FusedPart("ray", self, data=(lay, tuple(fast[1]), fast[2]))

    def fused_leave(self, state: PhysicsState, steps: int) -> None:
        """After ``steps`` compiled steps: the layout's stamps and the windows' counters."""
        lay, windowed = self._fused[0], self._fused[1]
        lay.generation = next(_GENERATIONS)
        lay.time = state.time
        lay.step = state.step
        for sensor in windowed:  # (the general path's counters, advanced per step)
            sensor._counter += steps

    def _ensure_scene(self) -> Any:
        if self.scene is None:
            from runtime.rays.scene import RayScene

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

    def _hit_actors(
        self, lay: _Layout, j: int, a: int, b: int
    ) -> tuple[np.ndarray, tuple[str, ...]]:
        """What each ray of sensor ``j`` (rays ``a:b``) hit this step, and the path table.

        Returns the actor index per ray (into the table; -1: no hit), read-only, and the
        actor path table. A step whose hits (``[ray, actor]`` rows, one per ray that hit,
        in ray order) equal an earlier step's shares that step's array: sweeping sensors
        repeat their hit patterns.
        """
        table = self._actor_table(lay)
        hits = lay.hits[: int(lay.hit_count[0])]
        key = (j, hits.tobytes())
        actors = lay.actor_cache.get(key)
        if actors is None:
            mine = hits[(hits[:, 0] >= a) & (hits[:, 0] < b)]
            if mine.size and (mine[:, 1].min() < 0 or mine[:, 1].max() >= len(table)):
                raise RuntimeError(f"ray-cast hit outside the actor table (sensor {j})")
            actors = np.full(b - a, -1, np.int32)
            actors[mine[:, 0] - a] = mine[:, 1]
            actors.flags.writeable = False
            if len(lay.actor_cache) >= lay.path_cache_size:
                lay.actor_cache.clear()
                lay.path_cache.clear()
            lay.actor_cache[key] = actors
        return actors, table

    def _actor_table(self, lay: _Layout) -> tuple[str, ...]:
        """The actor path table of the layout's scene (one tuple object while it stands)."""
        scene = lay.scene if lay.scene is not None else self.scene
        table = self._path_table
        actor_paths = getattr(scene, "actor_paths", ())
        if table is None or actor_paths is not self._path_source or len(table) != len(actor_paths):
            self._path_table = table = tuple(actor_paths)
            self._path_source = actor_paths  # (a rebuilt scene has a new path list)
            lay.actor_cache.clear()
            lay.path_cache.clear()
        return table

    def _hit_paths(
        self, lay: _Layout, j: int, a: int, b: int
    ) -> tuple[tuple[str, ...], np.ndarray, tuple[str, ...]]:
        """Hit paths of sensor ``j`` (rays ``a:b``): "" except its rays that hit this step.

        Returns the paths with :meth:`_hit_actors`' two values. Tuples are immutable, so
        steps that share an actor array share its tuple (building a tuple of N paths costs
        N reference increments).
        """
        actors, table = self._hit_actors(lay, j, a, b)
        entry = lay.path_cache.get(id(actors))
        if entry is None or entry[0] is not actors:
            paths = tuple([table[x] if x >= 0 else "" for x in actors.tolist()])
            entry = lay.path_cache[id(actors)] = (actors, paths)  # (held: its id stays unique)
        return entry[1], actors, table


def _never_evaluates(sensor: RaycastSensor) -> bool:
    """A sensor that no step of this run evaluates: disabled, or ``enabled`` off."""
    config = sensor.config
    return not sensor._is_active() or config is None or not config.enabled


RaycastSensor.batch_type = RaycastBatch  # type: ignore[attr-defined]
