"""Build ``scenes/panda_table.usda``: the example-robot-data Panda at a table with objects.

Run in the runtime venv from the repository root::

    python scenes/build_panda_scene.py

Layers written (all atomically: temp file in the same directory, then ``os.replace``):

* ``scenes/panda/panda_robot_schema.usda`` -- the Isaac robot schema of the converted Panda
  (``tests/assets/robots/panda/panda.usda``, produced by ``tools/convert_assets.sh``),
  populated by our CLI: ``simrt schema apply <asset> --layer <this file> --no-sublayer``.
  The converted asset itself is never edited.
* ``scenes/panda/panda_robot.usda`` -- the robot as used by the scene (Asset Structure
  guideline): ``defaultPrim = "panda"``, sublayers = [robot-schema layer, converted asset].
* ``scenes/panda_table.usda`` -- the scene: ``/World`` with a PhysicsScene (500 Hz,
  gravity -Z 9.81), a ground slab, a table, three dynamic objects, the robot referenced at
  ``/World/Panda`` (from the robot-schema layer above), UsdPhysics drives on every joint
  (angular drives on the 7 arm joints, linear drives on the 2 finger joints, with
  stiffness / damping / maxForce), fingertip contact sensors, an IMU on the hand, a
  spinning raycast sensor (72 columns x 10 rows, per-column time offsets over 0.1 s) on a
  static mount, and the run settings (IK waypoints moving the hand down onto the red box
  until the fingertips touch it) in the PhysicsScene's ``customData["simrt"]``.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, Vt

import runtime.schema  # noqa: F401  (registers the Isaac schemas before any stage exists)
from runtime._files import atomic_write

REPO = Path(__file__).resolve().parents[1]
SCENES = REPO / "scenes"
ASSET = REPO / "tests" / "assets" / "robots" / "panda" / "panda.usda"
SCHEMA_LAYER = SCENES / "panda" / "panda_robot_schema.usda"
ROBOT_LAYER = SCENES / "panda" / "panda_robot.usda"
SCENE = SCENES / "panda_table.usda"

ROBOT = "/World/Panda"
LINKS = ROBOT + "/Geometry/panda_link0/panda_link1/panda_link2/panda_link3/panda_link4/panda_link5"
HAND = LINKS + "/panda_link6/panda_link7/panda_link8/panda_hand"
LEFT_FINGER = HAND + "/panda_leftfinger"
RIGHT_FINGER = HAND + "/panda_rightfinger"

TABLE_TOP_Z = 0.42
BOX_SIZE = 0.06
BOX_CENTER = (0.5, 0.0, TABLE_TOP_Z + BOX_SIZE / 2)

# Arm drives (SI): stiffness N m/rad, damping N m s/rad, max force N m (Panda torque limits).
ARM_DRIVES = {
    "panda_joint1": (3000.0, 120.0, 87.0),
    "panda_joint2": (3000.0, 120.0, 87.0),
    "panda_joint3": (2000.0, 80.0, 87.0),
    "panda_joint4": (2000.0, 80.0, 87.0),
    "panda_joint5": (300.0, 6.0, 12.0),
    "panda_joint6": (300.0, 6.0, 12.0),
    "panda_joint7": (300.0, 6.0, 12.0),
}
# Start pose (rad): hand at (0.5, 0, 0.75) in the base frame, pointing down (solved offline
# with Pinocchio on the source URDF); the links are teleported there so the run starts at rest.
ARM_START = {
    "panda_joint1": 0.0,
    "panda_joint2": -0.0137,
    "panda_joint3": 0.0,
    "panda_joint4": -1.2414,
    "panda_joint5": 0.0,
    "panda_joint6": 1.2276,
    "panda_joint7": 0.7854,
}
# Finger drives (SI): stiffness N/m, damping N s/m, max force N; target opening per finger [m].
FINGER_DRIVE = (800.0, 40.0, 70.0)
FINGER_TARGET = 0.01

# Hand pointing down: 180 deg about x (hand z axis = fingers along world -z).
DOWN = "0,1,0,0"
HAND_TOUCH_Z = BOX_CENTER[2] + BOX_SIZE / 2 + 0.113  # fingertip pads 0.113 m below the hand
IK_TARGETS = [
    f"panda_hand=0.5,0.0,0.75,{DOWN}@0.0",
    f"panda_hand=0.5,0.0,0.75,{DOWN}@0.6",
    f"panda_hand=0.5,0.0,{HAND_TOUCH_Z - 0.05:.4f},{DOWN}@3.4",
]


def _save_atomic(layer: Sdf.Layer, path: Path) -> None:
    """Export ``layer`` to ``path`` through a temp file in the same directory."""
    path.parent.mkdir(parents=True, exist_ok=True)

    def export(tmp: str) -> None:
        if not layer.Export(tmp):
            raise RuntimeError(f"could not export {path}")

    atomic_write(path, export)  # keeps the existing file's mode


def apply_robot_schema() -> None:
    """Populate the robot schema into its own layer with ``simrt schema apply``."""
    cmd = [
        sys.executable,
        "-m",
        "runtime.cli",
        "schema",
        "apply",
        os.path.relpath(ASSET, REPO),
        "--layer",
        os.path.relpath(SCHEMA_LAYER, REPO),
        "--no-sublayer",
    ]
    print("$ simrt " + " ".join(cmd[3:]))
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    sys.stdout.write(done.stdout)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"simrt schema apply failed with exit code {done.returncode}")


def write_robot_layer() -> None:
    """The robot layer: schema layer over the converted asset (relative sublayer paths)."""
    layer = Sdf.Layer.CreateAnonymous(".usda")
    layer.defaultPrim = "panda"
    layer.subLayerPaths.append(os.path.relpath(SCHEMA_LAYER, ROBOT_LAYER.parent))
    layer.subLayerPaths.append(os.path.relpath(ASSET, ROBOT_LAYER.parent))
    layer.documentation = "Panda robot: robot-schema layer over the converted asset."
    _save_atomic(layer, ROBOT_LAYER)
    print(f"wrote {ROBOT_LAYER.relative_to(REPO)}")


def _xform(stage: Usd.Stage, path: str, translate=(0.0, 0.0, 0.0), orient=None, scale=None):
    xf = UsdGeom.Xform.Define(stage, path)
    xf.AddTranslateOp().Set(Gf.Vec3d(*translate))
    if orient is not None:
        xf.AddOrientOp().Set(Gf.Quatf(*orient))
    if scale is not None:
        xf.AddScaleOp().Set(Gf.Vec3f(*scale))
    return xf


def _box(stage, path, center, size, color):
    """A static box collider (no rigid body): a unit Cube scaled to ``size``."""
    cube = UsdGeom.Cube.Define(stage, path)
    cube.CreateSizeAttr(1.0)
    cube.AddTranslateOp().Set(Gf.Vec3d(*center))
    cube.AddScaleOp().Set(Gf.Vec3f(*size))
    cube.CreateDisplayColorAttr([Gf.Vec3f(*color)])
    UsdPhysics.CollisionAPI.Apply(cube.GetPrim())
    return cube


def _dynamic_shape(stage, path, kind, center, dims, color, mass):
    """A dynamic rigid body (Xform) with one collision shape and explicit inertia."""
    body = _xform(stage, path, translate=center)
    UsdPhysics.RigidBodyAPI.Apply(body.GetPrim())
    mass_api = UsdPhysics.MassAPI.Apply(body.GetPrim())
    mass_api.CreateMassAttr(float(mass))
    mass_api.CreateCenterOfMassAttr(Gf.Vec3f(0.0, 0.0, 0.0))
    if kind == "cylinder":
        radius, height = dims
        geom = UsdGeom.Cylinder.Define(stage, path + "/collision")
        geom.CreateRadiusAttr(radius)
        geom.CreateHeightAttr(height)
        geom.CreateAxisAttr("Z")
        ixx = mass * (3 * radius**2 + height**2) / 12.0
        inertia = (ixx, ixx, mass * radius**2 / 2.0)
    elif kind == "box":
        (size,) = dims
        geom = UsdGeom.Cube.Define(stage, path + "/collision")
        geom.CreateSizeAttr(size)
        inertia = (mass * size**2 / 6.0,) * 3
    else:
        (radius,) = dims
        geom = UsdGeom.Sphere.Define(stage, path + "/collision")
        geom.CreateRadiusAttr(radius)
        inertia = (0.4 * mass * radius**2,) * 3
    mass_api.CreateDiagonalInertiaAttr(Gf.Vec3f(*inertia))
    geom.CreateDisplayColorAttr([Gf.Vec3f(*color)])
    UsdPhysics.CollisionAPI.Apply(geom.GetPrim())
    return body


def _drive(stage, joint_path, kind, stiffness, damping, max_force, target):
    prim = stage.GetPrimAtPath(joint_path)
    if not prim.IsValid():
        raise SystemExit(f"{joint_path}: joint not found in the converted Panda")
    drive = UsdPhysics.DriveAPI.Apply(prim, kind)
    if kind == "angular":  # USD angular drives are per degree
        stiffness *= math.pi / 180.0
        damping *= math.pi / 180.0
        target = math.degrees(target)
    drive.CreateTypeAttr("force")
    drive.CreateStiffnessAttr(float(stiffness))
    drive.CreateDampingAttr(float(damping))
    drive.CreateMaxForceAttr(float(max_force))
    drive.CreateTargetPositionAttr(float(target))


def _raycast(stage: Usd.Stage, path: str) -> None:
    columns, rows = 72, 10
    period = 0.1  # one revolution per 0.1 s (10 Hz); P = largest offset = 71/72 * 0.1
    elevations = [math.radians(e) for e in _linspace(-62.0, -8.0, rows)]
    origins, directions, offsets = [], [], []
    for c in range(columns):
        azimuth = 2.0 * math.pi * c / columns
        for elevation in elevations:
            origins.append(Gf.Vec3f(0.0, 0.0, 0.0))
            directions.append(
                Gf.Vec3f(
                    math.cos(elevation) * math.cos(azimuth),
                    math.cos(elevation) * math.sin(azimuth),
                    math.sin(elevation),
                )
            )
            offsets.append(period * c / columns)
    prim = stage.DefinePrim(path, "IsaacRaycastSensor")
    UsdGeom.Xformable(prim).AddTranslateOp().Set(Gf.Vec3d(0.0, 0.0, 0.0))
    prim.CreateAttribute("enabled", Sdf.ValueTypeNames.Bool).Set(True)
    prim.CreateAttribute("numRays", Sdf.ValueTypeNames.UInt).Set(len(origins))
    prim.CreateAttribute("minRange", Sdf.ValueTypeNames.Float).Set(0.05)
    prim.CreateAttribute("maxRange", Sdf.ValueTypeNames.Float).Set(3.0)
    prim.CreateAttribute("rayOrigins", Sdf.ValueTypeNames.Float3Array).Set(Vt.Vec3fArray(origins))
    prim.CreateAttribute("rayDirections", Sdf.ValueTypeNames.Float3Array).Set(
        Vt.Vec3fArray(directions)
    )
    prim.CreateAttribute("rayTimeOffsets", Sdf.ValueTypeNames.FloatArray).Set(
        Vt.FloatArray(offsets)
    )
    prim.CreateAttribute("outputFrameOfReference", Sdf.ValueTypeNames.Token).Set("WORLD")
    prim.CreateAttribute("reportHitPrimPaths", Sdf.ValueTypeNames.Bool).Set(True)


def _linspace(a: float, b: float, n: int) -> list[float]:
    return [a + (b - a) * i / (n - 1) for i in range(n)]


def _contact(stage: Usd.Stage, path: str, translate) -> None:
    prim = stage.DefinePrim(path, "IsaacContactSensor")
    UsdGeom.Xformable(prim).AddTranslateOp().Set(Gf.Vec3d(*translate))
    prim.CreateAttribute("enabled", Sdf.ValueTypeNames.Bool).Set(True)
    prim.CreateAttribute("threshold", Sdf.ValueTypeNames.Float2).Set(Gf.Vec2f(0.05, 500.0))
    prim.CreateAttribute("radius", Sdf.ValueTypeNames.Float).Set(-1.0)


def build_scene() -> None:
    """Author ``scenes/panda_table.usda`` (the robot-schema layer must exist)."""

    # author in a temp layer next to the destination so relative asset paths resolve
    def author(tmp: str) -> None:
        layer = Sdf.Layer.CreateNew(tmp)
        stage = Usd.Stage.Open(layer)
        _author_scene(stage, layer)
        layer.Save()

    atomic_write(SCENE, author)  # keeps the existing file's mode
    print(f"wrote {SCENE.relative_to(REPO)}")


def _author_scene(stage: Usd.Stage, layer: Sdf.Layer) -> None:
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
    world = UsdGeom.Xform.Define(stage, "/World")
    stage.SetDefaultPrim(world.GetPrim())
    layer.documentation = "Panda at a table; built by scenes/build_panda_scene.py. Do not edit."

    scene = UsdPhysics.Scene.Define(stage, "/World/PhysicsScene")
    scene.CreateGravityDirectionAttr(Gf.Vec3f(0.0, 0.0, -1.0))
    scene.CreateGravityMagnitudeAttr(9.81)
    scene.GetPrim().CreateAttribute("physxScene:timeStepsPerSecond", Sdf.ValueTypeNames.UInt).Set(
        500
    )
    scene.GetPrim().CreateAttribute("mjc:option:integrator", Sdf.ValueTypeNames.Token).Set(
        "implicitfast"
    )
    scene.GetPrim().SetCustomDataByKey(
        "simrt",
        {
            "steps": 2000,
            "ikTargets": Vt.StringArray(IK_TARGETS),
            "ikEvery": 10,
            "ikUntilContact": True,
            "imuMode": "physical",
        },
    )

    _box(stage, "/World/Ground", (0.0, 0.0, -0.01), (3.0, 3.0, 0.02), (0.5, 0.5, 0.5))
    table = "/World/Table"
    UsdGeom.Xform.Define(stage, table)
    _box(stage, table + "/top", (0.55, 0.0, TABLE_TOP_Z - 0.02), (0.5, 0.8, 0.04), (0.6, 0.45, 0.3))
    for i, (x, y) in enumerate([(0.33, -0.37), (0.33, 0.37), (0.77, -0.37), (0.77, 0.37)]):
        _box(
            stage,
            f"{table}/leg{i}",
            (x, y, (TABLE_TOP_Z - 0.04) / 2),
            (0.04, 0.04, TABLE_TOP_Z - 0.04),
            (0.5, 0.35, 0.2),
        )
    _dynamic_shape(stage, "/World/RedBox", "box", BOX_CENTER, (BOX_SIZE,), (0.85, 0.1, 0.1), 0.3)
    _dynamic_shape(
        stage,
        "/World/BlueCylinder",
        "cylinder",
        (0.6, 0.22, TABLE_TOP_Z + 0.05),
        (0.03, 0.1),
        (0.1, 0.2, 0.85),
        0.25,
    )
    _dynamic_shape(
        stage,
        "/World/GreenBall",
        "sphere",
        (0.45, -0.22, TABLE_TOP_Z + 0.035),
        (0.035,),
        (0.1, 0.7, 0.2),
        0.1,
    )

    robot = stage.DefinePrim(ROBOT, "Xform")
    rel_robot = os.path.relpath(ROBOT_LAYER, SCENES)
    robot.GetReferences().AddReference(rel_robot, Sdf.Path("/panda"))
    if not stage.GetPrimAtPath(HAND).IsValid():
        raise SystemExit(f"{HAND}: not found after referencing {rel_robot}")

    for joint, (kp, kd, fmax) in ARM_DRIVES.items():
        _drive(stage, f"{ROBOT}/Physics/{joint}", "angular", kp, kd, fmax, ARM_START[joint])
    for joint in ("panda_finger_joint1", "panda_finger_joint2"):
        kp, kd, fmax = FINGER_DRIVE
        _drive(stage, f"{ROBOT}/Physics/{joint}", "linear", kp, kd, fmax, FINGER_TARGET)

    # start pose: write joint states and move the links (authored poses = initial state)
    from runtime.kinematics.chain import KinematicChain

    start = {f"{ROBOT}/Physics/{j}": v for j, v in ARM_START.items()}
    start.update({f"{ROBOT}/Physics/panda_finger_joint{i}": FINGER_TARGET for i in (1, 2)})
    KinematicChain(stage, stage.GetPrimAtPath(ROBOT)).teleport(start)

    # fingertip pads: finger frame z 0.045 +- 0.009; sensor at the pad centre
    _contact(stage, LEFT_FINGER + "/FingertipContact", (0.0, 0.008, 0.05))
    _contact(stage, RIGHT_FINGER + "/FingertipContact", (0.0, -0.008, 0.05))
    imu = stage.DefinePrim(HAND + "/HandImu", "IsaacImuSensor")
    UsdGeom.Xformable(imu).AddTranslateOp().Set(Gf.Vec3d(0.03, 0.02, 0.06))
    UsdGeom.Xformable(imu).AddOrientOp().Set(Gf.Quatf(0.9238795, 0.0, 0.3826834, 0.0))
    imu.CreateAttribute("enabled", Sdf.ValueTypeNames.Bool).Set(True)
    for name in (
        "linearAccelerationFilterWidth",
        "angularVelocityFilterWidth",
        "orientationFilterWidth",
    ):
        imu.CreateAttribute(name, Sdf.ValueTypeNames.Int).Set(1)

    mount = _xform(stage, "/World/LidarMount", translate=(0.55, -0.75, 0.95))
    mount.GetPrim().SetCustomDataByKey("comment", "static mount: no rigid body")
    _raycast(stage, "/World/LidarMount/Lidar")


def main() -> int:
    """Apply the robot schema with the CLI, then author the scene."""
    if not ASSET.exists():
        raise SystemExit(f"{ASSET}: converted Panda missing; run tools/convert_assets.sh")
    apply_robot_schema()
    write_robot_layer()
    build_scene()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
