"""LabSensorSet: the compiled update of the lab sensors against the per-sensor path.

Bit-identical data (every field, histories, clocks) to each sensor's own ``update`` on go2
and Talos, 1 and 16 worlds, with resets, update periods and forced recomputes (contact
sensors, IMUs, frame transformers, joint wrenches, ray casters over box scenes, fixed
cameras); and the set's readings against MuJoCo's own (mj_contactForce, accelerometer /
gyro).
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest

from runtime._compile.jit import JIT_DISABLED
from runtime.rays import PARALLEL_MIN_RAYS
from runtime.run.lab_set import LabSensorSet
from runtime.sensors.lab import (
    CameraOffset,
    ContactSensor,
    ContactSensorConfig,
    FrameTarget,
    FrameTransformer,
    FrameTransformerConfig,
    GridPattern,
    Imu,
    ImuConfig,
    JointWrenchConfig,
    JointWrenchSensor,
    Offset,
    RayCaster,
    RayCasterCamera,
    RayCasterConfig,
)
from tests.test_sensors_lab_contact_imu import BOXES, IMU_MODEL, SENSORS, check_imu, oracle_forces

GO2 = "scenes/go2_lab_sensors.usda"
TALOS = "scenes/talos_standing.usda"
PANDA = "scenes/panda_lab_camera.usda"


def _engine(path):
    from pxr import Usd

    import runtime.schema  # noqa: F401
    from runtime.engine.mujoco_engine import MujocoEngine

    return MujocoEngine(Usd.Stage.Open(path))


def _worlds(engine, n, seed):
    rng = np.random.default_rng(seed)
    m = engine.model
    datas = []
    for _ in range(n):
        d = mujoco.MjData(m)
        d.qpos[:] = engine.data.qpos
        d.qvel[:] = 0.2 * rng.normal(size=m.nv)
        mujoco.mj_forward(m, d)
        datas.append(d)
    return datas


def _same(reference, fast, step):
    """Every array of every sensor's data, and its clocks, bit for bit."""
    for name, sensor in reference.sensors.items():
        other = fast.sensors[name]
        for field in dataclasses.fields(sensor.data):
            a, b = getattr(sensor.data, field.name), getattr(other.data, field.name)
            if isinstance(a, dict):  # (a camera's images by type)
                assert a.keys() == b.keys()
                pairs = [(f"{field.name}[{k}]", a[k], b[k]) for k in a]
            else:
                pairs = [(field.name, a, b)]
            for label, x, y in pairs:
                if isinstance(x, np.ndarray):
                    assert x.shape == y.shape and x.dtype == y.dtype
                    assert np.array_equal(x.view(np.uint8), y.view(np.uint8)), (step, name, label)
        for clock in ("timestamp", "timestamp_last_update"):
            assert np.array_equal(getattr(sensor, clock), getattr(other, clock)), (step, clock)


def _run_pair(engine, make, n, steps, forward=(), seed=0):
    """Step two copies of N worlds; the per-sensor path on one, the compiled set on the other."""
    m, dt = engine.model, engine.dt
    reference = LabSensorSet(make(), _worlds(engine, n, seed), compiled=False)
    fast = LabSensorSet(make(), _worlds(engine, n, seed))
    assert reference.compiled == ()
    rng = np.random.default_rng(seed + 1)
    touched = 0
    for step in range(steps):
        ctrl = rng.normal(size=m.nu) * 2.0
        for world, (a, b) in enumerate(zip(reference.datas, fast.datas, strict=True)):
            a.ctrl[:] = b.ctrl[:] = ctrl
            mujoco.mj_step(m, a)
            mujoco.mj_step(m, b)
            if world in forward:  # the post-step state (mixed with bare steps)
                mujoco.mj_forward(m, a)
                mujoco.mj_forward(m, b)
        if step % 53 == 20:
            envs = None if step % 106 == 20 else [0, n - 1]
            reference.reset(envs)
            fast.reset(envs)
        step_dt = 2 * dt if step % 37 == 5 else dt
        forced = step % 41 == 7
        reference.update(step_dt, forced)
        fast.update(step_dt, forced)
        _same(reference, fast, step)
        touched += sum(d.ncon for d in fast.datas)
    assert touched > steps  # contacts were read
    return fast


