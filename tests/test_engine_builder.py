"""USD physics -> MuJoCo builder and MujocoEngine state, against independent oracles.

Oracles: Pinocchio (forward kinematics, mass matrix and gravity torques of the original
URDFs), closed-form mechanics (free fall, static equilibrium of a driven pendulum, box
inertia, drive steady state) and the authored USD values themselves (degrees, stage units).
"""

from __future__ import annotations

import logging
import math
import os

import mujoco
import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdPhysics

from runtime.engine import MujocoEngine, build_model
from runtime.errors import SchemaError, SimrtError
from tests.helpers.engine_stages import ASSETS, _erd, body, ground, new_stage, pendulum  # noqa: E402, F401

# ----------------------------------------------------------------------------- helpers


# ----------------------------------------------------------------- converted real robots


@pytest.mark.parametrize(
    "usd, urdf, dynamics",
    [
        ("panda/panda.usda", "panda_description/urdf/panda.urdf", True),
        ("solo12/solo.usda", "solo_description/robots/solo12.urdf", True),
        # UR URDFs have an ee_link without <inertial>: Pinocchio gives it no mass, USD/PhysX
        # semantics derive it from its collision box (1000 kg/m^3) -> kinematics only.
        ("ur5/ur5.usda", "ur_description/urdf/ur5_robot.urdf", False),
        ("ur10/ur10.usda", "ur_description/urdf/ur10_robot.urdf", False),
    ],
)
def test_converted_robots_match_pinocchio(usd, urdf, dynamics):
    pin = pytest.importorskip("pinocchio")
    engine = MujocoEngine(Usd.Stage.Open(os.path.join(ASSETS, usd)))
    pm = pin.buildModelFromUrdf(os.path.join(_erd(), urdf))
    pd = pm.createData()
    assert len(engine.dofs) == pm.nv
    m, d = engine.model, engine.data
    # pinocchio velocity index per MuJoCo DOF (mass matrix rows are in MuJoCo DOF order)
    by_dof = sorted(engine.dofs, key=lambda b: b.dof_adr)
    perm = [pm.joints[pm.getJointId(b.name)].idx_v for b in by_dof]
    pin.seed(3)
    for _ in range(3):
        q = pin.randomConfiguration(pm)
        q = np.clip(q, -3.0, 3.0)
        for b in engine.dofs:
            d.qpos[b.qpos_adr] = q[pm.joints[pm.getJointId(b.name)].idx_q] * b.sign
        d.qvel[:] = 0.0
        mujoco.mj_forward(m, d)
        pin.framesForwardKinematics(pm, pd, q)
        state = engine.state()
        checked = 0
        for i, path in enumerate(state.body_paths):
            link = path.rsplit("/", 1)[-1]
            if not pm.existFrame(link):
                continue
            frame = pd.oMf[pm.getFrameId(link)]
            np.testing.assert_allclose(state.body_positions[i], frame.translation, atol=1e-6)
            rot = np.zeros(9)
            mujoco.mju_quat2Mat(rot, state.body_orientations[i])
            np.testing.assert_allclose(rot.reshape(3, 3), frame.rotation, atol=1e-6)
            checked += 1
        assert checked >= len(engine.dofs)
        # joint positions reported in DOF order are the configuration we set
        np.testing.assert_allclose(
            state.joint_positions,
            [q[pm.joints[pm.getJointId(b.name)].idx_q] for b in engine.dofs],
            atol=1e-12,
        )
        if dynamics:
            full = np.zeros((m.nv, m.nv))
            mujoco.mj_fullM(m, d, full)
            mp = pin.crba(pm, pd, q)
            mp = np.triu(mp) + np.triu(mp, 1).T
            np.testing.assert_allclose(full, mp[np.ix_(perm, perm)], atol=1e-6)
            grav = pin.computeGeneralizedGravity(pm, pd, q)[perm]
            np.testing.assert_allclose(d.qfrc_bias, grav, atol=1e-5)


