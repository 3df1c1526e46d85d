"""MujocoEngine state kernels against MuJoCo's own functions, SciPy and closed forms."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
from pxr import Sdf, UsdPhysics

from runtime.engine import MujocoEngine, _kernels
from runtime.errors import SimrtError
from tests.helpers.engine_stages import body, ground, new_stage, pendulum


def _pile(cone: str | None):
    stage = new_stage()
    # contact condim = max of the two geoms': a condim-1 ground lets each box choose
    ground(stage).CreateAttribute("mjc:condim", Sdf.ValueTypeNames.Int).Set(1)
    if cone is not None:
        stage.GetPrimAtPath("/PhysicsScene").CreateAttribute(
            "mjc:option:cone", Sdf.ValueTypeNames.Token
        ).Set(cone)
    for i, condim in enumerate((1, 3, 4, 6)):
        body(
            stage,
            f"/World/box{i}",
            pos=(0.5 * i, 0.0, 0.099),
            mass=1.0,
            inertia=(0.01, 0.01, 0.01),
            size=0.2,
        )
        stage.GetPrimAtPath(f"/World/box{i}/collider").CreateAttribute(
            "mjc:condim", Sdf.ValueTypeNames.Int
        ).Set(condim)
    # a sphere rolling sideways so tangential / torsional forces are non-zero
    body(
        stage,
        "/World/ball",
        pos=(2.5, 0, 0.1),
        mass=1.0,
        inertia=(0.004,) * 3,
        shape="sphere",
        size=0.1,
    )
    return stage


@pytest.mark.parametrize("cone", [None, "elliptic"])
def test_contacts_match_mj_contact_force(cone):
    engine = MujocoEngine(_pile(cone), dt=0.002)
    m, d = engine.model, engine.data
    assert (m.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC) == (cone == "elliptic")
    for j in range(m.njnt):  # everything slides along +x: friction is active
        engine.data.qvel[m.jnt_dofadr[j]] = 1.0
    for _ in range(200):  # until every body touches the ground
        engine.step()
        state = engine.state()
        if len(set(state.contact_body0.tolist())) == 5:
            break
    state.validate()
    expected = []
    f6 = np.zeros(6)
    index = {p: i for i, p in enumerate(state.body_paths)}
    for i in range(d.ncon):
        con = d.contact[i]
        if con.exclude != 0 or con.efc_address < 0:
            continue
        mujoco.mj_contactForce(m, d, i, f6)
        frame = con.frame.reshape(3, 3)
        force_on_geom2 = frame.T @ f6[:3]
        b1 = index.get(m.body(int(m.geom_bodyid[con.geom[0]])).name, -1)
        b2 = index.get(m.body(int(m.geom_bodyid[con.geom[1]])).name, -1)
        if m.geom_bodyid[con.geom[0]] == 0:
            b1 = index["/World/Ground"]
        expected.append((b2, b1, con.pos.copy(), frame[0].copy(), force_on_geom2 * m.opt.timestep))
    assert state.contact_count == len(expected) > 4
    dims = {int(x) for x in d.contact.dim[: d.ncon]}
    assert {1, 3, 4, 6} <= dims
    for k, (b0, b1, pos, normal, impulse) in enumerate(expected):
        assert state.contact_body0[k] == b0
        assert state.contact_body1[k] == b1
        np.testing.assert_allclose(state.contact_positions[k], pos)
        np.testing.assert_allclose(state.contact_normals[k], normal)
        np.testing.assert_allclose(state.contact_impulses[k], impulse, atol=1e-12, rtol=1e-9)
    # tangential impulses exist (otherwise the decoding of friction rows is untested)
    tangential = state.contact_impulses - (
        np.sum(state.contact_impulses * state.contact_normals, axis=1)[:, None]
        * state.contact_normals
    )
    assert np.abs(tangential).max() > 1e-6


def test_contact_roles_swap_when_geom2_is_unlisted():
    """A contact whose geom2 maps to nothing reports body0 = geom1's body, negated."""
    geom = np.array([[0, 1]], dtype=np.int64)
    frame = np.array([[0.0, 0, 1, 1, 0, 0, 0, 1, 0]])
    pos = np.array([[1.0, 2, 3]])
    friction = np.ones((1, 5))
    dim = np.array([1], dtype=np.int64)
    adr = np.array([0], dtype=np.int64)
    excl = np.zeros(1, dtype=np.int64)
    force = np.array([5.0])
    for fn in (_kernels.contact_kernel, _kernels.contact_kernel.py_func):
        out = [
            np.zeros(1, np.int64),
            np.zeros(1, np.int64),
            np.zeros((1, 3)),
            np.zeros((1, 3)),
            np.zeros((1, 3)),
            np.zeros(1, np.int64),
        ]
        fn(
            geom,
            frame,
            pos,
            friction,
            dim,
            adr,
            excl,
            force,
            True,
            np.array([3, -1], dtype=np.int64),
            0.1,
            *out,
        )
        assert out[5][0] == 1
        assert out[0][0] == 3 and out[1][0] == -1
        np.testing.assert_allclose(out[3][0], [0, 0, -1])
        np.testing.assert_allclose(out[4][0], [0, 0, -0.5])


