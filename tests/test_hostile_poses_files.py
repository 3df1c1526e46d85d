"""Named-pose import / apply checks and file modes of every writer (issue 14).

Named poses: an existing name is kept unless ``replace=True``; joints and links must belong
to the robot; empty joint sets are refused; values outside the limits are clamped (import,
reported) or refused (apply). Files: every atomic write keeps the destination's mode, and a
new file gets the umask default, never mkstemp's 0600.
"""

from __future__ import annotations

import json
import math
import os
import stat

import pytest
from pxr import UsdPhysics

from runtime._files import atomic_write, atomic_write_bytes, atomic_write_text, destination_mode
from runtime.errors import SchemaError
from runtime.kinematics.named_poses import (
    apply_pose_by_name,
    export_poses,
    get_named_pose,
    import_poses,
    import_poses_report,
    store_named_pose,
)
from runtime.kinematics.poser import PoseResult
from tests.helpers.hostile import SCENE, cli, variant
from tests.helpers.poser import make_p1

J = "/World/Robot/joint1"


@pytest.fixture
def limited():
    """Fixture P1 with joint1 limited to ±90°."""
    stage, robot, _ = make_p1()
    joint = UsdPhysics.RevoluteJoint(stage.GetPrimAtPath(J))
    joint.CreateLowerLimitAttr(-90.0)
    joint.CreateUpperLimitAttr(90.0)
    return stage, robot


def _write(tmp_path, poses, units="radians"):
    path = tmp_path / "poses.json"
    path.write_text(json.dumps({"_meta": {"units": units}, "poses": poses}))
    return str(path)


def _pose(value):
    return PoseResult(success=True, joints={J: value}, joint_fixed={J: False})


def test_import_onto_existing_name_needs_replace(limited, tmp_path):
    stage, robot = limited
    store_named_pose(stage, robot, "home", _pose(0.1))
    path = _write(tmp_path, {"home": {"joints": {J: 0.5}}})
    report = import_poses_report(stage, robot, path)
    assert report.stored == [] and report.replaced == []
    assert report.skipped == [
        ("home", "a pose named 'home' already exists (pass replace=True to overwrite it)")
    ]
    assert get_named_pose(stage, robot, "home").joints[J] == pytest.approx(0.1, abs=1e-6)
    report = import_poses_report(stage, robot, path, replace=True)
    assert report.stored == ["home"] and report.replaced == ["home"]
    assert get_named_pose(stage, robot, "home").joints[J] == pytest.approx(0.5, abs=1e-6)
    assert import_poses(stage, robot, path) == 0  # again without replace: kept


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({"joints": {"/World/Robot/Link1": 0.5}}, "/World/Robot/Link1 is not a joint of robot"),
        ({"joints": {"/World/Elsewhere/j": 0.5}}, "/World/Elsewhere/j is not a joint of robot"),
        ({"joints": {}}, "no joints (an empty joint set)"),
        ({"joints": {J: 0.5}, "end_link": "/World/Robot/joint1"}, "'end_link' /World/Robot/joint1"),
        ({"joints": {J: 0.5}, "start_link": "/World/Nowhere"}, "'start_link' /World/Nowhere"),
        ({"joints": {J: float("nan")}}, "non-numeric value nan"),
    ],
)
def test_import_refuses_foreign_or_empty_members(limited, tmp_path, entry, reason):
    stage, robot = limited
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"_meta": {"units": "radians"}, "poses": {"bad": entry}}))
    report = import_poses_report(stage, robot, str(path))
    assert report.stored == []
    ((name, why),) = report.skipped
    assert name == "bad" and reason in why
    assert get_named_pose(stage, robot, "bad") is None


def test_import_clamps_values_outside_limits_and_reports(limited, tmp_path):
    stage, robot = limited
    path = _write(tmp_path, {"far": {"joints": {J: 1e6}}, "near": {"joints": {J: -2.0}}})
    report = import_poses_report(stage, robot, path)
    assert report.stored == ["far", "near"]
    assert report.clamped == [
        ("far", J, 1e6, pytest.approx(math.pi / 2)),
        ("near", J, -2.0, pytest.approx(-math.pi / 2)),
    ]
    assert get_named_pose(stage, robot, "far").joints[J] == pytest.approx(math.pi / 2, abs=1e-6)


def test_import_in_degrees_checks_limits_in_degrees(limited, tmp_path):
    stage, robot = limited
    path = _write(tmp_path, {"ok": {"joints": {J: 89.0}}, "over": {"joints": {J: 120}}}, "degrees")
    report = import_poses_report(stage, robot, path)
    assert [c[:2] for c in report.clamped] == [("over", J)]
    assert get_named_pose(stage, robot, "ok").joints[J] == pytest.approx(math.radians(89), 1e-6)