def test_dof_order_follows_dof_table():
    dof = pytest.importorskip("runtime.schema.dof")
    stage = Usd.Stage.Open(os.path.join(ASSETS, "solo12", "solo.usda"))
    table = dof.build_dof_table(stage, stage.GetPrimAtPath("/solo"))
    engine = MujocoEngine(stage, robot_prim="/solo")
    assert engine.dof_names == tuple(e.name for e in table.entries)
    # without robot_prim: the stage's table (default prim) covers every DOF -> same order
    assert MujocoEngine(stage).dof_names == engine.dof_names
    # values follow the table: set qpos by MuJoCo joint and read back by name
    for i, b in enumerate(engine.dofs):
        engine.data.qpos[b.qpos_adr] = 0.01 * (i + 1)
    state = engine.state()
    for i, b in enumerate(engine.dofs):
        assert state.joint_positions[i] == pytest.approx(0.01 * (i + 1))
        assert b.joint_path == table.entries[i].joint_path


# ------------------------------------------------------------------- scene / units / dt


def test_time_step_sources():
    stage = new_stage()
    body(stage, "/World/box", pos=(0, 0, 1), mass=1.0, inertia=(0.1, 0.1, 0.1))
    assert MujocoEngine(stage).dt == pytest.approx(1.0 / 60.0)
    stage.GetPrimAtPath("/PhysicsScene").CreateAttribute(
        "physxScene:timeStepsPerSecond", Sdf.ValueTypeNames.UInt
    ).Set(120)
    assert MujocoEngine(stage).dt == pytest.approx(1.0 / 120.0)
    assert MujocoEngine(stage, dt=0.005).dt == pytest.approx(0.005)
    with pytest.raises(SchemaError):
        MujocoEngine(stage, dt=-1.0)


@pytest.mark.parametrize("mpu", [1.0, 0.01])
def test_free_fall_in_stage_units(mpu):
    stage = new_stage(mpu=mpu)
    z0 = 10.0 / mpu
    body(stage, "/World/box", pos=(0, 0, z0), mass=1.0, inertia=(0.1, 0.1, 0.1), size=0.1 / mpu)
    engine = MujocoEngine(stage, dt=0.01, compute_accelerations=True)
    g = 9.81 / mpu  # UsdPhysics default gravity in stage units
    np.testing.assert_allclose(engine.state().gravity, [0, 0, -g], rtol=1e-6)
    engine.step(50)
    state = engine.state()
    n, dt = 50, 0.01
    # MuJoCo's semi-implicit Euler: v_n = -g n dt, z_n = z0 - g dt^2 n (n + 1) / 2
    assert state.body_linear_velocities[0, 2] == pytest.approx(-g * n * dt, rel=1e-6)
    assert state.body_positions[0, 2] == pytest.approx(z0 - g * dt * dt * n * (n + 1) / 2, rel=1e-6)
    # kinematic acceleration of a free-falling body is gravity
    np.testing.assert_allclose(state.body_linear_accelerations[0], [0, 0, -g], rtol=1e-6, atol=1e-9)
    assert state.step == 50 and state.time == pytest.approx(0.5)
    assert state.meters_per_unit == mpu
    state.validate()


