"""Raycast sensor with real physics and over many steps: R1/R2 under MuJoCo, one compile,
the embreex backend, R6 authoring, firing windows, hit paths and the steady fast path.
"""

from __future__ import annotations

import numpy as np
import pytest
from pxr import UsdPhysics

from runtime.sensors.raycast import sweep_window
from runtime.sensors.runtime import SensorRuntime
from tests.helpers.raycast import (  # noqa: E402
    add_box,
    add_raycast,
    example_scene,
    fired,
    make_stage,
    state_for,
)

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
from runtime.sensors.runtime import SensorRuntime
from tests.helpers.raycast import add_raycast, make_stage, state_for
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
        [sys.executable, "-c", _COMPILE_ONCE, str(Path(__file__).parent.parent)],
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
