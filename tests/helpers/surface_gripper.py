"""The surface-gripper tests' scene (gripper, cubes).

Shared by several test modules (moved from tests/test_surface_gripper.py).
"""

from __future__ import annotations

from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics  # noqa: E402

GRIPPER = "/World/SurfaceGripper"


BODY = "/World/Gripper"


CUBE = "/World/Cube"


CUBE2 = "/World/Cube2"


HALF = 0.02  # half size of gripper and cube


def _box(stage, path, center, size, mass=None, dynamic=True):
    xf = UsdGeom.Xform.Define(stage, path)
    xf.AddTranslateOp().Set(Gf.Vec3d(*center))
    geom = UsdGeom.Cube.Define(stage, f"{path}/geom")
    geom.CreateSizeAttr(1.0)
    geom.AddScaleOp().Set(Gf.Vec3f(*size))
    UsdPhysics.CollisionAPI.Apply(geom.GetPrim())
    if dynamic:
        UsdPhysics.RigidBodyAPI.Apply(xf.GetPrim())
        UsdPhysics.MassAPI.Apply(xf.GetPrim()).CreateMassAttr(mass)
    return xf.GetPrim()


def _attachment(stage, path, x, z_local, axis="Z"):
    joint = UsdPhysics.Joint.Define(stage, path)
    joint.CreateBody0Rel().SetTargets([BODY])
    joint.CreateBody1Rel().SetTargets([CUBE])  # as authored: irrelevant while open
    joint.CreateLocalPos0Attr(Gf.Vec3f(x, 0.0, z_local))
    joint.CreateLocalRot0Attr(Gf.Quatf(0.0, 1.0, 0.0, 0.0))  # 180 deg about X: +Z points down
    joint.CreateExcludeFromArticulationAttr(True)
    for dof in ("transX", "transY", "transZ", "rotX", "rotY", "rotZ"):
        limit = UsdPhysics.LimitAPI.Apply(joint.GetPrim(), dof)
        limit.CreateLowAttr(1.0)
        limit.CreateHighAttr(-1.0)
    prim = joint.GetPrim()
    prim.ApplyAPI("IsaacAttachmentPointAPI")
    prim.GetAttribute("isaac:forwardAxis").Set(axis)
    return prim


def make_scene(
    gap=0.005,
    clearance=0.0,
    *,
    retry=0.0,
    shear=-1.0,
    coaxial=-1.0,
    two_points=False,
    joint_z=-HALF,
):
    """The common scene; ``gap`` is between the gripper's bottom face and the cube's top."""
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdPhysics.Scene.Define(stage, "/World/physicsScene")
    _box(stage, "/World/Ground", (0, 0, -0.05), (2.0, 2.0, 0.1), dynamic=False)
    _box(stage, CUBE, (0, 0, HALF), (0.04, 0.04, 0.04), mass=0.05)
    _box(stage, CUBE2, (0.5, 0.5, HALF), (0.04, 0.04, 0.04), mass=0.05)
    z0 = 2 * HALF + gap + HALF
    width = 0.1 if two_points else 0.04
    body = _box(stage, BODY, (0, 0, z0), (width, 0.04, 0.04), mass=0.5)
    body.CreateAttribute("physxRigidBody:disableGravity", Sdf.ValueTypeNames.Bool).Set(True)
    slide = UsdPhysics.PrismaticJoint.Define(stage, "/World/GripperSlide")
    slide.CreateAxisAttr("Z")
    slide.CreateBody1Rel().SetTargets([BODY])
    slide.CreateLocalPos0Attr(Gf.Vec3f(0, 0, z0))
    drive = UsdPhysics.DriveAPI.Apply(slide.GetPrim(), "linear")
    drive.CreateStiffnessAttr(2000.0)
    drive.CreateDampingAttr(200.0)
    drive.CreateTargetPositionAttr(0.0)
    points = []
    if two_points:
        points.append(_attachment(stage, f"{BODY}/AttachA", 0.0, joint_z))
        points.append(_attachment(stage, f"{BODY}/AttachB", 0.06, joint_z))
    else:
        points.append(_attachment(stage, f"{BODY}/Attach", 0.0, joint_z))
    for p in points:
        p.GetAttribute("isaac:clearanceOffset").Set(clearance)
    g = stage.DefinePrim(GRIPPER, "IsaacSurfaceGripper")
    g.CreateRelationship("isaac:attachmentPoints").SetTargets([p.GetPath() for p in points])
    g.GetAttribute("isaac:maxGripDistance").Set(0.02)
    g.GetAttribute("isaac:retryInterval").Set(retry)
    g.GetAttribute("isaac:shearForceLimit").Set(shear)
    g.GetAttribute("isaac:coaxialForceLimit").Set(coaxial)
    return stage
