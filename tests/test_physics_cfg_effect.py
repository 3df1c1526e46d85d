"""Physics cfgs change the MuJoCo simulation (runtime.engine.MujocoEngine built from USD).

Oracles: the Panda's behaviour under gravity (holds vs sags), free fall, Coulomb sliding
distance v^2 / (2 mu g), and PhysX rest-offset semantics. The cfgs are authored through the
public entry points (author_physics_layer / apply_asset_physics), never by hand.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
from pxr import Gf, Usd, UsdGeom, UsdPhysics

from runtime.physics import (
    CollisionBaseCfg,
    JointDriveBaseCfg,
    MujocoJointDrivePropertiesCfg,
    MujocoRigidBodyPropertiesCfg,
    NewtonCollisionPropertiesCfg,
    PhysxRigidBodyPropertiesCfg,
    RigidBodyBaseCfg,
    RigidBodyMaterialBaseCfg,
    apply_asset_physics,
    author_physics_layer,
)

mujoco = pytest.importorskip("mujoco")
from runtime.engine import MujocoEngine  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PANDA_SCENE = REPO / "scenes" / "panda_table.usda"
G = 9.81


# ------------------------------------------------------------------ Panda gravity compensation


def _panda_drift(tmp_path, name, **cfgs):
    layer = tmp_path / f"{name}.usda"
    author_physics_layer(PANDA_SCENE, layer, root_path="/World/Panda", **cfgs)
    engine = MujocoEngine(Usd.Stage.Open(str(layer)), "/World/Panda")
    q0 = engine.state().joint_positions.copy()
    engine.step(int(round(2.0 / engine.dt)))
    q1 = engine.state().joint_positions
    return float(np.max(np.abs(q1 - q0)[:7])), engine


@pytest.mark.skipif(not PANDA_SCENE.exists(), reason="Panda scene not built")
def test_panda_holds_with_gravcomp_and_sags_without(tmp_path):
    drift_on, engine = _panda_drift(
        tmp_path,
        "gravcomp",
        rigid_props=MujocoRigidBodyPropertiesCfg(gravcomp=1.0),
        joint_drive_props=MujocoJointDrivePropertiesCfg(actuatorgravcomp=True, stiffness=0.0),
    )
    # zero stiffness really reached the engine: no position servo left on the arm joints
    assert all(d.drive_mode != "position" for d in engine.dofs[:7])
    assert np.count_nonzero(engine.model.body_gravcomp == 1.0) >= 10  # every Panda link
    assert drift_on < 1e-3
    drift_off, _ = _panda_drift(
        tmp_path, "plain", joint_drive_props=JointDriveBaseCfg(stiffness=0.0)
    )
    assert drift_off > 0.1


@pytest.mark.skipif(not PANDA_SCENE.exists(), reason="Panda scene not built")
def test_panda_actuatorgravcomp_alone_auto_enables_body_gravcomp(tmp_path):
    drift, engine = _panda_drift(
        tmp_path,
        "auto",
        joint_drive_props=MujocoJointDrivePropertiesCfg(actuatorgravcomp=True, stiffness=0.0),
    )
    assert drift < 1e-3
    arm = [engine.model.joint(d.joint_path).id for d in engine.dofs[:7]]
    assert engine.model.jnt_actgravcomp[arm].all()


# ------------------------------------------------------------------ small synthetic scenes


def _scene():
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdPhysics.Scene.Define(stage, "/physicsScene")
    ground = UsdGeom.Cube.Define(stage, "/World/ground")
    ground.CreateSizeAttr(1.0)
    ground.AddScaleOp().Set(Gf.Vec3f(20.0, 20.0, 0.2))
    ground.AddTranslateOp(opSuffix="pre", precision=UsdGeom.XformOp.PrecisionDouble)
    UsdGeom.Xformable(ground).ClearXformOpOrder()
    ground.AddTranslateOp().Set(Gf.Vec3d(0, 0, -0.1))
    ground.AddScaleOp().Set(Gf.Vec3f(20.0, 20.0, 0.2))
    UsdPhysics.CollisionAPI.Apply(ground.GetPrim())
    return stage


def _box(stage, path, z, size=0.2):
    cube = UsdGeom.Cube.Define(stage, path)
    cube.CreateSizeAttr(size)
    cube.AddTranslateOp().Set(Gf.Vec3d(0, 0, z))
    prim = cube.GetPrim()
    UsdPhysics.RigidBodyAPI.Apply(prim)
    UsdPhysics.CollisionAPI.Apply(prim)
    UsdPhysics.MassAPI.Apply(prim).CreateMassAttr(1.0)
    return prim


def _body_z(engine, path):
    state = engine.state()
    return float(state.body_positions[state.body_paths.index(path)][2])


def test_disable_gravity_stops_free_fall():
    stage = _scene()
    _box(stage, "/World/floating", 2.0)
    _box(stage, "/World/falling", 2.0).GetAttribute("xformOp:translate").Set(Gf.Vec3d(2, 0, 2))
    n = apply_asset_physics(
        stage, "/World/floating", rigid_props=RigidBodyBaseCfg(disable_gravity=True)
    )
    assert n.modified["rigid_props"] == 1
    engine = MujocoEngine(stage, dt=0.002)
    engine.step(250)  # 0.5 s
    t = engine.state().time
    assert _body_z(engine, "/World/floating") == pytest.approx(2.0, abs=1e-6)
    assert _body_z(engine, "/World/falling") == pytest.approx(
        2.0 - 0.5 * G * t * t, abs=6e-3
    )  # semi-implicit Euler: O(g t dt)


def test_mujoco_gravcomp_fraction():
    stage = _scene()
    _box(stage, "/World/half", 2.0)
    apply_asset_physics(
        stage, "/World/half", rigid_props=MujocoRigidBodyPropertiesCfg(gravcomp=0.5)
    )
    engine = MujocoEngine(stage, dt=0.002)
    engine.step(250)
    t = engine.state().time
    assert _body_z(engine, "/World/half") == pytest.approx(2.0 - 0.25 * G * t * t, abs=6e-3)


def _slide_distance(mu: float) -> float:
    stage = _scene()
    box = _box(stage, "/World/box", 0.1)
    apply_asset_physics(
        stage,
        "/World",
        physics_material=RigidBodyMaterialBaseCfg(static_friction=mu, dynamic_friction=mu),
    )
    engine = MujocoEngine(stage, dt=0.001)
    engine.step(50)  # settle
    engine.data.qvel[0] = 2.0  # slide along +x at 2 m/s
    x0 = float(engine.data.qpos[0])
    engine.step(2000)
    assert abs(engine.data.qvel[0]) < 1e-2  # came to rest
    assert box.IsValid()
    return float(engine.data.qpos[0]) - x0


@pytest.mark.parametrize("mu", [0.2, 0.6])
def test_material_friction_gives_coulomb_sliding_distance(mu):
    expected = 2.0**2 / (2.0 * mu * G)
    assert _slide_distance(mu) == pytest.approx(expected, rel=0.1)


def test_contact_margins_reach_the_model():
    stage = _scene()
    _box(stage, "/World/a", 0.5)
    _box(stage, "/World/b", 0.5).GetAttribute("xformOp:translate").Set(Gf.Vec3d(2, 0, 0.5))
    apply_asset_physics(
        stage,
        "/World/a",
        collision_props=NewtonCollisionPropertiesCfg(contact_margin=0.03, contact_gap=0.01),
    )
    apply_asset_physics(
        stage, "/World/b", collision_props=CollisionBaseCfg(contact_offset=0.04, rest_offset=0.01)
    )
    engine = MujocoEngine(stage, dt=0.002)
    model = engine.model
    ga = (
        model.geom("/World/a").id
        if _has_geom(model, "/World/a")
        else model.body_geomadr[model.body("/World/a").id]
    )
    gb = (
        model.geom("/World/b").id
        if _has_geom(model, "/World/b")
        else model.body_geomadr[model.body("/World/b").id]
    )
    assert model.geom_margin[ga] == pytest.approx(0.03)
    assert model.geom_gap[ga] == pytest.approx(0.01)
    # PhysX offsets: rest offset = resting separation (margin), contact offset = detection
    assert model.geom_margin[gb] == pytest.approx(0.01)
    assert model.geom_gap[gb] == pytest.approx(0.03)


def _has_geom(model, name):
    try:
        model.geom(name)
    except KeyError:
        return False
    return True


def test_rest_offset_sets_resting_separation():
    stage = _scene()
    _box(stage, "/World/box", 0.15)
    apply_asset_physics(
        stage, "/World/box", collision_props=CollisionBaseCfg(contact_offset=0.03, rest_offset=0.02)
    )
    engine = MujocoEngine(stage, dt=0.002)
    engine.step(1000)
    z_offset = _body_z(engine, "/World/box")
    stage2 = _scene()
    _box(stage2, "/World/box", 0.15)
    engine2 = MujocoEngine(stage2, dt=0.002)
    engine2.step(1000)
    z_plain = _body_z(engine2, "/World/box")
    assert z_offset - z_plain == pytest.approx(0.02, abs=2e-3)


def test_drive_gains_and_force_limit_reach_the_model():
    stage = _scene()
    base = _box(stage, "/World/base", 1.0)
    UsdPhysics.RigidBodyAPI(base).CreateKinematicEnabledAttr(True)
    link = _box(stage, "/World/link", 1.0)
    link.GetAttribute("xformOp:translate").Set(Gf.Vec3d(0.5, 0, 1.0))
    joint = UsdPhysics.RevoluteJoint.Define(stage, "/World/hinge")
    joint.CreateBody0Rel().SetTargets(["/World/base"])
    joint.CreateBody1Rel().SetTargets(["/World/link"])
    joint.CreateAxisAttr("Y")
    joint.CreateLocalPos0Attr(Gf.Vec3f(0.25, 0, 0))
    joint.CreateLocalPos1Attr(Gf.Vec3f(-0.25, 0, 0))
    apply_asset_physics(
        stage,
        "/World",
        joint_drive_props=JointDriveBaseCfg(stiffness=200.0, damping=5.0, max_force=30.0),
    )
    engine = MujocoEngine(stage, dt=0.002)
    model = engine.model
    act = 0
    assert model.actuator_gainprm[act, 0] == pytest.approx(200.0, rel=1e-5)  # N m/rad
    assert model.actuator_biasprm[act, 1] == pytest.approx(-200.0, rel=1e-5)
    assert model.actuator_biasprm[act, 2] == pytest.approx(-5.0, rel=1e-5)
    assert tuple(model.actuator_forcerange[act]) == pytest.approx((-30.0, 30.0))


def test_engine_reports_ignored_attributes_once(caplog):
    stage = _scene()
    _box(stage, "/World/box", 0.5)
    apply_asset_physics(
        stage,
        "/World/box",
        rigid_props=PhysxRigidBodyPropertiesCfg(linear_damping=0.3, disable_gravity=True),
    )
    with caplog.at_level(logging.WARNING, logger="runtime.engine"):
        MujocoEngine(stage, dt=0.002)
    messages = [r.getMessage() for r in caplog.records if "no equivalent" in r.getMessage()]
    assert len(messages) == 1
    assert "physxRigidBody:linearDamping" in messages[0]
    assert "disableGravity" not in messages[0]


@pytest.mark.parametrize("as_mesh", [False, True])
def test_spawned_shape_rests_on_ground(as_mesh):
    from runtime.physics import MassPropertiesCfg, spawn_shape

    stage = _scene()
    spawn_shape(
        stage,
        "/World/crate",
        "cuboid",
        size=(0.3, 0.3, 0.2),
        translation=(0.0, 0.0, 0.5),
        as_mesh=as_mesh,
        collision_props=CollisionBaseCfg(),
        mass_props=MassPropertiesCfg(mass=3.0),
        rigid_props=RigidBodyBaseCfg(),
    )
    engine = MujocoEngine(stage, dt=0.002)
    engine.step(1000)
    assert _body_z(engine, "/World/crate") == pytest.approx(0.1, abs=3e-3)
    body = engine.model.body("/World/crate").id
    assert engine.model.body_mass[body] == pytest.approx(3.0)


@pytest.mark.skipif(not PANDA_SCENE.exists(), reason="Panda scene not built")
def test_self_collision_flag_reaches_the_model(tmp_path):
    from runtime.physics import NewtonArticulationRootPropertiesCfg

    def excluded_pairs(**cfgs):
        layer = tmp_path / f"sc{len(cfgs)}.usda"
        author_physics_layer(PANDA_SCENE, layer, root_path="/World/Panda", overwrite=True, **cfgs)
        return MujocoEngine(Usd.Stage.Open(str(layer)), "/World/Panda").model.nexclude

    plain = excluded_pairs()
    off = excluded_pairs(
        articulation_props=NewtonArticulationRootPropertiesCfg(self_collision_enabled=False)
    )
    assert off > plain
