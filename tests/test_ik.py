"""LM IK: solver interface, fixed masks, registry, Panda success rates (Pinocchio-checked)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from pxr import Usd

from runtime.kinematics.chain import KinematicChain
from runtime.kinematics.ik import (
    IKSolverLM,
    IKSolverRegistry,
    ik_lm,
    ik_lm_batch,
    ik_lm_with_error,
)
from runtime.kinematics.math import Transform
from runtime.kinematics.poser import RobotPoser
from tests.helpers import reference_kinematics as ref
from tests.helpers.kinematics import build_hand_stage

pin = pytest.importorskip("pinocchio")


@pytest.fixture(scope="module")
def hand_chain():
    stage = build_hand_stage()
    return KinematicChain(
        stage,
        stage.GetPrimAtPath("/World/Robot"),
        stage.GetPrimAtPath("/World/Robot/base"),
        stage.GetPrimAtPath("/World/Robot/l5/tool"),
    )


@pytest.fixture(scope="module")
def panda():
    usd, robot_path, _ = ref.ROBOTS["panda"]
    stage = Usd.Stage.Open(os.path.join(ref.ASSETS, usd))
    robot = stage.GetPrimAtPath(robot_path)
    base = stage.GetPrimAtPath("/panda/Geometry/panda_link0")
    hand = next(p for p in Usd.PrimRange(robot) if p.GetName() == "panda_hand")
    model, data = ref.pin_model("panda")
    return stage, robot, base, hand, model, data


def _pin_errors(model, data, names, qs, targets):
    """Position / rotation errors of solutions, measured with Pinocchio on the URDF."""
    pos_err = np.empty(len(qs))
    rot_err = np.empty(len(qs))
    for i, (q, (tp, tq)) in enumerate(zip(qs, targets, strict=True)):
        m = ref.pin_frame_pose(model, data, ref.pin_q(model, names, q), "panda_hand")
        pos_err[i] = np.linalg.norm(m.translation - tp)
        rot_err[i] = ref.quat_angle(ref.wxyz_from_matrix(m.rotation), tq)
    return pos_err, rot_err


def _targets_from_pinocchio(model, data, names, qs):
    out = []
    for q in qs:
        m = ref.pin_frame_pose(model, data, ref.pin_q(model, names, q), "panda_hand")
        out.append((m.translation.copy(), ref.wxyz_from_matrix(m.rotation)))
    return out


def test_ik_lm_reaches_reachable_target(hand_chain):
    q_true = np.array([0.5, -0.4, 0.1, -0.2])
    T = Transform(*hand_chain.fk(q_true))
    q = ik_lm(hand_chain, q_true + 0.1, T, iters=60)
    p, r = hand_chain.fk(q)
    assert np.linalg.norm(p - T.t) < 1e-6 and ref.quat_angle(r, T.q) < 1e-6
    assert np.all(q >= hand_chain.lower - 1e-12) and np.all(q <= hand_chain.upper + 1e-12)
    # base_frame: the target is given in an outer frame in which the chain start sits at
    # ``base`` (the solver uses ``base.inv() @ target``)
    base = Transform([0.1, 0.0, -0.2], [np.cos(0.2), 0.0, 0.0, np.sin(0.2)])
    q2 = ik_lm(hand_chain, q_true + 0.1, base @ T, iters=60, base_frame=base)
    assert np.allclose(hand_chain.fk(q2)[0], T.t, atol=1e-6)


def test_joint_fixed_mask_keeps_clipped_seed(hand_chain):
    T = Transform(*hand_chain.fk(np.array([0.3, 0.2, 0.15, 0.1])))
    seed = np.array([2.5, 0.0, 0.0, 0.0])  # j1 above its +90° limit: clipped to π/2
    q = ik_lm(hand_chain, seed, T, joint_fixed=[True, False, False, False])
    assert q[0] == pytest.approx(np.pi / 2)
    q_wrong = ik_lm(hand_chain, seed, T, joint_fixed=[True, False])  # wrong length: ignored
    assert q_wrong[0] != pytest.approx(np.pi / 2)
    q_free = ik_lm(hand_chain, seed, T)
    assert np.allclose(q_wrong, q_free)


def test_registry_and_solver_interface(hand_chain):
    with pytest.raises(KeyError, match="not registered. Available: .*'lm'"):
        IKSolverRegistry.get("nope")
    a, b = IKSolverRegistry.get(), IKSolverRegistry.get("lm")
    assert isinstance(a, IKSolverLM) and a is not b
    assert IKSolverRegistry.default_name() == "lm"
    assert "lm" in IKSolverRegistry.available()
    T = Transform(*hand_chain.fk(np.array([0.1, 0.1, 0.1, 0.1])))
    q = a.solve(hand_chain, T)  # q0=None → zeros
    assert q.shape == (4,)
    with pytest.raises(TypeError):
        a.solve(hand_chain, T, bogus=1)


def test_panda_near_seed_tracking_and_batch(panda):
    stage, robot, base, hand, model, data = panda
    chain = KinematicChain(stage, robot, base, hand)
    names = [p.rsplit("/", 1)[-1] for p in chain.joint_paths]
    rng = np.random.default_rng(21)
    qs = rng.uniform(chain.lower, chain.upper, size=(200, 7))
    targets = _targets_from_pinocchio(model, data, names, qs)
    near = np.clip(qs + rng.normal(0.0, 0.05, qs.shape), chain.lower, chain.upper)
    sol, err, idx = ik_lm_batch(
        chain, np.array([t[0] for t in targets]), np.array([t[1] for t in targets]), near
    )
    pe, re = _pin_errors(model, data, names, sol, targets)
    ok = (pe < 1e-4) & (re < 1e-3)
    assert ok.mean() >= 0.98, ok.mean()
    assert np.array_equal(ok, idx >= 0)
    # the single-target path gives the same answers as the batched kernel
    for i in range(10):
        q1, e1 = ik_lm_with_error(chain, near[i], Transform(*targets[i]))
        assert np.allclose(q1, sol[i], atol=1e-12) and e1 == pytest.approx(err[i], abs=1e-15)


def test_panda_cold_start_ladder_success_rate(panda):
    stage, robot, base, hand, model, data = panda
    poser = RobotPoser(stage, robot, base, hand)
    chain = poser.chain
    names = [p.rsplit("/", 1)[-1] for p in chain.joint_paths]
    rng = np.random.default_rng(1234)
    qs = rng.uniform(chain.lower, chain.upper, size=(200, 7))
    targets = _targets_from_pinocchio(model, data, names, qs)
    sols = []
    for tp, tq in targets:
        poser.set_seed(None)  # cold start every time
        result = poser.solve_ik(Transform(tp, tq))
        sols.append([result.joints[p] for p in chain.joint_paths])
    pe, re = _pin_errors(model, data, names, np.array(sols), targets)
    rate = float(np.mean((pe < 1e-4) & (re < 1e-3)))
    assert rate >= 0.995, rate
    # batched cold start agrees on success
    q_b, ok_b = poser.solve_ik_batch(
        np.array([t[0] for t in targets]), np.array([t[1] for t in targets])
    )
    pe_b, re_b = _pin_errors(model, data, names, q_b, targets)
    assert np.mean((pe_b < 1e-4) & (re_b < 1e-3)) >= 0.995


def test_non_finite_inputs_are_rejected(hand_chain):
    T = Transform([0.1, 0.2, np.nan])
    with pytest.raises(ValueError, match="finite"):
        ik_lm(hand_chain, np.zeros(4), T)
    with pytest.raises(ValueError, match="finite"):
        ik_lm(hand_chain, np.array([0.0, np.inf, 0.0, 0.0]), Transform())
    with pytest.raises(ValueError, match="finite"):
        ik_lm_batch(hand_chain, [[0.0, 0.0, np.nan]], [[1.0, 0.0, 0.0, 0.0]], np.zeros((1, 4)))
    with pytest.raises(ValueError, match="shape"):
        ik_lm(hand_chain, np.zeros(3), Transform())
