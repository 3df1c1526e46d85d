"""Build ``scenes/ur5e_suction.usda``: a UR5e with a suction (surface) gripper at a table.

Run in the runtime venv from the repository root::

    python scenes/build_ur_gripper_scene.py

One layer, written atomically (temp file in the same directory, then ``os.replace``):

* ``/World/PhysicsScene`` (500 Hz, gravity -Z 9.81), a ground slab and a table (static);
* ``/World/Box``: a 6 cm, 0.3 kg dynamic box on the table at ``PICK``;
* ``/World/UR5e``: the converted MuJoCo Menagerie UR5e (``tests/assets/robots/ur5e``,
  referenced, never edited) with, authored in this layer: the Isaac robot schema
  (``IsaacRobotAPI`` populated from the articulation), body-level MuJoCo gravity
  compensation (``mjc:gravcomp = 1`` through ``runtime.physics``), and on ``wrist_3_link`` a
  suction cup collider (cylinder), a ``tool_tip`` Xform at the cup face and the attachment
  joint ``suction_joint`` (D6, all DOFs locked, excluded from the articulation,
  ``IsaacAttachmentPointAPI`` with forward axis Z = out of the cup face);
* ``/World/UR5e/SurfaceGripper``: ``IsaacSurfaceGripper`` with that attachment point,
  ``maxGripDistance`` 0.02 m, ``retryInterval`` 0.2 s, ``shearForceLimit`` ``SHEAR_LIMIT``
  N (coaxial unlimited).

The task (see ``tests/test_ur_pick_place.py``): IK waypoints (robot-base frame, tool
pointing down) move the cup above the box, down to ``HOVER`` above its top, close the
gripper (the box is drawn 3 mm up to the cup, see ``CLEARANCE``), lift, carry the box to
``PLACE`` (0.5 m away), set it down and open. The scene carries this plan in its run
settings (``customData["simrt"]`` of the PhysicsScene: ``steps``, ``ikTargets`` for the
tool tip with its orientation, ``gripperActions``; see :data:`PLAN`), so
``simrt run scenes/ur5e_suction.usda`` performs it. A box too heavy for the shear limit (mass x
the transfer acceleration > ``SHEAR_LIMIT``; 2.5 kg with the test's 0.5 s carry) is
dropped in the first half of the carry, when the horizontal acceleration loads the grip
sideways; its weight alone is coaxial (unlimited) and does not release it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pxr import Gf, Sdf, Usd, UsdGeom, UsdPhysics, Vt

import runtime.schema  # noqa: F401  (registers the Isaac schemas before any stage exists)

REPO = Path(__file__).resolve().parents[1]
SCENE = REPO / "scenes" / "ur5e_suction.usda"
ASSET = REPO / "tests" / "assets" / "robots" / "ur5e" / "ur5e.usda"

ROBOT = "/World/UR5e"
WRIST3 = (
    ROBOT + "/Geometry/base/shoulder_link/upper_arm_link/forearm_link/wrist_1_link/"
    "wrist_2_link/wrist_3_link"
)
TOOL_TIP = WRIST3 + "/tool_tip"
SUCTION_JOINT = WRIST3 + "/suction_joint"
GRIPPER = ROBOT + "/SurfaceGripper"
BOX = "/World/Box"

TABLE_TOP_Z = 0.2
BOX_SIZE = 0.06
BOX_MASS = 0.3
PICK = (0.45, 0.25)
PLACE = (0.45, -0.25)
HOVER = 0.005  # cup face above the box top when closing [m]
CLEARANCE = 0.004
"""``isaac:clearanceOffset`` of the suction joint: the grip ray starts 4 mm out of the cup,
1 mm above the box at ``HOVER``; the reference's attach frame then draws the box
``CLEARANCE - 0.001`` = 3 mm toward the cup (docs/sensors/surface-gripper.md#grip-test,
docs/sensors/surface-gripper.md#each-step, scenario T1). A ray hit farther than the clearance would
push the box away (into the table) instead."""
APPROACH = 0.12  # cup face above the box top before descending / after lifting [m]
TOOL_DOWN = (0.0, 0.70710678, -0.70710678, 0.0)
"""Tool-tip orientation (w, x, y, z) in the robot-base frame: cup axis (+Z) pointing down."""
IK_SEED = (0.0, -1.2, 1.5, -1.87, -1.57, 0.0)
"""Seed of the first IK solve (elbow up, wrist down); later solves are seeded by the last."""
SHEAR_LIMIT = 10.0  # N per attachment point
CUP_RADIUS = 0.025
CUP_HEIGHT = 0.02
# wrist_3_link frame: the Menagerie attachment site sits at (0, 0.1, 0), rotated -90 deg
# about X, so its +Z axis (the tool axis) is wrist_3's +Y; the cup continues along it.
TOOL_ROT = (0.70710678, -0.70710678, 0.0, 0.0)  # (w, x, y, z)
CUP_CENTER_Y = 0.1 + CUP_HEIGHT / 2
FACE_Y = 0.1 + CUP_HEIGHT


PLAN = (
    # (tool-tip position in the robot-base frame [m], time it is reached [s]); the tool
    # points down (TOOL_DOWN) throughout; the hold before each action lets the position
    # servos (time constant ~0.2 s) settle on the waypoint
    ((*PICK, TABLE_TOP_Z + BOX_SIZE + APPROACH), 0.0),  # start pose, settle
    ((*PICK, TABLE_TOP_Z + BOX_SIZE + APPROACH), 0.2),
    ((*PICK, TABLE_TOP_Z + BOX_SIZE + HOVER), 1.0),  # descend onto the box, hold
    ((*PICK, TABLE_TOP_Z + BOX_SIZE + HOVER), 1.6),  # -> close
    ((*PICK, TABLE_TOP_Z + BOX_SIZE + APPROACH), 2.2),  # lift
    ((*PLACE, TABLE_TOP_Z + BOX_SIZE + APPROACH), 2.7),  # carry 0.5 m, hold
    ((*PLACE, TABLE_TOP_Z + BOX_SIZE + APPROACH), 3.2),
    ((*PLACE, TABLE_TOP_Z + BOX_SIZE + 0.003), 3.8),  # lower: box 1 mm above the table
    ((*PLACE, TABLE_TOP_Z + BOX_SIZE + 0.003), 4.4),  # -> open
    ((*PLACE, TABLE_TOP_Z + BOX_SIZE + APPROACH), 4.8),  # retreat
)
CLOSE_AT = 1.6
"""Close once the cup is held at ``HOVER`` over the box, within the grip ray's clearance (a
close ``@contact`` would fire at the first step the 2 cm grip ray reaches the box, during the
descent, and weld the box 12 mm below where it sits)."""
OPEN_AT = 4.4
RUN_STEPS = 2800
"""5.6 s at 500 Hz: the plan ends at 4.8 s; the rest lets the box come to rest."""
IK_EVERY = 5


def run_settings() -> dict:
    """The scene's run settings: the pick-and-place plan (``runtime.run.config`` keys)."""
    q = ",".join(f"{v:.8f}" for v in TOOL_DOWN)
    targets = [f"{TOOL_TIP}={x:.4f},{y:.4f},{z:.4f},{q}@{t:g}" for (x, y, z), t in PLAN]
    actions = [f"{GRIPPER}=close@{CLOSE_AT:g}", f"{GRIPPER}=open@{OPEN_AT:g}"]
    return {
        "steps": RUN_STEPS,
        "ikEvery": IK_EVERY,
        "ikTargets": Vt.StringArray(targets),
        "gripperActions": Vt.StringArray(actions),
    }


