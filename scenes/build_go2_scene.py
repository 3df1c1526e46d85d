"""Build ``scenes/go2_standing.usda``: the Unitree go2 standing on the ground.

Run in the runtime venv from the repository root::

    python scenes/build_go2_scene.py

* ``scenes/go2/go2_robot_schema.usda`` -- ``simrt schema apply
  tests/assets/robots/go2/go2_description.usda --layer ... --no-sublayer --floating-base``
  (robot schema + the converter's ``root_joint`` deactivated: free-floating base).
* ``scenes/go2/go2_robot.usda`` -- robot layer (schema layer over the converted asset).
* ``scenes/go2_standing.usda`` -- ground, PhysicsScene (1 kHz, implicitfast; at 500 Hz the
  convex-mesh feet chatter on the ground), the robot at
  ``/World/Go2`` in the SRDF ``standing`` pose of example-robot-data
  (``go2_description/srdf/go2.srdf``) with its feet on the ground, a PD drive on each of the
  12 joints holding that pose (``maxForce`` = URDF effort limit), an IMU on the trunk
  (``base``) and a contact sensor on each foot.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pxr import Gf, Usd, UsdGeom

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _legged as lg  # noqa: E402

ASSET = lg.ASSETS / "go2" / "go2_description.usda"
SCHEMA_LAYER = lg.SCENES / "go2" / "go2_robot_schema.usda"
ROBOT_LAYER = lg.SCENES / "go2" / "go2_robot.usda"
SCENE = lg.SCENES / "go2_standing.usda"
ROOT = "go2_description"
ROBOT = "/World/Go2"
BASE = ROBOT + "/Geometry/base"
LEGS = ("FL", "FR", "RL", "RR")

#: PD gains (SI): stiffness N m/rad, damping N m s/rad.
GAINS = {"hip": (100.0, 3.0), "thigh": (100.0, 3.0), "calf": (150.0, 4.0)}


def foot(leg: str) -> str:
    """Foot link path of ``leg`` in the scene."""
    return f"{BASE}/{leg}_hip/{leg}_thigh/{leg}_calf/{leg}_foot"


def _gains(name: str) -> tuple[float, float]:
    for key, value in GAINS.items():
        if f"_{key}_joint" in name:
            return value
    raise SystemExit(f"{name}: no gains for this joint")


def _author(layer) -> None:  # noqa: ANN001
    stage = lg.new_scene(
        layer,
        "Unitree go2 standing under joint PD; built by scenes/build_go2_scene.py. Do not edit.",
        1000,
        {"steps": 10000, "imuMode": "physical"},
    )
    lg.reference_robot(stage, ROBOT, ROBOT_LAYER, ROOT)
    pose = lg.srdf_state(lg.erd_robots() / "go2_description" / "srdf" / "go2.srdf", "standing")
    targets = lg.joint_drives(stage, ROBOT, pose, _gains)
    if len(targets) != 12:
        raise SystemExit(f"expected 12 revolute joints, found {len(targets)}")
    lg.teleport(stage, ROBOT, targets)
    low = lg.lowest_point(stage, [foot(leg) for leg in LEGS])
    op = UsdGeom.Xformable(stage.GetPrimAtPath(ROBOT)).GetOrderedXformOps()[0]
    op.Set(Gf.Vec3d(0.0, 0.0, -low))  # lowest foot point on the ground (z = 0)
    for leg in LEGS:
        lg.contact_sensor(stage, foot(leg) + "/FootContact", (0.0, 0.0, 0.0))
    lg.imu_sensor(stage, BASE + "/TrunkImu")


def main() -> int:
    """Apply the robot schema (floating base) with the CLI, then author the scene."""
    lg.apply_robot_schema(ASSET, SCHEMA_LAYER)
    lg.write_robot_layer(ASSET, SCHEMA_LAYER, ROBOT_LAYER, ROOT)
    lg.write_scene(SCENE, _author)
    stage = Usd.Stage.Open(str(SCENE))
    z = UsdGeom.Xformable(stage.GetPrimAtPath(BASE)).ComputeLocalToWorldTransform(0)
    print(f"trunk at z = {z.ExtractTranslation()[2]:.4f} m")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
