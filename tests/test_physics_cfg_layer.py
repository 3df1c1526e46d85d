"""Physics layer authoring (author_physics_layer, `simrt physics`) and input errors."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
from pxr import Sdf, Usd, UsdGeom, UsdPhysics

from runtime.cli import main as simrt
from runtime.physics import (
    CfgTypeError,
    JointDriveBaseCfg,
    MassPropertiesCfg,
    MujocoJointDrivePropertiesCfg,
    MujocoRigidBodyPropertiesCfg,
    PhysicsCfgError,
    PhysxArticulationRootPropertiesCfg,
    RigidBodyBaseCfg,
    apply_asset_physics,
    apply_cfg_to_prim,
    author_physics_layer,
)
from runtime.physics import writers as w
from runtime.physics._routing import write_raw
from runtime.physics.config import CfgInputError, cfg_from_mapping, parse_cfg_spec


def _write_asset(path):
    """A nested two-link arm (link1 under link0, as URDF converters write it)."""
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageMetersPerUnit(stage, 0.01)
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.y)
    robot = UsdGeom.Xform.Define(stage, "/robot").GetPrim()
    stage.SetDefaultPrim(robot)
    UsdPhysics.ArticulationRootAPI.Apply(robot)
    for path_ in ("/robot/link0", "/robot/link0/link1"):
        prim = UsdGeom.Xform.Define(stage, path_).GetPrim()
        UsdPhysics.RigidBodyAPI.Apply(prim)
        cube = UsdGeom.Cube.Define(stage, path_ + "/collision").GetPrim()
        UsdPhysics.CollisionAPI.Apply(cube)
    joint = UsdPhysics.RevoluteJoint.Define(stage, "/robot/joint1")
    joint.CreateBody0Rel().SetTargets(["/robot/link0"])
    joint.CreateBody1Rel().SetTargets(["/robot/link0/link1"])
    stage.GetRootLayer().Save()
    return path


def _digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.fixture
def asset(tmp_path):
    (tmp_path / "asset").mkdir()
    return _write_asset(tmp_path / "asset" / "robot.usda")


def test_layer_sublayers_asset_and_leaves_it_untouched(tmp_path, asset):
    before = _digest(asset)
    out = tmp_path / "out" / "physics.usda"
    out.parent.mkdir()
    report = author_physics_layer(
        asset,
        out,
        rigid_props=MujocoRigidBodyPropertiesCfg(gravcomp=1.0),
        joint_drive_props=MujocoJointDrivePropertiesCfg(actuatorgravcomp=True, stiffness=10.0),
    )
    assert _digest(asset) == before
    assert report.modified == {"rigid_props": 2, "joint_drive_props": 1}
    layer = Sdf.Layer.OpenAsAnonymous(str(out))
    assert list(layer.subLayerPaths) == ["../asset/robot.usda"]
    assert layer.defaultPrim == "robot"
    assert layer.pseudoRoot.GetInfo("metersPerUnit") == 0.01
    assert layer.pseudoRoot.GetInfo("upAxis") == "Y"
    assert sorted(os.listdir(out.parent)) == ["physics.usda"]  # no temp file left behind
    stage = Usd.Stage.Open(str(out))
    for path in ("/robot/link0", "/robot/link0/link1"):
        assert stage.GetPrimAtPath(path).GetAttribute("mjc:gravcomp").Get() == pytest.approx(1.0)
    joint = stage.GetPrimAtPath("/robot/joint1")
    assert joint.GetAttribute("mjc:actuatorgravcomp").Get() is True
    assert "MjcJointAPI" in joint.GetPrimTypeInfo().GetAppliedAPISchemas()
    assert joint.GetAttribute("drive:angular:physics:stiffness").Get() == pytest.approx(
        10.0 * 3.141592653589793 / 180.0, rel=1e-6
    )
    # the asset alone has none of it
    plain = Usd.Stage.Open(str(asset))
    assert not plain.GetPrimAtPath("/robot/link0").GetAttribute("mjc:gravcomp")


def test_layer_reuse_overwrite_and_foreign_layer(tmp_path, asset):
    out = tmp_path / "physics.usda"
    author_physics_layer(asset, out, rigid_props=MujocoRigidBodyPropertiesCfg(gravcomp=0.5))
    author_physics_layer(
        asset, out, mass_props=None, rigid_props=RigidBodyBaseCfg(disable_gravity=True)
    )
    stage = Usd.Stage.Open(str(out))
    link = stage.GetPrimAtPath("/robot/link0")
    assert link.GetAttribute("mjc:gravcomp").Get() == pytest.approx(0.5)  # kept
    assert link.GetAttribute("physxRigidBody:disableGravity").Get() is True  # added
    author_physics_layer(
        asset, out, overwrite=True, rigid_props=RigidBodyBaseCfg(kinematic_enabled=True)
    )
    stage = Usd.Stage.Open(str(out))
    assert not stage.GetPrimAtPath("/robot/link0").GetAttribute("mjc:gravcomp")
    foreign = tmp_path / "foreign.usda"
    Sdf.Layer.CreateNew(str(foreign)).Save()
    with pytest.raises(FileExistsError, match="overwrite"):
        author_physics_layer(asset, foreign, rigid_props=RigidBodyBaseCfg(kinematic_enabled=True))


def test_nested_and_outermost_walks(tmp_path, asset):
    stage = Usd.Stage.Open(str(asset))
    stage.SetEditTarget(stage.GetSessionLayer())
    report = apply_asset_physics(
        stage, "/robot", rigid_props=MujocoRigidBodyPropertiesCfg(gravcomp=0.2), nested=False
    )
    assert report.modified["rigid_props"] == 1
    assert not stage.GetPrimAtPath("/robot/link0/link1").GetAttribute("mjc:gravcomp")


def test_strict_layer_errors_name_slot_field_and_prim(tmp_path, asset):
    out = tmp_path / "physics.usda"
    stage = Usd.Stage.Open(str(asset))
    assert stage.GetPrimAtPath("/robot/link0")
    with pytest.raises(PhysicsCfgError) as info:
        author_physics_layer(
            asset,
            out,
            root_path="/robot/link0",
            articulation_props=PhysxArticulationRootPropertiesCfg(sleep_threshold=0.1),
        )
    text = str(info.value)
    assert "/robot/link0" in text and "sleep_threshold" in text and "ArticulationRootAPI" in text
    assert not out.exists()
    with pytest.raises(TypeError, match="rigid_prop"):
        author_physics_layer(asset, out, rigid_prop=RigidBodyBaseCfg())
    with pytest.raises(TypeError, match="rigid_props expects"):
        author_physics_layer(asset, out, rigid_props=MassPropertiesCfg(mass=1.0))
    with pytest.raises(PhysicsCfgError, match="/nope"):
        author_physics_layer(asset, out, root_path="/nope", rigid_props=RigidBodyBaseCfg())


# ------------------------------------------------------------------ input errors


def test_wrong_type_at_construction_names_class_and_field():
    with pytest.raises(CfgTypeError, match=r"MujocoRigidBodyPropertiesCfg\.gravcomp"):
        MujocoRigidBodyPropertiesCfg(gravcomp="full")
    with pytest.raises(CfgTypeError, match=r"RigidBodyBaseCfg\.disable_gravity"):
        RigidBodyBaseCfg(disable_gravity=1)
    with pytest.raises(CfgTypeError, match="solver_position_iteration_count"):
        PhysxArticulationRootPropertiesCfg(solver_position_iteration_count=2.5)
    with pytest.raises(TypeError, match="gravcom"):
        MujocoRigidBodyPropertiesCfg(gravcom=1.0)


def test_wrong_type_at_write_names_prim_and_field():
    stage = Usd.Stage.CreateInMemory()
    prim = UsdGeom.Cube.Define(stage, "/box").GetPrim()
    UsdPhysics.RigidBodyAPI.Apply(prim)
    cfg = MujocoRigidBodyPropertiesCfg(gravcomp=1.0)
    cfg.gravcomp = "lots"
    with pytest.raises(PhysicsCfgError) as info:
        w.modify_rigid_body_properties("/box", cfg, stage)
    assert info.value.prim_path == "/box" and info.value.field == "gravcomp"
    assert not prim.GetAttribute("mjc:gravcomp")


def test_unsupported_raw_value_is_not_implemented():
    stage = Usd.Stage.CreateInMemory()
    prim = UsdGeom.Cube.Define(stage, "/box").GetPrim()
    with pytest.raises(NotImplementedError, match="/box"):
        write_raw(prim, "mjc:thing", "thing", "other", {"a": 1})


def test_cfg_on_prim_lacking_api_names_prim_field_and_api():
    stage = Usd.Stage.CreateInMemory()
    cube = UsdGeom.Cube.Define(stage, "/box").GetPrim()
    with pytest.raises(PhysicsCfgError) as info:
        apply_cfg_to_prim(cube, MujocoRigidBodyPropertiesCfg(gravcomp=1.0))
    assert "/box" in str(info.value) and "gravcomp" in str(info.value)
    assert "PhysicsRigidBodyAPI" in str(info.value)
    joint = UsdPhysics.SphericalJoint.Define(stage, "/ball").GetPrim()
    with pytest.raises(PhysicsCfgError, match="RevoluteJoint"):
        apply_cfg_to_prim(joint, JointDriveBaseCfg(stiffness=1.0))
    UsdPhysics.RigidBodyAPI.Apply(cube)
    apply_cfg_to_prim(cube, MujocoRigidBodyPropertiesCfg(gravcomp=1.0))
    assert cube.GetAttribute("mjc:gravcomp").Get() == pytest.approx(1.0)


def test_spec_and_mapping_parsing():
    cfg = parse_cfg_spec("rigid_props", "mujoco:gravcomp=1,disable_gravity=false")
    assert type(cfg) is MujocoRigidBodyPropertiesCfg
    assert cfg.gravcomp == 1.0 and cfg.disable_gravity is False
    cfg = parse_cfg_spec("joint_drive_props", "stiffness=0, damping=2.5")
    assert type(cfg) is JointDriveBaseCfg and cfg.stiffness == 0.0 and cfg.damping == 2.5
    assert type(
        parse_cfg_spec("rigid_props", "PhysxRigidBodyPropertiesCfg:linear_damping=0.1")
    ).__name__ == ("PhysxRigidBodyPropertiesCfg")
    with pytest.raises(CfgInputError, match="no field 'stifness'.*stiffness"):
        parse_cfg_spec("joint_drive_props", "stifness=1")
    with pytest.raises(CfgInputError, match="unknown backend"):
        parse_cfg_spec("mass_props", "physx:mass=1")
    with pytest.raises(CfgInputError, match="true/false"):
        parse_cfg_spec("rigid_props", "disable_gravity=maybe")
    with pytest.raises(CfgInputError, match="max_effort.*max_force"):
        cfg_from_mapping("joint_drive_props", {"max_effort": 5.0, "max_force": 9.0})
    with pytest.warns(DeprecationWarning, match="max_effort"):
        cfg = cfg_from_mapping("joint_drive_props", {"max_effort": 5.0})
    assert cfg.max_force == 5.0


# ------------------------------------------------------------------ CLI


def test_cli_flags(tmp_path, asset, capsys):
    out = tmp_path / "physics.usda"
    rc = simrt(
        [
            "physics",
            str(asset),
            "--layer",
            str(out),
            "--rigid-body",
            "mujoco:gravcomp=1.0",
            "--joint-drive",
            "mujoco:actuatorgravcomp=true",
            "--material",
            "newton:dynamic_friction=0.9,rolling_friction=0.001",
        ]
    )
    assert rc == 0, capsys.readouterr().err
    text = capsys.readouterr().out
    assert "rigid_props: MujocoRigidBodyPropertiesCfg(gravcomp=1.0) -> 2 prim(s)" in text
    stage = Usd.Stage.Open(str(out))
    assert stage.GetPrimAtPath("/robot/link0/link1").GetAttribute("mjc:gravcomp").Get() == 1.0
    mat = stage.GetPrimAtPath("/robot/PhysicsMaterial")
    assert mat.GetAttribute("physics:dynamicFriction").Get() == pytest.approx(0.9)
    assert mat.GetAttribute("newton:rollingFriction").Get() == pytest.approx(0.001)
    assert "NewtonMaterialAPI" in mat.GetPrimTypeInfo().GetAppliedAPISchemas()


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_cli_config_file(tmp_path, asset, capsys, suffix):
    data = {
        "rigid_props": {"backend": "mujoco", "gravcomp": 0.75},
        "joint_drive_props": {"class": "MujocoJointDrivePropertiesCfg", "actuatorgravcomp": True},
    }
    cfg_path = tmp_path / f"physics{suffix}"
    if suffix == ".json":
        cfg_path.write_text(json.dumps(data))
    else:
        cfg_path.write_text(
            '[rigid_props]\nbackend = "mujoco"\ngravcomp = 0.75\n\n'
            '[joint_drive_props]\nclass = "MujocoJointDrivePropertiesCfg"\n'
            "actuatorgravcomp = true\n"
        )
    out = tmp_path / "physics.usda"
    assert simrt(["physics", str(asset), "--layer", str(out), "--config", str(cfg_path)]) == 0
    stage = Usd.Stage.Open(str(out))
    assert stage.GetPrimAtPath("/robot/link0").GetAttribute("mjc:gravcomp").Get() == 0.75
    assert stage.GetPrimAtPath("/robot/joint1").GetAttribute("mjc:actuatorgravcomp").Get() is True


def test_cli_errors(tmp_path, asset, capsys):
    out = tmp_path / "physics.usda"
    assert (
        simrt(["physics", str(asset), "--layer", str(out), "--rigid-body", "mujoco:gravcom=1"]) == 2
    )
    err = capsys.readouterr().err
    assert "gravcom" in err and "gravcomp" in err
    assert simrt(["physics", str(asset), "--layer", str(out), "--mass", "mass=heavy"]) == 2
    assert "MassPropertiesCfg.mass" in capsys.readouterr().err
    rc = simrt(
        [
            "physics",
            str(asset),
            "--layer",
            str(out),
            "--joint-drive",
            "max_velocity=1,max_joint_velocity=2",
        ]
    )
    assert rc == 2 and "max_velocity" in capsys.readouterr().err
    rc = simrt(
        [
            "physics",
            str(asset),
            "--layer",
            str(out),
            "--articulation",
            "physx:sleep_threshold=0.1",
            "--root",
            "/robot/link0",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 1 and "/robot/link0" in err and "sleep_threshold" in err
    assert not out.exists()
    assert simrt(["physics", str(asset)]) == 2
    assert simrt(["physics", "--list-fields"]) == 0
    assert "MujocoRigidBodyPropertiesCfg" in capsys.readouterr().out


def test_isaac_compat_names():
    from runtime.compat import isaac

    assert isaac.schemas.modify_rigid_body_properties is w.modify_rigid_body_properties
    assert isaac.MujocoRigidBodyPropertiesCfg is MujocoRigidBodyPropertiesCfg
    assert "schemas" in isaac.__all__
