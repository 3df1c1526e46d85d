"""Isaac Lab spawner cfgs in ``runtime.compat.isaaclab`` (issue 17).

The seed 004 quick example and its "Spawner usage" example run with only their imports
changed, and author exactly what ``runtime.physics`` authors for the same cfgs (the layer
written by the spawner equals the layer written by reference + ``apply_asset_physics``);
the attributes the seed names (``mjc:gravcomp`` on bodies, ``mjc:actuatorgravcomp`` with
``MjcJointAPI`` on joints, ``physxRigidBody:*``, drive gains) are checked on the prims.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from pxr import Usd, UsdGeom, UsdPhysics

import runtime.compat.isaaclab.sim as sim_utils
from runtime.compat import set_current_stage
from runtime.compat.isaaclab_newton.sim.schemas import (
    MujocoJointDrivePropertiesCfg,
    MujocoRigidBodyPropertiesCfg,
)
from runtime.compat.isaaclab_physx.sim.schemas import PhysxRigidBodyPropertiesCfg
from runtime.physics import apply_asset_physics, spawn_shape

ASSET = Path(__file__).resolve().parent / "assets" / "robots" / "panda" / "panda.usda"
ISAAC_NUCLEUS_DIR = str(ASSET.parent)  # the example's asset root, pointed at our panda


@pytest.fixture
def stage():
    st = Usd.Stage.CreateInMemory()
    set_current_stage(st)
    yield st
    set_current_stage(None)


def _by_runtime_physics(**slots) -> Usd.Stage:
    st = Usd.Stage.CreateInMemory()
    prim = UsdGeom.Xform.Define(st, "/World/Robot").GetPrim()
    prim.GetReferences().AddReference(str(ASSET))
    apply_asset_physics(st, "/World/Robot", **slots)
    return st


def _bodies_and_joints(st: Usd.Stage) -> tuple[list[Usd.Prim], list[Usd.Prim]]:
    prims = list(Usd.PrimRange(st.GetPrimAtPath("/World/Robot")))
    bodies = [p for p in prims if p.HasAPI(UsdPhysics.RigidBodyAPI)]
    joints = [
        p for p in prims if p.IsA(UsdPhysics.RevoluteJoint) or p.IsA(UsdPhysics.PrismaticJoint)
    ]
    return bodies, joints


def test_seed_quick_example_with_changed_imports(stage):
    # --- seed 004 "Quick example", imports changed to runtime.compat ---
    spawn = sim_utils.UsdFileCfg(
        usd_path=f"{ISAAC_NUCLEUS_DIR}/panda.usda",
        rigid_props=MujocoRigidBodyPropertiesCfg(gravcomp=1.0),
        joint_drive_props=MujocoJointDrivePropertiesCfg(actuatorgravcomp=True),
    )
    # ---
    prim = spawn.func("/World/Robot", spawn)
    assert prim.GetPath() == "/World/Robot"
    expected = _by_runtime_physics(
        rigid_props=MujocoRigidBodyPropertiesCfg(gravcomp=1.0),
        joint_drive_props=MujocoJointDrivePropertiesCfg(actuatorgravcomp=True),
    )
    assert stage.GetRootLayer().ExportToString() == expected.GetRootLayer().ExportToString()
    bodies, joints = _bodies_and_joints(stage)
    assert len(bodies) >= 8 and len(joints) >= 7
    for body in bodies:
        assert body.GetAttribute("mjc:gravcomp").Get() == pytest.approx(1.0), body.GetPath()
    for joint in joints:
        assert joint.GetAttribute("mjc:actuatorgravcomp").Get() is True, joint.GetPath()
        assert "MjcJointAPI" in joint.GetPrimTypeInfo().GetAppliedAPISchemas()


def test_seed_spawner_usage_example(stage):
    # --- seed 004 "Spawner usage", imports changed ---
    spawn = sim_utils.UsdFileCfg(
        usd_path=str(ASSET),
        rigid_props=PhysxRigidBodyPropertiesCfg(disable_gravity=True, linear_damping=0.1),
        joint_drive_props=MujocoJointDrivePropertiesCfg(
            drive_type="acceleration",
            stiffness=10.0,
            damping=0.1,
            actuatorgravcomp=True,
        ),
    )
    # ---
    spawn.func("/World/Robot", spawn)
    expected = _by_runtime_physics(
        rigid_props=spawn.rigid_props, joint_drive_props=spawn.joint_drive_props
    )
    assert stage.GetRootLayer().ExportToString() == expected.GetRootLayer().ExportToString()
    bodies, joints = _bodies_and_joints(stage)
    for body in bodies:
        assert body.GetAttribute("physxRigidBody:disableGravity").Get() is True
        assert body.GetAttribute("physxRigidBody:linearDamping").Get() == pytest.approx(0.1)
        # rigid_props is not a MuJoCo cfg, so the spawner auto-enables gravcomp=1.0
        assert body.GetAttribute("mjc:gravcomp").Get() == pytest.approx(1.0)
    for joint in joints:
        kind = "angular" if joint.IsA(UsdPhysics.RevoluteJoint) else "linear"
        drive = UsdPhysics.DriveAPI(joint, kind)
        assert drive.GetTypeAttr().Get() == "acceleration"
        # cfg gains are per radian; USD angular drives are per degree
        per_unit = math.pi / 180.0 if kind == "angular" else 1.0
        assert drive.GetStiffnessAttr().Get() == pytest.approx(10.0 * per_unit)


def test_shape_spawners_match_spawn_shape(stage):
    from runtime.physics.cfg import CollisionBaseCfg, MassPropertiesCfg, RigidBodyBaseCfg

    cfg = sim_utils.MeshCuboidCfg(
        size=(0.1, 0.2, 0.3),
        rigid_props=RigidBodyBaseCfg(),
        collision_props=CollisionBaseCfg(),
        mass_props=MassPropertiesCfg(mass=0.5),
    )
    prim = cfg.func("/World/Box", cfg, translation=(1.0, 0.0, 0.5))
    ref = Usd.Stage.CreateInMemory()
    spawn_shape(
        ref,
        "/World/Box",
        "cuboid",
        size=(0.1, 0.2, 0.3),
        translation=(1.0, 0.0, 0.5),
        as_mesh=True,
        rigid_props=RigidBodyBaseCfg(),
        collision_props=CollisionBaseCfg(),
        mass_props=MassPropertiesCfg(mass=0.5),
        physics_material_path="/World/Box/geometry/material",
    )
    assert stage.GetRootLayer().ExportToString() == ref.GetRootLayer().ExportToString()
    assert prim.GetAttribute("physics:mass").Get() == pytest.approx(0.5)
    sphere = sim_utils.SphereCfg(radius=0.25, collision_props=CollisionBaseCfg())
    s = sphere.func("/World/Ball", sphere, orientation=(0.0, 0.0, 0.0, 1.0))
    geom = stage.GetPrimAtPath("/World/Ball/geometry/mesh")
    assert geom.GetTypeName() == "Sphere" and geom.GetAttribute("radius").Get() == 0.25
    assert geom.HasAPI(UsdPhysics.CollisionAPI)
    assert UsdGeom.Xformable(s).GetOrderedXformOps()[-1].GetOpName() == "xformOp:orient"


def test_unsupported_slots_and_missing_file(stage):
    with pytest.raises(ValueError, match="fixed_tendons_props"):
        cfg = sim_utils.UsdFileCfg(usd_path=str(ASSET), fixed_tendons_props=object())
        cfg.func("/World/R", cfg)
    with pytest.raises(FileNotFoundError, match="nope.usda"):
        cfg = sim_utils.UsdFileCfg(usd_path="nope.usda")
        cfg.func("/World/R", cfg)
    with pytest.raises(TypeError):
        sim_utils.UsdFileCfg()  # usd_path is required
