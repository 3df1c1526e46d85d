"""Typed, validated readers of the Isaac Robot and Sensor schemas.

Every reader takes a ``Usd.Prim`` (or a ``Usd.Stage``) and returns a frozen dataclass of
checked values: strings, tuples, Python floats and C-contiguous ``float64`` NumPy arrays.
This module is the only place where USD content is validated; every problem is raised as
:class:`runtime.errors.SchemaError` naming the prim path, the attribute, the bad value and
what is allowed. Unauthored attributes resolve to the schema fallbacks, and when the schema
is not registered (sensors.md §1.7) the fallbacks below are applied by the readers
themselves.

Units: lengths are stage units unless a field name says ``si`` (radians / metres). Angles
authored in USD (revolute limits, D6 rotational limits) are degrees; ``*_si`` fields are
radians. Quaternions are ``(w, x, y, z)``.

Raycast sensors are special: the reference runtime does not reject a misconfigured raycast
sensor at load time but disables it with a logged reason (sensors.md §5.2). The reader
therefore only rejects malformed values (wrong type, NaN, unknown token) and
:func:`validate_raycast` returns the reason string for the five configuration checks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pxr import Gf, Usd, UsdGeom, UsdPhysics

from runtime.errors import SchemaError

__all__ = [
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

# ---------------------------------------------------------------------------------------------
# Allowed tokens and fallbacks (robot-schema.md §2, sensors.md §1)
# ---------------------------------------------------------------------------------------------

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
"""Prim type names of the sensors this runtime evaluates (exact match, sensors.md §1.8)."""

CONTACT_FALLBACKS: dict[str, Any] = {
    "enabled": True,
    "threshold": (0.01, 100000.0),
    "radius": -1.0,
    "color": (1.0, 1.0, 1.0, 1.0),
    "sensorPeriod": 0.0025,
}
"""Schema fallbacks of ``IsaacContactSensor`` (sensors.md §1.3)."""

IMU_FALLBACKS: dict[str, Any] = {
    "enabled": True,
    "sensorPeriod": 0.01,
    "linearAccelerationFilterWidth": 1,
    "angularVelocityFilterWidth": 1,
    "orientationFilterWidth": 1,
}
"""Schema fallbacks of ``IsaacImuSensor`` (sensors.md §1.4)."""

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
"""Schema fallbacks of ``IsaacRaycastSensor`` (sensors.md §1.5)."""

SURFACE_GRIPPER_FALLBACKS: dict[str, Any] = {
    "isaac:status": "Open",
    "isaac:maxGripDistance": 0.01,
    "isaac:retryInterval": 0.0,
    "isaac:shearForceLimit": -1.0,
    "isaac:coaxialForceLimit": -1.0,
}
"""Table defaults of ``IsaacSurfaceGripper`` (abstract in the schema, so USD has none)."""

ATTACHMENT_POINT_FALLBACKS: dict[str, Any] = {
    "isaac:forwardAxis": "X",
    "isaac:clearanceOffset": 0.0,
}
"""Schema fallbacks of ``IsaacAttachmentPointAPI``."""

_RIGID_BODY_ENABLED = "physics:rigidBodyEnabled"
_DEPRECATED_REFERENCE_POINT = "IsaacReferencePointAPI"

# ---------------------------------------------------------------------------------------------
# Low-level value access with type checks
# ---------------------------------------------------------------------------------------------


def _path(prim: Usd.Prim) -> str:
    return str(prim.GetPath())


def _raw(prim: Usd.Prim, name: str) -> Any:
    """Resolved value of an attribute, or None when absent / valueless."""
    attr = prim.GetAttribute(name)
    if not attr or not attr.IsValid():
        return None
    return attr.Get()


def _tidy(value: float) -> float:
    """Shortest decimal of a float32-representable value (0.019999999552965 -> 0.02).

    USD stores ``float`` attributes in single precision; the author wrote the decimal, so
    the reader returns the closest double to that decimal rather than the widened float32.
    """
    if math.isfinite(value):
        single = np.float32(value)
        if float(single) == value:
            return float(str(single))
    return value


def _tidy_array(array: np.ndarray) -> np.ndarray:
    """:func:`_tidy` applied to every element of a float32-valued float64 array."""
    flat = [float(str(x)) for x in array.astype(np.float32).reshape(-1)]
    return np.ascontiguousarray(np.array(flat, dtype=np.float64).reshape(array.shape))


def _type_label(value: Any) -> str:
    return type(value).__name__


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _read_float(
    prim: Usd.Prim,
    name: str,
    fallback: float,
    *,
    allow_inf: bool = False,
) -> float:
    value = _raw(prim, name)
    if value is None:
        return float(fallback)
    if not _is_number(value):
        raise SchemaError(
            _path(prim), name, f"value {value!r} has type {_type_label(value)}", "a float"
        )
    out = float(value)
    if math.isnan(out) or (not allow_inf and math.isinf(out)):
        raise SchemaError(_path(prim), name, f"value {out!r} is not finite", "a finite float")
    return _tidy(out)


def _read_int(prim: Usd.Prim, name: str, fallback: int) -> int:
    value = _raw(prim, name)
    if value is None:
        return int(fallback)
    if isinstance(value, bool) or not isinstance(value, int):
        raise SchemaError(
            _path(prim), name, f"value {value!r} has type {_type_label(value)}", "an integer"
        )
    return int(value)


def _read_bool(prim: Usd.Prim, name: str, fallback: bool | None) -> bool | None:
    value = _raw(prim, name)
    if value is None:
        return fallback
    if not isinstance(value, bool):
        raise SchemaError(
            _path(prim), name, f"value {value!r} has type {_type_label(value)}", "a bool"
        )
    return value


def _read_string(prim: Usd.Prim, name: str, fallback: str = "") -> str:
    value = _raw(prim, name)
    if value is None:
        return fallback
    if not isinstance(value, str):
        raise SchemaError(
            _path(prim), name, f"value {value!r} has type {_type_label(value)}", "a string"
        )
    return str(value)


def _read_token(prim: Usd.Prim, name: str, fallback: str, allowed: tuple[str, ...]) -> str:
    value = _read_string(prim, name, fallback)
    if value not in allowed:
        raise SchemaError(
            _path(prim), name, f"unknown token {value!r}", ", ".join(repr(a) for a in allowed)
        )
    return value


def _read_vec(prim: Usd.Prim, name: str, size: int, fallback: tuple[float, ...]) -> np.ndarray:
    value = _raw(prim, name)
    if value is None:
        out = np.array(fallback, dtype=np.float64)
    else:
        kind = _type_label(value)
        if size == 4 and kind.startswith("Quat"):
            numbers = [float(value.GetReal())] + [float(x) for x in value.GetImaginary()]
        elif kind.startswith(f"Vec{size}"):
            numbers = [float(v) for v in value]
        else:
            expected = "a quaternion (quatf)" if "Rot" in name else f"a float{size}"
            raise SchemaError(_path(prim), name, f"value {value!r} has type {kind}", expected)
        out = np.array([_tidy(x) for x in numbers], dtype=np.float64)
    if not np.all(np.isfinite(out)):
        raise SchemaError(
            _path(prim), name, f"value {tuple(out.tolist())} is not finite", "finite numbers"
        )
    return out


def _read_vec3_array(prim: Usd.Prim, name: str) -> np.ndarray:
    value = _raw(prim, name)
    if value is None:
        return np.zeros((0, 3), dtype=np.float64)
    kind = _type_label(value)
    if kind not in ("Vec3fArray", "Vec3dArray", "Vec3hArray"):
        raise SchemaError(
            _path(prim), name, f"value of type {kind} is not a 3-vector array", "float3[]"
        )
    out = np.ascontiguousarray(np.array(value, dtype=np.float64).reshape(-1, 3))
    if not np.all(np.isfinite(out)):
        bad = int(np.argwhere(~np.isfinite(out))[0][0])
        raise SchemaError(
            _path(prim),
            name,
            f"entry {bad} {tuple(out[bad].tolist())} is not finite",
            "finite numbers",
        )
    return _tidy_array(out) if kind != "Vec3dArray" else out


def _read_float_array(prim: Usd.Prim, name: str) -> np.ndarray | None:
    value = _raw(prim, name)
    if value is None:
        return None
    kind = _type_label(value)
    if kind not in ("FloatArray", "DoubleArray", "HalfArray", "IntArray", "UIntArray"):
        raise SchemaError(
            _path(prim), name, f"value of type {kind} is not a float array", "float[]"
        )
    out = np.ascontiguousarray(np.array(value, dtype=np.float64).reshape(-1))
    if not np.all(np.isfinite(out)):
        bad = int(np.argwhere(~np.isfinite(out))[0][0])
        raise SchemaError(
            _path(prim), name, f"entry {bad} ({out[bad]!r}) is not finite", "finite numbers"
        )
    return _tidy_array(out) if kind in ("FloatArray", "HalfArray") else out


def _read_string_array(prim: Usd.Prim, name: str) -> tuple[str, ...]:
    value = _raw(prim, name)
    if value is None:
        return ()
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise SchemaError(
            _path(prim), name, f"value {value!r} has type {_type_label(value)}", "a string array"
        )
    return tuple(str(v) for v in value)


def _targets(prim: Usd.Prim, name: str, *, must_exist: bool = True) -> tuple[str, ...]:
    rel = prim.GetRelationship(name)
    if not rel or not rel.IsValid():
        return ()
    targets = rel.GetTargets()
    stage = prim.GetStage()
    if must_exist:
        for target in targets:
            target_prim = stage.GetPrimAtPath(target.GetPrimPath())
            if not target_prim or not target_prim.IsValid():
                raise SchemaError(
                    _path(prim),
                    name,
                    f"target {target} does not exist",
                    "paths of existing prims",
                )
    return tuple(str(t) for t in targets)


def _check_xform_ops(prim: Usd.Prim) -> None:
    """Raise when an xformOp of ``prim`` holds NaN/inf."""
    if not prim.IsA(UsdGeom.Xformable):
        return
    for op in UsdGeom.Xformable(prim).GetOrderedXformOps():
        value = op.Get()
        if value is None:
            continue
        if isinstance(value, Gf.Matrix4d | Gf.Matrix4f):
            numbers = [float(x) for row in value for x in row]
        elif _type_label(value).startswith("Quat"):
            numbers = [float(value.GetReal())] + [float(x) for x in value.GetImaginary()]
        elif hasattr(value, "__len__"):
            numbers = [float(x) for x in value]
        else:
            numbers = [float(value)]
        if not all(math.isfinite(x) for x in numbers):
            raise SchemaError(
                _path(prim),
                op.GetName(),
                f"transform value {value} is not finite",
                "finite numbers",
            )


def _check_chain_finite(prim: Usd.Prim, stop: Usd.Prim | None = None) -> None:
    """Check the xformOps of ``prim`` and its ancestors up to (including) ``stop``."""
    current = prim
    while current and not current.IsPseudoRoot():
        _check_xform_ops(current)
        if stop is not None and current.GetPath() == stop.GetPath():
            break
        current = current.GetParent()


def _world_matrix(prim: Usd.Prim) -> Gf.Matrix4d:
    return UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default())


def _matrix_to_pose(matrix: Gf.Matrix4d) -> tuple[np.ndarray, np.ndarray]:
    """Translation (3,) and rotation-only quaternion wxyz (4,) of a possibly scaled matrix."""
    translation = np.array(matrix.ExtractTranslation(), dtype=np.float64)
    rot = Gf.Matrix4d(matrix)
    rot.SetTranslateOnly(Gf.Vec3d(0.0, 0.0, 0.0))
    rot = rot.RemoveScaleShear() if rot.GetDeterminant() != 0.0 else Gf.Matrix4d(1.0)
    quat = rot.ExtractRotationQuat()
    wxyz = np.array([quat.GetReal(), *quat.GetImaginary()], dtype=np.float64)
    norm = float(np.linalg.norm(wxyz))
    wxyz = wxyz / norm if norm > 0.0 else np.array([1.0, 0.0, 0.0, 0.0])
    if wxyz[0] < 0.0:
        wxyz = -wxyz
    return np.ascontiguousarray(translation), np.ascontiguousarray(wxyz)


def _pose_in_body(prim: Usd.Prim, body: Usd.Prim | None) -> tuple[np.ndarray, np.ndarray]:
    """Pose of ``prim`` in ``body``'s frame (world when ``body`` is None)."""
    world = _world_matrix(prim)
    if body is not None:
        world = world * _world_matrix(body).GetInverse()
    translation, orientation = _matrix_to_pose(world)
    if not (np.all(np.isfinite(translation)) and np.all(np.isfinite(orientation))):
        raise SchemaError(_path(prim), "xformOpOrder", "transform is not finite", "finite numbers")
    return translation, orientation