@pytest.mark.parametrize(("n", "period_steps"), [(1, 0), (1, 4), (16, 0), (16, 3)])
def test_go2_set_equals_per_sensor_updates(n, period_steps):
    engine = _engine(GO2)
    dt = engine.dt

    def make():
        from runtime.sensors.lab import make_lab_sensors

        found = make_lab_sensors(engine, n)
        scene = {k: s for k, s in found.items() if s.kind in ("contact", "imu")}
        assert len(scene) == 2
        for sensor in scene.values():
            sensor.update_period = period_steps * dt
        scene["calf_imu"] = Imu(
            engine,
            ImuConfig(
                prim_path="/World/Go2/.*/FL_calf",
                offset=Offset(pos=(0.01, -0.02, -0.1), rot=(0.9, 0.1, -0.3, 0.2)),
                history_length=2,
                update_period=2 * period_steps * dt,
            ),
            n,
        )
        scene["wrench"] = JointWrenchSensor(
            engine, JointWrenchConfig(prim_path="/World/Go2/.*_(calf|thigh)"), n
        )
        scene["calves"] = ContactSensor(
            engine,
            ContactSensorConfig(
                prim_path="/World/Go2/.*_(calf|foot)", track_pose=True, update_period=dt
            ),
            n,
        )
        return scene

    fast = _run_pair(engine, make, n, 250)
    assert set(fast.compiled) == (set() if JIT_DISABLED else set(fast.sensors))
    assert len(fast.sensors) == 5


@pytest.mark.parametrize(("n", "period_steps"), [(1, 0), (1, 3), (16, 0), (16, 2)])
def test_go2_height_scans_equal_per_sensor_updates(n, period_steps):
    """The scene's height scan and others (alignments, drift, a static mount, misses, a
    short period) and a scan of the robot's links in the compiled call; a dense scan of the
    links (a parallel cast) on its own update."""
    engine = _engine(GO2)
    dt = engine.dt
    grid = GridPattern(resolution=0.1, size=(1.6, 1.0))

    def caster(**fields):
        base = {
            "prim_path": "/World/Go2/Geometry/base",
            "mesh_prim_paths": ["/World/Ground"],
            "pattern_cfg": grid,
            "offset": Offset(pos=(0.0, 0.0, 20.0)),
        }
        return RayCaster(engine, RayCasterConfig(**{**base, **fields}), n)

    def make():
        from runtime.sensors.lab import make_lab_sensors

        scene = dict(make_lab_sensors(engine, n))
        assert sorted(s.kind for s in scene.values()) == ["contact", "imu", "ray_caster"]
        for sensor in scene.values():
            sensor.update_period = period_steps * dt
        tilted = Offset(pos=(0.1, -0.05, 0.4), rot=(0.95, 0.1, -0.2, 0.2))
        scene["base"] = caster(
            ray_alignment="base",
            offset=tilted,
            drift_range=(-0.2, 0.3),
            ray_cast_drift_range={"x": (-0.1, 0.1), "y": (0.0, 0.2), "z": (-0.05, 0.05)},
            max_distance=0.7,  # (the far half of the tilted grid misses)
            history_length=2,
            update_period=2 * period_steps * dt,
            seed=3,
        )
        scene["world"] = caster(
            ray_alignment="world",
            drift_range=(-0.1, 0.1),
            update_period=dt,
            seed=4,
        )
        scene["yaw"] = caster(ray_alignment="yaw", history_length=1, seed=5)
        scene["static"] = caster(
            prim_path="/World/Ground",
            offset=Offset(pos=(0.3, 0.0, 1.0), rot=(0.9, 0.3, 0.0, 0.1)),
            pattern_cfg=GridPattern(resolution=0.5, size=(2.0, 1.0), direction=(0.3, 0.0, -1.0)),
        )
        if JIT_DISABLED:  # (BVH casts as plain Python: too slow; no compiled call anyway)
            return scene
        # over the robot's links (moving geometry): its one-call scene path ...
        scene["links"] = caster(
            mesh_prim_paths=[],
            offset=Offset(pos=(0.05, 0.0, 0.6), rot=(0.98, 0.0, 0.2, 0.0)),
            ray_alignment="base",
            drift_range=(-0.02, 0.02),
            history_length=2,
            update_period=period_steps * dt,
            seed=6,
        )
        # ... and a grid of PARALLEL_MIN_RAYS rays or more (the parallel cast: its own update)
        scene["dense"] = caster(
            mesh_prim_paths=[],
            pattern_cfg=GridPattern(resolution=0.025, size=(2.0, 1.3)),
            offset=Offset(pos=(0.0, 0.0, 0.6)),
            update_period=10 * dt,
        )
        return scene

    fast = _run_pair(engine, make, n, 120)
    if JIT_DISABLED:
        assert fast.compiled == ()
        return
    casters = {k for k, s in fast.sensors.items() if isinstance(s, RayCaster)}
    boxes = casters - {"links", "dense"}
    assert len(boxes) == 5 and all(fast.sensors[k]._boxes is not None for k in boxes)
    links, dense = fast.sensors["links"], fast.sensors["dense"]
    assert links._boxes is None and links._scene_arguments is not None
    assert dense.ray_starts.shape[0] >= PARALLEL_MIN_RAYS and dense._scene_arguments is None
    assert set(fast.compiled) == set(fast.sensors) - {"dense"}
    seen = {links.actor_paths[i] for i in np.unique(links.data.ray_hit_ids) if i >= 0}
    assert any("/Go2/" in p for p in seen) and "/World/Ground" in seen  # legs and ground
    tilted = fast.sensors["base"].data
    assert np.isinf(tilted.ray_distances).any() and np.isfinite(tilted.ray_distances).any()
    assert (fast.sensors["base"].data.ray_hits_w_history != 0).any()