def _box(stage: Usd.Stage, path: str, center, size, mass: float | None) -> Usd.Prim:
    xf = UsdGeom.Xform.Define(stage, path)
    xf.AddTranslateOp().Set(Gf.Vec3d(*center))
    geom = UsdGeom.Cube.Define(stage, path + "/geom")
    geom.CreateSizeAttr(1.0)
    geom.AddScaleOp().Set(Gf.Vec3f(*size))
    UsdPhysics.CollisionAPI.Apply(geom.GetPrim())
    if mass is not None:
        UsdPhysics.RigidBodyAPI.Apply(xf.GetPrim())
        mass_api = UsdPhysics.MassAPI.Apply(xf.GetPrim())
        mass_api.CreateMassAttr(mass)
        side = size[0] ** 2 * mass / 6.0  # solid cube inertia about its centre
        mass_api.CreateDiagonalInertiaAttr(Gf.Vec3f(side, side, side))
    return xf.GetPrim()


def _tool(stage: Usd.Stage) -> None:
    """Suction cup collider, tool-tip frame and the attachment joint on wrist_3_link."""
    rot = Gf.Quatf(TOOL_ROT[0], Gf.Vec3f(*TOOL_ROT[1:]))
    cup = UsdGeom.Xform.Define(stage, WRIST3 + "/suction_cup")
    cup.AddTranslateOp().Set(Gf.Vec3d(0.0, CUP_CENTER_Y, 0.0))
    cup.AddOrientOp().Set(rot)
    cylinder = UsdGeom.Cylinder.Define(stage, WRIST3 + "/suction_cup/collider")
    cylinder.CreateRadiusAttr(CUP_RADIUS)
    cylinder.CreateHeightAttr(CUP_HEIGHT)
    cylinder.CreateAxisAttr("Z")
    UsdPhysics.CollisionAPI.Apply(cylinder.GetPrim())
    tip = UsdGeom.Xform.Define(stage, TOOL_TIP)
    tip.AddTranslateOp().Set(Gf.Vec3d(0.0, FACE_Y, 0.0))
    tip.AddOrientOp().Set(rot)
    joint = UsdPhysics.Joint.Define(stage, SUCTION_JOINT)
    joint.CreateBody0Rel().SetTargets([WRIST3])
    joint.CreateLocalPos0Attr(Gf.Vec3f(0.0, FACE_Y, 0.0))
    joint.CreateLocalRot0Attr(rot)
    joint.CreateExcludeFromArticulationAttr(True)
    for dof in ("transX", "transY", "transZ", "rotX", "rotY", "rotZ"):
        limit = UsdPhysics.LimitAPI.Apply(joint.GetPrim(), dof)
        limit.CreateLowAttr(1.0)
        limit.CreateHighAttr(-1.0)
    prim = joint.GetPrim()
    prim.ApplyAPI("IsaacAttachmentPointAPI")
    prim.GetAttribute("isaac:forwardAxis").Set("Z")
    prim.GetAttribute("isaac:clearanceOffset").Set(CLEARANCE)


