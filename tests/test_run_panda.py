"""`simrt run` on the Panda scene (scenes/panda_table.usda), checked against oracles.

One 2000-step run (module fixture) with the scene's own IK schedule; per step, independent
oracles read MuJoCo directly:

* contact: the net force on each finger body summed from MuJoCo's own contact forces
  (``mj_contactForce``, not the engine's PhysicsState), passed through the threshold
  semantics of docs/sensors/contact.md#force, must equal the recorded contact reading;
* IMU (physical mode): MuJoCo accelerometer and gyro sensors on a site at the IMU's pose,
  added to a copy of the engine's MjSpec, evaluated by MuJoCo (``mj_sensorVel`` /
  ``mj_sensorAcc``) on a shadow MjData holding the engine's post-step q, v and the step's
  qacc, must equal the recorded reading within 1e-6 relative;
* raycast: every recorded hit lies on a collision surface of the scene (trimesh proximity to
  the hit body's collision meshes, placed at that step's recorded body pose) -- see
  test_raycast_hits_lie_on_scene_surfaces.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from runtime.recording import load_recording  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SCENE = REPO / "scenes" / "panda_table.usda"
STEPS = 2000
RETHRESHOLD_STEP = 1800  # the fingers rest on the box from about step 1320
HAND = (
    "/World/Panda/Geometry/panda_link0/panda_link1/panda_link2/panda_link3/panda_link4/"
    "panda_link5/panda_link6/panda_link7/panda_link8/panda_hand"
)
IMU = HAND + "/HandImu"
LIDAR = "/World/LidarMount/Lidar"
FINGERS = {
    HAND + "/panda_leftfinger/FingertipContact": HAND + "/panda_leftfinger",
    HAND + "/panda_rightfinger/FingertipContact": HAND + "/panda_rightfinger",
}


def _quat_mul(a, b):
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array(
        [
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        ]
    )


class Oracle:
    """Engine factory + per-step callback computing the oracle values."""

    def __init__(self):
        self.engine = None
        self.contact_expected = {path: [] for path in FINGERS}
        self.contact_partners = []
        self.contact_read = {path: [] for path in FINGERS}
        self.contact_flag = {path: [] for path in FINGERS}  # ContactSensor.in_contact()
        self.imu_pairs = []  # (reading acc, mujoco acc, reading gyro, mujoco gyro)

    def factory(self, stage, **kwargs):
        from pxr import Usd, UsdGeom

        from runtime.engine.mujoco_engine import MujocoEngine

        engine = MujocoEngine(stage, **kwargs)
        self.engine = engine
        built = engine.built
        self.body_ids = {p: int(built.body_ids[i]) for i, p in enumerate(built.body_paths)}
        # IMU site: local pose of the sensor prim in the hand body frame (authored USD)
        cache = UsdGeom.XformCache(Usd.TimeCode.Default())
        hand_world = cache.GetLocalToWorldTransform(stage.GetPrimAtPath(HAND))
        imu_world = cache.GetLocalToWorldTransform(stage.GetPrimAtPath(IMU))
        local = imu_world * hand_world.GetInverse()
        local.Orthonormalize()
        quat = local.ExtractRotationQuat()
        pos = np.array(local.ExtractTranslation())
        wxyz = np.array([quat.GetReal(), *quat.GetImaginary()])
        spec = built.spec.copy()
        hand_body = spec.body(HAND)
        site = hand_body.add_site(name="oracle_imu", pos=pos, quat=wxyz)
        del site
        spec.add_sensor(
            name="oracle_acc",
            type=mujoco.mjtSensor.mjSENS_ACCELEROMETER,
            objtype=mujoco.mjtObj.mjOBJ_SITE,
            objname="oracle_imu",
        )
        spec.add_sensor(
            name="oracle_gyro",
            type=mujoco.mjtSensor.mjSENS_GYRO,
            objtype=mujoco.mjtObj.mjOBJ_SITE,
            objname="oracle_imu",
        )
        self.m2 = spec.compile()
        assert self.m2.nv == engine.model.nv and self.m2.nu == engine.model.nu
        self.m2.opt.timestep = engine.model.opt.timestep
        self.d2 = mujoco.MjData(self.m2)
        self.site_quat_check = wxyz
        return engine

    def _mujoco_imu(self, d):
        """MuJoCo's accelerometer / gyro evaluated for the engine's (q, v, qacc)."""
        d2 = self.d2
        d2.qpos[:] = d.qpos
        d2.qvel[:] = d.qvel
        d2.act[:] = d.act
        d2.ctrl[:] = d.ctrl
        d2.mocap_pos[:] = d.mocap_pos
        d2.mocap_quat[:] = d.mocap_quat
        d2.time = d.time
        mujoco.mj_fwdPosition(self.m2, d2)
        mujoco.mj_fwdVelocity(self.m2, d2)
        mujoco.mj_sensorVel(self.m2, d2)
        d2.qacc[:] = d.qacc  # the acceleration of the step just taken
        mujoco.mj_rnePostConstraint(self.m2, d2)  # fresh cacc (sensorAcc may skip it)
        mujoco.mj_sensorAcc(self.m2, d2)
        return d2.sensor("oracle_acc").data.copy(), d2.sensor("oracle_gyro").data.copy()

    def _net_force(self, m, d, body_id):
        total = np.zeros(3)
        f6 = np.zeros(6)
        partners = set()
        for i in range(d.ncon):
            con = d.contact[i]
            if con.exclude != 0 or con.efc_address < 0:
                continue
            b1 = int(m.geom_bodyid[con.geom[0]])
            b2 = int(m.geom_bodyid[con.geom[1]])
            if body_id not in (b1, b2):
                continue
            mujoco.mj_contactForce(m, d, i, f6)
            force_on_2 = con.frame.reshape(3, 3).T @ f6[:3]  # force geom1 exerts on geom2
            total += force_on_2 if b2 == body_id else -force_on_2
            partners.add(b1 if b2 == body_id else b2)
        return total, partners

    def on_step(self, k, engine, sensors, state):
        m, d = engine.model, engine.data
        # contact oracle (contacts and forces of the step just taken)
        partners = set()
        for path, body in FINGERS.items():
            force, p = self._net_force(m, d, self.body_ids[body])
            partners |= p
            prim = engine.stage.GetPrimAtPath(path)
            fmin, fmax = (float(v) for v in prim.GetAttribute("threshold").Get())
            value = min(np.float32(np.linalg.norm(force)), np.float32(fmax))
            if np.linalg.norm(force) <= 0 or value < fmin:
                expected = (0.0, False)
            else:
                expected = (float(value), True)
            self.contact_expected[path].append(expected)
            reading = sensors.sensor(path).reading()
            self.contact_read[path].append((float(reading.value), bool(reading.in_contact)))
            self.contact_flag[path].append(sensors.sensor(path).in_contact())
        self.contact_partners.append(partners)
        # IMU oracle: MuJoCo's own accelerometer / gyro on a site at the IMU pose, for the
        # state the engine reported (post-step q, v; the step's qacc)
        acc_mj, gyro_mj = self._mujoco_imu(d)
        reading = sensors.sensor(IMU).reading()
        self.imu_pairs.append(
            (
                np.array(reading.linear_acceleration),
                acc_mj,
                np.array(reading.angular_velocity),
                gyro_mj,
            )
        )
        if k == RETHRESHOLD_STEP:  # after this step's oracle; effective next step
            # live threshold edits (contact re-reads its config every step,
            # docs/sensors/index.md#configuration): left finger clamps at fmax, right finger stays
            # below fmin
            from pxr import Gf

            left, right = FINGERS
            engine.stage.GetPrimAtPath(left).GetAttribute("threshold").Set(Gf.Vec2f(1.0, 3.0))
            engine.stage.GetPrimAtPath(right).GetAttribute("threshold").Set(
                Gf.Vec2f(1000.0, 2000.0)
            )


@pytest.fixture(scope="module")
def panda_run(tmp_path_factory):
    from runtime.run.loop import run_scene

    if not SCENE.exists():
        pytest.fail(f"{SCENE} missing: run scenes/build_panda_scene.py")
    out = tmp_path_factory.mktemp("panda") / "panda.npz"
    oracle = Oracle()
    result = run_scene(
        str(SCENE),
        steps=STEPS,
        out=out,
        imu_mode="physical",
        engine_factory=oracle.factory,
        on_step=oracle.on_step,
    )
    return result, load_recording(out), oracle


def test_run_completes_and_records_everything(panda_run):
    result, rec, _ = panda_run
    assert result.complete and result.steps == STEPS and rec.complete and len(rec) == STEPS
    np.testing.assert_array_equal(rec.step, np.arange(1, STEPS + 1))
    np.testing.assert_allclose(rec.time, rec.step * 0.002, rtol=1e-12)
    kinds = {info.kind for info in rec.channels.values()}
    assert {"contact", "imu", "joint_state", "command", "body"} <= kinds
    assert not result.disabled, result.disabled
    # every sensor read valid at every step, stamped with that step (time as float32, 2.1)
    for sensor in (IMU, *FINGERS, LIDAR):
        assert rec.field(sensor, "valid").all()
        np.testing.assert_array_equal(rec.field(sensor, "step"), rec.step)
        np.testing.assert_allclose(
            rec.field(sensor, "time"), rec.time.astype(np.float32), rtol=1e-7
        )


def test_fingers_touch_the_red_box(panda_run):
    result, rec, oracle = panda_run
    red_box = oracle.body_ids["/World/RedBox"]
    for path in FINGERS:
        in_contact = rec.field(path, "in_contact")
        assert in_contact.sum() > 100, f"{path}: only {in_contact.sum()} contact steps"
        first = int(np.argmax(in_contact))
        assert rec.time[first] > 1.0  # the hand descends first
    touching = [p for p in oracle.contact_partners if p]
    assert touching and all(p == {red_box} for p in touching[-100:])
    assert result.summary["ik"]["frozen_at"] is not None


def test_contact_readings_follow_mujoco_contact_forces(panda_run):
    _, rec, oracle = panda_run
    for path in FINGERS:
        expected = np.array([v for v, _ in oracle.contact_expected[path]])
        expected_flag = np.array([f for _, f in oracle.contact_expected[path]])
        live = np.array([v for v, _ in oracle.contact_read[path]])
        value = rec.field(path, "value")
        np.testing.assert_array_equal(rec.field(path, "in_contact"), expected_flag)
        # the loop's until-contact check reads the flag without building the reading
        np.testing.assert_array_equal(oracle.contact_flag[path], expected_flag)
        np.testing.assert_allclose(value, live)  # the recording holds the live readings
        np.testing.assert_allclose(value, expected, rtol=2e-6, atol=1e-9)
        # the threshold matters in this run: some steps have contact below fmin or none
        assert expected_flag.any() and not expected_flag.all()
    # after the live edit: clamped at fmax (left) / below fmin although touching (right)
    left, right = FINGERS
    after = slice(RETHRESHOLD_STEP, None)  # rows of steps RETHRESHOLD_STEP + 1 ..
    np.testing.assert_array_equal(rec.field(left, "value")[after], 3.0)
    assert rec.field(left, "in_contact")[after].all()
    assert not rec.field(right, "in_contact")[after].any()
    assert rec.field(right, "number_of_contacts")[after].min() > 0
    np.testing.assert_array_equal(rec.field(right, "value")[after], 0.0)


def test_imu_physical_equals_mujoco_accelerometer_and_gyro(panda_run):
    _, rec, oracle = panda_run
    pairs = oracle.imu_pairs
    assert len(pairs) == STEPS
    acc = np.array([p[0] for p in pairs])
    acc_mj = np.array([p[1] for p in pairs])
    gyro = np.array([p[2] for p in pairs])
    gyro_mj = np.array([p[3] for p in pairs])
    scale = np.maximum(np.linalg.norm(acc_mj, axis=1), 1.0)
    rel = np.linalg.norm(acc - acc_mj, axis=1) / scale
    assert rel.max() <= 1e-6, (
        f"worst step {rel.argmax() + 1}: {acc[rel.argmax()]} vs {acc_mj[rel.argmax()]}"
    )
    gscale = np.maximum(np.linalg.norm(gyro_mj, axis=1), 1e-3)
    grel = np.linalg.norm(gyro - gyro_mj, axis=1) / gscale
    assert grel.max() <= 1e-6
    # the hand really moves: accelerations differ from gravity by much more than the tolerance
    assert np.ptp(acc_mj, axis=0).max() > 1.0 and np.abs(gyro_mj).max() > 0.1
    np.testing.assert_allclose(rec.field(IMU, "linear_acceleration"), acc)
    assert math.isclose(np.linalg.norm(oracle.site_quat_check), 1.0, rel_tol=1e-6)


# ---------------------------------------------------------------------------- raycast


def _collision_meshes(stage, owner_path, body_paths):
    """Collision geometry owned by ``owner_path`` in its frame, built here from USD.

    Cubes become exact boxes and convex-hull meshes the hull of their points (both checked
    with trimesh's point-triangle proximity); spheres / cylinders are returned analytically.
    """
    import trimesh
    from pxr import Usd, UsdGeom, UsdPhysics

    cache = UsdGeom.XformCache(Usd.TimeCode.Default())
    from pxr import Gf

    owner = stage.GetPrimAtPath(owner_path)
    if owner_path in body_paths:  # body (or listed static collider): its rigid frame
        world = Gf.Transform(cache.GetLocalToWorldTransform(owner))
        rigid = (
            Gf.Matrix4d(1.0).SetRotate(world.GetRotation()).SetTranslateOnly(world.GetTranslation())
        )
        owner_inv = rigid.GetInverse()
    else:  # static collider not listed: hit points are world coordinates
        owner_inv = Gf.Matrix4d(1.0)
    nested = [p for p in body_paths if p != owner_path and p.startswith(owner_path + "/")]
    meshes, analytic = [], []
    for prim in Usd.PrimRange(owner):
        path = str(prim.GetPath())
        if any(path == n or path.startswith(n + "/") for n in nested):
            continue
        if not prim.HasAPI(UsdPhysics.CollisionAPI):
            continue
        local = cache.GetLocalToWorldTransform(prim) * owner_inv
        matrix = np.array(local).T  # column-vector convention
        if prim.IsA(UsdGeom.Cube):
            size = float(UsdGeom.Cube(prim).GetSizeAttr().Get())
            box = trimesh.creation.box(extents=(size, size, size))
            box.apply_transform(matrix)
            meshes.append(box)
        elif prim.IsA(UsdGeom.Mesh):
            points = np.array(UsdGeom.Mesh(prim).GetPointsAttr().Get(), dtype=np.float64)
            points = points @ matrix[:3, :3].T + matrix[:3, 3]
            meshes.append(trimesh.Trimesh(vertices=points).convex_hull)
        elif prim.IsA(UsdGeom.Sphere):
            analytic.append(
                ("sphere", matrix, float(UsdGeom.Sphere(prim).GetRadiusAttr().Get()), 0.0)
            )
        elif prim.IsA(UsdGeom.Cylinder):
            cyl = UsdGeom.Cylinder(prim)
            analytic.append(
                (
                    "cylinder",
                    matrix,
                    float(cyl.GetRadiusAttr().Get()),
                    float(cyl.GetHeightAttr().Get()),
                )
            )
        else:
            raise AssertionError(f"unexpected collider type {prim.GetTypeName()} at {path}")
    return meshes, analytic


def _mesh_distance(mesh, points):
    """Distance of each point to the nearest triangle of ``mesh`` (trimesh proximity math)."""
    import trimesh

    best = np.full(len(points), np.inf)
    triangles = mesh.triangles
    for start in range(0, len(points), 256):
        chunk = points[start : start + 256]
        tri = np.repeat(triangles[None], len(chunk), axis=0).reshape(-1, 3, 3)
        pts = np.repeat(chunk, len(triangles), axis=0)
        closest = trimesh.triangles.closest_point(tri, pts)
        dist = np.linalg.norm(closest - pts, axis=1).reshape(len(chunk), len(triangles))
        best[start : start + 256] = dist.min(axis=1)
    return best


def _analytic_distance(kind, matrix, radius, height, points):
    inv = np.linalg.inv(matrix)
    local = points @ inv[:3, :3].T + inv[:3, 3]
    if kind == "sphere":
        return np.abs(np.linalg.norm(local, axis=1) - radius)
    radial = np.linalg.norm(local[:, :2], axis=1) - radius
    axial = np.abs(local[:, 2]) - height / 2
    outside = np.linalg.norm(np.maximum(np.stack([radial, axial], 1), 0.0), axis=1)
    inside = np.minimum(np.maximum(radial, axial), 0.0)
    return np.abs(outside + inside)


def _quat_rotate_inv(q, v):
    w, x, y, z = q
    r = np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )
    return v @ r  # R^T v for row vectors


def test_raycast_hits_lie_on_scene_surfaces(panda_run):
    """Every recorded raycast hit lies on a collision surface of the hit actor."""
    from pxr import Usd

    import runtime.schema  # noqa: F401

    _, rec, _ = panda_run
    if f"{LIDAR}.hit" not in rec.data:
        pytest.fail("no raycast channels recorded (raycast sensor missing or disabled)")
    hit = rec.data[f"{LIDAR}.hit"] & rec.data[f"{LIDAR}.valid"][:, None]
    ends = rec.data[f"{LIDAR}.ray_end_points_world"].astype(np.float64)
    ids = rec.data[f"{LIDAR}.hit_prim_paths"]
    table = rec.channels[f"{LIDAR}.hit_prim_paths"].attrs["path_table"]
    body_paths = rec.channels["bodies.positions"].attrs["body_paths"]
    positions, orientations = rec.data["bodies.positions"], rec.data["bodies.orientations"]
    stage = Usd.Stage.Open(str(SCENE))
    assert hit.sum() > 5000
    assert (ids[hit] >= 0).all()
    worst_mesh, worst_analytic, checked = 0.0, 0.0, 0
    hit_names = set()
    for index, path in enumerate(table):
        rows, cols = np.nonzero(hit & (ids == index))
        if len(rows) == 0:
            continue
        hit_names.add(path.rsplit("/", 1)[-1])
        points = ends[rows, cols]
        if path in body_paths:  # moving (or fixed) rigid body: into its frame at that step
            b = body_paths.index(path)
            rel = points - positions[rows, b]
            points = np.stack(
                [_quat_rotate_inv(orientations[r, b], p) for r, p in zip(rows, rel, strict=True)]
            )
        meshes, analytic = _collision_meshes(stage, path, body_paths)
        dist = np.full(len(points), np.inf)
        for mesh in meshes:
            dist = np.minimum(dist, _mesh_distance(mesh, points))
        worst_mesh = max(worst_mesh, float(dist.max()) if meshes else 0.0)
        adist = np.full(len(points), np.inf)
        for kind, matrix, radius, height in analytic:
            adist = np.minimum(adist, _analytic_distance(kind, matrix, radius, height, points))
        if meshes:
            assert dist.max() < 1e-5, f"{path}: hit {dist.max():.2e} off the surface"
        else:
            # spheres / cylinders are intersected exactly by the ray scene: hits lie on the
            # true surface up to the float32 rounding of the recorded end points
            assert adist.max() < 2e-6, f"{path}: hit {adist.max():.2e} off the surface"
            worst_analytic = max(worst_analytic, float(adist.max()))
        checked += len(points)
    assert checked == int(hit.sum())
    # the sweep sees the floor, the table, objects and the robot
    assert {"Ground", "top"} <= hit_names
    assert any(name.startswith("panda_link") for name in hit_names)
    print(
        f"raycast: {checked} hits, worst distance to mesh {worst_mesh:.2e}, "
        f"to analytic primitive {worst_analytic:.2e}"
    )


def test_unreachable_ik_target_runs_the_cold_start_ladder_once(tmp_path):
    """A target out of reach fails every seeded solve; the expensive cold-start ladder runs
    on the first failure only, and the hand keeps tracking its last good solution."""
    from runtime.kinematics.poser import RobotPoser
    from runtime.run.loop import run_scene

    ladders = []
    original = RobotPoser.solve_ik

    def counting(self, target, seed=None, **kwargs):
        if seed is None:
            ladders.append(target)
        return original(self, target, seed=seed, **kwargs)

    RobotPoser.solve_ik = counting
    try:
        result = run_scene(
            str(SCENE), steps=60, ik_targets=["panda_hand=3,0,0.5"], ik_every=10, out=None
        )
    finally:
        RobotPoser.solve_ik = original
    ik = result.summary["ik"]
    assert ik["solves"] == 6 and ik["seeded_failures"] == 6
    assert ik["cold_start_ladders"] == 1 and len(ladders) == 1
    assert result.complete and ik["disabled"] is None
