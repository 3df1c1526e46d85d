"""Physics cfg writers, scenarios 27-50 and §7.2: articulation

See docs/guides/physics-and-engine.md#cfgs.

roots, mesh collision, materials, traversal of assets, legacy names and shape spawners.
"""

from __future__ import annotations

import logging
import warnings

import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, UsdShade

from runtime.physics import (
    ArticulationRootBaseCfg,
    CollisionBaseCfg,
    JointDriveBaseCfg,
    MassPropertiesCfg,
    MeshCollisionBaseCfg,
    MujocoJointDrivePropertiesCfg,
    MujocoRigidBodyPropertiesCfg,
    NewtonArticulationRootPropertiesCfg,
    NewtonMaterialPropertiesCfg,
    NewtonMeshCollisionPropertiesCfg,
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
    RigidBodyMaterialBaseCfg,
)
from runtime.physics import writers as w
from runtime.physics.spawn import apply_asset_physics
from tests.helpers.physics_cfg import (  # noqa: E402
    ALL_CLASSES,
    applied,
    has_value,
    make_body,
    make_joint,
    value,
)


@pytest.fixture
def stage():
    st = Usd.Stage.CreateInMemory()
    UsdGeom.Xform.Define(st, "/World")
    return st


# ------------------------------------------------------------------ articulation root


def test_27_articulation_enabled(stage):
    UsdGeom.Xform.Define(stage, "/World/robot")
    w.define_articulation_root_properties(
        "/World/robot", ArticulationRootBaseCfg(articulation_enabled=False), stage
    )
    prim = stage.GetPrimAtPath("/World/robot")
    assert value(prim, "physxArticulation:articulationEnabled") is False
    assert "PhysxArticulationAPI" in applied(prim)


def test_28_fix_root_link_false_only(stage):
    UsdGeom.Xform.Define(stage, "/World/robot")
    w.define_articulation_root_properties(
        "/World/robot", ArticulationRootBaseCfg(fix_root_link=False), stage
    )
    prim = stage.GetPrimAtPath("/World/robot")
    assert "PhysxArticulationAPI" not in applied(prim)
    assert not [p for p in stage.Traverse() if p.IsA(UsdPhysics.Joint)]


def test_29_physx_self_collisions(stage):
    UsdGeom.Xform.Define(stage, "/World/robot")
    w.define_articulation_root_properties(
        "/World/robot", PhysxArticulationRootPropertiesCfg(enabled_self_collisions=True), stage
    )
    prim = stage.GetPrimAtPath("/World/robot")
    assert value(prim, "physxArticulation:enabledSelfCollisions") is True
    assert "PhysxArticulationAPI" in applied(prim)


def test_30_newton_self_collision(stage):
    prim = UsdGeom.Xform.Define(stage, "/World/robot").GetPrim()
    UsdPhysics.ArticulationRootAPI.Apply(prim)
    w.modify_articulation_root_properties(
        "/World/robot", NewtonArticulationRootPropertiesCfg(self_collision_enabled=True), stage
    )
    assert value(prim, "newton:selfCollisionEnabled") is True
    assert "NewtonArticulationRootAPI" in applied(prim)
    other = UsdGeom.Xform.Define(stage, "/World/other").GetPrim()
    UsdPhysics.ArticulationRootAPI.Apply(other)
    w.modify_articulation_root_properties(
        "/World/other", NewtonArticulationRootPropertiesCfg(), stage
    )
    assert "NewtonArticulationRootAPI" not in applied(other)


def test_31_newton_articulation_enabled_exception(stage):
    UsdGeom.Xform.Define(stage, "/World/robot")
    w.define_articulation_root_properties(
        "/World/robot", NewtonArticulationRootPropertiesCfg(articulation_enabled=False), stage
    )
    prim = stage.GetPrimAtPath("/World/robot")
    assert value(prim, "physxArticulation:articulationEnabled") is False
    assert "PhysxArticulationAPI" in applied(prim)


