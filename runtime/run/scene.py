"""The scene of a run: its stage (one-line errors for unreadable files) and its robot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["find_robot", "open_scene_stage"]


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
