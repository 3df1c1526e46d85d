"""Property-based tests (hypothesis) of the kinematics kernels.

FK and the Jacobian of the four-joint hand chain of ``test_kinematics`` (revolute about Z,
revolute about Y, prismatic, reversed revolute, a fixed joint between) are compared with
Pinocchio (the independent oracle) and with central finite differences, for joint values
drawn inside the limits, exactly on them, at zero, and far outside (1e3 rad: the kernels
trust their inputs, so they must still agree with the oracle). The LM IK step is checked
for what it promises: the result stays inside the limits, its reported error is the true
error of the returned pose, and it never ends worse than its seed.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from runtime.kinematics.chain import KinematicChain
from runtime.kinematics.ik import ik_lm_with_error
from runtime.kinematics.math import Transform, pose_error
from tests.helpers import reference_kinematics as ref

pin = pytest.importorskip("pinocchio")

from tests.helpers.kinematics import _pin_hand_model, build_hand_stage  # noqa: E402

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow],
)

# sampling box of test_kinematics (inside the authored limits, which IK checks against)
LOWER = np.array([-1.5, -3.0, 0.0, -2.0])
UPPER = np.array([1.5, 3.0, 0.3, 0.7])


@pytest.fixture(scope="module")
def hand():
    stage = build_hand_stage()
    robot = stage.GetPrimAtPath("/World/Robot")
    chain = KinematicChain(
        stage,
        robot,
        stage.GetPrimAtPath("/World/Robot/base"),
        stage.GetPrimAtPath("/World/Robot/l5/tool"),
    )
    model = _pin_hand_model(stage)
    return stage, chain, model, model.createData(), model.getFrameId("tool")


def _q(kind: str, u: list[float]) -> np.ndarray:
    u = np.asarray(u)
    if kind == "inside":
        return LOWER + u * (UPPER - LOWER)
    if kind == "limits":
        return np.where(u < 0.5, LOWER, UPPER)
    if kind == "zero":
        return np.zeros(4)
    return (u - 0.5) * 2e3  # far outside the limits


_CONFIG = st.tuples(
    st.sampled_from(["inside", "inside", "limits", "zero", "huge"]),
    st.lists(st.floats(0.0, 1.0), min_size=4, max_size=4),
)


@SETTINGS
@given(config=_CONFIG)
def test_fk_and_jacobian_match_pinocchio(hand, config):
    _, chain, model, data, fid = hand
    q = _q(*config)
    pos, quat, jac = chain.fk_jacobian_batch(q.reshape(1, 4))
    pin.computeJointJacobians(model, data, q)
    pin.framesForwardKinematics(model, data, q)
    frame = data.oMf[fid]
    scale = max(1.0, float(np.abs(q).max()))
    np.testing.assert_allclose(pos[0], frame.translation, atol=1e-9 * scale)
    assert ref.quat_angle(quat[0], ref.wxyz_from_matrix(frame.rotation)) < 1e-8
    assert abs(np.linalg.norm(quat[0]) - 1.0) < 1e-12
    jw = pin.getFrameJacobian(model, data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
    np.testing.assert_allclose(jac[0], np.vstack([jw[3:], jw[:3]]), atol=1e-9 * scale)
    # single-configuration entry point gives the same pose
    p1, q1 = chain.fk(q)
    np.testing.assert_array_equal(p1, pos[0])
    np.testing.assert_array_equal(q1, quat[0])


@SETTINGS
@given(config=_CONFIG.filter(lambda c: c[0] != "huge"))
def test_jacobian_matches_finite_differences(hand, config):
    _, chain, *_ = hand
    q = _q(*config)
    _, _, jac = chain.fk_jacobian_batch(q.reshape(1, 4))
    np.testing.assert_allclose(jac[0], ref.fd_point_jacobian(chain.fk, q), atol=2e-7)


@SETTINGS
@given(
    target=st.lists(st.floats(0.0, 1.0), min_size=4, max_size=4),
    seed=_CONFIG,
    iters=st.sampled_from([0, 1, 5, 30]),
)
def test_ik_step_stays_in_limits_and_never_gets_worse(hand, target, seed, iters):
    _, chain, *_ = hand
    goal = chain.fk(_q("inside", target))
    goal_tf = Transform(goal[0], goal[1])
    lower, upper = np.asarray(chain.lower), np.asarray(chain.upper)
    q0 = np.clip(_q(*seed), lower, upper)
    q, err = ik_lm_with_error(chain, q0, goal_tf, iters=iters)
    assert np.all(q >= lower - 1e-12) and np.all(q <= upper + 1e-12)
    assert np.all(np.isfinite(q)) and np.isfinite(err)
    pos, quat = chain.fk(q)
    actual = float(np.linalg.norm(pose_error(Transform(pos, quat), goal_tf)))
    assert err == pytest.approx(actual, rel=1e-9, abs=1e-12)
    p0, r0 = chain.fk(q0)
    start = float(np.linalg.norm(pose_error(Transform(p0, r0), goal_tf)))
    assert actual <= start + 1e-9