def test_32_fix_root_link_toggles_existing_world_joint(stage):
    root = UsdGeom.Xform.Define(stage, "/World/robot").GetPrim()
    UsdPhysics.ArticulationRootAPI.Apply(root)
    make_body(stage, "/World/robot/base")
    joint = make_joint(stage, "/World/robot/base/world_joint", "fixed", body1="/World/robot/base")
    w.modify_articulation_root_properties(
        "/World/robot", ArticulationRootBaseCfg(fix_root_link=True), stage
    )
    assert value(joint, "physics:jointEnabled") is True
    w.modify_articulation_root_properties(
        "/World/robot", ArticulationRootBaseCfg(fix_root_link=False), stage
    )
    assert value(joint, "physics:jointEnabled") is False
    assert len([p for p in stage.Traverse() if p.IsA(UsdPhysics.Joint)]) == 1


def test_33_fix_root_link_creates_world_joint(stage):
    xf = UsdGeom.Xform.Define(stage, "/World/robot")
    xf.AddTranslateOp().Set(Gf.Vec3d(1, 2, 3))
    root = xf.GetPrim()
    UsdPhysics.ArticulationRootAPI.Apply(root)
    UsdPhysics.RigidBodyAPI.Apply(root)
    w.modify_articulation_root_properties(
        "/World/robot",
        PhysxArticulationRootPropertiesCfg(fix_root_link=True, sleep_threshold=0.1),
        stage,
    )
    joints = [p for p in stage.Traverse() if p.IsA(UsdPhysics.Joint)]
    assert len(joints) == 1 and joints[0].IsA(UsdPhysics.FixedJoint)
    joint = UsdPhysics.FixedJoint(joints[0])
    assert joints[0].GetPath() == Sdf.Path("/World/robot/FixedJoint")
    assert joint.GetBody0Rel().GetTargets() == []
    assert joint.GetBody1Rel().GetTargets() == [Sdf.Path("/World/robot")]
    assert tuple(joint.GetLocalPos0Attr().Get()) == pytest.approx((1, 2, 3))
    assert joint.GetBreakForceAttr().Get() > 1e37 and joint.GetBreakTorqueAttr().Get() > 1e37
    world = stage.GetPrimAtPath("/World")
    assert world.HasAPI(UsdPhysics.ArticulationRootAPI)
    assert "PhysxArticulationAPI" in applied(world)
    assert value(world, "physxArticulation:sleepThreshold") == pytest.approx(0.1)
    assert not root.HasAPI(UsdPhysics.ArticulationRootAPI)
    assert "PhysxArticulationAPI" not in applied(root)


def test_33b_instanceable_root_joint_not_under_root(stage):
    xf = UsdGeom.Xform.Define(stage, "/World/robot")
    root = xf.GetPrim()
    UsdPhysics.ArticulationRootAPI.Apply(root)
    UsdPhysics.RigidBodyAPI.Apply(root)
    root.SetInstanceable(True)
    assert w.modify_articulation_root_properties_on_prim(
        root, ArticulationRootBaseCfg(fix_root_link=True)
    )
    joints = [p for p in stage.Traverse() if p.IsA(UsdPhysics.Joint)]
    assert [str(j.GetPath()) for j in joints] == ["/World/FixedJoint"]


def test_34_fix_root_link_without_rigid_body(stage):
    UsdGeom.Xform.Define(stage, "/World/robot")
    with pytest.raises(NotImplementedError, match="fix_root_link"):
        w.define_articulation_root_properties(
            "/World/robot", ArticulationRootBaseCfg(fix_root_link=True), stage
        )


# ------------------------------------------------------------------ mesh collision


def _mesh(stage, path="/World/mesh"):
    return UsdGeom.Mesh.Define(stage, path).GetPrim()


def test_35_mesh_base_token(stage):
    prim = _mesh(stage)
    w.define_mesh_collision_properties(
        "/World/mesh", MeshCollisionBaseCfg(mesh_approximation_name="boundingCube"), stage
    )
    assert value(prim, "physics:approximation") == "boundingCube"
    assert "PhysicsMeshCollisionAPI" in applied(prim)
    assert not [s for s in applied(prim) if s.startswith("Physx")]
    assert "MeshCollisionAPI" not in applied(prim)
    assert "PhysicsCollisionAPI" not in applied(prim)