def _freeze(array: np.ndarray) -> np.ndarray:
    array = np.ascontiguousarray(array, dtype=np.float64)
    array.setflags(write=False)
    return array


# ---------------------------------------------------------------------------------------------
# Robot schema
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RobotInfo:
    """Metadata and authored relationships of an ``IsaacRobotAPI`` prim.

    Attributes:
        path: USD path of the robot prim.
        description: ``isaac:description``.
        namespace: ``isaac:namespace``.
        robot_type: ``isaac:robotType`` (one of :data:`ROBOT_TYPE_TOKENS`).
        license: ``isaac:license`` (one of :data:`LICENSE_TOKENS`).
        version: ``isaac:version``.
        source: ``isaac:source``.
        changelog: ``isaac:changelog`` entries.
        link_paths: targets of ``isaac:physics:robotLinks`` in authored order (links, sites
            or nested robots).
        joint_paths: targets of ``isaac:physics:robotJoints`` in authored order.
        named_pose_paths: targets of ``isaac:robot:namedPoses``.
    """

    path: str
    description: str
    namespace: str
    robot_type: str
    license: str
    version: str
    source: str
    changelog: tuple[str, ...]
    link_paths: tuple[str, ...]
    joint_paths: tuple[str, ...]
    named_pose_paths: tuple[str, ...]


