"""A run's channels besides the sensors': joint state, joint targets and body poses.

``<robot>.positions`` / ``velocities`` / ``efforts`` (kind ``joint_state``, attribute
``dof_names``), ``<robot>.targets`` (kind ``command``: the IK joint targets sent, NaN for
DOFs IK does not drive) and ``bodies.positions`` / ``bodies.orientations`` (kind ``body``,
attribute ``body_paths``: the poses the sensors saw).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["define_state_channels"]


def define_state_channels(
    recorder: Any,
    robot_path: str,
    dofs: int,
    dof_names: Sequence[str],
    body_paths: Sequence[str],
) -> tuple[dict[str, int], dict[str, int]]:
    """Register the joint and body channels of a run with its store writer.

    Args:
        recorder: the :class:`~runtime.recording.StoreWriter`.
        robot_path: the robot prim's path (channel prefix).
        dofs: the state's DOF count (no joint channels when 0).
        dof_names: DOF names in DOF-table order (an attribute of the joint channels).
        body_paths: engine body paths (no body channels when empty).

    Returns:
        ``(joint_slots, body_slots)``: recorder slots by field name.
    """
    from runtime.recording import ChannelInfo

    joint_slots: dict[str, int] = {}
    body_slots: dict[str, int] = {}
    if dofs:
        names = {"dof_names": list(dof_names)}
        for field in ("positions", "velocities", "efforts"):
            joint_slots[field] = recorder.add_channel(
                ChannelInfo(
                    f"{robot_path}.{field}", (dofs,), "float64", robot_path, "joint_state",
                    field, "", names,
                )
            )  # fmt: skip
        joint_slots["targets"] = recorder.add_channel(
            ChannelInfo(
                f"{robot_path}.targets", (dofs,), "float64", robot_path, "command", "targets",
                "", names,
            )
        )  # fmt: skip
    if body_paths:
        paths = {"body_paths": list(body_paths)}
        count = len(body_paths)
        body_slots["positions"] = recorder.add_channel(
            ChannelInfo(
                "bodies.positions", (count, 3), "float64", "", "body", "positions",
                "stage_units", paths,
            )
        )  # fmt: skip
        body_slots["orientations"] = recorder.add_channel(
            ChannelInfo(
                "bodies.orientations", (count, 4), "float64", "", "body", "orientations",
                "wxyz", paths, "world",
            )
        )  # fmt: skip
    return joint_slots, body_slots
