"""Lab ray patterns (Isaac Lab's formulas written out), ray caster and depth camera.

The camera's oracle is Embree (embreex) casting the same world rays on the same triangles.
"""

from __future__ import annotations

import logging
import math

import mujoco
import numpy as np
import pytest
from pxr import Usd

import runtime.schema  # noqa: F401
from runtime._compile.jit import JIT_DISABLED
from runtime.engine.mujoco_engine import MujocoEngine
from runtime.sensors.lab import (
    BpearlPattern,
    CameraOffset,
    GridPattern,
    LidarPattern,
    Offset,
    PinholeCameraPattern,
    RayCaster,
    RayCasterCamera,
    RayCasterCameraConfig,
    RayCasterConfig,
    RayListPattern,
)
from runtime.sensors.lab.patterns import intrinsic_matrix, pattern_rays

RAY_CASTER_FIELDS = {"pos_w": ("N", 3), "quat_w": ("N", 4), "ray_hits_w": ("N", "R", 3)}
CAMERA_FIELDS = {
    "pos_w": ("N", 3),
    "quat_w_world": ("N", 4),
    "quat_w_ros": ("N", 4),
    "quat_w_opengl": ("N", 4),
    "intrinsic_matrices": ("N", 3, 3),
}
CAMERA_IMAGES = {
    "distance_to_image_plane": ("N", "H", "W", 1),
    "distance_to_camera": ("N", "H", "W", 1),
    "normals": ("N", "H", "W", 3),
}


def shape_of(spec, sizes):
    return tuple(sizes[s] if isinstance(s, str) else s for s in spec)


# ---------------------------------------------------------------- patterns


@pytest.mark.parametrize("ordering", ["xy", "yx"])
def test_grid_pattern_formula(ordering):
    starts, dirs = pattern_rays(GridPattern(resolution=0.1, size=(1.6, 1.0), ordering=ordering))
    assert starts.shape == (187, 3)  # 17 x 11
    for k in range(187):
        if ordering == "xy":
            ix, iy = k % 17, k // 17
        else:
            ix, iy = k // 11, k % 11
        assert starts[k] == pytest.approx((-0.8 + 0.1 * ix, -0.5 + 0.1 * iy, 0.0), abs=1e-12)
        assert tuple(dirs[k]) == (0.0, 0.0, -1.0)


def test_lidar_pattern_formula():
    cfg = LidarPattern(
        channels=4,
        vertical_fov_range=(-15, 15),
        horizontal_fov_range=(-180, 180),
        horizontal_res=10,
    )
    _, dirs = pattern_rays(cfg)
    assert dirs.shape == (4 * 36, 3)  # 360 degrees: ceil(360 / 10) + 1 - 1 azimuths
    for k in range(dirs.shape[0]):
        c, j = divmod(k, 36)
        v, h = math.radians(-15 + 10 * c), math.radians(-180 + 10 * j)
        assert dirs[k] == pytest.approx(
            (math.cos(v) * math.cos(h), math.cos(v) * math.sin(h), math.sin(v)), abs=1e-12
        )
    cfg = LidarPattern(
        channels=1, vertical_fov_range=(0, 0), horizontal_fov_range=(-45, 45), horizontal_res=10
    )
    _, dirs = pattern_rays(cfg)
    assert dirs.shape == (10, 3)
    for j in range(10):
        h = math.radians(-45 + 10 * j)
        assert dirs[j] == pytest.approx((math.cos(h), math.sin(h), 0.0), abs=1e-12)


def test_bpearl_pattern_formula():
    _, dirs = pattern_rays(BpearlPattern())
    angles = [89.5 - 2.8125 * i for i in range(32)]
    assert angles[-1] == 2.3125
    assert dirs.shape == (36 * 32, 3)
    for k in range(dirs.shape[0]):
        j, i = divmod(k, 32)  # elevation fastest
        pitch = math.radians(angles[i]) + math.pi / 2
        yaw = math.radians(-180 + 10 * j)
        expected = (
            -math.sin(pitch) * math.cos(yaw),
            -math.sin(pitch) * math.sin(yaw),
            -math.cos(pitch),
        )
        assert dirs[k] == pytest.approx(expected, abs=1e-12)


