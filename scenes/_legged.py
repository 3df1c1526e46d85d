"""Shared steps of the legged-robot scene builders (``build_go2_scene.py``,
``build_talos_scene.py``).

A legged scene is authored in three layers, all written atomically:

* ``scenes/<robot>/<robot>_robot_schema.usda`` -- written by our CLI,
  ``simrt schema apply <converted asset> --layer <this> --no-sublayer --floating-base``:
  the Isaac robot schema plus ``active = false`` on the converter's fixed world joint, so the
  robot is free-floating. The converted asset is never edited.
* ``scenes/<robot>/<robot>_robot.usda`` -- robot layer: sublayers [schema layer, asset].
* ``scenes/<robot>_standing.usda`` -- the scene: ground, PhysicsScene, the robot referenced
  under ``/World``, joint PD drives (``UsdPhysics.DriveAPI``) holding a stand pose read from
  the robot's SRDF in example-robot-data, the links teleported to that pose, the robot
  lowered until its lowest foot touches the ground, an IMU and foot contact sensors.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics

import runtime.schema  # noqa: F401  (registers the Isaac schemas before any stage exists)

REPO = Path(__file__).resolve().parents[1]
SCENES = REPO / "scenes"
ASSETS = REPO / "tests" / "assets" / "robots"


def erd_robots() -> Path:
    """``robots`` directory of the installed example-robot-data (cmeel wheel)."""
    import sysconfig

    root = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix" / "share"
    return root / "example-robot-data" / "robots"


def srdf_state(srdf: Path, name: str) -> dict[str, float]:
    """Joint values of the SRDF ``group_state`` ``name`` (1-DOF joints only)."""
    root = ET.parse(srdf).getroot()
    for state in root.iter("group_state"):
        if state.get("name") == name:
            out = {}
            for joint in state.iter("joint"):
                values = joint.get("value", "").split()
                if len(values) == 1:
                    out[joint.get("name")] = float(values[0])
            return out
    raise SystemExit(f"{srdf}: no group_state {name!r}")


def save_atomic(layer: Sdf.Layer, path: Path) -> None:
    """Export ``layer`` to ``path`` through a temp file in the same directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    os.close(handle)
    try:
        if not layer.Export(tmp):
            raise RuntimeError(f"could not export {path}")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def apply_robot_schema(asset: Path, schema_layer: Path) -> None:
    """``simrt schema apply ASSET --layer SCHEMA --no-sublayer --floating-base``."""
    if not asset.exists():
        raise SystemExit(f"{asset}: converted robot missing; run tools/convert_assets.sh")
    cmd = [sys.executable, "-m", "runtime.cli", "schema", "apply"]
    cmd += [os.path.relpath(asset, REPO), "--layer", os.path.relpath(schema_layer, REPO)]
    cmd += ["--no-sublayer", "--floating-base"]
    print("$ simrt " + " ".join(cmd[3:]))
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"simrt schema apply failed with exit code {done.returncode}")
    for line in done.stdout.splitlines():
        if line.startswith(("floating base:", "wrote ")):
            print(line)


def write_robot_layer(asset: Path, schema_layer: Path, robot_layer: Path, root: str) -> None:
    """The robot layer: schema layer over the converted asset (relative sublayer paths)."""
    layer = Sdf.Layer.CreateAnonymous(".usda")
    layer.defaultPrim = root
    layer.subLayerPaths.append(os.path.relpath(schema_layer, robot_layer.parent))
    layer.subLayerPaths.append(os.path.relpath(asset, robot_layer.parent))
    layer.documentation = f"{root}: robot-schema layer (floating base) over the converted asset."
    save_atomic(layer, robot_layer)
    print(f"wrote {robot_layer.relative_to(REPO)}")