@pytest.mark.parametrize(("n", "period_steps"), [(1, 0), (2, 3)])
def test_panda_fixed_cameras_equal_per_sensor_updates(n, period_steps):
    """Fixed cameras (their pinhole view) in the compiled call: every image type, clipping,
    histories, update periods; a camera on the hand stays on its own update."""
    engine = _engine(PANDA)
    dt = engine.dt

    def make():
        from runtime.sensors.lab import make_lab_sensors

        scene = dict(make_lab_sensors(engine, n))
        (camera,) = scene.values()
        camera.update_period = period_steps * dt
        config = camera.config
        scene["all_types"] = RayCasterCamera(
            engine,
            dataclasses.replace(
                config,
                data_types=["distance_to_image_plane", "distance_to_camera", "normals"],
                depth_clipping_behavior="max",
                max_distance=1.5,
                history_length=2,
                update_period=2 * period_steps * dt,
            ),
            n,
        )
        scene["hand"] = RayCasterCamera(
            engine,
            dataclasses.replace(
                config,
                prim_path=".*/panda_hand",
                offset=CameraOffset(pos=(0.0, 0.0, 0.05), convention="ros"),
            ),
            n,
        )
        return scene

    fast = _run_pair(engine, make, n, 60)
    assert fast.sensors["all_types"]._view is not None and fast.sensors["hand"]._view is None
    assert set(fast.compiled) == (set() if JIT_DISABLED else set(fast.sensors) - {"hand"})
    data = fast.sensors["all_types"].data
    images = data.output
    depth = images["distance_to_camera"]
    assert (depth == 1.5).any() and (depth < 1.5).any()  # clipped misses and hits
    assert np.isinf(images["normals"]).any() and np.isfinite(images["normals"]).any()
    assert np.isfinite(data.output_history["distance_to_image_plane"]).all()
    assert (data.output_history["distance_to_image_plane"][:, 1] > 0.0).any()