def test_sphere_on_ground_contact_impulses():
    stage = new_stage()
    ground(stage)
    m, r = 2.0, 0.1
    body(
        stage,
        "/World/ball",
        pos=(0, 0, 0.3),
        mass=m,
        inertia=(0.4 * m * r * r,) * 3,
        shape="sphere",
        size=r,
    )
    engine = MujocoEngine(stage, dt=0.002, compute_accelerations=True)
    assert engine.body_paths == ("/World/ball", "/World/Ground")
    engine.step(1000)  # 2 s: settled
    state = engine.state()
    assert state.body_positions[0, 2] == pytest.approx(r, abs=2e-3)
    assert state.contact_count >= 1
    assert np.all(state.contact_body0 == 0)  # impulse acts on the ball
    assert np.all(state.contact_body1 == 1)  # the static ground collider
    np.testing.assert_allclose(state.contact_normals, [[0, 0, 1]] * state.contact_count, atol=1e-9)
    total = state.contact_impulses.sum(axis=0)
    # at rest the ground carries the weight: impulse per step = m g dt, upward on the ball
    np.testing.assert_allclose(total, [0, 0, m * 9.81 * 0.002], rtol=1e-3, atol=1e-9)
    np.testing.assert_allclose(state.contact_positions[:, 2], 0.0, atol=2e-3)
    np.testing.assert_allclose(state.body_linear_accelerations[0], 0.0, atol=1e-3)
    # static collider pose: its authored world pose; velocities zero
    np.testing.assert_allclose(state.body_orientations[1], [1, 0, 0, 0])
    np.testing.assert_allclose(state.body_linear_velocities[1], 0.0)


def test_com_velocity_and_body_frame_pose():
    """Linear velocity is the COM velocity; the pose is the body frame, not the COM."""
    stage = new_stage(gravity=0.0)
    body(
        stage,
        "/World/b",
        pos=(1, 2, 3),
        mass=1.0,
        inertia=(0.2, 0.2, 0.3),
        com=(0.3, 0.0, 0.0),
        shape=None,
    )
    engine = MujocoEngine(stage)
    w = np.array([0.0, 0.0, 2.0])
    engine.data.qvel[3:6] = w  # free joint angular velocity (body frame == world here)
    mujoco.mj_forward(engine.model, engine.data)
    state = engine.state()
    np.testing.assert_allclose(state.body_positions[0], [1, 2, 3], atol=1e-12)
    np.testing.assert_allclose(state.body_com_local[0], [0.3, 0, 0], atol=1e-7)
    np.testing.assert_allclose(state.body_angular_velocities[0], w, atol=1e-12)
    # origin at rest, COM at +0.3 x rotating about z at 2 rad/s -> v = w x r = (0, 0.6, 0)
    # (MuJoCo's free joint velocity is of the body origin? no: of the body frame origin)
    v_origin = engine.data.qvel[:3]
    expected = v_origin + np.cross(w, [0.3, 0, 0])
    np.testing.assert_allclose(state.body_linear_velocities[0], expected, atol=1e-9)


# ------------------------------------------------------------------------------ joints


def _equilibrium(kp, target, m, g, arm):
    from scipy.optimize import brentq

    return brentq(lambda t: kp * (target - t) + m * g * arm * math.cos(t), -3.0, 3.0)


@pytest.mark.parametrize("reversed_", [False, True])
def test_revolute_drive_static_equilibrium(reversed_):
    m, arm, g = 2.0, 0.5, 9.81
    k_deg, d_deg, target_deg = 0.5, 0.02, 30.0  # N m / deg, N m s / deg, deg
    stage = new_stage()
    sign = -1.0 if reversed_ else 1.0
    pendulum(
        stage,
        arm=arm,
        m=m,
        reversed_=reversed_,
        drive={"Stiffness": k_deg, "Damping": d_deg, "TargetPosition": sign * target_deg},
    )
    engine = MujocoEngine(stage, dt=0.002)
    engine.step(4000)
    state = engine.state()
    kp = k_deg * 180.0 / math.pi
    theta = _equilibrium(kp, math.radians(target_deg), m, g, arm)
    # USD joint position: rotation of body1 relative to body0 about +Y
    assert state.joint_positions[0] == pytest.approx(sign * theta, abs=1e-4)
    # arm direction from the body pose: x axis rotated by theta about Y
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, state.body_orientations[0])
    x_axis = rot.reshape(3, 3)[:, 0]
    np.testing.assert_allclose(x_axis, [math.cos(theta), 0, -math.sin(theta)], atol=1e-4)
    # effort balances gravity: drive torque = -m g l cos(theta) (in the USD DOF sign)
    assert state.joint_efforts[0] == pytest.approx(sign * -m * g * arm * math.cos(theta), rel=1e-3)
    # retarget by name (the DOF name is the joint prim name) in radians
    engine.set_joint_targets([sign * math.radians(-20.0)], names=["hinge"])
    engine.step(4000)
    theta2 = _equilibrium(kp, math.radians(-20.0), m, g, arm)
    assert engine.state().joint_positions[0] == pytest.approx(sign * theta2, abs=1e-4)


