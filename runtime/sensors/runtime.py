"""The sensor loop: :class:`SensorRuntime` binds a USD stage and steps every sensor.

Sensor protocol (how a sensor plugs into the loop; ``RaycastSensor`` follows it too)::

    class MySensor:
        prim_path: str                 # USD path of the sensor prim ("" if none)
        disabled_reason: str | None    # set when bad configuration disabled the sensor
        enabled: bool                  # user-side flag (readings invalid while False)

        def bind(self, runtime) -> None      # resolve prims/bodies, read config, allocate;
                                             # raise SchemaError/SimrtError on bad config
        def update(self, state) -> None      # evaluate this one sensor for a PhysicsState
        def reading(self)                    # latest reading (typed, time + step stamped)
        def reset(self) -> None              # drop history, reading invalid until next step

    Optional, for vectorised kinds:
        batch_type: type   # class attribute; ``batch_type(runtime, sensors)`` is built once
                           # after binding and its ``update(state)`` evaluates every sensor
                           # of that class in one kernel call (``update`` of one sensor
                           # evaluates just that sensor through the same kernel).
        on_usd_changed() -> None   # called at the next step after USD edits at/above the
                                   # sensor prim (config re-read rules of
                                   # docs/sensors/index.md#configuration)

    In the compiled step of a run (:mod:`runtime.sensors.kinds`):
        batch.fused_part(fused), batch.fused_leave(state, steps), sensor.fused_row(fused, tap)

The runtime keeps an explicit ordered list of sensors (discovered by prim type: the built-in
kinds and those :func:`runtime.sensors.kinds.register_kind` added). ``step(state)``
runs after every physics step. Any exception raised by ``bind`` or ``update`` disables that
sensor with ``disabled_reason`` naming the prim (logged once); the other sensors keep
reading.

Behaviour choices (docs/sensors/index.md references):

* Every enabled sensor is evaluated in every ``step`` (2.1), so the reference's lazy
  evaluation on read is never needed; a reading is the snapshot of the last step.
* Readings carry ``time`` (``float32(t_k)``) and an integer ``step`` for every kind (the
  reference's ``physics_step`` is a float for contact/IMU frames; 2.2, 9.13).
* "Contact config re-read at every step" (2.4) is implemented with USD change notices:
  edits are applied at the next ``step`` without polling USD for every sensor.
* ``enabled`` on each sensor object is a user-side flag for every kind (2.5 SHOULD option);
  the USD ``enabled`` attribute keeps the reference semantics (live for contact, frozen
  after the first step for IMU).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from runtime.errors import SchemaError, SimrtError
from runtime.sensors.base import IMU_MODES, SensorBase
from runtime.sensors.state import PhysicsState

__all__ = ["IMU_MODES", "SensorBase", "SensorRuntime", "stage_gravity_up"]

LOGGER = logging.getLogger("runtime.sensors")


def stage_gravity_up(stage: Any) -> np.ndarray:
    """Gravity reaction vector ``g_up`` of the IMU, stage units/s^2, world.

    See docs/sensors/imu.md#configuration.

    Uses the first ``UsdPhysics.Scene`` in traversal order; the magnitude is read as m/s^2
    and divided by the stage ``metersPerUnit`` (reference behaviour); an unauthored, infinite
    or zero magnitude maps to 9.80665, a (near) zero direction to ``(0, 0, -1)``.

    Args:
        stage: a ``Usd.Stage``.

    Returns:
        ``g_up``, shape (3,), float64 (points up, e.g. ``(0, 0, 9.80665)``).
    """
    from pxr import UsdGeom, UsdPhysics

    magnitude = 9.80665
    direction = np.array([0.0, 0.0, -1.0])
    for prim in stage.Traverse():
        if prim.IsA(UsdPhysics.Scene):
            scene = UsdPhysics.Scene(prim)
            value = scene.GetGravityMagnitudeAttr().Get()
            if value is not None and math.isfinite(float(value)) and float(value) != 0.0:
                magnitude = abs(float(value))
            d = scene.GetGravityDirectionAttr().Get()
            if d is not None:
                d = np.array([float(d[0]), float(d[1]), float(d[2])])
                if np.all(np.isfinite(d)) and float(np.linalg.norm(d)) > 1e-10:
                    direction = d
            break
    mpu = float(UsdGeom.GetStageMetersPerUnit(stage))
    if not (math.isfinite(mpu) and mpu > 0.0):
        mpu = 1.0
    return np.ascontiguousarray((magnitude / mpu) * (-direction))


class SensorRuntime:
    """Binds a stage, discovers its sensors and evaluates them after every physics step.

    Args:
        stage: the ``Usd.Stage`` (``runtime.schema`` must have been imported before it was
            created).
        body_paths: rigid-body paths in ``PhysicsState`` body order (fixed for the run).
        dof_names: DOF names in ``PhysicsState`` joint order, or a
            ``runtime.schema.dof.DofTable`` (gives joint paths and DOF types too), or None.
        sensors: explicit ordered sensor list; None discovers ``IsaacContactSensor``,
            ``IsaacImuSensor`` and (when available) ``IsaacRaycastSensor`` prims in traversal
            order.
        imu_mode: ``"isaac"`` (parity, default) or ``"physical"`` (lever arm, rotating
            frame; docs/sensors/imu.md#physical-mode deviation) for discovered IMUs.
        dof_types: optional per-DOF types (0 rotation, 1 translation) when ``dof_names`` is a
            plain list.
        watch_usd: listen to USD change notices so live edits (contact ``enabled`` /
            ``threshold`` / ``radius``, prim deletion, sensor transforms) take effect at
            the next step (docs/sensors/index.md#configuration).

    Attributes:
        sensors: the ordered sensor list.
        gravity_up: IMU gravity reaction vector ``g_up`` (docs/sensors/imu.md#configuration), (3,),
            float64.
        meters_per_unit: stage ``metersPerUnit``.
        step_count: steps evaluated since construction / :meth:`reset`.
        time: time of the last evaluated step [s].
        last_state: the last ``PhysicsState`` passed to :meth:`step` (or None).
    """

    def __init__(
        self,
        stage: Any,
        body_paths: Sequence[str],
        dof_names: Any = None,
        sensors: Sequence[Any] | None = None,
        *,
        imu_mode: str = "isaac",
        dof_types: Sequence[int] | None = None,
        watch_usd: bool = True,
        ray_scene: Any = None,
    ) -> None:
        from pxr import UsdGeom

        if imu_mode not in IMU_MODES:
            raise SimrtError(f"SensorRuntime: imu_mode {imu_mode!r} not in {IMU_MODES}")
        self.stage = stage
        self.body_paths = tuple(str(p) for p in body_paths)
        self._body_index = {p: i for i, p in enumerate(self.body_paths)}
        self.imu_mode = imu_mode
        self._set_dofs(dof_names, dof_types)
        mpu = float(UsdGeom.GetStageMetersPerUnit(stage))
        self.meters_per_unit = mpu if (math.isfinite(mpu) and mpu > 0.0) else 1.0
        self.gravity_up = stage_gravity_up(stage)
        self.step_count = 0
        self.last_state: PhysicsState | None = None
        self._changed_paths: set[Any] = set()
        self._checked_paths: Any = None
        self._listener = None
        # a prebuilt RayScene of these body paths (e.g. from the scene cache); None: the
        # raycast batch builds one at its first step
        self.ray_scene = ray_scene
        if sensors is None:
            sensors = self.discover(stage, imu_mode=imu_mode)
        self.sensors: list[Any] = list(sensors)
        self._bind_all()
        if watch_usd:
            from pxr import Tf, Usd

            self._listener = Tf.Notice.Register(
                Usd.Notice.ObjectsChanged, self._on_objects_changed, stage
            )

    # ------------------------------------------------------------------ setup

    @staticmethod
    def discover(stage: Any, *, imu_mode: str = "isaac") -> list[Any]:
        """Sensor objects for every sensor prim of ``stage`` (exact type-name match).

        Args:
            stage: the ``Usd.Stage``.
            imu_mode: mode of the created IMU sensors.

        Returns:
            Contact, IMU, raycast sensors (raycast only when ``runtime.sensors.raycast`` is
            importable) and those of the kinds :func:`runtime.sensors.kinds.register_kind`
            added, in stage traversal order.
        """
        from runtime.schema.readers import discover_sensor_prims
        from runtime.sensors.contact import ContactSensor
        from runtime.sensors.imu import ImuSensor
        from runtime.sensors.kinds import registered_kinds

        factories: dict[str, Any] = {
            "IsaacContactSensor": ContactSensor,
            "IsaacImuSensor": lambda path: ImuSensor(path, mode=imu_mode),
        }
        try:
            from runtime.sensors.raycast import RaycastSensor

            factories["IsaacRaycastSensor"] = RaycastSensor
        except ImportError:  # raycast module not available
            LOGGER.debug("runtime.sensors.raycast not importable; raycast sensors skipped")
        factories.update(registered_kinds())
        prims = discover_sensor_prims(stage, tuple(factories))
        return [factories[str(p.GetTypeName())](str(p.GetPath())) for p in prims]

    def _set_dofs(self, dof_names: Any, dof_types: Sequence[int] | None) -> None:
        self.dof_joint_paths: tuple[str, ...] | None = None
        if dof_names is None:
            self.dof_names: tuple[str, ...] = ()
            self.dof_types = np.zeros(0, np.uint8)
            return
        if hasattr(dof_names, "entries"):
            entries = dof_names.entries
            self.dof_names = tuple(e.name for e in entries)
            self.dof_joint_paths = tuple(e.joint_path for e in entries)
            self.dof_types = np.array([0 if e.is_rotational else 1 for e in entries], np.uint8)
            return
        self.dof_names = tuple(str(n) for n in dof_names)
        if dof_types is not None:
            types = np.asarray(dof_types, np.uint8).reshape(-1)
            if types.shape[0] != len(self.dof_names):
                raise SimrtError("SensorRuntime: dof_types length differs from dof_names")
            self.dof_types = types
        else:
            self.dof_types = np.zeros(len(self.dof_names), np.uint8)

    def body_index(self, body_path: str) -> int:
        """Index of ``body_path`` in ``body_paths``.

        Args:
            body_path: USD path of a rigid body.

        Returns:
            The index.

        Raises:
            SchemaError: the body is not part of the physics state.
        """
        index = self._body_index.get(str(body_path))
        if index is None:
            raise SchemaError(
                str(body_path),
                "",
                "rigid body is not in the physics state's body_paths",
                "one of the engine's bodies",
            )
        return index

    def _bind_all(self) -> None:
        for sensor in self.sensors:
            self._bind_one(sensor)
        groups: dict[type, list[Any]] = {}
        order: list[Any] = []
        for sensor in self.sensors:
            batch_type = getattr(type(sensor), "batch_type", None)
            if batch_type is None:
                order.append(sensor)
                continue
            if type(sensor) not in groups:
                groups[type(sensor)] = []
                order.append(type(sensor))
            groups[type(sensor)].append(sensor)
        self._units: list[Any] = []
        # What step() runs, resolved once: (update callable, object whose disabled_reason
        # skips it or None, unit). Batches carry no disabled_reason (their sensors are
        # disabled one by one and read invalid), so they are called unguarded.
        self._step_plan: list[tuple[Any, Any, Any]] = []
        for item in order:
            if isinstance(item, type):
                unit = item.batch_type(self, groups[item])
                guard = unit if hasattr(unit, "disabled_reason") else None
            else:
                unit = guard = item
            self._units.append(unit)
            self._step_plan.append((unit.update, guard, unit))

    def _bind_one(self, sensor: Any) -> None:
        try:
            sensor.bind(self)
        except Exception as error:  # bad configuration must never stop the loop
            path = getattr(sensor, "prim_path", "") or type(sensor).__name__
            message = str(error)
            if path not in message:
                message = f"{path}: {message}"
            self._disable(sensor, f"{type(sensor).__name__} disabled: {message}")

    @staticmethod
    def _disable(sensor: Any, reason: str) -> None:
        if hasattr(sensor, "disable"):
            sensor.disable(reason)
        else:
            if getattr(sensor, "disabled_reason", None) is None:
                LOGGER.error("%s", reason)
            sensor.disabled_reason = reason

    # ------------------------------------------------------------------ USD notices

    def _on_objects_changed(self, notice: Any, sender: Any) -> None:
        for path in notice.GetResyncedPaths():
            self._changed_paths.add((str(path.GetPrimPath()), True))
        for path in notice.GetChangedInfoOnlyPaths():
            self._changed_paths.add((str(path.GetPrimPath()), False))

    def _sensors_under(self, path: str) -> list[Any]:
        """Sensors whose prim is ``path`` or below it (bisect on the sorted path list)."""
        import bisect

        index = getattr(self, "_path_index", None)
        if index is None or len(index[0]) != len(self.sensors):
            pairs = sorted((getattr(s, "prim_path", ""), i) for i, s in enumerate(self.sensors))
            index = ([p for p, _ in pairs], [i for _, i in pairs])
            self._path_index = index
        keys, order = index
        if path == "/":
            return list(self.sensors)
        found = []
        lo = bisect.bisect_left(keys, path)
        for k in range(lo, len(keys)):
            key = keys[k]
            if key != path and not key.startswith(path + "/"):
                break
            found.append(self.sensors[order[k]])
        return found

    def _process_usd_changes(self) -> None:
        """Apply USD edits noted since the last step.

        See docs/sensors/index.md#lifecycle, docs/sensors/index.md#configuration,
        docs/sensors/index.md#pose.

        A structural change (resync: prim added/removed) at or above a sensor always reaches
        its ``on_usd_changed`` hook. A value change reaches it only when the changed prim is
        below the sensor's parent body (the sensor itself or an Xform between body and
        sensor): moving the body prim or its ancestors in USD does not change the
        body-to-sensor offset, so per-step USD writes of link poses cost nothing here.
        """
        changed = self._changed_paths
        self._changed_paths = set()
        notified: set[int] = set()
        for path, resync in changed:
            for sensor in self._sensors_under(path):
                if id(sensor) in notified:
                    continue
                hook = getattr(sensor, "on_usd_changed", None)
                if hook is None:
                    continue
                body = getattr(sensor, "body_path", "")
                if not resync and body and not path.startswith(body + "/"):
                    continue  # a value change at or above the parent body
                notified.add(id(sensor))
                try:
                    hook()
                except Exception as error:  # noqa: BLE001 - isolate the sensor
                    self._disable(sensor, f"{type(sensor).__name__} disabled: {error}")

    def close(self) -> None:
        """Stop listening to USD change notices."""
        if self._listener is not None:
            self._listener.Revoke()
            self._listener = None

    # ------------------------------------------------------------------ stepping

    def built_ray_scene(self) -> Any:
        """The ray scene the raycast sensors use, once built (None before / without any)."""
        for unit in self._units:
            scene = getattr(unit, "scene", None)
            if scene is not None and type(scene).__name__ == "RayScene":
                return scene
        return None

    def step(self, state: PhysicsState) -> None:
        """Evaluate every enabled sensor for the state after one physics step.

        Args:
            state: the engine output of the step just taken (``body_paths`` order must match
                the runtime's).

        Raises:
            SimrtError: ``state.body_paths`` differ from the runtime's (checked once per
                distinct tuple object).
        """
        if state.body_paths is not self._checked_paths:
            if tuple(state.body_paths) != self.body_paths:
                raise SimrtError(
                    "SensorRuntime.step: state.body_paths differ from the runtime's body_paths "
                    f"({len(state.body_paths)} vs {len(self.body_paths)} bodies); build the "
                    "runtime with the engine's body order"
                )
            self._checked_paths = state.body_paths
        if self._changed_paths:
            self._process_usd_changes()
        for update, guard, unit in self._step_plan:
            if guard is not None and getattr(guard, "disabled_reason", None) is not None:
                continue  # an unbatched sensor disabled by bad configuration
            try:
                update(state)
            except Exception as error:  # noqa: BLE001 - a failing sensor must not stop others
                self._update_failed(unit, error)
        self.step_count += 1
        self.last_state = state

    @property
    def time(self) -> float:
        """Time of the last evaluated step [s]; 0 before the first step and after a reset."""
        state = self.last_state
        return 0.0 if state is None else float(state.time)

    def _update_failed(self, unit: Any, error: Exception) -> None:
        """Disable the sensor(s) of ``unit`` (a sensor or a batch) after ``update`` raised."""
        for sensor in getattr(unit, "sensors", [unit]):
            self._disable(
                sensor,
                f"{type(sensor).__name__} {getattr(sensor, 'prim_path', '')}: "
                f"update failed: {error!r}",
            )

    def reset(self) -> None:
        """Stop/start semantics: every sensor drops its history and readings become invalid."""
        for sensor in self.sensors:
            try:
                sensor.reset()
            except Exception as error:  # noqa: BLE001
                self._disable(sensor, f"{type(sensor).__name__}: reset failed: {error!r}")
        self.step_count = 0
        self.last_state = None

    def readings(self) -> list[Any]:
        """Latest reading of every sensor, in sensor order.

        Returns:
            One reading object per sensor.
        """
        return [sensor.reading() for sensor in self.sensors]

    def sensor(self, prim_path: str) -> Any:
        """The sensor bound to ``prim_path``.

        Args:
            prim_path: the sensor prim path (or joint / articulation path).

        Returns:
            The sensor object.

        Raises:
            KeyError: no such sensor.
        """
        for sensor in self.sensors:
            if getattr(sensor, "prim_path", None) == str(prim_path):
                return sensor
        raise KeyError(prim_path)

    def of_kind(self, kind: str) -> list[Any]:
        """Sensors whose ``kind`` equals ``kind`` (``"contact"``, ``"imu"``, ...).

        Args:
            kind: the kind name.

        Returns:
            The matching sensors, in order.
        """
        return [s for s in self.sensors if getattr(s, "kind", None) == kind]
