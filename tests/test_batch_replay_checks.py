"""Replay logs are checked like scenes: a bad log fails its episode with one line naming the
file, row and column, and is not retried (simple_arm: 4 joints, limits +-170 / +-90 /
+-135 deg and [-0.02, 0.03] m)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mujoco")

from runtime.batch.replay import LogError, check_log, read_log  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ARM = REPO / "scenes" / "simple_arm.usda"
JOINTS = ("shoulder_pan", "shoulder_lift", "elbow", "wrist_slide")
ROOT = "/World/SimpleArm/joints/"


@pytest.fixture(scope="module")
def robot():
    from runtime.kinematics.chain import KinematicChain
    from runtime.run.scene import find_robot
    from runtime.schema import open_stage
    from runtime.schema.dof import build_dof_table

    stage = open_stage(str(ARM))
    prim = find_robot(stage, None)
    return KinematicChain(stage, prim), build_dof_table(stage, prim)


def _csv(path: Path, header: list[str], rows: list[list[float]]) -> Path:
    lines = [",".join(header)] + [",".join(repr(float(v)) for v in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def _good(n: int = 4) -> list[list[float]]:
    return [[0.01 * k, 0.1, -0.2, 0.3, 0.01] for k in range(n)]


def _check(robot, path: Path, **options):
    from runtime.batch.replay import _joint_paths

    chain, table = robot
    log = read_log(path)
    return log, check_log(log, _joint_paths(chain, log.names, path), table, **options)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r[2].__setitem__(0, math.nan), "row 3, column 'time': time nan is not finite"),
        (lambda r: r[1].__setitem__(0, math.inf), "row 2, column 'time': time inf is not finite"),
        (lambda r: r[2].__setitem__(0, 0.0), "row 3, column 'time': 0.0 s does not increase"),
        (lambda r: r[1].__setitem__(2, math.nan), "row 2, column 'shoulder_lift': position nan"),
    ],
)
def test_times_and_values_must_be_finite_and_increasing(tmp_path, robot, edit, message):
    rows = _good()
    edit(rows)
    path = _csv(tmp_path / "log.csv", ["time", *JOINTS], rows)
    with pytest.raises(LogError, match=message) as error:
        _check(robot, path)
    assert str(path) in str(error.value) and "\n" not in str(error.value)
    assert LogError.retry is False


def test_duplicate_columns_are_refused(tmp_path, robot):
    path = _csv(tmp_path / "dup.csv", ["time", *JOINTS, "elbow"], [r + [0.0] for r in _good()])
    with pytest.raises(LogError, match="column 'elbow' appears twice \\(columns 4 and 6\\)"):
        _check(robot, path)
    header = ["time", *JOINTS, ROOT + "elbow"]
    path = _csv(tmp_path / "alias.csv", header, [r + [0.0] for r in _good()])
    with pytest.raises(LogError, match="columns 'elbow' and '/World/SimpleArm/joints/elbow'"):
        _check(robot, path)


def test_every_joint_needs_a_column_unless_held(tmp_path, robot):
    path = _csv(tmp_path / "one.csv", ["time", "elbow"], [[0.01 * k, 0.2] for k in range(3)])
    with pytest.raises(LogError, match="no column for joint shoulder_pan, shoulder_lift, wrist"):
        _check(robot, path)
    _, allowed = _check(robot, path, missing="hold")
    assert allowed["held"] == [ROOT + n for n in ("shoulder_pan", "shoulder_lift", "wrist_slide")]


def test_positions_beyond_the_limits_are_refused_or_clamped(tmp_path, robot):
    rows = _good()
    rows[1][1] = 1e300  # shoulder_pan: +-170 deg
    rows[3][4] = 0.05  # wrist_slide: [-0.02, 0.03]
    path = _csv(tmp_path / "far.csv", ["time", *JOINTS], rows)
    with pytest.raises(
        LogError, match="row 2, column 'shoulder_pan': position 1e\\+300 is outside"
    ):
        _check(robot, path)
    log, allowed = _check(robot, path, limits="clamp")
    assert allowed["clamped"] == {"shoulder_pan": 1, "wrist_slide": 1}
    assert log.positions[1, 0] == pytest.approx(math.radians(170.0))
    assert log.positions[3, 3] == pytest.approx(0.03)


def test_base_quaternions_must_be_unit(tmp_path, robot):
    base = ["base_px", "base_py", "base_pz", "base_qw", "base_qx", "base_qy", "base_qz"]
    rows = [r + [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0] for r in _good()]
    rows[2][-4:] = [0.0, 0.0, 0.0, 0.0]
    path = _csv(tmp_path / "q.csv", ["time", *JOINTS, *base], rows)
    with pytest.raises(LogError, match="row 3, columns 'base_qw'..'base_qz'.*not a unit"):
        _check(robot, path)
    rows[2][-4:] = [1.0000001, 0.0, 0.0, 0.0]  # (within 1e-3: normalised)
    log, _ = _check(robot, _csv(tmp_path / "q2.csv", ["time", *JOINTS, *base], rows))
    assert np.allclose(np.linalg.norm(log.base[:, 3:], axis=1), 1.0, atol=1e-15)


def test_a_bad_log_fails_its_episode_once_and_the_console_says_why(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    from runtime.batch import load_dataset
    from runtime.cli import main

    logs = tmp_path / "logs"
    logs.mkdir()
    _csv(logs / "a_good.csv", ["time", *JOINTS], _good(5))
    rows = _good(5)
    rows[3][0] = math.nan
    bad = _csv(logs / "b_bad.csv", ["time", *JOINTS], rows)
    shutil.copyfile(ARM, tmp_path / "arm.usda")
    spec = tmp_path / "replay.toml"
    spec.write_text('[replay]\nscene = "arm.usda"\nlogs = "logs"\n')
    code = main(["batch", str(spec), "--out", str(tmp_path / "ds"), "--workers", "0"])
    out = capsys.readouterr()
    assert code == 1
    manifest = {r["log"]: r for r in load_dataset(tmp_path / "ds").manifest.to_pylist()}
    row = manifest[str(bad)]
    assert row["status"] == "failed" and row["attempts"] == 1  # not retried
    assert f"{bad}: row 4, column 'time': time nan is not finite" in row["error"]
    assert manifest[str(logs / "a_good.csv")]["status"] == "done"
    assert f"first failure: episode 1: LogError: {bad}: row 4" in out.out + out.err
