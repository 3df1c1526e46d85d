"""Remaining robot-schema utilities: robot-layer save, named poses, components, parent map,
relationship cycles, deprecated reference-point authoring."""

from __future__ import annotations

import logging

import pytest
from pxr import Sdf, Usd, UsdGeom

import runtime.schema as rs
from runtime.compat import isaac
from runtime.schema import utils
from tests.helpers.robot_schema import JOINTS, LINKS, f1, joint, rigid, targets

R = "/World/Robot"


@pytest.fixture(autouse=True)
def _fresh_warnings():
    utils.clear_warning_cache()
    yield


def test_save_robot_schema_to_referenced_robot_layer(tmp_path):
    asset = Sdf.Layer.CreateNew(str(tmp_path / "robot.usda"))
    astage = Usd.Stage.Open(asset)
    robot = rigid(astage, "/Robot")
    rigid(astage, "/Robot/L1")
    rigid(astage, "/Robot/L2")
    robot.AddAppliedSchema("IsaacRobotAPI")
    robot.CreateRelationship(LINKS, True).SetTargets(["/Robot/L1"])
    asset.Save()
    stage = Usd.Stage.CreateInMemory()
    host = stage.DefinePrim("/World/R")
    host.GetReferences().AddReference(asset.identifier, "/Robot")
    rs.rebuild_relationship_as_prepend(host, LINKS, ["/World/R/L2"])  # host root layer
    assert targets(host, LINKS) == ["/World/R/L2", "/World/R/L1"]
    layer = rs.save_robot_schema_to_robot_layer(stage, host, save=True)
    assert layer is asset
    spec = Sdf.Layer.FindOrOpen(str(tmp_path / "robot.usda")).GetRelationshipAtPath(
        "/Robot." + LINKS
    )
    # baseline (other layers) = [L2]; desired adds L1, translated into the asset's namespace
    assert [str(p) for p in spec.targetPathList.prependedItems] == ["/Robot/L1"]
    assert list(spec.targetPathList.deletedItems) == []
    with pytest.raises(ValueError, match="Stage is invalid."):
        rs.save_robot_schema_to_robot_layer(None, host)
    with pytest.raises(ValueError, match="Robot prim is invalid."):
        rs.save_robot_schema_to_robot_layer(stage, Usd.Prim())


def test_save_robot_layer_missing_api_warns(caplog):
    stage = f1()
    with caplog.at_level(logging.WARNING):
        assert rs.save_robot_schema_to_robot_layer(stage, stage.GetPrimAtPath(R)) is None
    assert "could not locate the layer that authors IsaacRobotAPI" in caplog.text


def test_named_pose_queries():
    stage = f1("revolute")
    robot = stage.GetPrimAtPath(R)
    rs.apply_robot_api(robot)
    pose = rs.create_named_pose(stage, R + "/Named_Poses/home")
    assert rs.get_named_pose_valid(pose) is None and rs.get_named_pose_start_link(pose) is None
    pose.GetRelationship("isaac:robot:pose:startLink").SetTargets([R])
    pose.GetRelationship("isaac:robot:pose:endLink").SetTargets([R + "/Link1"])
    pose.GetRelationship("isaac:robot:pose:joints").SetTargets([R + "/joint1"])
    pose.GetAttribute("isaac:robot:pose:jointValues").Set([30.0])
    pose.GetAttribute("isaac:robot:pose:jointFixed").Set([False])
    pose.GetAttribute("isaac:robot:pose:valid").Set(True)
    robot.GetRelationship("isaac:robot:namedPoses").SetTargets(
        [R + "/Named_Poses/home", R + "/Named_Poses/missing"]
    )
    assert [p.GetName() for p in rs.get_all_named_poses(stage, robot)] == ["home"]
    assert rs.get_named_pose_start_link(pose) == Sdf.Path(R)
    assert isaac.GetNamedPoseEndLink(pose) == Sdf.Path(R + "/Link1")
    assert rs.get_named_pose_joints(pose) == [Sdf.Path(R + "/joint1")]
    assert list(rs.get_named_pose_joint_values(pose)) == [30.0]
    assert list(rs.get_named_pose_joint_fixed(pose)) == [False]
    assert rs.get_named_pose_valid(pose) is True
    assert rs.get_all_named_poses(stage, stage.GetPrimAtPath(R + "/Link1")) == []


