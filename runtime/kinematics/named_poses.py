"""Named poses stored as ``IsaacNamedPose`` prims under the robot, and JSON import/export.

See docs/guides/kinematics.md#named-poses. Divergences (spec [REC]): reading follows the robot's
``isaac:robot:namedPoses`` relationship (any scope name); JSON files are written atomically
(keeping the file's mode); degrees conversion treats a joint missing from the stage as
non-revolute (no crash); and ``import_poses`` skips invalid entries instead of failing,
reporting each skipped entry and why (logged, and available via ``import_poses_report``).

Imports are checked against the robot (issue 14): joints must be joints of this robot,
links its links (paths of another robot are mapped to the same relative path, fixing
§10.9), the joint set must not be empty, values outside the limits are clamped and
reported, and an existing pose name is only overwritten with ``replace=True``.
``apply_pose_by_name`` refuses (``SchemaError``) a stored pose that names foreign joints or
holds values outside the limits.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from typing import Any

from pxr import Gf, Sdf, Tf, Usd, UsdGeom

import runtime.schema  # noqa: F401  (registers the Isaac schemas before any stage)
from runtime._files import atomic_write_text
from runtime.errors import SchemaError
from runtime.kinematics.poser import PoseResult, apply_joint_state, is_revolute_joint

__all__ = [
    "NAMED_POSES_SCOPE",
    "ImportReport",
    "apply_pose_by_name",
    "delete_named_pose",
    "export_poses",
    "get_named_pose",
    "import_poses",
    "import_poses_report",
    "list_named_poses",
    "sanitize_pose_name",
    "store_named_pose",
]

_LOG = logging.getLogger(__name__)

NAMED_POSES_SCOPE = "NamedPoses"
_REL = "isaac:robot:namedPoses"
_START = "isaac:robot:pose:startLink"
_END = "isaac:robot:pose:endLink"
_JOINTS = "isaac:robot:pose:joints"
_VALUES = "isaac:robot:pose:jointValues"
_FIXED = "isaac:robot:pose:jointFixed"
_VALID = "isaac:robot:pose:valid"


def sanitize_pose_name(name: str) -> str:
    """``Tf.MakeValidIdentifier(name)``; empty → ``"_"``."""
    return Tf.MakeValidIdentifier(name) if name else "_"


def _pose_prim(stage: Usd.Stage, robot_prim: Usd.Prim, pose_name: str) -> Usd.Prim | None:
    safe = sanitize_pose_name(pose_name)
    rel = robot_prim.GetRelationship(_REL)
    if rel:
        for path in rel.GetTargets():
            if path.name == safe:
                prim = stage.GetPrimAtPath(path)
                if prim:
                    return prim
    prim = stage.GetPrimAtPath(
        robot_prim.GetPath().AppendChild(NAMED_POSES_SCOPE).AppendChild(safe)
    )
    return prim if prim else None


def store_named_pose(
    stage: Usd.Stage, robot_prim: Usd.Prim, pose_name: str, pose_result: PoseResult
) -> bool:
    """Store a successful PoseResult as ``<robot>/NamedPoses/<sanitized name>``.

    Args:
        stage: USD stage.
        robot_prim: robot root prim.
        pose_name: pose name (sanitized with ``Tf.MakeValidIdentifier``).
        pose_result: the pose; must have ``success=True``.

    Returns:
        True when the pose was written.
    """
    if not pose_result.success:
        return False
    safe = sanitize_pose_name(pose_name)
    scope_path = robot_prim.GetPath().AppendChild(NAMED_POSES_SCOPE)
    if not stage.GetPrimAtPath(scope_path):
        stage.DefinePrim(scope_path, "Scope")
    path = scope_path.AppendChild(safe)
    if stage.GetPrimAtPath(path) and safe != pose_name:
        _LOG.warning(
            "Named pose %r sanitizes to %r, which already exists at %s; overwriting. "
            "Use distinct valid identifiers to keep both.",
            pose_name,
            safe,
            path,
        )
    prim = stage.DefinePrim(path, "IsaacNamedPose")
    paths = list(pose_result.joints)
    prim.CreateRelationship(_START, custom=False).SetTargets(
        [Sdf.Path(pose_result.start_link)] if pose_result.start_link else []
    )
    prim.CreateRelationship(_END, custom=False).SetTargets(
        [Sdf.Path(pose_result.end_link)] if pose_result.end_link else []
    )
    prim.CreateRelationship(_JOINTS, custom=False).SetTargets([Sdf.Path(p) for p in paths])
    values = []
    for p in paths:
        v = float(pose_result.joints[p])
        values.append(math.degrees(v) if is_revolute_joint(stage, p) else v)
    prim.CreateAttribute(_VALUES, Sdf.ValueTypeNames.FloatArray).Set(values)
    prim.CreateAttribute(_FIXED, Sdf.ValueTypeNames.BoolArray).Set(
        [bool(pose_result.joint_fixed.get(p, False)) for p in paths]
    )
    prim.CreateAttribute(_VALID, Sdf.ValueTypeNames.Bool).Set(True)
    if pose_result.target_position is not None and pose_result.target_orientation is not None:
        xf = UsdGeom.Xformable(prim)
        xf.ClearXformOpOrder()
        for prop in list(prim.GetPropertyNames()):
            if prop.startswith("xformOp:"):
                prim.RemoveProperty(prop)
        t = [float(v) for v in pose_result.target_position]
        q = [float(v) for v in pose_result.target_orientation]
        xf.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Vec3d(*t))
        xf.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Quatd(q[0], Gf.Vec3d(*q[1:])))
    rel = robot_prim.GetRelationship(_REL) or robot_prim.CreateRelationship(_REL, custom=False)
    targets = list(rel.GetTargets())
    if path not in targets:
        rel.SetTargets([*targets, path])
    return True


def get_named_pose(stage: Usd.Stage, robot_prim: Usd.Prim, pose_name: str) -> PoseResult | None:
    """Read a stored pose (joint values back in radians for revolute joints), or None."""
    prim = _pose_prim(stage, robot_prim, pose_name)
    if prim is None:
        return None
    valid = prim.GetAttribute(_VALID).Get() if prim.GetAttribute(_VALID) else None
    rel = prim.GetRelationship(_JOINTS)
    paths = [str(p) for p in rel.GetTargets()] if rel else []
    values_attr = prim.GetAttribute(_VALUES)
    fixed_attr = prim.GetAttribute(_FIXED)
    values = list(values_attr.Get() or []) if values_attr else []
    fixed = list(fixed_attr.Get() or []) if fixed_attr else []
    joints = {}
    joint_fixed = {}
    for i, p in enumerate(paths):
        v = float(values[i]) if i < len(values) else 0.0
        joints[p] = math.radians(v) if is_revolute_joint(stage, p) else v
        joint_fixed[p] = bool(fixed[i]) if i < len(fixed) else False

    def _first(name: str) -> str:
        r = prim.GetRelationship(name)
        t = r.GetTargets() if r else []
        return str(t[0]) if t else ""

    position = orientation = None
    for op in UsdGeom.Xformable(prim).GetOrderedXformOps():
        if op.GetOpType() == UsdGeom.XformOp.TypeTranslate:
            position = [float(v) for v in op.Get()]
        elif op.GetOpType() == UsdGeom.XformOp.TypeOrient:
            q = op.Get()
            orientation = [float(q.GetReal()), *(float(v) for v in q.GetImaginary())]
    return PoseResult(
        success=bool(valid),
        joints=joints,
        joint_fixed=joint_fixed,
        start_link=_first(_START),
        end_link=_first(_END),
        target_position=position,
        target_orientation=orientation,
    )


def list_named_poses(stage: Usd.Stage, robot_prim: Usd.Prim) -> list[str]:
    """Names of the poses in the robot's ``isaac:robot:namedPoses`` (needs IsaacRobotAPI)."""
    if not robot_prim or "IsaacRobotAPI" not in robot_prim.GetAppliedSchemas():
        return []
    rel = robot_prim.GetRelationship(_REL)
    if not rel:
        return []
    return [p.name for p in rel.GetTargets() if stage.GetPrimAtPath(p)]