def test_36_convex_hull_tuning(stage):
    prim = _mesh(stage)
    cfg = PhysxConvexHullPropertiesCfg(hull_vertex_limit=64, min_thickness=0.001)
    w.modify_mesh_collision_properties("/World/mesh", cfg, stage)
    assert value(prim, "physics:approximation") == "convexHull"
    assert value(prim, "physxConvexHullCollision:hullVertexLimit") == 64
    assert value(prim, "physxConvexHullCollision:minThickness") == pytest.approx(0.001)
    assert "PhysxConvexHullCollisionAPI" in applied(prim)


def test_37_convex_hull_default(stage):
    prim = _mesh(stage)
    w.modify_mesh_collision_properties("/World/mesh", PhysxConvexHullPropertiesCfg(), stage)
    assert value(prim, "physics:approximation") == "convexHull"
    assert "PhysxConvexHullCollisionAPI" not in applied(prim)


def test_38_newton_mesh(stage):
    prim = _mesh(stage)
    cfg = NewtonMeshCollisionPropertiesCfg(
        mesh_approximation_name="convexHull", max_hull_vertices=64
    )
    w.modify_mesh_collision_properties("/World/mesh", cfg, stage)
    assert value(prim, "newton:maxHullVertices") == 64
    assert "NewtonMeshCollisionAPI" in applied(prim)
    other = _mesh(stage, "/World/other")
    w.modify_mesh_collision_properties(
        "/World/other",
        NewtonMeshCollisionPropertiesCfg(mesh_approximation_name="convexHull"),
        stage,
    )
    assert "NewtonMeshCollisionAPI" not in applied(other)
    assert value(other, "physics:approximation") == "convexHull"


def test_39_newton_mesh_mixed_namespace(stage):
    prim = _mesh(stage)
    cfg = NewtonMeshCollisionPropertiesCfg(
        mesh_approximation_name="convexHull", contact_margin=0.005, max_hull_vertices=32
    )
    w.modify_mesh_collision_properties("/World/mesh", cfg, stage)
    assert value(prim, "physics:approximation") == "convexHull"
    assert value(prim, "newton:contactMargin") == pytest.approx(0.005)
    assert value(prim, "newton:maxHullVertices") == 32
    assert {"PhysicsMeshCollisionAPI", "NewtonMeshCollisionAPI", "NewtonCollisionAPI"} <= set(
        applied(prim)
    )


def test_40_bad_approximation_and_mesh_cfg_in_collision_writer(stage):
    prim = _mesh(stage)
    with pytest.raises(ValueError, match="boundingCube") as info:
        w.modify_mesh_collision_properties(
            "/World/mesh", MeshCollisionBaseCfg(mesh_approximation_name="box"), stage
        )
    assert "/World/mesh" in str(info.value) and "mesh_approximation_name" in str(info.value)
    UsdPhysics.CollisionAPI.Apply(prim)
    with pytest.raises(ValueError, match="meshApproximationName"):
        w.modify_collision_properties(
            "/World/mesh", NewtonMeshCollisionPropertiesCfg(contact_margin=0.01), stage
        )
    assert not prim.GetAttribute("newton:contactMargin")  # nothing half-written


def test_41_legacy_usd_api_physx_api():
    cfg = PhysxConvexHullPropertiesCfg()
    with pytest.warns(DeprecationWarning):
        assert cfg.usd_api == "MeshCollisionAPI"
    with pytest.warns(DeprecationWarning):
        assert cfg.physx_api == "PhysxConvexHullCollisionAPI"
    with pytest.warns(DeprecationWarning):
        assert NewtonMeshCollisionPropertiesCfg().physx_api is None
    with pytest.raises(AttributeError):
        _ = cfg.something_else


# ------------------------------------------------------------------ materials


def test_42_base_material(stage):
    cfg = RigidBodyMaterialBaseCfg(static_friction=0.7, dynamic_friction=0.6, restitution=0.1)
    prim = cfg.func("/World/Looks/mat", cfg, stage)
    assert prim.IsA(UsdShade.Material)
    assert value(prim, "physics:staticFriction") == pytest.approx(0.7)
    assert value(prim, "physics:dynamicFriction") == pytest.approx(0.6)
    assert value(prim, "physics:restitution") == pytest.approx(0.1)
    assert "PhysicsMaterialAPI" in applied(prim)
    assert "PhysxMaterialAPI" not in applied(prim)
    assert not prim.GetAttribute("physics:func")


