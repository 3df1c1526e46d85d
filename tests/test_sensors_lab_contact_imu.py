"""Lab contact sensor and IMU against MuJoCo's own numbers (mj_contactForce, MuJoCo sensors)."""

from __future__ import annotations

import logging

import mujoco
import numpy as np
import pytest

from runtime.sensors.lab import ContactSensor, ContactSensorConfig, Imu, ImuConfig, Offset

# Isaac Lab's data-class fields: name -> shape with N worlds, B bodies, M partners, H history
CONTACT_FIELDS = {
    "pos_w": ("N", "B", 3),
    "quat_w": ("N", "B", 4),
    "net_forces_w": ("N", "B", 3),
    "net_forces_w_history": ("N", "H", "B", 3),
    "force_matrix_w": ("N", "B", "M", 3),
    "force_matrix_w_history": ("N", "H", "B", "M", 3),
    "contact_pos_w": ("N", "B", "M", 3),
    "friction_forces_w": ("N", "B", "M", 3),
    "last_air_time": ("N", "B"),
    "current_air_time": ("N", "B"),
    "last_contact_time": ("N", "B"),
    "current_contact_time": ("N", "B"),
}
IMU_FIELDS = {
    "pos_w": ("N", 3),
    "quat_w": ("N", 4),
    "projected_gravity_b": ("N", 3),
    "lin_vel_b": ("N", 3),
    "ang_vel_b": ("N", 3),
    "lin_acc_b": ("N", 3),
    "ang_acc_b": ("N", 3),
}


def walk_fields(data, fields, sizes):
    for name, shape in fields.items():
        value = getattr(data, name)
        expected = tuple(sizes[s] if isinstance(s, str) else s for s in shape)
        assert value.shape == expected, (name, value.shape, expected)


BOXES = """
<mujoco>
  <option timestep="0.002" cone="{cone}"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" friction="0.8"/>
    <body name="foot" pos="0 0 0.2">
      <freejoint/>
      <geom name="foot_box" type="box" size="0.1 0.1 0.05" mass="2"/>
    </body>
    <body name="block" pos="0.05 0.02 0.4">
      <freejoint/>
      <geom name="block_box" type="box" size="0.04 0.04 0.04" mass="1"/>
    </body>
    <body name="ball" pos="-0.05 -0.03 0.45">
      <freejoint/>
      <geom name="ball_geom" type="sphere" size="0.03" mass="0.5" condim="{condim}"/>
    </body>
  </worldbody>
</mujoco>
"""


def oracle_forces(m, d, sensor_bodies, partners):
    """Sum of mj_contactForce over the contacts touching each sensor body."""
    net = np.zeros((len(sensor_bodies), 3))
    matrix = np.zeros((len(sensor_bodies), len(partners), 3))
    friction = np.zeros_like(matrix)
    points = [[[] for _ in partners] for _ in sensor_bodies]
    force = np.zeros(6)
    for c in range(d.ncon):
        con = d.contact[c]
        mujoco.mj_contactForce(m, d, c, force)
        frame = np.asarray(con.frame).reshape(3, 3)
        normal = force[0] * frame[0]
        tangent = force[1] * frame[1] + force[2] * frame[2]
        b1, b2 = m.geom_bodyid[con.geom[0]], m.geom_bodyid[con.geom[1]]
        for me, other, sign in ((b2, b1, 1.0), (b1, b2, -1.0)):
            if me in sensor_bodies:
                i = sensor_bodies.index(me)
                net[i] += sign * normal
                if other in partners:
                    j = partners.index(other)
                    matrix[i, j] += sign * normal
                    friction[i, j] += sign * tangent
                    points[i][j].append(np.asarray(con.pos))
    return net, matrix, friction, points