def test_talos_set_equals_per_sensor_updates():
    engine = _engine(TALOS)
    dt = engine.dt

    def make():
        return {
            "soles": ContactSensor(
                engine,
                ContactSensorConfig(
                    prim_path="/World/Talos/.*_sole_link",
                    filter_prim_paths_expr=["/World/Ground", "/World/Talos/.*leg_left_6_link"],
                    track_pose=True,
                    track_air_time=True,
                    history_length=2,
                    update_period=3 * dt,
                    force_threshold=5.0,
                ),
                3,
            ),
            "imu": Imu(
                engine,
                ImuConfig(
                    prim_path="/World/Talos/.*/imu_link",
                    offset=Offset(pos=(0.02, 0.0, 0.03)),
                    history_length=3,
                    update_period=2 * dt,
                ),
                3,
            ),
            "hand_imu": Imu(engine, ImuConfig(prim_path="/World/Talos/.*/arm_right_7_link"), 3),
            "frames": FrameTransformer(
                engine,
                FrameTransformerConfig(
                    prim_path="/World/Talos/Geometry/base_link",
                    source_frame_offset=Offset(pos=(0.1, 0.0, -0.05), rot=(0.8, 0.0, 0.6, 0.0)),
                    target_frames=[
                        FrameTarget(prim_path="/World/Talos/.*_sole_link"),
                        FrameTarget(
                            prim_path="/World/Ground",
                            name="ground",
                            offset=Offset(pos=(1.0, 2.0, 0.0), rot=(0.6, 0.0, 0.0, 0.8)),
                        ),
                        FrameTarget(prim_path="/World/Talos/.*/arm_left_7_link", name="hand"),
                    ],
                    history_length=2,
                    update_period=2 * dt,
                ),
                3,
            ),
            "legs": JointWrenchSensor(
                engine,
                JointWrenchConfig(prim_path="/World/Talos/.*/leg_.*_[46]_link", history_length=2),
                3,
            ),
        }

    fast = _run_pair(engine, make, 3, 200, forward=(1,), seed=5)
    everything = {"soles", "imu", "hand_imu", "frames", "legs"}
    assert set(fast.compiled) == (set() if JIT_DISABLED else everything)


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_set_contacts_match_mj_contact_force(cone):
    m = mujoco.MjModel.from_xml_string(BOXES.format(cone=cone, condim=3))
    datas = [mujoco.MjData(m) for _ in range(2)]
    datas[1].qvel[0] = 0.3
    cfg = ContactSensorConfig(
        prim_path="foot|block|ball", filter_prim_paths_expr=["world", "block"], track_pose=True
    )
    lab = LabSensorSet({"c": ContactSensor(m, cfg, num_envs=2)}, datas)
    assert lab.compiled == (() if JIT_DISABLED else ("c",))
    data = lab.sensors["c"].data
    bodies = [m.body(n).id for n in ("foot", "block", "ball")]
    checked = 0
    for _ in range(300):
        for d in datas:
            mujoco.mj_step(m, d)
        lab.update(m.opt.timestep)
        for env, d in enumerate(datas):
            net, matrix, friction, points = oracle_forces(m, d, bodies, [0, bodies[1]])
            scale = max(1.0, np.abs(net).max())
            np.testing.assert_allclose(data.net_forces_w[env], net, atol=1e-9 * scale)
            np.testing.assert_allclose(data.force_matrix_w[env], matrix, atol=1e-9 * scale)
            np.testing.assert_allclose(data.friction_forces_w[env], friction, atol=1e-9 * scale)
            for i in range(3):
                for j in range(2):
                    if points[i][j]:
                        want = np.mean(points[i][j], axis=0)
                        np.testing.assert_allclose(data.contact_pos_w[env, i, j], want, atol=1e-12)
                    else:
                        assert np.all(np.isnan(data.contact_pos_w[env, i, j]))
                np.testing.assert_array_equal(data.pos_w[env, i], d.xpos[bodies[i]])
            checked += d.ncon
    assert checked > 300


@pytest.mark.parametrize("period_steps", [1, 4])
def test_set_imu_matches_mujoco_sensors(period_steps):
    """Chain accelerations (bare model, mj_forward) and MuJoCo's cacc (accelerometer model)."""
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
    on_step = LabSensorSet([Imu(oracle_model, cfg, num_envs=2)], od)
    post = LabSensorSet([Imu(bare_model, cfg, num_envs=2)], bd)
    assert on_step.compiled == post.compiled == (() if JIT_DISABLED else ("0",))
    imu_step, imu_post = on_step.sensors["0"], post.sensors["0"]
    wrench = np.array([3.0, -2.0, 1.0, 0.2, 0.1, 0.3])
    last = None
    for step in range(1, 300):
        for o, b in zip(od, bd, strict=True):
            o.xfrc_applied[1] = b.xfrc_applied[1] = np.sin(step * 0.05) * wrench
            mujoco.mj_step(oracle_model, o)
            mujoco.mj_step(bare_model, b)
            mujoco.mj_forward(bare_model, b)
        on_step.update(dt)
        post.update(dt)
        if not JIT_DISABLED:  # (the set computed the chain only)
            assert not any(b.flg_rnepost for b in bd)
        if (step - 1) % period_steps:
            np.testing.assert_array_equal(imu_step.data.lin_acc_b, last[0])
            np.testing.assert_array_equal(imu_post.data.lin_acc_b, last[1])
            continue
        last = (imu_step.data.lin_acc_b.copy(), imu_post.data.lin_acc_b.copy())
        for env in range(2):
            check_imu(imu_step.data, env, oracle_model, od[env])
            ref = mujoco.MjData(oracle_model)
            ref.qpos[:], ref.qvel[:], ref.time = bd[env].qpos, bd[env].qvel, bd[env].time
            ref.xfrc_applied[:] = bd[env].xfrc_applied
            ref.qacc_warmstart[:] = bd[env].qacc_warmstart
            mujoco.mj_forward(oracle_model, ref)
            check_imu(imu_post.data, env, oracle_model, ref)


