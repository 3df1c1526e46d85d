"""The Isaac-named simulation context (runtime.compat.simulation_context).

A script drives the simple arm through ``SimulationContext`` play / pause / stop / step, and
the compat wrappers and interfaces find the running simulation without ``runtime=``. The
readings are compared with an engine + sensor runtime stepped by hand on the same scene
(whose numbers tests/test_compat_sensors.py checks against MuJoCo's own data); the
lifecycle follows sensor spec §2.3 (invalid before play and after stop, time and step
counter restart, determinism across stop / play).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")

from pxr import Usd  # noqa: E402

from runtime.compat import set_current_stage  # noqa: E402
from runtime.compat.isaac import (  # noqa: E402
    ContactSensor,
    GripperStatus,
    GripperView,
    IMUSensor,
    IMUSensorReading,
    JointStateSensor,
    RaycastSensor,
    SimulationContext,
    TimelineEventType,
    acquire_surface_gripper_interface,
    get_contact_sensor_interface,
    get_imu_sensor_interface,
    get_joint_state_sensor_interface,
    get_timeline_interface,
)
from runtime.engine import MujocoEngine  # noqa: E402
from runtime.schema.dof import build_dof_table  # noqa: E402
from runtime.sensors import SensorRuntime  # noqa: E402

SCENE = Path(__file__).resolve().parents[1] / "scenes" / "simple_arm.usda"
ARM = "/World/SimpleArm"
IMU = f"{ARM}/link3/imu"
CONTACT = f"{ARM}/link4/contact_sensor"
RAYS = f"{ARM}/base/range_finder"


@pytest.fixture(autouse=True)
def _fresh_context():
    SimulationContext.clear_instance()
    set_current_stage(None)
    yield
    SimulationContext.clear_instance()
    set_current_stage(None)


def _explicit(stage: Usd.Stage):
    robot = stage.GetPrimAtPath(ARM)
    engine = MujocoEngine(stage, robot_prim=robot)
    runtime = SensorRuntime(stage, engine.body_paths, build_dof_table(stage, robot))
    return engine, runtime


def test_lifecycle_timeline_and_readings_before_play_and_after_stop():
    stage = Usd.Stage.Open(str(SCENE))
    sim = SimulationContext(stage=stage)
    assert SimulationContext() is sim and SimulationContext.instance() is sim
    events: list[str] = []
    stops: list[float] = []
    steps: list[float] = []
    sim.add_timeline_callback("log", lambda e: events.append(TimelineEventType(e.type).name))
    subscription = sim.on_timeline_stop(lambda e: stops.append(e.time))
    sim.add_physics_callback("count", steps.append)
    imu, contact, rays = IMUSensor(IMU), ContactSensor(CONTACT), RaycastSensor(RAYS)
    with pytest.raises(ValueError, match="IsaacImuSensor"):
        IMUSensor(CONTACT)

    # before play: nothing exists, every reading is invalid (sensor spec §2.3, R4)
    assert not imu.get_sensor_reading().is_valid
    assert not contact.get_sensor_reading().is_valid
    assert contact.get_current_frame() == {"time": 0.0, "physics_step": 0.0}
    data = rays.get_data()
    assert data["depths"].shape == (0,) and data["hit_positions"].shape == (0, 3)
    assert get_imu_sensor_interface().get_sensor_reading(IMU) == IMUSensorReading()
    sim.step(render=True)  # stopped: renders only
    assert sim.engine is None and sim.is_stopped() and sim.current_time == 0.0

    sim.play()
    dt = sim.get_physics_dt()
    assert dt == sim.engine.model.opt.timestep
    for _ in range(10):
        sim.step(render=True)
    assert sim.is_playing() and steps == [dt] * 10
    assert sim.current_time == pytest.approx(10 * dt)
    frame = imu.get_current_frame()
    assert frame["physics_step"] == 10.0 and frame["time"] == pytest.approx(10 * dt)
    first_session = imu.get_sensor_reading()
    assert first_session.is_valid
    assert rays.get_data()["physics_step"] == 10

    sim.pause()
    sim.step(render=True)  # paused: no physics
    assert sim.current_time_step_index == 10
    sim.step(render=False)  # a physics-only step
    assert sim.current_time_step_index == 11 and sim.is_simulating() and not sim.is_playing()
    sim.play()
    sim.stop()
    assert events == ["PLAY", "PAUSE", "PLAY", "STOP"]
    assert stops == [pytest.approx(11 * dt)]
    assert not imu.get_sensor_reading().is_valid
    assert imu.get_current_frame()["time"] == 0.0  # a stop clears the cached frame
    assert rays.get_data()["physics_step"] == 0 and sim.current_time == 0.0

    subscription.unsubscribe()
    sim.play()  # rebuilt from USD: time 0, the same readings as the first session
    for _ in range(10):
        sim.step(render=False)
    assert imu.get_sensor_reading() == first_session
    sim.stop()
    assert len(stops) == 1


def test_wrappers_and_interfaces_read_like_an_explicit_runtime():
    explicit_stage = Usd.Stage.Open(str(SCENE))
    engine, runtime = _explicit(explicit_stage)
    stage = Usd.Stage.Open(str(SCENE))
    with pytest.raises(RuntimeError, match="no simulation context"):
        IMUSensor(IMU)  # no context and no current stage
    assert SimulationContext.instance() is None
    set_current_stage(stage)
    imu, contact, rays = IMUSensor(IMU), ContactSensor(CONTACT), RaycastSensor(RAYS)
    sim = SimulationContext.instance()
    assert sim is not None and sim.stage == stage  # ... for the current stage
    joints = JointStateSensor(f"{ARM}/base")
    sim.play()
    names = list(sim.engine.dof_names)
    target = np.array([0.9, 0.6])
    dofs = [names.index("shoulder_pan"), names.index("shoulder_lift")]
    sim.engine.set_joint_targets(target, dofs)
    engine.set_joint_targets(target, dofs)
    moving = 0.0
    for _ in range(40):
        sim.step(render=False)
        engine.step()
        runtime.step(engine.state())
        mine = imu.get_sensor_reading()
        theirs = runtime.sensor(IMU).reading()
        assert mine.is_valid and theirs.is_valid
        assert mine.angular_velocity_z == np.float32(theirs.angular_velocity[2])
        assert mine.linear_acceleration_x == np.float32(theirs.linear_acceleration[0])
        assert contact.get_sensor_reading() == runtime.sensor(CONTACT).reading()
        np.testing.assert_array_equal(
            rays.get_data()["depths"], runtime.sensor(RAYS).reading().depths
        )
        moving = max(moving, abs(mine.angular_velocity_z))
    assert moving > 0.1
    assert get_contact_sensor_interface().get_sensor_reading(CONTACT) == (
        runtime.sensor(CONTACT).reading()
    )
    state = get_joint_state_sensor_interface().get_sensor_reading(f"{ARM}/base")
    assert state.is_valid and joints.get_sensor_reading().is_valid
    np.testing.assert_allclose(state.positions, engine.state().joint_positions, atol=1e-6)
    runtime.close()


def test_simulation_dt_and_reset(caplog):
    stage = Usd.Stage.Open(str(SCENE))
    sim = SimulationContext(physics_dt=1.0 / 240.0, stage=stage)
    assert sim.get_physics_dt() == pytest.approx(1.0 / 240.0)
    assert sim.get_rendering_dt() == pytest.approx(1.0 / 240.0)
    sim.set_simulation_dt(rendering_dt=1.0 / 30.0)
    assert sim.get_rendering_dt() == pytest.approx(1.0 / 30.0)
    with pytest.raises(ValueError, match="physics_dt"):
        sim.set_simulation_dt(physics_dt=0.0)
    imu = IMUSensor(IMU)
    sim.play()
    assert sim.engine.model.opt.timestep == pytest.approx(1.0 / 240.0)
    with caplog.at_level(logging.WARNING, logger="runtime.compat"):
        sim.set_simulation_dt(physics_dt=1.0 / 120.0)
    assert "next play" in caplog.text
    for _ in range(5):
        sim.step()
    assert imu.get_sensor_reading().is_valid
    sim.reset()
    assert sim.is_playing() and sim.current_time == 0.0
    assert sim.engine.model.opt.timestep == pytest.approx(1.0 / 120.0)
    assert not imu.get_sensor_reading().is_valid  # until the next step
    sim.step()
    assert imu.get_sensor_reading().time == pytest.approx(1.0 / 120.0)
    sim.reset(soft=True)
    assert sim.current_time == 0.0 and not imu.get_sensor_reading().is_valid


def test_surface_gripper_interface_and_view_find_the_running_simulation():
    from tests.helpers.surface_gripper import CUBE, GRIPPER, make_scene

    stage = make_scene(gap=0.005, clearance=0.004)
    sim = SimulationContext(stage=stage)
    iface = acquire_surface_gripper_interface()
    view = GripperView("/World/Surface.*")
    assert view.paths == [GRIPPER]
    assert iface.close_gripper(GRIPPER) is False  # before play: unknown
    assert view.get_surface_gripper_status() == [0]
    sim.play()
    for _ in range(5):
        sim.step(render=False)  # grippers start at the first step; the cube settles
    assert iface.close_gripper(GRIPPER) is True
    sim.step()
    sim.step()
    assert iface.get_gripped_objects(GRIPPER) == [CUBE]
    assert view.get_surface_gripper_status(indices=[0]) == [int(GripperStatus.Closed)]
    view.set_surface_gripper_properties(None, None, [5.0], None, [0])  # positional, Isaac order
    assert sim.gripper_runtime._grippers[GRIPPER].shear_limit == 5.0  # re-read while running
    assert view.get_surface_gripper_properties(indices=[0])[2] == [5.0]
    view.apply_gripper_action([-1.0], indices=[0])
    assert view.get_surface_gripper_status() == [int(GripperStatus.Open)]
    with pytest.raises(IndexError):
        view.get_gripped_objects(indices=[1])
    sim.stop()
    assert iface.get_gripped_objects(GRIPPER) == []


def test_timeline_interface_drives_the_current_stage_context():
    stage = Usd.Stage.Open(str(SCENE))
    set_current_stage(stage)
    timeline = get_timeline_interface()
    assert timeline.is_stopped() and not timeline.is_playing()
    imu = IMUSensor(IMU)
    timeline.play()  # the context created for the current stage by the wrapper
    sim = SimulationContext.instance()
    assert sim.stage == stage and sim.is_playing() and timeline.is_playing()
    sim.step()
    sim.step()
    assert timeline.get_current_time() == pytest.approx(2 * sim.get_physics_dt())
    assert imu.get_sensor_reading().is_valid
    timeline.pause()
    assert not sim.is_playing() and not sim.is_stopped()
    timeline.stop()
    assert sim.is_stopped() and not imu.get_sensor_reading().is_valid