def test_ball_joint_rotation_vector_matches_scipy():
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(5)
    quats = rng.normal(size=(20, 4))
    quats /= np.linalg.norm(quats, axis=1)[:, None]
    qpos = quats.reshape(-1).copy()
    n = len(quats)
    q_adr = np.repeat(np.arange(n) * 4, 3).astype(np.int64)
    ball = np.tile(np.arange(3), n).astype(np.int64)
    sign = np.ones(3 * n)
    v_adr = np.arange(3 * n, dtype=np.int64)
    zeros = np.zeros(3 * n)
    for fn in (_kernels.joint_state_kernel, _kernels.joint_state_kernel.py_func):
        out_q, out_v, out_e = np.zeros(3 * n), np.zeros(3 * n), np.zeros(3 * n)
        fn(q_adr, v_adr, sign, ball, qpos, zeros, zeros, zeros, out_q, out_v, out_e)
        expected = Rotation.from_quat(quats[:, [1, 2, 3, 0]]).as_rotvec().reshape(-1)
        np.testing.assert_allclose(out_q, expected, atol=1e-12)


def test_body_kernels_python_parity():
    engine = MujocoEngine(_pile(None), dt=0.002, compute_accelerations=True)
    engine.step(10)
    engine.state()
    d = engine.data
    rows, ids, roots = engine._rows, engine._ids, engine._roots
    b = len(engine.body_paths)
    outs = []
    for fn, acc in (
        (_kernels.body_state_kernel, _kernels.body_acceleration_kernel),
        (_kernels.body_state_kernel.py_func, _kernels.body_acceleration_kernel.py_func),
    ):
        o = [np.zeros((b, 3)), np.zeros((b, 4)), np.zeros((b, 3)), np.zeros((b, 3))]
        fn(rows, ids, roots, d.xpos, d.xquat, d.xipos, d.subtree_com, d.cvel, *o)
        a = [np.zeros((b, 3)), np.zeros((b, 3))]
        acc(rows, ids, roots, d.xipos, d.subtree_com, d.cvel, d.cacc, engine._gravity, *a)
        outs.append(o + a)
    for x, y in zip(*outs, strict=False):
        np.testing.assert_array_equal(x, y)
    # COM velocity equals MuJoCo's own mj_objectVelocity at the COM (world orientation)
    res = np.zeros(6)
    for r, i in zip(rows, ids, strict=False):
        mujoco.mj_objectVelocity(engine.model, d, mujoco.mjtObj.mjOBJ_BODY, int(i), res, 0)
        np.testing.assert_allclose(outs[0][2][r], res[3:], atol=1e-12)
        np.testing.assert_allclose(outs[0][3][r], res[:3], atol=1e-12)
        # and the acceleration equals mj_objectAcceleration (+ gravity)
        mujoco.mj_objectAcceleration(engine.model, d, mujoco.mjtObj.mjOBJ_BODY, int(i), res, 0)
        np.testing.assert_allclose(outs[0][4][r], res[3:] + engine._gravity, atol=1e-9)
        np.testing.assert_allclose(outs[0][5][r], res[:3], atol=1e-9)


def test_pendulum_acceleration_matches_finite_difference():
    stage = new_stage()
    pendulum(stage)
    engine = MujocoEngine(stage, dt=0.001, compute_accelerations=True)
    engine.data.qpos[0] = -0.3
    prev = engine.state()
    for _ in range(200):
        engine.step()
        cur = engine.state()
        fd = (cur.body_linear_velocities[0] - prev.body_linear_velocities[0]) / engine.dt
        scale = max(1.0, float(np.abs(fd).max()))
        np.testing.assert_allclose(cur.body_linear_accelerations[0], fd, atol=0.05 * scale)
        prev = cur