def test_pinhole_pattern_formula_and_intrinsics():
    cfg = PinholeCameraPattern(width=8, height=6, horizontal_aperture_offset=0.1)
    fx = 8 * 24.0 / 20.955
    vertical_aperture = 20.955 * 6 / 8
    fy = 6 * 24.0 / vertical_aperture
    cx, cy = 0.1 * fx + 4.0, 3.0
    np.testing.assert_allclose(
        intrinsic_matrix(cfg), [[fx, 0, cx], [0, fy, cy], [0, 0, 1]], rtol=1e-14
    )
    _, dirs = pattern_rays(cfg)
    for k in range(48):
        v, u = divmod(k, 8)
        ray = np.array([1.0, -(u - cx) / fx, -(v - cy) / fy])
        np.testing.assert_allclose(dirs[k], ray / np.linalg.norm(ray), atol=1e-12)
    k = [500.0, 0.0, 330.0, 0.0, 480.0, 235.0, 0.0, 0.0, 1.0]
    back = PinholeCameraPattern.from_intrinsic_matrix(k, width=640, height=480)
    np.testing.assert_allclose(intrinsic_matrix(back).ravel(), k, rtol=1e-12)


# ---------------------------------------------------------------- ray caster on go2


@pytest.fixture(scope="module")
def go2():
    return MujocoEngine(Usd.Stage.Open("scenes/go2_standing.usda"))


def set_base(engine, position, quat):
    d = engine.data
    engine.reset()
    d.qpos[0:3] = position
    d.qpos[3:7] = quat
    mujoco.mj_forward(engine.model, d)


def axis_quat(axis, angle):
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    return np.concatenate(([math.cos(angle / 2)], math.sin(angle / 2) * axis))


def rotate(q, v):
    m = np.zeros(9)
    mujoco.mju_quat2Mat(m, np.asarray(q, float))
    return m.reshape(3, 3) @ v


def test_height_scan_sees_the_ground_not_the_robot(go2):
    set_base(go2, (0.3, -0.2, 0.45), axis_quat((0, 0, 1), 0.7))
    cfg = RayCasterConfig(
        prim_path=".*/base",
        offset=Offset(pos=(0.0, 0.0, 20.0)),
        ray_alignment="yaw",
        pattern_cfg=GridPattern(resolution=0.1, size=(1.6, 1.0)),
        mesh_prim_paths=["/World/Ground"],
    )
    scan = RayCaster(go2, cfg, num_envs=2)
    datas = [go2.data, go2.data]
    scan.update(datas, go2.dt)
    sizes = {"N": 2, "R": 187}
    for name, spec in RAY_CASTER_FIELDS.items():
        assert getattr(scan.data, name).shape == shape_of(spec, sizes)
    grid, _ = pattern_rays(cfg.pattern_cfg)
    base = go2.data.xpos[1]
    expected = (
        base
        + np.array([0, 0, 20.0])
        + np.array([rotate(axis_quat((0, 0, 1), 0.7), p) for p in grid])
    )
    expected[:, 2] = 0.0  # the ground's top
    np.testing.assert_allclose(scan.data.ray_hits_w[0], expected, atol=1e-9)
    assert set(scan.hit_paths()) == {"/World/Ground"}
    # every collider: rays under the robot stop on its links (hit ids name them)
    everything = RayCaster(go2, RayCasterConfig(**{**cfg.__dict__, "mesh_prim_paths": []}))
    everything.update([go2.data], go2.dt)
    robot = [p for p in everything.hit_paths() if p and p.startswith("/World/Go2")]
    assert len(robot) > 5
    hit_z = everything.data.ray_hits_w[0, :, 2]
    assert np.all(hit_z[[p != "/World/Ground" for p in everything.hit_paths()]] > 0.01)


@pytest.mark.parametrize("alignment", ["base", "yaw", "world"])
def test_alignment_against_plane_intersection(go2, alignment):
    q = axis_quat((0.3, 1.0, 0.5), 0.4)
    set_base(go2, (0.0, 0.0, 3.0), q)
    rng = np.random.default_rng(1)
    starts = rng.uniform(-0.3, 0.3, (20, 3))
    dirs = rng.normal(size=(20, 3))
    dirs[:, 2] = -np.abs(dirs[:, 2]) - 3.0  # steep enough to land on the 10 m ground
    cfg = RayCasterConfig(
        prim_path=".*/base",
        ray_alignment=alignment,
        pattern_cfg=RayListPattern(ray_starts=starts, ray_directions=dirs),
        mesh_prim_paths=["/World/Ground"],
    )
    sensor = RayCaster(go2, cfg)
    sensor.update([go2.data], go2.dt)
    p = go2.data.xpos[1]
    w, x, y, z = q
    yaw = math.atan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    for k in range(20):
        u = dirs[k] / np.linalg.norm(dirs[k])
        if alignment == "base":
            o, u = p + rotate(q, starts[k]), rotate(q, u)
        elif alignment == "yaw":
            o = p + rotate(axis_quat((0, 0, 1), yaw), starts[k])
        else:
            o = p + starts[k]
        t = -o[2] / u[2]
        np.testing.assert_allclose(sensor.data.ray_hits_w[0, k], o + t * u, atol=1e-9)


