"""Kinematic playback: readings extracted from a joint log match the engine-driven run."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from runtime.errors import SimrtError
from runtime.sensors import ImuSensor, JointStateSensor, SensorRuntime
from runtime.sensors.playback import KinematicPlayback
from tests.helpers.reference_sensors import MujocoHarness

ROOT = "/World/Robot"
DT = 1.0 / 240.0
XML = """<mujoco><option timestep="{dt}" gravity="0 0 -9.81"/><worldbody>
  <body name="arm" pos="0 0 2">
    <joint name="RevoluteJoint" type="hinge" axis="0 1 0" damping="0.1"/>
    <geom type="box" pos="1 0 0" size="1 0.1 0.05" mass="1.5"/>
    <body name="slider" pos="1 0 -0.2">
      <joint name="PrismaticJoint" type="slide" axis="1 0 0" damping="0.5"/>
      <geom type="box" size="0.1 0.1 0.1" mass="0.5" contype="0" conaffinity="0"/>
    </body>
  </body></worldbody>
  <actuator><motor joint="RevoluteJoint"/><motor joint="PrismaticJoint"/></actuator>
</mujoco>"""


def _stage():
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    scene = UsdPhysics.Scene.Define(stage, "/PhysicsScene")
    scene.CreateGravityMagnitudeAttr(9.81)
    root = UsdGeom.Xform.Define(stage, ROOT).GetPrim()
    UsdPhysics.ArticulationRootAPI.Apply(root)
    for name, pos in (("Base", (0, 0, 2)), ("Arm", (0, 0, 2)), ("Slider", (1, 0, 1.8))):
        xform = UsdGeom.Xform.Define(stage, f"{ROOT}/{name}")
        xform.AddTranslateOp().Set(Gf.Vec3d(*pos))
        UsdPhysics.RigidBodyAPI.Apply(xform.GetPrim())
    UsdPhysics.MassAPI.Apply(stage.GetPrimAtPath(f"{ROOT}/Arm")).CreateCenterOfMassAttr(
        Gf.Vec3f(1, 0, 0)
    )
    fixed = UsdPhysics.FixedJoint.Define(stage, f"{ROOT}/Base/RootJoint")
    fixed.CreateBody1Rel().SetTargets([Sdf.Path(f"{ROOT}/Base")])
    fixed.CreateLocalPos0Attr(Gf.Vec3f(0, 0, 2))
    rev = UsdPhysics.RevoluteJoint.Define(stage, f"{ROOT}/Arm/RevoluteJoint")
    rev.CreateAxisAttr("Y")
    rev.CreateBody0Rel().SetTargets([Sdf.Path(f"{ROOT}/Base")])
    rev.CreateBody1Rel().SetTargets([Sdf.Path(f"{ROOT}/Arm")])
    pri = UsdPhysics.PrismaticJoint.Define(stage, f"{ROOT}/Slider/PrismaticJoint")
    pri.CreateAxisAttr("X")
    pri.CreateBody0Rel().SetTargets([Sdf.Path(f"{ROOT}/Arm")])
    pri.CreateBody1Rel().SetTargets([Sdf.Path(f"{ROOT}/Slider")])
    pri.CreateLocalPos0Attr(Gf.Vec3f(1, 0, -0.2))
    for link, offset in (("Arm", (1.5, 0.05, 0.05)), ("Slider", (0.05, 0.0, 0.1))):
        imu = UsdGeom.Xform(stage.DefinePrim(f"{ROOT}/{link}/Imu", "IsaacImuSensor"))
        imu.AddTranslateOp().Set(Gf.Vec3d(*offset))
    return stage


def _sensors(paths):
    return [ImuSensor(f"{ROOT}/Arm/Imu"), ImuSensor(f"{ROOT}/Slider/Imu"), JointStateSensor(ROOT)]


def _readings(rt):
    arm, slider, js = (s.reading() for s in rt.sensors)
    return np.concatenate(
        [
            arm.linear_acceleration,
            arm.angular_velocity,
            arm.orientation,
            slider.linear_acceleration,
            slider.angular_velocity,
            slider.orientation,
            js.positions,
            js.velocities,
        ]
    )


def test_playback_reproduces_engine_driven_readings():
    model = mujoco.MjModel.from_xml_string(XML.format(dt=DT))
    data = mujoco.MjData(model)
    bodies = {"world": f"{ROOT}/Base", "arm": f"{ROOT}/Arm", "slider": f"{ROOT}/Slider"}
    harness = MujocoHarness(model, data, bodies, dofs=("RevoluteJoint", "PrismaticJoint"))
    stage = _stage()
    live = SensorRuntime(
        stage,
        harness.paths,
        dof_names=["RevoluteJoint", "PrismaticJoint"],
        dof_types=[0, 1],
        sensors=_sensors(harness.paths),
    )
    times, log, live_readings = [], [], []
    for k in range(240):
        data.ctrl[:] = (8.0 * np.sin(3.0 * k * DT), 2.0 * np.cos(5.0 * k * DT))
        state = harness.step()
        live.step(state)
        times.append(state.time)
        log.append(data.qpos.copy())
        live_readings.append(_readings(live))
    playback = KinematicPlayback(stage, ROOT, times, np.array(log))
    assert playback.joint_names == ["RevoluteJoint", "PrismaticJoint"]
    assert set(playback.body_paths) == set(bodies.values())
    replay = SensorRuntime(
        stage,
        playback.body_paths,
        dof_names=playback.joint_names,
        dof_types=[0, 1],
        sensors=_sensors(playback.body_paths),
    )
    replay_readings = []
    for state in playback.states():
        replay.step(state)
        replay_readings.append(_readings(replay))
    live_a, replay_a = np.array(live_readings), np.array(replay_readings)
    # Orientation, gyro and joint positions/velocities: exact up to float32 rounding
    # (semi-implicit Euler: q_k = q_{k-1} + dt qdot_k, so backward differences are exact).
    exact = np.r_[3:10, 13:20, 20:24]
    np.testing.assert_allclose(replay_a[1:, exact], live_a[1:, exact], atol=2e-5)
    # Link poses equal MuJoCo's.
    last = playback.state(len(times) - 1)
    np.testing.assert_allclose(
        last.body_positions[1:], harness.state().body_positions[1:], atol=1e-9
    )
    # Accelerations: COM velocities are differenced (first order), so close, not exact.
    acc = np.r_[0:3, 10:13]
    scale = np.abs(live_a[:, acc]).max()
    assert np.max(np.abs(replay_a[5:, acc] - live_a[5:, acc])) < 0.05 * scale


def test_playback_rejects_bad_shapes():
    stage = _stage()
    with pytest.raises(SimrtError):
        KinematicPlayback(stage, ROOT, [0.0, 0.1], np.zeros((3, 2)))
    with pytest.raises(SimrtError):
        KinematicPlayback(stage, ROOT, [0.1, 0.1], np.zeros((2, 2)))
