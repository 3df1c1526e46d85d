"""RobotPoser: seed ladder, solve/apply behaviour (spec scenarios 22–35), target sink."""

from __future__ import annotations

import logging
import math
from types import SimpleNamespace

import numpy as np
import pytest
from pxr import Sdf, Usd, UsdGeom

from runtime.kinematics.math import Transform, quat_from_axis_angle
from runtime.kinematics.poser import (
    PoseResult,
    RobotPoser,
    apply_joint_state,
    apply_joint_state_anchored,
    build_cold_start_seeds,
    validate_robot_schema,
)
from tests.helpers.poser import make_p1  # noqa: E402, F401

LOGGER = "runtime.kinematics.poser"


@pytest.fixture
def p1():
    return make_p1()


class _Joint(SimpleNamespace):
    pass


def _joints(limits):
    return [_Joint(lower=lo, upper=hi) for lo, hi in limits]


# ----------------------------------------------------------------------------- ladder


def test_ladder_shapes_and_values():
    assert [s.shape for s in build_cold_start_seeds([])] == [(0,)]
    seeds = build_cold_start_seeds(_joints([(-2, 4), (0, 1), (-1.5, 1.5)]), n_random=2)
    assert np.allclose(seeds[0], [1.0, 0.5, 0.0])
    four = build_cold_start_seeds(_joints([(-1, 1)] * 4), n_random=3)
    assert np.array_equal(four[-1], np.zeros(4))
    lo = np.array([-1.5, -3, 0.5, -0.25])
    hi = np.array([1.5, 3, 2, 0.25])
    for s in build_cold_start_seeds(_joints(zip(lo, hi, strict=True)), n_random=5)[1:-1]:
        assert np.all(s >= lo) and np.all(s <= hi)
    assert np.allclose(build_cold_start_seeds(_joints([(-np.inf, np.inf), (-2, 2)]))[0], [0, 0])
    lim = _joints([(-np.pi, np.pi)] * 7)
    a, b = build_cold_start_seeds(lim), build_cold_start_seeds(lim)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    for n_random in (0, 1, 5):
        assert len(build_cold_start_seeds(lim, n_random=n_random)) == n_random + 2


def test_ladder_reference_test_vector():
    seeds = build_cold_start_seeds(_joints([(-1, 1), (0, 2), (-np.inf, np.inf)]))
    expected = [
        [0, 1, 0],
        [0.27392337, 0.53957343, -0.91805295],
        [-0.96694473, 1.62654048, 0.82551115],
        [0.21327155, 1.45899312, 0.08724998],
        [0, 0, 0],
    ]
    assert np.allclose(np.array(seeds), expected, atol=1e-8)


# ----------------------------------------------------------------------------- solve / apply


def test_validate_robot_schema(p1):
    stage, robot, _ = p1
    assert validate_robot_schema(robot)
    assert not validate_robot_schema(UsdGeom.Xform.Define(stage, "/Plain").GetPrim())


def test_unreachable_cold_start_warns(p1, caplog):
    stage, robot, link = p1
    poser = RobotPoser(stage, robot, robot, link)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        result = poser.solve_ik(Transform([1, 0, 5]))
    assert not result.success
    assert list(result.joints) == ["/World/Robot/joint1"]
    assert "cold-start IK failed" in caplog.text
    assert "stale-cache fallback" not in caplog.text


def test_explicit_seed_and_cache(p1, caplog):
    stage, robot, link = p1
    poser = RobotPoser(stage, robot, robot, link)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert poser.solve_ik(Transform([1, 0, 0]), seed=[0.0]).success
        poser.set_seed([0.5])
        assert poser.solve_ik(Transform([1, 0, 0])).success
    assert caplog.text == ""
    poser.set_seed([1.234])
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        result = poser.solve_ik(Transform([1, 0, 7]))
    assert not result.success
    assert "cold-start IK failed" in caplog.text and "stale-cache fallback" in caplog.text


def test_solve_rotation_target_and_result_fields(p1):
    stage, robot, link = p1
    poser = RobotPoser(stage, robot, robot, link)
    target = Transform([1, 0, 0], [math.cos(0.25), math.sin(0.25), 0, 0])
    result = poser.solve_ik(target)
    assert result.success
    assert result.joints["/World/Robot/joint1"] == pytest.approx(0.5, abs=1e-6)
    assert result.joint_fixed == {"/World/Robot/joint1": False}
    assert result.start_link == "/World/Robot" and result.end_link == "/World/Robot/Link1"
    assert result.target_position == [1.0, 0.0, 0.0]
    assert np.allclose(result.target_orientation, target.q)
    assert poser.joints_to_native_values(result.joints) == pytest.approx([28.64789], abs=1e-4)