def _gripper(stage: Usd.Stage) -> None:
    from runtime.schema.authoring import create_surface_gripper

    prim = create_surface_gripper(stage, GRIPPER)
    prim.GetRelationship("isaac:attachmentPoints").SetTargets([SUCTION_JOINT])
    prim.GetAttribute("isaac:maxGripDistance").Set(0.02)
    prim.GetAttribute("isaac:retryInterval").Set(0.2)
    prim.GetAttribute("isaac:shearForceLimit").Set(SHEAR_LIMIT)
    prim.GetAttribute("isaac:coaxialForceLimit").Set(-1.0)


def author_scene(stage: Usd.Stage, asset_reference: str) -> None:
    """Author the whole scene on ``stage`` (its root layer), referencing the robot asset."""
    from runtime.physics import apply_asset_physics
    from runtime.physics.newton import MujocoRigidBodyPropertiesCfg
    from runtime.schema.authoring import apply_robot_api

    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
    world = UsdGeom.Xform.Define(stage, "/World").GetPrim()
    stage.SetDefaultPrim(world)
    scene = UsdPhysics.Scene.Define(stage, "/World/PhysicsScene")
    scene.CreateGravityDirectionAttr(Gf.Vec3f(0.0, 0.0, -1.0))
    scene.CreateGravityMagnitudeAttr(9.81)
    scene.GetPrim().CreateAttribute("physxScene:timeStepsPerSecond", Sdf.ValueTypeNames.UInt).Set(
        500
    )
    scene.GetPrim().SetCustomDataByKey("simrt", run_settings())
    _box(stage, "/World/Ground", (0.0, 0.0, -0.05), (3.0, 3.0, 0.1), None)
    _box(stage, "/World/Table", (0.45, 0.0, TABLE_TOP_Z / 2), (0.4, 0.9, TABLE_TOP_Z), None)
    _box(stage, BOX, (*PICK, TABLE_TOP_Z + BOX_SIZE / 2), (BOX_SIZE,) * 3, BOX_MASS)
    robot = UsdGeom.Xform.Define(stage, ROBOT).GetPrim()
    robot.GetReferences().AddReference(asset_reference)
    apply_asset_physics(stage, ROBOT, rigid_props=MujocoRigidBodyPropertiesCfg(gravcomp=1.0))
    _tool(stage)
    apply_robot_api(robot)
    _gripper(stage)
    _start_pose(stage, robot)