def test_revolute_limit_in_degrees():
    stage = new_stage()
    pendulum(stage, limits=(-10.0, 20.0))  # gravity swings the arm towards +theta
    engine = MujocoEngine(stage, dt=0.002)
    lo, hi = engine.model.jnt_range[0]
    assert (lo, hi) == pytest.approx((math.radians(-10.0), math.radians(20.0)), abs=1e-6)
    engine.step(2000)
    state = engine.state()
    assert state.joint_positions[0] == pytest.approx(math.radians(20.0), abs=5e-3)
    # the limit carries the arm: effort = minus the gravity moment about the axis (spec E1)
    theta = state.joint_positions[0]
    assert state.joint_efforts[0] == pytest.approx(-2.0 * 9.81 * 0.5 * math.cos(theta), rel=1e-3)


def test_prismatic_velocity_drive_and_targets_api():
    stage = new_stage(gravity=0.0)
    body(stage, "/World/slider", mass=1.0, inertia=(0.1, 0.1, 0.1), shape=None)
    j = UsdPhysics.PrismaticJoint.Define(stage, "/World/rail")
    j.CreateBody1Rel().SetTargets(["/World/slider"])
    j.CreateAxisAttr("X")
    d = UsdPhysics.DriveAPI.Apply(j.GetPrim(), "linear")
    d.CreateDampingAttr(200.0)
    d.CreateTargetVelocityAttr(0.2)
    engine = MujocoEngine(stage, dt=0.002)
    assert engine.dofs[0].drive_mode == "velocity"
    engine.step(500)
    state = engine.state()
    assert state.joint_velocities[0] == pytest.approx(0.2, rel=1e-3)
    assert state.body_linear_velocities[0, 0] == pytest.approx(0.2, rel=1e-3)
    engine.set_joint_targets([0.5], names=[0])
    engine.step(500)
    assert engine.state().joint_velocities[0] == pytest.approx(0.5, rel=1e-3)
    engine.set_joint_targets([-0.1], names=["/World/rail"])
    engine.step(500)
    assert engine.state().joint_velocities[0] == pytest.approx(-0.1, rel=1e-3)
    with pytest.raises(SimrtError, match="unknown DOF"):
        engine.set_joint_targets([0.0], names=["nope"])
    with pytest.raises(SimrtError):
        engine.set_joint_targets([0.0, 1.0])
    with pytest.raises(SimrtError):
        engine.set_joint_targets([float("nan")])


def test_undriven_dof_has_no_target():
    stage = new_stage()
    pendulum(stage)
    engine = MujocoEngine(stage)
    with pytest.raises(SimrtError, match="no drive"):
        engine.set_joint_targets([0.1])


