"""A fixed depth camera (runtime.rays.views.PinholeView) against the full scene cast.

The camera on the Panda scene's table casts its static colliders once and then only the
moving links on the pixels they can cover; its images must equal ``RayScene.cast`` of every
pixel ray at the same body poses, bit for bit, over random poses (links in front of the
table and ground, partly outside the view, the red box anywhere, the camera inside it).
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
from pxr import Usd

import runtime.schema  # noqa: F401
from runtime.engine.mujoco_engine import MujocoEngine
from runtime.sensors.lab import (
    CameraOffset,
    PinholeCameraPattern,
    RayCasterCamera,
    RayCasterCameraConfig,
    make_lab_sensors,
)
from runtime.sensors.lab.patterns import intrinsic_matrix


@pytest.fixture(scope="module")
def panda():
    return MujocoEngine(Usd.Stage.Open("scenes/panda_lab_camera.usda"))


def body_poses(camera, data):
    """Poses of the scene's bodies (``body_paths`` order) in ``data``, built here."""
    bodies = camera.bodies
    index = {p: i for i, p in enumerate(bodies.paths)}
    rows = [index[p] for p in camera.ray_scene.body_paths]
    positions = np.array(
        [
            bodies.static_positions[e] if bodies.is_static[e] else data.xpos[bodies.body_ids[e]]
            for e in rows
        ]  # fmt: skip
    )
    orientations = np.array(
        [
            bodies.static_orientations[e] if bodies.is_static[e] else data.xquat[bodies.body_ids[e]]
            for e in rows
        ]  # fmt: skip
    )
    return positions, orientations


def full_cast(camera, data):
    """Distances, actors and normals of every pixel ray: one RayScene.cast."""
    origins, directions = camera._buffers[0][0], camera._buffers[0][1]
    count = origins.shape[0]
    out = np.empty(count), np.empty(count, np.int64), np.empty((count, 3))
    camera.ray_scene.cast(
        origins, directions, np.full(count, camera.config.max_distance),
        *body_poses(camera, data), *out,
    )  # fmt: skip
    return out


def random_pose(engine, data, rng, box_near_camera):
    m = engine.model
    arm = slice(0, 9)
    data.qpos[arm] = rng.uniform(m.jnt_range[arm, 0], m.jnt_range[arm, 1])
    adr = m.jnt_qposadr[m.body("/World/RedBox").jntadr[0]]
    # anywhere between the camera and the robot (sometimes at the image's edges), or
    # around the camera itself
    camera_pos = np.array([1.4, 0.1, 1.0])
    offset = rng.uniform(-1.0, 0.0, 3) * [1.2, -0.8, 0.9]
    data.qpos[adr : adr + 3] = camera_pos + (0.0 if box_near_camera else offset)
    q = rng.normal(size=4)
    data.qpos[adr + 3 : adr + 7] = q / np.linalg.norm(q)
    mujoco.mj_kinematics(m, data)


