"""``simrt schema apply --floating-base`` on the converted go2 (issue 15)."""

from __future__ import annotations

import shutil
from pathlib import Path

import mujoco
import numpy as np
import pytest
from pxr import Sdf, Usd, UsdGeom, UsdPhysics

import runtime.schema  # noqa: F401
from runtime.cli import main
from runtime.engine.builder import build_model
from runtime.errors import SchemaError
from runtime.schema.floating_base import make_floating_base, world_fixed_joints

GO2 = Path(__file__).parent / "assets" / "robots" / "go2"


def _robot_layer(tmp_path: Path, schema: Path, asset: Path) -> Path:
    """A layer stacking the schema layer over the asset (as the scene build scripts do)."""
    layer = Sdf.Layer.CreateNew(str(tmp_path / "robot.usda"))
    layer.subLayerPaths.append(str(schema))
    layer.subLayerPaths.append(str(asset))
    layer.defaultPrim = "go2_description"
    layer.Save()
    stage = Usd.Stage.Open(layer)
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)  # stage metadata is the root layer's
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    layer.Save()
    return Path(layer.realPath)


def test_floating_base_go2_falls_freely(tmp_path, capsys):
    shutil.copytree(GO2, tmp_path / "go2")
    asset = tmp_path / "go2" / "go2_description.usda"
    before = {p: p.read_bytes() for p in (tmp_path / "go2").rglob("*.usd*")}
    schema = tmp_path / "go2_schema.usda"
    argv = ["schema", "apply", str(asset), "--layer", str(schema), "--no-sublayer"]
    assert main([*argv, "--floating-base"]) == 0
    out = capsys.readouterr().out
    assert "floating base: deactivated /go2_description/Physics/root_joint" in out
    assert {p: p.read_bytes() for p in before} == before  # the converted asset is untouched
    # re-running finds nothing left to deactivate and keeps the opinion
    assert main([*argv, "--floating-base"]) == 0
    assert "no active fixed joint" in capsys.readouterr().out

    stage = Usd.Stage.Open(str(_robot_layer(tmp_path, schema, asset)))
    assert not stage.GetPrimAtPath("/go2_description/Physics/root_joint").IsActive()
    built = build_model(stage)
    m = built.model
    base = m.body("/go2_description/Geometry/base")
    assert m.jnt_type[m.body_jntadr[base.id]] == mujoco.mjtJoint.mjJNT_FREE
    assert (m.nq, m.nv) == (19, 18)
    # no ground in the asset: the whole robot's centre of mass falls at g (oracle: z0 - g t^2/2)
    data = mujoco.MjData(m)
    data.qpos[:] = built.initial_qpos
    mujoco.mj_forward(m, data)
    com0 = np.array(data.subtree_com[base.id])
    steps = 30
    for _ in range(steps):
        mujoco.mj_step(m, data)
    mujoco.mj_forward(m, data)
    t = steps * m.opt.timestep
    drop = com0[2] - data.subtree_com[base.id][2]
    # semi-implicit Euler: drop = g dt^2 n(n+1)/2 exactly
    expected = 9.81 * m.opt.timestep**2 * steps * (steps + 1) / 2
    assert drop == pytest.approx(expected, rel=1e-6)
    assert drop == pytest.approx(0.5 * 9.81 * t**2, rel=0.05)

    # without the option the same asset stays bolted to the world
    fixed = build_model(Usd.Stage.Open(str(asset)))
    assert fixed.model.nq == 12


def test_floating_base_refuses_a_non_fixed_world_joint():
    stage = Usd.Stage.CreateInMemory()
    UsdGeom.Xform.Define(stage, "/R")
    link = UsdGeom.Xform.Define(stage, "/R/link").GetPrim()
    UsdPhysics.RigidBodyAPI.Apply(link)
    joint = UsdPhysics.RevoluteJoint.Define(stage, "/R/hinge")
    joint.CreateBody1Rel().SetTargets([link.GetPath()])
    assert world_fixed_joints(stage.GetPrimAtPath("/R")) == []
    with pytest.raises(SchemaError, match="/R/hinge"):
        make_floating_base(stage.GetPrimAtPath("/R"))
