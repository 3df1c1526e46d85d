"""``usd.schema.isaac.robot_schema.math`` names over :mod:`runtime.kinematics.math`.

Registered as ``runtime.compat.isaac.math`` (``from runtime.compat.isaac.math import
quat_mul`` works, as does ``robot_schema.math.quat_mul`` after
``from runtime.compat import isaac as robot_schema``). The Isaac names are aliases of the
simrt functions (same conventions: quaternions ``[w, x, y, z]``, Hamilton product).
"""

from __future__ import annotations

from typing import Any

from runtime.kinematics.chain import Joint
from runtime.kinematics.math import (
    Transform,
    adjoint,
    pose_error,
    quat_conjugate,
    quat_from_axis_angle,
    quat_from_matrix,
    quat_multiply,
    quat_rotate,
    quat_to_matrix,
    skew,
)

__all__ = [
    "Joint",
    "Transform",
    "adjoint",
    "axis_angle_to_quat",
    "pose_error",
    "prim_pose_in_robot_frame",
    "quat_conj",
    "quat_from_matrix",
    "quat_mul",
    "quat_rotate",
    "quat_to_matrix",
    "skew",
]

quat_mul = quat_multiply
"""Hamilton product ``q1 ⊗ q2`` (alias of :func:`runtime.kinematics.math.quat_multiply`)."""

quat_conj = quat_conjugate
"""Quaternion conjugate (alias of :func:`runtime.kinematics.math.quat_conjugate`)."""

axis_angle_to_quat = quat_from_axis_angle
"""Unit quaternion from axis and angle [rad] (alias of ``quat_from_axis_angle``)."""


def prim_pose_in_robot_frame(robot_prim: Any, prim: Any) -> Transform:
    """Current pose of ``prim`` in the robot-base frame (the frame IK targets use).

    Argument order as Isaac's ``_prim_pose_in_robot_frame(robot_prim, prim)``. Both poses
    come from the USD world transforms at the default time code; scale is removed, so the
    result is rigid.

    Args:
        robot_prim: the robot root ``Usd.Prim``.
        prim: a ``Usd.Prim`` (link, site, named pose, ...).

    Returns:
        ``Transform`` mapping ``prim`` coordinates to robot-base coordinates.

    Raises:
        ValueError: either prim is invalid or not transformable.
    """
    import numpy as np
    from pxr import UsdGeom

    from runtime.kinematics.xform import rigid_and_scale, world_matrix

    for name, p in (("robot_prim", robot_prim), ("prim", prim)):
        if p is None or not p.IsValid() or not p.IsA(UsdGeom.Xformable):
            raise ValueError(f"prim_pose_in_robot_frame: {name} {p} is not a valid Xformable")
    relative = np.linalg.solve(world_matrix(robot_prim), world_matrix(prim))
    return rigid_and_scale(relative)[0]


_prim_pose_in_robot_frame = prim_pose_in_robot_frame
"""Isaac's private name (same ``(robot_prim, prim)`` order): ported FK helpers import it."""
