"""Raycast sensor: the Raycast scenarios R1-R14 of sensors.md §10.

Scenes are synthetic USD stages (Z up, metersPerUnit 1, 60 Hz) reproducing the stated
geometry; body poses come from explicit ``PhysicsState`` objects (free fall computed
analytically where the spec has a falling cube). Expected numbers are the spec's.
"""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from runtime.sensors.raycast import RaycastSensor, sweep_window
from runtime.sensors.runtime import SensorRuntime
from runtime.sensors.state import make_physics_state

DT = 1.0 / 60.0


# ---------------------------------------------------------------------------- scene helpers


def make_stage():
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdGeom.Xform.Define(stage, "/World")
    return stage


def add_box(stage, path, center, size, rigid=False, collider=True):
    if rigid:
        body = UsdGeom.Xform.Define(stage, path)
        body.AddTranslateOp().Set(Gf.Vec3d(*center))
        UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
        if collider:
            cube = UsdGeom.Cube.Define(stage, path + "/collision")
            cube.GetSizeAttr().Set(1.0)
            cube.AddScaleOp().Set(Gf.Vec3f(*size))
            UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
        return body.GetPrim()
    cube = UsdGeom.Cube.Define(stage, path)
    cube.GetSizeAttr().Set(1.0)
    cube.AddTranslateOp().Set(Gf.Vec3d(*center))
    cube.AddScaleOp().Set(Gf.Vec3f(*size))
    UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    return cube.GetPrim()


def add_raycast(
    stage,
    path,
    origins,
    directions,
    min_range=0.4,
    max_range=100.0,
    frame="SENSOR",
    offsets=None,
    paths=False,
    num_rays=None,
    translate=None,
    yaw_deg=None,
):
    prim = stage.DefinePrim(path, "IsaacRaycastSensor")
    n = len(origins) if num_rays is None else num_rays
    prim.CreateAttribute("numRays", Sdf.ValueTypeNames.UInt).Set(int(n))
    prim.CreateAttribute("minRange", Sdf.ValueTypeNames.Float).Set(float(min_range))
    prim.CreateAttribute("maxRange", Sdf.ValueTypeNames.Float).Set(float(max_range))
    prim.CreateAttribute("rayOrigins", Sdf.ValueTypeNames.Float3Array).Set(
        [Gf.Vec3f(*map(float, o)) for o in origins]
    )
    prim.CreateAttribute("rayDirections", Sdf.ValueTypeNames.Float3Array).Set(
        [Gf.Vec3f(*map(float, d)) for d in directions]
    )
    if offsets is not None:
        prim.CreateAttribute("rayTimeOffsets", Sdf.ValueTypeNames.FloatArray).Set(
            [float(t) for t in offsets]
        )
    prim.CreateAttribute("outputFrameOfReference", Sdf.ValueTypeNames.Token).Set(frame)
    prim.CreateAttribute("reportHitPrimPaths", Sdf.ValueTypeNames.Bool).Set(bool(paths))
    xf = UsdGeom.Xformable(prim)
    if translate is not None:
        xf.AddTranslateOp().Set(Gf.Vec3d(*translate))
    if yaw_deg is not None:
        xf.AddRotateZOp().Set(float(yaw_deg))
    return prim


def state_for(body_paths, positions=None, orientations=None, lin=None, step=1, dt=DT):
    b = len(body_paths)
    positions = np.zeros((b, 3)) if positions is None else np.asarray(positions, float)
    if orientations is None:
        orientations = np.tile([1.0, 0.0, 0.0, 0.0], (b, 1))
    return make_physics_state(
        list(body_paths),
        positions.reshape(b, 3),
        np.asarray(orientations, float).reshape(b, 4),
        None if lin is None else np.asarray(lin, float).reshape(b, 3),
        None,
        dt=dt,
        time=step * dt,
        step=step,
    )


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