def test_import_from_another_robot_is_remapped(tmp_path):
    stage, robot, _ = make_p1()
    _, robot2, _ = make_p1(stage, "/World/Robot2")
    path = _write(
        tmp_path,
        {
            "p": {
                "joints": {J: 0.25},
                "start_link": "/World/Robot",
                "end_link": "/World/Robot/Link1",
            }
        },
    )
    report = import_poses_report(stage, robot2, path)
    assert report.stored == ["p"]
    assert ("p", J, "/World/Robot2/joint1") in report.remapped
    pose = get_named_pose(stage, robot2, "p")
    assert pose.joints == {"/World/Robot2/joint1": pytest.approx(0.25)}
    assert (pose.start_link, pose.end_link) == ("/World/Robot2", "/World/Robot2/Link1")


def test_apply_refuses_out_of_limit_and_foreign_joints(limited):
    stage, robot = limited
    store_named_pose(stage, robot, "wild", _pose(1e6))
    with pytest.raises(SchemaError, match=r"value 1e\+06 is outside the joint limits") as info:
        apply_pose_by_name(stage, robot, "wild")
    assert info.value.prim_path == "/World/Robot/NamedPoses/wild"
    assert stage.GetPrimAtPath(J).GetAttribute("state:angular:physics:position").Get() in (None, 0)
    foreign = PoseResult(success=True, joints={"/World/Robot/Link1": 0.1})
    store_named_pose(stage, robot, "foreign", foreign)
    with pytest.raises(SchemaError, match="is not a joint of robot /World/Robot"):
        apply_pose_by_name(stage, robot, "foreign")
    store_named_pose(stage, robot, "empty", PoseResult(success=True, joints={}))
    with pytest.raises(SchemaError, match="an empty joint set"):
        apply_pose_by_name(stage, robot, "empty")
    store_named_pose(stage, robot, "fine", _pose(0.3))
    assert apply_pose_by_name(stage, robot, "fine") is True


# ------------------------------------------------------------------ file modes


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_atomic_write_keeps_mode_and_new_files_get_umask(tmp_path, umask_022):
    existing = tmp_path / "a.txt"
    existing.write_text("old")
    existing.chmod(0o640)
    atomic_write_text(existing, "new")
    assert existing.read_text() == "new" and _mode(existing) == 0o640
    fresh = tmp_path / "b.txt"
    atomic_write_text(fresh, "x")
    assert _mode(fresh) == 0o644 == destination_mode(tmp_path / "c.txt")
    old = os.umask(0o077)
    try:
        atomic_write_text(tmp_path / "private.txt", "x")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "private.txt") == 0o600


def test_an_unsynced_atomic_write_keeps_the_mode_and_skips_only_the_fsync(
    tmp_path, umask_022, monkeypatch
):
    existing = tmp_path / "zarr.json"
    existing.write_text("old")
    existing.chmod(0o640)
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    atomic_write_bytes(existing, b"new", durable=False)
    assert existing.read_bytes() == b"new" and _mode(existing) == 0o640 and not synced
    atomic_write_bytes(existing, b"newer")
    assert existing.read_bytes() == b"newer" and len(synced) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["zarr.json"]


def test_atomic_write_failure_keeps_the_old_file(tmp_path):
    target = tmp_path / "keep.usda"
    target.write_text("old")

    def boom(tmp):
        with open(tmp, "w") as stream:
            stream.write("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, boom)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.usda"]


def test_schema_apply_keeps_asset_and_layer_modes(tmp_path, capsys, umask_022):
    asset = variant(tmp_path, name="panda.usda")
    asset.chmod(0o644)
    layer = tmp_path / "configuration" / "panda_robot_schema.usda"
    code, _, err = cli(capsys, "schema", "apply", str(asset))
    assert code == 0, err
    assert _mode(asset) == 0o644 and _mode(layer) == 0o644  # new layer: umask default
    asset.chmod(0o664)
    layer.chmod(0o600)
    code, _, _ = cli(capsys, "schema", "apply", str(asset), "--no-sublayer")
    assert code == 0 and _mode(asset) == 0o664 and _mode(layer) == 0o600


def test_physics_layer_keeps_its_mode(tmp_path, capsys, umask_022):
    layer = tmp_path / "phys.usda"
    argv = ["physics", str(SCENE), "--layer", str(layer), "--rigid-body", "mujoco:gravcomp=1.0"]
    code, _, err = cli(capsys, *argv)
    assert code == 0, err
    assert _mode(layer) == 0o644
    layer.chmod(0o660)
    code, _, _ = cli(capsys, *argv)
    assert code == 0 and _mode(layer) == 0o660
    assert _mode(SCENE) & 0o444  # the asset itself is never written


def test_export_poses_keeps_mode(tmp_path, umask_022):
    stage, robot, _ = make_p1()
    store_named_pose(stage, robot, "home", _pose(0.2))
    path = tmp_path / "poses.json"
    export_poses(stage, robot, str(path))
    assert _mode(path) == 0o644
    path.chmod(0o640)
    export_poses(stage, robot, str(path))
    assert _mode(path) == 0o640 and "home" in json.loads(path.read_text())["poses"]