def test_position_drive_velocity_target_steady_state():
    stage = new_stage(gravity=0.0)
    body(stage, "/World/slider", mass=1.0, inertia=(0.1, 0.1, 0.1), shape=None)
    j = UsdPhysics.PrismaticJoint.Define(stage, "/World/rail")
    j.CreateBody1Rel().SetTargets(["/World/slider"])
    j.CreateAxisAttr("X")
    drive = UsdPhysics.DriveAPI.Apply(j.GetPrim(), "linear")
    drive.CreateStiffnessAttr(100.0)
    drive.CreateDampingAttr(20.0)
    engine = MujocoEngine(stage, dt=0.002)
    engine.set_joint_velocity_targets([0.1])
    engine.step(3000)
    # kp (0 - x) + kd (0.1 - 0) = 0 at rest
    assert engine.state().joint_positions[0] == pytest.approx(20.0 * 0.1 / 100.0, rel=1e-4)


def test_effort_includes_passive_damping():
    stage = new_stage(gravity=0.0)
    j = pendulum(stage)
    j.GetPrim().CreateAttribute("mjc:damping", Sdf.ValueTypeNames.Double).Set(2.0)
    engine = MujocoEngine(stage, dt=0.001)
    engine.data.qvel[0] = 1.5
    engine.step()
    state = engine.state()
    # MuJoCo evaluated the damping force with the velocity at the start of the step
    assert state.joint_efforts[0] == pytest.approx(-2.0 * 1.5, rel=1e-9)