@pytest.mark.parametrize(("cone", "condim"), [("pyramidal", 3), ("elliptic", 3), ("elliptic", 4)])
def test_contact_forces_match_mj_contact_force(cone, condim):
    m = mujoco.MjModel.from_xml_string(BOXES.format(cone=cone, condim=condim))
    datas = [mujoco.MjData(m) for _ in range(2)]
    datas[1].qvel[0] = 0.3  # the second world slides the foot
    cfg = ContactSensorConfig(
        prim_path="foot|block|ball",
        filter_prim_paths_expr=["world", "block"],
        history_length=3,
        track_contact_points=True,
        track_friction_forces=True,
        track_pose=True,
    )
    sensor = ContactSensor(m, cfg, num_envs=2)
    assert sensor.enabled and sensor.body_names == ("foot", "block", "ball")
    walk_fields(sensor.data, CONTACT_FIELDS, {"N": 2, "B": 3, "M": 2, "H": 3})
    bodies = [m.body(n).id for n in ("foot", "block", "ball")]
    partners = [0, m.body("block").id]
    history = []
    checked = 0
    for step in range(400):
        for d in datas:
            mujoco.mj_step(m, d)
        sensor.update(datas, m.opt.timestep)
        history.insert(0, sensor.data.net_forces_w.copy())
        for env, d in enumerate(datas):
            net, matrix, friction, points = oracle_forces(m, d, bodies, partners)
            scale = max(1.0, np.abs(net).max())
            np.testing.assert_allclose(
                sensor.data.net_forces_w[env], net, rtol=0, atol=1e-9 * scale
            )
            np.testing.assert_allclose(sensor.data.force_matrix_w[env], matrix, atol=1e-9 * scale)
            np.testing.assert_allclose(
                sensor.data.friction_forces_w[env], friction, atol=1e-9 * scale
            )
            for i in range(3):
                for j in range(2):
                    if points[i][j]:
                        expected = np.mean(points[i][j], axis=0)
                        np.testing.assert_allclose(
                            sensor.data.contact_pos_w[env, i, j], expected, atol=1e-12
                        )
                    else:
                        assert np.all(np.isnan(sensor.data.contact_pos_w[env, i, j]))
                np.testing.assert_array_equal(sensor.data.pos_w[env, i], d.xpos[bodies[i]])
            checked += d.ncon
        if step >= 3:
            for k in range(3):
                np.testing.assert_array_equal(sensor.data.net_forces_w_history[:, k], history[k])
    assert checked > 500  # the scene really touches (foot on floor, block and ball on foot)
    # the block rests on the foot: the force matrix holds the block's weight on the foot
    assert sensor.data.force_matrix_w[0, 0, 1, 2] < -0.5 * 9.81


def test_contact_forces_on_go2_scene_against_mj_contact_force():
    from pxr import Usd

    import runtime.schema  # noqa: F401
    from runtime.engine.mujoco_engine import MujocoEngine

    engine = MujocoEngine(Usd.Stage.Open("scenes/go2_standing.usda"))
    cfg = ContactSensorConfig(
        prim_path="/World/Go2/.*_foot", filter_prim_paths_expr=["/World/Ground"]
    )
    sensor = ContactSensor(engine, cfg)
    assert len(sensor.body_paths) == 4 and sensor.filter_paths == ("/World/Ground",)
    m, d = engine.model, engine.data
    feet = [m.body(p).id for p in sensor.body_paths]
    force = np.zeros(6)
    touched = 0
    for _ in range(100):
        engine.step()
        sensor.update([d], engine.dt)
        net = np.zeros((4, 3))
        for c in range(d.ncon):
            con = d.contact[c]
            mujoco.mj_contactForce(m, d, c, force)
            normal = force[0] * np.asarray(con.frame)[:3]
            for me, sign in ((m.geom_bodyid[con.geom[1]], 1.0), (m.geom_bodyid[con.geom[0]], -1.0)):
                if me in feet:
                    net[feet.index(me)] += sign * normal
                    touched += 1
        scale = max(1.0, np.abs(net).max())
        np.testing.assert_allclose(sensor.data.net_forces_w[0], net, atol=1e-9 * scale)
        np.testing.assert_allclose(sensor.data.force_matrix_w[0, :, 0], net, atol=1e-9 * scale)
    assert touched >= 400
    total = sensor.data.net_forces_w[0].sum(axis=0)[2]
    assert total > 0.5 * 9.81 * sum(m.body_mass)  # the feet carry the robot