def new_scene(layer: Sdf.Layer, doc: str, steps_per_second: int, settings: dict) -> Usd.Stage:
    """``/World`` (Z up, metres, kg), a PhysicsScene, a ground slab; returns the stage."""
    stage = Usd.Stage.Open(layer)
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
    world = UsdGeom.Xform.Define(stage, "/World")
    stage.SetDefaultPrim(world.GetPrim())
    layer.documentation = doc
    scene = UsdPhysics.Scene.Define(stage, "/World/PhysicsScene")
    scene.CreateGravityDirectionAttr(Gf.Vec3f(0.0, 0.0, -1.0))
    scene.CreateGravityMagnitudeAttr(9.81)
    prim = scene.GetPrim()
    prim.CreateAttribute("physxScene:timeStepsPerSecond", Sdf.ValueTypeNames.UInt).Set(
        steps_per_second
    )
    prim.CreateAttribute("mjc:option:integrator", Sdf.ValueTypeNames.Token).Set("implicitfast")
    prim.SetCustomDataByKey("simrt", settings)
    ground = UsdGeom.Cube.Define(stage, "/World/Ground")
    ground.CreateSizeAttr(1.0)
    ground.AddTranslateOp().Set(Gf.Vec3d(0.0, 0.0, -0.05))
    ground.AddScaleOp().Set(Gf.Vec3f(10.0, 10.0, 0.1))
    ground.CreateDisplayColorAttr([Gf.Vec3f(0.5, 0.5, 0.5)])
    UsdPhysics.CollisionAPI.Apply(ground.GetPrim())
    return stage


def reference_robot(stage: Usd.Stage, path: str, robot_layer: Path, root: str) -> Usd.Prim:
    """Reference the robot layer's ``/root`` at ``path`` (with a translate op)."""
    prim = stage.DefinePrim(path, "Xform")
    prim.GetReferences().AddReference(os.path.relpath(robot_layer, SCENES), Sdf.Path("/" + root))
    UsdGeom.Xformable(prim).AddTranslateOp().Set(Gf.Vec3d(0.0, 0.0, 0.0))
    return prim


def joint_drives(stage: Usd.Stage, robot: str, pose: dict[str, float], gains) -> dict[str, float]:  # noqa: ANN001
    """Angular PD drives on every revolute joint of the robot, target = ``pose``.

    ``gains(name) -> (stiffness N m/rad, damping N m s/rad)``; ``maxForce`` is the URDF
    effort limit carried by the converter (``urdf:limit:effort``). Joints missing from
    ``pose`` hold 0. Returns ``{joint prim path: target [rad]}``.
    """
    targets = {}
    for prim in Usd.PrimRange(stage.GetPrimAtPath(robot)):
        if not prim.IsA(UsdPhysics.RevoluteJoint):
            continue
        name = prim.GetName()
        stiffness, damping = gains(name)
        target = pose.get(name, 0.0)
        drive = UsdPhysics.DriveAPI.Apply(prim, "angular")
        drive.CreateTypeAttr("force")
        drive.CreateStiffnessAttr(float(stiffness * math.pi / 180.0))  # USD: per degree
        drive.CreateDampingAttr(float(damping * math.pi / 180.0))
        effort = prim.GetAttribute("urdf:limit:effort")
        if effort and effort.Get() is not None and float(effort.Get()) > 0:
            drive.CreateMaxForceAttr(float(effort.Get()))
        drive.CreateTargetPositionAttr(float(math.degrees(target)))
        targets[str(prim.GetPath())] = target
    return targets


def teleport(stage: Usd.Stage, robot: str, targets: dict[str, float]) -> None:
    """Write the joint states and move the links to the pose (the root link stays put).

    One joint at a time, parents first: ``KinematicChain.teleport`` given a joint and its
    child joint together leaves the child link off by the parent joint's angle (seen on
    Talos' arm_*_3 / arm_*_4; reported, runtime.kinematics is not this script's).
    """
    from runtime.kinematics.chain import KinematicChain

    chain = KinematicChain(stage, stage.GetPrimAtPath(robot))

    def depth(joint: str) -> int:
        body1 = UsdPhysics.Joint(stage.GetPrimAtPath(joint)).GetBody1Rel().GetTargets()
        return body1[0].pathElementCount if body1 else 0

    for joint in sorted(targets, key=depth):
        chain.teleport({joint: targets[joint]})


