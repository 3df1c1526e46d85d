"""Queries of the named poses of a robot (docs/guides/kinematics.md#named-poses).

Part of :mod:`runtime.schema.utils` (the public import path).
"""

from __future__ import annotations

from pxr import Sdf, Usd

from runtime.schema._prims import ROBOT_API, _valid
from runtime.schema.tokens import Relations


def get_all_named_poses(stage: Usd.Stage, robot_prim: Usd.Prim) -> list[Usd.Prim]:
    """Valid prims targeted by the robot's ``isaac:robot:namedPoses``, in order.

    Args:
        stage: the stage.
        robot_prim: prim with ``IsaacRobotAPI``.

    Returns:
        Named-pose prims (empty for invalid input or prims without the robot API).
    """
    if stage is None or not _valid(robot_prim) or not robot_prim.HasAPI(ROBOT_API):
        return []
    rel = robot_prim.GetRelationship(Relations.NAMED_POSES.name)
    out = []
    for t in rel.GetTargets() if rel else []:
        p = stage.GetPrimAtPath(t)
        if _valid(p):
            out.append(p)
    return out


def _first_target(prim: Usd.Prim, rel_name: str) -> Sdf.Path | None:
    if not _valid(prim):
        return None
    rel = prim.GetRelationship(rel_name)
    targets = rel.GetTargets() if rel else []
    return targets[0] if targets else None


def get_named_pose_start_link(named_pose_prim: Usd.Prim) -> Sdf.Path | None:
    """First target of ``isaac:robot:pose:startLink`` or None."""
    return _first_target(named_pose_prim, Relations.POSE_START_LINK.name)


def get_named_pose_end_link(named_pose_prim: Usd.Prim) -> Sdf.Path | None:
    """First target of ``isaac:robot:pose:endLink`` or None."""
    return _first_target(named_pose_prim, Relations.POSE_END_LINK.name)


def get_named_pose_joints(named_pose_prim: Usd.Prim) -> list[Sdf.Path]:
    """All targets of ``isaac:robot:pose:joints`` in order (empty when none)."""
    if not _valid(named_pose_prim):
        return []
    rel = named_pose_prim.GetRelationship(Relations.POSE_JOINTS.name)
    return list(rel.GetTargets()) if rel else []


def _attr_value(prim: Usd.Prim, name: str) -> object:
    if not _valid(prim):
        return None
    attr = prim.GetAttribute(name)
    if not attr or not attr.HasAuthoredValue():
        return None
    return attr.Get()


def get_named_pose_joint_values(named_pose_prim: Usd.Prim) -> object:
    """``isaac:robot:pose:jointValues`` (native units) or None when unauthored."""
    return _attr_value(named_pose_prim, "isaac:robot:pose:jointValues")


def get_named_pose_joint_fixed(named_pose_prim: Usd.Prim) -> object:
    """``isaac:robot:pose:jointFixed`` or None when unauthored."""
    return _attr_value(named_pose_prim, "isaac:robot:pose:jointFixed")


def get_named_pose_valid(named_pose_prim: Usd.Prim) -> object:
    """``isaac:robot:pose:valid`` or None when unauthored."""
    return _attr_value(named_pose_prim, "isaac:robot:pose:valid")
