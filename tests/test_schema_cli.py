"""``simrt schema apply|validate`` on small files and a converted UR10."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pxr import Sdf, Usd, UsdPhysics

from runtime.cli import main
from tests.helpers.robot_schema import LINKS, f1, targets
from tests.helpers.urdf_tree import urdf_expected_tree

ASSETS = Path(__file__).parent / "assets" / "robots"


def _f1_file(tmp_path: Path) -> Path:
    stage = f1("revolute")
    stage.SetDefaultPrim(stage.GetPrimAtPath("/World"))
    path = tmp_path / "robot.usda"
    stage.GetRootLayer().Export(str(path))
    return path


def test_apply_with_explicit_layer_and_robot(tmp_path, capsys):
    asset = _f1_file(tmp_path)
    layer = tmp_path / "schema" / "robot_schema.usda"
    argv = ["schema", "apply", str(asset), "--robot", "/World/Robot", "--layer", str(layer)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("Robot\n  Link1\n\n")
    assert "DOF table (1):" in out and "joint1" in out
    assert layer.is_file()
    assert "schema/robot_schema.usda" in asset.read_text()
    # no temporary files left behind
    assert sorted(p.name for p in layer.parent.iterdir()) == ["robot_schema.usda"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["robot.usda", "schema"]
    # all schema opinions are in the schema layer
    schema_layer = Sdf.Layer.FindOrOpen(str(layer))
    assert schema_layer.GetRelationshipAtPath("/World/Robot." + LINKS)
    assert "IsaacRobotAPI" not in asset.read_text()
    # re-applying does not add the sublayer twice
    assert main(argv) == 0
    assert asset.read_text().count("robot_schema.usda") == 1


def test_apply_no_sublayer_leaves_asset_untouched(tmp_path, capsys):
    asset = _f1_file(tmp_path)
    before = asset.read_bytes()
    assert main(["schema", "apply", str(asset), "--robot", "/World/Robot", "--no-sublayer"]) == 0
    assert asset.read_bytes() == before
    assert (tmp_path / "configuration" / "robot_robot_schema.usda").is_file()


def test_validate_reports_invalid_targets_and_exits_nonzero(tmp_path, capsys):
    asset = _f1_file(tmp_path)
    assert main(["schema", "apply", str(asset), "--robot", "/World/Robot"]) == 0
    capsys.readouterr()
    assert main(["schema", "validate", str(asset)]) == 0
    assert capsys.readouterr().out.strip().endswith("OK")
    # add a dangling link target and a non-joint joint target in the asset's root layer
    stage = Usd.Stage.Open(str(asset))
    robot = stage.GetPrimAtPath("/World/Robot")
    robot.GetRelationship(LINKS).AddTarget("/World/Robot/GhostLink")
    robot.GetRelationship("isaac:physics:robotJoints").AddTarget("/World/Robot/Link1")
    stage.GetRootLayer().Save()
    assert main(["schema", "validate", str(asset)]) == 1
    out = capsys.readouterr().out
    expected = "/World/Robot.isaac:physics:robotLinks: target /World/Robot/GhostLink does not exist"
    assert expected in out
    assert "/World/Robot/Link1" in out and "is not a joint" in out


def test_validate_without_robot_api_fails_with_clear_message(tmp_path, capsys):
    asset = _f1_file(tmp_path)
    assert main(["schema", "validate", str(asset)]) == 1
    assert "no prim carries IsaacRobotAPI" in capsys.readouterr().err


def test_validate_reports_bad_dof_tokens(tmp_path, capsys):
    asset = _f1_file(tmp_path)
    assert main(["schema", "apply", str(asset), "--robot", "/World/Robot"]) == 0
    stage = Usd.Stage.Open(str(asset))
    d6 = UsdPhysics.Joint.Define(stage, "/World/Robot/d6")
    d6.CreateBody0Rel().SetTargets(["/World/Robot/Link1"])
    d6.CreateBody1Rel().SetTargets(["/World/Robot"])
    d6.GetPrim().CreateAttribute(
        "isaac:physics:DofOffsetOpOrder", Sdf.ValueTypeNames.TokenArray
    ).Set(["Bogus"])
    stage.GetRootLayer().Save()
    capsys.readouterr()
    assert main(["schema", "validate", str(asset)]) == 1
    out = capsys.readouterr().out
    assert "/World/Robot/d6.isaac:physics:DofOffsetOpOrder" in out and "Bogus" in out


def test_missing_file_is_a_one_line_error(tmp_path, capsys):
    assert main(["schema", "apply", str(tmp_path / "nope.usda")]) == 1
    err = capsys.readouterr().err
    assert "nope.usda" in err and "Traceback" not in err


def test_console_script_on_ur10(tmp_path):
    shutil.copytree(ASSETS / "ur10", tmp_path / "ur10")
    asset = tmp_path / "ur10" / "ur10.usda"
    proc = subprocess.run(
        [sys.executable, "-m", "runtime.cli", "schema", "apply", str(asset), "--sites", "inline"],
        capture_output=True,
        text=True,
        check=True,
    )
    tree_text = proc.stdout.split("\n\n", 1)[0] + "\n"
    assert tree_text == urdf_expected_tree(ASSETS / "ur10/source/ur10_robot.urdf")
    assert tree_text.splitlines()[-1] == " " * 14 + "ee_link"
    # DOF lines list the URDF's movable joints in order (Pinocchio's joint order)
    pin = pytest.importorskip("pinocchio")
    model = pin.buildModelFromUrdf(str(ASSETS / "ur10/source/ur10_robot.urdf"))
    dof_lines = proc.stdout.split("DOF table (6):\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split()[1] for line in dof_lines] == list(model.names)[1:]
    stage = Usd.Stage.Open(str(asset))
    links = targets(stage.GetDefaultPrim(), LINKS)
    # sites inline: tool0 (a URDF frame) right after wrist_3_link
    i = next(k for k, t in enumerate(links) if t.endswith("/wrist_3_link"))
    assert links[i + 1].endswith("/tool0")
    assert Usd.Stage.Open(str(asset)).GetPrimAtPath(links[i + 1]).HasAPI("IsaacSiteAPI")
