"""Robot schema on real converted robots (oracle: the URDF parsed with xml) and the seed's
UR10e-with-Robotiq-gripper composition example (seed 000, "Example")."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pxr import Sdf, Usd, UsdGeom, UsdPhysics

import runtime.schema as rs
from runtime.compat import isaac
from tests.helpers.robot_schema import JOINTS, LINKS, joint, rigid, targets
from tests.helpers.urdf_tree import urdf_expected_tree  # noqa: E402, F401

ASSETS = Path(__file__).parent / "assets" / "robots"

SEED_TREE = """\
base_link
  shoulder_link
    upper_arm_link
      forearm_link
        wrist_1_link
          wrist_2_link
            wrist_3_link
              robotiq_base_link
                left_outer_knuckle
                  left_outer_finger
                  left_inner_finger
                    left_inner_knuckle
                right_outer_knuckle
                  right_outer_finger
                  right_inner_finger
                    right_inner_knuckle
"""


@pytest.mark.parametrize(
    ("name", "stage_file", "urdf"),
    [
        ("panda", "panda/panda.usda", "panda/source/panda.urdf"),
        ("ur10", "ur10/ur10.usda", "ur10/source/ur10_robot.urdf"),
        ("ur5", "ur5/ur5.usda", "ur5/source/ur5_robot.urdf"),
    ],
)
def test_apply_robot_api_on_converted_urdf_gives_urdf_tree(name, stage_file, urdf):
    stage = Usd.Stage.Open(str(ASSETS / stage_file))
    layer = Sdf.Layer.CreateAnonymous()
    stage.GetSessionLayer().subLayerPaths.append(layer.identifier)
    robot = stage.GetDefaultPrim()
    with Usd.EditContext(stage, layer):
        rs.apply_robot_api(robot)
    assert not stage.GetRootLayer().dirty  # nothing authored in the asset's root layer
    tree = rs.generate_robot_link_tree(stage, robot)
    assert rs.format_robot_tree(tree) == urdf_expected_tree(ASSETS / urdf)
    assert tree.loop_joints == []
    # every listed target exists and every revolute/prismatic joint got IsaacJointAPI
    _vl, il, _vj, ij = rs.validate_robot_schema_relationships(robot)
    assert il == [] and ij == []
    for p in Usd.PrimRange(robot):
        if p.IsA(UsdPhysics.RevoluteJoint) or p.IsA(UsdPhysics.PrismaticJoint):
            assert p.HasAPI("IsaacJointAPI"), p.GetPath()
    # the DOF table with the schema equals the one without (URDF movable-joint order)
    plain = Usd.Stage.Open(str(ASSETS / stage_file))
    assert rs.build_dof_table(stage, robot).names == rs.build_dof_table(plain).names


def _ur10e_with_gripper() -> Usd.Stage:
    """Arm robot /World/ur10e with a Robotiq gripper sub-robot /World/ur10e/ee_link."""
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.Xform.Define(stage, "/World")
    arm = UsdGeom.Xform.Define(stage, "/World/ur10e").GetPrim()
    chain = [
        "base_link",
        "shoulder_link",
        "upper_arm_link",
        "forearm_link",
        "wrist_1_link",
        "wrist_2_link",
        "wrist_3_link",
    ]
    for link in chain:
        rigid(stage, f"/World/ur10e/{link}")
    UsdPhysics.ArticulationRootAPI.Apply(stage.GetPrimAtPath("/World/ur10e/base_link"))
    UsdGeom.Scope.Define(stage, "/World/ur10e/joints")
    arm_joints = [
        "shoulder_pan_joint",
        "shoulder_lift_joint",
        "elbow_joint",
        "wrist_1_joint",
        "wrist_2_joint",
        "wrist_3_joint",
    ]
    for jn, (a, b) in zip(arm_joints, zip(chain, chain[1:], strict=False), strict=True):
        joint(stage, f"/World/ur10e/joints/{jn}", f"/World/ur10e/{a}", f"/World/ur10e/{b}")
    g = "/World/ur10e/ee_link"
    UsdGeom.Xform.Define(stage, g)
    for link in (
        "robotiq_base_link",
        "left_outer_knuckle",
        "left_outer_finger",
        "left_inner_finger",
        "left_inner_knuckle",
        "right_outer_knuckle",
        "right_outer_finger",
        "right_inner_finger",
        "right_inner_knuckle",
    ):
        rigid(stage, f"{g}/{link}")
    # the mounting joint lives in the gripper and targets the arm's wrist
    joint(
        stage,
        f"{g}/robotiq_base_joint",
        "/World/ur10e/wrist_3_link",
        f"{g}/robotiq_base_link",
        kind="fixed",
    )
    for side in ("left", "right"):
        joint(
            stage,
            f"{g}/{side}_outer_knuckle_joint",
            f"{g}/robotiq_base_link",
            f"{g}/{side}_outer_knuckle",
        )
        joint(
            stage,
            f"{g}/{side}_outer_finger_joint",
            f"{g}/{side}_outer_knuckle",
            f"{g}/{side}_outer_finger",
            kind="fixed",
        )
        joint(
            stage,
            f"{g}/{side}_inner_finger_joint",
            f"{g}/{side}_outer_knuckle",
            f"{g}/{side}_inner_finger",
        )
        joint(
            stage,
            f"{g}/{side}_inner_knuckle_joint",
            f"{g}/{side}_inner_finger",
            f"{g}/{side}_inner_knuckle",
        )
        loop = joint(
            stage,
            f"{g}/{side}_inner_knuckle_loop",
            f"{g}/robotiq_base_link",
            f"{g}/{side}_inner_knuckle",
        )
        UsdPhysics.Joint(loop).CreateExcludeFromArticulationAttr(True)
    rs.apply_robot_api(stage.GetPrimAtPath(g))
    rs.apply_robot_api(arm)
    return stage


def test_seed_ur10e_with_gripper_tree_and_lists(capsys):
    stage = _ur10e_with_gripper()
    arm = stage.GetPrimAtPath("/World/ur10e")
    gripper = "/World/ur10e/ee_link"
    # the robot lists contain the sub-robot entry, not its internals
    assert gripper in targets(arm, LINKS) and gripper in targets(arm, JOINTS)
    assert gripper + "/left_outer_knuckle" not in targets(arm, LINKS)
    assert targets(stage.GetPrimAtPath(gripper), LINKS)[0] == gripper + "/robotiq_base_link"
    # the gripper's own population never walked into the arm
    assert not any("wrist" in t for t in targets(stage.GetPrimAtPath(gripper), LINKS))
    # the seed's script, ported by changing the import
    robot_schema = isaac
    tree = robot_schema.utils.GenerateRobotLinkTree(stage, arm)
    robot_schema.utils.PrintRobotTree(tree)
    assert capsys.readouterr().out == SEED_TREE
    # DOF table: arm joints first, then the gripper's, spliced where the sub-robot is listed
    table = rs.build_dof_table(stage, arm)
    assert table.names[:6] == (
        "shoulder_pan_joint",
        "shoulder_lift_joint",
        "elbow_joint",
        "wrist_1_joint",
        "wrist_2_joint",
        "wrist_3_joint",
    )
    assert set(table.names[6:]) == {
        f"{s}_{j}_joint"
        for s in ("left", "right")
        for j in ("outer_knuckle", "inner_finger", "inner_knuckle")
    }
    assert "left_inner_knuckle_loop" not in table.names
    # links before / after the wrist_3 joint split arm and gripper
    before, after = rs.get_links_from_joint(
        tree, stage.GetPrimAtPath("/World/ur10e/joints/wrist_3_joint")
    )
    assert [p.GetName() for p in after][:2] == ["wrist_3_link", "robotiq_base_link"]
    assert len(before) + len(after) == 16


def test_cli_apply_on_copy_of_panda(tmp_path, capsys):
    from runtime.cli import main

    shutil.copytree(ASSETS / "panda", tmp_path / "panda")
    asset = tmp_path / "panda" / "panda.usda"
    original_text = asset.read_text()
    assert main(["schema", "apply", str(asset), "--sites", "last"]) == 0
    out = capsys.readouterr().out
    tree_text = out.split("\n\n", 1)[0] + "\n"
    assert tree_text == urdf_expected_tree(ASSETS / "panda/source/panda.urdf")
    pin = pytest.importorskip("pinocchio")
    model = pin.buildModelFromUrdf(str(ASSETS / "panda/source/panda.urdf"))
    dof_lines = out.split("DOF table (9):\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split()[1] for line in dof_lines] == list(model.names)[1:]  # 7 arm + 2 fingers
    layer_file = tmp_path / "panda" / "configuration" / "panda_robot_schema.usda"
    assert layer_file.is_file()
    # the interface layer only gained the sublayer entry
    new_text = asset.read_text()
    assert "configuration/panda_robot_schema.usda" in new_text
    assert "IsaacRobotAPI" not in new_text and "IsaacRobotAPI" not in original_text
    stage = Usd.Stage.Open(str(asset))
    robot = stage.GetDefaultPrim()
    assert robot.HasAPI("IsaacRobotAPI")
    links = targets(robot, LINKS)
    assert links[0].endswith("/panda_link0")
    assert main(["schema", "validate", str(asset)]) == 0
    assert "OK" in capsys.readouterr().out