def test_set_checks_its_inputs():
    m = mujoco.MjModel.from_xml_string(IMU_MODEL.format(sensors=""))
    datas = [mujoco.MjData(m) for _ in range(2)]
    imu = Imu(m, ImuConfig(prim_path="arm"), num_envs=3)
    with pytest.raises(ValueError, match="3 worlds, the set 2"):
        LabSensorSet({"imu": imu}, datas)
    other = mujoco.MjModel.from_xml_string(BOXES.format(cone="elliptic", condim=3))
    with pytest.raises(ValueError, match="model"):
        LabSensorSet([Imu(m, ImuConfig(prim_path="arm"), 2)], [datas[0], mujoco.MjData(other)])
    lab = LabSensorSet({"imu": Imu(m, ImuConfig(prim_path="arm"), 2)}, datas)
    lab.sensors["imu"].data = dataclasses.replace(lab.sensors["imu"].data)
    if not JIT_DISABLED:  # (the compiled call holds the data's addresses)
        with pytest.raises(RuntimeError, match="replaced"):
            lab.update(m.opt.timestep)
    disabled = Imu(m, ImuConfig(prim_path="nope"), 2)
    lab = LabSensorSet({"off": disabled}, datas)
    lab.update(m.opt.timestep)
    assert lab.compiled == () and disabled.timestamp[0] == 0.0


def test_set_worlds_with_their_own_models():
    """Randomised worlds (own MjModel copies): the joint wrench uses each world's masses."""
    models = [mujoco.MjModel.from_xml_string(IMU_MODEL.format(sensors="")) for _ in range(3)]
    models[1].body_mass[2] *= 3.0
    models[2].body_inertia[2] *= 2.0

    def make():
        return {
            "imu": Imu(models[0], ImuConfig(prim_path="arm", update_period=0.004), 3),
            "wrench": JointWrenchSensor(models[0], JointWrenchConfig(prim_path="arm|base"), 3),
        }

    sets = []
    for compiled in (False, True):
        datas = [mujoco.MjData(m) for m in models]
        for d in datas:
            d.qvel[:] = [0.3, -0.2, 0.1, 1.0, -2.0, 0.5, 3.0]
        sets.append(LabSensorSet(make(), datas, compiled=compiled))
    reference, fast = sets
    assert fast.compiled == (() if JIT_DISABLED else ("imu", "wrench"))
    for step in range(120):
        for lab in sets:
            for m, d in zip(models, lab.datas, strict=True):
                mujoco.mj_step(m, d)
                mujoco.mj_forward(m, d)
            lab.update(models[0].opt.timestep)
        _same(reference, fast, step)
    wrench = fast.sensors["wrench"].data.force_b
    assert not np.allclose(wrench[0], wrench[1])  # the heavier arm pulls harder


@pytest.mark.parametrize("case", ["gravity_disabled", "other_gravity", "sleep"])
def test_set_imu_gravity_and_sleep(case):
    """Gravity off: the chain starts from zero; a world with other gravity or sleeping
    bodies: the IMU goes through its own update. Both equal the per-sensor path."""
    models = [mujoco.MjModel.from_xml_string(IMU_MODEL.format(sensors="")) for _ in range(2)]
    if case == "gravity_disabled":
        for m in models:
            m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_GRAVITY)
    elif case == "other_gravity":
        models[1].opt.gravity[:] = (0.5, 0.0, -3.0)
    else:
        for m in models:
            m.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_SLEEP)
    sets = []
    for compiled in (False, True):
        datas = [mujoco.MjData(m) for m in models]
        for d in datas:
            d.qvel[:] = [0.3, -0.2, 0.1, 1.0, -2.0, 0.5, 3.0]
        imu = Imu(models[0], ImuConfig(prim_path="arm", offset=Offset(pos=(0.1, 0.0, 0.0))), 2)
        sets.append(LabSensorSet({"imu": imu}, datas, compiled=compiled))
    reference, fast = sets
    expected = () if JIT_DISABLED or case != "gravity_disabled" else ("imu",)
    assert fast.compiled == expected
    for step in range(60):
        for lab in sets:
            for m, d in zip(models, lab.datas, strict=True):
                mujoco.mj_step(m, d)
                mujoco.mj_forward(m, d)
            lab.update(models[0].opt.timestep)
        _same(reference, fast, step)
