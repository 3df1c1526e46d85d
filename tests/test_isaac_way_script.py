"""A script written the Isaac Sim way, ported by changing its imports only.

It creates a simulation context, authors a contact sensor and an IMU with Isaac's keywords
(``*_filter_size``, batched ``translations`` / ``orientations``), plays, steps 100 times and
reads ``get_current_frame()`` / ``get_sensor_reading()`` -- no runtime is passed anywhere.
Its readings equal those of today's explicit API (``MujocoEngine`` + ``SensorRuntime``
stepped by hand) on the same scene, step for step; and the physics is checked against
Newton (sensor spec §C1 / I10): a 1 kg cube resting on the ground reads a contact force of
m g and an upward specific force of g.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("mujoco")

from pxr import Gf, Usd, UsdGeom, UsdPhysics  # noqa: E402

import runtime.schema  # noqa: E402, F401  (registers the Isaac schemas first)
from runtime.compat import set_current_stage  # noqa: E402

G = 9.81
STEPS = 100
CUBE = "/World/Cube"


def _scene() -> Usd.Stage:
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    scene = UsdPhysics.Scene.Define(stage, "/World/PhysicsScene")
    scene.CreateGravityDirectionAttr(Gf.Vec3f(0, 0, -1))
    scene.CreateGravityMagnitudeAttr(G)
    ground = UsdGeom.Cube.Define(stage, "/World/Ground")
    ground.CreateSizeAttr(1.0)
    ground.AddTranslateOp().Set(Gf.Vec3d(0, 0, -0.5))
    ground.AddScaleOp().Set(Gf.Vec3f(10, 10, 1))
    UsdPhysics.CollisionAPI.Apply(ground.GetPrim())
    cube = UsdGeom.Xform.Define(stage, CUBE)
    cube.AddTranslateOp().Set(Gf.Vec3d(0, 0, 0.52))  # 2 cm drop onto the ground
    UsdPhysics.RigidBodyAPI.Apply(cube.GetPrim())
    UsdPhysics.MassAPI.Apply(cube.GetPrim()).CreateMassAttr(1.0)
    geom = UsdGeom.Cube.Define(stage, f"{CUBE}/geom")
    geom.CreateSizeAttr(1.0)
    UsdPhysics.CollisionAPI.Apply(geom.GetPrim())
    return stage


def _isaac_way_script(stage: Usd.Stage) -> tuple[list, list, list, str]:
    """The ported script: only its imports were changed to runtime.compat.isaac."""
    from runtime.compat.isaac import IMU, Contact, ContactSensor, IMUSensor, SimulationContext

    simulation_context = SimulationContext(physics_dt=1.0 / 60.0, stage=stage)
    Contact.create(
        f"{CUBE}/contact_sensor",
        min_threshold=0.0,
        max_threshold=10000000.0,
        radius=-1.0,
        translations=np.array([[0.0, 0.0, 0.0]]),
    )
    half = np.sqrt(0.5)
    imu_prim = IMU.create(
        f"{CUBE}/imu_sensor",
        linear_acceleration_filter_size=3,
        angular_velocity_filter_size=2,
        orientation_filter_size=1,
        translations=np.array([[0.1, 0.0, 0.2]]),
        orientations=np.array([[half, 0.0, 0.0, half]]),  # yawed 90 deg on the cube
    )
    contact = ContactSensor(f"{CUBE}/contact_sensor")
    imu = IMUSensor(imu_prim.prim_path)
    assert not contact.get_sensor_reading().is_valid  # before play, as in Isaac
    simulation_context.play()
    contact_frames, imu_frames, imu_readings = [], [], []
    for _ in range(STEPS):
        simulation_context.step(render=False)
        contact_frames.append(dict(contact.get_current_frame()))
        imu_frames.append(dict(imu.get_current_frame()))
        imu_readings.append(imu.get_sensor_reading())
    simulation_context.stop()
    return contact_frames, imu_frames, imu_readings, imu_prim.prim_path


def test_isaac_way_script_reads_like_the_explicit_api():
    from runtime.compat.isaac import SimulationContext
    from runtime.engine import MujocoEngine
    from runtime.sensors import SensorRuntime

    SimulationContext.clear_instance()
    stage = _scene()
    try:
        contact_frames, imu_frames, imu_readings, imu_path = _isaac_way_script(stage)
    finally:
        SimulationContext.clear_instance()
        set_current_stage(None)

    # today's explicit API on the same scene (the layer the script authored, reopened)
    same = Usd.Stage.Open(stage.GetRootLayer())  # a second stage on the authored layer
    engine = MujocoEngine(same, dt=1.0 / 60.0)
    runtime = SensorRuntime(same, engine.body_paths, list(engine.dof_names))
    contact = runtime.sensor(f"{CUBE}/contact_sensor")
    imu = runtime.sensor(imu_path)
    for k in range(STEPS):
        engine.step()
        runtime.step(engine.state())
        c, i = contact.reading(), imu.reading()
        assert c.is_valid and i.is_valid
        frame = contact_frames[k]
        assert frame["force"] == float(c.value) and frame["in_contact"] == bool(c.in_contact)
        assert frame["time"] == float(c.time) and frame["physics_step"] == float(k + 1)
        np.testing.assert_array_equal(
            imu_frames[k]["linear_acceleration"], np.asarray(i.linear_acceleration, np.float32)
        )
        np.testing.assert_array_equal(
            imu_frames[k]["angular_velocity"], np.asarray(i.angular_velocity, np.float32)
        )
        np.testing.assert_array_equal(
            imu_frames[k]["orientation"], np.asarray(i.orientation, np.float32)
        )
        assert imu_readings[k].linear_acceleration_z == np.float32(i.linear_acceleration[2])
    runtime.close()

    # Newton, at rest after 100 steps (1.67 s): the ground carries m g; the IMU, yawed 90 deg
    # on a level cube, reads the gravity reaction g straight up
    assert contact_frames[-1]["in_contact"]
    assert contact_frames[-1]["force"] == pytest.approx(1.0 * G, rel=0.05)
    np.testing.assert_allclose(imu_frames[-1]["linear_acceleration"], [0, 0, G], atol=0.1)
    assert imu_frames[-1]["time"] == pytest.approx(STEPS / 60.0)
    yaw = 2.0 * np.arctan2(imu_frames[-1]["orientation"][3], imu_frames[-1]["orientation"][0])
    assert yaw == pytest.approx(np.pi / 2, abs=1e-3)
