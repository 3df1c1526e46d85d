"""Isaac Sim sensor Python-layer names over simrt's :class:`~runtime.sensors.SensorRuntime`.

Thin wrappers with the reference's class names, methods and return shapes (sensors.md 3.4,
4.6, 5.5, 6.1, 6.2 and 7); every number comes from the simrt sensor the wrapper looks up in
a runtime. The only state a wrapper keeps is what the reference's Python layer keeps: the
last frame (contact and IMU frames are updated only by valid readings, so they go stale
after an invalid read) and the contact frame's raw-contact switch.

Differences from the reference, by construction: a wrapper needs the ``runtime`` that steps
the sensor (there is no global simulation context), and the sensor must be one of that
runtime's sensors (``IsaacContactSensor`` / ``IsaacImuSensor`` / ``IsaacRaycastSensor``
prims are discovered; joint-state and effort sensors are passed in ``sensors=``). The
reference's retry rule (re-create the C++ sensor after an invalid reading) has no
equivalent: simrt sensors are bound once and report why they are disabled.

Example::

    runtime = SensorRuntime(stage, engine.body_paths, engine_dof_table)
    imu = IMUSensor("/World/Robot/link3/imu", runtime=runtime)
    engine.step(); runtime.step(engine.state())
    frame = imu.get_data()            # linear_acceleration float32[3], orientation [w,x,y,z]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

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


class _Wrapper:
    kind = ""

    def __init__(self, prim_path: Any, *, runtime: Any, enabled: bool | None = None) -> None:
        self._runtime = runtime
        self._sensor = _lookup(runtime, prim_path, self.kind, type(self).__name__)
        self.prim_path = self._sensor.prim_path
        if enabled is not None:
            self._sensor.enabled = bool(enabled)

    @property
    def sensor(self) -> Any:
        """The wrapped simrt sensor object."""
        return self._sensor

    def reset(self) -> None:
        """Drop the sensor's history; readings are invalid until the next step."""
        self._sensor.reset()

    def _current_step(self) -> int:
        return int(getattr(self._runtime, "step_count", 0))


class ContactSensor(_Wrapper):
    """``ContactSensor`` (sensors.md 3.4, 7) over an ``IsaacContactSensor`` of ``runtime``.

    Args:
        prim_path: sensor prim path (string, ``Sdf.Path``, ``Usd.Prim`` or an object with
            ``prim_path``).
        runtime: the :class:`~runtime.sensors.SensorRuntime` stepping the sensor.

    Raises:
        ValueError: not a contact sensor of ``runtime``.
    """

    kind = "contact"

    def __init__(self, prim_path: Any, *, runtime: Any) -> None:
        super().__init__(prim_path, runtime=runtime)
        self._raw = False
        self._frame: dict[str, Any] = {"time": 0.0, "physics_step": 0.0}

    def get_sensor_reading(self) -> Any:
        """The C++ ``ContactSensorReading`` (``time``, ``value``, ``in_contact``, ``is_valid``).

        Returns:
            simrt's :class:`~runtime.sensors.ContactReading`, which also carries ``step``
            and ``number_of_contacts``.
        """
        return self._sensor.reading()

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
        reading = self._sensor.reading()
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
            frame["contacts"] = [
                {
                    "body0": raw.body0,
                    "body1": raw.body1,
                    "position": np.asarray(raw.position, np.float32),
                    "normal": np.asarray(raw.normal, np.float32),
                    "impulse": np.asarray(raw.impulse, np.float32),
                }
                for raw in self._sensor.raw_contacts()
            ]
        self._frame = frame
        return frame