def delete_named_pose(stage: Usd.Stage, robot_prim: Usd.Prim, pose_name: str) -> bool:
    """Remove a stored pose and its relationship entry; False when it does not exist."""
    prim = _pose_prim(stage, robot_prim, pose_name)
    if prim is None:
        return False
    path = prim.GetPath()
    rel = robot_prim.GetRelationship(_REL)
    if rel:
        rel.SetTargets([t for t in rel.GetTargets() if t != path])
    stage.RemovePrim(path)
    return True


def apply_pose_by_name(
    stage: Usd.Stage, robot_prim: Usd.Prim, pose_name: str, *, target_sink: Any = None
) -> bool:
    """Apply a stored valid pose (teleport, or joint targets through ``target_sink``).

    Returns:
        True when applied; False when no valid pose of that name exists.

    Raises:
        SchemaError: the stored pose has no joints, names a prim that is not a joint of
            this robot, or holds a value outside a joint's limits (nothing is applied).
    """
    pose = get_named_pose(stage, robot_prim, pose_name)
    if pose is None or not pose.success:
        return False
    where = str(_pose_prim(stage, robot_prim, pose_name).GetPath())  # type: ignore[union-attr]
    robot = _RobotMembers.of(stage, robot_prim)
    if not pose.joints:
        raise SchemaError(where, _JOINTS, "no joints (an empty joint set)", "robot joints")
    for path, value in pose.joints.items():
        if path not in robot.joints:
            raise SchemaError(where, _JOINTS, f"{path} is not a joint of robot {robot.robot_path}")
        limits = robot.joints[path]
        if limits is not None and not limits[0] <= value <= limits[1]:
            raise SchemaError(
                where,
                _VALUES,
                f"{path} value {value:g} is outside the joint limits",
                f"[{limits[0]:g}, {limits[1]:g}] (rad or stage units)",
            )
    apply_joint_state(stage, robot_prim, pose.joints, target_sink=target_sink)
    return True


