"""The kinematics tests' hand stage, its Pinocchio model and world poses.

Shared by several test modules (moved from tests/test_kinematics.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from pxr import Gf, Usd, UsdGeom, UsdPhysics

from runtime.kinematics.math import (
    quat_from_axis_angle,
)

pin = pytest.importorskip("pinocchio")


N_CONFIGS = 1000


def _quatf(axis, angle_deg):
    q = quat_from_axis_angle(axis, math.radians(angle_deg))
    return Gf.Quatf(float(q[0]), Gf.Vec3f(*q[1:]))


def _add_joint(stage, path, kind, body0, body1, pos0, rot0, pos1, rot1, axis="X", limits=None):
    cls = {
        "rev": UsdPhysics.RevoluteJoint,
        "pri": UsdPhysics.PrismaticJoint,
        "fix": UsdPhysics.FixedJoint,
    }[kind]
    j = cls.Define(stage, path)
    j.CreateBody0Rel().SetTargets([body0])
    j.CreateBody1Rel().SetTargets([body1])
    j.CreateLocalPos0Attr(Gf.Vec3f(*pos0))
    j.CreateLocalRot0Attr(rot0)
    j.CreateLocalPos1Attr(Gf.Vec3f(*pos1))
    j.CreateLocalRot1Attr(rot1)
    if kind != "fix":
        j.CreateAxisAttr(axis)
        if limits is not None:
            j.CreateLowerLimitAttr(limits[0])
            j.CreateUpperLimitAttr(limits[1])
    return j


def build_hand_stage(reverse_j4=True):
    """Base → l1 (rev Z) → l2 (rev Y, inverted limits) → l3 (prismatic X) → l4 (fixed)
    → l5 (rev X, authored child→parent when ``reverse_j4``), with a site under l5."""
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.Xform.Define(stage, "/World")
    robot = UsdGeom.Xform.Define(stage, "/World/Robot")
    UsdPhysics.ArticulationRootAPI.Apply(robot.GetPrim())
    base = UsdGeom.Xform.Define(stage, "/World/Robot/base")
    base.AddTranslateOp().Set(Gf.Vec3d(0.1, 0.2, 0.3))
    base.AddOrientOp().Set(Gf.Quatf(_quatf([0, 0, 1], 20)))
    UsdPhysics.RigidBodyAPI.Apply(base.GetPrim())
    for name in ("l1", "l2", "l3", "l4", "l5"):
        x = UsdGeom.Xform.Define(stage, f"/World/Robot/{name}")
        UsdPhysics.RigidBodyAPI.Apply(x.GetPrim())
    ident = Gf.Quatf(1, 0, 0, 0)
    _add_joint(
        stage,
        "/World/Robot/j1",
        "rev",
        "/World/Robot/base",
        "/World/Robot/l1",
        (0, 0, 0.5),
        _quatf([1, 0, 0], 30),
        (0, 0, -0.1),
        ident,
        "Z",
        (-90, 90),
    )
    _add_joint(
        stage,
        "/World/Robot/j2",
        "rev",
        "/World/Robot/l1",
        "/World/Robot/l2",
        (0.25, 0, 0.75),
        ident,
        (0, 0.05, 0),
        _quatf([0, 1, 0], -45),
        "Y",
        (10, -10),
    )
    _add_joint(
        stage,
        "/World/Robot/j3",
        "pri",
        "/World/Robot/l2",
        "/World/Robot/l3",
        (0.5, 0, 0),
        _quatf([0, 0, 1], 90),
        (0, 0, 0),
        ident,
        "X",
        (0.0, 0.3),
    )
    _add_joint(
        stage,
        "/World/Robot/jf",
        "fix",
        "/World/Robot/l3",
        "/World/Robot/l4",
        (0, 0.125, 0),
        _quatf([1, 1, 0], 60),
        (0, 0, 0.2),
        ident,
    )
    p0, r0, p1, r1 = (0.3, 0, 0.1), _quatf([0, 0, 1], 15), (0, -0.2, 0), _quatf([1, 0, 0], 10)
    if reverse_j4:  # body0 = child l5: swap bodies and local frames
        _add_joint(
            stage,
            "/World/Robot/j4",
            "rev",
            "/World/Robot/l5",
            "/World/Robot/l4",
            p1,
            r1,
            p0,
            r0,
            "X",
            (-120, 45),
        )
    else:
        _add_joint(
            stage,
            "/World/Robot/j4",
            "rev",
            "/World/Robot/l4",
            "/World/Robot/l5",
            p0,
            r0,
            p1,
            r1,
            "X",
            (-45, 120),
        )
    site = UsdGeom.Xform.Define(stage, "/World/Robot/l5/tool")
    site.AddTranslateOp().Set(Gf.Vec3d(0, 0, 0.1))
    site.GetPrim().AddAppliedSchema("IsaacSiteAPI")
    return stage


def _se3(stage, joint, index, inverse=False):
    j = stage.GetPrimAtPath(joint)
    t = np.array(j.GetAttribute(f"physics:localPos{index}").Get(), dtype=np.float64)
    r = j.GetAttribute(f"physics:localRot{index}").Get()
    q = np.array([r.GetReal(), *r.GetImaginary()], dtype=np.float64)
    m = pin.SE3(pin.Quaternion(q[0], q[1], q[2], q[3]).normalized().matrix(), t)
    return m.inverse() if inverse else m


def _pin_hand_model(stage):
    """Pinocchio model of the hand chain built from the USD's joint frames (j4 reversed:
    body1 is the tree parent, so its motion is the inverse, i.e. axis negated)."""
    model = pin.Model()
    ex, ey = np.array([1.0, 0, 0]), np.array([0, 1.0, 0])
    j1 = model.addJoint(0, pin.JointModelRZ(), _se3(stage, "/World/Robot/j1", 0), "j1")
    j2 = model.addJoint(
        j1,
        pin.JointModelRevoluteUnaligned(ey),
        _se3(stage, "/World/Robot/j1", 1, True) * _se3(stage, "/World/Robot/j2", 0),
        "j2",
    )
    j3 = model.addJoint(
        j2,
        pin.JointModelPrismaticUnaligned(ex),
        _se3(stage, "/World/Robot/j2", 1, True) * _se3(stage, "/World/Robot/j3", 0),
        "j3",
    )
    place4 = (
        _se3(stage, "/World/Robot/j3", 1, True)
        * _se3(stage, "/World/Robot/jf", 0)
        * _se3(stage, "/World/Robot/jf", 1, True)
        * _se3(stage, "/World/Robot/j4", 1)
    )
    j4 = model.addJoint(j3, pin.JointModelRevoluteUnaligned(-ex), place4, "j4")
    l5 = _se3(stage, "/World/Robot/j4", 0, True)
    tool = pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.1]))
    model.addFrame(pin.Frame("tool", j4, 0, l5 * tool, pin.FrameType.OP_FRAME))
    return model


def _world(stage, path):
    m = np.array(
        UsdGeom.Xformable(stage.GetPrimAtPath(path)).ComputeLocalToWorldTransform(
            Usd.TimeCode.Default()
        )
    ).T
    return m