def test_refuses_failed_result_and_applies_success(p1, caplog):
    stage, robot, link = p1
    poser = RobotPoser(stage, robot, robot, link)
    layer_before = stage.GetRootLayer().ExportToString()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        poser.apply_pose(PoseResult(success=False, joints={"/World/Robot/joint1": 1.0}))
    assert "refusing to apply a failed PoseResult" in caplog.text
    assert stage.GetRootLayer().ExportToString() == layer_before
    target = Transform([1, 0, 0], quat_from_axis_angle([1, 0, 0], 0.7))
    result = poser.solve_ik(target)
    poser.apply_pose(result)
    m = np.array(UsdGeom.Xformable(link).ComputeLocalToWorldTransform(Usd.TimeCode.Default())).T
    assert np.allclose(m[:3, 3], [1, 0, 0], atol=1e-9)
    assert np.allclose(m[:3, :3], Transform(None, target.q).rotation_matrix(), atol=1e-6)
    joint = stage.GetPrimAtPath("/World/Robot/joint1")
    assert joint.GetAttribute("state:angular:physics:position").Get() == pytest.approx(
        math.degrees(0.7), rel=1e-5
    )


def test_target_sink_replaces_teleport(p1):
    stage, robot, link = p1
    sent = []
    poser = RobotPoser(stage, robot, robot, link, target_sink=lambda v, p: sent.append((v, p)))
    layer_before = stage.GetRootLayer().ExportToString()
    poser.apply_pose({"/World/Robot/joint1": 0.3})
    assert len(sent) == 1 and sent[0][1] == ["/World/Robot/joint1"]
    assert np.allclose(sent[0][0], [0.3])
    assert stage.GetRootLayer().ExportToString() == layer_before

    class Engine:
        def __init__(self):
            self.calls = []

        def set_joint_targets(self, values, names_or_indices=None):
            self.calls.append((np.asarray(values), list(names_or_indices)))

    engine = Engine()
    poser.attach_engine(engine)
    poser.apply_pose({"/World/Robot/joint1": -0.2})
    assert engine.calls[0][1] == ["/World/Robot/joint1"]
    assert np.allclose(engine.calls[0][0], [-0.2])
    apply_joint_state(
        stage, robot, {"/World/Robot/joint1": 0.1}, target_sink=lambda v, p: sent.append((v, p))
    )
    apply_joint_state_anchored(
        stage,
        robot,
        {"/World/Robot/joint1": 0.1},
        link,
        target_sink=lambda v, p: sent.append((v, p)),
    )
    assert len(sent) == 3
    assert stage.GetRootLayer().ExportToString() == layer_before


def test_apply_pose_by_target_requires_robot_api():
    stage = Usd.Stage.CreateInMemory()
    prim = UsdGeom.Xform.Define(stage, "/R").GetPrim()
    assert not RobotPoser.apply_pose_by_target(stage, prim, prim, prim, Transform()).success
    stage2, robot, link = make_p1()
    result = RobotPoser.apply_pose_by_target(
        stage2, robot, robot, link, Transform([1, 0, 0], quat_from_axis_angle([1, 0, 0], -0.4))
    )
    assert result.success
    joint = stage2.GetPrimAtPath("/World/Robot/joint1")
    assert joint.GetAttribute("state:angular:physics:position").Get() == pytest.approx(
        math.degrees(-0.4), rel=1e-5
    )


def test_empty_chain_and_fixed_joint_seeding(p1):
    stage, robot, link = p1
    poser = RobotPoser(stage, robot)
    assert poser.chain is None and not poser.solve_ik(Transform()).success
    poser.set_chain(link, link)
    assert not poser.solve_ik(Transform()).success
    # a locked joint keeps the cached value on the ladder path (never a ladder value)
    poser.set_chain(robot, link)
    poser.set_seed([0.2])
    result = poser.solve_ik(
        Transform([1, 0, 0], quat_from_axis_angle([1, 0, 0], 1.0)),
        joint_fixed={"/World/Robot/joint1": True},
    )
    assert not result.success
    assert result.joints["/World/Robot/joint1"] == pytest.approx(0.2)
    assert result.joint_fixed == {"/World/Robot/joint1": True}