def test_43_physx_material(stage):
    cfg = PhysxRigidBodyMaterialCfg(static_friction=0.7, compliant_contact_stiffness=100.0)
    prim = w.spawn_rigid_body_material("/World/mat", cfg, stage)
    assert value(prim, "physics:staticFriction") == pytest.approx(0.7)
    assert value(prim, "physxMaterial:compliantContactStiffness") == pytest.approx(100.0)
    assert "PhysxMaterialAPI" in applied(prim)


def test_44_newton_material(stage):
    cfg = NewtonMaterialPropertiesCfg(torsional_friction=0.3, rolling_friction=0.001)
    prim = w.spawn_rigid_body_material("/World/mat", cfg, stage)
    assert value(prim, "newton:torsionalFriction") == pytest.approx(0.3)
    assert value(prim, "newton:rollingFriction") == pytest.approx(0.001)
    assert "NewtonMaterialAPI" in applied(prim)
    plain = w.spawn_rigid_body_material("/World/mat2", NewtonMaterialPropertiesCfg(), stage)
    assert "NewtonMaterialAPI" not in applied(plain)
    assert value(plain, "physics:staticFriction") == pytest.approx(0.5)
    assert value(plain, "physics:dynamicFriction") == pytest.approx(0.5)
    assert value(plain, "physics:restitution") == pytest.approx(0.0)
    assert plain.GetAttribute("physics:restitution").HasAuthoredValue()


def test_45_material_errors_and_combine_mode_token(stage):
    with pytest.raises(ValueError, match="/World"):
        w.spawn_rigid_body_material("/World", RigidBodyMaterialBaseCfg(), stage)
    prim = w.spawn_rigid_body_material(
        "/World/mat", PhysxRigidBodyMaterialCfg(friction_combine_mode="max"), stage
    )
    attr = prim.GetAttribute("physxMaterial:frictionCombineMode")
    assert attr.Get() == "max" and attr.GetTypeName() == Sdf.ValueTypeNames.Token


# ------------------------------------------------------------------ traversal / spawner


def test_46_invalid_root(stage):
    with pytest.raises(ValueError, match="/World/asset_xyz"):
        w.modify_rigid_body_properties("/World/asset_xyz", RigidBodyBaseCfg(), stage)


def test_47_instanced_asset(stage, caplog):
    proto = stage.CreateClassPrim("/Prototypes/link_mesh")
    UsdGeom.Cube.Define(stage, "/Prototypes/link_mesh/geom")
    UsdPhysics.RigidBodyAPI.Apply(stage.GetPrimAtPath("/Prototypes/link_mesh/geom"))
    robot = UsdGeom.Xform.Define(stage, "/World/robot").GetPrim()
    UsdPhysics.ArticulationRootAPI.Apply(robot)
    link = make_body(stage, "/World/robot/link0", cube=False)
    UsdPhysics.MassAPI.Apply(link)
    visuals = UsdGeom.Xform.Define(stage, "/World/robot/link0_visuals").GetPrim()
    visuals.GetInherits().AddInherit(proto.GetPath())
    visuals.SetInstanceable(True)
    make_joint(stage, "/World/robot/j0", body1="/World/robot/link0")
    assert visuals.IsInstance()
    assert (
        w.modify_rigid_body_properties(
            "/World/robot", MujocoRigidBodyPropertiesCfg(gravcomp=1.0), stage
        )
        == 1
    )
    assert w.modify_mass_properties("/World/robot", MassPropertiesCfg(mass=2.0), stage) == 1
    assert (
        w.modify_articulation_root_properties(
            "/World/robot", ArticulationRootBaseCfg(articulation_enabled=True), stage
        )
        == 1
    )
    assert (
        w.modify_joint_drive_properties("/World/robot", JointDriveBaseCfg(damping=1.0), stage) == 1
    )
    proxy = stage.GetPrimAtPath("/World/robot/link0_visuals/geom")
    assert not proxy.GetAttribute("mjc:gravcomp")
    with caplog.at_level(logging.WARNING, logger="runtime.physics.writers"):
        assert (
            w.modify_rigid_body_properties(
                "/World/robot/link0_visuals", RigidBodyBaseCfg(rigid_body_enabled=True), stage
            )
            == 0
        )
    assert "modify_rigid_body_properties" in caplog.text
    assert "/World/robot/link0_visuals" in caplog.text


