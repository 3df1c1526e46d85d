"""One test per reference bug that simrt fixes, plus bad-input checks.

See docs/guides/inspect-and-schema.md#fixed-bugs.
"""

from __future__ import annotations

import logging

import pytest
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

import runtime.schema as rs
from runtime.schema import populate, utils
from runtime.schema.tokens import Attributes
from tests.helpers.robot_schema import JOINTS, LINKS, f1, joint, rigid, targets

R = "/World/Robot"


@pytest.fixture(autouse=True)
def _fresh_warnings():
    utils.clear_warning_cache()
    yield


def test_unreached_sub_robots_are_appended_sorted_by_path():
    """§9.8: the reference appended unreached sub-robots in string-hash order."""
    stage = f1()
    for name in ("Zeta", "Mid", "Alpha"):  # authored out of order, none reached by a joint
        rigid(stage, f"{R}/{name}").AddAppliedSchema("IsaacRobotAPI")
    robot = stage.GetPrimAtPath(R)
    rs.populate_robot_schema_from_articulation(stage, robot)
    links = targets(robot, LINKS)
    assert links == [R, R + "/Link1", R + "/Alpha", R + "/Mid", R + "/Zeta"]
    assert targets(robot, JOINTS) == [R + "/joint1", R + "/Alpha", R + "/Mid", R + "/Zeta"]


def test_kinematic_loop_broken_deterministically_without_duplicates(caplog):
    """§9.6: joints A-B, B-C, C-A gave A{B, C{B}} in the reference (B twice)."""
    stage = Usd.Stage.CreateInMemory()
    r = UsdGeom.Xform.Define(stage, "/R").GetPrim()
    UsdPhysics.ArticulationRootAPI.Apply(r)
    for n in "ABC":
        rigid(stage, f"/R/{n}")
    joint(stage, "/R/jab", "/R/A", "/R/B")
    joint(stage, "/R/jbc", "/R/B", "/R/C")
    joint(stage, "/R/jca", "/R/C", "/R/A")
    rs.apply_robot_api(r)
    with caplog.at_level(logging.WARNING):
        tree = rs.generate_robot_link_tree(stage, r)
    paths = [str(n.path) for n in tree.iter_nodes()]
    assert len(paths) == len(set(paths)) == 3
    assert len(tree.loop_joints) == 1
    loop = str(tree.loop_joints[0].GetPath())
    assert loop in caplog.text and "excludeFromArticulation" in caplog.text
    # deterministic: a second build gives the same tree and the same broken joint
    again = rs.generate_robot_link_tree(stage, r)
    assert rs.format_robot_tree(again) == rs.format_robot_tree(tree)
    assert str(again.loop_joints[0].GetPath()) == loop
    # excluding the loop joint removes the report
    UsdPhysics.Joint(stage.GetPrimAtPath(loop)).CreateExcludeFromArticulationAttr(True)
    assert rs.generate_robot_link_tree(stage, r).loop_joints == []


def test_joint_pose_body1_branch_rotates_the_offset():
    """§9.5: body1 at (1,0,0) rotated 90° about Z, localPos1 (0.5,0,0) → (1, 0.5, 0)."""
    stage = Usd.Stage.CreateInMemory()
    robot = UsdGeom.Xform.Define(stage, "/R").GetPrim()
    body = UsdGeom.Xform.Define(stage, "/R/B")
    body.AddTranslateOp().Set(Gf.Vec3d(1, 0, 0))
    body.AddRotateZOp().Set(90.0)
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    j = joint(stage, "/R/j", None, "/R/B")
    UsdPhysics.Joint(j).CreateLocalPos1Attr(Gf.Vec3f(0.5, 0, 0))
    pose = rs.get_joint_pose(robot, j)
    assert Gf.IsClose(pose.ExtractTranslation(), Gf.Vec3d(1, 0.5, 0), 1e-6)
    # same frame through the body0 side for comparison
    j0 = joint(stage, "/R/j0", "/R/B", None)
    UsdPhysics.Joint(j0).CreateLocalPos0Attr(Gf.Vec3f(0.5, 0, 0))
    assert Gf.IsClose(rs.get_joint_pose(robot, j0).ExtractTranslation(), Gf.Vec3d(1, 0.5, 0), 1e-6)


