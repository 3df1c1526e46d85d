"""``simrt run scenes/ur5e_suction.usda`` performs the pick-and-place its settings carry.

The scene's PhysicsScene ``customData["simrt"]`` holds the plan (IK waypoints of the tool
tip with its orientation, gripper close and open times; scenes/build_ur_gripper_scene.py
writes it). The shipped command is run as a user runs it (the ``simrt`` CLI, a separate
process); the recording's MuJoCo body poses and gripper status say what happened.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")

from pxr import Usd  # noqa: E402

from runtime.recording import load_recording  # noqa: E402
from runtime.run.config import read_scene_settings  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SCENES = REPO / "scenes"
sys.path.insert(0, str(SCENES))
import build_ur_gripper_scene as S  # noqa: E402


def test_scene_settings_carry_the_plan():
    settings = read_scene_settings(Usd.Stage.Open(str(S.SCENE)))
    targets = settings["ik_targets"]
    assert len(targets) == len(S.PLAN) and {t.link for t in targets} == {S.TOOL_TIP}
    assert all(t.orientation == pytest.approx(S.TOOL_DOWN) for t in targets)
    assert [(a.action, a.time) for a in settings["gripper_actions"]] == [
        ("close", S.CLOSE_AT),
        ("open", S.OPEN_AT),
    ]


def test_simrt_run_picks_the_box_and_places_it_half_a_metre_away(tmp_path):
    out = tmp_path / "pick.zarr"
    simrt = Path(sys.executable).with_name("simrt")
    done = subprocess.run(
        [str(simrt), "run", str(S.SCENE), "--out", str(out), "--no-progress"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    # the summary says when the gripper closed and opened
    assert f"gripper {S.GRIPPER}: close at t = {S.CLOSE_AT:.3f} s" in done.stdout
    assert f"gripper {S.GRIPPER}: open at t = {S.OPEN_AT:.3f} s" in done.stdout

    rec = load_recording(out)
    time = rec.time
    paths = rec.channels["bodies.positions"].attrs["body_paths"]
    box = rec.data["bodies.positions"][:, paths.index(S.BOX)]
    status = rec.data[f"{S.GRIPPER}.status_code"]
    gripped = rec.data[f"{S.GRIPPER}.gripped"][:, paths.index(S.BOX)]
    dt = float(time[1] - time[0])

    # closed, and holding the box, from the close through the carry to the open
    carry = (time > S.CLOSE_AT + 0.05) & (time < S.OPEN_AT - 1e-9)
    assert (status[carry] == 2).all() and gripped[carry].all()
    assert (status[time < S.CLOSE_AT - 1e-9] == 0).all()
    assert (status[time > S.OPEN_AT + dt] == 0).all() and not gripped[-1]
    lifted = box[(time > 2.5) & (time < 3.2), 2]
    assert lifted.min() > box[0, 2] + 0.1  # carried through the air, not pushed

    moved = float(np.linalg.norm(box[-1, :2] - box[0, :2]))
    assert moved >= 0.3
    assert moved == pytest.approx(0.5, abs=0.01)  # PICK -> PLACE
    np.testing.assert_allclose(box[-1, :2], S.PLACE, atol=0.01)
    assert box[-1, 2] == pytest.approx(S.TABLE_TOP_Z + S.BOX_SIZE / 2, abs=0.005)  # on the table
    speed = np.linalg.norm(box[-1] - box[-11]) / (10 * dt)
    assert speed < 1e-3  # resting
