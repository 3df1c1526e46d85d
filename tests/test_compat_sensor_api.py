"""Isaac's physics-sensor API surface in runtime.compat (issue 17).

An IMU authored with ``IMU.create(...)`` must read exactly like one authored by hand (same
body, same offset, same widths) when both are stepped by simrt's SensorRuntime beside
MuJoCo; the authoring rules of sensor spec §7 / table 1.7; the interface accessors return the
same readings as the runtime's sensors; Isaac's logger names receive simrt's records.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")

from pxr import Gf, Usd, UsdGeom  # noqa: E402

from runtime.compat import isaac  # noqa: E402
from runtime.compat.isaac import (  # noqa: E402
    IMU,
    Contact,
    IMUSensorReading,
    Raycast,
    get_contact_sensor_interface,
    get_imu_sensor_interface,
    get_raycast_sensor_interface,
)
from runtime.compat.isaac_sensors import IMUSensor  # noqa: E402
from runtime.engine import MujocoEngine  # noqa: E402
from runtime.schema.dof import build_dof_table  # noqa: E402
from runtime.sensors import SensorRuntime  # noqa: E402

SCENE = Path(__file__).resolve().parents[1] / "scenes" / "simple_arm.usda"
ARM = "/World/SimpleArm"


def _open() -> Usd.Stage:
    return Usd.Stage.Open(str(SCENE))


def test_imu_create_reads_like_hand_authored_imu():
    stage = _open()
    stage.SetEditTarget(stage.GetSessionLayer())
    q = Gf.Quatd(np.cos(0.4), Gf.Vec3d(0.0, np.sin(0.4), 0.0))
    # by hand: typed prim + attributes + xform ops
    hand = stage.DefinePrim(f"{ARM}/link2/imu_hand", "IsaacImuSensor")
    xf = UsdGeom.Xformable(hand)
    xf.AddTranslateOp().Set(Gf.Vec3d(0.03, -0.02, 0.1))
    xf.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(q)
    hand.GetAttribute("linearAccelerationFilterWidth").Set(3)  # schema attributes exist
    hand.GetAttribute("angularVelocityFilterWidth").Set(2)
    # by IMU.create (the same numbers through the Isaac authoring API)
    made = IMU.create(
        f"{ARM}/link2/imu_made",
        translations=(0.03, -0.02, 0.1),
        orientations=(q.GetReal(), *q.GetImaginary()),
        linear_acceleration_filter_width=3,
        angular_velocity_filter_width=2,
        stage=stage,
    )
    assert made.prim.GetTypeName() == "IsaacImuSensor"
    assert made.get_orientation_filter_width() == 1
    # and a copy of the file's IMU placed by world position
    file_imu = stage.GetPrimAtPath(f"{ARM}/link3/imu")
    world = UsdGeom.Xformable(file_imu).ComputeLocalToWorldTransform(Usd.TimeCode.Default())
    by_world = IMU.create(
        f"{ARM}/link3/imu", positions=tuple(world.ExtractTranslation()), stage=stage
    )
    assert by_world.prim_path == f"{ARM}/link3/imu_01"  # numbered: the path is taken

    robot = stage.GetPrimAtPath(ARM)
    engine = MujocoEngine(stage, robot_prim=robot)
    runtime = SensorRuntime(
        stage, engine.body_paths, build_dof_table(stage, robot), watch_usd=False
    )
    try:
        names = list(engine.dof_names)
        engine.set_joint_targets(
            np.array([0.9, 0.6]), [names.index("shoulder_pan"), names.index("shoulder_lift")]
        )
        pairs = [
            (IMUSensor(hand.GetPath(), runtime=runtime), IMUSensor(made, runtime=runtime)),
            (IMUSensor(file_imu, runtime=runtime), IMUSensor(by_world, runtime=runtime)),
        ]
        moving = 0.0
        for _ in range(25):
            engine.step()
            runtime.step(engine.state())
            for a, b in pairs:
                ra, rb = a.get_sensor_reading(), b.get_sensor_reading()
                assert ra.is_valid and rb.is_valid
                assert ra == rb
            moving = max(moving, abs(pairs[0][0].get_sensor_reading().angular_velocity_z))
        assert moving > 0.1  # the arm really swung, so equality is not trivially zeros
        # the interface accessor returns the same struct
        iface = get_imu_sensor_interface()
        iface.bind_runtime(runtime)
        assert iface.get_sensor_reading(made.prim_path) == pairs[0][1].get_sensor_reading()
        assert iface.get_sensor_reading("/World/nothing") == IMUSensorReading()
        contact = get_contact_sensor_interface()
        contact.bind_runtime(runtime)
        path = f"{ARM}/link4/contact_sensor"
        assert contact.get_sensor_reading(path) == runtime.sensor(path).reading()
        rays = get_raycast_sensor_interface()
        rays.bind_runtime(runtime)
        reading = rays.get_sensor_reading(f"{ARM}/base/range_finder")
        assert reading.is_valid and reading.ray_count == 4
        assert not rays.is_sensor(path)
    finally:
        for iface in (
            get_imu_sensor_interface(),
            get_contact_sensor_interface(),
            get_raycast_sensor_interface(),
        ):
            iface.bind_runtime(None)
        runtime.close()


def test_contact_authoring_rules():
    stage = _open()
    c = Contact.create(f"{ARM}/link4/pad/", translations=(0, 0, 0.01), stage=stage)
    assert c.prim_path == f"{ARM}/link4/pad"
    # Python authoring defaults (table 1.7): min 0.0 authored, not the schema's 0.01
    assert c.get_threshold() == (0.0, 100000.0)
    assert c.get_radius() == -1.0
    c.set_min_threshold(2.5)
    c.set_radius(0.05)
    assert c.get_threshold() == (2.5, 100000.0) and c.get_radius() == pytest.approx(0.05)
    assert Contact.create(f"{ARM}/link4/pad", stage=stage).prim_path == f"{ARM}/link4/pad_01"
    with pytest.raises(ValueError, match="rigid-body ancestor"):
        Contact.create("/World/pad", stage=stage)
    with pytest.raises(RuntimeError, match="parent prim"):
        Contact.create("/Nope/pad", stage=stage)
    with pytest.raises(ValueError, match="not both"):
        Contact.create(f"{ARM}/link4/p2", positions=(0, 0, 0), translations=(0, 0, 0), stage=stage)
    with pytest.raises(ValueError, match="IsaacImuSensor"):
        Contact(f"{ARM}/link3/imu", stage=stage)
    wrapped = Contact(f"{ARM}/link4/contact_sensor", stage=stage)
    assert wrapped.get_min_threshold() == pytest.approx(0.01)


def test_raycast_authoring_rules():
    stage = _open()
    with pytest.raises(ValueError, match="needs ray_origins"):
        Raycast.create(f"{ARM}/base/r", ray_origins=[(0, 0, 0)], stage=stage)
    with pytest.raises(ValueError, match="2 rays"):
        Raycast.create(
            f"{ARM}/base/r", ray_origins=[(0, 0, 0)] * 2, ray_directions=[(1, 0, 0)], stage=stage
        )
    with pytest.raises(ValueError, match="time_offsets"):
        Raycast.create(
            f"{ARM}/base/r",
            ray_origins=[(0, 0, 0)],
            ray_directions=[(1, 0, 0)],
            ray_time_offsets=[0.0, 0.1],
            stage=stage,
        )
    r = Raycast.create(
        f"{ARM}/base/r", ray_origins=[(0, 0, 0)] * 2, ray_directions=[(1, 0, 0)] * 2, stage=stage
    )
    assert r.get_num_rays() == 2 and r.get_min_range() == pytest.approx(0.4)
    assert not r.prim.GetAttribute("rayTimeOffsets").HasAuthoredValue()
    r.set_ray_origins([(0, 0, 0)] * 3)  # rewriting origins rewrites numRays
    assert r.get_num_rays() == 3
    assert r.get_output_frame_of_reference() == "SENSOR"
    with pytest.raises(ValueError, match="SENSOR or WORLD"):
        r.set_output_frame_of_reference("LOCAL")


def test_isaac_logger_names_receive_runtime_records():
    assert isaac._logging_bridge.installed()
    got: list[logging.LogRecord] = []
    root_got: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def __init__(self, sink):
            super().__init__()
            self.sink = sink

        def emit(self, record):
            self.sink.append(record)

    parent = logging.getLogger("usd.schema.isaac")
    handler, root_handler = Keep(got), Keep(root_got)
    parent.addHandler(handler)
    logging.getLogger().addHandler(root_handler)
    try:
        logging.getLogger("runtime.schema.utils").warning("probe %d", 7)
        logging.getLogger("runtime.kinematics.poser").warning("poser probe")
    finally:
        parent.removeHandler(handler)
        logging.getLogger().removeHandler(root_handler)
    assert [r.name for r in got] == ["usd.schema.isaac.robot_schema.utils"]
    assert got[0].getMessage() == "probe 7"
    # the root logger hears each record once, under its runtime.* name
    assert [r.name for r in root_got] == ["runtime.schema.utils", "runtime.kinematics.poser"]
