"""Kinematics math; FK / Jacobian / teleport of a hand-authored stage against Pinocchio,
finite differences and USD itself; one compiled signature per kernel and a plain-Python run.

The converted robots (Panda, UR5, Solo12, UR5e) are tested in ``test_kinematics_robots.py``.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from pxr import Gf, UsdGeom, UsdPhysics

from runtime.kinematics import _kernels as K
from runtime.kinematics.chain import KinematicChain
from runtime.kinematics.math import (
    Transform,
    adjoint,
    pose_error,
    quat_from_axis_angle,
    quat_multiply,
    quat_rotate,
    quat_to_matrix,
    skew,
)
from tests.helpers import reference_kinematics as ref
from tests.helpers.kinematics import N_CONFIGS, _pin_hand_model, _se3, _world, build_hand_stage, pin  # noqa: E402, F401

# ----------------------------------------------------------------------------- math


def test_pose_error_cases():
    T = Transform([0.1, 0.2, 0.3], quat_from_axis_angle([1, 2, 3], 0.7))
    assert np.allclose(pose_error(T, T), 0.0)
    shifted = Transform(T.t + [0.5, -1.0, 2.0], T.q)
    assert np.allclose(pose_error(shifted, T), [0, 0, 0, 0.5, -1.0, 2.0])
    theta = 0.9
    rz = Transform(None, quat_from_axis_angle([0, 0, 1], theta))
    assert np.allclose(pose_error(rz, Transform()), [0, 0, 2 * math.sin(theta / 2), 0, 0, 0])
    # exactly 180°: the reference's sign(0) = 0 would lose the error; ours keeps it
    flip = Transform(None, [0.0, 0.0, 0.0, 1.0])
    assert np.allclose(pose_error(flip, Transform()), [0, 0, 2, 0, 0, 0])


def test_transform_algebra_matches_matrices():
    rng = np.random.default_rng(3)
    for _ in range(20):
        a = Transform(rng.normal(size=3), quat_from_axis_angle(rng.normal(size=3), rng.normal()))
        b = Transform(rng.normal(size=3), quat_from_axis_angle(rng.normal(size=3), rng.normal()))
        assert np.allclose((a @ b).matrix(), a.matrix() @ b.matrix())
        assert np.allclose(a.inv().matrix(), np.linalg.inv(a.matrix()))
        v = rng.normal(size=3)
        assert np.allclose(quat_rotate(a.q, v), quat_to_matrix(a.q) @ v)
        assert np.allclose(skew(v) @ b.t, np.cross(v, b.t))
        # adjoint maps twists [ω; v] between frames: compare with matrix log of conjugation
        ad = adjoint(a)
        w, lin = rng.normal(size=3), rng.normal(size=3)
        xi = np.zeros((4, 4))
        xi[:3, :3] = skew(w)
        xi[:3, 3] = lin
        conj = a.matrix() @ xi @ np.linalg.inv(a.matrix())
        out = ad @ np.r_[w, lin]
        assert np.allclose(conj[:3, :3], skew(out[:3]))
        assert np.allclose(conj[:3, 3], out[3:])
    # Hamilton product against Pinocchio's quaternion product
    q1 = quat_from_axis_angle([1, 0, 1], 0.3)
    q2 = quat_from_axis_angle([0, 1, 1], -1.1)
    p = pin.Quaternion(*q1) * pin.Quaternion(*q2)
    assert np.allclose(quat_multiply(q1, q2), [p.w, p.x, p.y, p.z])


# ----------------------------------------------------------------------------- hand-authored


def test_hand_chain_structure_and_limits():
    stage = build_hand_stage()
    robot = stage.GetPrimAtPath("/World/Robot")
    chain = KinematicChain(
        stage,
        robot,
        stage.GetPrimAtPath("/World/Robot/base"),
        stage.GetPrimAtPath("/World/Robot/l5/tool"),
    )
    assert chain.joint_paths == [
        "/World/Robot/j1",
        "/World/Robot/j2",
        "/World/Robot/j3",
        "/World/Robot/j4",
    ]  # fixed joint folded
    assert [j.is_revolute for j in chain.joints] == [True, True, False, True]
    assert chain.joints[-1].tip is not None and all(j.tip is None for j in chain.joints[:-1])
    assert np.allclose(chain.lower[:3], [-math.pi / 2, -math.inf, 0.0])
    assert np.allclose(chain.upper[:3], [math.pi / 2, math.inf, 0.3])
    # j4: USD limits (-120, 45) deg on the USD joint value, unchanged by traversal
    assert np.allclose([chain.lower[3], chain.upper[3]], np.radians([-120, 45]), atol=1e-7)


def test_hand_chain_matches_pinocchio_to_1e9():
    stage = build_hand_stage()
    robot = stage.GetPrimAtPath("/World/Robot")
    chain = KinematicChain(
        stage,
        robot,
        stage.GetPrimAtPath("/World/Robot/base"),
        stage.GetPrimAtPath("/World/Robot/l5/tool"),
    )
    model = _pin_hand_model(stage)
    data = model.createData()
    fid = model.getFrameId("tool")
    rng = np.random.default_rng(11)
    qs = rng.uniform([-1.5, -3, 0, -2], [1.5, 3, 0.3, 0.7], size=(N_CONFIGS, 4))
    pos, quat, jac = chain.fk_jacobian_batch(qs)
    for b in range(N_CONFIGS):
        pin.computeJointJacobians(model, data, qs[b])
        pin.framesForwardKinematics(model, data, qs[b])
        m = data.oMf[fid]
        assert np.abs(pos[b] - m.translation).max() < 1e-9
        assert ref.quat_angle(quat[b], ref.wxyz_from_matrix(m.rotation)) < 1e-9
        jw = pin.getFrameJacobian(model, data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        assert np.abs(jac[b] - np.vstack([jw[3:], jw[:3]])).max() < 1e-9
    fd = ref.fd_point_jacobian(chain.fk, qs[0])
    assert np.allclose(jac[0], fd, atol=1e-7)


def _joint_residual(stage, joint_path, value):
    """USD joint definition: X_body0 · L0 · motion(value) == X_body1 · L1 (column form)."""
    j = stage.GetPrimAtPath(joint_path)
    b0 = str(j.GetRelationship("physics:body0").GetTargets()[0])
    b1 = str(j.GetRelationship("physics:body1").GetTargets()[0])
    l0 = _se3(stage, joint_path, 0).homogeneous
    l1 = _se3(stage, joint_path, 1).homogeneous
    axis = {"X": [1, 0, 0], "Y": [0, 1, 0], "Z": [0, 0, 1]}.get(
        str(j.GetAttribute("physics:axis").Get()), [1, 0, 0]
    )
    motion = np.eye(4)
    if j.IsA(UsdPhysics.RevoluteJoint):
        motion[:3, :3] = quat_to_matrix(quat_from_axis_angle(axis, value))
    elif j.IsA(UsdPhysics.PrismaticJoint):
        motion[:3, 3] = np.array(axis) * value
    lhs = _world(stage, b0) @ l0 @ motion
    rhs = _world(stage, b1) @ l1
    return np.abs(lhs - rhs).max()


@pytest.mark.parametrize("reverse", [False, True])
def test_teleport_satisfies_usd_joints_and_matches_fk(reverse):
    stage = build_hand_stage(reverse_j4=reverse)
    robot = stage.GetPrimAtPath("/World/Robot")
    base = stage.GetPrimAtPath("/World/Robot/base")
    tool = stage.GetPrimAtPath("/World/Robot/l5/tool")
    chain = KinematicChain(stage, robot, base, tool)
    base_before = _world(stage, "/World/Robot/base")
    q = np.array([0.4, -0.7, 0.12, -0.3])
    joint_dict = dict(zip(chain.joint_paths, q, strict=True))
    chain.teleport(joint_dict)
    for path, value in joint_dict.items():
        assert _joint_residual(stage, path, value) < 1e-6
    assert _joint_residual(stage, "/World/Robot/jf", 0.0) < 1e-6
    assert np.allclose(_world(stage, "/World/Robot/base"), base_before, atol=1e-12)
    T, _ = chain.compute_fk(q)
    expected = base_before @ T.matrix()
    assert np.abs(_world(stage, "/World/Robot/l5/tool") - expected).max() < 1e-6
    # joint attributes: degrees for revolute, stage units for prismatic
    j1 = stage.GetPrimAtPath("/World/Robot/j1")
    assert j1.GetAttribute("state:angular:physics:position").Get() == pytest.approx(
        math.degrees(0.4), rel=1e-6
    )
    assert j1.GetAttribute("drive:angular:physics:targetPosition").Get() == pytest.approx(
        math.degrees(0.4), rel=1e-6
    )
    j3 = stage.GetPrimAtPath("/World/Robot/j3")
    assert j3.GetAttribute("state:linear:physics:position").Get() == pytest.approx(0.12)
    assert chain.read_joint_states() == pytest.approx(joint_dict, abs=1e-6)


def test_reversed_authoring_equals_forward_with_flipped_value():
    fwd = build_hand_stage(reverse_j4=False)
    rev = build_hand_stage(reverse_j4=True)
    chains = []
    for stage in (fwd, rev):
        chains.append(
            KinematicChain(
                stage,
                stage.GetPrimAtPath("/World/Robot"),
                stage.GetPrimAtPath("/World/Robot/base"),
                stage.GetPrimAtPath("/World/Robot/l5/tool"),
            )
        )
    q = np.array([0.2, 0.5, 0.05, 0.6])
    p_f, q_f = chains[0].fk(q)
    p_r, q_r = chains[1].fk(q * [1, 1, 1, -1])
    assert np.allclose(p_f, p_r, atol=1e-12) and ref.quat_angle(q_f, q_r) < 1e-9


def test_backward_chain_and_teleport_anchored():
    stage = build_hand_stage()
    robot = stage.GetPrimAtPath("/World/Robot")
    tool = stage.GetPrimAtPath("/World/Robot/l5/tool")
    base = stage.GetPrimAtPath("/World/Robot/base")
    fwd = KinematicChain(stage, robot, base, tool)
    back = KinematicChain(stage, robot, tool, base)
    assert back.joint_paths == list(reversed(fwd.joint_paths))
    assert all(not j.forward for j in back.joints) and back.joints[-1].tip is not None
    q = np.array([0.3, 0.2, 0.1, -0.4])
    T_f, _ = fwd.compute_fk(q)
    T_b, _ = back.compute_fk(q[::-1])
    assert np.allclose(T_b.matrix(), np.linalg.inv(T_f.matrix()), atol=1e-12)
    tool_before = _world(stage, "/World/Robot/l5/tool")
    assert not stage.GetPrimAtPath("/World/Robot/base").HasAttribute("xformOp:scale")
    back.teleport_anchored(dict(zip(back.joint_paths, q[::-1], strict=True)))
    # the anchored teleport rewrites the root link too (translate / orient / scale)
    assert stage.GetPrimAtPath("/World/Robot/base").HasAttribute("xformOp:scale")
    assert np.abs(_world(stage, "/World/Robot/l5/tool") - tool_before).max() < 1e-6
    base_in_tool = np.linalg.inv(_world(stage, "/World/Robot/l5/tool")) @ _world(
        stage, "/World/Robot/base"
    )
    assert np.abs(base_in_tool - T_b.matrix()).max() < 1e-6


def test_teleport_keeps_authored_scale_and_skips_root():
    stage = build_hand_stage()
    l2 = UsdGeom.Xformable(stage.GetPrimAtPath("/World/Robot/l2"))
    l2.AddScaleOp(UsdGeom.XformOp.PrecisionFloat).Set(Gf.Vec3f(2.0, 2.0, 2.0))
    robot = stage.GetPrimAtPath("/World/Robot")
    chain = KinematicChain(stage, robot)
    base_ops = stage.GetPrimAtPath("/World/Robot/base").GetAttribute("xformOpOrder").Get()
    chain.teleport({"/World/Robot/j2": 0.3})
    ops = UsdGeom.Xformable(stage.GetPrimAtPath("/World/Robot/l2")).GetOrderedXformOps()
    assert [o.GetOpName() for o in ops] == ["xformOp:translate", "xformOp:orient", "xformOp:scale"]
    assert tuple(ops[2].Get()) == (2.0, 2.0, 2.0)
    assert ops[2].GetPrecision() == UsdGeom.XformOp.PrecisionFloat
    assert stage.GetPrimAtPath("/World/Robot/base").GetAttribute("xformOpOrder").Get() == base_ops
    # l1 is upstream of j2: untouched
    assert not stage.GetPrimAtPath("/World/Robot/l1").GetAttribute("xformOpOrder").Get()


def test_chain_without_movable_joint_is_empty():
    stage = build_hand_stage()
    robot = stage.GetPrimAtPath("/World/Robot")
    chain = KinematicChain(
        stage, robot, stage.GetPrimAtPath("/World/Robot/l3"), stage.GetPrimAtPath("/World/Robot/l4")
    )
    assert chain.joints == []
    T, frames = chain.compute_fk([])
    assert np.allclose(T.matrix(), np.eye(4)) and frames == []
    same = KinematicChain(
        stage,
        robot,
        stage.GetPrimAtPath("/World/Robot/l5"),
        stage.GetPrimAtPath("/World/Robot/l5/tool"),
    )
    assert same.joints == []


def test_bad_joint_data_raises_schema_error():
    from runtime.errors import SchemaError

    stage = build_hand_stage()
    stage.GetPrimAtPath("/World/Robot/j2").GetAttribute("physics:localRot0").Set(
        Gf.Quatf(0, 0, 0, 0)
    )
    with pytest.raises(SchemaError, match="/World/Robot/j2.physics:localRot0"):
        KinematicChain(stage, stage.GetPrimAtPath("/World/Robot"))


# ----------------------------------------------------------------------------- kernels


KERNELS = [
    "chain_fk_kernel",
    "chain_fk_batch_kernel",
    "chain_fk_jacobian_kernel",
    "chain_fk_jacobian_batch_kernel",
    "chain_fk_frames_kernel",
    "tree_fk_kernel",
    "tree_fk_batch_kernel",
    "ik_lm_kernel",
    "ik_lm_batch_kernel",
]


def test_one_compiled_signature_per_kernel():
    from runtime._compile.jit import JIT_DISABLED

    if JIT_DISABLED:
        pytest.skip("JIT disabled")
    from runtime.kinematics.ik import ik_lm_batch, ik_lm_with_error

    stage = build_hand_stage()
    robot = stage.GetPrimAtPath("/World/Robot")
    chain = KinematicChain(
        stage,
        robot,
        stage.GetPrimAtPath("/World/Robot/base"),
        stage.GetPrimAtPath("/World/Robot/l5/tool"),
    )
    q = np.array([0.1, 0.2, 0.1, 0.3])
    chain.fk(q)
    chain.fk_batch(q[None])
    chain.compute_fk(q)
    chain.compute_fk_and_jacobian(q)
    chain.fk_jacobian_batch(q[None])
    arrays = chain.tree_arrays()
    n_links = len(chain.tree_nodes)
    K.tree_fk_kernel(*arrays, q, np.empty((n_links, 3)), np.empty((n_links, 4)))
    K.tree_fk_batch_kernel(*arrays, q[None], np.empty((1, n_links, 3)), np.empty((1, n_links, 4)))
    T = Transform(*chain.fk(q))
    ik_lm_with_error(chain, q, T)
    ik_lm_batch(chain, T.t[None], T.q[None], q[None])
    for name in KERNELS:
        assert len(getattr(K, name).signatures) == 1, name


_PLAIN_PYTHON = r"""
import numpy as np, runtime.schema
from runtime._compile.jit import JIT_DISABLED
assert JIT_DISABLED
from tests.helpers.kinematics import build_hand_stage
from tests.helpers import reference_kinematics as ref
from runtime.kinematics.chain import KinematicChain
from runtime.kinematics.ik import ik_lm_with_error
from runtime.kinematics.math import Transform
import runtime.kinematics._kernels as K
assert not hasattr(K.chain_fk_kernel, "signatures")
stage = build_hand_stage()
chain = KinematicChain(stage, stage.GetPrimAtPath("/World/Robot"),
                       stage.GetPrimAtPath("/World/Robot/base"),
                       stage.GetPrimAtPath("/World/Robot/l5/tool"))
