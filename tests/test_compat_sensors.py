"""Isaac-named sensor wrappers (runtime.compat.isaac_sensors) on the simple arm in MuJoCo.

The wrappers only rename and reshape simrt readings (sensor spec §3.4, 4.6, 5.5, 6, 7); the
numbers they return are checked against MuJoCo's own data of the same step: the IMU's
orientation and angular velocity against the link body's ``xquat`` / local
``mj_objectVelocity``, ray depths against ``mj_ray`` from the reported ray origins, the
contact count against MuJoCo's contact list, and the joint-state frame against the engine's
DOF state.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from pxr import Usd  # noqa: E402

from runtime.compat import isaac  # noqa: E402
from runtime.compat.isaac_sensors import (  # noqa: E402
    ContactSensor,
    EffortSensor,
    IMUSensor,
    ImuSensorReading,
    JointStateSensor,
    RaycastSensor,
)
from runtime.engine import MujocoEngine  # noqa: E402
from runtime.schema.dof import build_dof_table  # noqa: E402
from runtime.sensors import SensorRuntime  # noqa: E402
from runtime.sensors.effort import EffortSensor as SimrtEffortSensor  # noqa: E402
from runtime.sensors.joint_state import JointStateSensor as SimrtJointStateSensor  # noqa: E402

SCENE = Path(__file__).resolve().parents[1] / "scenes" / "simple_arm.usda"
ARM = "/World/SimpleArm"
IMU = f"{ARM}/link3/imu"
CONTACT = f"{ARM}/link4/contact_sensor"
RAYS = f"{ARM}/base/range_finder"
JOINT = f"{ARM}/joints/shoulder_lift"


@pytest.fixture(scope="module")
def sim():
    stage = Usd.Stage.Open(str(SCENE))
    robot = stage.GetPrimAtPath(ARM)
    engine = MujocoEngine(stage, robot_prim=robot)
    table = build_dof_table(stage, robot)
    extra = [SimrtJointStateSensor(f"{ARM}/base"), SimrtEffortSensor(JOINT)]
    runtime = SensorRuntime(
        stage,
        engine.body_paths,
        table,
        sensors=SensorRuntime.discover(stage) + extra,
        watch_usd=False,
    )
    yield stage, engine, runtime
    runtime.close()


def _step(engine, runtime, n=1):
    for _ in range(n):
        engine.step()
        runtime.step(engine.state())


def _body_id(engine, path):
    rows = list(engine.built.body_paths)
    return int(engine.built.body_ids[rows.index(path)])


def test_names_reexported_from_isaac_module():
    for name in (
        "ContactSensor",
        "IMUSensor",
        "RaycastSensor",
        "JointStateSensor",
        "EffortSensor",
        "ImuSensorReading",
    ):
        assert getattr(isaac, name) is globals()[name]
        assert name in isaac.__all__


def test_frames_before_first_step_and_wrong_types(sim):
    stage, engine, runtime = sim
    if runtime.step_count:
        pytest.skip("module fixture already stepped")
    contact = ContactSensor(CONTACT + "/", runtime=runtime)  # trailing slash stripped
    assert contact.prim_path == CONTACT
    assert contact.get_data() == {"time": 0.0, "physics_step": 0.0}
    imu = IMUSensor(stage.GetPrimAtPath(IMU), runtime=runtime)  # a Usd.Prim works too
    frame = imu.get_data()
    np.testing.assert_array_equal(frame["orientation"], [1, 0, 0, 0])
    assert frame["orientation"].dtype == np.float32 and frame["time"] == 0.0
    assert imu.get_sensor_reading() == ImuSensorReading()
    rays = RaycastSensor(RAYS, runtime=runtime).get_data()
    assert rays["depths"].shape == (0,) and rays["hit_positions"].shape == (0, 3)
    with pytest.raises(ValueError, match="imu"):
        ContactSensor(IMU, runtime=runtime)
    with pytest.raises(ValueError, match="not a raycast sensor"):
        RaycastSensor(f"{ARM}/link1", runtime=runtime)


def test_imu_matches_mujoco_body_motion(sim):
    stage, engine, runtime = sim
    imu = IMUSensor(IMU, runtime=runtime)
    names = list(engine.dof_names)
    engine.set_joint_targets(
        np.array([0.8, 0.5]), [names.index("shoulder_pan"), names.index("shoulder_lift")]
    )
    _step(engine, runtime, 15)  # the drives swing the arm towards the new targets
    frame = imu.get_data()
    reading = imu.get_sensor_reading()
    m, d = engine.model, engine.data
    body = _body_id(engine, f"{ARM}/link3")
    q = np.array(d.xquat[body])
    q_imu = frame["orientation"].astype(np.float64)
    assert abs(abs(float(q @ q_imu)) - 1.0) < 1e-5  # same rotation (sign free)
    velocity = np.zeros(6)
    mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, body, velocity, 1)
    assert np.linalg.norm(velocity[:3]) > 1e-3  # it is really moving
    np.testing.assert_allclose(frame["angular_velocity"], velocity[:3], rtol=1e-4, atol=1e-5)
    assert frame["linear_acceleration"].dtype == np.float32
    assert frame["physics_step"] == float(runtime.step_count)
    assert reading.is_valid and reading.time == pytest.approx(frame["time"])
    np.testing.assert_allclose(
        [reading.angular_velocity_x, reading.angular_velocity_y, reading.angular_velocity_z],
        frame["angular_velocity"],
        rtol=1e-6,
    )
    np.testing.assert_allclose(
        [
            reading.orientation_w,
            reading.orientation_x,
            reading.orientation_y,
            reading.orientation_z,
        ],
        frame["orientation"],
        rtol=1e-6,
    )
    no_gravity = imu.get_data(read_gravity=False)["linear_acceleration"]
    g = np.linalg.norm(frame["linear_acceleration"] - no_gravity)
    assert g == pytest.approx(np.linalg.norm(m.opt.gravity), rel=1e-4)


def test_stale_frames_after_invalid_reads(sim):
    stage, engine, runtime = sim
    _step(engine, runtime, 2)
    imu = IMUSensor(IMU, runtime=runtime)
    contact = ContactSensor(CONTACT, runtime=runtime)
    rays = RaycastSensor(RAYS, runtime=runtime)
    before_imu, before_contact = imu.get_data(), contact.get_data()
    assert before_contact["physics_step"] == float(runtime.step_count)
    for wrapper in (imu, contact, rays):
        wrapper.sensor.enabled = False
    try:
        _step(engine, runtime)
        assert not imu.get_sensor_reading().is_valid
        assert imu.get_data() is before_imu and contact.get_data() is before_contact  # stale
        invalid = rays.get_data()  # raycast frames are not stale
        assert invalid["depths"].shape == (0,) and invalid["hit_prim_paths"] == []
        assert invalid["physics_step"] == runtime.step_count
    finally:
        for wrapper in (imu, contact, rays):
            wrapper.sensor.enabled = True
    _step(engine, runtime)
    assert imu.get_data()["physics_step"] == float(runtime.step_count)


def test_raycast_depths_match_mj_ray(sim):
    stage, engine, runtime = sim
    rays = RaycastSensor(RAYS, runtime=runtime)
    m, d = engine.model, engine.data
    base = _body_id(engine, f"{ARM}/base")
    checked = 0
    for _ in range(8):  # the time offsets fire different rays on different steps
        _step(engine, runtime)
        reading = rays.get_sensor_reading()
        frame = rays.get_data()
        assert reading.is_valid and reading.ray_count == 4
        np.testing.assert_array_equal(frame["depths"], reading.depths)
        assert frame["hit_positions"].shape == (4, 3) and len(frame["hit_prim_paths"]) == 4
        for i in np.flatnonzero(reading.depths < 5.0):
            origin = reading.ray_origins_world[i].astype(np.float64)
            direction = reading.ray_end_points_world[i] - origin
            direction /= np.linalg.norm(direction)
            geom = np.zeros(1, np.int32)
            distance = mujoco.mj_ray(m, d, origin, direction, None, 1, base, geom)
            assert distance == pytest.approx(float(reading.depths[i]), abs=2e-4)
            assert frame["hit_prim_paths"][i] != ""
            checked += 1
    assert checked > 0, "no ray hit anything: the oracle compared nothing"


def test_contact_frame_counts_mujoco_contacts(sim):
    stage, engine, runtime = sim
    contact = ContactSensor(CONTACT, runtime=runtime)
    contact.add_raw_contact_data_to_frame()
    m, d = engine.model, engine.data
    link4 = _body_id(engine, f"{ARM}/link4")
    for _ in range(5):
        _step(engine, runtime)
        frame = contact.get_data()
        expected = sum(
            1
            for c in d.contact[: d.ncon]
            if link4 in (m.geom_bodyid[c.geom1], m.geom_bodyid[c.geom2])
        )
        reading = contact.get_sensor_reading()
        assert frame["number_of_contacts"] == expected == reading.number_of_contacts
        assert frame["force"] == pytest.approx(reading.value)
        assert frame["in_contact"] is bool(reading.in_contact)
        assert len(frame["contacts"]) == expected
        for raw in frame["contacts"]:
            assert raw["position"].dtype == np.float32 and raw["position"].shape == (3,)
            assert f"{ARM}/link4" in (raw["body0"], raw["body1"])


def test_joint_state_and_effort_frames(sim):
    stage, engine, runtime = sim
    joints = JointStateSensor(f"{ARM}/base", runtime=runtime)
    effort = EffortSensor(JOINT, runtime=runtime, enabled=True)
    _step(engine, runtime, 3)
    state = engine.state()
    frame = joints.get_data()
    assert frame["is_valid"] and frame["dof_names"] == list(engine.dof_names)
    np.testing.assert_allclose(frame["positions"], state.joint_positions.astype(np.float32))
    np.testing.assert_allclose(frame["efforts"], state.joint_efforts.astype(np.float32))
    assert frame["positions"].dtype == np.float32 and frame["dof_types"].dtype == np.uint8
    assert frame["physics_step"] == state.step
    index = list(engine.dof_names).index("shoulder_lift")
    data = effort.get_data()
    assert data["is_valid"] and data["value"] == pytest.approx(
        float(np.float32(state.joint_efforts[index]))
    )
    effort.change_buffer_size(3)
    assert len(effort.sensor.history) == 3
    effort.get_sensor_reading()
    assert effort.sensor.history[0].value == pytest.approx(data["value"])
    joints_off = JointStateSensor(f"{ARM}/base", runtime=runtime, enabled=False)
    try:
        invalid = joints_off.get_data()
        assert not invalid["is_valid"] and invalid["positions"].shape == (0,)
        assert invalid["stage_meters_per_unit"] == 0.0 and invalid["time"] == 0.0
    finally:
        joints_off.sensor.enabled = True
    with pytest.raises(ValueError, match="not a effort sensor|effort"):
        EffortSensor(f"{ARM}/joints/elbow", runtime=runtime)


def test_contact_frame_force_matches_mujoco_when_pressing_the_table():
    """Driven to the scene's ``touch_table`` pose, link4 presses on the table: the frame's
    force equals the net MuJoCo contact force on link4 (``mj_contactForce``)."""
    stage = Usd.Stage.Open(str(SCENE))
    robot = stage.GetPrimAtPath(ARM)
    engine = MujocoEngine(stage, robot_prim=robot)
    runtime = SensorRuntime(
        stage, engine.body_paths, build_dof_table(stage, robot), watch_usd=False
    )
    try:
        contact = ContactSensor(CONTACT, runtime=runtime)
        contact.add_raw_contact_data_to_frame()
        names = list(engine.dof_names)
        engine.set_joint_targets(
            np.radians([70.7, 49.1]), [names.index("shoulder_lift"), names.index("elbow")]
        )
        m, d = engine.model, engine.data
        link4 = _body_id(engine, f"{ARM}/link4")
        frame = contact.get_data()
        for _ in range(1500):
            _step(engine, runtime)
            frame = contact.get_data()
            if frame.get("in_contact"):
                break
        _step(engine, runtime, 30)  # settle onto the table
        frame = contact.get_data()
        assert frame["in_contact"] and frame["number_of_contacts"] > 0
        net = np.zeros(3)
        count = 0
        for i, c in enumerate(d.contact[: d.ncon]):
            bodies = (m.geom_bodyid[c.geom1], m.geom_bodyid[c.geom2])
            if link4 not in bodies:
                continue
            count += 1
            local = np.zeros(6)
            mujoco.mj_contactForce(m, d, i, local)
            world = np.asarray(c.frame).reshape(3, 3).T @ local[:3]
            net += world if bodies[1] == link4 else -world
        assert frame["number_of_contacts"] == count == len(frame["contacts"])
        assert frame["force"] == pytest.approx(np.linalg.norm(net), rel=1e-3)
    finally:
        runtime.close()
