"""Named poses stored as ``IsaacNamedPose`` prims under the robot, and JSON import/export.

Spec ``kinematics.md`` §9. Divergences (spec [REC]): reading follows the robot's
``isaac:robot:namedPoses`` relationship (any scope name); JSON files are written atomically;
degrees conversion treats a joint missing from the stage as non-revolute (no crash); and
``import_poses`` skips invalid entries instead of failing, reporting each skipped entry and
why (logged, and available via ``import_poses_report``).
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
    """Apply a stored valid pose (teleport, or joint targets through ``target_sink``)."""
    pose = get_named_pose(stage, robot_prim, pose_name)
    if pose is None or not pose.success:
        return False
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
        stored: names of the poses stored.
        skipped: (name, reason) for every entry not stored.
    """

    stored: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


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


def import_poses_report(stage: Usd.Stage, robot_prim: Usd.Prim, filepath: str) -> ImportReport:
    """Import poses from JSON, storing every valid entry and reporting the rest.

    Accepts the envelope format (``_meta`` + ``poses``) and the legacy flat map (radians).
    A file that is not valid JSON at all, or whose top level is not an object, stores
    nothing and reports one skipped entry named ``"<file>"``.

    Args:
        stage: USD stage.
        robot_prim: robot root prim.
        filepath: JSON file path.

    Returns:
        ImportReport with stored names and (name, reason) per skipped entry.
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
    for name, entry in poses.items():
        result, reason = _parse_entry(stage, entry, degrees)
        if result is None:
            report.skipped.append((str(name), reason))
            _LOG.warning("import_poses: skipped %r: %s", name, reason)
            continue
        if store_named_pose(stage, robot_prim, str(name), result):
            report.stored.append(str(name))
    return report


def import_poses(stage: Usd.Stage, robot_prim: Usd.Prim, filepath: str) -> int:
    """Import named poses from a JSON file; returns the number stored.

    Invalid entries are skipped and each is logged with its reason (see
    :func:`import_poses_report` for the structured report).
    """
    return len(import_poses_report(stage, robot_prim, filepath).stored)
