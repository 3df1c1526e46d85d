"""`simrt run` with surface grippers: scheduled actions and the recorded gripper state.

The robot is put at the pick pose by ``setup`` (joint positions and drive targets from IK,
as ``tests/test_ur_pick_place.py`` does), the gripper closes at t = 0.05 s by a scheduled
action. Oracle: MuJoCo's own weld switches (``data.eq_active``) and the box's world position
read in ``on_step``; the recorded ``status_code`` / ``gripped`` rows must agree step by step.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")

from runtime.cli import main  # noqa: E402
from runtime.recording import load_recording  # noqa: E402
from runtime.run.grippers import parse_gripper_action  # noqa: E402
from runtime.run.loop import run_scene  # noqa: E402

SCENES = Path(__file__).resolve().parents[1] / "scenes"
sys.path.insert(0, str(SCENES))
import build_ur_gripper_scene as S  # noqa: E402

TOP = S.TABLE_TOP_Z + S.BOX_SIZE


def _at_pick_pose(engine) -> None:
    poser = S.make_poser(engine.stage)
    goal = S.solve_tool_pose(poser, (*S.PICK, TOP + S.HOVER), np.array(S.IK_SEED))
    paths = [j.prim_path for j in poser.joints]
    for binding in engine.dofs:
        if binding.joint_path in paths:
            engine.data.qpos[binding.qpos_adr] = goal[paths.index(binding.joint_path)]
    engine.set_joint_targets(goal, paths)


def test_scheduled_close_grips_the_box_and_is_recorded_every_step(tmp_path):
    welds, lifted = [], []

    def watch(k, engine, sensors, state):
        welds.append(bool(engine.data.eq_active.any()))
        lifted.append(float(engine.data.xpos[engine.model.body(S.BOX).id][2]))

    result = run_scene(
        str(S.SCENE),
        steps=120,
        out=tmp_path / "grip.zarr",
        setup=_at_pick_pose,
        ik_targets=[],  # the scene's own pick-and-place plan replaced: hold the pick pose
        gripper_actions=[f"{S.GRIPPER}=close@0.05"],
        on_step=watch,
    )
    rec = load_recording(tmp_path / "grip.zarr")
    status = rec.data[f"{S.GRIPPER}.status_code"]
    gripped = rec.data[f"{S.GRIPPER}.gripped"]
    body_paths = rec.channels[f"{S.GRIPPER}.gripped"].attrs["body_paths"]
    box = body_paths.index(S.BOX)
    closed = np.flatnonzero(status == 2)
    assert closed.size and rec.time[closed[0]] >= 0.05 - 1e-9
    assert (status[: closed[0]] == 0).all()  # open until the action
    np.testing.assert_array_equal(gripped[:, box], np.array(welds))  # the welds are the grip
    assert gripped[:, box].sum() > 50
    assert gripped.sum(axis=1).max() == 1  # only the box
    assert result.summary["grippers"][0]["action"] == "close"


@pytest.mark.parametrize(
    "text, problem",
    [
        ("/G=grab@1", "expected"),
        ("/G=open@contact", "only close"),
        ("/G=close@-1", ">= 0"),
        ("G=close@1", "expected"),
        ("/G=close@soon", "not a number"),
    ],
)
def test_bad_gripper_actions_are_clear_errors(text, problem):
    with pytest.raises(ValueError, match=problem):
        parse_gripper_action(text)


def test_cli_action_on_a_prim_that_is_no_gripper_is_one_line(capsys, tmp_path):
    code = main(
        ["run", str(S.SCENE), "--steps", "3", "--gripper", "/World/Box=close@0", "--no-progress"]
    )
    err = capsys.readouterr().err
    assert code == 1 and "/World/Box" in err and "IsaacSurfaceGripper" in err
    assert len(err.strip().splitlines()) == 1
