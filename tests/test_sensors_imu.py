"""IMU scenarios of docs/sensors/imu.md (I1-I18), physics from MuJoCo or synthetic states."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

from runtime.sensors import ImuSensor, SensorRuntime, make_physics_state
from runtime.sensors.imu import imu_ring_size
from tests.helpers.reference_sensors import MujocoHarness

DT = 1.0 / 60.0


def _stage(mpu=1.0, gravity=9.81, scene=True):
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageMetersPerUnit(stage, mpu)
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    if scene:
        physics_scene = UsdPhysics.Scene.Define(stage, "/PhysicsScene")
        physics_scene.CreateGravityMagnitudeAttr(gravity)
        physics_scene.CreateGravityDirectionAttr(Gf.Vec3f(0, 0, -1))
    return stage


def _body(stage, path, translate=(0, 0, 0), orient=None):
    xform = UsdGeom.Xform.Define(stage, path)
    xform.AddTranslateOp().Set(Gf.Vec3d(*translate))
    if orient is not None:
        xform.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Quatd(*orient))
    UsdPhysics.RigidBodyAPI.Apply(xform.GetPrim())
    return xform.GetPrim()


def _imu(stage, path, widths=None, translate=None):
    prim = stage.DefinePrim(path, "IsaacImuSensor")
    if translate is not None:
        UsdGeom.Xformable(prim).AddTranslateOp().Set(Gf.Vec3d(*translate))
    if widths is not None:
        for name, width in zip(
            (
                "linearAccelerationFilterWidth",
                "angularVelocityFilterWidth",
                "orientationFilterWidth",
            ),
            widths,
            strict=True,
        ):
            prim.CreateAttribute(name, Sdf.ValueTypeNames.Int).Set(width)
    return prim


def _is_default(r):
    return (
        not r.is_valid
        and r.time == 0.0
        and r.step == 0
        and np.all(r.linear_acceleration == 0)
        and np.all(r.angular_velocity == 0)
        and np.all(r.orientation == [1, 0, 0, 0])
    )


def _sim(xml, bodies):
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    return model, data, MujocoHarness(model, data, bodies)


def _drop_xml(g=9.81, radius=0.25, z=1.0, dt=DT, ground=True):
    floor = '<geom type="plane" size="50 50 0.1"/>' if ground else ""
    return (
        f'<mujoco><option timestep="{dt}" gravity="0 0 -{g}"/><worldbody>{floor}'
        f'<body name="ball" pos="0 0 {z}"><freejoint/>'
        f'<geom type="sphere" size="{radius}" mass="1"/></body></worldbody></mujoco>'
    )


def test_i1_i16_free_fall():
    stage = _stage()
    _body(stage, "/World/Cube", (0, 0, 5))
    _imu(stage, "/World/Cube/Imu")
    _, _, harness = _sim(_drop_xml(z=5.0, ground=False), {"ball": "/World/Cube"})
    rt = SensorRuntime(stage, harness.paths)
    imu = rt.sensor("/World/Cube/Imu")
    assert _is_default(imu.reading())
    rt.step(harness.step())
    first = imu.reading(read_gravity=False)
    assert first.linear_acceleration[2] == pytest.approx(-9.81, abs=2e-5)  # I16: exactly -g
    for _ in range(2):
        rt.step(harness.step())
    r = imu.reading()
    assert r.is_valid and r.time > 0 and np.all(np.isfinite(r.linear_acceleration))
    for _ in range(27):
        rt.step(harness.step())
    assert abs(imu.reading().linear_acceleration[2]) < 0.1  # I1, 0.5 s


@pytest.mark.parametrize(
    ("mpu", "gravity", "scene", "expected"),
    [
        (1.0, 9.81, True, 9.81),
        (1.0, 1.62, True, 1.62),
        (0.01, 9.81, True, 981.0),
        (1.0, 9.81, False, 9.80665),
    ],
    ids=["I2", "I3-moon", "I4-centimetres", "I5-no-scene"],
)
def test_i2_to_i5_falling_then_resting(mpu, gravity, scene, expected):
    stage = _stage(mpu, gravity, scene)
    scale = 1.0 / mpu  # stage units per metre
    _body(stage, "/World/Ball", (0, 0, 1.0 * scale))
    _imu(stage, "/World/Ball/Imu")
    xml = _drop_xml(g=gravity * scale, radius=0.25 * scale, z=1.0 * scale)
    _, _, harness = _sim(xml, {"ball": "/World/Ball"})
    rt = SensorRuntime(stage, harness.paths)
    imu = rt.sensor("/World/Ball/Imu")
    for _ in range(20):
        rt.step(harness.step())
        assert abs(imu.reading().linear_acceleration[2]) < 0.1 * scale
        assert imu.reading(read_gravity=False).linear_acceleration[2] == pytest.approx(
            -gravity * scale, abs=0.1 * scale
        )
    for _ in range(100 if gravity > 5 else 160):
        rt.step(harness.step())
    assert imu.reading().linear_acceleration[2] == pytest.approx(expected, abs=0.1)
    assert abs(imu.reading(read_gravity=False).linear_acceleration[2]) < 0.1


ARM_XML = """<mujoco><option timestep="{dt}" gravity="0 0 -9.81"/><worldbody>
<body name="arm" pos="0 0 1"><joint name="hinge" type="hinge" axis="0 0 1"/>
<geom type="capsule" fromto="0 0 0 1 0 0" size="0.05" mass="1"/></body>
</worldbody></mujoco>"""


def _arm():
    stage = _stage()
    _body(stage, "/World/Arm", (0, 0, 1))
    _imu(stage, "/World/Arm/Imu", translate=(0.5, 0, 0))
    model, data, harness = _sim(ARM_XML.format(dt=DT), {"arm": "/World/Arm"})
    return stage, model, data, harness, SensorRuntime(stage, harness.paths)


def _kinematic(harness):
    harness.step_count += 1
    return harness.state()


def test_i6_orientation_follows_commanded_joint_angle():
    _, _, data, harness, rt = _arm()
    imu = rt.sensor("/World/Arm/Imu")
    for command in range(0, 350, 5):
        data.qpos[0] = np.radians(command)
        data.qvel[0] = 0.0
        rt.step(_kinematic(harness))
        q = imu.reading().orientation
        angle = np.degrees(2.0 * np.arctan2(q[3], q[0]))
        wrapped = (angle + 180.0) % 360.0 - 180.0
        expected = (command + 180.0) % 360.0 - 180.0
        assert abs(wrapped - expected) < 0.1 or abs(abs(wrapped - expected) - 360) < 0.1


def test_i7_angular_velocity_follows_joint_velocity():
    _, _, data, harness, rt = _arm()
    imu = rt.sensor("/World/Arm/Imu")
    for x in range(0, 600, 30):
        data.qvel[0] = np.radians(x)
        rt.step(harness.step())
        assert imu.reading().angular_velocity[2] == pytest.approx(np.radians(x), abs=0.2)


def test_i9_wider_filter_reduces_spread_at_rest():
    stage = _stage()
    _body(stage, "/World/Ball", (0, 0, 0.25))
    _imu(stage, "/World/Ball/Narrow", widths=(1, 1, 1))
    _imu(stage, "/World/Ball/Wide", widths=(20, 20, 20))
    _, _, harness = _sim(_drop_xml(z=0.26, dt=1 / 400), {"ball": "/World/Ball"})
    rt = SensorRuntime(stage, harness.paths)
    narrow, wide = [], []
    for frame in range(800):
        rt.step(harness.step())
        if frame >= 400:
            for sensor, out in (("Narrow", narrow), ("Wide", wide)):
                r = rt.sensor(f"/World/Ball/{sensor}").reading()
                out.append(np.concatenate([r.linear_acceleration, r.angular_velocity]))
    spread = [
        np.percentile(np.array(v), 99, axis=0) - np.percentile(np.array(v), 1, axis=0)
        for v in (narrow, wide)
    ]
    assert np.all(spread[1] <= spread[0] + 1e-6)


@pytest.mark.parametrize("rotated", [False, True])
def test_i10_imu_under_xform_on_resting_cube(rotated):
    s = np.sqrt(0.5)
    orient = (s, 0.0, -s, 0.0) if rotated else None  # -90 deg about Y
    stage = _stage()
    _body(stage, "/World/Cube", (0, 0, 0.5), orient)
    UsdGeom.Xform.Define(stage, "/World/Cube/Mount").AddTranslateOp().Set(Gf.Vec3d(0.1, 0, 0))
    _imu(stage, "/World/Cube/Mount/Imu")
    quat = "0.70710678 0 -0.70710678 0" if rotated else "1 0 0 0"
    xml = (
        f'<mujoco><option timestep="{DT}"/><worldbody><geom type="plane" size="5 5 .1"/>'
        f'<body name="cube" pos="0 0 0.5" quat="{quat}"><freejoint/>'
        '<geom type="box" size=".5 .5 .5" mass="1"/></body></worldbody></mujoco>'
    )
    _, _, harness = _sim(xml, {"cube": "/World/Cube"})
    rt = SensorRuntime(stage, harness.paths)
    for _ in range(60):
        rt.step(harness.step())
    r = rt.sensor("/World/Cube/Mount/Imu").reading()
    if not rotated:
        assert r.linear_acceleration[2] == pytest.approx(9.81, abs=0.1)
        return
    assert r.linear_acceleration[0] == pytest.approx(9.81, abs=0.1)
    q = r.orientation
    assert abs(abs(q[0]) - s) < 1e-4 and abs(abs(q[2]) - s) < 1e-4
    assert abs(q[1]) < 1e-4 and abs(q[3]) < 1e-4
    assert q[0] == pytest.approx(-q[2], abs=1e-4)


def test_i11_i12_i14_determinism_stamps_deletion_and_restart():
    results = []
    for _ in range(2):
        stage = _stage()
        _body(stage, "/World/Ball", (0, 0, 1))
        _imu(stage, "/World/Ball/Imu")
        _, _, harness = _sim(_drop_xml(), {"ball": "/World/Ball"})
        rt = SensorRuntime(stage, harness.paths)
        times = []
        for _ in range(30):
            rt.step(harness.step())
            times.append(rt.sensor("/World/Ball/Imu").reading().time)
        assert np.all(np.diff(times) > 0)
        results.append(rt.sensor("/World/Ball/Imu").reading().linear_acceleration)
    np.testing.assert_allclose(results[0], results[1], atol=1e-4)
    rt.reset()  # I14
    mujoco.mj_resetData(harness.model, harness.data)
    harness.step_count = 0
    for _ in range(3):
        rt.step(harness.step())
    r = rt.sensor("/World/Ball/Imu").reading()
    assert r.time == pytest.approx(0.05, abs=0.01) and r.step == 3
    stage.RemovePrim("/World/Ball/Imu")  # I12: deletion
    rt.step(harness.step())
    assert not rt.sensor("/World/Ball/Imu").reading().is_valid


def test_i12_imu_without_body_or_wrong_type_is_invalid_without_raising():
    stage = _stage()
    _body(stage, "/World/Body")
    _imu(stage, "/World/Loose")
    stage.DefinePrim("/World/Body/Other", "IsaacContactSensor")
    rt = SensorRuntime(
        stage,
        ["/World/Body"],
        sensors=[ImuSensor("/World/Loose"), ImuSensor("/World/Body/Other")],
    )
    rt.step(
        make_physics_state(["/World/Body"], [[0, 0, 0]], [[1, 0, 0, 0]], dt=DT, time=DT, step=1)
    )
    for sensor in rt.sensors:
        assert sensor.disabled_reason and sensor.prim_path in sensor.disabled_reason
        assert _is_default(sensor.reading())


@pytest.mark.parametrize("read_gravity", [True, False])
def test_i13_vehicle_at_rest(read_gravity):
    stage = _stage()
    _body(stage, "/World/Carter", (0, 0, 0.2))
    _imu(stage, "/World/Carter/Imu", translate=(0.2, 0.0, 0.1))
    xml = (
        f'<mujoco><option timestep="{DT}"/><worldbody><geom type="plane" size="5 5 .1"/>'
        '<body name="carter" pos="0 0 0.2"><freejoint/>'
        '<geom type="box" size=".4 .3 .2" mass="30"/></body></worldbody></mujoco>'
    )
    _, _, harness = _sim(xml, {"carter": "/World/Carter"})
    rt = SensorRuntime(stage, harness.paths)
    for _ in range(60):
        rt.step(harness.step())
    r = rt.sensor("/World/Carter/Imu").reading(read_gravity=read_gravity)
    assert r.linear_acceleration[2] == pytest.approx(9.81 if read_gravity else 0.0, abs=0.1)
    assert np.linalg.norm(r.orientation) == pytest.approx(1.0, abs=1e-4)
    assert {
        "time",
        "step",
        "linear_acceleration",
        "angular_velocity",
        "orientation",
        "is_valid",
    } <= set(r.__dataclass_fields__)


def _synthetic_runtime(widths=None, mode="isaac"):
    stage = _stage()
    _body(stage, "/World/Body")
    _imu(stage, "/World/Body/Imu", widths=widths)
    rt = SensorRuntime(stage, ["/World/Body"], imu_mode=mode)
    return rt, rt.sensor("/World/Body/Imu")


def _state(k, v=(0, 0, 0), w=(0, 0, 0), p=(0, 0, 0), q=(1, 0, 0, 0), dt=DT):
    return make_physics_state(
        ["/World/Body"], [p], [q], [v], [w], dt=dt, time=k * dt, step=k, gravity=(0, 0, -9.81)
    )


def test_i15_unit_facts():
    assert imu_ring_size((15, 5, 5)) == 30
    rt, imu = _synthetic_runtime(widths=(15, 5, 5))
    assert imu._batch.ring_sizes[imu._index] == 30
    rt, imu = _synthetic_runtime(widths=(1, 3, 1))
    for k in (1, 2, 3):
        rt.step(_state(k, w=(0, 0, float(k))))
    assert imu.reading().angular_velocity[2] == pytest.approx(2.0)
    rt, imu = _synthetic_runtime()
    for k in range(1, 6):
        rt.step(_state(k, v=(5.0 * k * DT, 0, 0)))
        assert imu.reading().linear_acceleration[0] == pytest.approx(5.0, rel=1e-5)


def test_i17_width_four_ramps_in_from_the_zero_fill():
    rt, imu = _synthetic_runtime(widths=(1, 4, 1))
    w = 2.0
    expected = [w / 4, w / 2, 3 * w / 4, w, w, w]
    for k, value in enumerate(expected, start=1):
        rt.step(_state(k, w=(0, 0, w)))
        assert imu.reading().angular_velocity[2] == pytest.approx(value, rel=1e-6)


@pytest.mark.parametrize("mode", ["isaac", "physical"])
def test_i18_constant_speed_circle(mode):
    rt, imu = _synthetic_runtime(mode=mode)
    radius, speed = 5.0, 2.0
    omega = speed / radius
    lateral = []
    for k in range(1, 120):
        t = k * DT
        heading = omega * t
        p = (radius * np.sin(heading), radius * (1 - np.cos(heading)), 0.0)
        v = (speed * np.cos(heading), speed * np.sin(heading), 0.0)
        q = (np.cos(heading / 2), 0.0, 0.0, np.sin(heading / 2))
        rt.step(_state(k, v=v, w=(0, 0, omega), p=p, q=q))
        lateral.append(imu.reading(read_gravity=False).linear_acceleration[1])
    if mode == "isaac":
        assert np.max(np.abs(lateral[1:])) < 1e-3  # reference: no rotating-frame term
    else:
        np.testing.assert_allclose(lateral[1:], speed**2 / radius, rtol=0.02)


SLIDER_ARM_XML = """<mujoco><option timestep="{dt}" gravity="0 0 -9.81"/><worldbody>
<body name="arm" pos="0 0 1"><joint name="rev" type="hinge" axis="0 0 1"/>
  <geom type="box" pos="1 0 0" size="1 0.05 0.05" mass="2"/>
  <body name="slider" pos="1 0 0.1"><joint name="pri" type="slide" axis="1 0 0"/>
    <geom type="box" size="0.1 0.1 0.05" mass="0.5" contype="0" conaffinity="0"/></body>