def test_48_nested_rigid_bodies(stage):
    make_body(stage, "/World/A", cube=False)
    make_body(stage, "/World/A/B")
    assert (
        w.modify_rigid_body_properties("/World", MujocoRigidBodyPropertiesCfg(gravcomp=0.3), stage)
        == 1
    )
    assert has_value(stage.GetPrimAtPath("/World/A"), "mjc:gravcomp")
    assert not stage.GetPrimAtPath("/World/A/B").GetAttribute("mjc:gravcomp")


def _asset(stage):
    UsdPhysics.ArticulationRootAPI.Apply(UsdGeom.Xform.Define(stage, "/World/robot").GetPrim())
    for i in range(3):
        make_body(stage, f"/World/robot/link{i}")
    make_joint(stage, "/World/robot/j1", body0="/World/robot/link0", body1="/World/robot/link1")
    make_joint(stage, "/World/robot/j2", body0="/World/robot/link1", body1="/World/robot/link2")


@pytest.mark.parametrize(
    ("rigid", "expected"),
    [
        (None, 1.0),
        (PhysxRigidBodyPropertiesCfg(linear_damping=0.1), 1.0),
        (MujocoRigidBodyPropertiesCfg(), 1.0),
        (MujocoRigidBodyPropertiesCfg(gravcomp=0.5), 0.5),
        (MujocoRigidBodyPropertiesCfg(gravcomp=0.0), 0.0),
    ],
)
def test_49_gravcomp_auto_enable(stage, rigid, expected):
    _asset(stage)
    report = apply_asset_physics(
        stage,
        "/World/robot",
        rigid_props=rigid,
        joint_drive_props=MujocoJointDrivePropertiesCfg(actuatorgravcomp=True),
    )
    for i in range(3):
        assert value(stage.GetPrimAtPath(f"/World/robot/link{i}"), "mjc:gravcomp") == pytest.approx(
            expected
        )
    assert report.gravcomp_auto_enabled is (expected == 1.0)
    assert report.modified["joint_drive_props"] == 2


def test_49b_no_gravcomp_without_actuatorgravcomp(stage):
    _asset(stage)
    apply_asset_physics(
        stage,
        "/World/robot",
        joint_drive_props=MujocoJointDrivePropertiesCfg(actuatorgravcomp=False),
    )
    for i in range(3):
        assert not stage.GetPrimAtPath(f"/World/robot/link{i}").GetAttribute("mjc:gravcomp")
    assert value(stage.GetPrimAtPath("/World/robot/j1"), "mjc:actuatorgravcomp") is False


# ------------------------------------------------------------------ 50: legacy names, shims

LEGACY = {
    "RigidBodyPropertiesCfg": PhysxRigidBodyPropertiesCfg,
    "JointDrivePropertiesCfg": PhysxJointDrivePropertiesCfg,
    "CollisionPropertiesCfg": PhysxCollisionPropertiesCfg,
    "ArticulationRootPropertiesCfg": PhysxArticulationRootPropertiesCfg,
    "RigidBodyMaterialCfg": PhysxRigidBodyMaterialCfg,
    "MeshCollisionPropertiesCfg": MeshCollisionBaseCfg,
    "ConvexHullPropertiesCfg": PhysxConvexHullPropertiesCfg,
    "ConvexDecompositionPropertiesCfg": PhysxConvexDecompositionPropertiesCfg,
    "TriangleMeshPropertiesCfg": PhysxTriangleMeshPropertiesCfg,
    "TriangleMeshSimplificationPropertiesCfg": PhysxTriangleMeshSimplificationPropertiesCfg,
    "SDFMeshPropertiesCfg": PhysxSDFMeshPropertiesCfg,
    "FixedTendonPropertiesCfg": None,
    "SpatialTendonPropertiesCfg": None,
}


@pytest.mark.parametrize("name", sorted(LEGACY))
def test_50_legacy_class_names_warn_once(name):
    from runtime.physics import cfg as core
    from runtime.physics import legacy

    cls = getattr(legacy, name)
    assert getattr(core, name) is cls
    if LEGACY[name] is not None:
        assert issubclass(cls, LEGACY[name])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cls()
    messages = [str(c.message) for c in caught if issubclass(c.category, DeprecationWarning)]
    assert len(messages) == 1 and "5.0" in messages[0]


