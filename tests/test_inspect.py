"""``simrt inspect`` and ``simrt --help`` as a new user runs them.

Expected values are the ones authored in ``scenes/simple_arm.usda`` (converted with the spec's
unit rules), not numbers produced by our code.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from runtime.cli import main

ROOT = Path(__file__).parent.parent
SCENE = ROOT / "scenes" / "simple_arm.usda"
FIXTURE = Path(__file__).parent / "fixtures" / "isaac_style.usda"


def _simrt() -> list[str]:
    exe = Path(sys.executable).parent / "simrt"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("simrt")
    return [found] if found else [sys.executable, "-m", "runtime.cli"]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*_simrt(), *args], capture_output=True, text=True, cwd=ROOT)


def test_help_lists_commands():
    proc = _run("--help")
    assert proc.returncode == 0, proc.stderr
    for command in ("inspect", "run", "schema"):
        assert command in proc.stdout
    assert "Traceback" not in proc.stderr


def test_inspect_help():
    proc = _run("inspect", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "--json" in proc.stdout


def test_inspect_simple_arm_text():
    proc = _run("inspect", "scenes/simple_arm.usda")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Robot /World/SimpleArm" in out
    assert "robot type: Manipulator" in out
    assert "license: Apache-2.0" in out
    # PrintRobotTree format (docs/guides/inspect-and-schema.md#link-tree): two spaces per level,
    # pre-order
    tree = out.split("Link tree:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert tree == ["base", "  link1", "    link2", "      link3", "        link4"]
    dof_rows = out.split("DOFs", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    assert [row.split()[1] for row in dof_rows] == [
        "shoulder_pan",
        "shoulder_lift",
        "elbow",
        "wrist_slide",
    ]
    assert dof_rows[0].split()[4:6] == ["-170", "170"]
    for sensor in ("range_finder", "imu", "contact_sensor"):
        assert sensor in out
    assert "parent body /World/SimpleArm/link4" in out
    assert proc.stderr == ""


def test_inspect_simple_arm_json():
    proc = _run("inspect", str(SCENE), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["stage"]["meters_per_unit"] == 1.0 and data["stage"]["up_axis"] == "Z"
    (robot,) = data["robots"]
    assert robot["namespace"] == "simple_arm"
    dofs = robot["dofs"]
    assert [d["index"] for d in dofs] == [0, 1, 2, 3]
    authored = {"shoulder_pan": 170.0, "shoulder_lift": 90.0, "elbow": 135.0}
    for d in dofs[:3]:
        assert d["type"] == "revolute"
        assert d["usd_upper"] == pytest.approx(authored[d["name"]])
        assert d["upper"] == pytest.approx(math.radians(authored[d["name"]]))
    assert dofs[3]["token"] == "TransZ" and dofs[3]["upper"] == pytest.approx(0.03)
    assert [s["name"] for s in robot["sites"]] == ["ee"]
    assert robot["named_poses"][0]["joint_values"] == [0.0, 30.0, 60.0, 0.0]
    sensors = {s["type"]: s for s in data["sensors"]}
    assert sensors["IsaacContactSensor"]["parent_body"] == "/World/SimpleArm/link4"
    assert sensors["IsaacImuSensor"]["parent_body"] == "/World/SimpleArm/link3"
    ray = sensors["IsaacRaycastSensor"]
    assert ray["num_rays"] == 4 and ray["disabled_reason"] is None
    assert ray["ray_time_offsets"] == pytest.approx([0, 0.01, 0.02, 0.03])
    assert robot["tree"]["name"] == "base"


def test_inspect_fixture_in_process(capsys):
    assert main(["inspect", str(FIXTURE), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (robot,) = data["robots"]
    assert robot["robot_type"] == "Mobile Manipulators"
    assert data["surface_grippers"][0]["status"] == "Closed"
    static = next(s for s in data["sensors"] if s["path"] == "/World/StaticRay")
    assert "rayOrigins length (0) != numRays (1)" in static["disabled_reason"]
    names = [j["name"] for j in robot["joints"]]
    assert "ShoulderJoint" in names and "slider" in names


def _one_line_error(capsys, argv) -> str:
    code = main(argv)
    captured = capsys.readouterr()
    assert code != 0
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert "Traceback" not in captured.err
    return lines[0]


def test_missing_file(capsys, tmp_path):
    line = _one_line_error(capsys, ["inspect", str(tmp_path / "nope.usd")])
    assert "nope.usd" in line and "no such file" in line


def test_not_usd_suffix(capsys, tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    line = _one_line_error(capsys, ["inspect", str(bad)])
    assert "not a USD file" in line


def test_garbage_usda(capsys, tmp_path):
    bad = tmp_path / "broken.usda"
    bad.write_text("this is not usda\n")
    line = _one_line_error(capsys, ["inspect", str(bad)])
    assert "broken.usda" in line and "cannot read as USD" in line


def test_schema_error_names_prim_and_attribute(capsys, tmp_path):
    bad = tmp_path / "bad_token.usda"
    bad.write_text(
        '#usda 1.0\ndef Xform "R" (prepend apiSchemas = ["IsaacRobotAPI"])\n{\n'
        '    token isaac:robotType = "Robot Arm"\n}\n'
    )
    line = _one_line_error(capsys, ["inspect", str(bad)])
    assert "/R.isaac:robotType" in line and "'Robot Arm'" in line


def test_contact_sensor_without_body_fails(capsys, tmp_path):
    bad = tmp_path / "no_body.usda"
    bad.write_text('#usda 1.0\ndef Xform "X"\n{\n    def IsaacContactSensor "C"\n    {\n    }\n}\n')
    line = _one_line_error(capsys, ["inspect", str(bad)])
    assert "/X/C.physics:rigidBodyEnabled" in line


def test_usd_errors_are_one_line_in_a_subprocess(tmp_path):
    bad = tmp_path / "broken.usda"
    bad.write_text('#usda 1.0\ndef Xform "A" {\n')
    proc = _run("inspect", str(bad))
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("simrt inspect: error:")
    assert "Traceback" not in proc.stderr


def test_composition_errors_are_reported(capsys, tmp_path):
    scene = tmp_path / "ref.usda"
    scene.write_text('#usda 1.0\ndef Xform "A" (references = @missing.usda@)\n{\n}\n')
    assert main(["inspect", str(scene), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert any("missing.usda" in e for e in data["composition_errors"])
    assert data["robots"] == [] and data["sensors"] == []


def test_raw_conversion_without_robot_api_matches_the_urdf(capsys):
    """Converted Panda (no IsaacRobotAPI): joints and SI limits equal Pinocchio's URDF model."""
    pin = pytest.importorskip("pinocchio")
    asset = ROOT / "tests" / "assets" / "robots" / "panda" / "panda.usda"
    erd = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix" / "share" / "example-robot-data"
    urdf = erd / "robots" / "panda_description" / "urdf"
    if not asset.exists() or not (urdf / "panda.urdf").exists():
        pytest.skip("converted Panda or example-robot-data not available")
    assert main(["inspect", str(asset), "--json"]) == 0
    captured = capsys.readouterr()
    assert "missing from schema relationship" not in captured.err
    (robot,) = json.loads(captured.out)["robots"]
    assert robot["kind"] == "articulation"
    model = pin.buildModelFromUrdf(str(urdf / "panda.urdf"))
    movable = {j["name"]: j for j in robot["joints"] if j["type"] in ("revolute", "prismatic")}
    assert set(movable) == set(model.names[1:])
    for name in movable:
        q = model.joints[model.getJointId(name)].idx_q
        lower, upper = movable[name]["limits_si"]
        assert lower == pytest.approx(model.lowerPositionLimit[q], abs=1e-5), name
        assert upper == pytest.approx(model.upperPositionLimit[q], abs=1e-5), name


def test_robot_option_and_d6_axes(capsys):
    assert main(["inspect", str(FIXTURE), "--json", "--robot", "/World/Robot"]) == 0
    (robot,) = json.loads(capsys.readouterr().out)["robots"]
    d6 = next(j for j in robot["joints"] if j["path"] == "/World/Robot/joints/wrist_d6")
    assert [a["token"] for a in d6["axes"] if not a["locked"]] == ["RotX", "RotZ"]
    rot_x = next(a for a in d6["axes"] if a["token"] == "RotX")
    assert rot_x["usd_limits"] == [-30.0, 30.0]
    assert rot_x["limits_si"] == pytest.approx([-math.pi / 6, math.pi / 6])
    line = _one_line_error(capsys, ["inspect", str(FIXTURE), "--robot", "/World/Nope"])
    assert "/World/Nope" in line
