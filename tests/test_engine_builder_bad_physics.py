"""USD physics -> MuJoCo builder: bad physics named by prim and attribute, skipped meshes,
convex hulls, initial velocities, floating bases, disabled bodies, D6 drives, welds.
"""

from __future__ import annotations

import logging
import math
import os

import mujoco
import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from runtime.engine import MujocoEngine
from runtime.errors import SchemaError
from tests.helpers.engine_stages import (  # noqa: E402
    ASSETS,
    _erd,
    body,
    ground,
    new_stage,
    revolute,
    tet_stage,
)

# --------------------------------------------------------------------- bad physics


def _bad_mass(stage):
    body(stage, "/World/b", mass=-1.0, inertia=(1, 1, 1))


def _bad_inertia(stage):
    body(stage, "/World/b", mass=1.0, inertia=(-1, 1, 1))


def _zero_inertia_component(stage):
    body(stage, "/World/b", mass=1.0, inertia=(0, 1, 1))


def _triangle(stage):
    body(stage, "/World/b", mass=1.0, inertia=(0.1, 0.1, 1.0))


def _nan_transform(stage):
    prim = body(stage, "/World/b", mass=1.0, inertia=(1, 1, 1))
    UsdGeom.Xformable(prim).GetOrderedXformOps()[0].Set(Gf.Vec3d(float("nan"), 0, 0))


def _nan_joint_frame(stage):
    body(stage, "/World/b", mass=1.0, inertia=(1, 1, 1))
    j = revolute(stage, "/World/j", None, "/World/b")
    j.CreateLocalPos0Attr(Gf.Vec3f(float("nan"), 0, 0))


def _distance_joint(stage):
    body(stage, "/World/b", mass=1.0, inertia=(1, 1, 1))
    j = UsdPhysics.DistanceJoint.Define(stage, "/World/j")
    j.CreateBody1Rel().SetTargets(["/World/b"])


def _loop(stage):
    for name in ("a", "b", "c"):
        body(stage, f"/World/{name}", mass=1.0, inertia=(1, 1, 1), shape=None)
    for k, (b0, b1) in enumerate((("a", "b"), ("b", "c"), ("c", "a"))):
        j = UsdPhysics.PrismaticJoint.Define(stage, f"/World/j{k + 1}")  # prismatic loop
        j.CreateBody0Rel().SetTargets([f"/World/{b0}"])
        j.CreateBody1Rel().SetTargets([f"/World/{b1}"])


@pytest.mark.parametrize(
    "make, path, attribute",
    [
        (_bad_mass, "/World/b", "physics:mass"),
        (_bad_inertia, "/World/b", "physics:diagonalInertia"),
        (_zero_inertia_component, "/World/b", "physics:diagonalInertia"),
        (_triangle, "/World/b", "physics:diagonalInertia"),
        (_nan_transform, "/World/b", "xformOp"),
        (_nan_joint_frame, "/World/j", "physics:localPos0/localRot0"),
        (_distance_joint, "/World/j", ""),
        (_loop, "/World/j", ""),
    ],
)
def test_bad_physics_raises_schema_error(make, path, attribute):
    stage = new_stage()
    make(stage)
    with pytest.raises(SchemaError) as info:
        MujocoEngine(stage)
    assert info.value.prim_path.startswith(path)
    assert info.value.attribute == attribute
    assert path in str(info.value)


def test_mesh_without_points_is_skipped_with_warning(caplog):
    stage = new_stage()
    body(stage, "/World/b", pos=(0, 0, 1), mass=1.0, inertia=(0.1, 0.1, 0.1), shape=None)
    mesh = UsdGeom.Mesh.Define(stage, "/World/b/empty")
    UsdPhysics.CollisionAPI.Apply(mesh.GetPrim())
    UsdPhysics.MeshCollisionAPI.Apply(mesh.GetPrim()).CreateApproximationAttr("convexHull")
    with caplog.at_level(logging.WARNING, logger="runtime.engine"):
        engine = MujocoEngine(stage)
    assert engine.model.ngeom == 0
    assert any("/World/b/empty" in r.message and "no points" in r.message for r in caplog.records)
    engine.step(5)  # runs, no crash