def _atomic_write_json(filepath: str, data: Any) -> None:
    atomic_write_text(filepath, json.dumps(data, indent=2))


def export_poses(
    stage: Usd.Stage, robot_prim: Usd.Prim, filepath: str, *, degrees: bool = False
) -> bool:
    """Write every named pose of the robot to a JSON file (atomically).

    Args:
        stage: USD stage.
        robot_prim: robot root prim.
        filepath: destination path.
        degrees: write revolute joint values in degrees instead of radians.

    Returns:
        True (I/O errors propagate).
    """
    units = "degrees" if degrees else "radians"
    poses: dict[str, Any] = {}
    for name in list_named_poses(stage, robot_prim):
        pose = get_named_pose(stage, robot_prim, name)
        if pose is None:
            continue
        joints = {}
        for path, value in pose.joints.items():
            joints[path] = (
                math.degrees(value) if degrees and is_revolute_joint(stage, path) else value
            )
        poses[name] = {
            "joints": joints,
            "joint_fixed": dict(pose.joint_fixed),
            "start_link": pose.start_link,
            "end_link": pose.end_link,
            "target_position": pose.target_position,
            "target_orientation": pose.target_orientation,
            "valid": pose.success,
        }
    data = {
        "_meta": {
            "units": units,
            "note": f"Revolute joint values are stored in {units}. USD natively uses degrees.",
        },
        "poses": poses,
    }
    _atomic_write_json(filepath, data)
    return True