def read_robot(prim: Usd.Prim) -> RobotInfo:
    """Read and validate an ``IsaacRobotAPI`` prim.

    Args:
        prim: a prim with ``IsaacRobotAPI`` applied.

    Returns:
        The robot's metadata and relationship targets.

    Raises:
        SchemaError: the API is missing, a token is unknown, a value has the wrong type, or
            a relationship target does not exist.
    """
    if not prim or not prim.IsValid():
        raise SchemaError(str(prim.GetPath()) if prim else "", "", "prim does not exist")
    if not prim.HasAPI("IsaacRobotAPI"):
        raise SchemaError(
            _path(prim), "apiSchemas", "IsaacRobotAPI is not applied", "IsaacRobotAPI"
        )
    return RobotInfo(
        path=_path(prim),
        description=_read_string(prim, "isaac:description"),
        namespace=_read_string(prim, "isaac:namespace"),
        robot_type=_read_token(prim, "isaac:robotType", "Default", ROBOT_TYPE_TOKENS),
        license=_read_token(prim, "isaac:license", "Other", LICENSE_TOKENS),
        version=_read_string(prim, "isaac:version"),
        source=_read_string(prim, "isaac:source"),
        changelog=_read_string_array(prim, "isaac:changelog"),
        link_paths=_targets(prim, "isaac:physics:robotLinks"),
        joint_paths=_targets(prim, "isaac:physics:robotJoints"),
        named_pose_paths=_targets(prim, "isaac:robot:namedPoses"),
    )


def reported_name(prim: Usd.Prim) -> str:
    """Name a link or joint is reported under.

    Reads ``isaac:nameOverride`` first, then ``isaac:NameOverride`` (robot-schema.md §2.10
    [REC]); the first non-empty one wins, else the prim name.

    Args:
        prim: a link, joint or site prim.

    Returns:
        The reported name.

    Raises:
        SchemaError: an override is authored with a non-string value.
    """
    for name in ("isaac:nameOverride", "isaac:NameOverride"):
        value = _read_string(prim, name, "")
        if value:
            return value
    return prim.GetName()


@dataclass(frozen=True)
class LinkInfo:
    """A robot link.

    Attributes:
        path: USD path of the link prim.
        name: reported name (name override, else prim name).
        name_override: authored ``isaac:nameOverride`` (``""`` when none).
        has_link_api: whether ``IsaacLinkAPI`` is applied.
        is_rigid_body: whether ``UsdPhysics.RigidBodyAPI`` is applied.
    """

    path: str
    name: str
    name_override: str
    has_link_api: bool
    is_rigid_body: bool


def read_link(prim: Usd.Prim) -> LinkInfo:
    """Read a link prim.

    Args:
        prim: a link prim (normally with ``IsaacLinkAPI`` and ``RigidBodyAPI``).

    Returns:
        The link record.

    Raises:
        SchemaError: wrong value type of a name override, or a non-finite xformOp.
    """
    _check_xform_ops(prim)
    return LinkInfo(
        path=_path(prim),
        name=reported_name(prim),
        name_override=_read_string(prim, "isaac:nameOverride"),
        has_link_api=bool(prim.HasAPI("IsaacLinkAPI")),
        is_rigid_body=bool(prim.HasAPI(UsdPhysics.RigidBodyAPI)),
    )


@dataclass(frozen=True)
class JointDof:
    """One degree of freedom of a joint.

    Attributes:
        token: ``"TransX"`` .. ``"RotZ"``.
        usd_lower: lower limit in USD units (degrees or stage length); -inf when free.
        usd_upper: upper limit in USD units; +inf when free.
        lower: lower limit in SI (radians or metres); -inf when free.
        upper: upper limit in SI; +inf when free.
        locked: True for a D6 axis whose limit has ``low > high`` (UsdPhysics: locked).
    """

    token: str
    usd_lower: float
    usd_upper: float
    lower: float
    upper: float
    locked: bool = False


@dataclass(frozen=True, eq=False)
class JointInfo:
    """A physics joint with its Isaac joint data.

    Attributes:
        path: USD path of the joint prim.
        name: reported name (``isaac:nameOverride``, then ``isaac:NameOverride``, else prim name).
        name_override: the override that was used (``""`` when none).
        joint_type: ``"revolute" | "prismatic" | "spherical" | "fixed" | "d6" | "generic"``.
        axis: ``"X" | "Y" | "Z"`` for revolute/prismatic/spherical; ``""`` otherwise.
        usd_lower: revolute/prismatic lower limit as authored (degrees / stage units),
            -inf when unlimited; NaN-free. Inverted limits (lower > upper) mean unlimited
            (USD convention) and read (-inf, +inf).
        usd_upper: upper counterpart of ``usd_lower``.
        lower: ``usd_lower`` in SI (radians; metres = stage units * metersPerUnit).
        upper: ``usd_upper`` in SI.
        body0: first target of ``physics:body0`` (``""`` when none, i.e. the world).
        body1: first target of ``physics:body1`` (``""`` when none).
        local_pos0: ``physics:localPos0`` [stage units], shape (3,), float64.
        local_rot0: ``physics:localRot0`` quaternion wxyz, shape (4,), float64.
        local_pos1: ``physics:localPos1`` [stage units], shape (3,), float64.
        local_rot1: ``physics:localRot1`` quaternion wxyz, shape (4,), float64.
        dof_offset_op_order: authored ``isaac:physics:DofOffsetOpOrder`` tokens.
        dofs: the joint's DOFs (revolute/prismatic: one; fixed: none; spherical: RotX..RotZ;
            d6/generic: the six axes, ``locked`` set for locked ones), canonical order.
        has_joint_api: whether ``IsaacJointAPI`` is applied.
        exclude_from_articulation: ``physics:excludeFromArticulation``.
        meters_per_unit: the stage's ``metersPerUnit``.
    """

    path: str
    name: str
    name_override: str
    joint_type: str
    axis: str
    usd_lower: float
    usd_upper: float
    lower: float
    upper: float
    body0: str
    body1: str
    local_pos0: np.ndarray = field(repr=False)
    local_rot0: np.ndarray = field(repr=False)
    local_pos1: np.ndarray = field(repr=False)
    local_rot1: np.ndarray = field(repr=False)
    dof_offset_op_order: tuple[str, ...]
    dofs: tuple[JointDof, ...]
    has_joint_api: bool
    exclude_from_articulation: bool
    meters_per_unit: float

    @property
    def free_dofs(self) -> tuple[JointDof, ...]:
        """DOFs that are not locked."""
        return tuple(d for d in self.dofs if not d.locked)