def test_50_legacy_joint_drive_alias_warns_twice_and_new_names_do_not():
    from runtime.physics.legacy import JointDrivePropertiesCfg

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cfg = JointDrivePropertiesCfg(max_effort=3.0)
    assert len([c for c in caught if issubclass(c.category, DeprecationWarning)]) == 2
    assert cfg.max_force == 3.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for cls in ALL_CLASSES:
            cls(func=w.spawn_rigid_body_material) if cls is PhysicsMaterialCfg else cls()


def test_50_forwarded_names_are_identical_and_listed():
    from runtime.physics import cfg as core
    from runtime.physics import newton, physx

    assert core.PhysxRigidBodyPropertiesCfg is physx.PhysxRigidBodyPropertiesCfg
    assert core.MujocoRigidBodyPropertiesCfg is newton.MujocoRigidBodyPropertiesCfg
    assert "NewtonMeshCollisionPropertiesCfg" in dir(core)
    assert "PhysxRigidBodyPropertiesCfg" in dir(core)
    with pytest.raises(AttributeError):
        _ = core.NoSuchCfg


# ------------------------------------------------------------------ §7.2 shape spawners


@pytest.mark.parametrize("as_mesh", [False, True])
def test_spawn_shape_places_cfgs(stage, as_mesh):
    from runtime.physics import spawn_shape

    spawn_shape(
        stage,
        "/World/box",
        "cuboid",
        size=(0.2, 0.3, 0.4),
        as_mesh=as_mesh,
        collision_props=CollisionBaseCfg(contact_offset=0.02),
        mass_props=MassPropertiesCfg(mass=2.0),
        rigid_props=MujocoRigidBodyPropertiesCfg(gravcomp=0.5),
        physics_material=RigidBodyMaterialBaseCfg(dynamic_friction=0.8),
    )
    root = stage.GetPrimAtPath("/World/box")
    geom = stage.GetPrimAtPath("/World/box/geometry/mesh")
    assert geom.IsA(UsdGeom.Mesh) is as_mesh
    assert "PhysicsCollisionAPI" in applied(geom)
    assert value(geom, "physxCollision:contactOffset") == pytest.approx(0.02)
    assert {"PhysicsRigidBodyAPI", "PhysicsMassAPI"} <= set(applied(root))
    assert value(root, "physics:mass") == pytest.approx(2.0)
    assert value(root, "mjc:gravcomp") == pytest.approx(0.5)
    assert "PhysicsRigidBodyAPI" not in applied(geom)
    if as_mesh:
        assert value(geom, "physics:approximation") == "boundingCube"
    bound = UsdShade.MaterialBindingAPI(geom).ComputeBoundMaterial("physics")[0]
    assert bound.GetPrim().GetAttribute("physics:dynamicFriction").Get() == pytest.approx(0.8)
    with pytest.raises(ValueError, match="/World/box"):
        spawn_shape(stage, "/World/box", "sphere")


def test_spawn_mesh_shape_mass_only_with_rigid_props(stage):
    from runtime.physics import spawn_shape

    spawn_shape(
        stage,
        "/World/s",
        "sphere",
        as_mesh=True,
        mass_props=MassPropertiesCfg(mass=1.0),
        collision_props=CollisionBaseCfg(),
    )
    root = stage.GetPrimAtPath("/World/s")
    assert "PhysicsMassAPI" not in applied(root)
    geom = stage.GetPrimAtPath("/World/s/geometry/mesh")
    assert value(geom, "physics:approximation") == "boundingSphere"
    spawn_shape(stage, "/World/c", "capsule", mass_props=MassPropertiesCfg(mass=1.0))
    assert "PhysicsMassAPI" in applied(stage.GetPrimAtPath("/World/c"))


def test_cfg_classes_import_without_pxr():
    import subprocess
    import sys

    code = (
        "import sys, runtime.physics, runtime.physics.config, runtime.physics.legacy;"
        "runtime.physics.MujocoRigidBodyPropertiesCfg(gravcomp=1.0);"
        "assert 'pxr' not in sys.modules, 'pxr imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