@dataclass(frozen=True)
class ImuSensorReading:
    """The C++ ``ImuSensorReading`` as seen from Python (sensors.md 4.6).

    Attributes:
        linear_acceleration_x, linear_acceleration_y, linear_acceleration_z: sensor frame,
            stage units/s^2 (float32 values).
        angular_velocity_x, angular_velocity_y, angular_velocity_z: sensor frame, rad/s.
        orientation_w, orientation_x, orientation_y, orientation_z: world orientation.
        time: time of the producing step [s]; 0 when invalid.
        is_valid: validity (sensors.md 2.7).
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
    """``IMUSensor`` (sensors.md 4.6, 7) over an ``IsaacImuSensor`` of ``runtime``.

    Args:
        prim_path: sensor prim path (string, ``Sdf.Path``, ``Usd.Prim`` or an object with
            ``prim_path``).
        runtime: the :class:`~runtime.sensors.SensorRuntime` stepping the sensor.

    Raises:
        ValueError: not an IMU sensor of ``runtime``.
    """

    kind = "imu"

    def __init__(self, prim_path: Any, *, runtime: Any) -> None:
        super().__init__(prim_path, runtime=runtime)
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
        r = self._sensor.reading(read_gravity=read_gravity)
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
        r = self._sensor.reading(read_gravity=read_gravity)
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
    """``RaycastSensor`` (sensors.md 5.5, 7) over an ``IsaacRaycastSensor`` of ``runtime``.

    Args:
        prim_path: sensor prim path (string, ``Sdf.Path``, ``Usd.Prim`` or an object with
            ``prim_path``).
        runtime: the :class:`~runtime.sensors.SensorRuntime` stepping the sensor.

    Raises:
        ValueError: not a raycast sensor of ``runtime``.
    """

    kind = "raycast"

    def get_sensor_reading(self) -> Any:
        """The Python reading struct (simrt's ``RaycastReading``).

        Returns:
            ``ray_count``, ``depths`` (N,), ``hit_positions``, ``hit_normals``,
            ``ray_origins_world``, ``ray_end_points_world`` (N, 3) float32,
            ``hit_prim_paths``, ``time``, ``is_valid``; invalid: arrays of shapes (0,) and
            (0, 3).
        """
        return self._sensor.reading()

    def get_data(self) -> dict[str, Any]:
        """The Python frame (not stale).

        Returns:
            ``depths``, ``hit_positions``, ``hit_normals``, ``hit_prim_paths`` (list),
            ``time`` and ``physics_step`` (int); invalid readings give empty arrays, ``[]``,
            time 0.0 and the current step.
        """
        return self._sensor.get_data()


class JointStateSensor(_Wrapper):
    """``JointStateSensor`` (sensors.md 6.1) over a joint-state sensor of ``runtime``.

    Args:
        prim_path: articulation root path the sensor was created for.
        runtime: the :class:`~runtime.sensors.SensorRuntime` stepping the sensor (built with
            ``sensors=[..., runtime.sensors.joint_state.JointStateSensor(root)]``).
        enabled: Python-side enable flag (None keeps the sensor's).

    Raises:
        ValueError: not a joint-state sensor of ``runtime``.
    """

    kind = "joint_state"

    def __init__(self, prim_path: Any, *, runtime: Any, enabled: bool | None = None) -> None:
        super().__init__(prim_path, runtime=runtime, enabled=enabled)

    def get_sensor_reading(self) -> Any:
        """The reading (simrt's ``JointStateReading``).

        Returns:
            ``time``, ``is_valid``, ``dof_count``, ``dof_names``, ``positions``,
            ``velocities``, ``efforts``, ``dof_types``, ``stage_meters_per_unit``.
        """
        return self._sensor.reading()

    def get_data(self) -> dict[str, Any]:
        """The Python frame (not stale).

        Returns:
            ``dof_names`` (list), ``positions``, ``velocities``, ``efforts`` (float32
            (n,)), ``dof_types`` (uint8 (n,)), ``stage_meters_per_unit``, ``is_valid``,
            ``time`` and ``physics_step`` (int); invalid: empty arrays, time 0, mpu 0.
        """
        r = self._sensor.reading()
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
    """``EffortSensor`` (sensors.md 6.2) over an effort sensor of ``runtime``.

    Args:
        prim_path: joint prim path the sensor was created for.
        runtime: the :class:`~runtime.sensors.SensorRuntime` stepping the sensor (built with
            ``sensors=[..., runtime.sensors.effort.EffortSensor(joint)]``).
        enabled: Python-side enable flag (None keeps the sensor's).

    Raises:
        ValueError: not an effort sensor of ``runtime``.
    """

    kind = "effort"

    def __init__(self, prim_path: Any, *, runtime: Any, enabled: bool | None = None) -> None:
        super().__init__(prim_path, runtime=runtime, enabled=enabled)

    def get_sensor_reading(self) -> Any:
        """The reading (``value``, ``time``, ``is_valid``).

        Valid readings enter the sensor's ``history`` deque (newest first).
        """
        return self._sensor.reading()

    def change_buffer_size(self, new_buffer_size: int) -> None:
        """Truncate or pad (default readings) the history to ``new_buffer_size`` entries."""
        self._sensor.change_buffer_size(int(new_buffer_size))

    def update_dof_name(self, dof_name: str) -> None:
        """Re-target to ``<parent of the original joint path>/<dof_name>``."""
        self._sensor.update_dof_name(dof_name)
        self.prim_path = self._sensor.prim_path

    def get_data(self) -> dict[str, Any]:
        """The Python frame: ``value``, ``is_valid``, ``time``, ``physics_step`` (int)."""
        r = self._sensor.reading()
        return {
            "value": float(r.value),
            "is_valid": bool(r.is_valid),
            "time": float(r.time),
            "physics_step": int(r.step) if r.is_valid else self._current_step(),
        }