def lowest_point(stage: Usd.Stage, bodies: list[str]) -> float:
    """Lowest world z of the collision shapes of ``bodies`` at the authored pose.

    Measured on the MuJoCo model the engine builds (mesh shapes: their convex hull vertices).
    """
    from runtime.engine.builder import build_model

    built = build_model(stage)
    m = built.model
    d = mujoco.MjData(m)
    d.qpos[:] = built.initial_qpos
    mujoco.mj_forward(m, d)
    low = math.inf
    ids = {m.body(b).id for b in bodies}
    for g in range(m.ngeom):
        if int(m.geom_bodyid[g]) not in ids:
            continue
        rot = d.geom_xmat[g].reshape(3, 3)
        kind = int(m.geom_type[g])
        if kind == int(mujoco.mjtGeom.mjGEOM_MESH):
            mid = int(m.geom_dataid[g])
            verts = m.mesh_vert[m.mesh_vertadr[mid] : m.mesh_vertadr[mid] + m.mesh_vertnum[mid]]
            z = (verts @ rot.T + d.geom_xpos[g])[:, 2].min()
        elif kind == int(mujoco.mjtGeom.mjGEOM_SPHERE):
            z = d.geom_xpos[g][2] - m.geom_size[g][0]
        elif kind == int(mujoco.mjtGeom.mjGEOM_BOX):
            half = m.geom_size[g]
            corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
            z = ((corners * half) @ rot.T + d.geom_xpos[g])[:, 2].min()
        else:
            raise SystemExit(f"{m.geom(g).name}: unexpected foot shape type {kind}")
        low = min(low, float(z))
    if not math.isfinite(low):
        raise SystemExit(f"no collision shapes on {bodies}")
    return low


def contact_sensor(stage: Usd.Stage, path: str, translate) -> None:  # noqa: ANN001
    """An ``IsaacContactSensor`` (thresholds 1 N .. 100 kN, whole body)."""
    prim = stage.DefinePrim(path, "IsaacContactSensor")
    UsdGeom.Xformable(prim).AddTranslateOp().Set(Gf.Vec3d(*translate))
    prim.CreateAttribute("enabled", Sdf.ValueTypeNames.Bool).Set(True)
    prim.CreateAttribute("threshold", Sdf.ValueTypeNames.Float2).Set(Gf.Vec2f(1.0, 100000.0))
    prim.CreateAttribute("radius", Sdf.ValueTypeNames.Float).Set(-1.0)


def imu_sensor(stage: Usd.Stage, path: str, translate=(0.0, 0.0, 0.0)) -> None:  # noqa: ANN001
    """An ``IsaacImuSensor`` without filtering."""
    imu = stage.DefinePrim(path, "IsaacImuSensor")
    UsdGeom.Xformable(imu).AddTranslateOp().Set(Gf.Vec3d(*translate))
    imu.CreateAttribute("enabled", Sdf.ValueTypeNames.Bool).Set(True)
    for name in (
        "linearAccelerationFilterWidth",
        "angularVelocityFilterWidth",
        "orientationFilterWidth",
    ):
        imu.CreateAttribute(name, Sdf.ValueTypeNames.Int).Set(1)


def write_scene(path: Path, author) -> None:  # noqa: ANN001
    """Author a scene with ``author(stage, layer)`` in a temp file beside ``path``, then move."""
    handle, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".usda", dir=path.parent)
    os.close(handle)
    layer = Sdf.Layer.CreateNew(tmp)
    try:
        author(layer)
        layer.Save()
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    print(f"wrote {path.relative_to(REPO)}")