def test_max_distance_drift_and_update_period(go2, caplog):
    set_base(go2, (0.0, 0.0, 0.5), (1, 0, 0, 0))
    base = dict(
        prim_path=".*/base",
        pattern_cfg=GridPattern(resolution=0.5, size=(1.0, 1.0)),
        mesh_prim_paths=["/World/Ground"],
    )
    short = RayCaster(go2, RayCasterConfig(**base, max_distance=0.3))
    short.update([go2.data], go2.dt)
    assert np.all(np.isinf(short.data.ray_hits_w)) and np.all(short.data.ray_hit_ids == -1)
    drift = RayCaster(go2, RayCasterConfig(**base, drift_range=(-0.1, 0.1), seed=4), num_envs=3)
    plain = RayCaster(go2, RayCasterConfig(**base))
    drift.update([go2.data] * 3, go2.dt)
    plain.update([go2.data], go2.dt)
    shift = drift.data.pos_w - plain.data.pos_w
    assert np.all(np.abs(shift) <= 0.1) and np.abs(shift).max() > 0.0
    assert not np.allclose(shift[0], shift[1])
    np.testing.assert_allclose(
        drift.data.ray_hits_w[:, :, :2],
        plain.data.ray_hits_w[:, :, :2] + shift[:, None, :2],
        atol=1e-12,
    )
    fixed = {"x": (0.2, 0.2), "y": (-0.1, -0.1), "z": (0.05, 0.05)}  # degenerate ranges
    cast_drift = RayCaster(go2, RayCasterConfig(**base, ray_cast_drift_range=fixed))
    cast_drift.update([go2.data], go2.dt)
    np.testing.assert_allclose(
        cast_drift.data.ray_hits_w[0], plain.data.ray_hits_w[0] + [0.2, -0.1, 0.05], atol=1e-12
    )
    slow = RayCaster(go2, RayCasterConfig(**base, update_period=3 * go2.dt))
    for step in range(7):
        go2.data.qpos[0] = 0.01 * step
        mujoco.mj_forward(go2.model, go2.data)
        slow.update([go2.data], go2.dt)
        updated = 0.01 * (step - step % 3)
        assert slow.data.pos_w[0, 0] == pytest.approx(updated, abs=1e-12)
    with caplog.at_level(logging.ERROR, logger="runtime.sensors.lab"):
        zero = RayCaster(
            go2,
            RayCasterConfig(**{**base, "pattern_cfg": GridPattern(resolution=0.1, size=(-1, 1))}),
        )
        assert "pattern_cfg.size" in zero.disabled_reason
        none = RayCaster(go2, RayCasterConfig(**{**base, "mesh_prim_paths": ["/World/Nothing"]}))
        assert "mesh_prim_paths" in none.disabled_reason
        empty = RayCaster(
            go2,
            RayCasterConfig(
                **{
                    **base,
                    "pattern_cfg": RayListPattern(
                        ray_starts=np.zeros((0, 3)), ray_directions=np.zeros((0, 3))
                    ),
                }
            ),
        )
        assert "no rays" in empty.disabled_reason
    assert "pattern_cfg.size" in caplog.text


# ---------------------------------------------------------------- depth camera on the Panda scene


def embree_cast(triangles, origins, directions):
    from embreex import rtcore_scene
    from embreex.mesh_construction import TriangleMesh

    scene = rtcore_scene.EmbreeScene()
    TriangleMesh(scene, triangles.astype(np.float32))
    result = scene.run(origins.astype(np.float32), directions.astype(np.float32), output=1)
    distance = np.asarray(result["tfar"], np.float64)
    distance[np.asarray(result["geomID"]) < 0] = np.inf
    return distance