def test_d6_locked_axes_and_spherical():
    stage = new_stage(gravity=0.0)
    body(stage, "/World/a", mass=1.0, inertia=(0.1, 0.1, 0.1), shape=None)
    body(stage, "/World/b", pos=(1, 0, 0), mass=1.0, inertia=(0.1, 0.1, 0.1), shape=None)
    d6 = UsdPhysics.Joint.Define(stage, "/World/d6")
    d6.CreateBody1Rel().SetTargets(["/World/a"])
    for token in ("transY", "transZ", "rotX", "rotY"):
        lim = UsdPhysics.LimitAPI.Apply(d6.GetPrim(), token)
        lim.CreateLowAttr(1.0)
        lim.CreateHighAttr(-1.0)
    lim = UsdPhysics.LimitAPI.Apply(d6.GetPrim(), "rotZ")
    lim.CreateLowAttr(-45.0)
    lim.CreateHighAttr(45.0)
    sph = UsdPhysics.SphericalJoint.Define(stage, "/World/ball")
    sph.CreateBody0Rel().SetTargets(["/World/a"])
    sph.CreateBody1Rel().SetTargets(["/World/b"])
    sph.CreateLocalPos0Attr(Gf.Vec3f(1, 0, 0))
    sph.CreateConeAngle0LimitAttr(30.0)
    sph.CreateConeAngle1LimitAttr(30.0)
    engine = MujocoEngine(stage)
    m = engine.model
    types = sorted(int(t) for t in m.jnt_type)
    assert types == sorted(
        int(t)
        for t in (
            mujoco.mjtJoint.mjJNT_SLIDE,
            mujoco.mjtJoint.mjJNT_HINGE,
            mujoco.mjtJoint.mjJNT_BALL,
        )
    )
    names = engine.dof_names
    assert names[:2] == ("d6:TransX", "d6:RotZ")
    assert names[2:] == ("ball:RotX", "ball:RotY", "ball:RotZ")
    hinge = [j for j in range(m.njnt) if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE][0]
    np.testing.assert_allclose(m.jnt_range[hinge], np.radians([-45.0, 45.0]), atol=1e-6)
    ball = [j for j in range(m.njnt) if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL][0]
    assert m.jnt_range[ball][1] == pytest.approx(math.radians(30.0))
    # a ball rotation of 0.3 rad about the joint z axis reads back as the rotation vector
    adr = m.jnt_qposadr[ball]
    engine.data.qpos[adr : adr + 4] = [math.cos(0.15), 0, 0, math.sin(0.15)]
    mujoco.mj_forward(m, engine.data)
    np.testing.assert_allclose(engine.state().joint_positions[2:], [0, 0, 0.3], atol=1e-12)


def test_fixed_joint_welds_and_floating_base():
    stage = new_stage()
    body(stage, "/World/base", pos=(0, 0, 2), mass=1.0, inertia=(0.1, 0.1, 0.1))
    body(stage, "/World/tool", pos=(0.5, 0, 2), mass=1.0, inertia=(0.1, 0.1, 0.1))
    fj = UsdPhysics.FixedJoint.Define(stage, "/World/weld")
    fj.CreateBody0Rel().SetTargets(["/World/base"])
    fj.CreateBody1Rel().SetTargets(["/World/tool"])
    fj.CreateLocalPos0Attr(Gf.Vec3f(0.5, 0, 0))
    engine = MujocoEngine(stage, dt=0.01)
    m = engine.model
    assert m.njnt == 1 and m.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE  # floating base
    assert engine.dofs == []
    engine.step(30)
    state = engine.state()
    # rigidly attached: relative offset preserved while falling
    np.testing.assert_allclose(
        state.body_positions[1] - state.body_positions[0], [0.5, 0, 0], atol=1e-9
    )
    assert state.body_positions[0, 2] < 1.9


def test_kinematic_body_is_mocap():
    stage = new_stage()
    body(stage, "/World/k", pos=(0, 0, 1), mass=1.0, inertia=(0.1, 0.1, 0.1), kinematic=True)
    engine = MujocoEngine(stage)
    engine.step(10)
    assert engine.model.body_mocapid[engine.model.body("/World/k").id] == 0
    np.testing.assert_allclose(engine.state().body_positions[0], [0, 0, 1])


def test_gravcomp_attributes():
    stage = new_stage()
    prim = body(stage, "/World/floaty", pos=(0, 0, 1), mass=1.0, inertia=(0.1, 0.1, 0.1))
    prim.CreateAttribute("mjc:gravcomp", Sdf.ValueTypeNames.Float).Set(1.0)
    j = pendulum(stage)
    j.GetPrim().CreateAttribute("mjc:actuatorgravcomp", Sdf.ValueTypeNames.Bool).Set(True)
    engine = MujocoEngine(stage, dt=0.01)
    assert engine.model.body_gravcomp[engine.model.body("/World/floaty").id] == 1.0
    assert bool(engine.model.jnt_actgravcomp[engine.model.joint("/World/hinge").id])
    engine.step(100)
    state = engine.state()
    np.testing.assert_allclose(
        state.body_positions[state.body_paths.index("/World/floaty")], [0, 0, 1], atol=1e-9
    )