def test_fixed_camera_images_equal_the_full_cast(panda):
    sensors = make_lab_sensors(panda, num_envs=2)
    camera = next(iter(sensors.values()))
    assert camera._view is not None  # static mount, no drift: the cached view
    cfg = camera.config
    # the rays are the pinhole formula's (independently built here), turned by the mount
    k = intrinsic_matrix(cfg.pattern_cfg)
    v, u = np.divmod(np.arange(48 * 64), 64)
    local = np.stack([np.ones(u.size), -(u - k[0, 2]) / k[0, 0], -(v - k[1, 2]) / k[1, 1]], 1)
    local /= np.linalg.norm(local, axis=1, keepdims=True)
    rotation = np.zeros(9)
    mujoco.mju_quat2Mat(rotation, np.asarray(cfg.offset.rot, float))
    expected = local @ rotation.reshape(3, 3).T
    np.testing.assert_allclose(camera._buffers[0][1], expected, atol=1e-12)
    datas = [mujoco.MjData(panda.model) for _ in range(2)]
    rng = np.random.default_rng(7)
    moving_seen = border_seen = inside_seen = 0
    actors = camera.actor_paths
    for step in range(80):
        for w, data in enumerate(datas):
            random_pose(panda, data, rng, box_near_camera=(step == 40 and w == 1))
        camera.update(datas, panda.dt)
        for w, data in enumerate(datas):
            distances, hit_ids, normals = full_cast(camera, data)
            got = camera.data.output["distance_to_image_plane"][w].reshape(-1)
            hit = np.isfinite(distances)
            np.testing.assert_array_equal(camera.data.ray_hit_ids[w], hit_ids)
            np.testing.assert_array_equal(got, np.where(hit, distances * camera._forward, np.inf))
            image_normals = camera.data.output["normals"][w].reshape(-1, 3)
            np.testing.assert_array_equal(image_normals[hit], normals[hit])
            assert np.all(np.isinf(image_normals[~hit]))
            on_robot = np.array([i >= 0 and "/Panda/" in actors[i] for i in hit_ids])
            moving_seen += bool(on_robot.any())
            image = on_robot.reshape(48, 64)
            border_seen += bool(image[0].any() or image[-1].any() or image[:, 0].any()
                                or image[:, -1].any())  # fmt: skip
            inside_seen += bool(np.all(distances == 0.0))
    assert moving_seen > 60 and border_seen > 5 and inside_seen == 1


def test_camera_on_a_moving_link_casts_every_ray(panda):
    cfg = RayCasterCameraConfig(
        prim_path=".*/panda_hand",
        offset=CameraOffset(pos=(0.0, 0.0, 0.1), rot=(0.0, 1.0, 0.0, 0.0), convention="ros"),
        pattern_cfg=PinholeCameraPattern(width=16, height=12, focal_length=12.0),
        data_types=["distance_to_camera"],
        mesh_prim_paths=["/World/Ground", "/World/Table", "/World/RedBox", "/World/Panda"],
    )
    camera = RayCasterCamera(panda, cfg)
    assert camera.enabled, camera.disabled_reason
    assert camera._view is None
    data = mujoco.MjData(panda.model)
    rng = np.random.default_rng(3)
    for _ in range(5):
        random_pose(panda, data, rng, box_near_camera=False)
        camera.update([data], panda.dt)
        camera._frame(0, data, camera._buffers[0])
        distances, _, _ = full_cast(camera, data)
        got = camera.data.output["distance_to_camera"][0].reshape(-1)
        np.testing.assert_array_equal(got, distances)
    assert math.isfinite(got.min())


def test_view_checks_its_inputs_and_rewrites_after_invalidate(panda):
    camera = next(iter(make_lab_sensors(panda).values()))
    view = camera._view
    data = mujoco.MjData(panda.model)
    mujoco.mj_kinematics(panda.model, data)
    with pytest.raises(ValueError, match="env"):
        view.update(1, data.xpos, data.xquat)
    with pytest.raises(ValueError, match="body_positions"):
        view.update(0, np.asfortranarray(np.tile(data.xpos, (1, 2)))[:, :3], data.xquat)
    with pytest.raises(ValueError, match="body_orientations"):
        view.update(0, data.xpos, data.xquat[:-1])
    camera.update([data], panda.dt)
    image = camera.data.output["distance_to_image_plane"]
    expected = image.copy()
    image[:] = -1.0  # written over: only invalidate() makes the view rewrite every pixel
    camera.update([data], panda.dt)
    assert np.count_nonzero(image == -1.0) > 1000
    view.invalidate()
    camera.update([data], panda.dt)
    np.testing.assert_array_equal(image, expected)