def test_links_from_joint_includes_siblings():
    """§9.7: for joint A-D with A's other children B and C, the reference gave before == [A]."""
    stage = Usd.Stage.CreateInMemory()
    r = UsdGeom.Xform.Define(stage, "/R").GetPrim()
    UsdPhysics.ArticulationRootAPI.Apply(r)
    for n in "ABCDE":
        rigid(stage, f"/R/{n}")
    joint(stage, "/R/jab", "/R/A", "/R/B")
    joint(stage, "/R/jac", "/R/A", "/R/C")
    joint(stage, "/R/jad", "/R/A", "/R/D")
    joint(stage, "/R/jde", "/R/D", "/R/E")
    rs.apply_robot_api(r)
    tree = rs.generate_robot_link_tree(stage, r)
    before, after = rs.get_links_from_joint(tree, stage.GetPrimAtPath("/R/jad"))
    assert [p.GetName() for p in after] == ["D", "E"]
    assert [p.GetName() for p in before] == ["A", "B", "C"]
    before, after = rs.get_links_from_joint(tree, stage.GetPrimAtPath("/R/jde"))
    assert [p.GetName() for p in after] == ["E"]
    assert [p.GetName() for p in before] == ["D", "A", "B", "C"]


def test_robot_prim_that_is_a_link_keeps_robot_links_order(caplog):
    """§9.4: the reference ignored robotLinks when the robot prim carries IsaacLinkAPI."""
    stage = f1()
    robot = stage.GetPrimAtPath(R)
    rs.apply_robot_api(robot)
    assert robot.HasAPI("IsaacLinkAPI")
    rs.rebuild_relationship_as_prepend(robot, LINKS, [R + "/Link1", R])
    with caplog.at_level(logging.WARNING):
        links = [str(p.GetPath()) for p in rs.get_all_robot_links(stage, robot)]
    assert links == [R + "/Link1", R]
    assert "missing from schema relationship" not in caplog.text


def test_reversed_joint_puts_child_under_parent():
    """§9.6 (C++): a child→parent joint must not make a link its own child."""
    stage = Usd.Stage.CreateInMemory()
    r = UsdGeom.Xform.Define(stage, "/R").GetPrim()
    UsdPhysics.ArticulationRootAPI.Apply(rigid(stage, "/R/Base"))  # the root is known
    rigid(stage, "/R/Arm")
    joint(stage, "/R/j", "/R/Arm", "/R/Base")  # body0 = child
    rs.apply_robot_api(r)
    tree = rs.generate_robot_link_tree(stage, r)
    assert rs.format_robot_tree(tree) == "Base\n  Arm\n"
    assert str(tree.children[0].joint_to_parent.GetPath()) == "/R/j"


def test_site_redetection_keeps_earlier_sites():
    """§9.10: re-running populate with site detection dropped already-applied sites."""
    stage = f1()
    UsdGeom.Xform.Define(stage, R + "/Link1/EEF")
    robot = stage.GetPrimAtPath(R)
    rs.apply_robot_api(robot)
    rs.populate_robot_schema_from_articulation(stage, robot, detect_sites=True)
    first = targets(robot, LINKS)
    rs.populate_robot_schema_from_articulation(stage, robot, detect_sites=True)
    assert targets(robot, LINKS) == first == [R, R + "/Link1", R + "/Link1/EEF"]
    rs.recalculate_robot_schema(stage, robot, detect_sites=True)
    assert targets(robot, LINKS) == first
    rs.apply_robot_api(robot)  # re-applying without detection keeps the applied site too
    assert targets(robot, LINKS) == first


def test_rejected_root_override_still_scores():
    """§9.9: a rejected override disabled scoring in the reference."""
    stage = Usd.Stage.CreateInMemory()
    r = UsdGeom.Xform.Define(stage, "/R").GetPrim()
    UsdPhysics.ArticulationRootAPI.Apply(r)
    rigid(stage, "/R/A")
    rigid(stage, "/R/B")
    joint(stage, "/R/j", "/R/A", "/R/B")
    bogus = UsdGeom.Xform.Define(stage, "/R/NotABody").GetPrim()
    graph = populate.discover_articulation_graph(stage, r, root_link_override=bogus)
    assert str(graph.root_link.GetPath()) == "/R/A"


