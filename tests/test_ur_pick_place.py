"""Pick and place with a UR5e and a surface gripper (``scenes/ur5e_suction.usda``).

Driven from Python exactly as a user would: ``MujocoEngine`` + ``SurfaceGripperRuntime``
stepped together, IK waypoints from ``RobotPoser`` (robot-base frame, tool pointing down)
interpolated into joint targets. Positions are MuJoCo's own body poses. The light box is
carried 0.5 m and set down; a box heavier than the shear limit allows is dropped when the
carry starts (its inertia loads the grip sideways: ``mass x acceleration > shearForceLimit``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")

from pxr import Gf, Usd  # noqa: E402

from runtime.engine import MujocoEngine  # noqa: E402
from runtime.engine.surface_gripper import SurfaceGripperRuntime  # noqa: E402

SCENES = Path(__file__).resolve().parents[1] / "scenes"
sys.path.insert(0, str(SCENES))
import build_ur_gripper_scene as S  # noqa: E402

TOP = S.TABLE_TOP_Z + S.BOX_SIZE
# (name, tool-tip target in the robot-base frame, move [s], hold [s], gripper action after);
# the hold lets the position servos (time constant ~0.2 s) settle on the waypoint
PLAN = [
    ("descend", (*S.PICK, TOP + S.HOVER), 0.8, 0.6, "close"),
    ("lift", (*S.PICK, TOP + S.APPROACH), 0.6, 0.0, None),
    ("carry", (*S.PLACE, TOP + S.APPROACH), 0.5, 0.5, None),
    ("lower", (*S.PLACE, TOP + 0.003), 0.6, 0.6, "open"),  # held box 1 mm above the table
    ("retreat", (*S.PLACE, TOP + S.APPROACH), 0.4, 0.0, None),
]


def run(box_mass: float | None = None) -> dict:
    """Run the plan; returns per-segment box positions, statuses and the release step."""
    stage = Usd.Stage.Open(str(S.SCENE))
    if box_mass is not None:
        prim = stage.GetPrimAtPath(S.BOX)
        prim.GetAttribute("physics:mass").Set(box_mass)
        side = S.BOX_SIZE**2 * box_mass / 6.0
        prim.GetAttribute("physics:diagonalInertia").Set(Gf.Vec3f(side, side, side))
    engine = MujocoEngine(stage, robot_prim=S.ROBOT)
    grippers = SurfaceGripperRuntime(engine)
    poser = S.make_poser(stage)
    paths = [j.prim_path for j in poser.joints]
    d = engine.data
    box = engine.model.body(S.BOX).id
    q = np.array([d.qpos[b.qpos_adr] for b in engine.dofs])  # authored start pose
    engine.set_joint_targets(q, paths)
    out: dict = {"start": d.xpos[box].copy(), "segments": {}, "release": None, "velocity": []}
    box_dof = engine.model.jnt_dofadr[engine.model.body_jntadr[box]]
    step = 0

    def advance(n: int, q_from=None, q_to=None) -> None:
        nonlocal step
        for k in range(n):
            if q_to is not None:
                s = 0.5 - 0.5 * np.cos(np.pi * (k + 1) / n)  # smooth start and stop
                engine.set_joint_targets(q_from + s * (q_to - q_from), paths)
            engine.step()
            grippers.update()
            step += 1
            out["velocity"].append(d.qvel[box_dof : box_dof + 3].copy())  # free joint: world
            if out["release"] is None and out.get("closed_at") is not None:
                if (
                    S.BOX not in grippers.get_gripped_objects(S.GRIPPER)
                    and step > out["closed_at"] + 3
                ):
                    out["release"] = step

    advance(100)  # settle at the start pose
    seed = q
    for name, target, duration, hold, action in PLAN:
        goal = S.solve_tool_pose(poser, target, seed)
        advance(int(duration / engine.dt), seed, goal)
        out["segments"][name] = (step, d.xpos[box].copy(), grippers.get_gripper_status(S.GRIPPER))
        advance(int(hold / engine.dt))
        out["segments"][name + "_held"] = (step, d.xpos[box].copy())
        seed = goal
        if action == "close":
            assert grippers.close_gripper(S.GRIPPER)
            out["closed_at"] = step
            advance(25)
            out["after_close"] = (
                grippers.get_gripper_status(S.GRIPPER),
                grippers.get_gripped_objects(S.GRIPPER),
            )
        elif action == "open":
            assert grippers.open_gripper(S.GRIPPER)
    advance(250)  # let the box come to rest
    out["end"] = d.xpos[box].copy()
    out["end_speed"] = float(np.linalg.norm(d.qvel[box_dof : box_dof + 3]))
    out["dt"] = engine.dt
    out["status"] = grippers.get_gripper_status(S.GRIPPER)
    return out


def test_pick_and_place_moves_the_box_and_sets_it_down():
    out = run()
    assert out["after_close"] == ("Closed", [S.BOX])
    lift_step, at_lift, status = out["segments"]["lift"]
    assert status == "Closed"
    assert at_lift[2] > out["start"][2] + 0.08  # carried up with the cup
    _, _, status = out["segments"]["carry"]
    _, at_carry = out["segments"]["carry_held"]
    assert status == "Closed" and np.linalg.norm(at_carry[:2] - np.array(S.PLACE)) < 0.02
    assert out["release"] is not None and out["release"] > out["segments"]["lower"][0]
    moved = np.linalg.norm(out["end"][:2] - out["start"][:2])
    assert moved >= 0.3
    assert np.linalg.norm(out["end"][:2] - np.array(S.PLACE)) < 0.01
    assert out["end"][2] == pytest.approx(S.TABLE_TOP_Z + S.BOX_SIZE / 2, abs=0.005)  # on the table
    assert out["end_speed"] < 0.01 and out["status"] == "Open"


HEAVY = 2.5  # kg: lifts fine (coaxial unlimited), but the carry needs > 10 N sideways


def test_box_heavier_than_the_shear_limit_is_dropped_when_the_carry_starts():
    out = run(box_mass=HEAVY)
    assert out["after_close"] == ("Closed", [S.BOX])
    lift_end = out["segments"]["lift"][0]
    carry_end = out["segments"]["carry"][0]
    release = out["release"]
    # held through closing and the vertical lift (the weight is coaxial, coaxial unlimited) ...
    assert release is not None and release > lift_end
    # ... and let go in the first half of the carry, where the horizontal acceleration peaks
    assert release <= lift_end + (carry_end - lift_end) // 2
    # independent check (Newton, from MuJoCo's box velocities): the box's horizontal inertia
    # force reaches the limit when it is let go, and stays below it while it is held
    v = np.array(out["velocity"])
    inertia = HEAVY * np.linalg.norm(np.diff(v[:, :2], axis=0), axis=1) / out["dt"]  # step k+1
    at_release = inertia[release - 2]  # acceleration over the step the force was read from
    assert at_release > 0.8 * S.SHEAR_LIMIT
    assert np.all(inertia[lift_end : release - 2] < 1.2 * S.SHEAR_LIMIT)
    assert np.linalg.norm(out["end"][:2] - np.array(S.PLACE)) > 0.03  # not delivered


def test_readme_start_link_relative_target_conversion():
    """README: IK targets are in the robot-base frame even when the chain starts elsewhere."""
    from runtime.compat.isaac import prim_pose_in_robot_frame
    from runtime.kinematics.poser import RobotPoser

    stage = Usd.Stage.Open(str(S.SCENE))
    robot = stage.GetPrimAtPath(S.ROBOT)
    start = stage.GetPrimAtPath(S.ROBOT + "/Geometry/base/shoulder_link/upper_arm_link")
    poser = RobotPoser(stage, robot, start, stage.GetPrimAtPath(S.TOOL_TIP))
    q_true = np.array([1.2, -1.0, -1.5, 0.4])  # elbow, wrist_1, wrist_2, wrist_3
    target_in_start, _ = poser.chain.compute_fk(q_true)  # chain FK is start-link relative
    # the README's two lines
    result = poser.solve_ik(prim_pose_in_robot_frame(robot, start) @ target_in_start)
    assert result.success
    q = np.array([result.joints[j.prim_path] for j in poser.joints])
    reached, _ = poser.chain.compute_fk(q)
    np.testing.assert_allclose(reached.t, target_in_start.t, atol=1e-4)
    # passing the start-relative target unconverted "succeeds" somewhere else
    wrong = poser.solve_ik(target_in_start)
    if wrong.success:
        q = np.array([wrong.joints[j.prim_path] for j in poser.joints])
        assert np.linalg.norm(poser.chain.compute_fk(q)[0].t - target_in_start.t) > 0.05
