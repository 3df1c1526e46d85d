"""Named poses: CRUD, sanitisation, JSON round trips (spec scenarios 1–21), corrupt input."""

from __future__ import annotations

import json
import logging
import math

import pytest
from pxr import Sdf, UsdGeom

from runtime.kinematics.named_poses import (
    apply_pose_by_name,
    delete_named_pose,
    export_poses,
    get_named_pose,
    import_poses,
    import_poses_report,
    list_named_poses,
    sanitize_pose_name,
    store_named_pose,
)
from runtime.kinematics.poser import PoseResult
from tests.helpers.poser import make_p1

J = "/World/Robot/joint1"


def pose_h(value=None, fixed=False, position=(1.0, 0.0, 0.0)):
    value = math.radians(45) if value is None else value
    return PoseResult(
        success=True,
        joints={J: value},
        joint_fixed={J: fixed},
        start_link="/World/Robot",
        end_link="/World/Robot/Link1",
        target_position=list(position),
        target_orientation=[1.0, 0.0, 0.0, 0.0],
    )


@pytest.fixture
def p1():
    return make_p1()


def test_sanitiser():
    cases = {
        "Home Pose": "Home_Pose",
        "a/b.c": "a_b_c",
        "home:v2": "home_v2",
        "ns:pose:1": "ns_pose_1",
        ":::": "___",
        "1pose": "_pose",
        "9": "_",
        "café": "caf__",
        "pose-α": "pose___",
        "": "_",
    }
    for raw, safe in cases.items():
        assert sanitize_pose_name(raw) == safe
    for raw in ("", "1pose", "home:v2", ":::", "café", "位姿", "²pose", "naïve_pose", "pose-α"):
        assert Sdf.Path.IsValidIdentifier(sanitize_pose_name(raw))


def test_store_layout_and_get(p1, caplog):
    stage, robot, _ = p1
    assert store_named_pose(stage, robot, "Home", pose_h())
    scope = stage.GetPrimAtPath("/World/Robot/NamedPoses")
    prim = stage.GetPrimAtPath("/World/Robot/NamedPoses/Home")
    assert scope and scope.GetTypeName() == "Scope"
    assert prim.GetTypeName() == "IsaacNamedPose"
    assert prim.GetAttribute("isaac:robot:pose:valid").Get() is True
    assert prim.GetAttribute("isaac:robot:pose:jointValues").Get()[0] == pytest.approx(
        45.0, abs=1e-4
    )
    assert [str(p) for p in prim.GetRelationship("isaac:robot:pose:startLink").GetTargets()] == [
        "/World/Robot"
    ]
    assert [str(p) for p in prim.GetRelationship("isaac:robot:pose:endLink").GetTargets()] == [
        "/World/Robot/Link1"
    ]
    assert len(prim.GetRelationship("isaac:robot:pose:joints").GetTargets()) == 1
    assert len(robot.GetRelationship("isaac:robot:namedPoses").GetTargets()) == 1
    ops = UsdGeom.Xformable(prim).GetOrderedXformOps()
    assert ops[0].Get()[0] == 1.0 and ops[1].GetOpType() == UsdGeom.XformOp.TypeOrient
    assert not store_named_pose(stage, robot, "Bad", PoseResult(success=False))
    got = get_named_pose(stage, robot, "Home")
    assert got.success and got.start_link == "/World/Robot"
    assert got.end_link == "/World/Robot/Link1"
    assert got.joints[J] == pytest.approx(math.radians(45), abs=1e-6)
    assert got.target_position == [1.0, 0.0, 0.0]
    assert got.target_orientation == [1.0, 0.0, 0.0, 0.0]
    assert get_named_pose(stage, robot, "Nope") is None
    stage2, robot2, _ = make_p1()
    assert get_named_pose(stage2, robot2, "Home") is None  # no scope at all


