"""Sensors stepped beside a physics engine: contact, IMU, raycast, joint state, effort.

Layout:

* :mod:`runtime.sensors.state` -- :class:`PhysicsState`, the engine-agnostic per-step input.
* :mod:`runtime.sensors.runtime` -- :class:`SensorRuntime`, the sensor loop.

Importing this package loads neither ``pxr`` nor ``numba``; the sensor modules are imported
on demand.
"""

from __future__ import annotations

from runtime.sensors.state import PhysicsState, empty_physics_state, make_physics_state

__all__ = ["PhysicsState", "empty_physics_state", "make_physics_state"]