def world_triangles(engine, scene):
    """Triangles of every collider group at the bodies' poses in MjData (built by the test)."""
    out = []
    for path, mesh in scene.group_meshes():
        tri = np.asarray(mesh.vertices)[np.asarray(mesh.faces)]
        if path:
            body = engine.model.body(path).id
            tri = (
                np.einsum("ij,fkj->fki", engine.data.xmat[body].reshape(3, 3), tri)
                + engine.data.xpos[body]
            )
        out.append(tri)
    return np.concatenate(out)


def test_depth_camera_matches_embree():
    engine = MujocoEngine(Usd.Stage.Open("scenes/panda_table.usda"))
    for _ in range(50):
        engine.step()
    # looking back at the robot (yaw 180 degrees), pitched down 0.6 rad
    rot = tuple(_mul(axis_quat((0, 0, 1), math.pi), axis_quat((0, 1, 0), 0.6)))
    cfg = RayCasterCameraConfig(
        prim_path="/World/Table/top",
        offset=CameraOffset(pos=(0.85, 0.1, 0.6), rot=rot, convention="world"),
        pattern_cfg=PinholeCameraPattern(width=64, height=48, focal_length=12.0),
        data_types=["distance_to_image_plane", "distance_to_camera", "normals"],
        mesh_prim_paths=["/World/Ground", "/World/Table", "/World/RedBox", "/World/Panda"],
    )
    camera = RayCasterCamera(engine, cfg)
    assert camera.enabled, camera.disabled_reason
    camera.update([engine.data], engine.dt)
    sizes = {"N": 1, "H": 48, "W": 64}
    for name, spec in CAMERA_FIELDS.items():
        assert getattr(camera.data, name).shape == shape_of(spec, sizes)
    for name, spec in CAMERA_IMAGES.items():
        assert camera.data.output[name].shape == shape_of(spec, sizes)
    assert camera.data.image_shape == (48, 64)
    # the oracle: the same world rays, built here from the pattern formula and the pose
    k = intrinsic_matrix(cfg.pattern_cfg)
    pos = np.array([0.55, 0.0, 0.4]) + np.array([0.85, 0.1, 0.6])
    v, u = np.divmod(np.arange(48 * 64), 64)
    cam = np.stack([np.ones(u.size), -(u - k[0, 2]) / k[0, 0], -(v - k[1, 2]) / k[1, 1]], axis=1)
    cam /= np.linalg.norm(cam, axis=1, keepdims=True)
    dirs = np.array([rotate(rot, c) for c in cam])
    origins = np.repeat(pos[None], dirs.shape[0], axis=0)
    distance = embree_cast(world_triangles(engine, camera.ray_scene), origins, dirs)
    hit = np.isfinite(distance)
    assert hit.mean() > 0.5 and len(set(camera.hit_paths()) - {None}) >= 4
    got = camera.data.output["distance_to_camera"][0].reshape(-1)
    np.testing.assert_array_equal(np.isfinite(got), hit)
    np.testing.assert_allclose(got[hit], distance[hit], rtol=1e-5)
    plane = camera.data.output["distance_to_image_plane"][0].reshape(-1)
    np.testing.assert_allclose(plane[hit], distance[hit] * cam[hit, 0], rtol=1e-5)
    normals = camera.data.output["normals"][0].reshape(-1, 3)
    np.testing.assert_allclose(np.linalg.norm(normals[hit], axis=1), 1.0, atol=1e-9)
    assert np.all(np.einsum("ij,ij->i", normals[hit], dirs[hit]) < 0)
    # ROS / OpenGL orientations: their forward axes (+z / -z) are the world-convention x
    forward = rotate(camera.data.quat_w_world[0], [1, 0, 0])
    np.testing.assert_allclose(rotate(camera.data.quat_w_ros[0], [0, 0, 1]), forward, atol=1e-12)
    np.testing.assert_allclose(
        rotate(camera.data.quat_w_opengl[0], [0, 0, -1]), forward, atol=1e-12
    )


def _mul(a, b):
    out = np.zeros(4)
    mujoco.mju_mulQuat(out, np.asarray(a, float), np.asarray(b, float))
    return out


def test_camera_zero_focal_length_disables(caplog):
    model = mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody><body name='b'><geom size='.1'/></body></worldbody></mujoco>"
    )
    cfg = RayCasterCameraConfig(
        prim_path="b", pattern_cfg=PinholeCameraPattern(width=4, height=3, focal_length=0.0)
    )
    with caplog.at_level(logging.ERROR, logger="runtime.sensors.lab"):
        camera = RayCasterCamera(model, cfg)
    assert "pattern_cfg.focal_length" in camera.disabled_reason
    assert "pattern_cfg.focal_length" in caplog.text