_JOINT_TYPES = {
    "PhysicsRevoluteJoint": "revolute",
    "PhysicsPrismaticJoint": "prismatic",
    "PhysicsSphericalJoint": "spherical",
    "PhysicsFixedJoint": "fixed",
    "PhysicsJoint": "d6",
    "PhysicsD6Joint": "d6",
}


def joint_type_of(prim: Usd.Prim) -> str | None:
    """Classify a joint prim.

    Args:
        prim: any prim.

    Returns:
        ``"revolute"``, ``"prismatic"``, ``"spherical"``, ``"fixed"``, ``"d6"`` (a plain
        ``PhysicsJoint``), ``"generic"`` (any other ``UsdPhysics.Joint``), or None when the
        prim is not a physics joint.
    """
    type_name = str(prim.GetTypeName())
    if type_name in _JOINT_TYPES:
        return _JOINT_TYPES[type_name]
    if prim.IsA(UsdPhysics.Joint):
        return "generic"
    return None


def _stage_mpu(stage: Usd.Stage) -> float:
    mpu = float(UsdGeom.GetStageMetersPerUnit(stage))
    if not math.isfinite(mpu) or mpu <= 0.0:
        raise SchemaError(
            "/",
            "metersPerUnit",
            f"value {mpu!r} is not a positive finite number",
            "a positive float",
        )
    return mpu


def _limit_pair(prim: Usd.Prim, low_name: str, high_name: str) -> tuple[float, float, bool]:
    """(low, high, inverted) with NaN rejected and unauthored values as ∓inf."""
    low = _read_float(prim, low_name, -math.inf, allow_inf=True)
    high = _read_float(prim, high_name, math.inf, allow_inf=True)
    return low, high, low > high


def _to_si(token: str, value: float, mpu: float) -> float:
    if math.isinf(value):
        return value
    return math.radians(value) if token.startswith("Rot") else value * mpu


def _body_target(prim: Usd.Prim, name: str) -> str:
    targets = _targets(prim, name)
    return targets[0] if targets else ""


def _read_dof_order(prim: Usd.Prim) -> tuple[str, ...]:
    name = "isaac:physics:DofOffsetOpOrder"
    value = _raw(prim, name)
    if value is None:
        return ()
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise SchemaError(
            _path(prim), name, f"value {value!r} has type {_type_label(value)}", "token[]"
        )
    tokens = tuple(str(v) for v in value)
    for token in tokens:
        if token not in DOF_TOKENS:
            raise SchemaError(_path(prim), name, f"unknown token {token!r}", ", ".join(DOF_TOKENS))
    if len(set(tokens)) != len(tokens):
        raise SchemaError(
            _path(prim), name, f"duplicate tokens in {list(tokens)}", "each token at most once"
        )
    return tokens


def read_joint(prim: Usd.Prim) -> JointInfo:
    """Read and validate a physics joint.

    Args:
        prim: a ``UsdPhysics.Joint`` prim.

    Returns:
        The joint record with limits in USD units and SI.

    Raises:
        SchemaError: not a joint, no body target at all, a body target that does not exist,
            an unknown axis or DOF token, a wrong value type, or NaN in a limit or local pose.
    """
    path = _path(prim)
    joint_type = joint_type_of(prim)
    if joint_type is None:
        raise SchemaError(
            path,
            "typeName",
            f"prim type {str(prim.GetTypeName())!r} is not a physics joint",
            "PhysicsRevoluteJoint, PhysicsPrismaticJoint, PhysicsSphericalJoint, "
            "PhysicsFixedJoint, PhysicsJoint",
        )
    mpu = _stage_mpu(prim.GetStage())
    body0 = _body_target(prim, "physics:body0")
    body1 = _body_target(prim, "physics:body1")
    if not body0 and not body1:
        raise SchemaError(
            path,
            "physics:body0",
            "neither physics:body0 nor physics:body1 has a target",
            "at least one body target",
        )
    axis = ""
    if joint_type in ("revolute", "prismatic", "spherical"):
        axis = _read_token(prim, "physics:axis", "X", FORWARD_AXIS_TOKENS)
    dofs: list[JointDof] = []
    usd_lower, usd_upper = -math.inf, math.inf
    if joint_type in ("revolute", "prismatic"):
        token = ("Rot" if joint_type == "revolute" else "Trans") + axis
        low, high, inverted = _limit_pair(prim, "physics:lowerLimit", "physics:upperLimit")
        if not inverted:
            usd_lower, usd_upper = low, high
        dofs.append(
            JointDof(
                token,
                usd_lower,
                usd_upper,
                _to_si(token, usd_lower, mpu),
                _to_si(token, usd_upper, mpu),
            )
        )
    elif joint_type != "fixed":
        tokens = DOF_TOKENS[3:] if joint_type == "spherical" else DOF_TOKENS
        for token in tokens:
            usd_axis = token[0].lower() + token[1:]
            low, high, locked = -math.inf, math.inf, False
            if prim.HasAPI(UsdPhysics.LimitAPI, usd_axis):
                low, high, locked = _limit_pair(
                    prim, f"limit:{usd_axis}:physics:low", f"limit:{usd_axis}:physics:high"
                )
            if locked:
                dofs.append(
                    JointDof(
                        token,
                        low,
                        high,
                        _to_si(token, low, mpu),
                        _to_si(token, high, mpu),
                        locked=True,
                    )
                )
            else:
                dofs.append(
                    JointDof(token, low, high, _to_si(token, low, mpu), _to_si(token, high, mpu))
                )
    name_override = ""
    for name in ("isaac:nameOverride", "isaac:NameOverride"):
        name_override = _read_string(prim, name, "")
        if name_override:
            break
    exclude = _read_bool(prim, "physics:excludeFromArticulation", False)
    return JointInfo(
        path=path,
        name=name_override or prim.GetName(),
        name_override=name_override,
        joint_type=joint_type,
        axis=axis,
        usd_lower=usd_lower,
        usd_upper=usd_upper,
        lower=_to_si(dofs[0].token, usd_lower, mpu) if len(dofs) == 1 else -math.inf,
        upper=_to_si(dofs[0].token, usd_upper, mpu) if len(dofs) == 1 else math.inf,
        body0=body0,
        body1=body1,
        local_pos0=_freeze(_read_vec(prim, "physics:localPos0", 3, (0.0, 0.0, 0.0))),
        local_rot0=_freeze(_read_vec(prim, "physics:localRot0", 4, (1.0, 0.0, 0.0, 0.0))),
        local_pos1=_freeze(_read_vec(prim, "physics:localPos1", 3, (0.0, 0.0, 0.0))),
        local_rot1=_freeze(_read_vec(prim, "physics:localRot1", 4, (1.0, 0.0, 0.0, 0.0))),
        dof_offset_op_order=_read_dof_order(prim),
        dofs=tuple(dofs),
        has_joint_api=bool(prim.HasAPI("IsaacJointAPI")),
        exclude_from_articulation=bool(exclude),
        meters_per_unit=mpu,
    )