def test_sanitized_names_and_collision_warning(p1, caplog):
    stage, robot, _ = p1
    assert store_named_pose(stage, robot, "home:v2", pose_h())
    assert store_named_pose(stage, robot, "", pose_h())
    assert set(list_named_poses(stage, robot)) == {"home_v2", "_"}
    with caplog.at_level(logging.WARNING, logger="runtime.kinematics.named_poses"):
        assert store_named_pose(stage, robot, "home/v2", pose_h())
    assert "sanitizes to" in caplog.text
    assert get_named_pose(stage, robot, "home.v2") is not None


def test_list_and_delete(p1):
    stage, robot, _ = p1
    store_named_pose(stage, robot, "A", pose_h())
    store_named_pose(stage, robot, "B", pose_h())
    assert list_named_poses(stage, robot) == ["A", "B"]
    assert list_named_poses(*make_p1()[:2]) == []
    assert delete_named_pose(stage, robot, "A")
    assert list_named_poses(stage, robot) == ["B"]
    assert not delete_named_pose(stage, robot, "A")
    assert delete_named_pose(stage, robot, "B")
    assert list_named_poses(stage, robot) == [] and get_named_pose(stage, robot, "B") is None


def test_apply_pose_by_name(p1):
    stage, robot, link = p1
    assert not apply_pose_by_name(stage, robot, "missing")
    store_named_pose(stage, robot, "Up", pose_h(math.radians(30)))
    assert apply_pose_by_name(stage, robot, "Up")
    joint = stage.GetPrimAtPath(J)
    assert joint.GetAttribute("state:angular:physics:position").Get() == pytest.approx(
        30.0, rel=1e-5
    )
    sent = []
    assert apply_pose_by_name(stage, robot, "Up", target_sink=lambda v, p: sent.append(p))
    assert sent == [[J]]


def _snapshot(stage, robot):
    """Everything stored about every pose, in native USD form."""
    out = {}
    for name in list_named_poses(stage, robot):
        prim = stage.GetPrimAtPath(f"{robot.GetPath()}/NamedPoses/{name}")
        out[name] = (
            list(prim.GetAttribute("isaac:robot:pose:jointValues").Get()),
            list(prim.GetAttribute("isaac:robot:pose:jointFixed").Get()),
            [str(p) for p in prim.GetRelationship("isaac:robot:pose:joints").GetTargets()],
            [str(p) for p in prim.GetRelationship("isaac:robot:pose:startLink").GetTargets()],
            [str(p) for p in prim.GetRelationship("isaac:robot:pose:endLink").GetTargets()],
            prim.GetAttribute("isaac:robot:pose:valid").Get(),
            [
                tuple(op.Get())
                if op.GetOpType() == UsdGeom.XformOp.TypeTranslate
                else (op.Get().GetReal(), *op.Get().GetImaginary())
                for op in UsdGeom.Xformable(prim).GetOrderedXformOps()
            ],
        )
    return out


@pytest.mark.parametrize("degrees", [False, True])
def test_round_trip_usd_json_usd(tmp_path, degrees):
    stage, robot, _ = make_p1()
    store_named_pose(stage, robot, "Export_Test", pose_h(math.radians(30), True, (0.5, 0, 0)))
    store_named_pose(stage, robot, "Home Pose", pose_h(-1.2345678))
    store_named_pose(stage, robot, "café", pose_h(2.5))
    path = tmp_path / "poses.json"
    assert export_poses(stage, robot, str(path), degrees=degrees)
    data = json.loads(path.read_text())
    assert list(data) == ["_meta", "poses"]
    assert data["_meta"]["units"] == ("degrees" if degrees else "radians")
    assert "note" in data["_meta"]
    entry = data["poses"]["Export_Test"]
    assert list(entry) == [
        "joints",
        "joint_fixed",
        "start_link",
        "end_link",
        "target_position",
        "target_orientation",
        "valid",
    ]
    assert entry["valid"] is True and entry["joint_fixed"] == {J: True}
    assert entry["joints"][J] == pytest.approx(30.0 if degrees else math.radians(30), rel=1e-6)
    assert set(data["poses"]) == {"Export_Test", "Home_Pose", "caf__"}
    # import into a second identical robot on another stage, and into a fresh copy
    stage2, robot2, _ = make_p1()
    assert import_poses(stage2, robot2, str(path)) == 3
    assert _snapshot(stage2, robot2) == _snapshot(stage, robot)
    stage3, robot3, _ = make_p1(stage, "/World/Robot2")
    assert import_poses(stage3, robot3, str(path)) == 3
    assert "Export_Test" in list_named_poses(stage3, robot3)
    assert not list(tmp_path.glob(".tmp_*"))  # atomic write leaves no temp file