def test_dof_order_migration_consistent_with_dof_table():
    """§9.11: limits are consulted, unmatched legacy tokens are kept, any multi-DOF type."""
    stage = Usd.Stage.CreateInMemory()
    r = UsdGeom.Xform.Define(stage, "/R").GetPrim()
    UsdPhysics.ArticulationRootAPI.Apply(r)
    rigid(stage, "/R/A")
    rigid(stage, "/R/B")
    j = joint(stage, "/R/j", "/R/A", "/R/B", kind="plain")
    for axis in ("transX", "transY", "transZ", "rotY"):
        lim = UsdPhysics.LimitAPI.Apply(j, axis)
        lim.CreateLowAttr(1.0)
        lim.CreateHighAttr(-1.0)  # locked
    for key, v in (("Rot_Z", 0), ("Rot_X", 1), ("Rot_Y", 2)):
        j.CreateAttribute(f"isaac:physics:{key}:DoFOffset", Sdf.ValueTypeNames.Int).Set(v)
    table_before = rs.build_dof_table(stage, r)
    assert rs.update_deprecated_joint_dof_order(j)
    assert list(j.GetAttribute(Attributes.DOF_OFFSET_OP_ORDER.name).Get()) == ["RotZ", "RotX"]
    table_after = rs.build_dof_table(stage, r)
    assert table_before.tokens == table_after.tokens == ("RotZ", "RotX")
    # an existing list keeps its order; an unmatched legacy token is appended, not dropped
    k = joint(stage, "/R/k", "/R/A", "/R/B", kind="plain")
    k.CreateAttribute(Attributes.DOF_OFFSET_OP_ORDER.name, Sdf.ValueTypeNames.TokenArray).Set(
        ["RotY"]
    )
    k.CreateAttribute("isaac:physics:Tr_Z:DoFOffset", Sdf.ValueTypeNames.Int).Set(0)
    assert rs.update_deprecated_joint_dof_order(k)
    assert list(k.GetAttribute(Attributes.DOF_OFFSET_OP_ORDER.name).Get()) == ["RotY", "TransZ"]
    # spherical joints: translational legacy tokens are dropped (no such DOF)
    s = UsdPhysics.SphericalJoint.Define(stage, "/R/s").GetPrim()
    s.CreateAttribute("isaac:physics:Tr_X:DoFOffset", Sdf.ValueTypeNames.Int).Set(0)
    s.CreateAttribute("isaac:physics:Rot_Y:DoFOffset", Sdf.ValueTypeNames.Int).Set(1)
    assert rs.update_deprecated_joint_dof_order(s)
    assert list(s.GetAttribute(Attributes.DOF_OFFSET_OP_ORDER.name).Get()) == ["RotY"]


def test_update_deprecated_schemas_sees_weaker_layers_and_keeps_list_op_items():
    """§9.12: only the edit layer was migrated and deleted/ordered items were dropped."""
    weak = Sdf.Layer.CreateAnonymous()
    strong = Sdf.Layer.CreateAnonymous()
    strong.subLayerPaths.append(weak.identifier)
    stage = Usd.Stage.Open(strong)
    stage.SetEditTarget(weak)
    robot = UsdGeom.Xform.Define(stage, "/R").GetPrim()
    tip = UsdGeom.Xform.Define(stage, "/R/Tip").GetPrim()
    tip.AddAppliedSchema("IsaacReferencePointAPI")
    j = joint(stage, "/R/j", None, None, kind="plain")
    j.AddAppliedSchema("IsaacJointAPI")
    j.CreateAttribute("isaac:physics:Rot_X:DoFOffset", Sdf.ValueTypeNames.Int).Set(0)
    local = UsdGeom.Xform.Define(stage, "/R/Local").GetPrim()
    stage.SetEditTarget(strong)
    local_spec = strong.GetPrimAtPath("/R/Local") or Sdf.CreatePrimInLayer(strong, "/R/Local")
    op = Sdf.TokenListOp()
    op.prependedItems = ["IsaacReferencePointAPI"]
    op.deletedItems = ["SomeOtherAPI"]
    local_spec.SetInfo("apiSchemas", op)
    assert rs.update_deprecated_schemas(robot) >= 3
    for prim in (tip, local):
        applied = prim.GetPrimTypeInfo().GetAppliedAPISchemas()
        assert "IsaacSiteAPI" in applied and "IsaacReferencePointAPI" not in applied
    new_op = strong.GetPrimAtPath("/R/Local").GetInfo("apiSchemas")
    assert list(new_op.deletedItems) == ["SomeOtherAPI"]
    assert list(j.GetAttribute("isaac:physics:DofOffsetOpOrder").Get()) == ["RotX"]
    legacy = j.GetAttribute("isaac:physics:Rot_X:DoFOffset")
    assert not legacy.HasAuthoredValue() or legacy.Get() is None
    assert weak.GetPrimAtPath("/R/Tip")  # weaker layer untouched
    assert not rs.update_deprecated_joint_dof_order(j)