def _has_deprecated_reference_point(prim: Usd.Prim) -> bool:
    return _DEPRECATED_REFERENCE_POINT in prim.GetPrimTypeInfo().GetAppliedAPISchemas()


@dataclass(frozen=True, eq=False)
class SiteInfo:
    """A site (``IsaacSiteAPI``, or the deprecated ``IsaacReferencePointAPI``).

    Attributes:
        path: USD path of the site prim.
        name: reported name.
        description: ``isaac:Description`` (capital D).
        forward_axis: ``"X" | "Y" | "Z"``.
        parent_link: path of the nearest ancestor with ``IsaacLinkAPI`` or ``RigidBodyAPI``
            (``""`` when none).
        deprecated: True when only the deprecated reference-point API marks the prim.
        translation_in_parent: site origin in the parent link frame [stage units], (3,).
        orientation_in_parent: site orientation in the parent link frame, wxyz, (4,).
    """

    path: str
    name: str
    description: str
    forward_axis: str
    parent_link: str
    deprecated: bool
    translation_in_parent: np.ndarray = field(repr=False)
    orientation_in_parent: np.ndarray = field(repr=False)


def read_site(prim: Usd.Prim) -> SiteInfo:
    """Read a site prim.

    Args:
        prim: a prim with ``IsaacSiteAPI`` (or the deprecated reference-point token).

    Returns:
        The site record.

    Raises:
        SchemaError: unknown ``isaac:forwardAxis`` token, wrong value type, NaN transform.
    """
    parent = prim.GetParent()
    while parent and not parent.IsPseudoRoot():
        if parent.HasAPI("IsaacLinkAPI") or parent.HasAPI(UsdPhysics.RigidBodyAPI):
            break
        parent = parent.GetParent()
    parent_prim = parent if parent and not parent.IsPseudoRoot() else None
    _check_chain_finite(prim, parent_prim)
    translation, orientation = _pose_in_body(prim, parent_prim)
    return SiteInfo(
        path=_path(prim),
        name=reported_name(prim),
        description=_read_string(prim, "isaac:Description"),
        forward_axis=_read_token(prim, "isaac:forwardAxis", "X", FORWARD_AXIS_TOKENS),
        parent_link=_path(parent_prim) if parent_prim is not None else "",
        deprecated=not prim.HasAPI("IsaacSiteAPI") and _has_deprecated_reference_point(prim),
        translation_in_parent=_freeze(translation),
        orientation_in_parent=_freeze(orientation),
    )


@dataclass(frozen=True, eq=False)
class NamedPoseInfo:
    """An ``IsaacNamedPose`` prim.

    Attributes:
        path: USD path of the pose prim.
        name: prim name.
        start_link: first target of ``isaac:robot:pose:startLink`` (``""`` when none).
        end_link: first target of ``isaac:robot:pose:endLink`` (``""`` when none).
        joints: targets of ``isaac:robot:pose:joints`` in order.
        joint_values: ``isaac:robot:pose:jointValues`` in USD units (degrees / stage units),
            shape (len(joints),), float64; None when unauthored.
        joint_fixed: ``isaac:robot:pose:jointFixed``; None when unauthored.
        valid: ``isaac:robot:pose:valid``; None when unauthored.
        target_translation: world position of the pose prim [stage units], (3,).
        target_orientation: world orientation of the pose prim, wxyz, (4,).
    """

    path: str
    name: str
    start_link: str
    end_link: str
    joints: tuple[str, ...]
    joint_values: np.ndarray | None = field(repr=False)
    joint_fixed: tuple[bool, ...] | None
    valid: bool | None
    target_translation: np.ndarray = field(repr=False)
    target_orientation: np.ndarray = field(repr=False)


def read_named_pose(prim: Usd.Prim) -> NamedPoseInfo:
    """Read an ``IsaacNamedPose`` prim.

    Args:
        prim: a prim of type ``IsaacNamedPose``.

    Returns:
        The named pose record.

    Raises:
        SchemaError: wrong type, a missing relationship target, NaN values or transform, or
            joint values / fixed flags whose length differs from the joint list.
    """
    path = _path(prim)
    if str(prim.GetTypeName()) != "IsaacNamedPose":
        raise SchemaError(
            path,
            "typeName",
            f"prim type {str(prim.GetTypeName())!r} is not a named pose",
            "IsaacNamedPose",
        )
    start = _targets(prim, "isaac:robot:pose:startLink")
    end = _targets(prim, "isaac:robot:pose:endLink")
    joints = _targets(prim, "isaac:robot:pose:joints")
    values = _read_float_array(prim, "isaac:robot:pose:jointValues")
    if values is not None and len(values) != len(joints):
        raise SchemaError(
            path,
            "isaac:robot:pose:jointValues",
            f"has {len(values)} values for {len(joints)} joints",
            "one value per target of isaac:robot:pose:joints",
        )
    fixed_raw = _raw(prim, "isaac:robot:pose:jointFixed")
    fixed: tuple[bool, ...] | None = None
    if fixed_raw is not None:
        if isinstance(fixed_raw, (str, bool)) or not all(isinstance(v, bool) for v in fixed_raw):
            raise SchemaError(
                path,
                "isaac:robot:pose:jointFixed",
                f"value {fixed_raw!r} has type {_type_label(fixed_raw)}",
                "bool[]",
            )
        fixed = tuple(bool(v) for v in fixed_raw)
        if len(fixed) != len(joints):
            raise SchemaError(
                path,
                "isaac:robot:pose:jointFixed",
                f"has {len(fixed)} flags for {len(joints)} joints",
                "one flag per target of isaac:robot:pose:joints",
            )
    _check_chain_finite(prim)
    translation, orientation = _pose_in_body(prim, None)
    return NamedPoseInfo(
        path=path,
        name=prim.GetName(),
        start_link=start[0] if start else "",
        end_link=end[0] if end else "",
        joints=joints,
        joint_values=None if values is None else _freeze(values),
        joint_fixed=fixed,
        valid=_read_bool(prim, "isaac:robot:pose:valid", None),
        target_translation=_freeze(translation),
        target_orientation=_freeze(orientation),
    )