def example_scene():
    stage = make_stage()
    add_box(stage, "/World/Ground", (0, 0, -0.5), (40, 40, 1))
    add_box(stage, "/World/Wall", (5, 0, 1.5), (0.2, 8, 3))
    add_box(stage, "/World/Box", (3, -3, 0.5), (1, 1, 1))
    return stage


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


def fired(offsets, s, e, wrapped):
    tau = np.asarray(offsets, np.float32)
    return (tau >= s) | (tau < e) if wrapped else (tau >= s) & (tau < e)


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


# ---------------------------------------------------------------------------- real physics


def test_r1_r2_with_mujoco_engine():
    """R1 and R2 with the cube simulated by MuJoCo (the project's engine), not by hand."""
    pytest.importorskip("mujoco")
    from runtime.engine.mujoco_engine import MujocoEngine

    stage = make_stage()
    UsdPhysics.Scene.Define(stage, "/World/physicsScene")
    add_box(stage, "/World/Ground", (0, 0, -0.5), (20, 20, 1))
    body = add_box(stage, "/World/Cube", (0, 0, 5), (1, 1, 1), rigid=True)
    UsdPhysics.MassAPI.Apply(body).CreateMassAttr(1.0)
    add_raycast(stage, "/World/Cube/R1", [(0, 0, 0)], [(0, 0, -1)], 0.1, 20.0, "WORLD")
    add_raycast(stage, "/World/Cube/R2", [(0, 0, 0)], [(0, 0, -1)], 0.6, 20.0, "WORLD",
                paths=True)  # fmt: skip
    engine = MujocoEngine(stage)
    rt = SensorRuntime(stage, engine.body_paths)
    r1, r2 = rt.sensor("/World/Cube/R1"), rt.sensor("/World/Cube/R2")
    zs = []
    for _ in range(30):
        engine.step()
        rt.step(engine.state())
        reading = r1.reading()
        assert reading.is_valid and reading.ray_count == 1
        zs.append(float(reading.ray_origins_world[0, 2]))
        assert reading.depths[0] == pytest.approx(0.1, abs=1e-6)  # inside its own cube
    assert all(b < a for a, b in zip(zs, zs[1:], strict=False)) and zs[-1] < 5.0
    # falling: R2 starts below the cube and sees the ground top (z = 0)
    falling = r2.reading()
    cube_z = float(engine.state().body_positions[engine.body_paths.index("/World/Cube"), 2])
    assert falling.depths[0] == pytest.approx(cube_z, abs=1e-4)
    assert falling.hit_prim_paths == ("/World/Ground",)
    for _ in range(150):  # settle
        engine.step()
        rt.step(engine.state())
    settled = r2.reading()
    assert settled.is_valid and settled.ray_count == 1 and settled.depths[0] < 20.0
    assert settled.depths[0] == pytest.approx(0.6, abs=1e-6)  # start inside the ground box
    assert settled.ray_end_points_world[0, 2] == pytest.approx(0.0, abs=0.15)


_COMPILE_ONCE = """
import sys
import runtime.schema  # noqa: F401
sys.path.insert(0, sys.argv[1])
from test_raycast import SensorRuntime, add_raycast, make_stage, state_for
from runtime.sensors import _raycast_kernels

stage = make_stage()
add_raycast(stage, "/World/R", [(0, 0, 0)], [(1, 0, 0)], offsets=[0.1])
rt = SensorRuntime(stage, [])
rt.step(state_for([], step=1))
for name in _raycast_kernels.__all__:
    kernel = getattr(_raycast_kernels, name)
    assert len(kernel.signatures) == 1, (name, kernel.signatures)
"""


