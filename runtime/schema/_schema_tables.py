"""Allowed tokens and fallback values of the Isaac Robot and Sensor schemas.

See docs/reference/usd-attributes.md and docs/sensors/index.md#schema-attributes. The readers apply
these fallbacks themselves, so values are right even when the registered schema carries none (Isaac
Sim's own copy of the robot schema declares ``IsaacSurfaceGripper`` abstract, without fallbacks;
docs/sensors/index.md#fallbacks covers an unregistered sensor schema).
"""

from __future__ import annotations

from typing import Any

ROBOT_TYPE_TOKENS: tuple[str, ...] = (
    "Default",
    "End Effector",
    "Manipulator",
    "Humanoid",
    "Wheeled",
    "Holonomic",
    "Quadruped",
    "Mobile Manipulators",
    "Aerial",
)
"""Allowed values of ``isaac:robotType``."""

LICENSE_TOKENS: tuple[str, ...] = (
    "MIT",
    "Apache-2.0",
    "GPL-3.0",
    "LGPL-3.0",
    "BSD-3-Clause",
    "BSD-2-Clause",
    "ISC",
    "MPL-2.0",
    "EPL-2.0",
    "CC0-1.0",
    "Unlicense",
    "Other",
)
"""Allowed values of ``isaac:license``."""

FORWARD_AXIS_TOKENS: tuple[str, ...] = ("X", "Y", "Z")
"""Allowed values of ``isaac:forwardAxis`` (sites, attachment points) and ``physics:axis``."""

STATUS_TOKENS: tuple[str, ...] = ("Open", "Closed", "Closing")
"""Allowed values of ``isaac:status`` of a surface gripper."""

OUTPUT_FRAME_TOKENS: tuple[str, ...] = ("SENSOR", "WORLD")
"""Allowed values of ``outputFrameOfReference`` of a raycast sensor."""

DOF_TOKENS: tuple[str, ...] = ("TransX", "TransY", "TransZ", "RotX", "RotY", "RotZ")
"""DOF tokens of ``isaac:physics:DofOffsetOpOrder`` in canonical order."""

SENSOR_TYPE_NAMES: tuple[str, ...] = ("IsaacContactSensor", "IsaacImuSensor", "IsaacRaycastSensor")
"""Prim type names of the sensors this runtime evaluates (exact match).

See docs/sensors/index.md#parent-body.
"""

CONTACT_FALLBACKS: dict[str, Any] = {
    "enabled": True,
    "threshold": (0.01, 100000.0),
    "radius": -1.0,
    "color": (1.0, 1.0, 1.0, 1.0),
    "sensorPeriod": 0.0025,
}
"""Schema fallbacks of ``IsaacContactSensor`` (docs/sensors/contact.md#attributes)."""

IMU_FALLBACKS: dict[str, Any] = {
    "enabled": True,
    "sensorPeriod": 0.01,
    "linearAccelerationFilterWidth": 1,
    "angularVelocityFilterWidth": 1,
    "orientationFilterWidth": 1,
}
"""Schema fallbacks of ``IsaacImuSensor`` (docs/sensors/imu.md#attributes)."""

RAYCAST_FALLBACKS: dict[str, Any] = {
    "enabled": True,
    "numRays": 1,
    "minRange": 0.4,
    "maxRange": 100.0,
    "rayOrigins": (),
    "rayDirections": (),
    "rayTimeOffsets": (),
    "outputFrameOfReference": "SENSOR",
    "reportHitPrimPaths": False,
}
"""Schema fallbacks of ``IsaacRaycastSensor`` (docs/sensors/raycast.md#attributes)."""

SURFACE_GRIPPER_FALLBACKS: dict[str, Any] = {
    "isaac:status": "Open",
    "isaac:maxGripDistance": 0.01,
    "isaac:retryInterval": 0.0,
    "isaac:shearForceLimit": -1.0,
    "isaac:coaxialForceLimit": -1.0,
}
"""Fallbacks of ``IsaacSurfaceGripper`` (the same values as the registered schema).

Kept as a table because Isaac Sim's own copy of the schema declares the class abstract,
with no fallbacks. ``authoring.SURFACE_GRIPPER_DEFAULTS`` is this same table.
"""

ATTACHMENT_POINT_FALLBACKS: dict[str, Any] = {
    "isaac:forwardAxis": "X",
    "isaac:clearanceOffset": 0.0,
}
"""Schema fallbacks of ``IsaacAttachmentPointAPI``."""
