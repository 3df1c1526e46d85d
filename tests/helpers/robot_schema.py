"""Stage builders shared by the robot-schema tests; no tests here.

See docs/guides/inspect-and-schema.md.
"""

from __future__ import annotations

from pxr import Gf, Usd, UsdGeom, UsdPhysics

import runtime.schema  # noqa: F401


def rigid(stage: Usd.Stage, path: str, *, body: bool = True) -> Usd.Prim:
    prim = UsdGeom.Xform.Define(stage, path).GetPrim()
    if body:
        UsdPhysics.RigidBodyAPI.Apply(prim)
    return prim


def joint(
    stage: Usd.Stage,
    path: str,
    body0: str | None,
    body1: str | None,
    kind: str = "revolute",
    axis: str = "X",
) -> Usd.Prim:
    if kind == "revolute":
        j = UsdPhysics.RevoluteJoint.Define(stage, path)
        j.CreateAxisAttr(axis)
    elif kind == "prismatic":
        j = UsdPhysics.PrismaticJoint.Define(stage, path)
        j.CreateAxisAttr(axis)
    elif kind == "fixed":
        j = UsdPhysics.FixedJoint.Define(stage, path)
    else:
        j = UsdPhysics.Joint.Define(stage, path)
    if body0:
        j.CreateBody0Rel().SetTargets([body0])
    if body1:
        j.CreateBody1Rel().SetTargets([body1])
    return j.GetPrim()


def f1(kind: str = "plain") -> Usd.Stage:
    """Fixture F1: /World/Robot (rigid, articulation root) —joint1→ /World/Robot/Link1."""
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.Xform.Define(stage, "/World")
    robot = rigid(stage, "/World/Robot")
    UsdPhysics.ArticulationRootAPI.Apply(robot)
    rigid(stage, "/World/Robot/Link1")
    j = joint(stage, "/World/Robot/joint1", "/World/Robot", "/World/Robot/Link1", kind=kind)
    jj = UsdPhysics.Joint(j)
    jj.CreateLocalPos0Attr(Gf.Vec3f(1, 0, 0))
    jj.CreateLocalPos1Attr(Gf.Vec3f(0, 0, 0))
    jj.CreateLocalRot0Attr(Gf.Quatf(1, 0, 0, 0))
    jj.CreateLocalRot1Attr(Gf.Quatf(1, 0, 0, 0))
    return stage


def sub_robot_stage() -> Usd.Stage:
    """Scenario 7: Robot —j_arm→ Arm —j_sub→ Sub (robot) —Sub/j_finger→ Sub/Finger."""
    stage = Usd.Stage.CreateInMemory()
    robot = rigid(stage, "/World/Robot")
    UsdPhysics.ArticulationRootAPI.Apply(robot)
    rigid(stage, "/World/Robot/Arm")
    sub = rigid(stage, "/World/Robot/Sub")
    sub.AddAppliedSchema("IsaacRobotAPI")
    rigid(stage, "/World/Robot/Sub/Finger")
    joint(stage, "/World/Robot/j_arm", "/World/Robot", "/World/Robot/Arm")
    joint(stage, "/World/Robot/j_sub", "/World/Robot/Arm", "/World/Robot/Sub")
    joint(stage, "/World/Robot/Sub/j_finger", "/World/Robot/Sub", "/World/Robot/Sub/Finger")
    return stage


def targets(prim: Usd.Prim, rel: str) -> list[str]:
    r = prim.GetRelationship(rel)
    return [str(t) for t in r.GetTargets()] if r else []


LINKS = "isaac:physics:robotLinks"
JOINTS = "isaac:physics:robotJoints"