def test_raycast_kernels_compile_once():
    # a fresh process: other tests deliberately compile more signatures (e.g. the
    # non-contiguous states of test_verified_states.py), which depends on test order
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run(
        [sys.executable, "-c", _COMPILE_ONCE, str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_embreex_backend_through_the_runtime_gives_the_same_readings():
    readings = {}
    for backend in ("numba", "embreex"):
        stage = example_scene()
        add_raycast(stage, "/World/R", [(0, 0, 0)] * 3, [(1, 0, 0), (1, 0.5, -0.3), (0, 0, -1)],
                    0.4, 100.0, "WORLD", paths=True, translate=(0, 0, 1.5))  # fmt: skip
        rt = SensorRuntime(stage, [])
        rt.ray_backend = backend
        rt.step(state_for([], step=1))
        sensor = rt.sensor("/World/R")
        assert sensor._batch.scene.backend.name == backend
        readings[backend] = sensor.reading()
    a, b = readings["numba"], readings["embreex"]
    np.testing.assert_allclose(a.depths, b.depths, atol=1e-5)
    np.testing.assert_allclose(a.hit_positions, b.hit_positions, atol=1e-5)
    np.testing.assert_allclose(a.hit_normals, b.hit_normals, atol=1e-6)
    assert a.hit_prim_paths == b.hit_prim_paths == ("/World/Wall", "/World/Wall", "/World/Ground")


def test_bad_value_found_at_first_step_disables_only_that_sensor():
    stage = make_stage()
    add_box(stage, "/World/Wall", (5, 0, 0), (0.2, 8, 3))
    bad = add_raycast(stage, "/World/Bad", [(0, 0, 0)], [(1, 0, 0)])
    add_raycast(stage, "/World/Good", [(0, 0, 0)], [(1, 0, 0)], 0.1)
    rt = SensorRuntime(stage, [], watch_usd=False)
    bad.GetAttribute("minRange").Set(float("inf"))  # edited after binding, read at step 1
    rt.step(state_for([], step=1))
    assert "/World/Bad" in rt.sensor("/World/Bad").disabled_reason
    good = rt.sensor("/World/Good")
    assert good.disabled_reason is None and good.reading().depths[0] == pytest.approx(4.9)
    good.enabled = False
    good.enabled = True
    assert not good.reading().is_valid  # outputs dropped on disable, until the next step


# ---------------------------------------------------------------------------- R6


def test_r6_authoring():
    from runtime.errors import SchemaError
    from runtime.sensors.raycast import create_raycast_sensor, set_raycast_time_offsets

    stage = make_stage()
    with pytest.raises(SchemaError, match="rayDirections"):
        create_raycast_sensor(stage, "/World/A", [(0, 0, 0)] * 2, [(1, 0, 0)])
    with pytest.raises(SchemaError, match="position"):
        create_raycast_sensor(stage, "/World/A", [(0, 0, 0)], [(1, 0, 0)], position=(1, 2, 3),
                              translation=(1, 2, 3))  # fmt: skip
    prim = create_raycast_sensor(stage, "/World/A", [(0, 0, 0), (0, 0, 0.1)],
                                 [(1, 0, 0), (0, 1, 0)], min_range=0.2, max_range=7.5,
                                 output_frame_of_reference="WORLD", report_hit_prim_paths=True,
                                 position=(0, 0, 1.5))  # fmt: skip
    assert prim.GetTypeName() == "IsaacRaycastSensor"
    assert prim.GetAttribute("numRays").Get() == 2
    assert prim.GetAttribute("minRange").Get() == pytest.approx(0.2)
    assert prim.GetAttribute("maxRange").Get() == pytest.approx(7.5)
    assert prim.GetAttribute("outputFrameOfReference").Get() == "WORLD"
    assert prim.GetAttribute("reportHitPrimPaths").Get() is True
    assert not prim.GetAttribute("rayTimeOffsets").HasAuthoredValue()
    # wrap an existing 3-ray sensor and set only its time offsets
    three = add_raycast(stage, "/World/Three", [(0, 0, 0)] * 3, [(1, 0, 0)] * 3)
    set_raycast_time_offsets(three, [0.0, 0.1, 0.2])
    assert list(three.GetAttribute("rayTimeOffsets").Get()) == pytest.approx([0, 0.1, 0.2])
    with pytest.raises(SchemaError, match="rayTimeOffsets"):
        set_raycast_time_offsets(three, [0.0, 0.1])
    # the authored sensor runs: both rays reach the wall / miss as expected
    add_box(stage, "/World/Wall", (5, 0, 1.5), (0.2, 8, 3))
    rt = SensorRuntime(stage, [])
    rt.step(state_for([], step=1))
    r = rt.sensor("/World/A").reading()
    np.testing.assert_allclose(r.depths, [4.9, 7.5], atol=1e-5)
    np.testing.assert_allclose(r.ray_origins_world, [[0, 0, 1.5], [0, 0, 1.6]], atol=1e-6)
    assert r.hit_prim_paths == ("/World/Wall", "")


@pytest.mark.parametrize("dt", [1.0 / 60.0, 0.013, 0.002])
def test_only_window_rays_fire_over_many_steps_with_spec_outputs_for_the_rest(dt):
    """Long sweep (many wraps): the rays cast each step are exactly the §5.3 window's, cast
    rays hit the wall at the analytic distance with the wall's path, and every other ray
    reports maxRange, zero hit position/normal, origin = end = sensor position, path ""."""
    stage = make_stage()
    add_box(stage, "/World/Wall", (5, 0, 0), (0.2, 40, 40))
    n = 36
    offsets = np.arange(n) / n  # period 35/36 s
    ys = np.linspace(-1.0, 1.0, n)
    add_raycast(stage, "/World/R", [(0, y, 0) for y in ys], [(1, 0, 0)] * n, 0.1, 20.0,
                "WORLD", offsets=offsets, paths=True, translate=(0, 0, 1))  # fmt: skip
    rt = SensorRuntime(stage, [])
    sensor = rt.sensor("/World/R")
    offs32 = offsets.astype(np.float32)
    seen = np.zeros(n, bool)
    for c in range(1, int(2.5 / dt)):  # about 2.5 sweeps
        rt.step(state_for([], step=c, dt=dt))
        r = sensor.reading()
        s, e, wrapped = sweep_window(c, dt, offs32.max())
        want = fired(offs32, s, e, wrapped)
        seen |= want
        cast = r.depths < 20.0
        np.testing.assert_array_equal(cast, want)
        np.testing.assert_allclose(r.depths[want], 4.9, atol=1e-5)
        np.testing.assert_allclose(r.ray_origins_world[want, 1], ys[want], atol=1e-6)
        np.testing.assert_allclose(r.hit_normals[want], np.tile([-1.0, 0.0, 0.0], (want.sum(), 1)))
        assert [p for p, w in zip(r.hit_prim_paths, want, strict=True) if w] == [
            "/World/Wall"
        ] * int(want.sum())
        rest = ~want
        assert np.all(r.depths[rest] == np.float32(20.0))
        assert np.all(r.hit_positions[rest] == 0.0) and np.all(r.hit_normals[rest] == 0.0)
        at_sensor = np.tile([0, 0, 1], (rest.sum(), 1))
        np.testing.assert_array_equal(r.ray_origins_world[rest], at_sensor)
        np.testing.assert_array_equal(r.ray_end_points_world[rest], at_sensor)
        assert all(p == "" for p, w in zip(r.hit_prim_paths, rest, strict=True) if w)
    assert seen.all()


def test_hit_paths_follow_each_step_and_old_readings_stay_snapshots():
    """Two sensors in one batch; a rigid box moves in and out of their rays. Each step's
    hit paths (and depths) name the actor actually hit (oracle: the box/wall geometry),
    repeated hit patterns give equal paths, and readings kept from earlier steps keep
    their own step's values."""
    stage = make_stage()
    add_box(stage, "/World/Wall", (5, 0, 0), (0.2, 40, 40))
    add_box(stage, "/World/Mover", (3, 0, 1), (1, 1, 1), rigid=True)
    add_raycast(stage, "/World/A", [(0, 0, 0)], [(1, 0, 0)], 0.1, 20.0, "WORLD", paths=True,
                translate=(0, 0, 1))  # fmt: skip
    add_raycast(stage, "/World/B", [(0, 0, 0), (0, 3, 0)], [(1, 0, 0)] * 2, 0.1, 20.0,
                "WORLD", paths=True, translate=(0, 0, 1))  # fmt: skip
    bodies = ["/World/Mover"]
    rt = SensorRuntime(stage, bodies)
    a, b = rt.sensor("/World/A"), rt.sensor("/World/B")
    kept = []
    for step in range(1, 9):
        blocked = step % 3 != 0
        y = 0.0 if blocked else 10.0
        rt.step(state_for(bodies, positions=[(3, y, 1)], step=step))
        want_a = ("/World/Mover",) if blocked else ("/World/Wall",)
        want_b = (want_a[0], "/World/Wall")
        depth = 2.5 if blocked else 4.9
        ra, rb = a.reading(), b.reading()
        assert ra.hit_prim_paths == want_a and rb.hit_prim_paths == want_b
        np.testing.assert_allclose(ra.depths, [depth], atol=1e-5)
        np.testing.assert_allclose(rb.depths, [depth, 4.9], atol=1e-5)
        kept.append((ra, rb, want_a, want_b, depth))
    for ra, rb, want_a, want_b, depth in kept:
        assert ra.hit_prim_paths == want_a and rb.hit_prim_paths == want_b
        np.testing.assert_allclose(ra.depths, [depth], atol=1e-5)
        np.testing.assert_allclose(rb.depths, [depth, 4.9], atol=1e-5)


def test_not_firing_rays_follow_a_moving_sensor_and_pause_with_it():
    """A windowed sensor on a rigid body that moves, stops, then moves again: every ray that
    does not fire reports origin = end point = the sensor's current position (the body's
    position plus the sensor offset) each step, earlier readings keep theirs, and a second
    static sensor in the same batch keeps its own position throughout."""
    stage = make_stage()
    add_box(stage, "/World/Ground", (0, 0, -0.5), (40, 40, 1))
    add_box(stage, "/World/Cart", (0, 0, 1), (0.2, 0.2, 0.2), rigid=True, collider=False)
    n = 8
    add_raycast(stage, "/World/Cart/Ray", [(0, 0, 0)] * n, [(0, 0, -1)] * n, 0.1, 20.0,
                "WORLD", offsets=np.arange(n) / n, translate=(0.5, 0, 0))  # fmt: skip
    add_raycast(stage, "/World/Fixed", [(0, 0, 0)] * n, [(0, 0, -1)] * n, 0.1, 20.0,
                "WORLD", offsets=np.arange(n) / n, translate=(-3, 1, 2))  # fmt: skip
    bodies = ["/World/Cart"]
    rt = SensorRuntime(stage, bodies)
    cart, fixed = rt.sensor("/World/Cart/Ray"), rt.sensor("/World/Fixed")
    xs = [0.0, 0.3, 0.3, 0.3, -0.0, 0.0, 1.25, 2.0, 2.0, 3.5]
    kept = []
    for step, x in enumerate(xs, start=1):
        rt.step(state_for(bodies, [[x, 0.0, 1.0]], step=step))
        for sensor, where in ((cart, [x + 0.5, 0.0, 1.0]), (fixed, [-3.0, 1.0, 2.0])):
            r = sensor.reading()
            rest = r.depths == np.float32(20.0)
            assert rest.sum() >= n - 2  # a window of a few rays fires each step
            want = np.tile(np.float32(where), (int(rest.sum()), 1))
            np.testing.assert_array_equal(r.ray_origins_world[rest], want)
            np.testing.assert_array_equal(r.ray_end_points_world[rest], want)
            assert np.all(r.hit_positions[rest] == 0.0) and np.all(r.hit_normals[rest] == 0.0)
            kept.append((r, rest, want))
    for r, rest, want in kept:
        np.testing.assert_array_equal(r.ray_origins_world[rest], want)
        np.testing.assert_array_equal(r.ray_end_points_world[rest], want)


@pytest.mark.parametrize(
    "offsets, dt",
    [
        ([0.3, 0.0, 0.9, 0.1, 0.9, 0.5, 0.0, 0.7, 0.2, 0.6], 0.25),  # unsorted, repeated
        ([0.004, 0.0, 0.001, 0.003, 0.002], 1.0 / 60.0),  # period shorter than a step
        ([0.0, 0.0, 0.0, 0.05], 0.013),
    ],
)
def test_firing_rays_match_the_window_formula_for_unsorted_and_short_periods(offsets, dt):
    """Rays whose offsets are unsorted or repeated, and periods shorter than a step: the
    rays that fire are exactly those of the §5.3 window formula (oracle: ``fired``), in
    ray order, and two sensors in one batch do not disturb each other."""
    stage = make_stage()
    n = len(offsets)
    for name, y in (("/World/R", 0.0), ("/World/Q", 5.0)):
        add_raycast(stage, name, [(0, y, 0)] * n, [(1, 0, 0)] * n, 0.1, 50.0,
                    offsets=offsets)  # fmt: skip
    rt = SensorRuntime(stage, [])
    offs32 = np.asarray(offsets, np.float32)
    for c in range(1, 40):
        rt.step(state_for([], step=c, dt=dt))
        s, e, wrapped = sweep_window(c, dt, offs32.max())
        want = np.nonzero(fired(offs32, s, e, wrapped))[0].tolist()
        for name in ("/World/R", "/World/Q"):
            r = rt.sensor(name).reading()
            firing = np.nonzero(np.abs(r.ray_end_points_world[:, 0] - 50.0) < 1e-4)[0]
            assert firing.tolist() == want, (name, c)


def test_readings_follow_state_changes_in_the_steady_fast_path():
    """Steady steps skip the per-sensor checks; every state change must still show."""
    stage = make_stage()
    add_box(stage, "/World/Wall", (5, 0, 2), (0.2, 10, 10))
    add_raycast(stage, "/World/A", [(0, 0, 0)], [(1, 0, 0)], 0.1, 20.0, translate=(0, 0, 2))
    add_raycast(stage, "/World/B", [(0, 0, 0)], [(1, 0, 0)], 0.1, 20.0, translate=(1, 0, 2))
    rt = SensorRuntime(stage, [])
    a, b = rt.sensor("/World/A"), rt.sensor("/World/B")
    for step in range(1, 6):
        rt.step(state_for([], step=step))
    assert a.reading().step == b.reading().step == 5
    assert a.reading().depths[0] == pytest.approx(4.9, abs=1e-5)
    assert b.reading().depths[0] == pytest.approx(3.9, abs=1e-5)
    # B off: A alone is evaluated by a new layout whose stamps must not collide with the old
    b.enabled = False
    for step in range(6, 12):
        rt.step(state_for([], step=step))
        assert a.reading().step == step and not b.reading().is_valid
    b.enabled = True
    rt.step(state_for([], step=12))
    assert a.reading().step == b.reading().step == 12
    # a USD deletion and a reset are seen by the next step
    stage.RemovePrim("/World/B")
    b.on_usd_changed()
    rt.step(state_for([], step=13))
    assert a.reading().step == 13 and not b.reading().is_valid
    rt.reset()
    assert not a.reading().is_valid
    rt.step(state_for([], step=1))
    assert a.reading().is_valid and a.reading().step == 1
    assert a.reading().depths[0] == pytest.approx(4.9, abs=1e-5)
