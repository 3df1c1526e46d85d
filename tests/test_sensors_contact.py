"""Contact sensor scenarios of docs/sensors/contact.md (C1-C17), physics from MuJoCo."""

from __future__ import annotations

import logging

import mujoco
import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from runtime.errors import SchemaError
from runtime.schema.readers import read_contact_sensor
from runtime.sensors import ContactReading, ContactSensor, SensorRuntime, make_physics_state
from tests.helpers.reference_sensors import MujocoHarness

DT = 1.0 / 60.0


def _stage(mpu=1.0):
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageMetersPerUnit(stage, mpu)
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    return stage


def _body(stage, path, translate=(0, 0, 0)):
    xform = UsdGeom.Xform.Define(stage, path)
    xform.AddTranslateOp().Set(Gf.Vec3d(*translate))
    UsdPhysics.RigidBodyAPI.Apply(xform.GetPrim())
    return xform.GetPrim()


def _contact(stage, path, translate=(0, 0, 0), threshold=None, radius=None):
    prim = stage.DefinePrim(path, "IsaacContactSensor")
    UsdGeom.Xformable(prim).AddTranslateOp().Set(Gf.Vec3d(*translate))
    if threshold is not None:
        prim.CreateAttribute("threshold", Sdf.ValueTypeNames.Float2).Set(Gf.Vec2f(*threshold))
    if radius is not None:
        prim.CreateAttribute("radius", Sdf.ValueTypeNames.Float).Set(radius)
    return prim


def _model(xml):
    model = mujoco.MjModel.from_xml_string(xml)
    return model, mujoco.MjData(model)


# ----------------------------------------------------------------------------- C1, C2

CUBE_XML = """<mujoco><option timestep="{dt}" gravity="0 0 -{g}"/><worldbody>
<geom type="plane" size="10 10 0.1"/>
{bodies}</worldbody></mujoco>"""


def _cube(name, half, z, mass=1.0):
    return (
        f'<body name="{name}" pos="0 0 {z}"><freejoint/>'
        f'<geom type="box" size="{half} {half} {half}" mass="{mass}"/></body>'
    )


def test_c1_cube_on_ground():
    stage = _stage()
    _body(stage, "/World/Cube", (0, 0, 0.5))
    _contact(stage, "/World/Cube/Contact", threshold=(0.0, 1e7), radius=-1.0)
    model, data = _model(CUBE_XML.format(dt=DT, g=9.81, bodies=_cube("cube", 0.5, 0.5)))
    harness = MujocoHarness(model, data, {"world": "/World/Ground", "cube": "/World/Cube"})
    rt = SensorRuntime(stage, harness.paths)
    sensor = rt.sensor("/World/Cube/Contact")
    assert sensor.reading() == ContactReading()  # before any step: invalid default
    for _ in range(10):
        rt.step(harness.step())
    reading = sensor.reading()
    assert reading.is_valid and reading.in_contact and reading.value > 0
    assert reading.value == pytest.approx(9.81, rel=0.05)


def test_c2_stacked_cubes_net_vector_force():
    stage = _stage()
    _body(stage, "/World/Bottom", (0, 0, 0.25))
    _body(stage, "/World/Top", (0, 0, 0.75))
    _contact(stage, "/World/Bottom/Contact", threshold=(0.0, 100.0), radius=-1.0)
    _contact(stage, "/World/Top/Contact", threshold=(0.0, 100.0), radius=-1.0)
    bodies = _cube("bottom", 0.25, 0.25) + _cube("top", 0.25, 0.75)
    model, data = _model(CUBE_XML.format(dt=DT, g=10.0, bodies=bodies))
    harness = MujocoHarness(
        model, data, {"world": "/World/Ground", "bottom": "/World/Bottom", "top": "/World/Top"}
    )
    rt = SensorRuntime(stage, harness.paths)
    for _ in range(30):
        rt.step(harness.step())
    bottom = rt.sensor("/World/Bottom/Contact").reading()
    top = rt.sensor("/World/Top/Contact").reading()
    assert bottom.in_contact and top.in_contact
    assert bottom.number_of_contacts > 1 and top.number_of_contacts >= 1
    assert bottom.value == pytest.approx(10.0, rel=0.05)
    assert top.value == pytest.approx(10.0, rel=0.05)


# ----------------------------------------------------------------------------- leg scene