def is_surface_gripper(prim: Usd.Prim) -> bool:
    """Whether ``prim`` is a surface gripper (type name equals ``IsaacSurfaceGripper``).

    The schema declares the class abstract, so ``IsA`` does not work (robot-schema.md §2.6).

    Args:
        prim: any prim.

    Returns:
        True for a surface gripper prim.
    """
    return bool(prim) and str(prim.GetTypeName()) == "IsaacSurfaceGripper"


@dataclass(frozen=True)
class SurfaceGripperInfo:
    """An ``IsaacSurfaceGripper`` prim with table defaults for unauthored attributes.

    Attributes:
        path: USD path.
        status: ``"Open" | "Closed" | "Closing"``.
        max_grip_distance: ``isaac:maxGripDistance`` [m].
        retry_interval: ``isaac:retryInterval`` [s].
        shear_force_limit: ``isaac:shearForceLimit`` [N]; -1 = no limit.
        coaxial_force_limit: ``isaac:coaxialForceLimit`` [N]; -1 = no limit.
        attachment_points: targets of ``isaac:attachmentPoints``.
        gripped_objects: targets of ``isaac:grippedObjects``.
    """

    path: str
    status: str
    max_grip_distance: float
    retry_interval: float
    shear_force_limit: float
    coaxial_force_limit: float
    attachment_points: tuple[str, ...]
    gripped_objects: tuple[str, ...]


def read_surface_gripper(prim: Usd.Prim) -> SurfaceGripperInfo:
    """Read a surface gripper prim.

    Args:
        prim: a prim whose type name is ``IsaacSurfaceGripper``.

    Returns:
        The gripper record.

    Raises:
        SchemaError: wrong prim type, unknown status token, wrong value type, NaN, or a
            missing attachment-point target.
    """
    path = _path(prim)
    if not is_surface_gripper(prim):
        raise SchemaError(
            path,
            "typeName",
            f"prim type {str(prim.GetTypeName())!r} is not a surface gripper",
            "IsaacSurfaceGripper",
        )
    fb = SURFACE_GRIPPER_FALLBACKS
    return SurfaceGripperInfo(
        path=path,
        status=_read_token(prim, "isaac:status", fb["isaac:status"], STATUS_TOKENS),
        max_grip_distance=_read_float(prim, "isaac:maxGripDistance", fb["isaac:maxGripDistance"]),
        retry_interval=_read_float(prim, "isaac:retryInterval", fb["isaac:retryInterval"]),
        shear_force_limit=_read_float(prim, "isaac:shearForceLimit", fb["isaac:shearForceLimit"]),
        coaxial_force_limit=_read_float(
            prim, "isaac:coaxialForceLimit", fb["isaac:coaxialForceLimit"]
        ),
        attachment_points=_targets(prim, "isaac:attachmentPoints"),
        gripped_objects=_targets(prim, "isaac:grippedObjects", must_exist=False),
    )


@dataclass(frozen=True)
class AttachmentPointInfo:
    """A joint with ``IsaacAttachmentPointAPI``.

    Attributes:
        path: USD path of the joint.
        forward_axis: ``"X" | "Y" | "Z"``.
        clearance_offset: ``isaac:clearanceOffset`` [m].
    """

    path: str
    forward_axis: str
    clearance_offset: float


def read_attachment_point(prim: Usd.Prim) -> AttachmentPointInfo:
    """Read an attachment point.

    Args:
        prim: a joint prim with ``IsaacAttachmentPointAPI``.

    Returns:
        The attachment point record.

    Raises:
        SchemaError: unknown forward axis token, wrong value type or NaN.
    """
    fb = ATTACHMENT_POINT_FALLBACKS
    return AttachmentPointInfo(
        path=_path(prim),
        forward_axis=_read_token(
            prim, "isaac:forwardAxis", fb["isaac:forwardAxis"], FORWARD_AXIS_TOKENS
        ),
        clearance_offset=_read_float(prim, "isaac:clearanceOffset", fb["isaac:clearanceOffset"]),
    )


# ---------------------------------------------------------------------------------------------
# Sensor schema
# ---------------------------------------------------------------------------------------------


def find_parent_rigid_body(prim: Usd.Prim) -> Usd.Prim | None:
    """Parent rigid body of a sensor (sensors.md §1.8).

    Walks the ancestors of ``prim`` (its parent first, the prim itself excluded, stopping
    before the pseudo-root). The first ancestor qualifies when its
    ``physics:rigidBodyEnabled`` attribute exists and is true, or when it has
    ``UsdPhysics.RigidBodyAPI`` and no such attribute. Ancestors whose attribute is false
    are skipped.

    Args:
        prim: the sensor prim.

    Returns:
        The parent rigid-body prim, or None.
    """
    current = prim.GetParent()
    while current and current.IsValid() and not current.IsPseudoRoot():
        attr = current.GetAttribute(_RIGID_BODY_ENABLED)
        if attr and attr.IsValid():
            if attr.Get() is True:
                return current
        elif current.HasAPI(UsdPhysics.RigidBodyAPI):
            return current
        current = current.GetParent()
    return None


def _sensor_common(prim: Usd.Prim, type_name: str) -> tuple[str, bool]:
    path = _path(prim)
    if str(prim.GetTypeName()) != type_name:
        raise SchemaError(
            path,
            "typeName",
            f"prim type {str(prim.GetTypeName())!r} is not {type_name}",
            type_name,
        )
    enabled = _read_bool(prim, "enabled", True)
    return path, bool(enabled)


