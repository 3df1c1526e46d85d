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
        sb = body.spec_body
        child_frame = joint.frames(reversed_)[1]
        sign = -1.0 if reversed_ else 1.0
        jprim = self.stage.GetPrimAtPath(joint.path)
        jname = jprim.GetName()
        desc = joint.desc
        extra = self.joint_extras(jprim, joint.kind)
        if joint.kind == "fixed":
            return
        if joint.kind in ("revolute", "prismatic"):
            letter = axis_letter(desc.axis)
            axis = qrot(child_frame[1], np.eye(3)[AXIS_INDEX[letter]])
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
            mj_lo, mj_hi = (lower, upper) if sign > 0 else (-upper, -lower)
            j = sb.add_joint(
                name=joint.path,
                type=mujoco.mjtJoint.mjJNT_HINGE if angular else mujoco.mjtJoint.mjJNT_SLIDE,
                pos=child_frame[0],
                axis=axis,
            )
            if math.isfinite(mj_lo) or math.isfinite(mj_hi):
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
                joint.path, token, jname, -1, -1, -1, -1, sign, angular, lower=lower, upper=upper
            )
            self.dofs.append(binding)
            self.pending_dofs.append((binding, joint.path))
            self.add_drive(jprim, binding, desc.drive, angular, joint.path)
            return
        if joint.kind == "spherical":
            j = sb.add_joint(name=joint.path, type=mujoco.mjtJoint.mjJNT_BALL, pos=child_frame[0])
            if desc.limit.enabled:
                c0, c1 = abs(float(desc.limit.lower)), abs(float(desc.limit.upper))
                if math.isfinite(c0) and math.isfinite(c1) and max(c0, c1) < 180.0:
                    if abs(c0 - c1) > 1e-9:
                        self.warn(
                            joint.path,
                            "elliptic cone limit approximated by a circular cone of the "
                            "larger angle",
                        )
                    j.limited = mujoco.mjtLimited.mjLIMITED_TRUE
                    j.range = [0.0, max(c0, c1) * DEG]
            self.style_joint(j, extra, True)
            for k, tok in enumerate(("RotX", "RotY", "RotZ")):
                binding = DofBinding(joint.path, tok, f"{jname}:{tok}", -1, -1, -1, k, sign, True)
                self.dofs.append(binding)
                self.pending_dofs.append((binding, joint.path))
            return
        # D6
        limits = {}
        for pair in desc.jointLimits:
            limits[str(pair.first).split(".")[-1]] = pair.second
        drives = {}
        for pair in desc.jointDrives:
            drives[str(pair.first).split(".")[-1]] = pair.second
        for token in _TOKENS:
            lim = limits.get(token)
            if lim is not None and lim.enabled and float(lim.lower) >= float(lim.upper):
                continue  # locked
            angular = token.startswith("Rot")
            axis = qrot(child_frame[1], np.eye(3)[AXIS_INDEX[token[-1]]])
            name = f"{joint.path}:{token}"
            j = sb.add_joint(
                name=name,
                type=mujoco.mjtJoint.mjJNT_HINGE if angular else mujoco.mjtJoint.mjJNT_SLIDE,
                pos=child_frame[0],
                axis=axis,
            )
            lower, upper = -math.inf, math.inf
            if lim is not None and lim.enabled:
                lower, upper = float(lim.lower), float(lim.upper)
                if angular:
                    lower, upper = lower * DEG, upper * DEG
            mj_lo, mj_hi = (lower, upper) if sign > 0 else (-upper, -lower)
            if math.isfinite(mj_lo) and math.isfinite(mj_hi):
                j.limited = mujoco.mjtLimited.mjLIMITED_TRUE
                j.range = [mj_lo, mj_hi]
            else:
                j.limited = mujoco.mjtLimited.mjLIMITED_FALSE
            self.style_joint(j, extra, angular)
            binding = DofBinding(
                joint.path,
                token,
                f"{jname}:{token}",
                -1,
                -1,
                -1,
                -1,
                sign,
                angular,
                lower=lower,
                upper=upper,
            )
            self.dofs.append(binding)
            self.pending_dofs.append((binding, name))
            if token in drives:
                self.add_drive(jprim, binding, drives[token], angular, name)

    def joint_extras(self, jprim: Usd.Prim, kind: str) -> dict:
        out = {}
        for key, names in (
            ("armature", ("mjc:armature", "newton:armature", "physxJoint:armature")),
            ("frictionloss", ("mjc:frictionloss",)),
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