LEG_XML = """<mujoco><option timestep="{dt}" gravity="0 0 -9.81"/><worldbody>
<body name="ground" mocap="true" pos="0 0 {ground}">
  <geom type="plane" size="10 10 0.1"/>
</body>
<body name="leg" pos="0 0 0.25" euler="0 {pitch} 0">
  <joint name="hip" type="hinge" axis="0 1 0" damping="0.02"/>
  <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.02" mass="0.03873"/>
  <geom type="sphere" pos="0.4 0 0" size="0.05" mass="0.03873"/>
</body></worldbody></mujoco>"""
TIP_GROUND = 0.25 - 0.4 * np.sin(np.radians(30.0)) - 0.05  # tip sphere bottom at rest pose
# Leg masses chosen so that the resting tip force is the spec's "about 0.57".


def _leg_scene(ground=TIP_GROUND, thresholds=((0.0, 1e7),)):
    stage = _stage()
    _body(stage, "/World/Leg", (0, 0, 0.25))
    for i, threshold in enumerate(thresholds):
        _contact(stage, f"/World/Leg/Tip{i}", (0.4, 0, 0), threshold=threshold, radius=0.12)
    _contact(stage, "/World/Leg/Origin", (0, 0, 0), threshold=(0.0, 1e7), radius=0.12)
    mid = UsdGeom.Xform.Define(stage, "/World/Leg/Mid")
    mid.AddTranslateOp().Set(Gf.Vec3d(0.2, 0, 0))
    _contact(stage, "/World/Leg/Mid/Tip", (0.2, 0, 0), threshold=(0.0, 1e7), radius=0.12)
    model, data = _model(LEG_XML.format(dt=DT, ground=ground, pitch=30.0))
    harness = MujocoHarness(model, data, {"ground": "/World/Ground", "leg": "/World/Leg"})
    return stage, model, data, harness, SensorRuntime(stage, harness.paths)


def test_c3_raw_contacts_follow_the_ground():
    _, model, data, harness, rt = _leg_scene(ground=-10.0)
    rt.step(harness.step())
    assert rt.sensor("/World/Leg/Tip0").raw_contacts() == []
    _, model, data, harness, rt = _leg_scene()
    for _ in range(60):
        rt.step(harness.step())
    raw = rt.sensor("/World/Leg/Tip0").raw_contacts()
    assert len(raw) == 1
    assert "/World/Leg" in (raw[0].body0, raw[0].body1)
    assert abs(raw[0].normal[2] - 1.0) < 0.1
    data.mocap_pos[0, 2] = -15.0
    for _ in range(30):
        rt.step(harness.step())
    assert rt.sensor("/World/Leg/Tip0").raw_contacts() == []
    assert rt.sensor("/World/Leg/Tip0").reading().number_of_contacts == 0


def test_c4_c5_c6_thresholds_radius_and_intermediate_xform():
    thresholds = ((0.0, 100.0), (50.0, 100.0), (0.0, 0.1))
    _, _, _, harness, rt = _leg_scene(thresholds=thresholds)
    origin_values = []
    for _ in range(60):
        rt.step(harness.step())
    for _ in range(40):
        rt.step(harness.step())
        origin = rt.sensor("/World/Leg/Origin").reading()
        assert origin.is_valid
        origin_values.append(origin.value)
    tip, high, clamp = (rt.sensor(f"/World/Leg/Tip{i}").reading() for i in range(3))
    # Moment balance about the hip: F = g (0.2 m1 + 0.4 m2) / 0.4 = 0.570 (the spec's ~0.57).
    assert tip.value == pytest.approx(0.570, abs=0.01)
    assert tip.in_contact and tip.value > 0.1
    assert not high.in_contact and high.value == 0.0
    assert clamp.in_contact and clamp.value == pytest.approx(0.1, abs=1e-5)
    assert origin_values == [0.0] * 40  # C5: the tip contact is outside the radius
    mid = rt.sensor("/World/Leg/Mid/Tip").reading()  # C6
    assert mid.in_contact and mid.value > 0.1 and mid.value == tip.value


def test_c7_c8_c9_c11_value_equals_impulse_over_dt_and_raw_records():
    _, _, _, harness, rt = _leg_scene()
    sensor = rt.sensor("/World/Leg/Tip0")
    times = []
    for _ in range(60 + 120):
        rt.step(harness.step())
        times.append(sensor.reading().time)
    raw = sensor.raw_contacts()
    reading = sensor.reading()
    if raw:
        assert reading.value == pytest.approx(np.linalg.norm(raw[0].impulse) * 60.0, abs=0.005)
    else:
        assert reading.value == 0.0
    assert len(raw) == 1  # C8: resting contact still reported after 3 s
    for record in raw:  # C9
        assert 0.0 < record.dt <= 1.1 * DT
        assert np.all(np.isfinite(record.position))
    assert np.all(np.diff(times) > 0)  # C11


