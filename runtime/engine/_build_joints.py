"""Joint step of the USD -> MuJoCo builder: hinge / slide / ball joints and DOF bindings."""

from __future__ import annotations

import math

import mujoco
import numpy as np
from pxr import Usd

from runtime.engine._build_base import BuildContext
from runtime.engine._build_math import AXIS_INDEX, DEG, axis_letter, qrot
from runtime.engine._build_types import BodyRecord, DofBinding, JointRecord
from runtime.errors import SchemaError

_TOKENS = ("TransX", "TransY", "TransZ", "RotX", "RotY", "RotZ")


class JointStep(BuildContext):
    """Adds the MuJoCo joints of tree joints and records their DOF bindings."""

    def add_joint(self, body: BodyRecord, joint: JointRecord, reversed_: bool) -> None:
        """Add the MuJoCo joint(s) of a tree joint to the child body (fixed: none)."""
        child_frame = joint.frames(reversed_)[1]
        sign = -1.0 if reversed_ else 1.0
        jprim = self.stage.GetPrimAtPath(joint.path)
        extra = self.joint_extras(jprim, joint.kind)
        if joint.kind == "fixed":
            return
        if joint.kind in ("revolute", "prismatic"):
            self.add_axis_joint(body, joint, jprim, child_frame, sign, extra)
        elif joint.kind == "spherical":
            self.add_ball_joint(body, joint, jprim, child_frame, sign, extra)
        else:
            self.add_d6_joint(body, joint, jprim, child_frame, sign, extra)

    def add_axis_joint(
        self,
        body: BodyRecord,
        joint: JointRecord,
        jprim: Usd.Prim,
        child_frame: tuple[np.ndarray, np.ndarray],
        sign: float,
        extra: dict,
    ) -> None:
        """Revolute / prismatic joint -> one hinge / slide (limits in degrees for revolute)."""
        desc = joint.desc
        letter = axis_letter(desc.axis)
        angular = joint.kind == "revolute"
        token = ("Rot" if angular else "Trans") + letter
        lower, upper = -math.inf, math.inf
        if desc.limit.enabled:
            lo, hi = float(desc.limit.lower), float(desc.limit.upper)
            if math.isnan(lo) or math.isnan(hi):
                raise SchemaError(joint.path, "physics:lowerLimit", "NaN limit", "finite")
            if angular:
                lo, hi = lo * DEG, hi * DEG
            if lo > hi:
                self.warn(joint.path, "lower limit > upper limit; joint locked at 0")
                lo = hi = 0.0
            lower, upper = lo, hi
        binding = self.add_dof(
            body, joint.path, token, jprim.GetName(), child_frame, sign, (lower, upper), extra
        )
        self.add_drive(jprim, binding, desc.drive, angular, joint.path)

    def add_ball_joint(
        self,
        body: BodyRecord,
        joint: JointRecord,
        jprim: Usd.Prim,
        child_frame: tuple[np.ndarray, np.ndarray],
        sign: float,
        extra: dict,
    ) -> None:
        """Spherical joint -> ball (cone limit = the larger of the two cone angles)."""
        desc = joint.desc
        j = body.spec_body.add_joint(
            name=joint.path, type=mujoco.mjtJoint.mjJNT_BALL, pos=child_frame[0]
        )
        if desc.limit.enabled:
            c0, c1 = abs(float(desc.limit.lower)), abs(float(desc.limit.upper))
            if math.isfinite(c0) and math.isfinite(c1) and max(c0, c1) < 180.0:
                if abs(c0 - c1) > 1e-9:
                    self.warn(
                        joint.path,
                        "elliptic cone limit approximated by a circular cone of the larger angle",
                    )
                j.limited = mujoco.mjtLimited.mjLIMITED_TRUE
                j.range = [0.0, max(c0, c1) * DEG]
        self.style_joint(j, extra, True)
        jname = jprim.GetName()
        for k, tok in enumerate(("RotX", "RotY", "RotZ")):
            binding = DofBinding(joint.path, tok, f"{jname}:{tok}", -1, -1, -1, k, sign, True)
            self.dofs.append(binding)
            self.pending_dofs.append((binding, joint.path))

    def add_d6_joint(
        self,
        body: BodyRecord,
        joint: JointRecord,
        jprim: Usd.Prim,
        child_frame: tuple[np.ndarray, np.ndarray],
        sign: float,
        extra: dict,
    ) -> None:
        """D6 / generic joint -> one slide per free translation, one hinge per free rotation."""
        desc = joint.desc
        limits = {str(pair.first).split(".")[-1]: pair.second for pair in desc.jointLimits}
        drives = {str(pair.first).split(".")[-1]: pair.second for pair in desc.jointDrives}
        for token in _TOKENS:
            lim = limits.get(token)
            if lim is not None and lim.enabled and float(lim.lower) >= float(lim.upper):
                continue  # locked
            angular = token.startswith("Rot")
            lower, upper = -math.inf, math.inf
            if lim is not None and lim.enabled:
                lower, upper = float(lim.lower), float(lim.upper)
                if angular:
                    lower, upper = lower * DEG, upper * DEG
            name = f"{joint.path}:{token}"
            binding = self.add_dof(
                body,
                joint.path,
                token,
                f"{jprim.GetName()}:{token}",
                child_frame,
                sign,
                (lower, upper),
                extra,
                mj_name=name,
                one_sided_limits=False,
            )
            if token in drives:
                self.add_drive(jprim, binding, drives[token], angular, name)

    def add_dof(
        self,
        body: BodyRecord,
        joint_path: str,
        token: str,
        dof_name: str,
        child_frame: tuple[np.ndarray, np.ndarray],
        sign: float,
        limits: tuple[float, float],
        extra: dict,
        *,
        mj_name: str | None = None,
        one_sided_limits: bool = True,
    ) -> DofBinding:
        """Add one hinge ("Rot*" token) or slide ("Trans*") and record its DOF binding.

        Args:
            body: child body record (its spec body receives the joint).
            joint_path: USD joint path.
            token: DOF token; its last letter is the axis in the child joint frame.
            dof_name: reported DOF name.
            child_frame: child-side joint frame (position, wxyz) in the child body.
            sign: -1 when the USD joint is used reversed.
            limits: (lower, upper) in USD sign [rad or stage units], +-inf when open.
            extra: :meth:`joint_extras` of the joint prim.
            mj_name: MuJoCo joint name (default ``joint_path``).
            one_sided_limits: limit the joint when only one bound is finite (the open side
                at +-1e10); False: only when both are.

        Returns:
            The binding (addresses filled in after compilation).
        """
        angular = token.startswith("Rot")
        mj_name = joint_path if mj_name is None else mj_name
        j = body.spec_body.add_joint(
            name=mj_name,
            type=mujoco.mjtJoint.mjJNT_HINGE if angular else mujoco.mjtJoint.mjJNT_SLIDE,
            pos=child_frame[0],
            axis=qrot(child_frame[1], np.eye(3)[AXIS_INDEX[token[-1]]]),
        )
        lower, upper = limits
        mj_lo, mj_hi = (lower, upper) if sign > 0 else (-upper, -lower)
        if math.isfinite(mj_lo) and math.isfinite(mj_hi):
            j.limited = mujoco.mjtLimited.mjLIMITED_TRUE
            j.range = [mj_lo, mj_hi]
        elif one_sided_limits and (math.isfinite(mj_lo) or math.isfinite(mj_hi)):
            big = 1e10
            j.limited = mujoco.mjtLimited.mjLIMITED_TRUE
            j.range = [
                mj_lo if math.isfinite(mj_lo) else -big,
                mj_hi if math.isfinite(mj_hi) else big,
            ]
        else:
            j.limited = mujoco.mjtLimited.mjLIMITED_FALSE
        self.style_joint(j, extra, angular)
        binding = DofBinding(
            joint_path, token, dof_name, -1, -1, -1, -1, sign, angular, lower=lower, upper=upper
        )
        self.dofs.append(binding)
        self.pending_dofs.append((binding, mj_name))
        return binding

    def joint_extras(self, jprim: Usd.Prim, kind: str) -> dict:
        out = {}
        for key, names in (
            ("armature", ("mjc:armature", "newton:armature", "physxJoint:armature")),
            ("frictionloss", ("mjc:frictionloss", "newton:friction")),
        ):
            for n in names:
                v = self.attr(jprim, n)
                if v is not None:
                    out[key] = float(v)
                    break
        v = self.attr(jprim, "mjc:damping")
        if v is not None:
            out["damping"] = float(v)
        else:
            v = self.attr(jprim, "newton:damping")
            if v is not None:
                out["damping_usd"] = float(v)
        v = self.attr(jprim, "mjc:actuatorgravcomp")
        if v is not None:
            out["actgravcomp"] = bool(v)
        for key in ("mjc:stiffness", "mjc:springref", "mjc:solreflimit", "mjc:solimplimit"):
            v = self.attr(jprim, key)
            if v is not None:
                out[key] = v
        return out

    def style_joint(self, j, extra: dict, angular: bool) -> None:
        if "armature" in extra:
            j.armature = extra["armature"]
        if "frictionloss" in extra:
            j.frictionloss = extra["frictionloss"]
        if "damping" in extra:
            set_damping(j, extra["damping"])
        elif "damping_usd" in extra:
            set_damping(j, extra["damping_usd"] / DEG if angular else extra["damping_usd"])
        if extra.get("actgravcomp"):
            j.actgravcomp = True
        if "mjc:stiffness" in extra:
            try:
                j.stiffness = [float(extra["mjc:stiffness"]), 0.0, 0.0]
            except TypeError:  # MuJoCo 3.x: scalar
                j.stiffness = float(extra["mjc:stiffness"])
        if "mjc:springref" in extra:
            j.springref = float(extra["mjc:springref"])
        if "mjc:solreflimit" in extra:
            j.solref_limit = list(extra["mjc:solreflimit"])
        if "mjc:solimplimit" in extra:
            j.solimp_limit = list(extra["mjc:solimplimit"])


def set_damping(joint, value: float) -> None:
    """MuJoCo >= 4 stores joint damping as a polynomial (3 coefficients), 3.x as a scalar."""
    try:
        joint.damping = [float(value), 0.0, 0.0]
    except TypeError:
        joint.damping = float(value)