def test_divergence_raises_instead_of_silent_reset(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo writes MUJOCO_LOG.TXT into the working directory
    stage = new_stage()
    stage.GetPrimAtPath("/PhysicsScene").CreateAttribute(
        "mjc:option:integrator", Sdf.ValueTypeNames.Token
    ).Set("euler")
    pendulum(stage, m=1e-6, drive={"Stiffness": 1e12, "TargetPosition": 90.0})
    engine = MujocoEngine(stage, dt=0.05)
    with pytest.raises(SimrtError, match="diverged"):
        engine.step(200)
    engine.reset()
    assert engine.state().step == 0 and math.isfinite(engine.state().joint_positions[0])


def test_kernels_one_signature_and_python_parity():
    from runtime._compile.jit import JIT_DISABLED

    stage = _pile(None)
    pendulum(stage, limits=(-10.0, 20.0))
    engine = MujocoEngine(stage, dt=0.002, compute_accelerations=True)
    engine.step(300)
    state = engine.state()
    assert state.contact_count > 0
    # the joint-constraint kernel run as plain Python gives the same efforts
    d, m = engine.data, engine.model
    assert d.nefc > 0
    for fn in (_kernels.joint_constraint_force_kernel.py_func,):  # plain Python
        efforts = np.zeros(len(engine.dofs))
        fn(
            d.efc_type.astype(np.int64),
            d.efc_id.astype(np.int64),
            d.efc_force,
            int(mujoco.mjtConstraint.mjCNSTR_LIMIT_JOINT),
            int(mujoco.mjtConstraint.mjCNSTR_FRICTION_DOF),
            m.jnt_type.astype(np.int64),
            int(mujoco.mjtJoint.mjJNT_SLIDE),
            int(mujoco.mjtJoint.mjJNT_HINGE),
            m.jnt_range,
            m.jnt_qposadr.astype(np.int64),
            m.jnt_dofadr.astype(np.int64),
            d.qpos,
            engine._v_adr,
            engine._sign,
            engine._ball,
            np.zeros(m.nv),
            efforts,
        )
        base = np.zeros(len(engine.dofs))
        _kernels.joint_state_kernel(
            engine._q_adr,
            engine._v_adr,
            engine._sign,
            engine._ball,
            d.qpos,
            d.qvel,
            d.qfrc_actuator,
            d.qfrc_passive,
            np.zeros(len(engine.dofs)),
            np.zeros(len(engine.dofs)),
            base,
        )
        np.testing.assert_allclose(base + efforts, state.joint_efforts, atol=1e-12)
        assert abs(efforts).max() > 1.0  # the limit is carrying the arm
    if not JIT_DISABLED:
        for name in _kernels.__all__:
            assert len(getattr(_kernels, name).signatures) == 1, name


def _state_arrays(state):
    names = [
        "body_positions",
        "body_orientations",
        "body_linear_velocities",
        "body_angular_velocities",
        "body_linear_accelerations",
        "body_angular_accelerations",
        "contact_body0",
        "contact_body1",
        "contact_positions",
        "contact_normals",
        "contact_impulses",
        "joint_positions",
        "joint_velocities",
        "joint_efforts",
        "gravity",
    ]
    return {n: (None if getattr(state, n) is None else getattr(state, n).copy()) for n in names}


def test_panda_scene_state_against_mujoco_and_reuse():
    """Real scene (contacts, limits, drives): every field against MuJoCo's own functions;
    ``state(reuse=True)`` equals the fresh state bit for bit; fresh arrays stay untouched."""
    import os

    from pxr import Usd

    scene = os.path.join(os.path.dirname(__file__), "..", "scenes", "panda_table.usda")
    engine = MujocoEngine(Usd.Stage.Open(scene), compute_accelerations=True)
    m, d = engine.model, engine.data
    index = {p: i for i, p in enumerate(engine.body_paths)}
    f6, res = np.zeros(6), np.zeros(6)
    kept_states = []
    seen_counts = set()
    for k in range(240):
        engine.step()
        engine.compute_accelerations = k % 3 != 0
        fresh = engine.state()
        reused = engine.state(reuse=True)
        a, b = _state_arrays(fresh), _state_arrays(reused)
        for name in a:
            if a[name] is None:
                assert b[name] is None and not engine.compute_accelerations
            else:
                np.testing.assert_array_equal(a[name], b[name], err_msg=name)
        assert (fresh.time, fresh.step, fresh.dt) == (reused.time, reused.step, reused.dt)
        fresh.validate()
        reused.validate()
        seen_counts.add(fresh.contact_count)
        if k % 40 == 0:
            kept_states.append((fresh, a))
        # oracle: MuJoCo's accessors and mj_objectVelocity / mj_contactForce
        for r, i in zip(engine._rows, engine._ids, strict=True):
            np.testing.assert_array_equal(fresh.body_positions[r], d.xpos[i])
            np.testing.assert_array_equal(fresh.body_orientations[r], d.xquat[i])
            mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, int(i), res, 0)
            np.testing.assert_allclose(fresh.body_linear_velocities[r], res[3:], atol=1e-12)
            np.testing.assert_allclose(fresh.body_angular_velocities[r], res[:3], atol=1e-12)
        records = []
        for c in range(d.ncon):
            con = d.contact[c]
            if con.exclude or con.efc_address < 0:
                continue
            g1 = int(engine.built.geom_body_index[con.geom[0]])
            g2 = int(engine.built.geom_body_index[con.geom[1]])
            if g1 < 0 and g2 < 0:
                continue
            mujoco.mj_contactForce(m, d, c, f6)
            frame = con.frame.reshape(3, 3)
            impulse = frame.T @ f6[:3] * m.opt.timestep
            normal = frame[0].copy()
            if g2 < 0:
                g1, g2, impulse, normal = g2, g1, -impulse, -normal
            records.append((g2, g1, con.pos.copy(), normal, impulse))
        assert fresh.contact_count == len(records)
        for c, (b0, b1, pos, normal, impulse) in enumerate(records):
            assert (fresh.contact_body0[c], fresh.contact_body1[c]) == (b0, b1)
            np.testing.assert_array_equal(fresh.contact_positions[c], pos)
            np.testing.assert_array_equal(fresh.contact_normals[c], normal)
            np.testing.assert_allclose(fresh.contact_impulses[c], impulse, atol=1e-12)
        for j, dof in enumerate(engine.dofs):
            if dof.ball_axis < 0:
                assert fresh.joint_positions[j] == d.qpos[dof.qpos_adr] * dof.sign
                assert fresh.joint_velocities[j] == d.qvel[dof.dof_adr] * dof.sign
    assert len(seen_counts) > 1 and max(seen_counts) > 0 and index
    # fresh states kept across steps are not overwritten
    for state, arrays in kept_states:
        for name, value in _state_arrays(state).items():
            if value is not None:
                np.testing.assert_array_equal(value, arrays[name], err_msg=name)


def test_reuse_state_tracks_growing_contact_counts():
    """Contacts appear one body at a time (0 -> many): the contact view and the reused
    buffers grow, and ``state(reuse=True)`` keeps equal to the fresh state."""
    engine = MujocoEngine(_pile("elliptic"), dt=0.002, compute_accelerations=True)
    for j in range(engine.model.njnt):
        engine.data.qvel[engine.model.jnt_dofadr[j]] = 1.0
    engine.data.qpos[2::7] += np.linspace(0.01, 0.06, engine.model.njnt)  # staggered drops
    counts = []
    for _ in range(150):
        engine.step()
        fresh = _state_arrays(engine.state())
        reused = engine.state(reuse=True)
        counts.append(reused.contact_count)
        for name, value in _state_arrays(reused).items():
            np.testing.assert_array_equal(value, fresh[name], err_msg=name)
    assert counts[0] == 0 and max(counts) > 8
