"""The poser spec's fixture P1: a robot with one link and one revolute joint.

Shared by several test modules (moved from tests/test_poser.py).
"""

from __future__ import annotations

from pxr import Gf, Usd, UsdGeom, UsdPhysics

from runtime.schema.authoring import apply_robot_api


def make_p1(stage=None, robot_path="/World/Robot"):
    """Fixture P1 of the spec: Robot (rigid body, articulation root) + Link1, joint1 about X."""
    stage = stage or Usd.Stage.CreateInMemory()
    if not stage.GetPrimAtPath("/World"):
        UsdGeom.Xform.Define(stage, "/World")
    robot = UsdGeom.Xform.Define(stage, robot_path).GetPrim()
    UsdPhysics.RigidBodyAPI.Apply(robot)
    UsdPhysics.ArticulationRootAPI.Apply(robot)
    link = UsdGeom.Xform.Define(stage, f"{robot_path}/Link1").GetPrim()
    UsdPhysics.RigidBodyAPI.Apply(link)
    joint = UsdPhysics.RevoluteJoint.Define(stage, f"{robot_path}/joint1")
    joint.CreateAxisAttr("X")
    joint.CreateBody0Rel().SetTargets([robot.GetPath()])
    joint.CreateBody1Rel().SetTargets([link.GetPath()])
    joint.CreateLocalPos0Attr(Gf.Vec3f(1, 0, 0))
    joint.CreateLocalPos1Attr(Gf.Vec3f(0, 0, 0))
    apply_robot_api(robot)
    return stage, robot, link