@dataclass
class ImportReport:
    """Outcome of :func:`import_poses_report`.

    Attributes:
        stored: names of the poses stored (new or replaced).
        skipped: (name, reason) for every entry not stored.
        replaced: names of stored poses that overwrote an existing pose (``replace=True``).
        clamped: (name, joint path, value, clamped value) for every joint value outside
            the joint's limits that was clamped to them (rad or stage units).
        remapped: (name, source path, robot path) for every joint or link path of another
            robot mapped onto this robot's prim at the same relative path.
    """

    stored: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    clamped: list[tuple[str, str, float, float]] = field(default_factory=list)
    remapped: list[tuple[str, str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class _RobotMembers:
    """The robot's joints (path -> SI limits, None for multi-DOF) and link paths."""

    robot_path: str
    joints: dict[str, tuple[float, float] | None]
    links: frozenset[str]

    @classmethod
    def of(cls, stage: Usd.Stage, robot_prim: Usd.Prim) -> _RobotMembers:
        from runtime.schema.readers import read_joint
        from runtime.schema.utils import get_all_robot_joints, get_all_robot_links

        joints: dict[str, tuple[float, float] | None] = {}
        for prim in get_all_robot_joints(stage, robot_prim):
            info = read_joint(prim)
            one_dof = info.joint_type in ("revolute", "prismatic")
            joints[info.path] = (info.lower, info.upper) if one_dof else None
        links = {str(p.GetPath()) for p in get_all_robot_links(stage, robot_prim)}
        links.add(str(robot_prim.GetPath()))
        return cls(str(robot_prim.GetPath()), joints, frozenset(links))

    def source_prefix(self, paths: list[str]) -> str | None:
        """The prefix that maps every path of ``paths`` onto this robot's joints.

        ``""`` when all are already joints of this robot; else the shortest prefix ``Q`` of
        the first foreign path such that ``robot_path + p[len(Q):]`` is a joint for every
        ``p`` (the other robot's root); None when there is none.
        """
        foreign = [p for p in paths if p not in self.joints]
        if not foreign:
            return ""
        if not Sdf.Path.IsValidPathString(foreign[0]):
            return None
        for prefix in Sdf.Path(foreign[0]).GetPrefixes():
            q = str(prefix)
            if all(self.map(p, q) in self.joints for p in paths):
                return q
        return None

    def map(self, path: str, prefix: str) -> str:
        """``path`` moved from under ``prefix`` to under this robot (unchanged if not under)."""
        if not prefix or not (path == prefix or path.startswith(prefix + "/")):
            return path
        return self.robot_path + path[len(prefix) :]


def _check_members(
    robot: _RobotMembers, name: str, pose: PoseResult, report: ImportReport
) -> tuple[PoseResult | None, str]:
    """Map the pose's joints and links onto the robot, clamp its values to the limits."""
    if not pose.joints:
        return None, "no joints (an empty joint set)"
    joints: dict[str, float] = {}
    fixed: dict[str, bool] = {}
    remaps: list[tuple[str, str, str]] = []
    clamps: list[tuple[str, str, float, float]] = []
    prefix = robot.source_prefix(list(pose.joints))
    if prefix is None:
        bad = next(p for p in pose.joints if p not in robot.joints)
        return None, f"{bad} is not a joint of robot {robot.robot_path}"
    for path, value in pose.joints.items():
        own = robot.map(path, prefix)
        if own != path:
            remaps.append((name, path, own))
        limits = robot.joints[own]
        if limits is not None:
            low, high = limits
            clamped = min(max(value, low), high)
            if clamped != value:
                clamps.append((name, own, value, clamped))
                value = clamped
        joints[own] = value
        fixed[own] = bool(pose.joint_fixed.get(path, False))
    links = []
    for key, path in (("start_link", pose.start_link), ("end_link", pose.end_link)):
        own = robot.map(path, prefix) if path else ""
        if own and own not in robot.links:
            return None, f"'{key}' {path} is not a link of robot {robot.robot_path}"
        if own != path:
            remaps.append((name, path, own))
        links.append(own)
    report.remapped.extend(remaps)
    report.clamped.extend(clamps)
    return PoseResult(
        success=True,
        joints=joints,
        joint_fixed=fixed,
        start_link=links[0],
        end_link=links[1],
        target_position=pose.target_position,
        target_orientation=pose.target_orientation,
    ), ""


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _parse_entry(stage: Usd.Stage, entry: Any, degrees: bool) -> tuple[PoseResult | None, str]:
    if not isinstance(entry, dict):
        return None, f"entry is a {type(entry).__name__}, expected an object"
    joints_in = entry.get("joints", {})
    if not isinstance(joints_in, dict):
        return None, "'joints' is not an object"
    joints: dict[str, float] = {}
    for path, value in joints_in.items():
        v = _number(value)
        if v is None or not isinstance(path, str) or not Sdf.Path.IsValidPathString(path):
            return None, f"joint {path!r} has an invalid path or non-numeric value {value!r}"
        joints[path] = math.radians(v) if degrees and is_revolute_joint(stage, path) else v
    fixed_in = entry.get("joint_fixed", {})
    if not isinstance(fixed_in, dict):
        return None, "'joint_fixed' is not an object"
    for key in ("start_link", "end_link"):
        value = entry.get(key, "")
        if not isinstance(value, str) or (value and not Sdf.Path.IsValidPathString(value)):
            return None, f"'{key}' is not a valid prim path: {value!r}"
    position = entry.get("target_position")
    orientation = entry.get("target_orientation")
    for key, value, size in (
        ("target_position", position, 3),
        ("target_orientation", orientation, 4),
    ):
        if value is None:
            continue
        if (
            not isinstance(value, list)
            or len(value) != size
            or any(_number(v) is None for v in value)
        ):
            return None, f"'{key}' must be null or a list of {size} finite numbers"
    valid = entry.get("valid", True)
    if not isinstance(valid, bool):
        return None, f"'valid' is not a boolean: {valid!r}"
    if not valid:
        return None, "marked valid=false"
    return PoseResult(
        success=True,
        joints=joints,
        joint_fixed={k: bool(v) for k, v in fixed_in.items()},
        start_link=entry.get("start_link", ""),
        end_link=entry.get("end_link", ""),
        target_position=None if position is None else [float(v) for v in position],
        target_orientation=None if orientation is None else [float(v) for v in orientation],
    ), ""


def import_poses_report(
    stage: Usd.Stage, robot_prim: Usd.Prim, filepath: str, *, replace: bool = False
) -> ImportReport:
    """Import poses from JSON, storing every valid entry and reporting the rest.

    Accepts the envelope format (``_meta`` + ``poses``) and the legacy flat map (radians).
    A file that is not valid JSON at all, or whose top level is not an object, stores
    nothing and reports one skipped entry named ``"<file>"``.

    Every entry is checked against the robot before it is stored: each joint must be a
    joint of this robot and each start / end link a link of it (a path of another robot
    is mapped onto this robot's prim at the same relative path and reported in
    ``remapped``; the reference kept foreign paths); the joint set must not be
    empty; a revolute / prismatic value outside the joint's limits is clamped to them and
    reported in ``clamped``. An entry whose (sanitized) name is already a pose of the robot
    is skipped with that reason unless ``replace`` is True; then the old pose is deleted
    first and the name is listed in ``replaced``.

    Args:
        stage: USD stage.
        robot_prim: robot root prim.
        filepath: JSON file path.
        replace: overwrite existing poses of the same name.

    Returns:
        ImportReport with stored names and (name, reason) per skipped entry.

    Raises:
        SchemaError: a joint of the robot itself is invalid (e.g. missing body target).
    """
    report = ImportReport()
    try:
        with open(filepath, encoding="utf-8") as handle:
            data = json.load(handle)
    except json.JSONDecodeError as exc:
        report.skipped.append(("<file>", f"not valid JSON: {exc}"))
        _LOG.warning("import_poses: %s is not valid JSON: %s", filepath, exc)
        return report
    if not isinstance(data, dict):
        report.skipped.append(("<file>", "top level is not an object"))
        _LOG.warning("import_poses: %s: top level is not an object", filepath)
        return report
    degrees = False
    if "_meta" in data and "poses" in data:
        meta = data["_meta"] if isinstance(data["_meta"], dict) else {}
        degrees = meta.get("units", "radians") == "degrees"
        poses = data["poses"]
        if not isinstance(poses, dict):
            report.skipped.append(("poses", "'poses' is not an object"))
            _LOG.warning("import_poses: %s: 'poses' is not an object", filepath)
            return report
    else:
        poses = data
    robot = _RobotMembers.of(stage, robot_prim)
    for name, entry in poses.items():
        name = str(name)
        result, reason = _parse_entry(stage, entry, degrees)
        if result is not None:
            result, reason = _check_members(robot, name, result, report)
        exists = result is not None and _pose_prim(stage, robot_prim, name) is not None
        if exists and not replace:
            result, reason = (
                None,
                (
                    f"a pose named {sanitize_pose_name(name)!r} already exists "
                    "(pass replace=True to overwrite it)"
                ),
            )
        if result is None:
            report.skipped.append((name, reason))
            _LOG.warning("import_poses: skipped %r: %s", name, reason)
            continue
        if exists:
            delete_named_pose(stage, robot_prim, name)
        if store_named_pose(stage, robot_prim, name, result):
            report.stored.append(name)
            if exists:
                report.replaced.append(name)
    for name, joint, value, clamped in report.clamped:
        _LOG.warning(
            "import_poses: %r: %s value %g is outside the joint limits; clamped to %g",
            name,
            joint,
            value,
            clamped,
        )
    return report


def import_poses(
    stage: Usd.Stage, robot_prim: Usd.Prim, filepath: str, *, replace: bool = False
) -> int:
    """Import named poses from a JSON file; returns the number stored.

    Invalid entries (and, without ``replace``, entries whose name already exists) are
    skipped and each is logged with its reason (see :func:`import_poses_report` for the
    checks and the structured report).
    """
    return len(import_poses_report(stage, robot_prim, filepath, replace=replace).stored)