def test_components_and_parent_map():
    stage = f1("revolute")
    UsdGeom.Xform.Define(stage, R + "/Link1/EEF")
    robot = stage.GetPrimAtPath(R)
    rs.apply_robot_api(robot, detect_sites=True)
    comps = [str(p.GetPath()) for p in rs.get_all_robot_components(stage, robot)]
    assert comps == [R, R + "/Link1", R + "/Link1/EEF", R + "/joint1"]
    assert rs.get_robot_link_parent_map(stage, robot) == {R + "/Link1": R}
    links = [str(p.GetPath()) for p in rs.get_all_robot_links(stage, robot, True)]
    assert links == [R, R + "/Link1", R + "/Link1/EEF"]
    assert R + "/Link1/EEF" not in [str(p.GetPath()) for p in rs.get_all_robot_links(stage, robot)]


def test_relationship_cycle_between_robots_terminates():
    stage = f1("revolute")
    robot = stage.GetPrimAtPath(R)
    other = UsdGeom.Xform.Define(stage, "/World/Other").GetPrim()
    rs.apply_robot_api(robot)
    other.AddAppliedSchema("IsaacRobotAPI")
    other.CreateRelationship(JOINTS, True).SetTargets([R])
    robot.GetRelationship(JOINTS).AddTarget("/World/Other")
    joints = [str(p.GetPath()) for p in rs.get_all_robot_joints(stage, robot)]
    assert joints == [R + "/joint1"]
    table = rs.build_dof_table(stage, other)
    assert table.joint_paths == (R + "/joint1",)


def test_apply_reference_point_api_applies_site(caplog):
    stage = f1()
    prim = UsdGeom.Xform.Define(stage, R + "/Tip").GetPrim()
    with caplog.at_level(logging.WARNING):
        isaac.ApplyReferencePointAPI(prim)
    assert "ApplyReferencePointAPI is deprecated. Use ApplySiteAPI instead." in caplog.text
    assert prim.HasAPI("IsaacSiteAPI")
    assert "IsaacReferencePointAPI" not in prim.GetPrimTypeInfo().GetAppliedAPISchemas()


def test_apply_helpers_do_not_rewrite_api_schemas():
    stage = f1()
    prim = stage.GetPrimAtPath(R + "/Link1")
    rs.apply_link_api(prim)
    spec = stage.GetRootLayer().GetPrimAtPath(R + "/Link1")
    before = spec.GetInfo("apiSchemas")
    rs.apply_link_api(prim)
    rs.apply_joint_api(stage.GetPrimAtPath(R + "/joint1"))
    rs.apply_attachment_point_api(stage.GetPrimAtPath(R + "/joint1"))
    assert spec.GetInfo("apiSchemas") == before
    assert stage.GetPrimAtPath(R + "/joint1").HasAPI("IsaacAttachmentPointAPI")


def test_compat_names_match_isaac_signatures():
    import inspect

    stage = f1("revolute")
    robot = stage.GetPrimAtPath(R)
    isaac.ApplyRobotAPI(robot)
    tree = isaac.GenerateRobotLinkTree(stage, robot)
    assert [p.GetName() for p in isaac.GetAllRobotLinks(stage, robot)] == ["Robot", "Link1"]
    assert [p.GetName() for p in isaac.GetAllRobotJoints(stage, robot, True)] == ["joint1"]
    before, after = isaac.GetLinksFromJoint(tree, stage.GetPrimAtPath(R + "/joint1"))
    assert [p.GetName() for p in before] == ["Robot"] and [p.GetName() for p in after] == ["Link1"]
    root, _ = isaac.RecalculateRobotSchema(stage, robot, None, detect_sites=False)
    assert root.GetName() == "Robot"
    params = inspect.signature(isaac.PopulateRobotSchemaFromArticulation).parameters
    assert list(params)[:3] == ["stage", "robot_prim", "articulation_prim"]
    assert params["detect_sites"].kind is inspect.Parameter.KEYWORD_ONLY
    assert list(inspect.signature(isaac.GetJointBodyRelationship).parameters) == [
        "joint_prim",
        "bodyIndex",
    ]
    assert isaac.ValidateRobotSchemaRelationships(robot)[1] == []
    # a second joint reached from Link1 is added by recalculation
    rigid(stage, R + "/Link2")
    joint(stage, R + "/joint2", R + "/Link1", R + "/Link2")
    isaac.RecalculateRobotSchema(stage, robot)
    assert targets(robot, JOINTS) == [R + "/joint1", R + "/joint2"]