q = np.array([0.3, -0.2, 0.1, 0.4])
pos, quat, jac = chain.fk_jacobian_batch(q[None])
p1, q1 = chain.fk(q)
lp, lq = chain.compute_link_poses(q)
T = Transform(pos[0], quat[0])
sol, err = ik_lm_with_error(chain, q + 0.05, T)
assert err < 1e-6, err
from runtime.kinematics.ik import ik_lm_batch
qb, eb, ib = ik_lm_batch(chain, pos, quat, np.array([[0.0, 0.0, 0.0, 0.0], q + 0.05]))
np.save(__import__("sys").argv[1], np.concatenate(
    [pos[0], quat[0], jac[0].ravel(), p1, q1, lp.ravel(), lq.ravel(), sol, qb.ravel()]))
"""


def test_kernels_run_as_plain_python(tmp_path):
    out = tmp_path / "plain.npy"
    env = dict(os.environ, SIMRT_DISABLE_JIT="1")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run(
        [sys.executable, "-c", _PLAIN_PYTHON, str(out)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    plain = np.load(out)
    stage = build_hand_stage()
    chain = KinematicChain(
        stage,
        stage.GetPrimAtPath("/World/Robot"),
        stage.GetPrimAtPath("/World/Robot/base"),
        stage.GetPrimAtPath("/World/Robot/l5/tool"),
    )
    from runtime.kinematics.ik import ik_lm_batch, ik_lm_with_error

    q = np.array([0.3, -0.2, 0.1, 0.4])
    pos, quat, jac = chain.fk_jacobian_batch(q[None])
    p1, q1 = chain.fk(q)
    lp, lq = chain.compute_link_poses(q)
    sol, _ = ik_lm_with_error(chain, q + 0.05, Transform(pos[0], quat[0]))
    qb, _, _ = ik_lm_batch(chain, pos, quat, np.array([[0.0, 0.0, 0.0, 0.0], q + 0.05]))
    jitted = np.concatenate(
        [pos[0], quat[0], jac[0].ravel(), p1, q1, lp.ravel(), lq.ravel(), sol, qb.ravel()]
    )
    assert plain.shape == jitted.shape
    assert np.allclose(plain, jitted, atol=1e-12)