HOPPER = """
<mujoco>
  <option timestep="0.001"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 0.1"/>
    <body name="foot" pos="0 0 0.05">
      <joint name="z" type="slide" axis="0 0 1"/>
      <geom type="sphere" size="0.05" mass="1"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_air_time_exact_on_hopping_foot():
    m = mujoco.MjModel.from_xml_string(HOPPER)
    d = mujoco.MjData(m)
    dt = m.opt.timestep
    cfg = ContactSensorConfig(prim_path="foot", track_air_time=True, force_threshold=1.0)
    sensor = ContactSensor(m, cfg)
    force = np.zeros(6)
    state = []  # oracle contact flag per step
    lift = touch = None
    last_air = last_contact = 0.0
    landings = takeoffs = 0
    for step in range(1, 3001):
        # push up for 40 steps every 600 steps: the foot hops
        d.xfrc_applied[1, 2] = 40.0 if step % 600 < 40 else 0.0
        mujoco.mj_step(m, d)
        sensor.update([d], dt)
        total = np.zeros(3)
        for c in range(d.ncon):
            mujoco.mj_contactForce(m, d, c, force)
            total += force[0] * np.asarray(d.contact[c].frame)[:3]
        on = np.linalg.norm(total) > 1.0
        state.append(on)
        # oracle by step counting
        if on and (touch is None or (len(state) > 1 and not state[-2])):
            if lift is not None:
                last_air = (step - lift) * dt
                landings += 1
            touch = step - 1
        if not on and (lift is None or (len(state) > 1 and state[-2])):
            if touch is not None:
                last_contact = (step - touch) * dt
                takeoffs += 1
            lift = step - 1
        if step == 1:
            continue
        data = sensor.data
        if on:
            assert data.current_air_time[0, 0] == 0.0
            assert data.current_contact_time[0, 0] == pytest.approx((step - touch) * dt, abs=1e-9)
        else:
            assert data.current_contact_time[0, 0] == 0.0
            assert data.current_air_time[0, 0] == pytest.approx((step - lift) * dt, abs=1e-9)
        assert data.last_air_time[0, 0] == pytest.approx(last_air, abs=1e-9)
        assert data.last_contact_time[0, 0] == pytest.approx(last_contact, abs=1e-9)
        first = sensor.compute_first_contact(dt)[0, 0]
        assert first == (on and not state[-2])
        assert sensor.compute_first_air(dt)[0, 0] == (not on and state[-2])
    assert landings >= 4 and takeoffs >= 4 and last_air > 0.05


def test_contact_update_period_keeps_last_values():
    m = mujoco.MjModel.from_xml_string(BOXES.format(cone="pyramidal", condim=3))
    d = mujoco.MjData(m)
    dt = m.opt.timestep
    cfg = ContactSensorConfig(prim_path="foot", update_period=4 * dt, track_air_time=True)
    sensor = ContactSensor(m, cfg)
    seen = None
    for step in range(1, 60):
        mujoco.mj_step(m, d)
        sensor.update([d], dt)
        if (step - 1) % 4 == 0:  # Isaac Lab: due at the first call, then every period
            net, *_ = oracle_forces(m, d, [1], [])
            np.testing.assert_allclose(
                sensor.data.net_forces_w[0], net, atol=1e-9 * max(1, abs(net).max())
            )
            seen = sensor.data.net_forces_w.copy()
        else:
            np.testing.assert_array_equal(sensor.data.net_forces_w, seen)


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("prim_path", "nothing_here", "prim_path: matches no body"),
        ("filter_prim_paths_expr", ["nope"], "filter_prim_paths_expr: 'nope' matches no body"),
        ("update_period", -0.1, "update_period: must be finite and >= 0"),
        ("history_length", -1, "history_length"),
    ],
)
def test_bad_contact_config_disables(field, value, needle, caplog):
    m = mujoco.MjModel.from_xml_string(HOPPER)
    cfg = ContactSensorConfig(prim_path="foot")
    setattr(cfg, field, value)
    with caplog.at_level(logging.ERROR, logger="runtime.sensors.lab"):
        sensor = ContactSensor(m, cfg)
    assert not sensor.enabled and needle in sensor.disabled_reason
    assert needle in caplog.text
    d = mujoco.MjData(m)
    sensor.update([d], 0.001)  # no error, nothing computed


IMU_MODEL = """
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom type="plane" size="3 3 0.1"/>
    <body name="base" pos="0 0 0.6">
      <freejoint/>
      <geom type="box" size="0.2 0.1 0.05" mass="3"/>
      <body name="arm" pos="0.2 0 0">
        <joint name="j1" type="hinge" axis="0 1 0" damping="0.01"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="0.7"/>
        <site name="imu" pos="0.25 0.02 -0.01" quat="0.9238795 0.0 0.3826834 0.0"/>
      </body>
    </body>
  </worldbody>
  {sensors}