def _required_body(prim: Usd.Prim, kind: str) -> Usd.Prim:
    body = find_parent_rigid_body(prim)
    if body is None:
        raise SchemaError(
            _path(prim),
            "physics:rigidBodyEnabled",
            f"{kind} has no ancestor with an enabled rigid body",
            "the sensor must be below a prim with UsdPhysics.RigidBodyAPI "
            "(physics:rigidBodyEnabled true)",
        )
    return body


@dataclass(frozen=True, eq=False)
class ContactSensorConfig:
    """Configuration of an ``IsaacContactSensor``.

    Attributes:
        path: USD path of the sensor prim.
        enabled: ``enabled``.
        parent_body: path of the parent rigid body (sensors.md §1.8).
        threshold_min: minimum net force [mass * stage length / s^2].
        threshold_max: maximum net force [mass * stage length / s^2].
        radius: spatial filter radius [stage units]; <= 0 disables filtering.
        color: RGBA, visualisation only.
        sensor_period: deprecated ``sensorPeriod`` [s], ignored by the runtime.
        translation_in_body: sensor origin in the parent body frame [stage units], (3,).
        orientation_in_body: sensor orientation in the parent body frame, wxyz, (4,).
    """

    path: str
    enabled: bool
    parent_body: str
    threshold_min: float
    threshold_max: float
    radius: float
    color: tuple[float, float, float, float]
    sensor_period: float
    translation_in_body: np.ndarray = field(repr=False)
    orientation_in_body: np.ndarray = field(repr=False)

    type_name = "IsaacContactSensor"


def read_contact_sensor(prim: Usd.Prim) -> ContactSensorConfig:
    """Read and validate an ``IsaacContactSensor``.

    Args:
        prim: the sensor prim.

    Returns:
        The contact sensor configuration.

    Raises:
        SchemaError: wrong type name, no parent rigid body, wrong value type, NaN/inf, or
            ``threshold`` min > max.
    """
    path, enabled = _sensor_common(prim, "IsaacContactSensor")
    body = _required_body(prim, "contact sensor")
    fb = CONTACT_FALLBACKS
    threshold = _read_vec(prim, "threshold", 2, fb["threshold"])
    if threshold[0] > threshold[1]:
        raise SchemaError(
            path, "threshold", f"min {threshold[0]} > max {threshold[1]}", "(min, max), min <= max"
        )
    color = _read_vec(prim, "color", 4, fb["color"])
    _check_chain_finite(prim, body)
    translation, orientation = _pose_in_body(prim, body)
    return ContactSensorConfig(
        path=path,
        enabled=enabled,
        parent_body=_path(body),
        threshold_min=float(threshold[0]),
        threshold_max=float(threshold[1]),
        radius=_read_float(prim, "radius", fb["radius"]),
        color=(float(color[0]), float(color[1]), float(color[2]), float(color[3])),
        sensor_period=_read_float(prim, "sensorPeriod", fb["sensorPeriod"]),
        translation_in_body=_freeze(translation),
        orientation_in_body=_freeze(orientation),
    )


@dataclass(frozen=True, eq=False)
class ImuSensorConfig:
    """Configuration of an ``IsaacImuSensor``.

    Attributes:
        path: USD path of the sensor prim.
        enabled: ``enabled``.
        parent_body: path of the parent rigid body.
        linear_acceleration_filter_width: authored width (>= 0).
        angular_velocity_filter_width: authored width (>= 0).
        orientation_filter_width: authored width (>= 0).
        sensor_period: deprecated ``sensorPeriod`` [s], ignored.
        translation_in_body: sensor origin in the parent body frame [stage units], (3,).
        orientation_in_body: sensor orientation in the parent body frame, wxyz, (4,).
    """

    path: str
    enabled: bool
    parent_body: str
    linear_acceleration_filter_width: int
    angular_velocity_filter_width: int
    orientation_filter_width: int
    sensor_period: float
    translation_in_body: np.ndarray = field(repr=False)
    orientation_in_body: np.ndarray = field(repr=False)

    type_name = "IsaacImuSensor"

    @property
    def effective_widths(self) -> tuple[int, int, int]:
        """(Nl, Nw, Nq) = each width clamped to >= 1 (sensors.md §4.1)."""
        return (
            max(self.linear_acceleration_filter_width, 1),
            max(self.angular_velocity_filter_width, 1),
            max(self.orientation_filter_width, 1),
        )


def read_imu_sensor(prim: Usd.Prim) -> ImuSensorConfig:
    """Read and validate an ``IsaacImuSensor``.

    Args:
        prim: the sensor prim.

    Returns:
        The IMU configuration.

    Raises:
        SchemaError: wrong type name, no parent rigid body, wrong value type, NaN transform
            or a negative filter width.
    """
    path, enabled = _sensor_common(prim, "IsaacImuSensor")
    body = _required_body(prim, "IMU sensor")
    widths = []
    for name in (
        "linearAccelerationFilterWidth",
        "angularVelocityFilterWidth",
        "orientationFilterWidth",
    ):
        width = _read_int(prim, name, IMU_FALLBACKS[name])
        if width < 0:
            raise SchemaError(path, name, f"negative filter width {width}", "an integer >= 0")
        widths.append(width)
    _check_chain_finite(prim, body)
    translation, orientation = _pose_in_body(prim, body)
    return ImuSensorConfig(
        path=path,
        enabled=enabled,
        parent_body=_path(body),
        linear_acceleration_filter_width=widths[0],
        angular_velocity_filter_width=widths[1],
        orientation_filter_width=widths[2],
        sensor_period=_read_float(prim, "sensorPeriod", IMU_FALLBACKS["sensorPeriod"]),
        translation_in_body=_freeze(translation),
        orientation_in_body=_freeze(orientation),
    )


@dataclass(frozen=True, eq=False)
class RaycastSensorConfig:
    """Configuration of an ``IsaacRaycastSensor`` (not yet checked by :func:`validate_raycast`).

    Attributes:
        path: USD path of the sensor prim.
        enabled: ``enabled``.
        parent_body: path of the parent rigid body, ``""`` for a static sensor.
        num_rays: ``numRays`` (authoritative ray count).
        min_range: ``minRange`` [stage units].
        max_range: ``maxRange`` [stage units].
        ray_origins: per-ray origins in the sensor frame [stage units], shape (M, 3), float64.
        ray_directions: per-ray directions in the sensor frame (not normalised), (K, 3).
        ray_time_offsets: per-ray time offsets [s], shape (T,); empty = all zero.
        output_frame_of_reference: ``"SENSOR"`` or ``"WORLD"``.
        report_hit_prim_paths: ``reportHitPrimPaths``.
        translation_in_body: sensor origin in the parent body frame (world frame for a static
            sensor) [stage units], (3,).
        orientation_in_body: sensor orientation in the parent body (or world) frame, wxyz, (4,).
    """

    path: str
    enabled: bool
    parent_body: str
    num_rays: int
    min_range: float
    max_range: float
    ray_origins: np.ndarray = field(repr=False)
    ray_directions: np.ndarray = field(repr=False)
    ray_time_offsets: np.ndarray = field(repr=False)
    output_frame_of_reference: str
    report_hit_prim_paths: bool
    translation_in_body: np.ndarray = field(repr=False)
    orientation_in_body: np.ndarray = field(repr=False)

    type_name = "IsaacRaycastSensor"