</body></worldbody><actuator><motor joint="rev"/></actuator></mujoco>"""


def test_i8_slider_reads_at_least_the_arm_acceleration_under_growing_effort():
    stage = _stage()
    _body(stage, "/World/Arm", (0, 0, 1))
    _body(stage, "/World/Arm/Slider", (1, 0, 0.1))
    _imu(stage, "/World/Arm/Imu", widths=(10, 10, 10), translate=(1, 0, 0))
    _imu(stage, "/World/Arm/Slider/Imu", widths=(10, 10, 10))
    model, data, harness = _sim(
        SLIDER_ARM_XML.format(dt=DT), {"arm": "/World/Arm", "slider": "/World/Arm/Slider"}
    )
    rt = SensorRuntime(stage, harness.paths)
    for frame in range(1, 120):
        data.ctrl[0] = 0.05 * frame  # joint effort grows every frame
        rt.step(harness.step())
        arm = rt.sensor("/World/Arm/Imu").reading().linear_acceleration
        slider = rt.sensor("/World/Arm/Slider/Imu").reading().linear_acceleration
        assert np.hypot(*slider[:2]) >= np.hypot(*arm[:2]) - 1e-6, frame
    assert np.hypot(*arm[:2]) > 0.1  # the arm does accelerate


@pytest.mark.parametrize("mode", ["isaac", "physical"])
def test_single_sensor_reading_is_bit_identical_to_the_batch_arrays(mode):
    # reading() evaluates one sensor's read-time processing in one kernel call; it must give
    # exactly the numbers of the vectorised ImuBatch.arrays() / gravity_in_sensor_frames().
    rng = np.random.default_rng(8)
    stage = _stage(mpu=0.01)
    bodies = ["/World/A", "/World/B"]
    for path in bodies:
        _body(stage, path)
    widths = [None, (1, 3, 1), (2, 1, 4), (3, 3, 3)]
    for n, w in enumerate(widths):
        prim = _imu(stage, f"{bodies[n % 2]}/Imu{n}", widths=w, translate=rng.normal(size=3))
        UsdGeom.Xformable(prim).AddOrientOp().Set(Gf.Quatf(*rng.normal(size=4)).GetNormalized())
    rt = SensorRuntime(stage, bodies, imu_mode=mode)
    imus = rt.of_kind("imu")
    batch = imus[0]._batch
    for k in range(1, 9):
        rt.step(
            make_physics_state(
                bodies,
                rng.normal(size=(2, 3)),
                rng.normal(size=(2, 4)),
                rng.normal(size=(2, 3)) * k,
                rng.normal(size=(2, 3)),
                body_com_local=rng.normal(scale=0.1, size=(2, 3)),
                dt=DT,
                time=k * DT,
                step=k,
                gravity=rng.normal(size=3),
            )
        )
        for read_gravity in (True, False):
            arrays = batch.arrays(read_gravity=read_gravity)
            for s, imu in enumerate(imus):
                r = imu.reading(read_gravity=read_gravity)
                assert r.is_valid and r.step == k and r.time == arrays["time"][s]
                assert r.linear_acceleration.tobytes() == arrays["linear_acceleration"][s].tobytes()
                assert r.angular_velocity.tobytes() == arrays["angular_velocity"][s].tobytes()
                assert r.orientation.tobytes() == arrays["orientation"][s].tobytes()
        all_g = batch.gravity_in_sensor_frames()
        for s in range(len(imus)):
            assert batch.gravity_in_sensor_frames(s).tobytes() == all_g[s].tobytes()
    assert all(r.linear_acceleration.any() for r in rt.readings())
