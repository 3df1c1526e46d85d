"""Raycast sensor: the Raycast scenarios R1-R14 of docs/sensors/raycast.md.

Scenes are synthetic USD stages (Z up, metersPerUnit 1, 60 Hz) reproducing the stated
geometry; body poses come from explicit ``PhysicsState`` objects (free fall computed
analytically where the spec has a falling cube). Expected numbers are the spec's.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
from pxr import Sdf

from runtime.sensors.raycast import RaycastSensor, sweep_window
from runtime.sensors.runtime import SensorRuntime
from runtime.sensors.state import make_physics_state
from tests.helpers.raycast import (  # noqa: E402, F401
    DT,
    add_box,
    add_raycast,
    example_scene,
    fired,
    make_stage,
    state_for,
)

# ---------------------------------------------------------------------------- scene helpers


def yaw_quat(deg):
    h = math.radians(deg) / 2
    return [math.cos(h), 0.0, 0.0, math.sin(h)]


# ---------------------------------------------------------------------------- R1 / R2


def test_r1_falling_cube_origin_descends():
    stage = make_stage()
    add_box(stage, "/World/Ground", (0, 0, -0.5), (20, 20, 1))
    add_box(stage, "/World/Cube", (0, 0, 5), (1, 1, 1), rigid=True)
    add_raycast(stage, "/World/Cube/Ray", [(0, 0, 0)], [(0, 0, -1)], 0.1, 20.0, "WORLD")
    bodies = ["/World/Cube"]
    rt = SensorRuntime(stage, bodies)
    sensor = rt.sensor("/World/Cube/Ray")
    zs = []
    for k in range(1, 31):
        t = k * DT
        z = 5.0 - 0.5 * 9.81 * t * t  # free fall of the cube (synthetic engine)
        rt.step(state_for(bodies, [[0, 0, z]], lin=[[0, 0, -9.81 * t]], step=k))
        r = sensor.reading()
        assert r.is_valid and r.ray_count == 1
        zs.append(float(r.ray_origins_world[0, 2]))
        # no self-filtering: the start point lies inside the sensor's own cube -> distance 0
        assert r.depths[0] == pytest.approx(0.1, abs=1e-6)
    assert all(b < a for a, b in zip(zs, zs[1:], strict=False))
    assert zs[-1] < 5.0


def test_r2_settled_cube_ray_starts_inside_ground():
    stage = make_stage()
    add_box(stage, "/World/Ground", (0, 0, -0.5), (20, 20, 1))
    add_box(stage, "/World/Cube", (0, 0, 0.5), (1, 1, 1), rigid=True, collider=False)
    add_raycast(stage, "/World/Cube/Ray", [(0, 0, 0)], [(0, 0, -1)], 0.6, 20.0, "WORLD")
    bodies = ["/World/Cube"]
    rt = SensorRuntime(stage, bodies)
    rt.step(state_for(bodies, [[0, 0, 0.5]]))
    r = rt.sensor("/World/Cube/Ray").reading()
    assert r.is_valid and r.ray_count == 1
    assert r.depths[0] < 20.0
    assert r.depths[0] == pytest.approx(0.6, abs=1e-6)
    assert r.ray_end_points_world[0, 2] == pytest.approx(0.0, abs=0.15)
    np.testing.assert_allclose(r.ray_end_points_world[0], [0, 0, -0.1], atol=1e-6)
    np.testing.assert_allclose(r.hit_normals[0], [0, 0, 1], atol=1e-6)  # -d


# ---------------------------------------------------------------------------- R3 / R4


def test_r3_kinematic_body_wall_then_yawed_miss():
    stage = make_stage()
    add_box(stage, "/World/Wall", (5, 0, 2), (0.2, 10, 10))
    add_box(stage, "/World/Body", (0, 0, 2), (1, 1, 1), rigid=True, collider=False)
    add_raycast(stage, "/World/Body/Ray", [(0, 0, 0)], [(1, 0, 0)], 0.1, 20.0)
    bodies = ["/World/Body"]
    rt = SensorRuntime(stage, bodies)
    rt.step(state_for(bodies, [[0, 0, 2]]))
    r = rt.sensor("/World/Body/Ray").reading()
    assert r.depths[0] < 20.0
    assert r.depths[0] == pytest.approx(4.9, abs=1e-5)
    rt.reset()
    assert not rt.sensor("/World/Body/Ray").reading().is_valid
    rt.step(state_for(bodies, [[0, 0, 2]], [yaw_quat(90)]))
    r = rt.sensor("/World/Body/Ray").reading()
    assert r.is_valid
    assert r.depths[0] == pytest.approx(20.0, abs=0.5)


def test_r4_static_sensor_wall():
    stage = make_stage()
    add_box(stage, "/World/Wall", (5, 0, 1.5), (0.2, 8, 3))
    add_raycast(stage, "/World/Ray", [(0, 0, 0)], [(1, 0, 0)], 0.1, 100.0, "WORLD",
                translate=(0, 0, 1.5))  # fmt: skip
    rt = SensorRuntime(stage, [])
    sensor = rt.sensor("/World/Ray")
    before = sensor.reading()
    assert not before.is_valid
    assert before.depths.shape == (0,) and before.hit_positions.shape == (0, 3)
    frame = sensor.get_data()
    assert frame["depths"].shape == (0,) and frame["depths"].dtype == np.float32
    assert frame["hit_positions"].shape == (0, 3) and frame["hit_prim_paths"] == []
    assert frame["time"] == 0.0 and frame["physics_step"] == 0
    for k in range(1, 4):
        rt.step(state_for([], step=k))
    r = sensor.reading()
    assert r.is_valid and r.ray_count == 1
    assert r.depths[0] < 100.0
    assert r.depths[0] == pytest.approx(4.9, abs=1e-5)
    assert r.time == pytest.approx(float(np.float32(3 * DT)))
    assert r.step == 3
    frame = sensor.get_data()
    assert frame["physics_step"] == 3 and frame["depths"][0] == r.depths[0]


# ---------------------------------------------------------------------------- R5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(origins=[(0, 0, 0)], directions=[(1, 0, 0)], num_rays=2),
         "rayOrigins length (1) != numRays (2). Sensor disabled."),
        (dict(origins=[], directions=[], num_rays=0), "numRays (0) must be > 0. Sensor disabled."),
        (dict(origins=[(0, 0, 0)] * 2, directions=[(1, 0, 0)] * 2, offsets=[0.0]),
         "rayTimeOffsets length (1) != numRays (2). Sensor disabled."),
        (dict(origins=[(0, 0, 0)], directions=[(1, 0, 0)], min_range=5.0, max_range=5.0),
         "minRange (5) >= maxRange (5). Sensor disabled."),
        (dict(origins=[(0, 0, 0)], directions=[(1, 0, 0), (0, 1, 0)]),
         "rayDirections length (2) != numRays (1). Sensor disabled."),
    ],
)  # fmt: skip
def test_r5_invalid_configuration_disables_only_that_sensor(kwargs, message, caplog):
    stage = make_stage()
    add_box(stage, "/World/Wall", (5, 0, 1.5), (0.2, 8, 3))
    add_raycast(stage, "/World/Bad", **kwargs)
    add_raycast(stage, "/World/Good", [(0, 0, 0)], [(1, 0, 0)], 0.1, 100.0, translate=(0, 0, 1.5))
    rt = SensorRuntime(stage, [])
    with caplog.at_level(logging.ERROR):
        for k in range(1, 19):  # 0.3 s
            rt.step(state_for([], step=k))
    bad = rt.sensor("/World/Bad")
    assert not bad.reading().is_valid
    assert bad.disabled_reason == f"IsaacRaycastSensor '/World/Bad': {message}"
    assert sum(message in rec.getMessage() for rec in caplog.records) == 1  # logged once
    good = rt.sensor("/World/Good").reading()
    assert good.is_valid and good.depths[0] == pytest.approx(4.9, abs=1e-5)


def test_r5_bare_prim_with_fallbacks_is_disabled(caplog):
    stage = make_stage()
    stage.DefinePrim("/World/Bare", "IsaacRaycastSensor")
    rt = SensorRuntime(stage, [])
    with caplog.at_level(logging.ERROR):
        rt.step(state_for([], step=1))
    sensor = rt.sensor("/World/Bare")
    assert not sensor.reading().is_valid
    assert "rayOrigins length (0) != numRays (1). Sensor disabled." in sensor.disabled_reason
    assert "/World/Bare" in caplog.text


def test_r5_malformed_value_disables_with_prim_name(caplog):
    stage = make_stage()
    prim = add_raycast(stage, "/World/Nan", [(0, 0, 0)], [(1, 0, 0)])
    prim.GetAttribute("maxRange").Set(float("nan"))
    add_raycast(stage, "/World/Good", [(0, 0, 0)], [(1, 0, 0)])
    rt = SensorRuntime(stage, [])
    rt.step(state_for([], step=1))
    assert "/World/Nan" in rt.sensor("/World/Nan").disabled_reason
    assert not rt.sensor("/World/Nan").reading().is_valid
    assert rt.sensor("/World/Good").reading().is_valid


def test_reset_clears_error_state_and_rereads_config():
    stage = make_stage()
    add_box(stage, "/World/Wall", (5, 0, 0), (0.2, 8, 3))
    prim = add_raycast(stage, "/World/R", [(0, 0, 0)], [(1, 0, 0)], 6.0, 5.0)
    rt = SensorRuntime(stage, [])
    rt.step(state_for([], step=1))
    assert rt.sensor("/World/R").disabled_reason is not None
    prim.GetAttribute("minRange").Set(0.1)
    rt.reset()
    rt.step(state_for([], step=1))
    r = rt.sensor("/World/R").reading()
    assert r.is_valid and r.depths[0] == pytest.approx(4.9, abs=1e-5)


# ---------------------------------------------------------------------------- R7


def test_r7_removed_and_unknown_sensors():
    stage = make_stage()
    add_raycast(stage, "/World/R", [(0, 0, 0)], [(1, 0, 0)])
    rt = SensorRuntime(stage, [])
    rt.step(state_for([], step=1))
    assert rt.sensor("/World/R").reading().is_valid
    stage.RemovePrim("/World/R")
    rt.step(state_for([], step=2))
    assert not rt.sensor("/World/R").reading().is_valid
    with pytest.raises(KeyError):
        rt.sensor("/World/Unknown")
    ghost = RaycastSensor("/World/DoesNotExist")
    rt2 = SensorRuntime(stage, [], sensors=[ghost])
    rt2.step(state_for([], step=1))
    assert ghost.disabled_reason is not None and "/World/DoesNotExist" in ghost.disabled_reason
    assert not ghost.reading().is_valid


# ---------------------------------------------------------------------------- R8


def test_r8_example_patterns():
    stage = example_scene()
    # solid state: 10 x 5 grid over 60 x 20 degrees
    dirs = []
    for el in np.linspace(-10, 10, 5):
        for az in np.linspace(-30, 30, 10):
            a, e = math.radians(az), math.radians(el)
            dirs.append((math.cos(e) * math.cos(a), math.cos(e) * math.sin(a), math.sin(e)))
    add_raycast(stage, "/World/Solid", [(0, 0, 0)] * 50, dirs, 0.4, 100.0,
                translate=(0, 0, 1.5))  # fmt: skip
    # rotating: 36 azimuth columns x 8 elevations over 30 deg, offsets k/36
    rdirs, roffs = [], []
    for k in range(36):
        a = 2 * math.pi * k / 36
        for el in np.linspace(-15, 15, 8):
            e = math.radians(el)
            rdirs.append((math.cos(e) * math.cos(a), math.cos(e) * math.sin(a), math.sin(e)))
            roffs.append(k / 36)
    add_raycast(stage, "/World/Rotating", [(0, 0, 0)] * 288, rdirs, 0.4, 100.0,
                offsets=roffs, translate=(0, 3, 1.5))  # fmt: skip
    # curtain: 16 beams along +X at heights -0.375 .. 0.375
    origins = [(0, 0, h) for h in np.linspace(-0.375, 0.375, 16)]
    add_raycast(stage, "/World/Curtain", origins, [(1, 0, 0)] * 16, 0.2, 10.0,
                translate=(0, -3, 1.0))  # fmt: skip
    rt = SensorRuntime(stage, [])
    total = 0
    for k in range(1, 66):
        rt.step(state_for([], step=k))
        rot = rt.sensor("/World/Rotating").reading()
        assert rot.ray_count == 288
        total += int(np.sum(rot.depths < 100.0))
    assert total > 0
    solid = rt.sensor("/World/Solid").reading()
    assert np.any(solid.depths < 100.0)
    curtain = rt.sensor("/World/Curtain").reading()
    assert np.any(curtain.depths < 10.0)
    # beams below the box top (z < 1) hit its face at x = 2.5, the others the wall at 4.9
    heights = 1.0 + np.linspace(-0.375, 0.375, 16)
    np.testing.assert_allclose(curtain.depths[heights < 1.0], 2.5, atol=1e-5)
    np.testing.assert_allclose(curtain.depths[heights > 1.0], 4.9, atol=1e-5)


# ---------------------------------------------------------------------------- R9 / R10


def test_r9_sweep_facts():
    offsets = np.array([0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9], np.float32)
    assert float(offsets.max()) == pytest.approx(0.9)
    offs = (np.arange(37) / 37).astype(np.float32)
    period = np.float32(1.0)
    counts = np.zeros(37, int)
    for c in range(1, 61):
        s, e, wrapped = sweep_window(c, DT, period)
        assert 0.0 <= e < period
        mask = fired(offs, s, e, wrapped)
        assert mask.sum() < 37
        counts += mask
    assert np.all(counts >= 1) and counts.sum() >= 37


def test_r10_window_table_float32():
    offs = (np.arange(10) / 10).astype(np.float32)  # period = max offset = 0.9
    expected = {
        1: [0, 0.1, 0.2],
        2: [0.3, 0.4],
        3: [0.5, 0.6, 0.7],
        4: [0, 0.1, 0.8, 0.9],
        5: [0.2, 0.3],
    }
    for c, want in expected.items():
        s, e, wrapped = sweep_window(c, 0.25, offs.max())
        assert wrapped == (c == 4)
        got = offs[fired(offs, s, e, wrapped)]
        np.testing.assert_allclose(got, np.array(want, np.float32))


def test_r10_window_table_through_sensor():
    stage = make_stage()
    n = 10
    add_raycast(stage, "/World/R", [(0, 0, 0)] * n, [(1, 0, 0)] * n, 0.1, 50.0,
                offsets=[i / 10 for i in range(n)])  # fmt: skip
    rt = SensorRuntime(stage, [])
    sensor = rt.sensor("/World/R")
    expected = {1: [0, 1, 2], 2: [3, 4], 3: [5, 6, 7], 4: [0, 1, 8, 9], 5: [2, 3]}
    for c in range(1, 6):
        rt.step(state_for([], step=c, dt=0.25))
        r = sensor.reading()
        # a firing ray that misses ends at o + d * maxRange; others end at the sensor
        firing = np.nonzero(np.abs(r.ray_end_points_world[:, 0] - 50.0) < 1e-4)[0]
        assert firing.tolist() == expected[c]


# ---------------------------------------------------------------------------- R11 / R12


def test_r11_yawed_static_sensor_frames():
    stage = make_stage()
    add_box(stage, "/World/Wall", (0, 5, 1.5), (8, 0.2, 3))
    add_raycast(stage, "/World/W", [(0, 0, 0)], [(1, 0, 0)], 0.1, 100.0, "WORLD",
                paths=True, translate=(0, 0, 1.5), yaw_deg=90.0)  # fmt: skip
    add_raycast(stage, "/World/S", [(0, 0, 0)], [(1, 0, 0)], 0.1, 100.0, "SENSOR",
                translate=(0, 0, 1.5), yaw_deg=90.0)  # fmt: skip
    rt = SensorRuntime(stage, [])
    rt.step(state_for([], step=1))
    w = rt.sensor("/World/W").reading()
    s = rt.sensor("/World/S").reading()
    atol = 1e-5
    np.testing.assert_allclose(w.hit_positions[0], [0, 4.9, 1.5], atol=atol)
    np.testing.assert_allclose(w.hit_normals[0], [0, -1, 0], atol=atol)
    np.testing.assert_allclose(s.hit_positions[0], [4.9, 0, 0], atol=atol)
    np.testing.assert_allclose(s.hit_normals[0], [-1, 0, 0], atol=atol)
    for r in (w, s):
        assert r.depths[0] == pytest.approx(4.9, abs=atol)
        np.testing.assert_allclose(r.ray_origins_world[0], [0, 0, 1.5], atol=atol)
        np.testing.assert_allclose(r.ray_end_points_world[0], [0, 4.9, 1.5], atol=atol)
    assert w.hit_prim_paths == ("/World/Wall",)  # static collider: the collider prim
    assert s.hit_prim_paths == ()  # paths off


def test_r12_miss():
    stage = make_stage()
    add_raycast(stage, "/World/R", [(0, 0, 0)], [(0, 0, 1)], 0.5, 30.0, "WORLD", paths=True,
                translate=(1, 2, 3))  # fmt: skip
    rt = SensorRuntime(stage, [])
    rt.step(state_for([], step=1))
    r = rt.sensor("/World/R").reading()
    assert r.is_valid
    assert r.depths[0] == np.float32(30.0)
    np.testing.assert_array_equal(r.hit_positions[0], 0.0)
    np.testing.assert_array_equal(r.hit_normals[0], 0.0)
    np.testing.assert_allclose(r.ray_end_points_world[0], [1, 2, 33], atol=1e-6)
    assert r.hit_prim_paths == ("",)


def test_hit_path_is_rigid_body_not_collider():
    stage = make_stage()
    add_box(stage, "/World/Target", (4, 0, 0), (1, 1, 1), rigid=True)
    add_raycast(stage, "/World/R", [(0, 0, 0)], [(1, 0, 0)], 0.1, 20.0, "WORLD", paths=True)
    bodies = ["/World/Target"]
    rt = SensorRuntime(stage, bodies)
    rt.step(state_for(bodies, [[4, 0, 0]]))
    r = rt.sensor("/World/R").reading()
    assert r.hit_prim_paths == ("/World/Target",)
    assert r.depths[0] == pytest.approx(3.5, abs=1e-5)
    # the body moved in the physics state: no rebuild, rays follow the new pose
    rt.step(state_for(bodies, [[6, 0, 0]], step=2))
    assert rt.sensor("/World/R").reading().depths[0] == pytest.approx(5.5, abs=1e-5)
    rt.step(state_for(bodies, [[6, 3, 0]], step=3))
    r = rt.sensor("/World/R").reading()
    assert r.depths[0] == np.float32(20.0) and r.hit_prim_paths == ("",)


# ---------------------------------------------------------------------------- R13 / R14


def test_r13_extrapolated_origin_of_offset_ray():
    stage = make_stage()
    add_box(stage, "/World/Body", (0, 0, 0), (1, 1, 1), rigid=True, collider=False)
    add_raycast(stage, "/World/Body/R", [(0, 0, 0)], [(0, 0, 1)], 0.1, 10.0, "WORLD",
                offsets=[0.5], translate=(0.0, 0.0, 0.25))  # fmt: skip
    bodies = ["/World/Body"]
    rt = SensorRuntime(stage, bodies)
    sensor = rt.sensor("/World/Body/R")
    fires = 0
    for k in range(1, 61):
        x = k * DT
        rt.step(state_for(bodies, [[x, 0, 0]], lin=[[1, 0, 0]], step=k))
        r = sensor.reading()
        p = np.array([x, 0, 0.25])
        s, e, wrapped = sweep_window(k, DT, np.float32(0.5))
        if fired([0.5], s, e, wrapped)[0]:
            fires += 1
            assert wrapped
            np.testing.assert_allclose(r.ray_origins_world[0], p + [0.5, 0, 0], atol=1e-5)
            np.testing.assert_allclose(r.ray_end_points_world[0], p + [0.5, 0, 10], atol=1e-5)
        else:
            np.testing.assert_allclose(r.ray_origins_world[0], p, atol=1e-5)
            assert r.depths[0] == np.float32(10.0)
    assert fires >= 1


def test_r14_direction_normalisation():
    stage = make_stage()
    add_box(stage, "/World/Wall", (5, 0, 0), (0.2, 8, 3))
    add_raycast(stage, "/World/A", [(0, 0, 0)], [(1, 0, 0)], 0.1, 100.0, "WORLD")
    add_raycast(stage, "/World/B", [(0, 0, 0)], [(2, 0, 0)], 0.1, 100.0, "WORLD")
    add_raycast(stage, "/World/C", [(0, 0, 0)], [(0, 0, 0)], 0.1, 100.0, "WORLD")
    rt = SensorRuntime(stage, [])
    rt.step(state_for([], step=1))
    a, b, c = (rt.sensor(p).reading() for p in ("/World/A", "/World/B", "/World/C"))
    np.testing.assert_array_equal(b.depths, a.depths)
    np.testing.assert_array_equal(b.hit_positions, a.hit_positions)
    np.testing.assert_array_equal(b.hit_normals, a.hit_normals)
    assert a.depths[0] == pytest.approx(4.9, abs=1e-5)
    # divergence from R14 (issue 14): a zero direction is not cast along +X, the sensor is
    # disabled with its reason and its readings are invalid
    assert not c.is_valid
    assert "rayDirections entry 0 (0.0, 0.0, 0.0) has zero length" in (
        rt.sensor("/World/C").disabled_reason or ""
    )


# ---------------------------------------------------------------------------- more


def test_rotating_body_extrapolation_matches_first_order_formula():
    stage = make_stage()
    add_box(stage, "/World/Body", (0, 0, 0), (1, 1, 1), rigid=True, collider=False)
    add_raycast(stage, "/World/Body/R", [(1, 0, 0)], [(1, 0, 0)], 0.1, 10.0, "WORLD",
                offsets=[-0.2])  # fmt: skip
    bodies = ["/World/Body"]
    rt = SensorRuntime(stage, bodies)
    w = np.array([0.0, 0.0, 2.0])
    state = make_physics_state(
        bodies, [[0, 0, 0]], [[1, 0, 0, 0]], [[0, 0, 0]], [w], dt=DT, time=DT, step=1
    )
    rt.step(state)
    r = rt.sensor("/World/Body/R").reading()
    # all offsets <= 0: no windowing, pose extrapolated by tau = -0.2 (half-angle h = w tau/2)
    h = w * -0.2 / 2
    q = np.array([1.0, h[0], h[1], h[2]])
    q /= np.linalg.norm(q)
    angle = 2 * math.atan2(q[3], q[0])
    np.testing.assert_allclose(
        r.ray_origins_world[0], [math.cos(angle), math.sin(angle), 0], atol=1e-6
    )


def test_disabled_usd_attribute_and_user_flag():
    stage = make_stage()
    prim = add_raycast(stage, "/World/R", [(0, 0, 0)], [(1, 0, 0)])
    prim.CreateAttribute("enabled", Sdf.ValueTypeNames.Bool).Set(False)
    add_raycast(stage, "/World/On", [(0, 0, 0)], [(1, 0, 0)])
    rt = SensorRuntime(stage, [])
    rt.step(state_for([], step=1))
    assert not rt.sensor("/World/R").reading().is_valid
    on = rt.sensor("/World/On")
    assert on.reading().is_valid
    on.enabled = False
    rt.step(state_for([], step=2))
    assert not on.reading().is_valid
    on.enabled = True
    rt.step(state_for([], step=3))
    assert on.reading().is_valid and on.reading().step == 3


def test_standalone_sensor_without_runtime_batch():
    stage = make_stage()
    add_box(stage, "/World/Wall", (5, 0, 0), (0.2, 8, 3))
    add_raycast(stage, "/World/R", [(0, 0, 0)], [(1, 0, 0)], 0.1, 100.0)

    class Host:
        def __init__(self, stage):
            self.stage = stage
            self.body_paths = ()

    sensor = RaycastSensor("/World/R")
    sensor.bind(Host(stage))
    sensor.update(state_for([], step=1))
    assert sensor.reading().depths[0] == pytest.approx(4.9, abs=1e-5)
