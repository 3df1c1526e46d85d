"""Small physics stages for the engine tests (bodies, ground, joints, pendulums, tets).

Shared by several test modules (moved from tests/test_engine_builder.py).
"""

from __future__ import annotations

import os

from pxr import Gf, Usd, UsdGeom, UsdPhysics, Vt

ASSETS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "assets", "robots")


def new_stage(mpu: float = 1.0, scene: bool = True, gravity: float | None = None) -> Usd.Stage:
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageMetersPerUnit(stage, mpu)
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
    UsdGeom.Xform.Define(stage, "/World")
    if scene:
        s = UsdPhysics.Scene.Define(stage, "/PhysicsScene")
        if gravity is not None:
            s.CreateGravityMagnitudeAttr(gravity)
            s.CreateGravityDirectionAttr(Gf.Vec3f(0, 0, -1))
    return stage


def body(
    stage,
    path,
    pos=(0, 0, 0),
    mass=None,
    inertia=None,
    com=None,
    shape="cube",
    size=0.2,
    kinematic=False,
):
    xf = UsdGeom.Xform.Define(stage, path)
    xf.AddTranslateOp().Set(Gf.Vec3d(*pos))
    prim = xf.GetPrim()
    rb = UsdPhysics.RigidBodyAPI.Apply(prim)
    if kinematic:
        rb.CreateKinematicEnabledAttr(True)
    if mass is not None or inertia is not None or com is not None:
        m = UsdPhysics.MassAPI.Apply(prim)
        if mass is not None:
            m.CreateMassAttr(mass)
        if inertia is not None:
            m.CreateDiagonalInertiaAttr(Gf.Vec3f(*inertia))
        if com is not None:
            m.CreateCenterOfMassAttr(Gf.Vec3f(*com))
    if shape == "cube":
        c = UsdGeom.Cube.Define(stage, path + "/collider")
        c.CreateSizeAttr(size)
        UsdPhysics.CollisionAPI.Apply(c.GetPrim())
    elif shape == "sphere":
        c = UsdGeom.Sphere.Define(stage, path + "/collider")
        c.CreateRadiusAttr(size)
        UsdPhysics.CollisionAPI.Apply(c.GetPrim())
    return prim


def ground(stage, path="/World/Ground"):
    plane = UsdGeom.Plane.Define(stage, path)
    plane.CreateAxisAttr("Z")
    UsdPhysics.CollisionAPI.Apply(plane.GetPrim())
    return plane.GetPrim()


def revolute(
    stage, path, body0, body1, axis="Y", pos0=(0, 0, 0), pos1=(0, 0, 0), limits=None, drive=None
):
    j = UsdPhysics.RevoluteJoint.Define(stage, path)
    if body0:
        j.CreateBody0Rel().SetTargets([body0])
    if body1:
        j.CreateBody1Rel().SetTargets([body1])
    j.CreateAxisAttr(axis)
    j.CreateLocalPos0Attr(Gf.Vec3f(*pos0))
    j.CreateLocalPos1Attr(Gf.Vec3f(*pos1))
    j.CreateLocalRot0Attr(Gf.Quatf(1))
    j.CreateLocalRot1Attr(Gf.Quatf(1))
    if limits is not None:
        j.CreateLowerLimitAttr(limits[0])
        j.CreateUpperLimitAttr(limits[1])
    if drive is not None:
        d = UsdPhysics.DriveAPI.Apply(j.GetPrim(), "angular")
        for key, value in drive.items():
            getattr(d, f"Create{key}Attr")(value)
    return j


def pendulum(stage, arm=0.5, m=2.0, reversed_=False, **kw):
    """A point-ish mass at +x distance ``arm`` from a world hinge about Y, at the origin."""
    body(
        stage,
        "/World/arm",
        pos=(0, 0, 0),
        mass=m,
        inertia=(1e-3, 1e-3, 1e-3),
        com=(arm, 0, 0),
        shape=None,
    )
    if reversed_:
        return revolute(stage, "/World/hinge", "/World/arm", None, **kw)
    return revolute(stage, "/World/hinge", None, "/World/arm", **kw)


def tet_stage():
    """A 1 kg body at z = 0.5 above the ground whose collider is a tetrahedron mesh with
    a convex-hull approximation (flat face down, 0.1 below the body origin)."""
    stage = new_stage()
    ground(stage)
    body(stage, "/World/b", pos=(0, 0, 0.5), mass=1.0, inertia=(0.01, 0.01, 0.01), shape=None)
    mesh = UsdGeom.Mesh.Define(stage, "/World/b/tet")
    pts = [(-0.1, -0.1, -0.1), (0.1, -0.1, -0.1), (0.0, 0.1, -0.1), (0.0, 0.0, 0.1)]
    mesh.CreatePointsAttr(Vt.Vec3fArray([Gf.Vec3f(*p) for p in pts]))
    mesh.CreateFaceVertexCountsAttr([3, 3, 3, 3])
    mesh.CreateFaceVertexIndicesAttr([0, 2, 1, 0, 1, 3, 1, 2, 3, 2, 0, 3])
    UsdPhysics.CollisionAPI.Apply(mesh.GetPrim())
    UsdPhysics.MeshCollisionAPI.Apply(mesh.GetPrim()).CreateApproximationAttr("convexHull")
    return stage


def _erd() -> str:
    import sysconfig

    return os.path.join(
        sysconfig.get_paths()["purelib"], "cmeel.prefix", "share", "example-robot-data", "robots"
    )