def test_c10_c13_determinism_across_sessions_and_restart_stamps():
    results = []
    for _ in range(2):
        _, _, _, harness, rt = _leg_scene()
        for _ in range(30):
            rt.step(harness.step())
        r = rt.sensor("/World/Leg/Tip0").reading()
        results.append((r.value, r.time, r.in_contact))
    assert results[0] == results[1]
    # C13: stop, start, 3 steps.
    rt.reset()
    assert not rt.sensor("/World/Leg/Tip0").reading().is_valid
    mujoco.mj_resetData(harness.model, harness.data)
    harness.step_count = 0
    for _ in range(3):
        rt.step(harness.step())
    r = rt.sensor("/World/Leg/Tip0").reading()
    assert r.time == pytest.approx(0.05, abs=0.01) and r.step == 3


def test_c12_deleting_the_prim_invalidates_readings():
    stage, _, _, harness, rt = _leg_scene()
    for _ in range(5):
        rt.step(harness.step())
    assert rt.sensor("/World/Leg/Tip0").reading().is_valid
    stage.RemovePrim("/World/Leg/Tip0")
    rt.step(harness.step())
    assert not rt.sensor("/World/Leg/Tip0").reading().is_valid
    assert rt.sensor("/World/Leg/Origin").reading().is_valid


def test_c14_dropped_block_reports_contact():
    stage = _stage()
    _body(stage, "/World/Lower", (0, 0, 5))
    _body(stage, "/World/Upper", (0, 0, 10))
    _contact(stage, "/World/Upper/Contact")
    xml = CUBE_XML.format(
        dt=DT,
        g=9.81,
        bodies='<body name="lower" pos="0 0 5"><geom type="box" size="0.5 0.5 0.5"/></body>'
        + _cube("upper", 0.5, 10.0),
    )
    model, data = _model(xml)
    harness = MujocoHarness(model, data, {"lower": "/World/Lower", "upper": "/World/Upper"})
    rt = SensorRuntime(stage, harness.paths)
    frames = None
    for frame in range(500):
        rt.step(harness.step())
        if rt.sensor("/World/Upper/Contact").reading().in_contact:
            frames = frame
            break
    assert frames is not None


def test_c15_authoring_errors_disable_sensors_with_reasons(caplog):
    stage = _stage()
    collider = UsdGeom.Cube.Define(stage, "/World/Collider").GetPrim()
    UsdPhysics.CollisionAPI.Apply(collider)
    under_collider = _contact(stage, "/World/Collider/Contact")
    _contact(stage, "/RootContact")
    _body(stage, "/World/Body")
    stage.DefinePrim("/World/Body/NotASensor", "Xform")
    with pytest.raises(ValueError):  # reader-level error is a ValueError (SchemaError)
        read_contact_sensor(under_collider)
    with caplog.at_level(logging.ERROR, logger="runtime.sensors"):
        rt = SensorRuntime(
            stage,
            ["/World/Body"],
            sensors=[
                ContactSensor("/World/Collider/Contact"),
                ContactSensor("/RootContact"),
                ContactSensor("/World/Body/NotASensor"),
                ContactSensor("/World/Unknown"),
            ],
        )
    reasons = [s.disabled_reason for s in rt.sensors]
    for sensor, reason in zip(rt.sensors, reasons, strict=True):
        assert reason is not None and sensor.prim_path in reason
    assert "IsaacContactSensor" in reasons[2]
    assert len(caplog.records) == 4
    rt.step(
        make_physics_state(["/World/Body"], [[0, 0, 0]], [[1, 0, 0, 0]], dt=DT, time=DT, step=1)
    )
    for sensor in rt.sensors:
        reading = sensor.reading()
        assert (reading.time, reading.value, reading.in_contact, reading.is_valid) == (
            0.0,
            0.0,
            False,
            False,
        )
    assert isinstance(SchemaError("/a", "b", "c"), ValueError)


def _synthetic(stage_paths, impulses, body0, body1, positions, step):
    return make_physics_state(
        stage_paths,
        np.zeros((len(stage_paths), 3)),
        np.tile([1.0, 0, 0, 0], (len(stage_paths), 1)),
        contact_body0=body0,
        contact_body1=body1,
        contact_positions=positions,
        contact_impulses=impulses,
        dt=DT,
        time=step * DT,
        step=step,
    )