def read_raycast_sensor(prim: Usd.Prim) -> RaycastSensorConfig:
    """Read an ``IsaacRaycastSensor``.

    Only malformed values are rejected here; call :func:`validate_raycast` for the five
    configuration checks that disable the sensor at run time.

    Args:
        prim: the sensor prim.

    Returns:
        The raycast configuration.

    Raises:
        SchemaError: wrong type name, wrong value type, NaN/inf, negative ``numRays``, or an
            unknown ``outputFrameOfReference`` token (the reference would silently treat it as
            ``SENSOR``; we reject it so that no silently wrong frame is reported).
    """
    path, enabled = _sensor_common(prim, "IsaacRaycastSensor")
    fb = RAYCAST_FALLBACKS
    num_rays = _read_int(prim, "numRays", fb["numRays"])
    if num_rays < 0:
        raise SchemaError(path, "numRays", f"negative ray count {num_rays}", "an integer > 0")
    offsets = _read_float_array(prim, "rayTimeOffsets")
    body = find_parent_rigid_body(prim)
    _check_chain_finite(prim, body)
    translation, orientation = _pose_in_body(prim, body)
    return RaycastSensorConfig(
        path=path,
        enabled=enabled,
        parent_body=_path(body) if body is not None else "",
        num_rays=num_rays,
        min_range=_read_float(prim, "minRange", fb["minRange"]),
        max_range=_read_float(prim, "maxRange", fb["maxRange"]),
        ray_origins=_freeze(_read_vec3_array(prim, "rayOrigins")),
        ray_directions=_freeze(_read_vec3_array(prim, "rayDirections")),
        ray_time_offsets=_freeze(offsets if offsets is not None else np.zeros(0)),
        output_frame_of_reference=_read_token(
            prim, "outputFrameOfReference", fb["outputFrameOfReference"], OUTPUT_FRAME_TOKENS
        ),
        report_hit_prim_paths=bool(
            _read_bool(prim, "reportHitPrimPaths", fb["reportHitPrimPaths"])
        ),
        translation_in_body=_freeze(translation),
        orientation_in_body=_freeze(orientation),
    )


def _fmt(value: float) -> str:
    return f"{value:g}"


def validate_raycast(config: RaycastSensorConfig) -> str | None:
    """Check a raycast configuration in the order of sensors.md §5.2.

    Args:
        config: a configuration from :func:`read_raycast_sensor`.

    Returns:
        None when valid, else the reason, e.g.
        ``"IsaacRaycastSensor '/World/R': numRays (0) must be > 0. Sensor disabled."``.
    """
    head = f"IsaacRaycastSensor '{config.path}': "
    n = config.num_rays
    if n == 0:
        return head + f"numRays ({n}) must be > 0. Sensor disabled."
    if config.min_range >= config.max_range:
        return (
            head + f"minRange ({_fmt(config.min_range)}) >= maxRange "
            f"({_fmt(config.max_range)}). Sensor disabled."
        )
    if len(config.ray_origins) != n:
        return (
            head
            + f"rayOrigins length ({len(config.ray_origins)}) != numRays ({n}). "
            + ("Sensor disabled.")
        )
    if len(config.ray_directions) != n:
        return (
            head
            + f"rayDirections length ({len(config.ray_directions)}) != numRays ({n}). "
            + ("Sensor disabled.")
        )
    if len(config.ray_time_offsets) and len(config.ray_time_offsets) != n:
        return head + (
            f"rayTimeOffsets length ({len(config.ray_time_offsets)}) != numRays ({n}). "
            "Sensor disabled."
        )
    return None


SensorConfig = ContactSensorConfig | ImuSensorConfig | RaycastSensorConfig
"""Any sensor configuration returned by :func:`read_sensor`."""

_SENSOR_READERS = {
    "IsaacContactSensor": read_contact_sensor,
    "IsaacImuSensor": read_imu_sensor,
    "IsaacRaycastSensor": read_raycast_sensor,
}


def read_sensor(prim: Usd.Prim) -> SensorConfig:
    """Read any supported sensor prim by its exact type name.

    Args:
        prim: a contact, IMU or raycast sensor prim.

    Returns:
        The matching configuration dataclass.

    Raises:
        SchemaError: the type name is not a supported sensor, or the reader rejects it.
    """
    reader = _SENSOR_READERS.get(str(prim.GetTypeName()))
    if reader is None:
        raise SchemaError(
            _path(prim),
            "typeName",
            f"prim type {str(prim.GetTypeName())!r} is not a sensor",
            ", ".join(SENSOR_TYPE_NAMES),
        )
    return reader(prim)


def discover_sensor_prims(
    stage: Usd.Stage, type_names: tuple[str, ...] = SENSOR_TYPE_NAMES
) -> list[Usd.Prim]:
    """Sensor prims of the stage in traversal order (sensors.md §1.8).

    Uses USD's default predicate (active, loaded, defined, non-abstract; no instance
    proxies) and an exact type-name match (no derived types).

    Args:
        stage: the stage.
        type_names: the type names to collect.

    Returns:
        The sensor prims.
    """
    wanted = set(type_names)
    return [prim for prim in stage.Traverse() if str(prim.GetTypeName()) in wanted]


def discover_sensors(
    stage: Usd.Stage, type_names: tuple[str, ...] = SENSOR_TYPE_NAMES
) -> list[SensorConfig]:
    """Discover and read every sensor of the stage.

    Args:
        stage: the stage.
        type_names: the sensor type names to collect (exact match).

    Returns:
        One configuration per sensor prim, in traversal order.

    Raises:
        SchemaError: the first sensor that fails validation (e.g. a contact sensor without a
            parent rigid body). Use :func:`discover_sensor_prims` plus :func:`read_sensor` to
            handle sensors one by one.
    """
    return [read_sensor(prim) for prim in discover_sensor_prims(stage, type_names)]