def test_surface_gripper_defaults_authored_and_status_uniform():
    """§9.2: the reference authored no values on an abstract type without fallbacks."""
    from runtime.schema.authoring import is_surface_gripper, read_surface_gripper_attribute

    stage = Usd.Stage.CreateInMemory()
    g = rs.create_surface_gripper(stage, "/G")
    assert is_surface_gripper(g)
    assert g.GetAttribute("isaac:status").Get() == "Open"
    assert g.GetAttribute("isaac:status").GetVariability() == Sdf.VariabilityUniform
    assert g.GetAttribute("isaac:maxGripDistance").Get() == pytest.approx(0.01)
    assert g.GetAttribute("isaac:shearForceLimit").Get() == -1.0
    bare = stage.DefinePrim("/H", "IsaacSurfaceGripper")
    assert read_surface_gripper_attribute(bare, Attributes.COAXIAL_FORCE_LIMIT) == -1.0
    assert rs.get_allowed_tokens(Attributes.STATUS) == ("Open", "Closed", "Closing")
    assert rs.get_allowed_tokens(Attributes.FORWARD_AXIS) == ("X", "Y", "Z")
    assert len(rs.get_allowed_tokens(Attributes.ROBOT_TYPE)) == 9
    assert len(rs.get_allowed_tokens(Attributes.LICENSE)) == 12


def test_name_override_lower_case_first():
    """§9.3: both spellings are read, lower-case first."""
    stage = f1("revolute")
    j = stage.GetPrimAtPath(R + "/joint1")
    j.CreateAttribute("isaac:NameOverride", Sdf.ValueTypeNames.String).Set("upper")
    assert rs.build_dof_table(stage, R).names == ("upper",)
    j.CreateAttribute("isaac:nameOverride", Sdf.ValueTypeNames.String).Set("lower")
    assert rs.build_dof_table(stage, R).names == ("lower",)


# ---------------------------------------------------------------- bad input


def test_dangling_body_target_is_reported(caplog):
    stage = f1("revolute")
    joint(stage, R + "/jx", R + "/Link1", R + "/Missing")
    robot = stage.GetPrimAtPath(R)
    with caplog.at_level(logging.WARNING):
        rs.populate_robot_schema_from_articulation(stage, robot)
    assert R + "/jx" in caplog.text and R + "/Missing" in caplog.text
    assert R + "/Missing" not in targets(robot, LINKS)


def test_joint_with_both_bodies_outside_robot_is_reported(caplog):
    stage = f1("revolute")
    rigid(stage, "/World/Other")
    rigid(stage, "/World/Other2")
    joint(stage, R + "/stray", "/World/Other", "/World/Other2")
    robot = stage.GetPrimAtPath(R)
    with caplog.at_level(logging.WARNING):
        rs.populate_robot_schema_from_articulation(stage, robot)
    assert R + "/stray" in caplog.text and "outside robot" in caplog.text
    assert R + "/stray" not in targets(robot, JOINTS)


def test_validate_lists_dangling_relationship_targets():
    stage = f1()
    robot = stage.GetPrimAtPath(R)
    rs.apply_robot_api(robot)
    robot.GetRelationship(JOINTS).AddTarget(R + "/gone")
    _vl, _il, _vj, ij = rs.validate_robot_schema_relationships(robot)
    assert ij == [Sdf.Path(R + "/gone")]