def test_worlds_cast_together_equal_worlds_cast_alone(go2):
    """A scene without moving geometry casts all worlds in one call: same numbers."""
    cfg = RayCasterConfig(
        prim_path=".*/base",
        pattern_cfg=LidarPattern(channels=16, vertical_fov_range=(-30, -5),
                                 horizontal_fov_range=(-180, 180), horizontal_res=2),
        mesh_prim_paths=["/World/Ground"],
    )  # fmt: skip
    datas = []
    for i in range(3):
        d = mujoco.MjData(go2.model)
        d.qpos[:] = go2.data.qpos
        d.qpos[0:3] = (0.5 * i, -0.2 * i, 0.4 + 0.1 * i)
        d.qpos[3:7] = axis_quat((0.2, 0.1, 1.0), 0.3 * i)
        mujoco.mj_forward(go2.model, d)
        datas.append(d)
    together = RayCaster(go2, cfg, num_envs=3)
    together.update(datas, go2.dt)
    assert together.ray_starts.shape[0] * 3 >= 4096  # the threads' batch size too
    for i, d in enumerate(datas):
        alone = RayCaster(go2, cfg)
        alone.update([d], go2.dt)
        np.testing.assert_array_equal(together.data.ray_hits_w[i], alone.data.ray_hits_w[0])
        np.testing.assert_array_equal(together.data.ray_hit_ids[i], alone.data.ray_hit_ids[0])
        np.testing.assert_array_equal(together.data.pos_w[i], alone.data.pos_w[0])
    assert np.isfinite(together.data.ray_hits_w).mean() > 0.5  # tilted worlds see the sky too


def test_camera_and_ray_caster_histories(go2):
    cfg = RayCasterCameraConfig(
        prim_path=".*/base",
        offset=CameraOffset(pos=(0.0, 0.0, 1.0), rot=tuple(axis_quat((0, 1, 0), math.pi / 2)),
                            convention="world"),
        pattern_cfg=PinholeCameraPattern(width=8, height=6),
        mesh_prim_paths=["/World/Ground"],
        history_length=2,
        data_types=["distance_to_camera", "normals"],
    )  # fmt: skip
    camera = RayCasterCamera(go2, cfg)
    scan = RayCaster(go2, RayCasterConfig(
        prim_path=".*/base", pattern_cfg=GridPattern(resolution=0.5, size=(1.0, 1.0)),
        mesh_prim_paths=["/World/Ground"], history_length=3))  # fmt: skip
    assert camera.data.output_history["distance_to_camera"].shape == (1, 2, 6, 8, 1)
    assert camera.data.output_history["normals"].shape == (1, 2, 6, 8, 3)
    seen, hits = [], []
    for height in (0.4, 0.5, 0.6, 0.7):
        set_base(go2, (0.0, 0.0, height), (1, 0, 0, 0))
        camera.update([go2.data], go2.dt)
        scan.update([go2.data], go2.dt)
        seen.insert(0, camera.data.output["distance_to_camera"].copy())
        hits.insert(0, scan.data.ray_hits_w.copy())
        for k in range(min(2, len(seen))):
            np.testing.assert_array_equal(
                camera.data.output_history["distance_to_camera"][:, k], seen[k]
            )
        for k in range(min(3, len(hits))):
            np.testing.assert_array_equal(scan.data.ray_hits_w_history[:, k], hits[k])
    # looking straight down from 1 m above the base: the centre ray's distance is the height
    assert seen[0][0, 3, 4, 0] == pytest.approx(1.7, abs=1e-9)  # pixel (4, 3) is the axis


