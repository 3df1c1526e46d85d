"""Typed, validated readers of the Isaac Robot and Sensor schemas.

Every reader takes a ``Usd.Prim`` (or a ``Usd.Stage``) and returns a frozen dataclass of
checked values: strings, tuples, Python floats and C-contiguous ``float64`` NumPy arrays.
The readers are the only place where USD content is validated; every problem is raised as
:class:`runtime.errors.SchemaError` naming the prim path, the attribute, the bad value and
what is allowed. Unauthored attributes resolve to the schema fallbacks, and when the schema
is not registered (docs/sensors/index.md#fallbacks) the ``*_FALLBACKS`` tables are applied by the
readers themselves.

Units: lengths are stage units unless a field name says ``si`` (radians / metres). Angles
authored in USD (revolute limits, D6 rotational limits) are degrees; ``*_si`` fields are
radians. Quaternions are ``(w, x, y, z)``.

Raycast sensors are special: the reference runtime does not reject a misconfigured raycast
sensor at load time but disables it with a logged reason (docs/sensors/raycast.md#validation). The
reader therefore only rejects malformed values (wrong type, NaN, unknown token) and
:func:`validate_raycast` returns the reason string for the five configuration checks.

This module is the public import path; the code lives in private modules by topic:
``_schema_tables`` (tokens, fallbacks), ``_values`` (typed value access),
``_robot_readers`` (robot, links, sites, named poses), ``_joint_readers``,
``_gripper_readers`` and ``_sensor_readers``.
"""

from __future__ import annotations

from runtime.schema._gripper_readers import (
    AttachmentPointInfo,
    SurfaceGripperInfo,
    read_attachment_point,
    read_surface_gripper,
)
from runtime.schema._joint_readers import JointDof, JointInfo, joint_type_of, read_joint
from runtime.schema._prims import is_surface_gripper
from runtime.schema._robot_readers import (
    LinkInfo,
    NamedPoseInfo,
    RobotInfo,
    SiteInfo,
    read_link,
    read_named_pose,
    read_robot,
    read_site,
    reported_name,
)
from runtime.schema._schema_tables import (
    ATTACHMENT_POINT_FALLBACKS,
    CONTACT_FALLBACKS,
    DOF_TOKENS,
    FORWARD_AXIS_TOKENS,
    IMU_FALLBACKS,
    LICENSE_TOKENS,
    OUTPUT_FRAME_TOKENS,
    RAYCAST_FALLBACKS,
    ROBOT_TYPE_TOKENS,
    SENSOR_TYPE_NAMES,
    STATUS_TOKENS,
    SURFACE_GRIPPER_FALLBACKS,
)
from runtime.schema._sensor_readers import (
    ContactSensorConfig,
    ImuSensorConfig,
    RaycastSensorConfig,
    SensorConfig,
    discover_sensor_prims,
    discover_sensors,
    find_parent_rigid_body,
    read_contact_sensor,
    read_imu_sensor,
    read_raycast_sensor,
    read_sensor,
    validate_raycast,
)
from runtime.schema._values import check_collider_transform

__all__ = [
    "check_collider_transform",
    "ATTACHMENT_POINT_FALLBACKS",
    "AttachmentPointInfo",
    "CONTACT_FALLBACKS",
    "ContactSensorConfig",
    "DOF_TOKENS",
    "FORWARD_AXIS_TOKENS",
    "IMU_FALLBACKS",
    "ImuSensorConfig",
    "JointDof",
    "JointInfo",
    "LICENSE_TOKENS",
    "LinkInfo",
    "NamedPoseInfo",
    "OUTPUT_FRAME_TOKENS",
    "RAYCAST_FALLBACKS",
    "ROBOT_TYPE_TOKENS",
    "RaycastSensorConfig",
    "RobotInfo",
    "SENSOR_TYPE_NAMES",
    "SURFACE_GRIPPER_FALLBACKS",
    "STATUS_TOKENS",
    "SensorConfig",
    "SiteInfo",
    "SurfaceGripperInfo",
    "discover_sensor_prims",
    "discover_sensors",
    "find_parent_rigid_body",
    "is_surface_gripper",
    "joint_type_of",
    "read_attachment_point",
    "read_contact_sensor",
    "read_imu_sensor",
    "read_joint",
    "read_link",
    "read_named_pose",
    "read_raycast_sensor",
    "read_robot",
    "read_sensor",
    "read_site",
    "read_surface_gripper",
    "reported_name",
    "validate_raycast",
]