def solve_tool_pose(poser, position, seed):
    """Joint values (chain order, rad) putting the tool tip at ``position``, pointing down.

    Args:
        poser: a ``RobotPoser`` from the robot base to ``TOOL_TIP``.
        position: tool-tip target [m] in the robot-base frame.
        seed: joint seed (chain order).

    Returns:
        The joint values, float64 (6,).

    Raises:
        RuntimeError: IK did not converge.
    """
    import numpy as np

    from runtime.kinematics.math import Transform

    target = Transform(np.array(position, dtype=float), np.array(TOOL_DOWN))
    result = poser.solve_ik(target, seed=np.asarray(seed, dtype=float), iters=300)
    if not result.success:
        raise RuntimeError(f"IK did not reach the tool pose {position}")
    return np.array([result.joints[j.prim_path] for j in poser.joints])


def make_poser(stage: Usd.Stage):
    """``RobotPoser`` for the chain robot base -> tool tip (targets in the robot-base frame)."""
    from runtime.kinematics.poser import RobotPoser

    return RobotPoser(
        stage,
        stage.GetPrimAtPath(ROBOT),
        stage.GetPrimAtPath(ROBOT + "/Geometry/base"),
        stage.GetPrimAtPath(TOOL_TIP),
    )


def _start_pose(stage: Usd.Stage, robot: Usd.Prim) -> None:
    """Teleport the arm (link transforms in this layer) to the tool pose above the box."""
    from runtime.kinematics.poser import apply_joint_state

    poser = make_poser(stage)
    top = TABLE_TOP_Z + BOX_SIZE
    q = solve_tool_pose(poser, (*PICK, top + APPROACH), IK_SEED)
    apply_joint_state(
        stage, robot, {j.prim_path: float(v) for j, v in zip(poser.joints, q, strict=True)}
    )


def build_scene() -> Path:
    """Write ``scenes/ur5e_suction.usda`` atomically; returns its path.

    The stage is authored in a temporary file beside the scene (so the relative asset
    reference resolves while authoring), saved, then renamed over the scene.
    """
    SCENE.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{SCENE.stem}.", suffix=SCENE.suffix, dir=SCENE.parent)
    os.close(handle)
    Path(tmp).unlink()
    try:
        stage = Usd.Stage.CreateNew(tmp)
        author_scene(stage, os.path.relpath(ASSET, SCENE.parent))
        layer = stage.GetRootLayer()
        layer.documentation = "UR5e with a suction gripper: pick a box and place it 0.5 m away."
        if not layer.Save():
            raise RuntimeError(f"could not save {tmp}")
        mode = SCENE.stat().st_mode & 0o777 if SCENE.exists() else 0o644
        os.chmod(tmp, mode)
        os.replace(tmp, SCENE)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return SCENE


def main() -> int:
    """Entry point."""
    path = build_scene()
    print(f"wrote {path.relative_to(REPO)}")  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
