"""See docs/guides/inspect-and-schema.md scenarios 1-40, one test (or more) each."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

import runtime.schema as rs
from runtime.compat import isaac
from runtime.schema import _register, migration, populate, utils
from runtime.schema.tokens import Attributes, Classes, DofOffsetOpOrder, Relations
from tests.helpers.robot_schema import JOINTS, LINKS, f1, joint, rigid, sub_robot_stage, targets

R = "/World/Robot"


@pytest.fixture(autouse=True)
def _fresh_warnings():
    utils.clear_warning_cache()
    yield


# ---------------------------------------------------------------- 1-4 registration


def test_01_apply_each_api_and_named_pose_is_concrete_xform():
    stage = Usd.Stage.CreateInMemory()
    prim = stage.DefinePrim("/P", "Xform")
    for name in (
        "IsaacRobotAPI",
        "IsaacLinkAPI",
        "IsaacJointAPI",
        "IsaacSiteAPI",
        "IsaacAttachmentPointAPI",
    ):
        assert prim.ApplyAPI(name)
        assert prim.HasAPI(name)
    assert Usd.SchemaRegistry.GetSchemaKind("IsaacNamedPose") == Usd.SchemaKind.ConcreteTyped
    pose = rs.create_named_pose(stage, "/Pose")
    assert pose.IsA(UsdGeom.Xform)


def test_02_registration_helper_skips_known_and_registers_new(tmp_path, monkeypatch):
    calls = []
    known = type("P", (), {"name": "TestPlugin"})()
    monkeypatch.setattr(
        _register.Plug.Registry, "GetAllPlugins", lambda self: [known], raising=False
    )
    monkeypatch.setattr(
        _register.Plug.Registry, "RegisterPlugins", lambda self, p: calls.append(p) or [known]
    )
    (tmp_path / "plugInfo.json").write_text('# c\n{"Plugins": [{"Name": "TestPlugin"}]}\n')
    assert _register.register_plugin_dir(tmp_path) is False
    assert calls == []
    (tmp_path / "plugInfo.json").write_text('# c\n{"Plugins": [{"Name": "NewPlugin"}]}\n')
    assert _register.register_plugin_dir(tmp_path) is True
    assert calls == [str(tmp_path)]


def test_03_enum_values():
    assert [c.value for c in Classes] == [
        "IsaacRobotAPI",
        "IsaacLinkAPI",
        "IsaacReferencePointAPI",
        "IsaacSiteAPI",
        "IsaacJointAPI",
        "IsaacSurfaceGripper",
        "IsaacAttachmentPointAPI",
        "IsaacNamedPose",
    ]
    assert Attributes.DESCRIPTION.name == "isaac:description"
    assert Attributes.NAMESPACE.name == "isaac:namespace"
    assert Attributes.DOF_OFFSET_OP_ORDER.name == "isaac:physics:DofOffsetOpOrder"
    assert Attributes.DESCRIPTION.display_name == "Description"
    assert Attributes.NAMESPACE.display_name == "Namespace"
    assert Relations.ROBOT_LINKS.name == "isaac:physics:robotLinks"
    assert Relations.ROBOT_JOINTS.name == "isaac:physics:robotJoints"
    assert DofOffsetOpOrder.TRANS_X.value == "TransX"
    assert DofOffsetOpOrder.ROT_Z.value == "RotZ"
    assert isaac.Classes is Classes and isaac.DofOffsetOpOrder is DofOffsetOpOrder


def test_04_smoke_no_omni_and_utils_expose_usdphysics():
    code = (
        "import sys, runtime.schema, runtime.compat.isaac as i\n"
        "assert not [m for m in sys.modules if m.startswith('omni')]\n"
        "assert i.utils.UsdPhysics is not None\n"
        "from runtime.schema import utils; assert utils.UsdPhysics\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------- 5-13 apply / populate


def test_05_apply_robot_api_populates_prepend_lists():
    stage = f1()
    robot = stage.GetPrimAtPath(R)
    rs.apply_robot_api(robot)
    assert robot.HasAPI("IsaacRobotAPI")
    assert robot.GetAttribute("isaac:description").IsValid()
    assert robot.GetAttribute("isaac:namespace").IsValid()
    assert {R, R + "/Link1"} <= set(targets(robot, LINKS))
    assert R + "/joint1" in targets(robot, JOINTS)
    assert stage.GetPrimAtPath(R + "/Link1").HasAPI("IsaacLinkAPI")
    assert stage.GetPrimAtPath(R + "/joint1").HasAPI("IsaacJointAPI")
    spec = stage.GetRootLayer().GetRelationshipAtPath(R + ".isaac:physics:robotLinks")
    assert not spec.targetPathList.isExplicit
    assert [str(p) for p in spec.targetPathList.prependedItems] == [R, R + "/Link1"]


def test_06_detect_sites_inline_and_last():
    stage = f1()
    UsdGeom.Xform.Define(stage, R + "/Link1/EEF")
    robot = stage.GetPrimAtPath(R)
    rs.apply_robot_api(robot)
    rs.populate_robot_schema_from_articulation(stage, robot, detect_sites=True)
    eef = stage.GetPrimAtPath(R + "/Link1/EEF")
    assert eef.HasAPI("IsaacSiteAPI")
    assert R + "/Link1/EEF" in targets(robot, LINKS)
    rs.populate_robot_schema_from_articulation(stage, robot, detect_sites=True, sites_last=True)
    links = targets(robot, LINKS)
    assert links.index(R + "/Link1/EEF") > links.index(R + "/Link1")


def test_07_sub_robot_boundary():
    stage = sub_robot_stage()
    robot = stage.GetPrimAtPath(R)
    rs.populate_robot_schema_from_articulation(stage, robot)
    links, joints = targets(robot, LINKS), targets(robot, JOINTS)
    assert R + "/Sub" in links and R + "/Sub/Finger" not in links
    assert R + "/j_arm" in joints and R + "/j_sub" in joints
    assert R + "/Sub/j_finger" not in joints


def test_08_bridging_joint_into_sub_robot_internal_link():
    stage = Usd.Stage.CreateInMemory()
    robot = rigid(stage, R)
    UsdPhysics.ArticulationRootAPI.Apply(robot)
    rigid(stage, R + "/Arm")
    sub = rigid(stage, R + "/Sub", body=False)
    sub.AddAppliedSchema("IsaacRobotAPI")
    rigid(stage, R + "/Sub/Palm")
    joint(stage, R + "/j_arm", R, R + "/Arm")
    joint(stage, R + "/j_bridge", R + "/Arm", R + "/Sub/Palm")
    rs.populate_robot_schema_from_articulation(stage, robot)
    links = targets(robot, LINKS)
    assert R + "/Sub" in links and R + "/Sub/Palm" not in links


def test_09_non_rigid_body_not_listed():
    stage = f1()
    rigid(stage, R + "/NoBody", body=False)
    joint(stage, R + "/j2", R + "/Link1", R + "/NoBody")
    robot = stage.GetPrimAtPath(R)
    rs.populate_robot_schema_from_articulation(stage, robot)
    links = targets(robot, LINKS)
    assert R + "/NoBody" not in links and R + "/Link1" in links
    assert not stage.GetPrimAtPath(R + "/NoBody").HasAPI("IsaacLinkAPI")


def test_10_no_articulation_root_scores_root():
    stage = Usd.Stage.CreateInMemory()
    robot = UsdGeom.Xform.Define(stage, "/R").GetPrim()
    rigid(stage, "/R/link0")
    rigid(stage, "/R/link1")
    UsdGeom.Scope.Define(stage, "/R/joints")
    joint(stage, "/R/joints/j0", "/R/link0", "/R/link1")
    root, _rj = rs.populate_robot_schema_from_articulation(stage, robot)
    assert root is not None and str(root.GetPath()) == "/R/link0"
    assert stage.GetPrimAtPath("/R/joints/j0").HasAPI("IsaacJointAPI")
    assert len(targets(robot, JOINTS)) >= 1


def test_11_rigid_body_only_vehicle():
    stage = Usd.Stage.CreateInMemory()
    veh = UsdGeom.Xform.Define(stage, "/V").GetPrim()
    for i in range(3):
        rigid(stage, f"/V/link_{i}")
    root, root_joint = rs.populate_robot_schema_from_articulation(stage, veh)
    assert root is not None and root.GetPath() == veh.GetPath() and root_joint is None
    assert targets(veh, LINKS) == ["/V/link_0", "/V/link_1", "/V/link_2"]
    for i in range(3):
        assert stage.GetPrimAtPath(f"/V/link_{i}").HasAPI("IsaacLinkAPI")


def test_12_well_formed_articulation_lists_links_and_joints():
    stage = f1(kind="revolute")
    robot = stage.GetPrimAtPath(R)
    rs.populate_robot_schema_from_articulation(stage, robot)
    assert len(targets(robot, LINKS)) >= 1 and len(targets(robot, JOINTS)) >= 1


def _traversal_stage() -> Usd.Stage:
    stage = Usd.Stage.CreateInMemory()
    r = UsdGeom.Xform.Define(stage, "/R").GetPrim()
    UsdPhysics.ArticulationRootAPI.Apply(r)
    for n in "ABCDE":
        rigid(stage, f"/R/{n}")
    for name, a, b in (("jab", "A", "B"), ("jbc", "B", "C"), ("jad", "A", "D"), ("jde", "D", "E")):
        joint(stage, f"/R/{name}", f"/R/{a}", f"/R/{b}")
    return stage


@pytest.mark.parametrize(
    ("traversal", "expected"), [("dfs", "ABCDE"), ("DFS", "ABCDE"), ("bfs", "ABDCE")]
)
def test_13_traversal_orders(traversal, expected):
    stage = _traversal_stage()
    r = stage.GetPrimAtPath("/R")
    root, root_joint = rs.populate_robot_schema_from_articulation(stage, r, traversal=traversal)
    assert str(root.GetPath()) == "/R/A" and root_joint is None
    assert targets(r, LINKS) == [f"/R/{n}" for n in expected]
    assert targets(r, JOINTS) == ["/R/jab", "/R/jad", "/R/jbc", "/R/jde"]


def test_13_invalid_traversal():
    stage = _traversal_stage()
    with pytest.raises(ValueError, match=r"Invalid traversal strategy: 'xyz'\. Expected 'dfs'"):
        rs.populate_robot_schema_from_articulation(
            stage, stage.GetPrimAtPath("/R"), traversal="xyz"
        )


# ---------------------------------------------------------------- 14-19 recalculate


def test_14_recalculate_invalid_inputs():
    stage = f1()
    with pytest.raises(ValueError, match="Stage is invalid."):
        rs.recalculate_robot_schema(None, stage.GetPrimAtPath(R))
    with pytest.raises(ValueError, match="Robot prim is invalid."):
        rs.recalculate_robot_schema(stage, None)


def test_15_recalculate_returns_root():
    stage = f1()
    robot = stage.GetPrimAtPath(R)
    rs.apply_robot_api(robot)
    root, _ = rs.recalculate_robot_schema(stage, robot)
    assert root is not None and root.IsValid() and str(root.GetPath()) == R


def test_16_recalculate_keeps_links_and_adds_new():
    stage = f1()
    robot = stage.GetPrimAtPath(R)
    rs.apply_robot_api(robot)
    before = targets(robot, LINKS)
    rigid(stage, R + "/Link2")
    joint(stage, R + "/joint2", R + "/Link1", R + "/Link2")
    rs.recalculate_robot_schema(stage, robot)
    after = targets(robot, LINKS)
    assert after[: len(before)] == before and R + "/Link2" in after


def test_17_recalculate_non_rigid_not_listed():
    stage = f1()
    robot = stage.GetPrimAtPath(R)
    rs.apply_robot_api(robot)
    rigid(stage, R + "/NoBody", body=False)
    joint(stage, R + "/j2", R + "/Link1", R + "/NoBody")
    rs.recalculate_robot_schema(stage, robot)
    assert R + "/NoBody" not in targets(robot, LINKS)
    assert not stage.GetPrimAtPath(R + "/NoBody").HasAPI("IsaacLinkAPI")


def test_18_recalculate_sub_robot():
    stage = sub_robot_stage()
    robot = stage.GetPrimAtPath(R)
    rs.recalculate_robot_schema(stage, robot)
    links, joints = targets(robot, LINKS), targets(robot, JOINTS)
    assert R + "/Arm" in links and R + "/Sub" in links and R + "/Sub/Finger" not in links
    assert R + "/j_arm" in joints and R + "/j_sub" in joints
    assert R + "/Sub/j_finger" not in joints


def test_19_user_order_preserved_ghost_dropped_and_force_update():
    stage = f1()
    robot = stage.GetPrimAtPath(R)
    rs.apply_robot_api(robot)
    rigid(stage, R + "/Link2")
    joint(stage, R + "/joint2", R + "/Link1", R + "/Link2")
    robot.GetRelationship(LINKS).SetTargets([R + "/Link1", "/Ghost", R])
    root, _ = rs.recalculate_robot_schema(stage, robot)
    assert targets(robot, LINKS) == [R + "/Link1", R, R + "/Link2"]
    assert str(root.GetPath()) == R + "/Link1"
    # force_update with a weaker layer contributing a target
    weak = Sdf.Layer.CreateAnonymous()
    strong = Sdf.Layer.CreateAnonymous()
    strong.subLayerPaths.append(weak.identifier)
    stage2 = Usd.Stage.Open(strong)
    stage2.SetEditTarget(weak)
    s1 = f1()
    weak.TransferContent(s1.GetRootLayer())
    robot2 = stage2.GetPrimAtPath(R)
    robot2.AddAppliedSchema("IsaacRobotAPI")
    robot2.CreateRelationship(LINKS, True).SetTargets([R + "/Stale"])
    stage2.SetEditTarget(strong)
    rs.recalculate_robot_schema(stage2, robot2, force_update=True)
    spec = strong.GetRelationshipAtPath(R + "." + LINKS)
    assert R + "/Stale" in [str(p) for p in spec.targetPathList.deletedItems]
    assert targets(robot2, LINKS) == [R, R + "/Link1"]


# ---------------------------------------------------------------- 20-25 queries


def test_20_queries_append_missing_and_warn_once(caplog):
    stage = f1()
    robot = stage.GetPrimAtPath(R)
    robot.AddAppliedSchema("IsaacRobotAPI")
    with caplog.at_level(logging.WARNING):
        links = rs.get_all_robot_links(stage, robot)
        joints = rs.get_all_robot_joints(stage, robot)
    assert {str(p.GetPath()) for p in links} == {R, R + "/Link1"}
    assert {str(p.GetPath()) for p in joints} == {R + "/joint1"}
    assert "links missing from schema relationship" in caplog.text
    assert "joints missing from schema relationship" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        rs.get_all_robot_links(stage, robot)
        rs.get_all_robot_joints(stage, robot)
    assert "missing from schema relationship" not in caplog.text


def test_21_nested_robot_joints_spliced_in_place():
    stage = sub_robot_stage()
    robot = stage.GetPrimAtPath(R)
    sub = stage.GetPrimAtPath(R + "/Sub")
    rs.populate_robot_schema_from_articulation(stage, sub)
    robot.AddAppliedSchema("IsaacRobotAPI")
    rs.populate_robot_schema_from_articulation(stage, robot)
    joints = [str(p.GetPath()) for p in rs.get_all_robot_joints(stage, robot)]
    assert joints == [R + "/j_arm", R + "/j_sub", R + "/Sub/j_finger"]
    flat = [str(p.GetPath()) for p in rs.get_all_robot_joints(stage, robot, False)]
    assert flat == [R + "/j_arm", R + "/j_sub"]
    links = [str(p.GetPath()) for p in rs.get_all_robot_links(stage, robot)]
    assert links == [R, R + "/Arm", R + "/Sub", R + "/Sub/Finger"]


def test_22_links_from_joint_on_f1():
    stage = f1()
    robot = stage.GetPrimAtPath(R)
    rs.apply_robot_api(robot)
    tree = rs.generate_robot_link_tree(stage, robot)
    before, after = rs.get_links_from_joint(tree, stage.GetPrimAtPath(R + "/joint1"))
    assert R in [str(p.GetPath()) for p in before]
    assert R + "/Link1" in [str(p.GetPath()) for p in after]


def test_23_reversed_joint_and_loop_without_duplicates(caplog):
    stage = Usd.Stage.CreateInMemory()
    r = UsdGeom.Xform.Define(stage, "/R").GetPrim()
    UsdPhysics.ArticulationRootAPI.Apply(r)
    for n in "ABC":
        rigid(stage, f"/R/{n}")
    joint(stage, "/R/jab", "/R/A", "/R/B")
    joint(stage, "/R/jcb", "/R/C", "/R/B")  # reversed: body0 is the child
    rs.apply_robot_api(r)
    tree = rs.generate_robot_link_tree(stage, r)
    assert rs.format_robot_tree(tree) == "A\n  B\n    C\n"
    joint(stage, "/R/jca", "/R/C", "/R/A")  # closes the loop A-B-C
    rs.recalculate_robot_schema(stage, r)
    with caplog.at_level(logging.WARNING):
        tree = rs.generate_robot_link_tree(stage, r)
    names = [n.name for n in tree.iter_nodes()]
    assert sorted(names) == ["A", "B", "C"]  # each link once
    # the joint added last (listed last) is the one that closes the loop
    joints = [str(p.GetPath()) for p in rs.get_all_robot_joints(stage, r)]
    assert joints[-1] == "/R/jca"
    assert [str(j.GetPath()) for j in tree.loop_joints] == ["/R/jca"]
    assert "Kinematic loop" in caplog.text and "/R/jca" in caplog.text


def test_24_joint_body_relationship_and_pose():
    stage = f1()
    robot = stage.GetPrimAtPath(R)
    j = stage.GetPrimAtPath(R + "/joint1")
    assert rs.get_joint_body_relationship(j, 0) == Sdf.Path(R)
    UsdPhysics.Joint(j).CreateExcludeFromArticulationAttr(True)
    assert rs.get_joint_body_relationship(j, 0) is None
    assert rs.get_joint_body_relationship(j, 1) is None
    UsdPhysics.Joint(j).GetExcludeFromArticulationAttr().Set(False)
    pose = rs.get_joint_pose(robot, j)
    assert Gf.IsClose(pose.ExtractTranslation(), Gf.Vec3d(1, 0, 0), 1e-12)


def test_25_print_tree_hand_built(capsys):
    root = rs.RobotLinkNode(None)
    root.name = "Root"
    child = rs.RobotLinkNode(None, parent=root)
    child.name = "Child"
    root.add_child(child)
    isaac.PrintRobotTree(root)
    assert capsys.readouterr().out == "Root\n  Child\n"
    nameless = rs.RobotLinkNode(None)
    with pytest.raises(TypeError):
        rs.print_robot_tree(nameless)


# ---------------------------------------------------------------- 26-34 validation, sites


def test_26_27_28_validate():
    stage = f1()
    robot = stage.GetPrimAtPath(R)
    rs.apply_robot_api(robot)
    vl, il, vj, ij = rs.validate_robot_schema_relationships(robot)
    assert il == [] and ij == [] and len(vl) >= 1 and len(vj) >= 1
    robot.GetRelationship(LINKS).AddTarget(R + "/GhostLink")
    _vl, il, _vj, _ij = rs.validate_robot_schema_relationships(robot)
    assert il == [Sdf.Path(R + "/GhostLink")]
    assert rs.validate_robot_schema_relationships(Usd.Prim()) == ([], [], [], [])


def test_29_rebuild_relationship_as_prepend_keeps_order():
    stage = f1()
    robot = stage.GetPrimAtPath(R)
    rs.rebuild_relationship_as_prepend(robot, "myCustomRel", [R, R + "/Link1"])
    assert targets(robot, "myCustomRel") == [R, R + "/Link1"]
    rs.rebuild_relationship_as_prepend(robot, "myCustomRel", [R + "/Link1", R])
    assert targets(robot, "myCustomRel") == [R + "/Link1", R]


def test_30_ensure_prepend_preserves_targets():
    stage = f1()
    robot = stage.GetPrimAtPath(R)
    rs.apply_robot_api(robot)
    robot.GetRelationship(LINKS).SetTargets([R + "/Link1", R])  # explicit list
    rs.ensure_prepend_list_for_robot_relationships(robot)
    spec = stage.GetRootLayer().GetRelationshipAtPath(R + "." + LINKS)
    assert not spec.targetPathList.isExplicit
    assert set(targets(robot, LINKS)) == {R + "/Link1", R}
    assert targets(robot, JOINTS) == [R + "/joint1"]


def test_31_site_candidate_rules():
    stage = f1()
    link = stage.GetPrimAtPath(R + "/Link1")
    UsdGeom.Xform.Define(stage, R + "/Link1/Site1")
    UsdGeom.Xform.Define(stage, R + "/Link1/Parent")
    UsdGeom.Xform.Define(stage, R + "/Link1/Parent/Kid")
    UsdGeom.Xform.Define(stage, R + "/Link1/Done").GetPrim().AddAppliedSchema("IsaacSiteAPI")
    rigid(stage, R + "/Link1/Body")
    UsdGeom.Mesh.Define(stage, R + "/Link1/Mesh")
    found = [p.GetName() for p in populate.detect_sites_for_link(link)]
    assert found == ["Site1"]


def test_32_detect_and_apply_sites():
    stage = f1()
    UsdGeom.Xform.Define(stage, R + "/Link1/EEF")
    robot = stage.GetPrimAtPath(R)
    rs.apply_robot_api(robot)
    sites, by_parent = rs.detect_and_apply_sites(stage, robot)
    assert [str(s.GetPath()) for s in sites] == [R + "/Link1/EEF"]
    assert list(by_parent) == [R + "/Link1"]
    assert stage.GetPrimAtPath(R + "/Link1/EEF").HasAPI("IsaacSiteAPI")


def test_33_no_sites():
    stage = f1()
    robot = stage.GetPrimAtPath(R)
    rs.apply_robot_api(robot)
    assert rs.detect_and_apply_sites(stage, robot) == ([], {})


def test_34_add_sites_last_and_inline():
    stage = Usd.Stage.CreateInMemory()
    r2 = rigid(stage, "/Robot2")
    UsdPhysics.ArticulationRootAPI.Apply(r2)
    rigid(stage, "/Robot2/Link1")
    rigid(stage, "/Robot2/Link2")
    joint(stage, "/Robot2/j1", "/Robot2", "/Robot2/Link1")
    joint(stage, "/Robot2/j2", "/Robot2/Link1", "/Robot2/Link2")
    UsdGeom.Xform.Define(stage, "/Robot2/Link1/EEF1")
    UsdGeom.Xform.Define(stage, "/Robot2/Link2/EEF2")
    rs.apply_robot_api(r2)
    base = targets(r2, LINKS)
    sites, by_parent = rs.detect_and_apply_sites(stage, r2)
    rs.add_sites_to_robot_links(r2, sites=sites, sites_last=True)
    assert targets(r2, LINKS) == base + ["/Robot2/Link1/EEF1", "/Robot2/Link2/EEF2"]
    r2.GetRelationship(LINKS).ClearTargets(True)
    rs.rebuild_relationship_as_prepend(r2, LINKS, base)
    rs.add_sites_to_robot_links(r2, sites_by_parent=by_parent, sites_last=False)
    assert targets(r2, LINKS) == [
        "/Robot2",
        "/Robot2/Link1",
        "/Robot2/Link1/EEF1",
        "/Robot2/Link2",
        "/Robot2/Link2/EEF2",
    ]


# ---------------------------------------------------------------- 35-40 migration


def test_35_single_dof_classification():
    stage = Usd.Stage.CreateInMemory()
    assert migration.is_single_dof_joint(joint(stage, "/r", None, None, "revolute"))
    assert migration.is_single_dof_joint(joint(stage, "/p", None, None, "prismatic"))
    assert migration.is_single_dof_joint(joint(stage, "/f", None, None, "fixed"))
    assert not migration.is_single_dof_joint(joint(stage, "/j", None, None, "plain"))


def _legacy(prim: Usd.Prim, **values: int) -> None:
    for key, v in values.items():
        prim.CreateAttribute(f"isaac:physics:{key}:DoFOffset", Sdf.ValueTypeNames.Int).Set(v)


def test_36_collect_deprecated_values():
    stage = Usd.Stage.CreateInMemory()
    j = joint(stage, "/j", None, None, "plain")
    _legacy(j, Tr_X=0, Rot_Z=1)
    assert migration.collect_deprecated_dof_offsets(j) == {"TransX": 0, "RotZ": 1}
    assert migration.collect_deprecated_dof_offsets(joint(stage, "/k", None, None)) == {}


def test_37_update_deprecated_joint_dof_order():
    stage = Usd.Stage.CreateInMemory()
    j = joint(stage, "/j", None, None, "plain")
    for axis, (lo, hi) in {
        "transX": (-1, 1),
        "rotX": (-1, 1),
        "transY": (-1, 1),
        "rotY": (1, -1),
    }.items():
        lim = UsdPhysics.LimitAPI.Apply(j, axis)
        lim.CreateLowAttr(lo)
        lim.CreateHighAttr(hi)
    _legacy(j, Tr_X=0, Rot_X=0, Tr_Y=1)
    assert rs.update_deprecated_joint_dof_order(j) is True
    assert list(j.GetAttribute("isaac:physics:DofOffsetOpOrder").Get()) == [
        "TransX",
        "RotX",
        "TransY",
    ]
    assert not j.GetAttribute("isaac:physics:Tr_X:DoFOffset").IsValid()
    assert rs.update_deprecated_joint_dof_order(j) is False


def test_38_update_deprecated_schemas():
    stage = f1("plain")
    robot = stage.GetPrimAtPath(R)
    site = UsdGeom.Xform.Define(stage, R + "/Link1/Tip").GetPrim()
    site.AddAppliedSchema("IsaacReferencePointAPI")
    j = stage.GetPrimAtPath(R + "/joint1")
    j.AddAppliedSchema("IsaacJointAPI")
    _legacy(j, Tr_X=0)
    rs.update_deprecated_schemas(robot)
    items = site.GetPrimTypeInfo().GetAppliedAPISchemas()
    assert "IsaacSiteAPI" in items and "IsaacReferencePointAPI" not in items
    assert list(j.GetAttribute("isaac:physics:DofOffsetOpOrder").Get()) == ["TransX"]


def test_39_revolute_legacy_removed_without_order():
    stage = Usd.Stage.CreateInMemory()
    j = joint(stage, "/j", None, None, "revolute")
    _legacy(j, Rot_X=0)
    assert rs.update_deprecated_joint_dof_order(j) is True
    assert not j.GetAttribute("isaac:physics:Rot_X:DoFOffset").IsValid()
    attr = j.GetAttribute("isaac:physics:DofOffsetOpOrder")
    assert not attr or not attr.HasAuthoredValue()


def test_40_deprecated_reference_point_found_as_site(caplog):
    stage = f1()
    tip = UsdGeom.Xform.Define(stage, R + "/Link1/Tip").GetPrim()
    tip.AddAppliedSchema("IsaacReferencePointAPI")
    assert utils.has_deprecated_reference_point(tip)
    with caplog.at_level(logging.WARNING):
        assert utils.is_site(tip)
    assert "deprecated" in caplog.text
    robot = stage.GetPrimAtPath(R)
    rs.apply_robot_api(robot)
    # not re-detected as a new candidate, but kept as a site by populate with sites
    assert populate.detect_sites_for_link(stage.GetPrimAtPath(R + "/Link1")) == []
    rs.populate_robot_schema_from_articulation(stage, robot, detect_sites=True)
    assert R + "/Link1/Tip" in targets(robot, LINKS)
    links = [str(p.GetPath()) for p in rs.get_all_robot_links(stage, robot, True)]
    assert R + "/Link1/Tip" in links