def test_mesh_collider_convex_hull():
    engine = MujocoEngine(tet_stage(), dt=0.002)
    assert engine.model.ngeom == 2 and engine.model.nmesh == 1
    engine.step(1000)
    # resting on its flat face: the body origin is 0.1 above the ground
    assert engine.state().body_positions[0, 2] == pytest.approx(0.1, abs=3e-3)


def test_authored_initial_velocities():
    """physics:velocity is the COM velocity (world), physics:angularVelocity in deg/s."""
    stage = new_stage(gravity=0.0)
    prim = body(
        stage,
        "/World/b",
        pos=(0, 0, 1),
        mass=1.0,
        inertia=(0.1, 0.1, 0.1),
        com=(0.2, 0, 0),
        shape=None,
    )
    rb = UsdPhysics.RigidBodyAPI(prim)
    rb.CreateVelocityAttr(Gf.Vec3f(1.0, 0.0, 0.0))
    rb.CreateAngularVelocityAttr(Gf.Vec3f(0.0, 0.0, 90.0))
    engine = MujocoEngine(stage, dt=0.0005)
    state = engine.state()
    np.testing.assert_allclose(state.body_linear_velocities[0], [1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(state.body_angular_velocities[0], [0, 0, math.pi / 2], atol=1e-12)
    # the COM moves in a straight line at 1 m/s (no gravity): check after 1 s (first-order
    # integration error of the spinning free body ~ dt)
    engine.step(2000)
    state = engine.state()
    com = state.body_positions[0] + _rotate(state.body_orientations[0], state.body_com_local[0])
    np.testing.assert_allclose(com, [0.2 + 1.0, 0, 1], atol=5e-4)
    np.testing.assert_allclose(state.body_linear_velocities[0], [1, 0, 0], atol=5e-4)


def _rotate(q, v):
    m = np.zeros(9)
    mujoco.mju_quat2Mat(m, q)
    return m.reshape(3, 3) @ v


def test_floating_solo12_rests_on_ground_with_its_weight():
    """Floating base (root joint deactivated), self-collisions off on the articulation root:
    once settled, the ground carries the robot's weight (total mass from Pinocchio)."""
    pin = pytest.importorskip("pinocchio")
    stage = Usd.Stage.Open(os.path.join(ASSETS, "solo12", "solo.usda"))
    stage.GetPrimAtPath("/solo/Physics/root_joint").SetActive(False)
    stage.GetPrimAtPath("/solo/Geometry/base_link").CreateAttribute(
        "physxArticulation:enabledSelfCollisions", Sdf.ValueTypeNames.Bool
    ).Set(False)
    plane = ground(stage, "/Ground")
    UsdGeom.Xformable(plane).AddTranslateOp().Set(Gf.Vec3d(0, 0, -0.35))
    engine = MujocoEngine(stage, dt=0.002)
    m = engine.model
    assert m.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE and len(engine.dofs) == 12
    pm = pin.buildModelFromUrdf(
        os.path.join(_erd(), "solo_description/robots/solo12.urdf"), pin.JointModelFreeFlyer()
    )
    total_mass = pin.computeTotalMass(pm)
    assert m.body_mass.sum() == pytest.approx(total_mass, rel=1e-6)
    engine.step(1500)
    state = engine.state()
    ground_index = state.body_paths.index("/Ground")
    assert state.contact_count > 0
    assert np.all(state.contact_body1 == ground_index)  # no self-contacts
    weight = state.contact_impulses.sum(axis=0) / engine.dt
    np.testing.assert_allclose(weight, [0, 0, total_mass * 9.81], atol=0.02 * total_mass * 9.81)


def test_joint_to_disabled_body_uses_its_world_frame(caplog):
    """A joint to a body with rigidBodyEnabled = false attaches to the world at that body's
    pose (the joint frame is local to the disabled body)."""
    stage = new_stage()
    base = body(stage, "/World/base", pos=(1.0, 2.0, 3.0), mass=1.0, inertia=(0.1, 0.1, 0.1))
    UsdPhysics.RigidBodyAPI(base).CreateRigidBodyEnabledAttr(False)
    body(stage, "/World/link", pos=(1.0, 2.0, 3.5), mass=1.0, inertia=(0.1, 0.1, 0.1), shape=None)
    revolute(stage, "/World/j", "/World/base", "/World/link", axis="Z", pos0=(0, 0, 0.5))
    with caplog.at_level(logging.WARNING, logger="runtime.engine"):
        engine = MujocoEngine(stage, dt=0.01)
    assert any("/World/base" in r.message and "static" in r.message for r in caplog.records)
    engine.step(50)
    state = engine.state()
    link = state.body_paths.index("/World/link")
    np.testing.assert_allclose(state.body_positions[link], [1.0, 2.0, 3.5], atol=1e-9)
    # its collider stays touchable as a static collider (listed by collider prim path)
    assert "/World/base/collider" in state.body_paths


def test_no_physics_scene_uses_up_axis_gravity(caplog):
    stage = new_stage(scene=False)
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.y)
    body(stage, "/World/b", mass=1.0, inertia=(0.1, 0.1, 0.1))
    with caplog.at_level(logging.WARNING, logger="runtime.engine"):
        engine = MujocoEngine(stage)
    np.testing.assert_allclose(engine.state().gravity, [0, -9.81, 0])
    assert engine.dt == pytest.approx(1.0 / 60.0)
    assert any("no PhysicsScene" in r.message for r in caplog.records)


def test_d6_axis_drive():
    stage = new_stage(gravity=0.0)
    body(stage, "/World/a", mass=1.0, inertia=(0.1, 0.1, 0.1), shape=None)
    d6 = UsdPhysics.Joint.Define(stage, "/World/d6")
    d6.CreateBody1Rel().SetTargets(["/World/a"])
    for token in ("transX", "transY", "transZ", "rotX", "rotY"):
        lim = UsdPhysics.LimitAPI.Apply(d6.GetPrim(), token)
        lim.CreateLowAttr(1.0)
        lim.CreateHighAttr(-1.0)
    drive = UsdPhysics.DriveAPI.Apply(d6.GetPrim(), "rotZ")
    drive.CreateStiffnessAttr(0.2)  # N m / deg
    drive.CreateDampingAttr(0.05)
    drive.CreateTargetPositionAttr(45.0)  # deg
    engine = MujocoEngine(stage, dt=0.002)
    assert engine.dof_names == ("d6:RotZ",)
    assert engine.dofs[0].drive_mode == "position"
    engine.step(2000)
    state = engine.state()
    assert state.joint_positions[0] == pytest.approx(math.pi / 4, abs=1e-4)
    rot = _rotate(state.body_orientations[0], np.array([1.0, 0.0, 0.0]))
    np.testing.assert_allclose(rot, [math.sqrt(0.5), math.sqrt(0.5), 0], atol=1e-4)


def test_excluded_fixed_joint_becomes_weld_equality():
    stage = new_stage()
    body(stage, "/World/b", pos=(0.3, 0, 1.0), mass=1.0, inertia=(0.01, 0.01, 0.01), shape=None)
    fj = UsdPhysics.FixedJoint.Define(stage, "/World/weld")
    fj.CreateBody1Rel().SetTargets(["/World/b"])
    fj.CreateLocalPos0Attr(Gf.Vec3f(0.3, 0, 1.0))
    fj.CreateExcludeFromArticulationAttr(True)
    engine = MujocoEngine(stage, dt=0.002)
    m = engine.model
    assert m.neq == 1 and m.eq_type[0] == mujoco.mjtEq.mjEQ_WELD
    assert m.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE  # maximal coordinates + constraint
    engine.step(500)
    np.testing.assert_allclose(engine.state().body_positions[0], [0.3, 0, 1.0], atol=1e-3)