@pytest.mark.parametrize("clipping", ["none", "max", "zero"])
def test_view_images_equal_the_general_path(panda, clipping):
    """Every image type and clipping: the view's images = the per-ray path's (reference)."""
    cfg = next(iter(make_lab_sensors(panda).values())).config
    cfg = RayCasterCameraConfig(
        **{
            **cfg.__dict__,
            "data_types": ["distance_to_image_plane", "distance_to_camera", "normals"],
            "depth_clipping_behavior": clipping,
            "max_distance": 1.6,  # the far table and ground beyond it
        }
    )
    fast, general = RayCasterCamera(panda, cfg, num_envs=2), RayCasterCamera(panda, cfg, 2)
    assert fast._view is not None
    general._view = None  # the frame kernel, RayScene.cast_trusted, the image kernel
    datas = [mujoco.MjData(panda.model) for _ in range(2)]
    rng = np.random.default_rng(11)
    for _ in range(10):
        for data in datas:
            random_pose(panda, data, rng, box_near_camera=False)
        fast.update(datas, panda.dt)
        general.update(datas, panda.dt)
        for name, image in fast.data.output.items():
            np.testing.assert_array_equal(image, general.data.output[name])
        np.testing.assert_array_equal(fast.data.ray_hit_ids, general.data.ray_hit_ids)
        for name in ("pos_w", "quat_w_world", "quat_w_ros", "quat_w_opengl"):
            np.testing.assert_array_equal(getattr(fast.data, name), getattr(general.data, name))
    depth = fast.data.output["distance_to_camera"]
    assert np.any(depth == {"none": np.inf, "max": 1.6, "zero": 0.0}[clipping])


def test_camera_with_drift_casts_every_ray(panda):
    cfg = next(iter(make_lab_sensors(panda).values())).config
    cfg = RayCasterCameraConfig(**{**cfg.__dict__, "drift_range": (-0.01, 0.01), "seed": 1})
    camera = RayCasterCamera(panda, cfg, num_envs=2)
    assert camera._view is None  # (each world's rays move with its drift)
    datas = [mujoco.MjData(panda.model) for _ in range(2)]
    rng = np.random.default_rng(5)
    for data in datas:
        random_pose(panda, data, rng, box_near_camera=False)
    camera.update(datas, panda.dt)
    assert not np.array_equal(camera.data.pos_w[0], camera.data.pos_w[1])
    for w, data in enumerate(datas):
        camera._frame(w, data, camera._buffers[0])
        distances, _, _ = full_cast(camera, data)
        got = camera.data.output["distance_to_image_plane"][w].reshape(-1)
        expected = np.where(np.isfinite(distances), distances * camera._forward, np.inf)
        np.testing.assert_array_equal(got, expected)


def test_fixed_camera_over_a_smooth_motion_equals_the_full_cast(panda):
    """The arm moving a little per update (each pixel first cast up to a little beyond the
    link it saw last): images = the full cast at every update, 2 worlds moving apart."""
    sensors = make_lab_sensors(panda, num_envs=2)
    camera = next(iter(sensors.values()))
    m = panda.model
    datas = [mujoco.MjData(m) for _ in range(2)]
    rng = np.random.default_rng(5)
    starts, ends = [], []
    for data in datas:
        random_pose(panda, data, rng, box_near_camera=False)
        starts.append(data.qpos.copy())
        random_pose(panda, data, rng, box_near_camera=False)
        ends.append(data.qpos.copy())
    robot_seen = 0
    for step in range(41):
        for w, data in enumerate(datas):
            data.qpos[:9] = starts[w][:9] + (ends[w][:9] - starts[w][:9]) * (step / 40.0)
            data.qpos[9:] = starts[w][9:]  # the red box stays
            mujoco.mj_kinematics(m, data)
        camera.update(datas, panda.dt, force_recompute=True)
        for w, data in enumerate(datas):
            distances, hit_ids, normals = full_cast(camera, data)
            hit = np.isfinite(distances)
            np.testing.assert_array_equal(camera.data.ray_hit_ids[w], hit_ids)
            got = camera.data.output["distance_to_image_plane"][w].reshape(-1)
            np.testing.assert_array_equal(got, np.where(hit, distances * camera._forward, np.inf))
            image_normals = camera.data.output["normals"][w].reshape(-1, 3)
            np.testing.assert_array_equal(image_normals[hit], normals[hit])
            robot_seen += int(np.count_nonzero(["/Panda/" in camera.actor_paths[i]
                                                for i in hit_ids if i >= 0]))  # fmt: skip
    assert robot_seen > 40 * 2 * 50  # (links on tens of pixels at every update)
