"""Surface-gripper step of the USD -> MuJoCo builder: switchable welds for attachment points.

Every joint targeted by an ``IsaacSurfaceGripper``'s ``isaac:attachmentPoints`` is taken out
of the joint tree (it is not a simulated joint: its ``body1`` is replaced at grip time,
docs/sensors/surface-gripper.md#attachment-points, docs/sensors/surface-gripper.md#mujoco) and
becomes, per attachment point:

* a site ``<joint path>:grip0`` on the joint's ``body0`` at its ``localPos0/localRot0`` frame
  (the attachment frame: ray origin, forward axis);
* a site ``<joint path>:grip1`` on the world body (re-parented to the gripped body and moved
  to the attach frame at run time by :mod:`runtime.engine.surface_gripper`);
* a weld equality ``<joint path>:grip`` between the two sites, **inactive** in the model
  (``eq_active0 = 0``): gripping switches it on through ``MjData.eq_active``, so nothing is
  recompiled per grip. ``mjc:solref`` / ``mjc:solimp`` authored on the joint are used.

A weld locks all six DOFs ("all DOFs locked", the reference example's setting); free DOFs,
limits or drives authored on the attachment joint are not modelled (warning).
"""

from __future__ import annotations

import mujoco
from pxr import UsdPhysics

from runtime.engine._build_base import SOLVER_PARAMS, BuildContext
from runtime.engine._build_types import JointRecord

GRIPPER_TYPE = "IsaacSurfaceGripper"
SITE_BODY0 = ":grip0"
SITE_TARGET = ":grip1"
EQUALITY = ":grip"
GRIP_SOLIMP = (0.99, 0.999, 0.001, 0.5, 2.0)
"""Default impedance of the grip welds: stiffer than MuJoCo's (0.9, 0.95, ...) so a held
object sags about 20 times less under its weight (an attachment joint with all DOFs locked
is rigid in the reference); ``mjc:solimp`` on the joint overrides it."""


def attachment_joint_paths(stage) -> dict[str, list[str]]:
    """``{gripper path: [attachment joint paths]}`` of every surface gripper on ``stage``.

    Targets that are not ``UsdPhysics.Joint`` prims are left out
    (docs/sensors/surface-gripper.md#attachment-points).
    """
    out: dict[str, list[str]] = {}
    for prim in stage.Traverse():
        if prim.GetTypeName() != GRIPPER_TYPE:
            continue
        rel = prim.GetRelationship("isaac:attachmentPoints")
        joints = []
        for target in rel.GetTargets() if rel else []:
            joint = stage.GetPrimAtPath(target)
            if joint and joint.IsValid() and joint.IsA(UsdPhysics.Joint):
                joints.append(str(target))
        out[str(prim.GetPath())] = joints
    return out


class GripperStep(BuildContext):
    """Takes attachment joints out of the tree and adds their switchable welds."""

    def take_gripper_joints(self, joints: list[JointRecord]) -> list[JointRecord]:
        """Remove attachment-point joints from ``joints`` (kept for :meth:`gripper_welds`)."""
        paths = {p for js in attachment_joint_paths(self.stage).values() for p in js}
        self.gripper_joints: list[JointRecord] = [j for j in joints if j.path in paths]
        return [j for j in joints if j.path not in paths]

    def gripper_welds(self) -> None:
        """Add the two sites and the inactive weld of every attachment joint."""
        for j in getattr(self, "gripper_joints", []):
            if not j.body0:
                self.warn(j.path, "attachment joint without a simulated physics:body0; ignored")
                continue
            prim = self.stage.GetPrimAtPath(j.path)
            if j.kind != "fixed" and j.kind != "d6":
                self.warn(j.path, f"{j.kind} attachment joint gripped as a weld (all DOFs locked)")
            elif j.kind == "d6" and _has_free_dof(prim):
                self.warn(j.path, "free DOFs of the attachment joint are locked by the grip weld")
            body0 = self.bodies[j.body0].spec_body
            body0.add_site(name=j.path + SITE_BODY0, pos=j.frame0[0], quat=j.frame0[1])
            self.spec.worldbody.add_site(name=j.path + SITE_TARGET)
            eq = self.spec.add_equality(
                name=j.path + EQUALITY,
                type=mujoco.mjtEq.mjEQ_WELD,
                objtype=mujoco.mjtObj.mjOBJ_SITE,
                name1=j.path + SITE_BODY0,
                name2=j.path + SITE_TARGET,
            )
            eq.active = False
            eq.solimp = GRIP_SOLIMP
            self.set_authored(prim, eq, SOLVER_PARAMS, list)


def _has_free_dof(prim) -> bool:
    """True when some axis of a D6 joint lacks a locking limit (low > high)."""
    for axis in ("transX", "transY", "transZ", "rotX", "rotY", "rotZ"):
        limit = UsdPhysics.LimitAPI(prim, axis)
        if not limit:
            return True
        low, high = limit.GetLowAttr().Get(), limit.GetHighAttr().Get()
        if low is None or high is None or not low > high:
            return True
    return False
