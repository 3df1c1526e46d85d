"""Sensors stepped beside a physics engine: contact, IMU, raycast, joint state, effort.

Typical use::

    import runtime.schema                      # registers the Isaac schemas (before stages)
    from runtime.sensors import SensorRuntime

    sensors = SensorRuntime(stage, engine_body_paths, dof_names=dof_table)
    for _ in range(steps):
        engine.step()
        sensors.step(engine.state())           # PhysicsState after the step
        reading = sensors.sensor("/World/Robot/base/Imu").reading()

Sensor protocol (every sensor in ``SensorRuntime.sensors``; ``RaycastSensor`` in
:mod:`runtime.sensors.raycast` follows it too):

* attributes ``prim_path`` (str), ``disabled_reason`` (str or None), ``enabled`` (bool,
  user-side flag);
* ``bind(runtime)`` -- resolve prims and the parent body (``runtime.body_index(path)``), read
  configuration, allocate; raise ``SchemaError`` / ``SimrtError`` on bad configuration (the
  runtime then disables the sensor with a reason naming the prim, logged once);
* ``update(state)`` -- evaluate this sensor for a :class:`PhysicsState`;
* ``reading()`` -- latest typed reading, stamped with ``time`` and ``step``, ``is_valid``;
* ``reset()`` -- drop history; reading invalid until the next step.

Optional: a class attribute ``batch_type`` (built once as ``batch_type(runtime, sensors)``,
whose ``update(state)`` evaluates every sensor of that class in one kernel call) and an
``on_usd_changed()`` hook (called at the next step after USD edits at or above the prim).
A new kind is discovered once registered (:func:`register_kind`) and joins the compiled step
of a run through the calls of :mod:`~runtime.sensors.kinds`.

Modules: :mod:`~runtime.sensors.state` (``PhysicsState``), :mod:`~runtime.sensors.runtime`
(``SensorRuntime``), :mod:`~runtime.sensors.contact`, :mod:`~runtime.sensors.imu`,
:mod:`~runtime.sensors.joint_state`, :mod:`~runtime.sensors.effort`,
:mod:`~runtime.sensors.playback` (drive the loop from a recorded trajectory).

Importing this package loads neither ``pxr`` nor ``numba``.
"""

from __future__ import annotations

from runtime.sensors.contact import ContactReading, ContactSensor, RawContact
from runtime.sensors.effort import EffortReading, EffortSensor
from runtime.sensors.imu import ImuReading, ImuSensor
from runtime.sensors.joint_state import JointStateReading, JointStateSensor
from runtime.sensors.kinds import register_kind, unregister_kind
from runtime.sensors.playback import KinematicPlayback
from runtime.sensors.runtime import SensorRuntime
from runtime.sensors.state import PhysicsState, empty_physics_state, make_physics_state

__all__ = [
    "ContactReading",
    "ContactSensor",
    "EffortReading",
    "EffortSensor",
    "ImuReading",
    "ImuSensor",
    "JointStateReading",
    "JointStateSensor",
    "KinematicPlayback",
    "PhysicsState",
    "RawContact",
    "SensorRuntime",
    "empty_physics_state",
    "make_physics_state",
    "register_kind",
    "unregister_kind",
]
