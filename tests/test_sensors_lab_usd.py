"""Lab sensors read from USD (simrt:lab:* attributes) and through Isaac Lab's cfg names."""

from __future__ import annotations

import logging

import numpy as np
from pxr import Sdf, Usd

import runtime.schema  # noqa: F401
from runtime.compat.isaaclab.sensors import (
    ContactSensorCfg,
    FrameTransformerCfg,
    ImuCfg,
    RayCasterCameraCfg,
    RayCasterCfg,
    patterns,
)
from runtime.engine.mujoco_engine import MujocoEngine
from runtime.sensors.lab import (
    ContactSensor,
    GridPattern,
    RayCaster,
    discover_lab_sensors,
    make_lab_sensor,
    make_lab_sensors,
)


def test_go2_scene_carries_its_sensors():
    engine = MujocoEngine(Usd.Stage.Open("scenes/go2_lab_sensors.usda"))
    specs = discover_lab_sensors(engine.stage)
    assert [s.kind for s in specs] == ["contact", "imu", "ray_caster"]
    contact = specs[0].config
    assert contact.prim_path == "/World/Go2/.*_foot" and contact.history_length == 3
    assert contact.track_air_time is True and contact.filter_prim_paths_expr == ["/World/Ground"]
    scan = specs[2].config
    assert isinstance(scan.pattern_cfg, GridPattern) and scan.pattern_cfg.size == (1.6, 1.0)
    sensors = make_lab_sensors(engine, num_envs=1)
    assert all(s is not None and s.enabled for s in sensors.values())
    feet = sensors["/World/LabSensors/FootContacts"]
    height = sensors["/World/LabSensors/HeightScan"]
    assert isinstance(feet, ContactSensor) and isinstance(height, RayCaster)
    assert feet.data.net_forces_w_history.shape == (1, 3, 4, 3)
    assert height.data.ray_hits_w.shape == (1, 187, 3)
    for _ in range(20):
        engine.step()
        for sensor in sensors.values():
            sensor.update([engine.data], engine.dt)
    assert np.all(feet.data.current_contact_time > 0)
    np.testing.assert_allclose(height.data.ray_hits_w[0, :, 2], 0.0, atol=1e-9)
    imu = sensors["/World/LabSensors/BaseImu"]
    assert imu.data.projected_gravity_b[0, 2] < -0.95


def test_panda_camera_scene():
    engine = MujocoEngine(Usd.Stage.Open("scenes/panda_lab_camera.usda"))
    camera = make_lab_sensors(engine)["/World/LabSensors/DepthCamera"]
    assert camera.enabled, camera.disabled_reason
    camera.update([engine.data], engine.dt)
    depth = camera.data.output["distance_to_image_plane"]
    assert depth.shape == (1, 48, 64, 1) and np.isfinite(depth).mean() > 0.5


def test_bad_usd_attributes_name_prim_and_attribute(caplog):
    stage = Usd.Stage.Open("scenes/go2_lab_sensors.usda")
    prim = stage.GetPrimAtPath("/World/LabSensors/FootContacts")
    prim.CreateAttribute("simrt:lab:forceTreshold", Sdf.ValueTypeNames.Double).Set(2.0)
    scan = stage.GetPrimAtPath("/World/LabSensors/HeightScan")
    scan.GetAttribute("simrt:lab:pattern:resolution").Set(0.0)
    with caplog.at_level(logging.ERROR, logger="runtime.sensors.lab"):
        specs = discover_lab_sensors(stage)
        assert specs[0].config is None
        assert "/World/LabSensors/FootContacts: simrt:lab:forceTreshold" in specs[0].error
        engine = MujocoEngine(stage)
        sensors = make_lab_sensors(engine)
    assert sensors["/World/LabSensors/FootContacts"] is None
    reason = sensors["/World/LabSensors/HeightScan"].disabled_reason
    assert (
        reason.startswith("/World/LabSensors/HeightScan: ") and "pattern_cfg.resolution" in reason
    )
    assert "simrt:lab:forceTreshold" in caplog.text


def test_isaac_lab_cfg_names_build_the_same_sensors():
    engine = MujocoEngine(Usd.Stage.Open("scenes/go2_standing.usda"))
    cfg = ContactSensorCfg(prim_path="/World/Go2/.*_foot", history_length=3, track_air_time=True)
    assert cfg.class_type is ContactSensor and cfg.force_threshold == 1.0 and cfg.debug_vis is False
    height = RayCasterCfg(
        prim_path="/World/Go2/Geometry/base",
        offset=RayCasterCfg.OffsetCfg(pos=(0.0, 0.0, 20.0)),
        attach_yaw_only=True,
        pattern_cfg=patterns.GridPatternCfg(resolution=0.1, size=[1.6, 1.0]),
        mesh_prim_paths=["/World/Ground"],
    )
    assert height.ray_alignment == "yaw" and height.max_distance == 1e6
    frames = FrameTransformerCfg(
        prim_path="/World/Go2/Geometry/base",
        target_frames=[FrameTransformerCfg.FrameCfg(prim_path="/World/Go2/.*_foot")],
    )
    imu = ImuCfg(prim_path="/World/Go2/Geometry/base")
    assert imu.gravity_bias == (0.0, 0.0, 9.81)
    camera = RayCasterCameraCfg(
        prim_path="/World/Go2/Geometry/base",
        pattern_cfg=patterns.PinholeCameraPatternCfg(width=8, height=6),
        mesh_prim_paths=["/World/Ground"],
    )
    assert camera.offset.convention == "ros" and camera.data_types == ["distance_to_image_plane"]
    built = [make_lab_sensor(engine, c) for c in (cfg, height, frames, imu, camera)]
    assert all(s.enabled for s in built), [s.disabled_reason for s in built]
    assert built[2].data.target_frame_names == ["FL_foot", "FR_foot", "RL_foot", "RR_foot"]
    for _ in range(5):
        engine.step()
        for s in built:
            s.update([engine.data], engine.dt)
    assert built[0].data.net_forces_w.shape == (1, 4, 3)


def test_wrongly_typed_usd_attribute_is_named():
    stage = Usd.Stage.Open("scenes/go2_lab_sensors.usda")
    prim = stage.GetPrimAtPath("/World/LabSensors/BaseImu")
    prim.CreateAttribute("simrt:lab:historyLength", Sdf.ValueTypeNames.String).Set("three")
    spec = [s for s in discover_lab_sensors(stage) if s.kind == "imu"][0]
    assert spec.config is None
    assert (
        spec.error
        == "/World/LabSensors/BaseImu: simrt:lab:historyLength: must be a number, got 'three'"
    )
