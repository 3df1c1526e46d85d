"""USD joint-state I/O and teleport of a robot's links to a joint configuration.

Joint values are radians (revolute) and stage length units (prismatic) on the Python side;
USD stores revolute positions and drive targets in degrees.
"""

from __future__ import annotations

import math

from pxr import Sdf, Usd

from runtime.kinematics._tree import NO_MOTION, PRISMATIC, REVOLUTE, LinkTree, joint_kind
from runtime.kinematics.math import Transform
from runtime.kinematics.xform import set_world_pose, world_pose

__all__ = ["propagate", "read_joint_states", "set_joint_attributes", "write_link_poses"]


def read_joint_states(stage: Usd.Stage, tree: LinkTree) -> dict[str, float]:
    """Authored joint values of every movable tree joint, rad / stage units, by joint path.

    Joints whose ``state:*:physics:position`` is missing or not finite are left out.
    """
    out: dict[str, float] = {}
    for node in tree.nodes:
        if node.jtype == NO_MOTION:
            continue
        joint = stage.GetPrimAtPath(node.joint_path)
        name = (
            "state:angular:physics:position"
            if node.jtype == REVOLUTE
            else "state:linear:physics:position"
        )
        attr = joint.GetAttribute(name)
        value = attr.Get() if attr else None
        if value is None or not math.isfinite(float(value)):
            continue
        out[node.joint_path] = (
            math.radians(float(value)) if node.jtype == REVOLUTE else float(value)
        )
    return out


def set_joint_attributes(stage: Usd.Stage, joint_dict: dict[str, float]) -> None:
    """Write drive targets and joint states (degrees for revolute) for listed joints."""
    for path, value in joint_dict.items():
        prim = stage.GetPrimAtPath(path)
        if not prim:
            continue
        kind = joint_kind(prim)
        if kind == REVOLUTE:
            names = ("drive:angular:physics:targetPosition", "state:angular:physics:position")
            native = float(math.degrees(value))
        elif kind == PRISMATIC:
            names = ("drive:linear:physics:targetPosition", "state:linear:physics:position")
            native = float(value)
        else:
            continue
        for name in names:
            attr = prim.GetAttribute(name)
            if not attr:
                attr = prim.CreateAttribute(name, Sdf.ValueTypeNames.Float, custom=True)
            attr.Set(native)


def propagate(
    tree: LinkTree, joint_dict: dict[str, float], all_affected: bool
) -> tuple[list[Transform], list[bool]]:
    """World poses of every link after setting the joints in ``joint_dict``.

    Links whose joint is in ``joint_dict`` take the FK pose relative to their parent's new
    pose; links behind a ``PhysicsFixedJoint`` snap to the joint definition; other links
    keep their current offset to the parent. With ``all_affected`` every link is treated as
    lying below a changed joint (and reported moved); otherwise links with no changed joint
    above them keep their pose.

    Args:
        tree: the link tree.
        joint_dict: joint prim path → value (rad / stage units).
        all_affected: place every link (anchored teleport) instead of only moved ones.

    Returns:
        ``(poses, moved)``: one world pose and one moved flag per tree node.
    """
    old = [world_pose(n.prim)[0] for n in tree.nodes]
    new: list[Transform] = [old[0]]
    moved = [all_affected]
    for i, node in enumerate(tree.nodes[1:], start=1):
        par = node.parent
        if node.joint_path in joint_dict and node.jtype != NO_MOTION:
            motion = tree.motion(node, float(joint_dict[node.joint_path]))
            pose = new[par] @ node.pre @ motion @ node.post
            new.append(pose)
            moved.append(True)
        elif node.fixed and (moved[par] or all_affected):
            new.append(new[par] @ node.pre @ node.post)
            moved.append(True)
        elif moved[par] or all_affected:
            new.append(new[par] @ (old[par].inv() @ old[i]))
            moved.append(True)
        else:
            new.append(old[i])
            moved.append(False)
    return new, moved


def write_link_poses(tree: LinkTree, poses: list[Transform], which: list[bool]) -> None:
    """Author the world pose ``poses[i]`` on every tree link with ``which[i]``, parents first."""
    items = [(tree.nodes[i], poses[i]) for i in range(len(poses)) if which[i]]
    items.sort(key=lambda item: item[0].prim.GetPath().pathElementCount)
    for node, pose in items:
        set_world_pose(node.prim, pose)


def move_anchored(
    stage: Usd.Stage, tree: LinkTree, joint_dict: dict[str, float], index: int, offset: Transform
) -> None:
    """Move the links to the FK pose of ``joint_dict``, keeping link ``index``'s frame put.

    Joints not in ``joint_dict`` keep their states; the whole robot moves rigidly so that
    the frame ``offset`` of link ``index`` stays where it is in the world.
    """
    full = read_joint_states(stage, tree)
    full.update(joint_dict)
    before = world_pose(tree.nodes[index].prim)[0] @ offset
    poses, _ = propagate(tree, full, all_affected=True)
    correction = before @ (poses[index] @ offset).inv()
    write_link_poses(tree, [correction @ p for p in poses], [True] * len(poses))
