"""The scene of a run: its stage (one-line errors for unreadable files) and its robot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["check_robot", "find_robot", "open_scene_stage"]


def open_scene_stage(scene: Any) -> Any:
    """The stage of ``scene`` (a path, opened with one-line errors; or a stage as is)."""
    if not isinstance(scene, (str, Path)):
        return scene
    from runtime.schema import open_stage

    return open_stage(scene)


def find_robot(stage: Any, robot: str | None) -> Any:
    """The robot prim: ``robot`` (must exist), else the first ``IsaacRobotAPI`` prim or None.

    Raises:
        SchemaError: ``robot`` names no prim.
    """
    from runtime.errors import SchemaError

    if robot:
        prim = stage.GetPrimAtPath(robot)
        if not prim or not prim.IsValid():
            raise SchemaError(robot, "", "robot prim does not exist")
        return prim
    from runtime.schema.utils import find_robot_prims

    robots = find_robot_prims(stage)
    return robots[0] if robots else None


def check_robot(stage: Any, robot_prim: Any) -> None:
    """Check the robot's structure as ``simrt inspect`` and ``simrt schema validate`` do.

    Run before the engine is built, so that a broken robot is reported by its real cause
    (the joint whose body is missing, a joint between a body and itself, a joint that closes
    a kinematic loop, an unknown ``isaac:robotType``) instead of by what it breaks later
    (a DOF of the table that the engine does not simulate).

    Raises:
        SchemaError: the first problem, naming the prim and attribute.
    """
    if robot_prim is None:
        return
    from pxr import UsdPhysics

    from runtime.errors import SchemaError
    from runtime.schema import readers
    from runtime.schema.utils import find_loop_joints, get_all_robot_joints, get_all_robot_links

    if robot_prim.HasAPI("IsaacRobotAPI"):
        readers.read_robot(robot_prim)  # (robotType, relationships' kinds)
    joints = get_all_robot_joints(stage, robot_prim)
    for joint in joints:
        if joint.IsA(UsdPhysics.Joint):
            readers.read_joint(joint)  # body targets exist, body0 != body1, limits, axis
    links = {str(p.GetPath()) for p in get_all_robot_links(stage, robot_prim)}
    for joint, reason in find_loop_joints(joints, links):
        raise SchemaError(
            str(joint.GetPath()),
            "physics:excludeFromArticulation",
            f"the joint closes a kinematic loop: {reason}",
            "true on a loop-closing joint (the tree is simulated, the loop joint excluded)",
        )
