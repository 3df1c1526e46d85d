"""Floating bases: deactivate the fixed joints that bolt a converted robot to the world.

URDF / MJCF converters attach the root link of every robot to the world with a
``PhysicsFixedJoint`` (``root_joint`` / ``world_joint``) whose ``physics:body0`` is the robot's
default prim -- not a rigid body, i.e. the world in UsdPhysics terms. A legged robot or
humanoid must run free-floating: :func:`make_floating_base` deactivates those joints
(``active = false`` in the current edit target, so a separate layer can carry the opinion
and the converted asset stays untouched). The root link then has no joint to the world and
the MuJoCo builder gives it a free joint. Used by ``simrt schema apply --floating-base``.
"""

from __future__ import annotations

from pxr import Usd, UsdPhysics

from runtime.errors import SchemaError

__all__ = ["make_floating_base", "world_fixed_joints"]


def _rigid_body_of(stage: Usd.Stage, targets: list) -> Usd.Prim | None:
    """The rigid body a joint body relationship names (the target or an ancestor), else None."""
    if not targets:
        return None
    prim = stage.GetPrimAtPath(targets[0])
    while prim and prim.IsValid() and not prim.IsPseudoRoot():
        if prim.HasAPI(UsdPhysics.RigidBodyAPI):
            return prim
        prim = prim.GetParent()
    return None


def world_fixed_joints(robot: Usd.Prim) -> list[Usd.Prim]:
    """Active fixed joints under ``robot`` between the world and one rigid body.

    Args:
        robot: the robot prim (its subtree is searched).

    Returns:
        The joint prims in traversal order.
    """
    stage = robot.GetStage()
    found = []
    for prim in Usd.PrimRange(robot):
        if not prim.IsA(UsdPhysics.FixedJoint):
            continue
        joint = UsdPhysics.FixedJoint(prim)
        body0 = _rigid_body_of(stage, joint.GetBody0Rel().GetTargets())
        body1 = _rigid_body_of(stage, joint.GetBody1Rel().GetTargets())
        if (body0 is None) != (body1 is None):
            found.append(prim)
    return found


def make_floating_base(robot: Usd.Prim) -> list[str]:
    """Deactivate every fixed joint that attaches the robot to the world.

    Opinions go to the stage's current edit target. Calling it again on a robot whose world
    joints are already inactive changes nothing and returns an empty list.

    Args:
        robot: the robot prim.

    Returns:
        Paths of the joints deactivated.

    Raises:
        SchemaError: a world joint that is not fixed (revolute, prismatic, ...) holds the
            robot: it is not a converter's bolt and is left to the user.
    """
    stage = robot.GetStage()
    for prim in Usd.PrimRange(robot):
        if not prim.IsA(UsdPhysics.Joint) or prim.IsA(UsdPhysics.FixedJoint):
            continue
        joint = UsdPhysics.Joint(prim)
        body0 = _rigid_body_of(stage, joint.GetBody0Rel().GetTargets())
        body1 = _rigid_body_of(stage, joint.GetBody1Rel().GetTargets())
        if (body0 is None) != (body1 is None):
            raise SchemaError(
                str(prim.GetPath()),
                "physics:body0",
                f"a {prim.GetTypeName()} joint attaches the robot to the world; only fixed "
                "world joints are removed for a floating base",
            )
    joints = world_fixed_joints(robot)
    for prim in joints:
        prim.SetActive(False)
    return [str(p.GetPath()) for p in joints]
