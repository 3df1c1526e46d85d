"""Isaac Sim sensor Python-layer names over simrt's :class:`~runtime.sensors.SensorRuntime`.

Thin wrappers with the reference's class names, methods and return shapes (sensor spec §3.4,
4.6, 5.5, 6.1, 6.2 and 7); every number comes from the simrt sensor the wrapper looks up in
a runtime. The only state a wrapper keeps is what the reference's Python layer keeps: the
last frame (contact and IMU frames are updated only by valid readings, so they go stale
after an invalid read; a stop clears them) and the contact frame's raw-contact switch.

Which runtime: as in Isaac, a wrapper finds the running simulation itself -- the current
stage's :class:`~runtime.compat.simulation_context.SimulationContext` (created on first
use). Before play and after stop there is no sensor and every reading is invalid. Passing
``runtime=`` (a :class:`~runtime.sensors.SensorRuntime` the script steps itself) reads that
runtime's sensor instead. Joint-state and effort sensors are not described by prims: a
wrapper asks the context to create them (``runtime=``: pass them to
``SensorRuntime(..., sensors=[...])``). The reference's retry rule (re-create the C++
sensor after an invalid reading) has no equivalent: simrt sensors are bound once and report
why they are disabled.

Example::

    sim = SimulationContext(stage=stage)
    imu = IMUSensor("/World/Robot/link3/imu")
    sim.play()
    sim.step(render=False)
    frame = imu.get_current_frame()   # linear_acceleration float32[3], orientation [w,x,y,z]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from runtime.sensors.contact import ContactReading
from runtime.sensors.effort import EffortReading
from runtime.sensors.joint_state import JointStateReading
from runtime.sensors.raycast import RaycastReading

__all__ = [
    "ContactSensor",
    "EffortSensor",
    "IMUSensor",
    "ImuSensorReading",
    "JointStateSensor",
    "RaycastSensor",
]


def _path_of(prim_path: Any) -> str:
    """A sensor path from a string, ``Sdf.Path``, ``Usd.Prim`` or authoring object.

    Objects with a ``prim_path`` attribute (authoring objects) give that path; a trailing
    slash is stripped.
    """
    if hasattr(prim_path, "prim_path"):
        prim_path = prim_path.prim_path
    elif hasattr(prim_path, "GetPath"):
        prim_path = prim_path.GetPath()
    text = str(prim_path)
    return text.rstrip("/") if len(text) > 1 else text


def _lookup(runtime: Any, prim_path: Any, kind: str, wrapper: str) -> Any:
    """The runtime's sensor at ``prim_path``, checked to be of ``kind``.

    Raises:
        ValueError: no such sensor in the runtime, or a sensor of another type (the
            reference raises ``ValueError`` when wrapping a prim of the wrong type).
    """
    path = _path_of(prim_path)
    try:
        sensor = runtime.sensor(path)
    except KeyError:
        prim = runtime.stage.GetPrimAtPath(path) if path.startswith("/") else None
        found = prim.GetTypeName() if prim is not None and prim.IsValid() else "no prim"
        raise ValueError(
            f"{wrapper}: {path!r} is not a {kind} sensor of this runtime ({found}); "
            "schema sensors are discovered, joint-state / effort sensors must be passed to "
            "SensorRuntime(..., sensors=[...])"
        ) from None
    if getattr(sensor, "kind", None) != kind:
        raise ValueError(
            f"{wrapper}: {path!r} is a {getattr(sensor, 'kind', type(sensor).__name__)} "
            f"sensor, not {kind}"
        )
    return sensor


_TYPE_NAMES = {
    "contact": "IsaacContactSensor",
    "imu": "IsaacImuSensor",
    "raycast": "IsaacRaycastSensor",
}


def _sensor_factory(kind: str) -> Any:
    """The simrt sensor class for a kind the stage does not describe (joint state, effort)."""
    if kind == "joint_state":
        from runtime.sensors.joint_state import JointStateSensor as factory
    else:
        from runtime.sensors.effort import EffortSensor as factory
    return factory


class _Wrapper:
    """A sensor of an explicit ``runtime``, or of the simulation context's running runtime.

    Without ``runtime`` the wrapper belongs to the current stage's
    :class:`~runtime.compat.simulation_context.SimulationContext` (created on first use)
    and looks its sensor up again whenever the context builds a new simulation; before
    play (and after stop) there is none and every reading is invalid.
    """

    kind = ""

    def __init__(self, prim_path: Any, *, runtime: Any = None, enabled: bool | None = None) -> None:
        self._runtime = runtime
        self._enabled_request = enabled
        self._context: Any = None
        self._epoch: int | None = None
        self._cached: Any = None
        if runtime is not None:
            self._cached = _lookup(runtime, prim_path, self.kind, type(self).__name__)
            self.prim_path = self._cached.prim_path
            self._apply_enabled(self._cached)
            return
        from runtime.compat.simulation_context import current_context

        self._context = current_context(create=True)
        self.prim_path = _path_of(prim_path)
        self._check_prim()
        if self.kind not in _TYPE_NAMES:
            self._context.request_sensor(self.kind, self.prim_path, _sensor_factory(self.kind))

    def _check_prim(self) -> None:
        """ValueError unless the context's stage has a prim of this wrapper's type there."""
        stage = self._context.stage
        path = self.prim_path
        from pxr import Sdf

        prim = stage.GetPrimAtPath(path) if Sdf.Path.IsValidPathString(path) else None
        name = type(self).__name__
        if prim is None or not prim.IsValid():
            raise ValueError(f"{name}: no prim at {path!r}")
        wanted = _TYPE_NAMES.get(self.kind)
        if wanted is not None and prim.GetTypeName() != wanted:
            raise ValueError(
                f"{name}: {path} is a {prim.GetTypeName() or 'typeless'} prim, not {wanted}"
            )

    def _apply_enabled(self, sensor: Any) -> None:
        if self._enabled_request is not None:
            sensor.enabled = bool(self._enabled_request)

    def _new_simulation(self) -> None:
        """The context built or destroyed its simulation: drop cached frames."""

    def _current(self) -> Any:
        """The simrt sensor now (None while the context's simulation is not built)."""
        ctx = self._context
        if ctx is None:
            return self._cached
        runtime = ctx.sensor_runtime
        if self._epoch == ctx.epoch:
            return self._cached
        self._new_simulation()
        self._cached = None
        self._epoch = ctx.epoch
        if runtime is None:
            return None
        sensor = self._find(runtime)
        if sensor is None and self.kind in _TYPE_NAMES:
            prim = ctx.stage.GetPrimAtPath(self.prim_path)
            if prim.IsValid() and prim.GetTypeName() == _TYPE_NAMES[self.kind]:
                ctx.refresh_sensors()  # authored after play: discover it
                runtime = ctx.sensor_runtime
                self._epoch = ctx.epoch
                sensor = self._find(runtime)
        if sensor is not None:
            self._apply_enabled(sensor)
        self._cached = sensor
        return sensor

    def _find(self, runtime: Any) -> Any:
        try:
            sensor = runtime.sensor(self.prim_path)
        except KeyError:
            return None
        return sensor if getattr(sensor, "kind", None) == self.kind else None

    @property
    def sensor(self) -> Any:
        """The wrapped simrt sensor object (None before play / after stop)."""
        return self._current()

    def reset(self) -> None:
        """Drop the sensor's history; readings are invalid until the next step."""
        sensor = self._current()
        if sensor is not None:
            sensor.reset()

    def _current_step(self) -> int:
        if self._context is not None:
            return int(self._context.current_time_step_index)
        return int(getattr(self._runtime, "step_count", 0))

    def get_current_frame(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The Python frame (same as ``get_data``)."""
        return self.get_data(*args, **kwargs)  # type: ignore[attr-defined]


class ContactSensor(_Wrapper):
    """``ContactSensor`` (sensor spec §3.4, 7) over an ``IsaacContactSensor`` of ``runtime``.

    Args:
        prim_path: sensor prim path (string, ``Sdf.Path``, ``Usd.Prim`` or an object with
            ``prim_path``).
        runtime: the :class:`~runtime.sensors.SensorRuntime` stepping the sensor; None: the
            current stage's simulation context.

    Raises:
        ValueError: not a contact sensor of ``runtime`` (or no ``IsaacContactSensor`` prim
            at the path).
    """

    kind = "contact"

    def __init__(self, prim_path: Any, *, runtime: Any = None) -> None:
        self._raw = False
        self._frame: dict[str, Any] = {"time": 0.0, "physics_step": 0.0}
        super().__init__(prim_path, runtime=runtime)

    def _new_simulation(self) -> None:
        self._frame = {"time": 0.0, "physics_step": 0.0}

    def get_sensor_reading(self) -> Any:
        """The C++ ``ContactSensorReading`` (``time``, ``value``, ``in_contact``, ``is_valid``).

        Returns:
            simrt's :class:`~runtime.sensors.ContactReading`, which also carries ``step``
            and ``number_of_contacts``; the invalid default reading before play.
        """
        sensor = self._current()
        return ContactReading() if sensor is None else sensor.reading()

    def get_raw_data(self) -> list[dict[str, Any]]:
        """The step's raw contact records of the parent body (empty when invalid).

        Returns:
            One dict per contact: ``body0``, ``body1`` (path strings), ``position``,
            ``normal`` (world), ``impulse`` (world, on body0 as reported), float32 (3,)
            arrays, ``time`` and ``dt`` [s] (floats).
        """
        sensor = self._current()
        if sensor is None:
            return []
        return [
            dict(_raw_dict(raw), time=float(raw.time), dt=float(raw.dt))
            for raw in sensor.raw_contacts()
        ]

    def add_raw_contact_data_to_frame(self) -> None:
        """Include ``contacts`` (the step's raw contact records) in :meth:`get_data`."""
        self._raw = True

    def get_data(self) -> dict[str, Any]:
        """The Python frame; updated only by a valid reading (stale after invalid ones).

        Returns:
            ``in_contact`` (bool), ``force`` (float, mass x stage length / s^2), ``time``
            (float), ``physics_step`` (float), ``number_of_contacts`` (int) and, after
            :meth:`add_raw_contact_data_to_frame`, ``contacts``: dicts with ``body0``,
            ``body1`` (path strings), ``position``, ``normal`` (world) and ``impulse``
            (world, on body0 as reported), float32 (3,) arrays. Before the first valid
            reading: only ``time`` 0.0 and ``physics_step`` 0.0.
        """
        sensor = self._current()
        if sensor is None:
            return self._frame
        reading = sensor.reading()
        if not reading.is_valid:
            return self._frame
        frame: dict[str, Any] = {
            "in_contact": bool(reading.in_contact),
            "force": float(reading.value),
            "time": float(reading.time),
            "physics_step": float(reading.step),
            "number_of_contacts": int(reading.number_of_contacts),
        }
        if self._raw:
            frame["contacts"] = [_raw_dict(raw) for raw in sensor.raw_contacts()]
        self._frame = frame
        return frame


def _raw_dict(raw: Any) -> dict[str, Any]:
    return {
        "body0": raw.body0,
        "body1": raw.body1,
        "position": np.asarray(raw.position, np.float32),
        "normal": np.asarray(raw.normal, np.float32),
        "impulse": np.asarray(raw.impulse, np.float32),
    }


@dataclass(frozen=True)
class ImuSensorReading:
    """The C++ ``ImuSensorReading`` as seen from Python (sensor spec §4.6).

    Attributes:
        linear_acceleration_x, linear_acceleration_y, linear_acceleration_z: sensor frame,
            stage units/s^2 (float32 values).
        angular_velocity_x, angular_velocity_y, angular_velocity_z: sensor frame, rad/s.
        orientation_w, orientation_x, orientation_y, orientation_z: world orientation.
        time: time of the producing step [s]; 0 when invalid.
        is_valid: validity (sensor spec §2.7).
    """

    linear_acceleration_x: float = 0.0
    linear_acceleration_y: float = 0.0
    linear_acceleration_z: float = 0.0
    angular_velocity_x: float = 0.0
    angular_velocity_y: float = 0.0
    angular_velocity_z: float = 0.0
    orientation_w: float = 1.0
    orientation_x: float = 0.0
    orientation_y: float = 0.0
    orientation_z: float = 0.0
    time: float = 0.0
    is_valid: bool = False


def _f32(value: Any) -> float:
    return float(np.float32(value))


class IMUSensor(_Wrapper):
    """``IMUSensor`` (sensor spec §4.6, 7) over an ``IsaacImuSensor`` of ``runtime``.

    Args:
        prim_path: sensor prim path (string, ``Sdf.Path``, ``Usd.Prim`` or an object with
            ``prim_path``).
        runtime: the :class:`~runtime.sensors.SensorRuntime` stepping the sensor; None: the
            current stage's simulation context.

    Raises:
        ValueError: not an IMU sensor of ``runtime`` (or no ``IsaacImuSensor`` prim there).
    """

    kind = "imu"

    def __init__(self, prim_path: Any, *, runtime: Any = None) -> None:
        self._new_simulation()
        super().__init__(prim_path, runtime=runtime)

    def _new_simulation(self) -> None:
        self._frame: dict[str, Any] = {
            "linear_acceleration": np.zeros(3, np.float32),
            "angular_velocity": np.zeros(3, np.float32),
            "orientation": np.array([1.0, 0.0, 0.0, 0.0], np.float32),
            "time": 0.0,
            "physics_step": 0.0,
        }

    def get_sensor_reading(self, read_gravity: bool = True) -> ImuSensorReading:
        """The C++ reading with separate ``*_x/y/z`` and ``orientation_w/x/y/z`` fields.

        Args:
            read_gravity: include the gravity reaction in ``linear_acceleration_*``.

        Returns:
            The reading (defaults, ``is_valid`` False, when invalid).
        """
        sensor = self._current()
        if sensor is None:
            return ImuSensorReading()
        r = sensor.reading(read_gravity=read_gravity)
        if not r.is_valid:
            return ImuSensorReading()
        a, w, q = r.linear_acceleration, r.angular_velocity, r.orientation
        return ImuSensorReading(
            _f32(a[0]),
            _f32(a[1]),
            _f32(a[2]),
            _f32(w[0]),
            _f32(w[1]),
            _f32(w[2]),
            _f32(q[0]),
            _f32(q[1]),
            _f32(q[2]),
            _f32(q[3]),
            _f32(r.time),
            True,
        )

    def get_data(self, read_gravity: bool = True) -> dict[str, Any]:
        """The Python frame; updated only by a valid reading (stale after invalid ones).

        Args:
            read_gravity: include the gravity reaction in ``linear_acceleration``.

        Returns:
            ``linear_acceleration`` float32 (3,), ``angular_velocity`` float32 (3,) (sensor
            frame), ``orientation`` float32 (4,) as [w, x, y, z], ``time`` (float) and
            ``physics_step`` (float). Initially zeros, identity and 0.
        """
        sensor = self._current()
        if sensor is None:
            return self._frame
        r = sensor.reading(read_gravity=read_gravity)
        if r.is_valid:
            self._frame = {
                "linear_acceleration": np.asarray(r.linear_acceleration, np.float32),
                "angular_velocity": np.asarray(r.angular_velocity, np.float32),
                "orientation": np.asarray(r.orientation, np.float32),
                "time": float(r.time),
                "physics_step": float(r.step),
            }
        return self._frame


class RaycastSensor(_Wrapper):
    """``RaycastSensor`` (sensor spec §5.5, 7) over an ``IsaacRaycastSensor`` of ``runtime``.

    Args:
        prim_path: sensor prim path (string, ``Sdf.Path``, ``Usd.Prim`` or an object with
            ``prim_path``).
        runtime: the :class:`~runtime.sensors.SensorRuntime` stepping the sensor; None: the
            current stage's simulation context.

    Raises:
        ValueError: not a raycast sensor of ``runtime`` (or no ``IsaacRaycastSensor`` prim).
    """

    kind = "raycast"

    def __init__(self, prim_path: Any, *, runtime: Any = None) -> None:
        super().__init__(prim_path, runtime=runtime)

    def get_sensor_reading(self) -> Any:
        """The Python reading struct (simrt's ``RaycastReading``).

        Returns:
            ``ray_count``, ``depths`` (N,), ``hit_positions``, ``hit_normals``,
            ``ray_origins_world``, ``ray_end_points_world`` (N, 3) float32,
            ``hit_prim_paths``, ``time``, ``is_valid``; invalid: arrays of shapes (0,) and
            (0, 3).
        """
        sensor = self._current()
        return RaycastReading() if sensor is None else sensor.reading()

    def get_data(self) -> dict[str, Any]:
        """The Python frame (not stale).

        Returns:
            ``depths``, ``hit_positions``, ``hit_normals``, ``hit_prim_paths`` (list),
            ``time`` and ``physics_step`` (int); invalid readings give empty arrays, ``[]``,
            time 0.0 and the current step.
        """
        sensor = self._current()
        if sensor is not None:
            return sensor.get_data()
        r = RaycastReading()
        return {
            "depths": r.depths,
            "hit_positions": r.hit_positions,
            "hit_normals": r.hit_normals,
            "hit_prim_paths": [],
            "time": 0.0,
            "physics_step": self._current_step(),
        }


class JointStateSensor(_Wrapper):
    """``JointStateSensor`` (sensor spec §6.1) over a joint-state sensor of ``runtime``.

    Args:
        prim_path: articulation root path the sensor was created for.
        runtime: the :class:`~runtime.sensors.SensorRuntime` stepping the sensor (built with
            ``sensors=[..., runtime.sensors.joint_state.JointStateSensor(root)]``).
        enabled: Python-side enable flag (None keeps the sensor's).

    Raises:
        ValueError: not a joint-state sensor of ``runtime``.
    """

    kind = "joint_state"

    def __init__(self, prim_path: Any, *, runtime: Any = None, enabled: bool | None = None) -> None:
        super().__init__(prim_path, runtime=runtime, enabled=enabled)

    def get_sensor_reading(self) -> Any:
        """The reading (simrt's ``JointStateReading``).

        Returns:
            ``time``, ``is_valid``, ``dof_count``, ``dof_names``, ``positions``,
            ``velocities``, ``efforts``, ``dof_types``, ``stage_meters_per_unit``.
        """
        sensor = self._current()
        return JointStateReading() if sensor is None else sensor.reading()

    def get_data(self) -> dict[str, Any]:
        """The Python frame (not stale).

        Returns:
            ``dof_names`` (list), ``positions``, ``velocities``, ``efforts`` (float32
            (n,)), ``dof_types`` (uint8 (n,)), ``stage_meters_per_unit``, ``is_valid``,
            ``time`` and ``physics_step`` (int); invalid: empty arrays, time 0, mpu 0.
        """
        r = self.get_sensor_reading()
        return {
            "dof_names": list(r.dof_names),
            "positions": np.asarray(r.positions, np.float32),
            "velocities": np.asarray(r.velocities, np.float32),
            "efforts": np.asarray(r.efforts, np.float32),
            "dof_types": np.asarray(r.dof_types, np.uint8),
            "stage_meters_per_unit": float(r.stage_meters_per_unit),
            "is_valid": bool(r.is_valid),
            "time": float(r.time),
            "physics_step": int(r.step) if r.is_valid else self._current_step(),
        }


class EffortSensor(_Wrapper):
    """``EffortSensor`` (sensor spec §6.2) over an effort sensor of ``runtime``.

    Args:
        prim_path: joint prim path the sensor was created for.
        runtime: the :class:`~runtime.sensors.SensorRuntime` stepping the sensor (built with
            ``sensors=[..., runtime.sensors.effort.EffortSensor(joint)]``).
        enabled: Python-side enable flag (None keeps the sensor's).

    Raises:
        ValueError: not an effort sensor of ``runtime``.
    """

    kind = "effort"

    def __init__(self, prim_path: Any, *, runtime: Any = None, enabled: bool | None = None) -> None:
        super().__init__(prim_path, runtime=runtime, enabled=enabled)

    def get_sensor_reading(self) -> Any:
        """The reading (``value``, ``time``, ``is_valid``).

        Valid readings enter the sensor's ``history`` deque (newest first).
        """
        sensor = self._current()
        return EffortReading() if sensor is None else sensor.reading()

    def change_buffer_size(self, new_buffer_size: int) -> None:
        """Truncate or pad (default readings) the history to ``new_buffer_size`` entries."""
        sensor = self._current()
        if sensor is not None:
            sensor.change_buffer_size(int(new_buffer_size))

    def update_dof_name(self, dof_name: str) -> None:
        """Re-target to ``<parent of the original joint path>/<dof_name>``."""
        sensor = self._current()
        if sensor is None:
            raise RuntimeError(f"EffortSensor {self.prim_path}: no running simulation")
        sensor.update_dof_name(dof_name)
        self.prim_path = sensor.prim_path

    def get_data(self) -> dict[str, Any]:
        """The Python frame: ``value``, ``is_valid``, ``time``, ``physics_step`` (int)."""
        r = self.get_sensor_reading()
        return {
            "value": float(r.value),
            "is_valid": bool(r.is_valid),
            "time": float(r.time),
            "physics_step": int(r.step) if r.is_valid else self._current_step(),
        }
