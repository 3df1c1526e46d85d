"""Hostile USD input (issue 14): every unreadable or inconsistent scene gets one clear line.

Each case asserts the exact class of answer: exit code 1 with exactly one ``error:`` line on
stderr naming the file (and line:column where USD gives one) or the prim and attribute, or
exit 0 with a named warning. The commands run in-process through ``runtime.cli.main``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from runtime.errors import SchemaError
from runtime.schema import open_stage
from tests.helpers.hostile import SCENE, cli, one_error_line, variant  # noqa: E402, F401

ARM = "/World/SimpleArm"


# ------------------------------------------------------------------ unparsable files

_UNPARSABLE = {
    # name: (file name, content, expected message part, USD gives line:col)
    "syntax_error": (
        "bad.usda",
        '#usda 1.0\ndef Xform "A" {\n    float x = \n}\n',
        "Expected",
        True,
    ),
    "zero_byte_usda": ("empty.usda", "", "the file is empty (0 bytes)", False),
    "zero_byte_usdc": ("empty.usdc", "", "the file is empty (0 bytes)", False),
    "random_usdc": ("noise.usdc", None, "crate", False),
    "random_usda": ("noise.usda", None, "not a valid usda layer", False),
    "duplicate_prim": (
        "dup.usda",
        '#usda 1.0\ndef Xform "A" {\n}\ndef Xform "A" {\n}\n',
        "Duplicate prim 'A'",
        True,
    ),
    "duplicate_rel_targets": (
        "duprel.usda",
        '#usda 1.0\ndef Xform "A" {\n    rel r = [</A>, </A>]\n}\n',
        "Duplicate items exist for field 'targetPaths'",
        True,
    ),
    "prim_name_with_space": (
        "space.usda",
        '#usda 1.0\ndef Xform "A b" {\n}\n',
        "'A b' is not a valid prim name",
        True,
    ),
}

_COMMANDS = {
    "inspect": lambda f, tmp: ["inspect", str(f)],
    "schema": lambda f, tmp: ["schema", "validate", str(f)],
    "schema_apply": lambda f, tmp: ["schema", "apply", str(f), "--layer", str(tmp / "l.usda")],
    "physics": lambda f, tmp: [
        "physics",
        str(f),
        "--layer",
        str(tmp / "phys.usda"),
        "--rigid-body",
        "mujoco:gravcomp=1.0",
    ],
}


def _write(tmp_path: Path, case: str) -> tuple[Path, str, bool]:
    name, content, expected, positioned = _UNPARSABLE[case]
    path = tmp_path / name
    if content is None:
        path.write_bytes(bytes((i * 151 + 7) % 256 for i in range(4096)))
    else:
        path.write_text(content)
    return path, expected, positioned


@pytest.mark.parametrize("command", sorted(_COMMANDS))
@pytest.mark.parametrize("case", sorted(_UNPARSABLE))
def test_unparsable_usd_is_one_line_with_file_and_position(tmp_path, capsys, case, command):
    path, expected, positioned = _write(tmp_path, case)
    code, out, err = cli(capsys, *_COMMANDS[command](path, tmp_path))
    assert code == 1
    line = one_error_line(err, command.split("_")[0])
    assert path.name in line and expected in line
    assert ("cannot read as USD" in line) and ("Tf" not in line)
    if positioned:
        assert re.search(rf"{re.escape(path.name)}:\d+:\d+: cannot read as USD", line), line
    assert not (tmp_path / "l.usda").exists() and not (tmp_path / "phys.usda").exists()


@pytest.mark.parametrize("case", sorted(_UNPARSABLE))
def test_open_stage_raises_schema_error_never_tf(tmp_path, case):
    path, expected, _ = _write(tmp_path, case)
    with pytest.raises(SchemaError, match=re.escape(expected)):
        open_stage(path)


def test_open_stage_missing_directory_and_suffix(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        open_stage(tmp_path / "nope.usda")
    with pytest.raises(SchemaError, match="is a directory"):
        open_stage(tmp_path)
    text = tmp_path / "scene.txt"
    text.write_text("#usda 1.0\n")
    with pytest.raises(SchemaError, match=r"not a USD file \(suffix '.txt'\)"):
        open_stage(text)


def test_missing_referenced_robot_file_is_named(tmp_path, capsys):
    scene = tmp_path / "scene.usda"
    scene.write_text(
        '#usda 1.0\n(\n    defaultPrim = "World"\n)\ndef Xform "World"\n{\n'
        '    def Xform "Robot" (\n        prepend references = @./robot_gone.usda@\n    )\n'
        "    {\n    }\n}\n"
    )
    code, _, err = cli(capsys, "schema", "validate", str(scene))
    assert code == 1
    line = one_error_line(err, "schema")
    assert "robot_gone.usda" in line and "/World/Robot" in line and "composition error" in line
    assert "no prim carries IsaacRobotAPI" not in err
    # inspect lists the composition error instead of a bare "no robot"
    code, out, _ = cli(capsys, "inspect", str(scene))
    assert code == 0
    assert "composition error: Could not open asset" in out and "robot_gone.usda" in out
    assert "did not compose completely" in out


# ------------------------------------------------------------------ structure


def _body_edit(joint: str, slot: int, target: str) -> tuple[str, str]:
    """Replace the body ``slot`` target of one simple_arm joint (authored line by line)."""
    old = {
        ("shoulder_lift", 0): "rel physics:body0 = </World/SimpleArm/link1>",
        ("shoulder_lift", 1): "rel physics:body1 = </World/SimpleArm/link2>",
        ("wrist_slide", 1): "rel physics:body1 = </World/SimpleArm/link4>",
    }[(joint, slot)]
    return old, f"rel physics:body{slot} = {target}"


def test_joint_body1_target_missing_fails_validate(tmp_path, capsys):
    path = variant(tmp_path, _body_edit("shoulder_lift", 1, "</World/SimpleArm/nope>"))
    code, out, _ = cli(capsys, "schema", "validate", str(path))
    assert code == 1
    assert f"{ARM}/joints/shoulder_lift.physics:body1: target {ARM}/nope does not exist" in out
    assert out.strip().endswith("1 problem(s)")
    code, _, err = cli(capsys, "inspect", str(path))
    assert code == 1 and "shoulder_lift.physics:body1" in one_error_line(err, "inspect")


def test_joint_body0_equals_body1_fails_validate(tmp_path, capsys):
    path = variant(tmp_path, _body_edit("shoulder_lift", 1, "</World/SimpleArm/link1>"))
    code, out, _ = cli(capsys, "schema", "validate", str(path))
    assert code == 1
    assert "shoulder_lift.physics:body1: body0 and body1 are the same prim" in out
    code, _, err = cli(capsys, "inspect", str(path))
    assert code == 1 and "body0 and body1 are the same prim" in one_error_line(err, "inspect")


def test_joint_with_two_body_targets_fails_validate(tmp_path, capsys):
    path = variant(
        tmp_path,
        _body_edit("shoulder_lift", 1, "[</World/SimpleArm/link2>, </World/SimpleArm/link3>]"),
    )
    code, out, _ = cli(capsys, "schema", "validate", str(path))
    assert code == 1 and "shoulder_lift.physics:body1: 2 targets" in out


def test_zero_joint_frame_quaternion_fails_validate(tmp_path, capsys):
    old = (
        "rel physics:body1 = </World/SimpleArm/link2>\n"
        "                point3f physics:localPos0 = (0, 0, 0.05)\n"
        "                quatf physics:localRot0 = (1, 0, 0, 0)"
    )
    path = variant(tmp_path, (old, old.replace("(1, 0, 0, 0)", "(0, 0, 0, 0)")))
    code, out, _ = cli(capsys, "schema", "validate", str(path))
    assert code == 1 and "shoulder_lift.physics:localRot0: zero quaternion" in out


def test_link_with_two_parent_joints_reports_the_later_joint(tmp_path, capsys):
    # wrist_slide (listed last) gets link2 as its child: link2 then has two parent joints
    path = variant(tmp_path, _body_edit("wrist_slide", 1, "</World/SimpleArm/link2>"))
    code, out, _ = cli(capsys, "schema", "validate", str(path))
    assert code == 0
    (warning,) = [line for line in out.splitlines() if line.startswith("warning:")]
    assert warning.startswith(f"warning: {ARM}/joints/wrist_slide closes a kinematic loop")
    assert f"link {ARM}/link2 already has the parent joint {ARM}/joints/shoulder_lift" in warning


def test_kinematic_cycle_reports_the_joint_listed_last(tmp_path, capsys):
    # wrist_slide link3 -> link1 closes link1-link2-link3; the other joints stay tree edges
    path = variant(tmp_path, _body_edit("wrist_slide", 1, "</World/SimpleArm/link1>"))
    code, out, _ = cli(capsys, "schema", "validate", str(path))
    assert code == 0
    (warning,) = [line for line in out.splitlines() if line.startswith("warning:")]
    assert f"{ARM}/joints/wrist_slide closes a kinematic loop" in warning
    code, out, _ = cli(capsys, "inspect", str(path))
    assert code == 0
    tree = out.split("Link tree:\n", 1)[1].split("\n\n", 1)[0]
    assert tree.count("link1") == 1 and "link4" not in tree  # no duplicated link


def test_robot_schema_target_missing_fails_validate(tmp_path, capsys):
    path = variant(
        tmp_path,
        (
            "joints/elbow>,\n            </World/SimpleArm/joints/wrist_slide>,\n        ]",
            "joints/elbow_gone>,\n            </World/SimpleArm/joints/wrist_slide>,\n        ]",
        ),
    )
    code, out, _ = cli(capsys, "schema", "validate", str(path))
    assert code == 1
    assert f"robotJoints: target {ARM}/joints/elbow_gone does not exist" in out


def test_validate_reads_a_clean_scene_ok(capsys):
    code, out, _ = cli(capsys, "schema", "validate", str(SCENE))
    assert code == 0 and out.strip().endswith("OK") and "warning" not in out


def test_schema_apply_layer_under_a_file_is_one_line(tmp_path, capsys):
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("x")
    scene = variant(tmp_path)
    code, _, err = cli(capsys, "schema", "apply", str(scene), "--layer", str(blocker / "s.usda"))
    assert code == 1 and "not_a_dir" in one_error_line(err, "schema")
    assert scene.read_text() == SCENE.read_text()
    assert blocker.read_text() == "x"


def test_schema_apply_on_a_prim_without_links_writes_nothing(tmp_path, capsys):
    scene = variant(tmp_path)
    layer = tmp_path / "schema.usda"
    code, _, err = cli(capsys, "schema", "apply", str(scene), "--robot", "/World/Ground",
                       "--layer", str(layer))  # fmt: skip
    assert code == 1
    assert "/World/Ground: no links found" in one_error_line(err, "schema")
    assert not layer.exists() and scene.read_text() == SCENE.read_text()