def test_export_empty_and_envelope_import(tmp_path):
    stage, robot, _ = make_p1()
    path = tmp_path / "empty.json"
    export_poses(stage, robot, str(path))
    data = json.loads(path.read_text())
    assert data["poses"] == {} and "note" in data["_meta"]
    env = {
        "_meta": {"units": "radians"},
        "poses": {
            "Pose_1": {"joints": {J: 0.5}},
            "Pose_2": {"joints": {J: 1.0}, "joint_fixed": {J: True}},
        },
    }
    path.write_text(json.dumps(env))
    assert import_poses(stage, robot, str(path)) == 2
    assert sorted(list_named_poses(stage, robot)) == ["Pose_1", "Pose_2"]
    assert get_named_pose(stage, robot, "Pose_2").joint_fixed == {J: True}


def test_legacy_flat_and_invalid_entries(tmp_path, caplog):
    stage, robot, _ = make_p1()
    path = tmp_path / "legacy.json"
    path.write_text(
        json.dumps({"Flat": {"joints": {J: 0.25}}, "Off": {"joints": {J: 1.0}, "valid": False}})
    )
    assert import_poses(stage, robot, str(path)) == 1
    assert get_named_pose(stage, robot, "Flat").joints[J] == pytest.approx(0.25, abs=1e-6)
    assert get_named_pose(stage, robot, "Off") is None
    partial = {
        "_meta": {"units": "degrees"},
        "poses": {
            "good": {"joints": {J: 90.0}},
            "bad_value": {"joints": {J: "ninety"}},
            "bad_type": [1, 2, 3],
            "bad_position": {
                "joints": {J: 1.0},
                "target_position": [1, 2],
                "target_orientation": [1, 0, 0, 0],
            },
            "bad_path": {"joints": {"not a path": 1.0}},
            "missing_joint_prim": {"joints": {"/World/Robot/nojoint": 0.5}},
        },
    }
    path.write_text(json.dumps(partial))
    with caplog.at_level(logging.WARNING, logger="runtime.kinematics.named_poses"):
        report = import_poses_report(stage, robot, str(path))
    assert report.stored == ["good"]
    assert [name for name, _ in report.skipped] == [
        "bad_value",
        "bad_type",
        "bad_position",
        "bad_path",
        "missing_joint_prim",
    ]
    assert all(reason for _, reason in report.skipped)
    for name in ("bad_value", "bad_type", "bad_position", "bad_path", "missing_joint_prim"):
        assert name in caplog.text
    assert get_named_pose(stage, robot, "good").joints[J] == pytest.approx(math.pi / 2, abs=1e-6)
    # a joint missing from the stage: no crash in degrees mode, and not stored (issue 14)
    assert dict(report.skipped)["missing_joint_prim"] == (
        "/World/Robot/nojoint is not a joint of robot /World/Robot"
    )
    assert get_named_pose(stage, robot, "missing_joint_prim") is None


def test_corrupt_json_imports_nothing_and_reports(tmp_path):
    stage, robot, _ = make_p1()
    path = tmp_path / "corrupt.json"
    path.write_text('{"_meta": {"units": "radians"}, "poses": {"a": {"joints": {')
    report = import_poses_report(stage, robot, str(path))
    assert report.stored == [] and report.skipped[0][0] == "<file>"
    assert import_poses(stage, robot, str(path)) == 0
    path.write_text("[1, 2]")
    assert import_poses_report(stage, robot, str(path)).skipped[0][1] == (
        "top level is not an object"
    )
