"""`simrt run` names the real cause of a broken robot (as `simrt inspect` does); chains and
posers refuse prims that do not exist; a failed export names its target."""

from __future__ import annotations

import logging
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mujoco")

from runtime.errors import SchemaError  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ARM = REPO / "scenes" / "simple_arm.usda"
J = "/World/SimpleArm/joints/"


def _variant(tmp_path: Path, name: str) -> Path:
    from pxr import Usd, UsdPhysics

    path = tmp_path / f"{name}.usda"
    shutil.copyfile(ARM, path)  # (edited as its own layer: ARM's stays as authored)
    stage = Usd.Stage.Open(str(path))
    joints = stage.GetPrimAtPath("/World/SimpleArm").GetRelationship("isaac:physics:robotJoints")
    if name == "missing_body":
        joint = UsdPhysics.Joint(stage.GetPrimAtPath(J + "shoulder_lift"))
        joint.GetBody1Rel().SetTargets(["/World/SimpleArm/nope"])
    elif name == "same_bodies":
        joint = UsdPhysics.Joint(stage.GetPrimAtPath(J + "shoulder_lift"))
        joint.GetBody1Rel().SetTargets(["/World/SimpleArm/link1"])
    elif name in ("loop", "two_parents"):
        parent = "/World/SimpleArm/base" if name == "loop" else "/World/SimpleArm/link1"
        extra = UsdPhysics.RevoluteJoint.Define(stage, J + "extra")
        extra.CreateBody0Rel().SetTargets([parent])
        extra.CreateBody1Rel().SetTargets(["/World/SimpleArm/link3"])
        extra.CreateAxisAttr("Y")
        joints.AddTarget(J + "extra")
    elif name == "robot_type":
        stage.GetPrimAtPath("/World/SimpleArm").GetAttribute("isaac:robotType").Set("Toaster")
    stage.GetRootLayer().Save()
    return path


@pytest.mark.parametrize(
    ("name", "cause"),
    [
        ("missing_body", "shoulder_lift.physics:body1: target /World/SimpleArm/nope does not"),
        ("same_bodies", "shoulder_lift.physics:body1: body0 and body1 are the same prim"),
        ("loop", "extra.physics:excludeFromArticulation: the joint closes a kinematic loop"),
        ("two_parents", "extra.physics:excludeFromArticulation: the joint closes a kinematic"),
        ("robot_type", "/World/SimpleArm.isaac:robotType: unknown token 'Toaster'"),
    ],
)
def test_run_names_the_real_cause(tmp_path, capsys, name, cause):
    from runtime.cli import main

    scene = _variant(tmp_path, name)
    assert main(["run", str(scene), "--steps", "2", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert cause in err and "is not simulated" not in err
    assert len(err.strip().splitlines()) == 1
    if name in ("missing_body", "same_bodies", "robot_type"):  # inspect says the same
        assert main(["inspect", str(scene)]) == 1
        assert cause in capsys.readouterr().err


def test_chains_and_posers_refuse_prims_that_do_not_exist(caplog):
    from runtime.kinematics.chain import KinematicChain
    from runtime.kinematics.poser import RobotPoser
    from runtime.schema import open_stage

    stage = open_stage(str(ARM))
    robot = stage.GetPrimAtPath("/World/SimpleArm")
    base, tip = (
        stage.GetPrimAtPath("/World/SimpleArm/base"),
        stage.GetPrimAtPath("/World/SimpleArm/link4"),
    )
    assert len(KinematicChain(stage, robot, base, tip).joints) == 4
    nowhere = stage.GetPrimAtPath("/World/SimpleArm/nowhere")
    with pytest.raises(SchemaError, match="chain end prim does not exist"):
        KinematicChain(stage, robot, base, nowhere)
    with pytest.raises(SchemaError, match="chain start prim does not exist"):
        RobotPoser(stage, robot, nowhere, tip)
    with pytest.raises(SchemaError, match="robot prim does not exist"):
        RobotPoser(stage, stage.GetPrimAtPath("/World/Nobody"))
    # Isaac's empty chains (an end off the robot, ends without a movable joint): said
    with caplog.at_level(logging.WARNING):
        off = KinematicChain(stage, robot, base, stage.GetPrimAtPath("/World/Table"))
        fixed = KinematicChain(stage, robot, tip, tip)
    assert off.joints == [] and fixed.joints == []
    assert "is not a link of the robot" in caplog.text
    assert "no movable joint between" in caplog.text


def _small_files() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))


def test_a_failed_export_names_its_target_and_source(tmp_path):
    pytest.importorskip("zarr")
    from runtime.run.loop import run_scene

    store = tmp_path / "run.zarr"
    run_scene(str(ARM), steps=400, out=store)
    target = tmp_path / "run.npz"
    done = subprocess.run(
        [sys.executable, "-m", "runtime.cli", "export", str(store), "--to", str(target)],
        capture_output=True,
        text=True,
        preexec_fn=_small_files,
        cwd=REPO,
    )
    assert done.returncode == 1, done.stderr
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1
    assert f"{target}: cannot write the export of {store}" in line
    assert not target.exists() and not list(tmp_path.glob("*.tmp"))
