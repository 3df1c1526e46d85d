"""Isaac Sim's physics-sensor reading structs and ``get_*_sensor_interface()`` accessors.

``isaacsim.sensors.experimental.physics`` exposes one C++ interface object per sensor kind
(``get_imu_sensor_interface()``, ...) whose ``get_sensor_reading(path)`` returns a reading
struct. Here each interface is a process-wide object (like the reference's acquired
interface) reading from the running simulation of the current stage's
:class:`~runtime.compat.simulation_context.SimulationContext` (no simulation: every reading
is invalid, as before play in Isaac), or from the :class:`~runtime.sensors.SensorRuntime`
given to :meth:`SensorInterface.bind_runtime`; every number comes from that simrt sensor.

Reading structs (sensor spec §3.4, 4.6, 5.5, 6.1, 6.2): ``ContactSensorReading``,
``EffortSensorReading``, ``JointStateSensorReading`` and ``RaycastSensorReading`` are simrt's
reading dataclasses (Isaac's fields plus ``step``); ``IMUSensorReading`` is the C++ struct
with separate ``*_x/y/z`` / ``orientation_w/x/y/z`` fields (simrt's
:class:`~runtime.compat.isaac_sensors.ImuSensorReading`); ``IMURawData`` is the raw sample
layout (time, dt, velocities, orientation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from runtime.compat.isaac_sensors import ImuSensorReading, _lookup
from runtime.sensors.contact import ContactReading
from runtime.sensors.effort import EffortReading
from runtime.sensors.joint_state import JointStateReading
from runtime.sensors.raycast import RaycastReading

__all__ = [
    "ContactSensorReading",
    "EffortSensorReading",
    "IMURawData",
    "IMUSensorReading",
    "JointStateSensorReading",
    "RaycastSensorReading",
    "SensorInterface",
    "get_contact_sensor_interface",
    "get_effort_sensor_interface",
    "get_imu_sensor_interface",
    "get_joint_state_sensor_interface",
    "get_raycast_sensor_interface",
]

ContactSensorReading = ContactReading
"""``ContactSensorReading``: ``time``, ``value``, ``in_contact``, ``is_valid`` (+ ``step``)."""

EffortSensorReading = EffortReading
"""``EffortSensorReading``: ``value``, ``time``, ``is_valid`` (+ ``step``)."""

JointStateSensorReading = JointStateReading
"""``JointStateSensorReading``: ``dof_names``, ``positions``, ... (sensor spec §6.1)."""

RaycastSensorReading = RaycastReading
"""``RaycastSensorReading``: ``ray_count``, ``depths``, ``hit_positions``, ... (5.5)."""

IMUSensorReading = ImuSensorReading
"""``IMUSensorReading``: the C++ struct layout returned by ``get_sensor_reading`` (4.6)."""


@dataclass(frozen=True)
class IMURawData:
    """One raw IMU sample (sensor spec §4.6 ``ImuRawData``): defaults 0 except ``orientation_w``.

    Attributes:
        time: sample time [s].
        dt: step length [s].
        linear_velocity_x, linear_velocity_y, linear_velocity_z: sensor frame [stage units/s].
        angular_velocity_x, angular_velocity_y, angular_velocity_z: sensor frame [rad/s].
        orientation_w, orientation_x, orientation_y, orientation_z: world orientation.
    """

    time: float = 0.0
    dt: float = 0.0
    linear_velocity_x: float = 0.0
    linear_velocity_y: float = 0.0
    linear_velocity_z: float = 0.0
    angular_velocity_x: float = 0.0
    angular_velocity_y: float = 0.0
    angular_velocity_z: float = 0.0
    orientation_w: float = 1.0
    orientation_x: float = 0.0
    orientation_y: float = 0.0
    orientation_z: float = 0.0


class SensorInterface:
    """One kind's interface object over a bound :class:`~runtime.sensors.SensorRuntime`.

    Args:
        kind: simrt sensor kind (``"imu"``, ``"contact"``, ``"effort"``, ``"joint_state"``,
            ``"raycast"``).
        name: the accessor's Isaac name, used in error messages.
    """

    def __init__(self, kind: str, name: str) -> None:
        self.kind = kind
        self.name = name
        self._runtime: Any = None

    def bind_runtime(self, runtime: Any) -> None:
        """Read from ``runtime`` from now on (None: the simulation context's again)."""
        self._runtime = runtime

    @property
    def runtime(self) -> Any:
        """The bound runtime, else the simulation context's running one (None: nothing runs)."""
        if self._runtime is not None:
            return self._runtime
        from runtime.compat.simulation_context import current_context

        ctx = current_context()
        return None if ctx is None else ctx.sensor_runtime

    def _sensor(self, prim_path: Any) -> Any:
        runtime = self.runtime
        if runtime is None:
            raise RuntimeError(f"{self.name}(): no simulation is running")
        return _lookup(runtime, prim_path, self.kind, self.name)

    def is_sensor(self, prim_path: Any) -> bool:
        """True when the running simulation has a sensor of this kind at ``prim_path``."""
        try:
            self._sensor(prim_path)
        except (ValueError, RuntimeError):
            return False
        return True

    def create_sensor(self, prim_path: Any) -> bool:
        """Ensure the sensor exists: True when it does.

        simrt binds sensors when the simulation is built; with the simulation context, a
        joint-state or effort sensor (no prim describes them) is added on request and a
        contact / IMU / raycast prim authored after play is discovered.
        """
        if self.is_sensor(prim_path):
            return True
        if self._runtime is not None:
            return False
        from runtime.compat.isaac_sensors import _path_of, _sensor_factory
        from runtime.compat.simulation_context import current_context

        ctx = current_context()
        if ctx is None or ctx.sensor_runtime is None:
            return False
        path = _path_of(prim_path)
        prim = ctx.stage.GetPrimAtPath(path) if path.startswith("/") else None
        if prim is None or not prim.IsValid():
            return False
        if self.kind in ("joint_state", "effort"):
            ctx.request_sensor(self.kind, path, _sensor_factory(self.kind))
        else:
            ctx.refresh_sensors()
        return self.is_sensor(path)

    def remove_sensor(self, prim_path: Any) -> bool:
        """Drop the sensor's history (readings invalid until the next step); False if unknown."""
        if not self.is_sensor(prim_path):
            return False
        self._sensor(prim_path).reset()
        return True

    def get_sensor_reading(self, prim_path: Any, read_gravity: bool = True) -> Any:
        """The latest reading of the sensor at ``prim_path``.

        Args:
            prim_path: sensor path (joint path for effort, articulation root for joint
                state).
            read_gravity: IMU only: include the gravity reaction.

        Returns:
            The kind's reading struct; an unknown path gives the invalid default reading.
        """
        if not self.is_sensor(prim_path):
            return _INVALID[self.kind]()
        sensor = self._sensor(prim_path)
        if self.kind != "imu":
            return sensor.reading()
        r = sensor.reading(read_gravity=read_gravity)
        if not r.is_valid:
            return IMUSensorReading()
        values = [*r.linear_acceleration, *r.angular_velocity, *r.orientation, r.time]
        return IMUSensorReading(*(float(np.float32(v)) for v in values), True)

    def get_raw_contacts(self, prim_path: Any) -> list[Any]:
        """Contact only: the step's raw contact records of the sensor's parent body.

        Returns:
            simrt's :class:`~runtime.sensors.contact.RawContact` records (``body0``,
            ``body1``, ``position``, ``normal``, ``impulse``, ``time``, ``dt``); ``[]`` for
            an unknown path or an invalid reading.

        Raises:
            TypeError: called on another kind's interface.
        """
        if self.kind != "contact":
            raise TypeError(f"{self.name}(): get_raw_contacts is a contact-interface call")
        if not self.is_sensor(prim_path):
            return []
        return list(self._sensor(prim_path).raw_contacts())

    def __repr__(self) -> str:
        return f"<{self.name}() kind={self.kind!r} bound={self._runtime is not None}>"


_INVALID = {
    "imu": IMUSensorReading,
    "contact": ContactReading,
    "effort": EffortReading,
    "joint_state": JointStateReading,
    "raycast": RaycastReading,
}

_IMU = SensorInterface("imu", "get_imu_sensor_interface")
_CONTACT = SensorInterface("contact", "get_contact_sensor_interface")
_EFFORT = SensorInterface("effort", "get_effort_sensor_interface")
_JOINT_STATE = SensorInterface("joint_state", "get_joint_state_sensor_interface")
_RAYCAST = SensorInterface("raycast", "get_raycast_sensor_interface")


def get_imu_sensor_interface() -> SensorInterface:
    """The IMU sensor interface (one object per process)."""
    return _IMU


def get_contact_sensor_interface() -> SensorInterface:
    """The contact sensor interface (one object per process)."""
    return _CONTACT


def get_effort_sensor_interface() -> SensorInterface:
    """The effort sensor interface (one object per process)."""
    return _EFFORT


def get_joint_state_sensor_interface() -> SensorInterface:
    """The joint-state sensor interface (one object per process)."""
    return _JOINT_STATE


def get_raycast_sensor_interface() -> SensorInterface:
    """The raycast sensor interface (one object per process)."""
    return _RAYCAST
