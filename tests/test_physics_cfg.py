"""Physics cfg classes and writers: docs/guides/physics-and-engine.md#cfgs scenarios 1-50.

Each test builds a fresh in-memory usd-core stage and checks the authored attributes and the
*unfiltered* applied-schema list (usd-core drops unregistered names from GetAppliedSchemas).
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import pytest
from pxr import Usd, UsdGeom, UsdPhysics

from runtime.physics import (
    BoundingCubePropertiesCfg,
    BoundingSpherePropertiesCfg,
    CollisionBaseCfg,
    JointDriveBaseCfg,
    MassPropertiesCfg,
    MeshCollisionBaseCfg,
    MujocoJointDrivePropertiesCfg,
    MujocoRigidBodyPropertiesCfg,
    NewtonCollisionPropertiesCfg,
    NewtonJointDrivePropertiesCfg,
    NewtonMeshCollisionPropertiesCfg,
    NewtonRigidBodyPropertiesCfg,
    PhysicsMaterialCfg,
    PhysxArticulationRootPropertiesCfg,
    PhysxCollisionPropertiesCfg,
    PhysxConvexDecompositionPropertiesCfg,
    PhysxConvexHullPropertiesCfg,
    PhysxJointDrivePropertiesCfg,
    PhysxRigidBodyMaterialCfg,
    PhysxRigidBodyPropertiesCfg,
    PhysxSDFMeshPropertiesCfg,
    PhysxTriangleMeshPropertiesCfg,
    PhysxTriangleMeshSimplificationPropertiesCfg,
    RigidBodyBaseCfg,
)
from runtime.physics import writers as w
from runtime.physics._meta import to_camel_case
from tests.helpers.physics_cfg import ALL_CLASSES, applied, has_value, make_joint, value  # noqa: E402


@pytest.fixture
def stage():
    st = Usd.Stage.CreateInMemory()
    UsdGeom.Xform.Define(st, "/World")
    return st


DEG = math.pi / 180.0


# ------------------------------------------------------------------ cfg objects (1-5)


def test_01_mujoco_classes_are_newton_classes():
    assert isinstance(MujocoRigidBodyPropertiesCfg(gravcomp=0.5), NewtonRigidBodyPropertiesCfg)
    assert isinstance(
        MujocoJointDrivePropertiesCfg(actuatorgravcomp=True), NewtonJointDrivePropertiesCfg
    )
    assert NewtonMeshCollisionPropertiesCfg.__mro__ == (
        NewtonMeshCollisionPropertiesCfg,
        NewtonCollisionPropertiesCfg,
        CollisionBaseCfg,
        MeshCollisionBaseCfg,
        object,
    )


def test_02_approximation_defaults():
    assert BoundingCubePropertiesCfg().mesh_approximation_name == "boundingCube"
    assert BoundingSpherePropertiesCfg().mesh_approximation_name == "boundingSphere"
    assert MeshCollisionBaseCfg().mesh_approximation_name == "none"
    assert PhysxConvexHullPropertiesCfg().mesh_approximation_name == "convexHull"
    assert PhysxConvexDecompositionPropertiesCfg().mesh_approximation_name == "convexDecomposition"
    assert PhysxTriangleMeshPropertiesCfg().mesh_approximation_name == "none"
    simp = PhysxTriangleMeshSimplificationPropertiesCfg()
    assert simp.mesh_approximation_name == "meshSimplification"
    assert PhysxSDFMeshPropertiesCfg().mesh_approximation_name == "sdf"
    assert NewtonMeshCollisionPropertiesCfg().mesh_approximation_name == "none"


@pytest.mark.parametrize("cls", ALL_CLASSES, ids=lambda c: c.__name__)
def test_03_metadata_is_not_a_field(cls):
    names = [f.name for f in dataclasses.fields(cls)]
    assert not [n for n in names if n.startswith("_usd")]
    kwargs = {"func": w.spawn_rigid_body_material} if cls is PhysicsMaterialCfg else {}
    with pytest.raises(TypeError):
        cls(_usd_namespace="x", **kwargs)


@pytest.mark.parametrize(
    ("name", "camel"),
    [
        ("contact_margin", "contactMargin"),
        ("max_hull_vertices", "maxHullVertices"),
        ("enable_speculative_c_c_d", "enableSpeculativeCCD"),
        ("sdf_subgrid_resolution", "sdfSubgridResolution"),
        ("abc_2d", "abc2D"),
        ("gravcomp", "gravcomp"),
        ("actuatorgravcomp", "actuatorgravcomp"),
        ("mass", "mass"),
        ("density", "density"),
        ("stiffness", "stiffness"),
    ],
)
def test_04_camel_case(name, camel):
    assert to_camel_case(name) == camel


def _full(cls, **base):
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in ("max_velocity", "max_effort", "func"):
            continue
        hint = f.type
        if "bool" in hint:
            values[f.name] = True
        elif "int" in hint:
            values[f.name] = 3
        elif "Literal" in hint:
            values[f.name] = "max" if "average" in hint else "force"
        elif "float" in hint:
            values[f.name] = 0.25
        elif f.name == "mesh_approximation_name":
            values[f.name] = f.default
    values.update(base)
    return cls(**values)


PHYSX_CLASSES = [
    PhysxRigidBodyPropertiesCfg,
    PhysxCollisionPropertiesCfg,
    PhysxArticulationRootPropertiesCfg,
    PhysxJointDrivePropertiesCfg,
    PhysxRigidBodyMaterialCfg,
    PhysxConvexHullPropertiesCfg,
    PhysxConvexDecompositionPropertiesCfg,
    PhysxTriangleMeshPropertiesCfg,
    PhysxTriangleMeshSimplificationPropertiesCfg,
    PhysxSDFMeshPropertiesCfg,
]


@pytest.mark.parametrize("cls", PHYSX_CLASSES, ids=lambda c: c.__name__)
def test_05_fully_populated_physx_fixture(cls):
    cfg = _full(cls)
    nones = [f.name for f in dataclasses.fields(cfg) if getattr(cfg, f.name) is None]
    assert set(nones) <= {"max_velocity", "max_effort"}


# ------------------------------------------------------------------ joint drives (6-15)


def test_06_max_joint_velocity_on_base_cfg(stage):
    joint = make_joint(stage, "/World/j")
    cfg = JointDriveBaseCfg(
        drive_type="acceleration", max_force=80, max_joint_velocity=10, stiffness=10, damping=0.1
    )
    assert w.modify_joint_drive_properties_on_prim(joint, cfg) is True
    assert value(joint, "physxJoint:maxJointVelocity") == pytest.approx(10 * 180 / math.pi, 1e-5)
    assert "PhysxJointAPI" in applied(joint)


def test_07_max_velocity_alias(stage):
    with pytest.warns(DeprecationWarning, match="max_velocity"):
        cfg = JointDriveBaseCfg(max_velocity=10)
    assert cfg.max_joint_velocity == 10 and cfg.max_velocity is None
    joint = make_joint(stage, "/World/j")
    w.modify_joint_drive_properties_on_prim(joint, cfg)
    assert value(joint, "physxJoint:maxJointVelocity") == pytest.approx(10 * 180 / math.pi, 1e-5)


def test_08_max_effort_alias_prismatic(stage):
    with pytest.warns(DeprecationWarning, match="max_effort"):
        cfg = JointDriveBaseCfg(max_effort=42)
    assert cfg.max_force == 42 and cfg.max_effort is None
    joint = make_joint(stage, "/World/p", "prismatic")
    w.modify_joint_drive_properties_on_prim(joint, cfg)
    assert value(joint, "drive:linear:physics:maxForce") == pytest.approx(42)


@pytest.mark.parametrize(
    ("old", "new"), [("max_effort", "max_force"), ("max_velocity", "max_joint_velocity")]
)
def test_09_both_alias_and_canonical(old, new):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cfg = JointDriveBaseCfg(**{new: 5, old: 9})
    deprecations = [c for c in caught if issubclass(c.category, DeprecationWarning)]
    assert len(deprecations) == 1 and old in str(deprecations[0].message)
    assert getattr(cfg, new) == 5 and getattr(cfg, old) is None


def test_09b_alias_zero_counts_and_no_warning_when_unset():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        JointDriveBaseCfg(max_force=1.0)
    with pytest.warns(DeprecationWarning):
        cfg = JointDriveBaseCfg(max_effort=0.0)
    assert cfg.max_force == 0.0


def test_09c_alias_assigned_after_construction_is_forwarded(stage):
    cfg = JointDriveBaseCfg()
    cfg.max_effort = 7.0
    joint = make_joint(stage, "/World/p", "prismatic")
    with pytest.warns(DeprecationWarning, match="max_effort"):
        w.modify_joint_drive_properties_on_prim(joint, cfg)
    assert value(joint, "drive:linear:physics:maxForce") == pytest.approx(7.0)


def test_10_no_physx_joint_api_without_velocity(stage):
    joint = make_joint(stage, "/World/j")
    w.modify_joint_drive_properties_on_prim(joint, JointDriveBaseCfg(stiffness=1.0, damping=0.5))
    assert "PhysxJointAPI" not in applied(joint)
    assert "PhysicsDriveAPI:angular" in applied(joint)


def test_11_drive_units_and_type(stage):
    cfg = JointDriveBaseCfg(drive_type="force", max_force=12.0, stiffness=100.0, damping=4.0)
    rev = make_joint(stage, "/World/r")
    pri = make_joint(stage, "/World/p", "prismatic")
    w.modify_joint_drive_properties_on_prim(rev, cfg)
    w.modify_joint_drive_properties_on_prim(pri, cfg)
    assert value(rev, "drive:angular:physics:type") == "force"
    assert value(rev, "drive:angular:physics:stiffness") == pytest.approx(100.0 * DEG, 1e-6)
    assert value(rev, "drive:angular:physics:damping") == pytest.approx(4.0 * DEG, 1e-6)
    assert value(rev, "drive:angular:physics:maxForce") == pytest.approx(12.0)
    assert value(pri, "drive:linear:physics:type") == "force"
    assert value(pri, "drive:linear:physics:stiffness") == pytest.approx(100.0)
    assert value(pri, "drive:linear:physics:damping") == pytest.approx(4.0)
    assert value(pri, "drive:linear:physics:maxForce") == pytest.approx(12.0)
    assert "PhysicsDriveAPI:linear" in applied(pri)


def test_12_ensure_drives_exist(stage):
    rev = make_joint(stage, "/World/r")
    pri = make_joint(stage, "/World/p", "prismatic")
    cfg = JointDriveBaseCfg(ensure_drives_exist=True)
    w.modify_joint_drive_properties_on_prim(rev, cfg)
    w.modify_joint_drive_properties_on_prim(pri, cfg)
    assert value(rev, "drive:angular:physics:stiffness") == pytest.approx(1e-3 * DEG, 1e-6)
    assert value(pri, "drive:linear:physics:stiffness") == pytest.approx(1e-3, 1e-6)
    # existing non-zero damping: nothing changes
    rev2 = make_joint(stage, "/World/r2")
    UsdPhysics.DriveAPI.Apply(rev2, "angular").CreateDampingAttr().Set(3.0)
    w.modify_joint_drive_properties_on_prim(rev2, cfg)
    assert not has_value(rev2, "drive:angular:physics:stiffness")
    assert value(rev2, "drive:angular:physics:damping") == pytest.approx(3.0)
    # cfg sets damping: no automatic stiffness
    rev3 = make_joint(stage, "/World/r3")
    w.modify_joint_drive_properties_on_prim(
        rev3, JointDriveBaseCfg(ensure_drives_exist=True, damping=2.0)
    )
    assert not has_value(rev3, "drive:angular:physics:stiffness")
    assert value(rev3, "drive:angular:physics:damping") == pytest.approx(2.0 * DEG, 1e-6)


def test_13_tendon_axis_joints_skipped(stage):
    joint = make_joint(stage, "/World/j")
    joint.AddAppliedSchema("PhysxTendonAxisAPI:inst0")
    cfg = JointDriveBaseCfg(stiffness=5.0)
    assert w.modify_joint_drive_properties_on_prim(joint, cfg) is False
    assert not has_value(joint, "drive:angular:physics:stiffness")
    assert "PhysicsDriveAPI:angular" not in applied(joint)
    joint.AddAppliedSchema("PhysxTendonAxisRootAPI:inst0")
    assert w.modify_joint_drive_properties_on_prim(joint, cfg) is True
    assert value(joint, "drive:angular:physics:stiffness") == pytest.approx(5.0 * DEG, 1e-6)


def test_14_non_target_joints_and_tree_walk(stage):
    cfg = JointDriveBaseCfg(stiffness=1.0)
    sph = make_joint(stage, "/World/robot/s", "spherical")
    fix = make_joint(stage, "/World/robot/f", "fixed")
    xf = stage.GetPrimAtPath("/World")
    for prim in (sph, fix, xf):
        assert w.modify_joint_drive_properties_on_prim(prim, cfg) is False
    root = stage.GetPrimAtPath("/World/robot")
    UsdPhysics.ArticulationRootAPI.Apply(root)
    make_joint(stage, "/World/robot/r", "revolute")
    make_joint(stage, "/World/robot/link/p", "prismatic")
    assert w.modify_joint_drive_properties("/World/robot", cfg, stage) == 2
    touched = [
        str(p.GetPath()) for p in stage.Traverse() if any("DriveAPI" in s for s in applied(p))
    ]
    assert sorted(touched) == ["/World/robot/link/p", "/World/robot/r"]


def test_15_actuatorgravcomp(stage):
    make_joint(stage, "/World/arm/j", "revolute")
    n = w.modify_joint_drive_properties(
        "/World/arm", MujocoJointDrivePropertiesCfg(actuatorgravcomp=True), stage
    )
    joint = stage.GetPrimAtPath("/World/arm/j")
    assert n == 1
    assert value(joint, "mjc:actuatorgravcomp") is True
    assert "MjcJointAPI" in applied(joint)
    make_joint(stage, "/World/arm2/j", "revolute")
    w.modify_joint_drive_properties("/World/arm2", MujocoJointDrivePropertiesCfg(), stage)
    joint2 = stage.GetPrimAtPath("/World/arm2/j")
    assert not joint2.GetAttribute("mjc:actuatorgravcomp")
    assert "MjcJointAPI" not in applied(joint2)


# ------------------------------------------------------------------ rigid/collision/mass


def test_16_disable_gravity_on_base(stage):
    UsdGeom.Cube.Define(stage, "/World/cube")
    cfg = RigidBodyBaseCfg(rigid_body_enabled=True, kinematic_enabled=False, disable_gravity=True)
    w.define_rigid_body_properties("/World/cube", cfg, stage)
    prim = stage.GetPrimAtPath("/World/cube")
    assert value(prim, "physxRigidBody:disableGravity") is True
    assert "PhysxRigidBodyAPI" in applied(prim)
    assert value(prim, "physics:rigidBodyEnabled") is True
    assert value(prim, "physics:kinematicEnabled") is False


def test_17_physx_rigid_no_schema_when_only_base_fields(stage):
    UsdGeom.Cube.Define(stage, "/World/cube")
    cfg = PhysxRigidBodyPropertiesCfg(rigid_body_enabled=True, kinematic_enabled=False)
    w.define_rigid_body_properties("/World/cube", cfg, stage)
    prim = stage.GetPrimAtPath("/World/cube")
    assert "PhysxRigidBodyAPI" not in applied(prim)
    assert value(prim, "physics:rigidBodyEnabled") is True


def test_18_full_physx_rigid_cfg(stage):
    UsdGeom.Cube.Define(stage, "/World/cube")
    cfg = _full(PhysxRigidBodyPropertiesCfg, max_angular_velocity=500.0, kinematic_enabled=False)
    w.define_rigid_body_properties("/World/cube", cfg, stage)
    prim = stage.GetPrimAtPath("/World/cube")
    own = {f.name for f in dataclasses.fields(cfg)} - {
        f.name for f in dataclasses.fields(RigidBodyBaseCfg)
    }
    for name in own:
        got = value(prim, f"physxRigidBody:{to_camel_case(name)}")
        assert got == pytest.approx(getattr(cfg, name)), name
    assert value(prim, "physxRigidBody:maxAngularVelocity") == pytest.approx(500.0)
    assert value(prim, "physics:rigidBodyEnabled") is True
    assert value(prim, "physics:kinematicEnabled") is False
    assert not prim.GetAttribute("physxRigidBody:rigidBodyEnabled")
    assert not prim.GetAttribute("physxRigidBody:kinematicEnabled")
    assert prim.GetAttribute("physxRigidBody:solverPositionIterationCount").GetTypeName() == "int"
    assert "PhysxRigidBodyAPI" in applied(prim)


def test_19_mujoco_gravcomp(stage):
    UsdGeom.Cube.Define(stage, "/World/a")
    UsdGeom.Cube.Define(stage, "/World/b")
    before = applied(stage.GetPrimAtPath("/World/a"))
    w.define_rigid_body_properties("/World/a", MujocoRigidBodyPropertiesCfg(gravcomp=0.5), stage)
    a = stage.GetPrimAtPath("/World/a")
    assert value(a, "mjc:gravcomp") == pytest.approx(0.5)
    assert applied(a) == [*before, "PhysicsRigidBodyAPI"]
    w.define_rigid_body_properties("/World/b", MujocoRigidBodyPropertiesCfg(), stage)
    assert not stage.GetPrimAtPath("/World/b").GetAttribute("mjc:gravcomp")


def test_19b_int_given_for_float_field_is_written_as_float(stage):
    UsdGeom.Cube.Define(stage, "/World/a")
    w.define_rigid_body_properties("/World/a", MujocoRigidBodyPropertiesCfg(gravcomp=1), stage)
    attr = stage.GetPrimAtPath("/World/a").GetAttribute("mjc:gravcomp")
    assert attr.GetTypeName() == "float" and not attr.IsCustom()


def test_20_mixed_namespace_rigid(stage):
    UsdGeom.Cube.Define(stage, "/World/a")
    cfg = MujocoRigidBodyPropertiesCfg(rigid_body_enabled=True, disable_gravity=True, gravcomp=1.0)
    w.define_rigid_body_properties("/World/a", cfg, stage)
    prim = stage.GetPrimAtPath("/World/a")
    assert value(prim, "physics:rigidBodyEnabled") is True
    assert value(prim, "physxRigidBody:disableGravity") is True
    assert "PhysxRigidBodyAPI" in applied(prim)
    assert value(prim, "mjc:gravcomp") == pytest.approx(1.0)
    assert not prim.GetAttribute("physics:disableGravity")
    # only gravcomp: nothing else
    UsdGeom.Cube.Define(stage, "/World/b")
    w.define_rigid_body_properties("/World/b", MujocoRigidBodyPropertiesCfg(gravcomp=1.0), stage)
    b = stage.GetPrimAtPath("/World/b")
    assert applied(b) == ["PhysicsRigidBodyAPI"]
    authored = [a.GetName() for a in b.GetAuthoredAttributes()]
    assert authored == ["mjc:gravcomp"]


def test_21_collision_base_physx_exceptions(stage):
    UsdGeom.Cube.Define(stage, "/World/c")
    cfg = CollisionBaseCfg(collision_enabled=True, contact_offset=0.05, rest_offset=0.001)
    w.define_collision_properties("/World/c", cfg, stage)
    prim = stage.GetPrimAtPath("/World/c")
    assert value(prim, "physxCollision:contactOffset") == pytest.approx(0.05)
    assert value(prim, "physxCollision:restOffset") == pytest.approx(0.001)
    assert "PhysxCollisionAPI" in applied(prim)
    assert value(prim, "physics:collisionEnabled") is True


def test_22_collision_only_usd_field(stage):
    UsdGeom.Cube.Define(stage, "/World/c")
    w.define_collision_properties("/World/c", CollisionBaseCfg(collision_enabled=True), stage)
    prim = stage.GetPrimAtPath("/World/c")
    assert value(prim, "physics:collisionEnabled") is True
    assert "PhysxCollisionAPI" not in applied(prim)


def test_23_torsional_patch(stage):
    UsdGeom.Cube.Define(stage, "/World/c")
    w.define_collision_properties(
        "/World/c", PhysxCollisionPropertiesCfg(torsional_patch_radius=1.0), stage
    )
    prim = stage.GetPrimAtPath("/World/c")
    assert value(prim, "physxCollision:torsionalPatchRadius") == pytest.approx(1.0)
    assert "PhysxCollisionAPI" in applied(prim)


def test_24_newton_collision(stage):
    UsdGeom.Cube.Define(stage, "/World/c")
    UsdGeom.Cube.Define(stage, "/World/d")
    w.define_collision_properties(
        "/World/c", NewtonCollisionPropertiesCfg(contact_margin=0.01), stage
    )
    c = stage.GetPrimAtPath("/World/c")
    assert value(c, "newton:contactMargin") == pytest.approx(0.01)
    assert "NewtonCollisionAPI" in applied(c)
    w.define_collision_properties("/World/d", NewtonCollisionPropertiesCfg(), stage)
    assert "NewtonCollisionAPI" not in applied(stage.GetPrimAtPath("/World/d"))


def test_25_newton_collision_base_exception(stage):
    UsdGeom.Cube.Define(stage, "/World/c")
    w.define_collision_properties(
        "/World/c", NewtonCollisionPropertiesCfg(contact_offset=0.02), stage
    )
    c = stage.GetPrimAtPath("/World/c")
    assert value(c, "physxCollision:contactOffset") == pytest.approx(0.02)
    assert "PhysxCollisionAPI" in applied(c)
    assert not c.GetAttribute("physics:contactOffset")
    assert not c.GetAttribute("newton:contactOffset")


def test_26_mass(stage):
    UsdGeom.Cube.Define(stage, "/World/m")
    w.define_mass_properties("/World/m", MassPropertiesCfg(mass=1.0, density=100.0), stage)
    prim = stage.GetPrimAtPath("/World/m")
    assert value(prim, "physics:mass") == pytest.approx(1.0)
    assert value(prim, "physics:density") == pytest.approx(100.0)
    assert "PhysicsMassAPI" in applied(prim)
    UsdPhysics.MassAPI.Apply(UsdGeom.Cube.Define(stage, "/World/n").GetPrim())
    assert w.modify_mass_properties("/World/n", MassPropertiesCfg(mass=2.5), stage) == 1
    assert value(stage.GetPrimAtPath("/World/n"), "physics:mass") == pytest.approx(2.5)