def test_filtered_pairs_and_collision_groups():
    def overlapping():
        stage = new_stage(gravity=0.0)
        body(stage, "/World/a", pos=(0, 0, 0), mass=1.0, inertia=(0.1, 0.1, 0.1))
        body(stage, "/World/b", pos=(0.1, 0, 0), mass=1.0, inertia=(0.1, 0.1, 0.1))
        return stage

    engine = MujocoEngine(overlapping())
    engine.step()
    assert engine.state().contact_count > 0
    stage = overlapping()
    UsdPhysics.FilteredPairsAPI.Apply(
        stage.GetPrimAtPath("/World/a")
    ).CreateFilteredPairsRel().SetTargets(["/World/b"])
    engine = MujocoEngine(stage)
    engine.step()
    assert engine.state().contact_count == 0
    stage = overlapping()
    ga = UsdPhysics.CollisionGroup.Define(stage, "/World/ga")
    gb = UsdPhysics.CollisionGroup.Define(stage, "/World/gb")
    ga.GetCollidersCollectionAPI().CreateIncludesRel().SetTargets(["/World/a/collider"])
    gb.GetCollidersCollectionAPI().CreateIncludesRel().SetTargets(["/World/b/collider"])
    ga.CreateFilteredGroupsRel().SetTargets(["/World/gb"])
    engine = MujocoEngine(stage)
    engine.step()
    assert engine.state().contact_count == 0


# ------------------------------------------------------------------ mass fallbacks


def test_mass_from_shape_density(caplog):
    stage = new_stage()
    body(stage, "/World/box", pos=(0, 0, 1), size=0.2)  # no MassAPI
    with caplog.at_level(logging.WARNING, logger="runtime.engine"):
        built = build_model(stage)
    bid = built.model.body("/World/box").id
    a = 0.2
    assert built.model.body_mass[bid] == pytest.approx(1000.0 * a**3, rel=1e-6)
    np.testing.assert_allclose(
        built.model.body_inertia[bid], [1000 * a**3 * 2 * a * a / 12] * 3, rtol=1e-6
    )
    assert any("/World/box" in r.message and "no physics:mass" in r.message for r in caplog.records)
    # shape density wins over the default
    stage = new_stage()
    body(stage, "/World/box", pos=(0, 0, 1), size=0.2)
    UsdPhysics.MassAPI.Apply(stage.GetPrimAtPath("/World/box/collider")).CreateDensityAttr(500.0)
    built = build_model(stage)
    assert built.model.body_mass[1] == pytest.approx(500.0 * a**3, rel=1e-6)


def test_mass_without_inertia_scales_shape_inertia(caplog):
    stage = new_stage()
    body(stage, "/World/box", pos=(0, 0, 1), mass=3.0, size=0.2)
    with caplog.at_level(logging.WARNING, logger="runtime.engine"):
        built = build_model(stage)
    bid = built.model.body("/World/box").id
    assert built.model.body_mass[bid] == pytest.approx(3.0)
    np.testing.assert_allclose(built.model.body_inertia[bid], [3.0 * 2 * 0.04 / 12] * 3, rtol=1e-6)
    assert any("without physics:diagonalInertia" in r.message for r in caplog.records)


def test_mass_fallback_without_shapes(caplog):
    stage = new_stage()
    body(stage, "/World/ghost", pos=(0, 0, 1), shape=None)
    with caplog.at_level(logging.WARNING, logger="runtime.engine"):
        built = build_model(stage)
    assert built.model.body_mass[1] == pytest.approx(1.0)
    assert any("/World/ghost" in r.message and "solid sphere" in r.message for r in caplog.records)