def test_c16_live_enable_threshold_and_radius_edits():
    stage = _stage()
    _body(stage, "/World/Body")
    prim = _contact(stage, "/World/Body/Contact", threshold=(0.0, 100.0), radius=-1.0)
    rt = SensorRuntime(stage, ["/World/Body"])
    sensor = rt.sensor("/World/Body/Contact")
    impulse = [[0.0, 0.0, 2.0 * DT]]  # 2 N upward on the body
    step = 0

    def advance():
        nonlocal step
        step += 1
        rt.step(_synthetic(["/World/Body"], impulse, [0], [-1], [[1.0, 0.0, 0.0]], step))
        return sensor.reading()

    assert advance().value == pytest.approx(2.0)
    prim.CreateAttribute("enabled", Sdf.ValueTypeNames.Bool).Set(False)
    assert not advance().is_valid
    prim.GetAttribute("enabled").Set(True)
    assert advance().is_valid
    prim.GetAttribute("threshold").Set(Gf.Vec2f(0.0, 1.5))
    assert advance().value == pytest.approx(1.5)
    prim.GetAttribute("threshold").Set(Gf.Vec2f(3.0, 100.0))
    reading = advance()
    assert reading.value == 0.0 and not reading.in_contact and reading.is_valid
    prim.GetAttribute("threshold").Set(Gf.Vec2f(0.0, 100.0))
    prim.GetAttribute("radius").Set(0.5)  # contact at distance 1: filtered out
    reading = advance()
    assert reading.value == 0.0 and reading.number_of_contacts == 1
    prim.GetAttribute("radius").Set(1.5)
    assert advance().value == pytest.approx(2.0)
    sensor.enabled = False  # user-side flag
    assert not advance().is_valid
    sensor.enabled = True
    assert advance().is_valid


def test_c17_opposing_contacts_cancel():
    stage = _stage()
    _body(stage, "/World/A")
    _body(stage, "/World/B")
    _contact(stage, "/World/A/Contact", threshold=(0.0, 100.0))
    rt = SensorRuntime(stage, ["/World/A", "/World/B"])
    a = 0.5
    # (0,0,+a) on A as body0, and (0,0,+a) on B as body0 with A as body1 (-> -a on A).
    state = _synthetic(
        ["/World/A", "/World/B"],
        [[0, 0, a], [0, 0, a]],
        [0, 1],
        [-1, 0],
        [[0, 0, 0], [0, 0, 0]],
        1,
    )
    rt.step(state)
    reading = rt.sensor("/World/A/Contact").reading()
    assert reading.value == 0.0 and not reading.in_contact and reading.number_of_contacts == 2


def test_contact_bookkeeping_keeps_only_the_last_event_per_body_pair():
    stage = _stage()
    _body(stage, "/World/A")
    _body(stage, "/World/B")
    _contact(stage, "/World/A/Contact", threshold=(0.0, 1e5))
    rt = SensorRuntime(stage, ["/World/A", "/World/B"])
    up = [0.0, 0.0, DT]  # 1 N for one step
    # Compound A on the ground with two shapes (events 0 and 1), and B resting on A (event 2).
    kwargs = dict(
        contact_body0=[0, 0, 0, 1],
        contact_body1=[-1, -1, -1, 0],
        contact_positions=np.zeros((4, 3)),
        contact_impulses=[up, up, [0.0, 0.0, 3 * DT], [0.0, 0.0, -0.5 * DT]],
        dt=DT,
        time=DT,
        step=1,
    )
    paths = ["/World/A", "/World/B"]
    pose = (np.zeros((2, 3)), np.tile([1.0, 0, 0, 0], (2, 1)))
    rt.step(make_physics_state(paths, *pose, **kwargs))
    all_points = rt.sensor("/World/A/Contact").reading()
    assert all_points.number_of_contacts == 4
    assert all_points.value == pytest.approx(1 + 1 + 3 + 0.5, rel=1e-6)
    rt.step(make_physics_state(paths, *pose, contact_events=[0, 0, 1, 2], **kwargs))
    quirk = rt.sensor("/World/A/Contact").reading()
    assert quirk.number_of_contacts == 2  # event 0 of the (A, ground) pair is dropped
    assert quirk.value == pytest.approx(3 + 0.5, rel=1e-6)
    assert len(rt.sensor("/World/A/Contact").raw_contacts()) == 2