def test_start_pose_follows_stage_changes():
    from tests.helpers.kinematics import build_hand_stage

    stage = build_hand_stage()
    robot = stage.GetPrimAtPath("/World/Robot")
    l1 = stage.GetPrimAtPath("/World/Robot/l1")
    tool = stage.GetPrimAtPath("/World/Robot/l5/tool")
    apply_joint_state(stage, robot, {"/World/Robot/j1": 0.0})
    poser = RobotPoser(stage, robot, l1, tool)
    # a reachable target in the robot frame: the tool pose for some configuration
    full = RobotPoser(stage, robot, stage.GetPrimAtPath("/World/Robot/base"), tool).chain
    base_in_robot = np.linalg.inv(_world(stage, "/World/Robot")) @ _world(
        stage, "/World/Robot/base"
    )
    for j1 in (0.0, 0.6):
        q = np.array([j1, 0.3, 0.1, -0.2])
        T = Transform(*full.fk(q))
        target = Transform.from_matrix(base_in_robot @ T.matrix())
        apply_joint_state(stage, robot, {"/World/Robot/j1": j1})  # moves the chain start
        result = poser.solve_ik(target, seed=[0.2, 0.05, -0.1])
        assert result.success, j1
        poser.apply_pose(result)
        tool_in_robot = np.linalg.inv(_world(stage, "/World/Robot")) @ _world(
            stage, "/World/Robot/l5/tool"
        )
        assert np.abs(tool_in_robot - target.matrix()).max() < 1e-6


def _world(stage, path):
    return np.array(
        UsdGeom.Xformable(stage.GetPrimAtPath(path)).ComputeLocalToWorldTransform(
            Usd.TimeCode.Default()
        )
    ).T


def test_batch_cold_start_keeps_locked_joints(p1):
    stage, robot, link = p1
    poser = RobotPoser(stage, robot, robot, link)
    poser.set_seed([0.3])
    target_q = quat_from_axis_angle([1, 0, 0], 1.0)
    q, ok = poser.solve_ik_batch([[1.0, 0.0, 0.0]], [target_q], joint_fixed=[True])
    assert not ok[0] and q[0, 0] == pytest.approx(0.3)
    q, ok = poser.solve_ik_batch([[1.0, 0.0, 0.0]], [target_q])
    assert ok[0] and q[0, 0] == pytest.approx(1.0, abs=1e-6)


def test_isaac_compat_names_port_a_script(tmp_path):
    import runtime.compat.isaac as robot_poser

    stage, robot, link = make_p1()
    assert robot_poser.validate_robot_schema(robot)
    poser = robot_poser.RobotPoser(stage, robot, robot, link)
    target = robot_poser.Transform([1, 0, 0], quat_from_axis_angle([1, 0, 0], 0.25))
    result = poser.solve_ik(target)
    assert isinstance(result, robot_poser.PoseResult) and result.success
    assert robot_poser.store_named_pose(stage, robot, "p", result)
    assert robot_poser.list_named_poses(stage, robot) == ["p"]
    assert robot_poser.apply_pose_by_name(stage, robot, "p")
    assert robot_poser.export_poses(stage, robot, str(tmp_path / "p.json"))
    assert robot_poser.delete_named_pose(stage, robot, "p")
    assert robot_poser.import_poses(stage, robot, str(tmp_path / "p.json")) == 1
    assert robot_poser.get_named_pose(stage, robot, "p").success
    assert robot_poser.IKSolverRegistry.default_name() == "lm"
    assert isinstance(robot_poser.IKSolverRegistry.get(), robot_poser.IKSolver)
    e = robot_poser.pose_error(
        target, robot_poser.KinematicChain(stage, robot, robot, link).compute_fk([0.25])[0]
    )
    assert np.allclose(e, 0.0, atol=1e-12)
    robot_poser.apply_joint_state(stage, robot, {"/World/Robot/joint1": 0.1})
    robot_poser.apply_joint_state_anchored(stage, robot, {"/World/Robot/joint1": 0.2}, robot)
    joint = stage.GetPrimAtPath("/World/Robot/joint1")
    assert joint.GetAttribute("state:angular:physics:position").Get() == pytest.approx(
        math.degrees(0.2), rel=1e-5
    )


def test_poser_is_collectable_and_listener_revoked(p1):
    import gc
    import weakref

    stage, robot, link = p1
    poser = RobotPoser(stage, robot, robot, link)
    ref = weakref.ref(poser)
    del poser
    gc.collect()
    assert ref() is None
    stage.GetPrimAtPath("/World/Robot/Link1").CreateAttribute(
        "custom:x", Sdf.ValueTypeNames.Float
    ).Set(1.0)  # notices after collection are harmless