@pytest.mark.parametrize("alignment", ["base", "yaw", "world"])
def test_box_scene_update_equals_the_general_path(go2, alignment):
    """A ground-only scan is cast by the box kernel: the general path's numbers, bit for bit."""
    rng = np.random.default_rng(5)
    starts = rng.uniform(-0.5, 0.5, (64, 3))
    dirs = rng.normal(size=(64, 3))  # some up (misses), some grazing, some down
    cfg = RayCasterConfig(
        prim_path=".*/base",
        ray_alignment=alignment,
        pattern_cfg=RayListPattern(ray_starts=starts, ray_directions=dirs),
        mesh_prim_paths=["/World/Ground"],
        max_distance=2.5,  # some hits beyond it
        drift_range=(-0.05, 0.05),
        ray_cast_drift_range={"x": (-0.02, 0.02), "y": (0.0, 0.01), "z": (-0.01, 0.01)},
        seed=3,
    )
    boxes = RayCaster(go2, cfg, num_envs=4)
    general = RayCaster(go2, cfg, num_envs=4)
    assert boxes._boxes is not None
    general._boxes = None  # the frame kernel, RayScene.cast_trusted, the hits kernel
    datas = []
    for i in range(4):
        d = mujoco.MjData(go2.model)
        d.qpos[:] = go2.data.qpos
        # world 3's base is in the ground box: rays starting inside have distance 0
        d.qpos[0:3] = (0.3 * i, -0.1 * i, (0.2, 1.0, 2.0, -0.04)[i])
        d.qpos[3:7] = axis_quat(rng.normal(size=3), rng.uniform(0, math.pi))
        mujoco.mj_forward(go2.model, d)
        datas.append(d)
    for _ in range(3):
        boxes.update(datas, go2.dt)
        general.update(datas, go2.dt)
        for name in ("pos_w", "quat_w", "ray_hits_w", "ray_distances", "ray_hit_ids"):
            np.testing.assert_array_equal(getattr(boxes.data, name), getattr(general.data, name))
        for d in datas:
            d.qpos[0] += 0.05
            mujoco.mj_forward(go2.model, d)
    distances = boxes.data.ray_distances.copy()
    before = boxes.data.ray_hits_w.copy()
    # other MjData objects (other poses): the box kernel reads the new worlds' poses
    fresh = []
    for d in datas:
        e = mujoco.MjData(go2.model)
        e.qpos[:] = d.qpos
        e.qpos[1] += 0.2
        mujoco.mj_forward(go2.model, e)
        fresh.append(e)
    boxes.update(fresh, go2.dt)
    general.update(fresh, go2.dt)
    np.testing.assert_array_equal(boxes.data.ray_hits_w, general.data.ray_hits_w)
    np.testing.assert_array_equal(boxes.data.pos_w, general.data.pos_w)
    assert not np.array_equal(boxes.data.ray_hits_w[:3], before[:3])
    assert np.any(distances[3] == 0.0)
    assert np.isinf(distances[:3]).mean() > 0.2 and np.isfinite(distances[:3]).mean() > 0.2


def test_scene_update_equals_the_general_path(go2):
    """A scan that sees the robot is one kernel call: the per-world calls' numbers."""
    cfg = RayCasterConfig(
        prim_path=".*/base",
        offset=Offset(pos=(0.0, 0.0, 2.0)),
        ray_alignment="yaw",
        pattern_cfg=GridPattern(resolution=0.05, size=(1.0, 0.6)),
        mesh_prim_paths=[],  # every collider: the ground and the robot's links
        drift_range=(-0.02, 0.02),
        seed=2,
    )
    fused = RayCaster(go2, cfg, num_envs=3)
    general = RayCaster(go2, cfg, num_envs=3)
    assert (fused._scene_arguments is None) == JIT_DISABLED  # (reads MjData by address)
    general._scene_arguments = None  # frame kernel, RayScene.cast_trusted, hits kernel
    rng = np.random.default_rng(9)
    datas = []
    for _ in range(3):
        d = mujoco.MjData(go2.model)
        d.qpos[:] = go2.data.qpos
        d.qpos[7:] += rng.uniform(-0.4, 0.4, d.qpos.size - 7)  # the legs moved
        d.qpos[3:7] = axis_quat(rng.normal(size=3), rng.uniform(0, 0.5))
        mujoco.mj_forward(go2.model, d)
        datas.append(d)
    for step in range(3):
        if step == 2:  # other MjData objects: their poses are read
            datas = [datas[2], datas[0], datas[1]]
        fused.update(datas, go2.dt)
        general.update(datas, go2.dt)
        for name in ("pos_w", "quat_w", "ray_hits_w", "ray_distances", "ray_hit_ids"):
            np.testing.assert_array_equal(getattr(fused.data, name), getattr(general.data, name))
    robot = [p for p in fused.hit_paths(0) if p and p.startswith("/World/Go2")]
    assert len(robot) > 20
