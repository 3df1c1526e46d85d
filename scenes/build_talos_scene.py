"""Build ``scenes/talos_standing.usda``: the PAL Talos humanoid (32 DOF) standing.

Run in the runtime venv from the repository root::

    python scenes/build_talos_scene.py

* ``scenes/talos/talos_robot_schema.usda`` -- ``simrt schema apply
  tests/assets/robots/talos/talos.usda --layer ... --no-sublayer --floating-base``
  (robot schema + the converter's ``root_joint`` deactivated: free-floating base).
* ``scenes/talos/talos_robot.usda`` -- robot layer (schema layer over the converted
  ``talos_reduced.urdf`` of example-robot-data).
* ``scenes/talos_standing.usda`` -- ground, PhysicsScene (1 kHz, implicitfast), the robot at
  ``/World/Talos`` in the SRDF ``half_sitting`` pose (``talos_data/srdf/talos.srdf``) with its
  soles on the ground, a PD drive on each of the 32 joints holding that pose (``maxForce`` =
  URDF effort limit), a contact sensor under each foot sole (on the ankle links
  ``leg_*_6_link``, which carry the foot collision meshes, at the sole frame 0.107 m below)
  and an IMU on the torso (``torso_2_link``).

The collision shapes of non-adjacent links that overlap in this pose (hip links, ...) are
excluded from colliding by the builder's reference-pose policy (logged when the scene is
built or run).
"""

from __future__ import annotations

import sys
from pathlib import Path

from pxr import Gf, Usd, UsdGeom

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _legged as lg  # noqa: E402

ASSET = lg.ASSETS / "talos" / "talos.usda"
SCHEMA_LAYER = lg.SCENES / "talos" / "talos_robot_schema.usda"
ROBOT_LAYER = lg.SCENES / "talos" / "talos_robot.usda"
SCENE = lg.SCENES / "talos_standing.usda"
ROOT = "talos"
ROBOT = "/World/Talos"
BASE = ROBOT + "/Geometry/base_link"
TORSO = BASE + "/torso_1_link/torso_2_link"
SOLE_OFFSET = (0.0, 0.0, -0.107)  # leg_*_sole_fix_joint origin in the URDF

#: PD gains (SI) by joint-name prefix: stiffness N m/rad, damping N m s/rad.
GAINS = {
    "leg_": (3000.0, 30.0),
    "torso_": (3000.0, 30.0),
    "arm_": (500.0, 5.0),
    "head_": (100.0, 1.0),
    "gripper_": (20.0, 0.2),
}


def ankle(side: str) -> str:
    """Ankle (foot) link path of ``side`` ("left" / "right") in the scene."""
    chain = "/".join(f"leg_{side}_{i}_link" for i in range(1, 7))
    return f"{BASE}/{chain}"


def _gains(name: str) -> tuple[float, float]:
    for key, value in GAINS.items():
        if name.startswith(key):
            return value
    raise SystemExit(f"{name}: no gains for this joint")


def _author(layer) -> None:  # noqa: ANN001
    stage = lg.new_scene(
        layer,
        "PAL Talos standing under joint PD; built by scenes/build_talos_scene.py. Do not edit.",
        1000,
        {"steps": 10000, "imuMode": "physical"},
    )
    lg.reference_robot(stage, ROBOT, ROBOT_LAYER, ROOT)
    srdf = lg.erd_robots() / "talos_data" / "srdf" / "talos.srdf"
    pose = lg.srdf_state(srdf, "half_sitting")
    targets = lg.joint_drives(stage, ROBOT, pose, _gains)
    if len(targets) != 32:
        raise SystemExit(f"expected 32 revolute joints, found {len(targets)}")
    lg.teleport(stage, ROBOT, targets)
    low = lg.lowest_point(stage, [ankle("left"), ankle("right")])
    op = UsdGeom.Xformable(stage.GetPrimAtPath(ROBOT)).GetOrderedXformOps()[0]
    op.Set(Gf.Vec3d(0.0, 0.0, -low))  # lowest sole point on the ground (z = 0)
    for side in ("left", "right"):
        lg.contact_sensor(stage, ankle(side) + "/SoleContact", SOLE_OFFSET)
    lg.imu_sensor(stage, TORSO + "/TorsoImu")


def main() -> int:
    """Apply the robot schema (floating base) with the CLI, then author the scene."""
    lg.apply_robot_schema(ASSET, SCHEMA_LAYER)
    lg.write_robot_layer(ASSET, SCHEMA_LAYER, ROBOT_LAYER, ROOT)
    lg.write_scene(SCENE, _author)
    stage = Usd.Stage.Open(str(SCENE))
    z = UsdGeom.Xformable(stage.GetPrimAtPath(BASE)).ComputeLocalToWorldTransform(0)
    print(f"base_link at z = {z.ExtractTranslation()[2]:.4f} m")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