</mujoco>
"""
SENSORS = """
  <sensor>
    <accelerometer site="imu"/><gyro site="imu"/><velocimeter site="imu"/>
    <framepos objtype="site" objname="imu"/><framequat objtype="site" objname="imu"/>
  </sensor>
"""


def check_imu(data, env, model, d):
    """One world's IMU against MuJoCo's sensors (and mj_objectAcceleration) of ``d``."""
    s = d.sensordata
    acc, gyro, vel, pos, quat = s[0:3], s[3:6], s[6:9], s[9:12], s[12:16]
    six = np.zeros(6)
    mujoco.mj_objectAcceleration(model, d, mujoco.mjtObj.mjOBJ_SITE, 0, six, 1)
    pairs = (
        (data.lin_acc_b, acc),
        (data.ang_vel_b, gyro),
        (data.lin_vel_b, vel),
        (data.pos_w, pos),
        (data.ang_acc_b, six[:3]),
    )
    for got, want in pairs:
        scale = max(1.0, np.abs(want).max())
        np.testing.assert_allclose(got[env], want, rtol=1e-6, atol=1e-6 * scale)
    q = data.quat_w[env]
    assert min(np.abs(q - quat).max(), np.abs(q + quat).max()) < 1e-9
    rot = np.zeros(9)
    mujoco.mju_quat2Mat(rot, quat)
    gravity_b = rot.reshape(3, 3).T @ [0.0, 0.0, -1.0]
    np.testing.assert_allclose(data.projected_gravity_b[env], gravity_b, atol=1e-12)


@pytest.mark.parametrize("period_steps", [1, 4])
def test_imu_matches_mujoco_sensors(period_steps):
    oracle_model = mujoco.MjModel.from_xml_string(IMU_MODEL.format(sensors=SENSORS))
    bare_model = mujoco.MjModel.from_xml_string(IMU_MODEL.format(sensors=""))
    rng = np.random.default_rng(3)
    od = [mujoco.MjData(oracle_model) for _ in range(2)]
    bd = [mujoco.MjData(bare_model) for _ in range(2)]
    for o, b in zip(od, bd, strict=True):
        o.qvel[:] = b.qvel[:] = rng.normal(size=oracle_model.nv)
    dt = oracle_model.opt.timestep
    cfg = ImuConfig(
        prim_path="arm",
        offset=Offset(pos=tuple(oracle_model.site_pos[0]), rot=tuple(oracle_model.site_quat[0])),
        update_period=period_steps * dt,
    )
    imu_step = Imu(oracle_model, cfg, num_envs=2)  # cacc computed by mj_step (accelerometer)
    imu_post = Imu(bare_model, cfg, num_envs=2)  # its own rnePostConstraint after mj_forward
    assert imu_step.step_accelerations and not imu_post.step_accelerations
    walk_fields(imu_step.data, IMU_FIELDS, {"N": 2})
    last = None
    peak = 0.0
    wrench = np.array([3.0, -2.0, 1.0, 0.2, 0.1, 0.3])
    for step in range(1, 400):
        for o, b in zip(od, bd, strict=True):
            o.xfrc_applied[1] = b.xfrc_applied[1] = np.sin(step * 0.05) * wrench
            mujoco.mj_step(oracle_model, o)
            mujoco.mj_step(bare_model, b)
            mujoco.mj_forward(bare_model, b)  # the post-step state
        imu_step.update(od, dt)
        imu_post.update(bd, dt)
        if (step - 1) % period_steps:  # between updates: the last update's values
            np.testing.assert_array_equal(imu_step.data.lin_acc_b, last[0])
            np.testing.assert_array_equal(imu_post.data.lin_acc_b, last[1])
            continue
        last = (imu_step.data.lin_acc_b.copy(), imu_post.data.lin_acc_b.copy())
        peak = max(peak, np.abs(last[0]).max())
        for env in range(2):
            check_imu(imu_step.data, env, oracle_model, od[env])
            # MuJoCo's sensors of the post-step state: the same qpos / qvel, mj_forward
            ref = mujoco.MjData(oracle_model)
            ref.qpos[:], ref.qvel[:], ref.time = bd[env].qpos, bd[env].qvel, bd[env].time
            ref.xfrc_applied[:] = bd[env].xfrc_applied
            ref.qacc_warmstart[:] = bd[env].qacc_warmstart
            mujoco.mj_forward(oracle_model, ref)
            check_imu(imu_post.data, env, oracle_model, ref)
    assert peak > 2.0  # the arm swings and the base lands: not a free fall at rest


def test_imu_bad_configs_disable(caplog):
    m = mujoco.MjModel.from_xml_string(IMU_MODEL.format(sensors=""))
    with caplog.at_level(logging.ERROR, logger="runtime.sensors.lab"):
        assert "prim_path" in Imu(m, ImuConfig(prim_path="nope")).disabled_reason
        assert (
            "offset"
            in Imu(m, ImuConfig(prim_path="arm", offset=Offset(rot=(0, 0, 0, 0)))).disabled_reason
        )
        assert (
            "update_period"
            in Imu(m, ImuConfig(prim_path="arm", update_period=float("nan"))).disabled_reason
        )


def test_imu_worlds_with_their_own_models():
    """Randomised worlds (own MjModel copies, other masses) match their own MuJoCo sensors."""
    bare = [mujoco.MjModel.from_xml_string(IMU_MODEL.format(sensors="")) for _ in range(2)]
    oracle = [mujoco.MjModel.from_xml_string(IMU_MODEL.format(sensors=SENSORS)) for _ in range(2)]
    for models in (bare, oracle):
        models[1].body_mass[2] *= 3.0  # the arm of world 1 is heavier
        models[1].body_inertia[2] *= 3.0
    datas = [mujoco.MjData(m) for m in bare]
    refs = [mujoco.MjData(m) for m in oracle]
    cfg = ImuConfig(
        prim_path="arm",
        offset=Offset(pos=tuple(bare[0].site_pos[0]), rot=tuple(bare[0].site_quat[0])),
    )
    imu = Imu(bare[0], cfg, num_envs=2)
    for d, r in zip(datas, refs, strict=True):
        d.qvel[:] = r.qvel[:] = [0.3, -0.2, 0.1, 1.0, -2.0, 0.5, 3.0]
    for _ in range(50):
        for m, d in zip(bare, datas, strict=True):
            mujoco.mj_step(m, d)
            mujoco.mj_forward(m, d)
        imu.update(datas, bare[0].opt.timestep)
    for env in range(2):
        r = refs[env]
        r.qpos[:], r.qvel[:], r.qacc_warmstart[:] = (
            datas[env].qpos,
            datas[env].qvel,
            datas[env].qacc_warmstart,
        )
        mujoco.mj_forward(oracle[env], r)
        check_imu(imu.data, env, oracle[env], r)
    assert not np.allclose(imu.data.lin_acc_b[0], imu.data.lin_acc_b[1])
